"""Numbers an auditor can sign: exact binomial intervals, MIDST-style TPR at FPR, empirical ε lower bounds.

Every membership attack's scores (higher = member) give, at each threshold, a test with a true
positive rate on the members and a false positive rate on the non-members. Three readings:

* **MIDST TPR at FPR** (the MIDST challenge's score, SaTML 2025): ``max TPR`` over thresholds whose
  empirical FPR is at most ``f`` (``max(tpr[fpr <= f])`` on scikit-learn's ROC), with its
  Clopper–Pearson interval.
* **Conservative TPR at FPR**: the same, over thresholds whose FPR is at most ``f`` with the stated
  confidence (the one-sided Clopper–Pearson upper bound of the FPR is ``<= f``), so the operating
  point holds on the population and not only on these non-members. With ``n`` non-members no
  threshold can certify an FPR below ``min_certified_fpr = 1 - (1 - confidence)^(1/n)`` (zero false
  positives); smaller FPRs are reported as ``null``.
* **Empirical ε lower bound** (privacy auditing: Jagielski, Ullman, Oprea, NeurIPS 2020; Nasr et al.,
  IEEE S&P 2021). An (ε, δ)-DP training procedure bounds every membership test by
  ``TPR <= e^ε FPR + δ`` and ``TNR <= e^ε FNR + δ`` (Kairouz et al. 2015), so

      ε >= max( log((TPR_lo - δ) / FPR_hi), log((TNR_lo - δ) / FNR_hi) )

  with ``TPR_lo``/``TNR_lo`` the lower and ``FPR_hi``/``FNR_hi`` the upper ends of two-sided
  Clopper–Pearson intervals at ``confidence`` (each end holds with ``1 - α/2``; by the union bound
  the bound holds with probability ``confidence``).

  Maximising over every threshold of the same data (what the papers report:
  ``epsilon_all_thresholds``) picks the luckiest threshold, so it is not a bound at the stated
  confidence. ``epsilon`` is: choose the threshold on a random half of the members and of the
  non-members (seeded), then bound on the other half. An auditor signs ``epsilon``.

Membership of a target in a *synthetic-data* release is a test on the generator's training
procedure, so a lower bound above a generator's claimed ε (DP-SGD) proves a bug in the DP training
or its accounting; one below it proves nothing about the claim.

Only ``min_resolved_fpr = 1 / n_non_members`` is named as in the studies schema: below it no FPR is
measured.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.stats import beta

from tabmem._checks import check_fraction, check_number, check_random_state
from tabmem.attacks.evaluation import check_scores
from tabmem.errors import ParameterError

__all__ = [
    "clopper_pearson",
    "epsilon_bounds",
    "epsilon_lower_bound",
    "membership_audit",
    "operating_points",
]

AUDIT_FPRS: tuple[float, ...] = (0.1, 0.01)


def clopper_pearson(k: Any, n: Any, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided binomial interval of ``k`` successes in ``n`` trials (vectorised).

    ``lo = Beta.ppf(α/2, k, n - k + 1)`` (0 when ``k = 0``) and ``hi = Beta.ppf(1 - α/2, k + 1, n - k)``
    (1 when ``k = n``), ``α = 1 - confidence`` (Clopper & Pearson 1934).
    """
    check_fraction("confidence", confidence)
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any(n <= 0) or np.any(k < 0) or np.any(k > n):
        raise ParameterError("clopper_pearson: need 0 <= k <= n and n > 0")
    a = (1.0 - confidence) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, beta.ppf(a, np.maximum(k, 1e-300), n - k + 1), 0.0)
        hi = np.where(k < n, beta.ppf(1.0 - a, k + 1, np.maximum(n - k, 1e-300)), 1.0)
    return lo, hi


def _upper(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound at ``level``: ``Beta.ppf(level, k + 1, n - k)`` (1 when ``k = n``)."""
    check_fraction("confidence", level)
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k < n, beta.ppf(level, k + 1, np.maximum(n - k, 1e-300)), 1.0)


def _counts(scores: np.ndarray, is_member: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thresholds (distinct scores, descending) and TP/FP counts of ``score >= threshold``."""
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], is_member[order]
    tp, fp = np.cumsum(y), np.cumsum(~y)
    last = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]  # end of each tie block
    thr = np.r_[np.inf, s[last]]
    return thr, np.r_[0, tp[last]].astype(np.int64), np.r_[0, fp[last]].astype(np.int64)


def _check(scores: Any, is_member: Any) -> tuple[np.ndarray, np.ndarray, int, int]:
    s, y = check_scores(scores, is_member)  # infinite scores stay: thresholds are reported in score units
    return s, y, int(y.sum()), int((~y).sum())


def epsilon_bounds(
    tp: np.ndarray, fp: np.ndarray, n_pos: int, n_neg: int, *, delta: float, confidence: float
) -> np.ndarray:
    """ε lower bound of each threshold given its TP/FP counts (module docstring); 0 where nothing is proved."""
    tpr_lo, _ = clopper_pearson(tp, n_pos, confidence)
    _, fpr_hi = clopper_pearson(fp, n_neg, confidence)
    tnr_lo, _ = clopper_pearson(n_neg - fp, n_neg, confidence)
    _, fnr_hi = clopper_pearson(n_pos - tp, n_pos, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        e1 = np.where(tpr_lo > delta, np.log((tpr_lo - delta) / fpr_hi), -np.inf)
        e2 = np.where(tnr_lo > delta, np.log((tnr_lo - delta) / fnr_hi), -np.inf)
    return np.maximum(np.maximum(e1, e2), 0.0)


def epsilon_lower_bound(
    scores: Any,
    is_member: Any,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> dict[str, Any]:
    """Empirical ε lower bound at ``delta`` (module docstring): the signed split bound and the papers' maximum.

    Returns ``epsilon`` (threshold chosen on one random half, bound on the other: holds with
    probability ``confidence``), ``epsilon_all_thresholds`` (maximum over every threshold of all
    rows: the papers' figure, optimistic), the chosen ``threshold`` and its TPR/FPR on the
    evaluation half, and the sizes of both halves.
    """
    check_number("delta", delta, low=0.0, high=1.0, high_open=True)
    check_fraction("confidence", confidence)
    seed = check_random_state(random_state)
    s, y, n_pos, n_neg = _check(scores, is_member)
    thr, tp, fp = _counts(s, y)
    eps_all = epsilon_bounds(tp, fp, n_pos, n_neg, delta=delta, confidence=confidence)
    out: dict[str, Any] = {
        "delta": float(delta),
        "confidence": float(confidence),
        "epsilon_all_thresholds": float(eps_all.max()),
    }
    rng = np.random.default_rng(np.random.SeedSequence([seed or 0, 13]))
    sel = np.zeros(s.size, dtype=bool)
    for group in (np.flatnonzero(y), np.flatnonzero(~y)):
        sel[rng.permutation(group)[: group.size // 2]] = True
    ev = ~sel
    if y[sel].all() or (~y[sel]).all() or y[ev].all() or (~y[ev]).all():
        out.update(epsilon=0.0, threshold=None, tpr=None, fpr=None, n_select=int(sel.sum()), n_evaluate=int(ev.sum()))
        return out
    thr_a, tp_a, fp_a = _counts(s[sel], y[sel])
    e_a = epsilon_bounds(tp_a, fp_a, int(y[sel].sum()), int((~y[sel]).sum()), delta=delta, confidence=confidence)
    t = float(thr_a[int(np.argmax(e_a))])
    pred = s[ev] >= t
    yb = y[ev]
    nb_pos, nb_neg = int(yb.sum()), int((~yb).sum())
    tp_b, fp_b = int((pred & yb).sum()), int((pred & ~yb).sum())
    e_b = float(
        epsilon_bounds(np.array([tp_b]), np.array([fp_b]), nb_pos, nb_neg, delta=delta, confidence=confidence)[0]
    )
    out.update(
        epsilon=e_b,
        threshold=t if np.isfinite(t) else None,
        tpr=tp_b / nb_pos,
        fpr=fp_b / nb_neg,
        n_select=int(sel.sum()),
        n_evaluate=int(ev.sum()),
    )
    return out


def operating_points(
    scores: Any, is_member: Any, *, fprs: Sequence[float] = AUDIT_FPRS, confidence: float = 0.95
) -> dict[str, dict[str, dict[str, Any]]]:
    """MIDST and conservative TPR at each FPR (module docstring), each with its threshold and CP intervals."""
    s, y, n_pos, n_neg = _check(scores, is_member)
    thr, tp, fp = _counts(s, y)
    tpr, fpr = tp / n_pos, fp / n_neg
    fpr_hi = _upper(fp, n_neg, confidence)  # one-sided upper confidence bound of the FPR
    midst: dict[str, dict[str, Any]] = {}
    conservative: dict[str, dict[str, Any]] = {}
    for f in fprs:
        f = check_fraction("fpr", float(f), allow_one=True)
        for table, ok in ((midst, fpr <= f + 1e-12), (conservative, fpr_hi <= f + 1e-12)):
            if not ok.any():  # too few non-members to certify an FPR this small (conservative only)
                table[_key(f)] = dict.fromkeys(("tpr", "tpr_ci", "fpr", "fpr_upper", "threshold"))
                continue
            j = int(np.flatnonzero(ok)[np.argmax(tpr[ok])])
            lo, hi = clopper_pearson(tp[j], n_pos, confidence)
            table[_key(f)] = {
                "tpr": float(tpr[j]),
                "tpr_ci": [float(lo), float(hi)],
                "fpr": float(fpr[j]),
                "fpr_upper": float(fpr_hi[j]),
                "threshold": float(thr[j]) if np.isfinite(thr[j]) else None,
            }
    return {
        "midst_tpr_at_fpr": midst,
        "conservative_tpr_at_fpr": conservative,
        "min_certified_fpr": float(fpr_hi[0]),
    }


def membership_audit(
    scores: Any,
    is_member: Any,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    fprs: Sequence[float] = AUDIT_FPRS,
    random_state: int | None = 0,
) -> dict[str, Any]:
    """Everything above for one attack, as the JSON block ``tabmem attack`` adds next to AUC and TPR@FPR."""
    s, y, _, n_neg = _check(scores, is_member)
    out: dict[str, Any] = operating_points(s, y, fprs=fprs, confidence=confidence)
    out["min_resolved_fpr"] = 1.0 / n_neg
    out["epsilon_lower_bound"] = epsilon_lower_bound(
        s, y, delta=delta, confidence=confidence, random_state=random_state
    )
    return out


def _key(f: float) -> str:
    return "0" if f == 0 else repr(float(f))
