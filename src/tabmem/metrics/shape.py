"""Column Shapes as SDMetrics' QualityReport computes it (KSComplement / TVComplement).

Per column (Patki et al., SDMetrics; TabSyn/TabCutMix "Shape"):

* numerical: ``KSComplement = 1 - sup_x |F_real(x) - F_syn(x)|`` (two-sample Kolmogorov-Smirnov
  statistic) on the non-missing values, after rounding to 14 decimals as sdmetrics >= 0.12 does;
* categorical: ``TVComplement = 1 - 1/2 sum_v |p_syn(v) - p_real(v)|`` over non-missing
  categories; as in sdmetrics, a category present only in the synthetic column gets a real count
  of 1e-6 (which also enters the real total).

Shape is the mean over columns (the target included, as in the papers). Everything is
vectorised per column: one sort for KS, one ``np.unique`` for TV.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.data.schema import NA_CATEGORY, Schema
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric

_MAX_DECIMALS = 14  # sys.float_info.dig - 1: sdmetrics rounds before the KS test


def ks_statistic(real: np.ndarray, synthetic: np.ndarray) -> float:
    """Two-sample KS statistic ``sup |F_real - F_syn|`` (NaN ignored; NaN if a side is empty)."""
    x = np.asarray(real, dtype=np.float64)
    y = np.asarray(synthetic, dtype=np.float64)
    x = np.sort(x[~np.isnan(x)])
    y = np.sort(y[~np.isnan(y)])
    if x.size == 0 or y.size == 0:
        return float("nan")
    both = np.concatenate([x, y])
    cdf_x = np.searchsorted(x, both, side="right") / x.size
    cdf_y = np.searchsorted(y, both, side="right") / y.size
    return float(np.max(np.abs(cdf_x - cdf_y)))


def _round(values: np.ndarray) -> np.ndarray:
    """Round to 14 decimals; values of 2**52 or more have no fraction (and ``x * 1e14`` would overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.round(values, _MAX_DECIMALS)
    return np.where(np.abs(values) < 2.0**52, rounded, values)


def ks_complement(real: np.ndarray, synthetic: np.ndarray) -> float:
    """SDMetrics KSComplement: ``1 - KS`` after rounding to 14 decimals."""
    x = _round(np.asarray(real, dtype=np.float64))
    y = _round(np.asarray(synthetic, dtype=np.float64))
    return 1.0 - ks_statistic(x, y)


def total_variation(real: np.ndarray, synthetic: np.ndarray) -> float:
    """Exact total-variation distance ``1/2 sum_v |p_real(v) - p_syn(v)|`` (every category, NA included)."""
    r = np.asarray(real, dtype=object)
    s = np.asarray(synthetic, dtype=object)
    codes, uniques = pd.factorize(np.concatenate([r, s]))
    cr = np.bincount(codes[: r.size], minlength=len(uniques)) / max(r.size, 1)
    cs = np.bincount(codes[r.size :], minlength=len(uniques)) / max(s.size, 1)
    return float(0.5 * np.abs(cr - cs).sum())


def tv_complement(real: np.ndarray, synthetic: np.ndarray) -> float:
    """SDMetrics TVComplement on canonical category strings (``"<NA>"`` = missing, ignored)."""
    r = np.asarray(real, dtype=object)
    s = np.asarray(synthetic, dtype=object)
    r = r[r != NA_CATEGORY]
    s = s[s != NA_CATEGORY]
    if r.size == 0 or s.size == 0:
        return float("nan")
    codes, uniques = pd.factorize(np.concatenate([r, s]))
    k = len(uniques)
    cr = np.bincount(codes[: r.size], minlength=k).astype(np.float64)
    cs = np.bincount(codes[r.size :], minlength=k).astype(np.float64)
    cr[(cr == 0) & (cs > 0)] = 1e-6  # sdmetrics' regularisation of synthetic-only categories
    return float(1.0 - 0.5 * np.abs(cs / cs.sum() - cr / cr.sum()).sum())


def column_shapes(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Per-column table (column, metric, score) for validated tables."""
    rows = []
    num = list(schema.numerical)
    # the numerical columns as two blocks, then numpy columns (a pandas pass per column is slow on wide tables)
    num_r, num_s = real[num].to_numpy(np.float64), synthetic[num].to_numpy(np.float64)
    position = {c: j for j, c in enumerate(num)}
    for col in schema.columns:
        if col in position:
            j = position[col]
            score = ks_complement(num_r[:, j], num_s[:, j])
            metric = "KSComplement"
        else:
            score = tv_complement(real[col].to_numpy(object), synthetic[col].to_numpy(object))
            metric = "TVComplement"
        rows.append({"column": col, "metric": metric, "score": score})
    return pd.DataFrame(rows, columns=["column", "metric", "score"])


@register_metric
class Shape(Metric):
    """Column Shapes (SDMetrics QualityReport): mean KSComplement/TVComplement over columns."""

    name = "shape"
    goal = "maximize"
    bounds = (0.0, 1.0)

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        prep, _ = prepare_tables(real, synthetic, schema, nan="match")
        table = column_shapes(prep.real, prep.synthetic, schema)
        scores = table["score"].to_numpy(np.float64)
        value = float(np.nanmean(scores)) if np.isfinite(scores).any() else None
        return self._result(value, table, n_columns_scored=int(np.isfinite(scores).sum()))
