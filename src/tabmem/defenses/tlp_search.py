"""The LevAtt paper's search for the TLP tendency ``t``.

Ward et al., "When Tables Leak" (arXiv 2512.08875), ``realtabformer_generate.py::evaluate_tlp``:
start at ``t0`` (3.0 for the AUC target, 2.5 for the TPR target); after each trial whose metric
misses the target, step ``t`` by the relative margin ``r = (metric - thr) / thr``:
``r >= .30 -> +3.0; >= .20 -> +1.5; >= .10 -> +1.25; >= .05 -> +1.0; else +0.5``, while
``t <= 20``. The first ``t`` meeting the target (AUC < 0.55, or TPR at FPR 0.1 <= 0.125) is kept;
if none does, the trial with the lowest metric is returned (``met=False``).

The defender calibrates ``t`` by running LevAtt with known membership labels, so ``evaluate`` is
any callable ``t -> (auc, tpr_at_0.1)`` (for example sampling with TLP then
``tabmem.attacks.evaluate_membership``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from tabmem.errors import TabmemError

Criterion = Literal["auc", "tpr", "either"]
AUC_TARGET = 0.55
TPR_TARGET = 0.125


def tendency_step(metric: float, threshold: float) -> float:
    """The paper's adaptive step for a trial that missed ``threshold`` by the relative margin."""
    r = (metric - threshold) / threshold
    if r >= 0.30:
        return 3.0
    if r >= 0.20:
        return 1.5
    if r >= 0.10:
        return 1.25
    if r >= 0.05:
        return 1.0
    return 0.5


@dataclass(frozen=True)
class TLPSearchResult:
    """Outcome of :func:`search_tendency`: the chosen ``tendency``, its metrics, every trial."""

    tendency: float
    auc: float
    tpr_at_0_1: float
    met: bool
    trials: pd.DataFrame = field(repr=False)


def _margin(criterion: Criterion, auc: float, tpr: float, auc_target: float, tpr_target: float) -> float:
    if criterion == "auc":
        return (auc - auc_target) / auc_target
    if criterion == "tpr":
        return (tpr - tpr_target) / tpr_target
    return min((auc - auc_target) / auc_target, (tpr - tpr_target) / tpr_target)


def search_tendency(
    evaluate: Callable[[float], tuple[float, float]],
    criterion: Criterion = "auc",
    start: float | None = None,
    max_tendency: float = 20.0,
    auc_target: float = AUC_TARGET,
    tpr_target: float = TPR_TARGET,
) -> TLPSearchResult:
    """Search the smallest paper-schedule ``t`` whose LevAtt metrics meet the target.

    Args:
        evaluate: ``t -> (auc, tpr_at_fpr_0.1)`` measured on samples drawn with TLP at ``t``.
        criterion: ``"auc"`` (AUC < auc_target, paper default), ``"tpr"`` (TPR@0.1 <= tpr_target) or
            ``"either"`` (whichever is met first; the step uses the smaller relative margin).
        start: first ``t``; default 3.0 (auc, either) or 2.5 (tpr). Chain several synthetic sizes
            with ``start = previous.tendency - 0.25`` as the paper does.
        max_tendency: no trial beyond this ``t`` (paper: 20).
    """
    if criterion not in ("auc", "tpr", "either"):
        raise TabmemError(f"criterion must be 'auc', 'tpr' or 'either', got criterion={criterion!r}")
    t = (2.5 if criterion == "tpr" else 3.0) if start is None else float(start)
    if not math.isfinite(t) or t < 1.0:
        raise TabmemError(f"start must be a tendency >= 1, got start={start!r}")
    if not (max_tendency >= t):
        raise TabmemError(f"max_tendency must be >= start ({t}), got max_tendency={max_tendency!r}")
    rows = []
    while t <= max_tendency + 1e-12:
        auc, tpr = evaluate(t)
        auc, tpr = float(auc), float(tpr)
        if not (math.isfinite(auc) and math.isfinite(tpr)):
            raise TabmemError(f"evaluate({t}) returned non-finite metrics (auc={auc}, tpr={tpr})")
        met_auc, met_tpr = auc < auc_target, tpr <= tpr_target
        met = met_auc if criterion == "auc" else met_tpr if criterion == "tpr" else (met_auc or met_tpr)
        margin = _margin(criterion, auc, tpr, auc_target, tpr_target)
        rows.append({"tendency": t, "auc": auc, "tpr_at_0_1": tpr, "margin": margin, "met": met})
        if met:
            return TLPSearchResult(t, auc, tpr, True, pd.DataFrame(rows))
        if criterion == "either":
            r = min((auc - auc_target) / auc_target, (tpr - tpr_target) / tpr_target)
            step = tendency_step(1.0 + r, 1.0)
        else:
            step = tendency_step(auc, auc_target) if criterion == "auc" else tendency_step(tpr, tpr_target)
        t = t + step
    trials = pd.DataFrame(rows)
    best = trials.loc[trials["margin"].idxmin()]
    return TLPSearchResult(float(best["tendency"]), float(best["auc"]), float(best["tpr_at_0_1"]), False, trials)
