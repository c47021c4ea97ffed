"""Quality metrics of synthetic tables: fidelity (Shape, Trend, MMD, Wasserstein, alpha/beta,
C2ST), utility (MLE) and a privacy sanity check (DCR share), each with a goal, bounds and a
breakdown. :func:`quality_report` runs them all.
"""

from tabmem.metrics.base import METRICS, Metric, MetricResult, get_metric, list_metrics, register_metric
from tabmem.metrics.shape import Shape
from tabmem.metrics.trend import Trend

__all__ = ["METRICS", "Metric", "MetricResult", "Shape", "Trend", "get_metric", "list_metrics", "register_metric"]
