"""Membership-inference evaluation: AUC, TPR at low FPR, CIs, ROC points and worst cases.

Conventions follow the LevAtt paper's code (Ward et al. 2025, ``AttackEvaluator.roc_metrics``):
higher score = "member"; ``AUC = roc_auc_score`` (ties count
one half); ``TPR@f = np.interp(f, fpr, tpr)`` on scikit-learn's ROC curve, so ``TPR@0`` is the
largest TPR reachable with no false positive. Integer edit distances tie a lot, and the
interpolation then credits a *randomised* threshold inside a tie block; the tie-aware variant
``tpr_at_fpr_strict`` is what a deterministic threshold achieves (a tie block is taken whole
or not at all): ``max{TPR(t) : FPR(t) <= f}``.

Resolution: with ``n`` non-members the smallest non-zero FPR that can be measured is ``1/n``
(``min_resolved_fpr``); a TPR at a smaller FPR is the interpolation towards ``TPR@0``, not an
operating point. Fewer than :data:`MIN_TARGETS` members or non-members give an AUC and CIs that
mean little (:func:`degenerate_warnings` says so); with a single member or non-member the
bootstrap cannot vary and the CI is reported as undefined.

Scores may be infinite (a log density of ``-inf`` for a target no synthetic row comes near): the
ROC depends only on the order of the scores, so infinite scores are ranked beyond every finite
one (ties kept) before the curve is computed. NaN scores are an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.stats import rankdata
from sklearn.metrics import roc_curve

from tabmem._checks import check_positive_int
from tabmem.errors import TabmemError

DEFAULT_FPRS: tuple[float, ...] = (0.0, 0.001, 0.01, 0.1)
#: below this many members or non-members an evaluation is reported with a warning
MIN_TARGETS = 30


@dataclass(frozen=True)
class MembershipResult:
    """Metrics of one attack on one (members, non-members) evaluation set."""

    auc: float
    auc_ci: tuple[float, float]
    tpr_at_fpr: dict[float, float]
    tpr_at_fpr_strict: dict[float, float]
    balanced_accuracy: float
    threshold: float
    n_members: int
    n_non_members: int
    roc: pd.DataFrame = field(repr=False)
    tpr_at_fpr_ci: dict[float, tuple[float, float]] = field(default_factory=dict)

    @property
    def min_resolved_fpr(self) -> float:
        """The smallest non-zero FPR the non-members can measure: 1 / n_non_members.

        Below it, a TPR@FPR is the interpolation towards TPR@0, not a measured operating point.
        """
        return 1.0 / self.n_non_members

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (FPR keys as strings ``"0"``, ``"0.001"``...)."""
        return {
            "auc": self.auc,
            "auc_ci": [_finite(v) for v in self.auc_ci],
            "tpr_at_fpr": {_key(f): v for f, v in self.tpr_at_fpr.items()},
            "tpr_at_fpr_strict": {_key(f): v for f, v in self.tpr_at_fpr_strict.items()},
            "balanced_accuracy": self.balanced_accuracy,
            "threshold": _finite(self.threshold),
            "n_members": self.n_members,
            "n_non_members": self.n_non_members,
            "tpr_at_fpr_ci": {_key(f): [_finite(v) for v in ci] for f, ci in self.tpr_at_fpr_ci.items()},
            "min_resolved_fpr": self.min_resolved_fpr,
        }


def degenerate_warnings(n_members: int, n_non_members: int, minimum: int = MIN_TARGETS) -> list[str]:
    """Warnings for an evaluation on too few targets (empty when both counts reach ``minimum``)."""
    if n_members >= minimum and n_non_members >= minimum:
        return []
    return [
        f"only {n_members} member(s) and {n_non_members} non-member(s): AUC, TPR and their intervals are "
        f"unreliable below {minimum} of each; the smallest FPR {n_non_members} non-member(s) resolve is "
        f"{1 / n_non_members:.4g}"
    ]


def _finite(v: float) -> float | None:
    """NaN / infinity -> None, so that the summary is strict JSON."""
    return float(v) if np.isfinite(v) else None


def _key(f: float) -> str:
    return "0" if f == 0 else repr(float(f))


def check_scores(scores: Any, is_member: Any) -> tuple[np.ndarray, np.ndarray]:
    """Scores as float64 and membership as bool, checked: same length, 0/1 labels, no NaN, both classes present."""
    s = (
        np.asarray(scores, dtype=np.float64).ravel()
        if not isinstance(scores, pd.Series)
        else scores.to_numpy(np.float64)
    )
    y = np.asarray(is_member).ravel()
    if s.shape != y.shape:
        raise TabmemError(f"scores ({s.size}) and is_member ({y.size}) must have the same length")
    if y.dtype != bool:
        if not np.isin(y, [0, 1]).all():
            raise TabmemError("is_member must hold booleans or 0/1 values")
        y = y.astype(bool)
    if np.isnan(s).any():
        raise TabmemError(
            f"{int(np.isnan(s).sum())} score(s) are NaN (first positions: {np.flatnonzero(np.isnan(s))[:5].tolist()})"
        )
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise TabmemError(f"need at least one member and one non-member (got {n_pos} members, {n_neg} non-members)")
    return s, y


def _check(scores: Any, is_member: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`check_scores`, with infinite scores replaced by finite stand-ins in the same order."""
    s, y = check_scores(scores, is_member)
    return (rank_infinite(s) if np.isinf(s).any() else s), y


def rank_infinite(s: np.ndarray) -> np.ndarray:
    """Finite stand-ins for infinite scores, in the same order (ties kept): the ROC depends on order only."""
    finite = s[np.isfinite(s)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 0.0
    span = max(hi - lo, 1.0) if np.isfinite(hi - lo) else 1.0
    out = s.copy()
    out[s == np.inf] = hi + span
    out[s == -np.inf] = lo - span
    return out


def original_threshold(t: float, scores: Any) -> float:
    """A ROC threshold in the units of the scores given (a stand-in of an infinite score -> that infinity)."""
    raw = np.asarray(scores, dtype=np.float64).ravel()
    finite = raw[np.isfinite(raw)]
    if finite.size == raw.size or not np.isfinite(t):
        return t
    if finite.size == 0 or t > finite.max():
        return float("inf") if (raw == np.inf).any() else t
    if t < finite.min():
        return float("-inf")
    return t


def auc_score(scores: Any, is_member: Any) -> float:
    """ROC AUC by the Mann-Whitney statistic with mid-ranks (ties count 1/2; equals ``roc_auc_score``)."""
    s, y = _check(scores, is_member)
    return _auc(s, y)


def _auc(s: np.ndarray, y: np.ndarray) -> float:
    ranks = rankdata(s)
    n_pos = y.sum()
    n_neg = y.size - n_pos
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, target: float) -> float:
    """The paper's ``np.interp(target, fpr, tpr)`` (TPR@0 = largest TPR with no false positive)."""
    return float(np.interp(target, fpr, tpr))


def tpr_at_fpr_strict(fpr: np.ndarray, tpr: np.ndarray, target: float) -> float:
    """Largest TPR of a deterministic threshold whose FPR is at most ``target`` (tie blocks whole)."""
    ok = fpr <= target + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0


def evaluate_membership(
    scores: Any,
    is_member: Any,
    *,
    fprs: Sequence[float] = DEFAULT_FPRS,
    n_bootstrap: int = 200,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> MembershipResult:
    """Evaluate membership scores (higher = more likely a member) against the truth.

    ``auc_ci`` and ``tpr_at_fpr_ci`` are percentile bootstrap intervals from the same resamples,
    which draw members and non-members separately (stratified, ``n_bootstrap`` resamples; 0
    disables them and gives ``(nan, nan)``); the TPR of a resample is the paper's
    interpolated ``TPR@f`` on that resample's ROC curve.
    ``balanced_accuracy`` is ``max_t (TPR(t) + 1 - FPR(t)) / 2`` over the ROC thresholds and
    ``threshold`` the score reaching it (predict member when ``score >= threshold``).
    """
    s, y = _check(scores, is_member)
    for f in fprs:
        if not 0.0 <= float(f) <= 1.0:
            raise TabmemError(f"fprs: every FPR must be in [0, 1], got {f!r}")
    if not 0 < confidence < 1:
        raise TabmemError(f"confidence must be in (0, 1), got {confidence!r}")
    if not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 0:
        raise TabmemError(f"n_bootstrap must be a non-negative integer, got {n_bootstrap!r}")
    fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)
    auc = _auc(s, y)
    j = int(np.argmax(tpr - fpr))
    bal = float((tpr[j] + 1.0 - fpr[j]) / 2.0)
    threshold = original_threshold(float(thr[j]), scores)
    fprs = tuple(float(f) for f in fprs)
    ci, tpr_ci = _bootstrap(s, y, n_bootstrap, confidence, random_state, fprs)
    if min(int(y.sum()), int((~y).sum())) < 2:  # one member or non-member: no resample differs from the sample
        ci = (float("nan"), float("nan"))
        tpr_ci = {f: (float("nan"), float("nan")) for f in fprs}
    return MembershipResult(
        auc=auc,
        auc_ci=ci,
        tpr_at_fpr_ci=tpr_ci,
        tpr_at_fpr={f: tpr_at_fpr(fpr, tpr, f) for f in fprs},
        tpr_at_fpr_strict={f: tpr_at_fpr_strict(fpr, tpr, f) for f in fprs},
        balanced_accuracy=bal,
        threshold=threshold,
        n_members=int(y.sum()),
        n_non_members=int((~y).sum()),
        roc=pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": thr}),
    )


def _bootstrap(
    s: np.ndarray, y: np.ndarray, n_boot: int, confidence: float, random_state: Any, fprs: tuple[float, ...]
) -> tuple[tuple[float, float], dict[float, tuple[float, float]]]:
    """Percentile intervals of the AUC and of every TPR@f over stratified resamples."""
    nan2 = (float("nan"), float("nan"))
    if n_boot == 0:
        return nan2, {f: nan2 for f in fprs}
    rng = np.random.default_rng(random_state)
    pos, neg = s[y], s[~y]
    lab = np.concatenate([np.ones(pos.size, bool), np.zeros(neg.size, bool)])
    aucs = np.empty(n_boot)
    tprs = np.empty((n_boot, len(fprs)))
    for b in range(n_boot):
        sample = np.concatenate(
            [pos[rng.integers(pos.size, size=pos.size)], neg[rng.integers(neg.size, size=neg.size)]]
        )
        aucs[b] = _auc(sample, lab)
        fpr, tpr = _roc_points(sample, lab)
        tprs[b] = np.interp(fprs, fpr, tpr)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(aucs, [alpha, 1.0 - alpha])
    t_lo, t_hi = np.quantile(tprs, [alpha, 1.0 - alpha], axis=0)
    return (float(lo), float(hi)), {f: (float(t_lo[i]), float(t_hi[i])) for i, f in enumerate(fprs)}


def _roc_points(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fpr, tpr)`` of ``roc_curve(y, s, drop_intermediate=False)``, without its per-call validation.

    One point per distinct score (thresholds in decreasing order, a tie block taken whole) after
    the origin; tested against a brute-force threshold scan.
    """
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    ends = np.r_[np.flatnonzero(np.diff(s_sorted)), s.size - 1]
    tps = np.cumsum(y_sorted)[ends]
    fps = ends + 1 - tps
    return np.r_[0.0, fps / fps[-1]], np.r_[0.0, tps / tps[-1]]


def top_k_worst_case(
    runs: pd.DataFrame, *, k: int = 20, group: str = "generator", by: str = "tpr_at_fpr_0.1"
) -> pd.DataFrame:
    """The paper's "top-k worst case": per ``group``, the ``k`` runs with the largest ``by`` (default TPR@0.1).

    ``runs`` has one row per evaluation run (e.g. dataset x size x seed x generator) and metric
    columns; returns those rows (ties by the original order, stable). Summarise with
    ``.groupby(group).agg(["mean", "std"])`` as the paper's Table 1 does.
    """
    for col in (group, by):
        if col not in runs.columns:
            raise TabmemError(f"top_k_worst_case: column {col!r} not in the runs table (columns: {list(runs.columns)})")
    check_positive_int("top_k_worst_case: k", k)
    parts = []
    for _, g in runs.groupby(group, sort=True):
        order = np.argsort(-g[by].to_numpy(dtype=np.float64), kind="stable")[:k]
        parts.append(g.iloc[order])
    return pd.concat(parts) if parts else runs.iloc[:0]


def worst_case_records(
    scores: Any, is_member: Any | None = None, *, k: int = 20, ids: Any | None = None
) -> pd.DataFrame:
    """Per-record worst case: the ``k`` target records with the strongest membership evidence (highest scores).

    Returns ``target_row`` (or ``ids``), ``score``, ``rank`` (1 = strongest; ties share the best
    rank) and ``is_member`` when given; records are identified by position, never by their values.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    if is_member is not None:
        s, y = _check(s, is_member)
    order = np.lexsort((np.arange(s.size), -s))[: max(int(k), 0)]
    ranks = rankdata(-s, method="min")
    out = pd.DataFrame(
        {
            "target_row": np.asarray(ids)[order] if ids is not None else order,
            "score": s[order],
            "rank": ranks[order].astype(np.int64),
        }
    )
    if is_member is not None:
        out["is_member"] = y[order]
    return out.reset_index(drop=True)
