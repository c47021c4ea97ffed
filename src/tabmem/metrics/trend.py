"""Column Pair Trends as SDMetrics' QualityReport computes it, vectorised.

For every pair of columns (TabSyn/TabCutMix "Trend"):

* numerical-numerical: ``CorrelationSimilarity = 1 - |rho_real - rho_syn| / 2`` (Pearson, on the
  rows where both values are present; NaN when a column is constant);
* any other pair: ``ContingencySimilarity = 1 - 1/2 sum_{a,b} |R_ab - S_ab|`` on the joint
  frequency table, where a numerical column is first *binned the way the SDMetrics
  ColumnPairTrends property does it*: ``np.histogram_bin_edges`` (10 equal-width bins) computed
  **separately on the real and on the synthetic column**, then ``np.digitize`` against those
  edges; so bin *i* of the synthetic table is compared with bin *i* of the real one, the
  maximum lands in an 11th bin and NaN in that same bin. Missing categories are a category of
  their own (``groupby(dropna=False)``).

Pair filtering. sdmetrics 0.11.1 (the version the TabSyn/TabCutMix papers pinned) averages
**every** pair; recent sdmetrics (the ``QualityReport`` of 0.2x/0.3x, 0.32 installed here) only
averages pairs whose real |Pearson| exceeds 0.5 (numerical pairs) or whose real Cramér's V
exceeds 0.3 (other pairs). ``pair_filter="all"`` (default) reproduces the papers,
``pair_filter="sdmetrics"`` the recent default; the number of pairs scored is always reported.

Recent sdmetrics also subsamples contingency pairs to 50,000 rows (an unseeded random draw) when
a table is larger; tabmem never subsamples, so above 50,000 rows it is exact where sdmetrics is
approximate.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd

from tabmem._checks import check_positive_int
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError, name_setting
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric

MAX_PAIRS = 1_000_000  # Trend is quadratic in columns: above this many pairs it is skipped unless asked
SDMETRICS_CORRELATION_THRESHOLD = 0.5
SDMETRICS_ASSOCIATION_THRESHOLD = 0.3
Binning = Literal["per_table", "real_edges"]


def discretize(values: np.ndarray, edges: np.ndarray | None = None, n_bins: int = 10) -> np.ndarray:
    """Bin index of each value as SDMetrics' ColumnPairTrends does (``np.digitize``; 0..n_bins+1).

    ``edges`` defaults to ``n_bins`` equal-width bins over the non-missing ``values`` themselves.
    """
    v = np.asarray(values, dtype=np.float64)
    if edges is None:
        edges = np.histogram_bin_edges(v[~np.isnan(v)], bins=n_bins)
    return np.digitize(v, bins=edges).astype(np.int64)


def cramers_v(table: np.ndarray) -> float:
    """Cramér's V (no continuity correction) of a contingency table; NaN if < 2 rows or columns."""
    t = np.asarray(table, dtype=np.float64)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    n = t.sum()
    if n == 0 or min(t.shape) < 2:
        return float("nan")
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / n
    chi2 = float(((t - expected) ** 2 / expected).sum())
    return float(np.sqrt(chi2 / n / (min(t.shape) - 1)))


def _unit_scale(num: np.ndarray) -> np.ndarray:
    """Columns divided by a power of two near their largest magnitude: exact, and Pearson's r is
    scale-free, so correlations keep their bits while sums of squares of 1e308 no longer overflow."""
    with np.errstate(all="ignore"):
        peak = np.nanmax(np.abs(num), axis=0, initial=0.0) if num.size else np.zeros(num.shape[1:])
        shift = np.where(np.isfinite(peak) & (peak > 0), np.frexp(peak)[1], 0)
        return np.ldexp(num, -shift)


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = _unit_scale(x[ok][:, None])[:, 0], _unit_scale(y[ok][:, None])[:, 0]
    if x.size < 2:
        return float("nan")
    xm, ym = x - x.mean(), y - y.mean()
    den = np.sqrt((xm @ xm) * (ym @ ym))
    if den == 0:
        return float("nan")
    return float(np.clip((xm @ ym) / den, -1.0, 1.0))


def _correlations(num: np.ndarray) -> np.ndarray:
    """Pearson matrix of the columns of ``num`` (pairwise-complete rows when NaN are present)."""
    d = num.shape[1]
    if not np.isnan(num).any():
        num = _unit_scale(num)
        xm = num - num.mean(axis=0)
        norms = np.sqrt(np.einsum("ij,ij->j", xm, xm))
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = (xm.T @ xm) / np.outer(norms, norms)
        corr[~np.isfinite(corr)] = np.nan
        return np.clip(corr, -1.0, 1.0)
    corr = np.full((d, d), np.nan)
    for i, j in combinations(range(d), 2):
        corr[i, j] = corr[j, i] = _pearson(num[:, i], num[:, j])
    return corr


def _constant(values: np.ndarray) -> bool:
    v = values[~np.isnan(values)]
    return v.size > 0 and bool(np.all(v == v[0]))


def column_pair_trends(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    *,
    real_correlation_threshold: float = 0.0,
    real_association_threshold: float = 0.0,
    binning: Binning = "per_table",
    n_bins: int = 10,
) -> pd.DataFrame:
    """Per-pair table for validated tables (see module docstring for the exact rules)."""
    cols = list(schema.columns)
    num_cols = [c for c in cols if schema.kind(c) == "numerical"]
    nr, ns = len(real), len(synthetic)

    # integer codes in a shared space per column (categoricals) or per-table bins (numericals)
    codes: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}
    for c in cols:
        if c in num_cols:
            r = real[c].to_numpy(np.float64)
            s = synthetic[c].to_numpy(np.float64)
            if binning == "per_table":
                cr, cs = discretize(r, n_bins=n_bins), discretize(s, n_bins=n_bins)
            else:
                edges = np.histogram_bin_edges(r[~np.isnan(r)], bins=n_bins)
                edges[0], edges[-1] = -np.inf, np.inf
                cr, cs = discretize(r, edges), discretize(s, edges)
            codes[c] = (cr, cs, n_bins + 2)
        else:
            both, uniques = pd.factorize(np.concatenate([real[c].to_numpy(object), synthetic[c].to_numpy(object)]))
            codes[c] = (both[:nr].astype(np.int64), both[nr:].astype(np.int64), max(len(uniques), 1))

    num_index = {c: i for i, c in enumerate(num_cols)}
    if num_cols:
        real_num = np.column_stack([real[c].to_numpy(np.float64) for c in num_cols])
        syn_num = np.column_stack([synthetic[c].to_numpy(np.float64) for c in num_cols])
        corr_r, corr_s = _correlations(real_num), _correlations(syn_num)
        constant = [_constant(real_num[:, i]) or _constant(syn_num[:, i]) for i in range(len(num_cols))]

    rows = []
    for a, b in combinations(cols, 2):
        if a in num_index and b in num_index:
            i, j = num_index[a], num_index[b]
            rho_r, rho_s = corr_r[i, j], corr_s[i, j]
            if constant[i] or constant[j]:
                rho_r = rho_s = np.nan
            if real_correlation_threshold > 0 and not np.isnan(rho_r) and abs(rho_r) <= real_correlation_threshold:
                score, rho_s = np.nan, np.nan
            else:
                score = 1.0 - abs(rho_r - rho_s) / 2.0
            meets = bool(
                np.isfinite(rho_r) and (real_correlation_threshold <= 0 or abs(rho_r) > real_correlation_threshold)
            )
            meets = meets and np.isfinite(score)
            rows.append((a, b, "CorrelationSimilarity", score, rho_r, rho_s, np.nan, meets))
            continue
        ar, as_, ka = codes[a]
        br, bs, kb = codes[b]
        cnt_r = np.bincount(ar * kb + br, minlength=ka * kb).astype(np.float64)
        cnt_s = np.bincount(as_ * kb + bs, minlength=ka * kb).astype(np.float64)
        assoc = cramers_v(cnt_r.reshape(ka, kb))
        if real_association_threshold > 0 and not (np.isfinite(assoc) and assoc > real_association_threshold):
            rows.append((a, b, "ContingencySimilarity", np.nan, np.nan, np.nan, assoc, False))
            continue
        score = 1.0 - 0.5 * np.abs(cnt_r / nr - cnt_s / ns).sum()
        rows.append((a, b, "ContingencySimilarity", score, np.nan, np.nan, assoc, True))
    return pd.DataFrame(
        rows,
        columns=[
            "column_1",
            "column_2",
            "metric",
            "score",
            "real_correlation",
            "synthetic_correlation",
            "real_association",
            "meets_threshold",
        ],
    )


@register_metric
class Trend(Metric):
    """Column Pair Trends (SDMetrics QualityReport): mean pair score over the scored pairs.

    Parameters
    ----------
    pair_filter:
        ``"all"`` (default, sdmetrics 0.11.1 and the papers) scores every pair;
        ``"sdmetrics"`` keeps only pairs with real |rho| > 0.5 or Cramér's V > 0.3 (recent sdmetrics).
    real_correlation_threshold, real_association_threshold:
        Explicit thresholds (override ``pair_filter``).
    binning:
        ``"per_table"`` (default, what sdmetrics' property does) or ``"real_edges"`` (bin both
        tables on the real table's edges, open-ended; statistically cleaner, not sdmetrics-equal).
    max_pairs:
        Column pairs are ``p (p - 1) / 2``, quadratic in the columns: a table with more pairs than
        this (default 1,000,000, about 1,400 columns) is refused with a ``TabmemError`` naming the
        setting (``tabmem quality`` then reports trend as skipped, with that reason) instead of
        running for hours; ``None`` scores every pair whatever the width.
    """

    name = "trend"
    goal = "maximize"
    bounds = (0.0, 1.0)

    def __init__(
        self,
        pair_filter: Literal["all", "sdmetrics"] = "all",
        real_correlation_threshold: float | None = None,
        real_association_threshold: float | None = None,
        binning: Binning = "per_table",
        n_bins: int = 10,
        max_pairs: int | None = MAX_PAIRS,
    ) -> None:
        self.max_pairs = max_pairs
        self.pair_filter = pair_filter
        self.real_correlation_threshold = real_correlation_threshold
        self.real_association_threshold = real_association_threshold
        self.binning = binning
        self.n_bins = n_bins

    def thresholds(self) -> tuple[float, float]:
        if self.pair_filter not in ("all", "sdmetrics"):
            raise TabmemError(f"pair_filter must be 'all' or 'sdmetrics', got {self.pair_filter!r}")
        if self.binning not in ("per_table", "real_edges"):
            raise TabmemError(f"binning must be 'per_table' or 'real_edges', got {self.binning!r}")
        check_positive_int("n_bins", self.n_bins)
        corr, assoc = (
            (0.0, 0.0)
            if self.pair_filter == "all"
            else (SDMETRICS_CORRELATION_THRESHOLD, SDMETRICS_ASSOCIATION_THRESHOLD)
        )
        if self.real_correlation_threshold is not None:
            corr = float(self.real_correlation_threshold)
        if self.real_association_threshold is not None:
            assoc = float(self.real_association_threshold)
        for name, t in (("real_correlation_threshold", corr), ("real_association_threshold", assoc)):
            if not 0.0 <= t <= 1.0:
                raise TabmemError(f"{name} must be between 0 and 1, got {t!r}")
        return corr, assoc

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        corr, assoc = self.thresholds()
        if self.max_pairs is not None:
            check_positive_int("max_pairs", self.max_pairs)
            p = schema.n_columns
            n_pairs = p * (p - 1) // 2
            if n_pairs > self.max_pairs:
                setting = name_setting(f"max_pairs={n_pairs}", "--trend-max-pairs", str(n_pairs))
                raise TabmemError(
                    f"{p} columns make {n_pairs} column pairs, more than max_pairs={self.max_pairs} "
                    f"(the cost is quadratic in the columns); pass {setting} to score them all"
                )
        prep, _ = prepare_tables(real, synthetic, schema, nan="match")
        table = column_pair_trends(
            prep.real,
            prep.synthetic,
            schema,
            real_correlation_threshold=corr,
            real_association_threshold=assoc,
            binning=self.binning,
            n_bins=self.n_bins,
        )
        scored = table["meets_threshold"].to_numpy(bool) & np.isfinite(table["score"].to_numpy(np.float64))
        value = float(table.loc[scored, "score"].mean()) if scored.any() else None
        return self._result(
            value,
            table,
            n_pairs_scored=int(scored.sum()),
            n_pairs_total=len(table),
            pair_filter=self.pair_filter,
            real_correlation_threshold=corr,
            real_association_threshold=assoc,
        )
