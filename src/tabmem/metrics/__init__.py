"""Quality metrics of synthetic tables: fidelity (Shape, Trend, MMD, Wasserstein, alpha/beta,
C2ST), utility (MLE) and a privacy sanity check (DCR share), each with a goal, bounds and a
breakdown. :func:`quality_report` runs them all.
"""

from tabmem.metrics.alpha_beta import AlphaPrecision, BetaRecall
from tabmem.metrics.base import METRICS, Metric, MetricResult, get_metric, list_metrics, register_metric
from tabmem.metrics.dcr_share import DCRShare
from tabmem.metrics.detection import LogisticDetection
from tabmem.metrics.mle import MLE
from tabmem.metrics.mmd import MMD
from tabmem.metrics.report import SUMMARY_KEYS, QualityReport, QualitySummary, quality_report
from tabmem.metrics.shape import Shape
from tabmem.metrics.trend import Trend
from tabmem.metrics.wasserstein import SlicedWasserstein, Wasserstein

__all__ = [
    "METRICS",
    "SUMMARY_KEYS",
    "AlphaPrecision",
    "BetaRecall",
    "DCRShare",
    "LogisticDetection",
    "MLE",
    "MMD",
    "Metric",
    "MetricResult",
    "QualityReport",
    "Shape",
    "SlicedWasserstein",
    "Trend",
    "Wasserstein",
    "get_metric",
    "list_metrics",
    "QualitySummary",
    "quality_report",
    "register_metric",
]
