"""Comparing attacks: score correlations per record, AUC correlations across runs, a joint risk table.

The LevAtt paper's Figure 3 correlates per-run AUCs across attacks (LevAtt vs DCR 0.64, vs MC
0.59, DCR vs density 0.92): a low correlation means the attack sees a different signal.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from tabmem.errors import TabmemError


def score_correlations(scores: pd.DataFrame, *, method: str = "spearman") -> pd.DataFrame:
    """Pearson or Spearman correlation matrix of per-record scores (one column per attack)."""
    return _corr(scores, method, "scores")


def auc_correlations(
    runs: pd.DataFrame, *, attacks: Sequence[str] | None = None, method: str = "pearson"
) -> pd.DataFrame:
    """Correlation of AUCs across runs (the paper's Figure 3): ``runs`` has one column of AUCs per attack."""
    cols = list(attacks) if attacks is not None else [c for c in runs.columns if pd.api.types.is_numeric_dtype(runs[c])]
    missing = [c for c in cols if c not in runs.columns]
    if missing:
        raise TabmemError(f"auc_correlations: columns {missing} not in the runs table")
    return _corr(runs[cols], method, "runs")


def _corr(table: pd.DataFrame, method: str, name: str) -> pd.DataFrame:
    if method not in ("pearson", "spearman"):
        raise TabmemError(f"method must be 'pearson' or 'spearman', got {method!r}")
    if table.shape[1] < 1 or len(table) < 2:
        raise TabmemError(f"{name}: need at least 2 rows and 1 column to correlate (got {table.shape})")
    x = table.to_numpy(dtype=np.float64)
    if np.isnan(x).any():
        raise TabmemError(f"{name}: NaN values present; drop or fill them first")
    if method == "spearman":
        x = np.column_stack([rankdata(x[:, j]) for j in range(x.shape[1])])
    xc = x - x.mean(axis=0)
    norm = np.sqrt((xc**2).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        c = (xc.T @ xc) / np.outer(norm, norm)
    c[np.isnan(c)] = np.nan  # a constant column has no defined correlation
    np.fill_diagonal(c, 1.0)
    return pd.DataFrame(c, index=table.columns, columns=table.columns)


def risk_table(scores: pd.DataFrame, is_member: Any | None = None) -> pd.DataFrame:
    """Per-record risk joining all attacks: each attack's score and rank (1 = most member-like), the best rank.

    Sorted by ``best_rank`` (then the mean rank): the records any attack singles out come first.
    Records are identified by ``target_row`` (position), never by their values.
    """
    if scores.shape[1] == 0:
        raise TabmemError("risk_table: no attack scores")
    out = pd.DataFrame({"target_row": np.arange(len(scores))}, index=scores.index)
    ranks = []
    for col in scores.columns:
        s = scores[col].to_numpy(dtype=np.float64)
        r = rankdata(-s, method="min").astype(np.int64)
        out[col] = s
        out[f"{col}_rank"] = r
        ranks.append(r)
    rank_mat = np.column_stack(ranks)
    out["best_rank"] = rank_mat.min(axis=1)
    out["mean_rank"] = rank_mat.mean(axis=1)
    if is_member is not None:
        y = np.asarray(is_member).astype(bool)
        if y.size != len(out):
            raise TabmemError(f"risk_table: is_member has {y.size} values for {len(out)} records")
        out["is_member"] = y
    return out.sort_values(["best_rank", "mean_rank", "target_row"], kind="stable").reset_index(drop=True)
