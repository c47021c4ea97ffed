"""The figures a rule can judge, read from the summaries the commands wrote (none recomputed from records).

One :class:`Measured` holds what was measured about one synthetic table (a cell): its audits by
distance, its attack, quality and risk summaries, each the ``summary.json`` object its command
wrote. :func:`figures_of` turns it into :class:`Figure` records: a value with its interval (or
the reason it cannot be judged), the component it belongs to (an attack, a distance, a column)
and the size of its family (how many attacks were run: choosing the strongest of them is
corrected for). :data:`FIGURES` names every figure a policy may use.

The baselines are built in: memorization figures are excesses over the holdout (real rows never
trained on, scored the same way), risks are successes beyond those on the control rows, and
membership AUC is judged against chance by construction.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tabmem.attacks.summary import META_KEY, PRIVACY_KEY
from tabmem.gate.intervals import newcombe_difference
from tabmem.memorization.summary import EXCESS_MEMORIZATION, EXCESS_MEMORIZATION_CI
from tabmem.metrics.report import SUMMARY_KEYS

__all__ = ["FIGURES", "Figure", "FigureSpec", "Measured", "excess_interval", "figure_spec", "figures_of"]

RISKS = ("singling_out_univariate", "singling_out_multivariate", "linkability")


@dataclass(frozen=True)
class FigureSpec:
    """What a figure is: its unit (``points``: a share shown in percent points), meaning, default advice on a
    failure, and what narrows its interval (the advice when a rule on it is unresolved)."""

    unit: str
    meaning: str
    advice: str
    resolve: str = "more rows narrow the interval"


FIGURES: dict[str, FigureSpec] = {
    "memorization.excess": FigureSpec(
        "points",
        "synthetic rows that are replicas of a training row, beyond the holdout's share (real rows never trained on)",
        "mitigate (tabmem dynamiccut, fewer epochs, a DP optimizer)",
        "a larger synthetic sample and holdout narrow the interval (tabmem sample --n, tabmem audit --holdout)",
    ),
    "memorization.exact_copy_excess": FigureSpec(
        "points",
        "synthetic rows identical to a training row, beyond the holdout's share",
        "drop the copies (tabmem audit's replicas.csv lists them by position) and find why the generator copies",
        "a larger synthetic sample and holdout narrow the interval (tabmem sample --n, tabmem audit --holdout)",
    ),
    "membership.auc": FigureSpec(
        "score",
        "ROC-AUC of a membership-inference attack (0.5: chance), every attack run",
        "train with fewer epochs, a DP optimizer or DynamicCut",
        "more member and non-member targets narrow the interval",
    ),
    "privacy.epsilon_lower_bound": FigureSpec(
        "epsilon",
        "the best empirical ε lower bound over the attacks (already corrected for the best of them)",
        "a bound above the claimed ε means the DP training does not deliver its guarantee: check the accountant",
    ),
    "risk.singling_out_univariate": FigureSpec(
        "score",
        "singling-out risk, one-column predicates (success on training rows beyond the control's, normalised)",
        "coarsen or drop the rare values the synthetic table reproduces",
        "more attacks (tabmem risk --n-attacks) and a larger control narrow the interval",
    ),
    "risk.singling_out_multivariate": FigureSpec(
        "score",
        "singling-out risk, predicates on several columns",
        "the synthetic rows reproduce rare combinations: mitigate memorization, or generalise those columns",
        "more attacks (tabmem risk --n-attacks) and a larger control narrow the interval",
    ),
    "risk.linkability": FigureSpec(
        "score",
        "linkability risk across the two --aux column sets",
        "the synthetic rows link the two column sets of training records: mitigate memorization",
        "more attacks (tabmem risk --n-attacks) and a larger control narrow the interval",
    ),
    "risk.inference": FigureSpec(
        "score",
        "attribute-inference risk of each secret column",
        "the secret column is predictable for training rows beyond real unseen ones: mitigate memorization",
        "more attacks (tabmem risk --n-attacks) and a larger control narrow the interval",
    ),
}
#: figure families whose last part is a parameter: membership.tpr_at_fpr_0.01, quality.shape
PATTERNS: dict[str, tuple[re.Pattern[str], FigureSpec]] = {
    "membership.tpr_at_fpr_F": (
        re.compile(r"membership\.tpr_at_fpr_(0(\.\d+)?|1(\.0*)?)"),
        FigureSpec(
            "score",
            "TPR of a membership-inference attack at that FPR (chance: TPR = FPR), every attack run",
            "train with fewer epochs, a DP optimizer or DynamicCut",
            "more non-members resolve lower FPRs and narrow the interval",
        ),
    ),
    "quality.METRIC": (
        re.compile(r"quality\.(" + "|".join(SUMMARY_KEYS) + ")"),
        FigureSpec("score", "a tabmem quality metric, as written (no interval)", "tune the generator"),
    ),
}


def figure_spec(name: str) -> FigureSpec | None:
    """The spec of figure ``name``, or None when no figure has that name."""
    if name in FIGURES:
        return FIGURES[name]
    for pattern, spec in PATTERNS.values():
        if pattern.fullmatch(name):
            return spec
    return None


@dataclass(frozen=True)
class Measured:
    """What was measured about one synthetic table: each summary as its command wrote it."""

    label: str
    audits: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # by distance
    attacks: Mapping[str, Any] | None = None
    quality: Mapping[str, Any] | None = None
    risk: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Figure:
    """One measured figure: ``value`` with its ``ci`` (at ``confidence``), or why it cannot be judged.

    ``family`` is how many components of this figure were measured (attacks run, secret columns):
    a rule that says "fails" of the strongest of them corrects for having chosen it. ``exact``
    figures (an ε lower bound, a quality score) carry no sampling interval and are judged as they are.
    """

    name: str
    component: str
    value: float | None
    ci: tuple[float, float] | None
    confidence: float = 0.95
    family: int = 1
    exact: bool = False
    reference: float | None = None  # the claimed ε, for a limit of "claimed"
    unjudged: str | None = None  # why the interval cannot decide (no holdout, a distance that cannot discriminate)

    @property
    def unit(self) -> str:
        spec = figure_spec(self.name)
        return spec.unit if spec is not None else "score"


def figures_of(measured: Measured) -> list[Figure]:
    """Every figure in ``measured``, in a fixed order (memorization, membership, privacy, risk, quality)."""
    out: list[Figure] = []
    for distance, audit in measured.audits.items():
        out.append(_excess(distance, audit))
    copies = next((f for a in measured.audits.values() if (f := _exact_copies(a)) is not None), None)
    if copies is not None:
        out.append(copies)
    if measured.attacks is not None:
        out.extend(_membership(measured.attacks))
    if measured.risk is not None:
        out.extend(_risks(measured.risk))
    if measured.quality is not None:
        for key in SUMMARY_KEYS:
            v = _finite(measured.quality.get(key))
            if v is not None:
                out.append(Figure(f"quality.{key}", "", v, (v, v), exact=True))
    return out


# ----------------------------------------------------------------------------- memorization
def _excess(distance: str, audit: Mapping[str, Any]) -> Figure:
    name = "memorization.excess"
    if audit.get("n_holdout") is None and audit.get("holdout_memorization_rate") is None:
        return Figure(name, distance, None, None, unjudged="no holdout rows were scored, so there is no baseline")
    value, ci = _finite(audit.get(EXCESS_MEMORIZATION)), excess_interval(audit)
    conf = _finite(audit.get("confidence")) or 0.95
    why = None
    if audit.get("distance_discriminates") is False:
        why = f"the {distance} distance cannot tell copies from real unseen rows on this data (audit with gower)"
    elif ci is None:
        why = "no interval was recorded (fewer than 2 rows in a table, or an older tabmem)"
    return Figure(name, distance, value, ci, confidence=conf, unjudged=why)


def excess_interval(audit: Mapping[str, Any]) -> tuple[float, float] | None:
    """The interval of an audit's excess memorization that the rules judge (and the report shows).

    The audit's percentile bootstrap, widened to Newcombe's score interval where that is wider: the
    bootstrap collapses to ``[0, 0]`` on zero counts and would claim a certainty no sample gives.
    """
    ci = _pair(audit.get(EXCESS_MEMORIZATION_CI))
    conf = _finite(audit.get("confidence")) or 0.95
    score = _score_interval(audit, "memorization_rate", "holdout_memorization_rate", conf)
    if ci is not None and score is not None:
        ci = (min(ci[0], score[0]), max(ci[1], score[1]))
    return ci


def _score_interval(
    audit: Mapping[str, Any], rate_key: str, holdout_key: str, confidence: float
) -> tuple[float, float] | None:
    """Newcombe's interval of a synthetic-minus-holdout rate, from the audit's rates and row counts (None without them)."""
    n_syn, n_hold = audit.get("n_synthetic"), audit.get("n_holdout")
    rate, hold = _finite(audit.get(rate_key)), _finite(audit.get(holdout_key))
    if not isinstance(n_syn, int) or not isinstance(n_hold, int) or n_syn < 1 or n_hold < 1:
        return None
    if rate is None or hold is None:
        return None
    k1, k2 = min(round(rate * n_syn), n_syn), min(round(hold * n_hold), n_hold)
    return newcombe_difference(k1, n_syn, k2, n_hold, confidence)


def _exact_copies(audit: Mapping[str, Any]) -> Figure | None:
    n_syn, n_hold = audit.get("n_synthetic"), audit.get("n_holdout")
    rate, hold = _finite(audit.get("exact_copy_rate")), _finite(audit.get("holdout_exact_copy_rate"))
    if not isinstance(n_syn, int) or rate is None:
        return None
    name = "memorization.exact_copy_excess"
    if not isinstance(n_hold, int) or hold is None:
        return Figure(name, "", None, None, unjudged="no holdout rows were scored, so there is no baseline")
    ci = _score_interval(audit, "exact_copy_rate", "holdout_exact_copy_rate", 0.95)
    if ci is None:
        return Figure(name, "", rate - hold, None, unjudged="an empty table has no interval")
    return Figure(name, "", rate - hold, ci)


# ----------------------------------------------------------------------------- membership inference
def _membership(summary: Mapping[str, Any]) -> Iterator[Figure]:
    results = {k: v for k, v in summary.items() if k not in (META_KEY, PRIVACY_KEY) and isinstance(v, dict)}
    scored = {k: r for k, r in results.items() if _finite(r.get("auc")) is not None}
    for attack, r in scored.items():
        ci = _pair(r.get("auc_ci"))
        why = None if ci is not None else "no interval was recorded (too few targets to resample)"
        yield Figure("membership.auc", attack, _finite(r.get("auc")), ci, family=len(scored), unjudged=why)
    fprs = sorted({f for r in scored.values() for f in (r.get("tpr_at_fpr") or {})}, key=float)
    for fpr in fprs:
        for attack, r in scored.items():
            yield _tpr(attack, r, fpr, len(scored))
    privacy = summary.get(PRIVACY_KEY) or {}
    eps = _finite(privacy.get("epsilon_lower_bound"))
    if eps is not None:
        yield Figure(
            "privacy.epsilon_lower_bound",
            str(privacy.get("attack") or ""),
            eps,
            (eps, eps),
            confidence=_finite(privacy.get("confidence")) or 0.95,
            exact=True,
            reference=_finite(privacy.get("claimed_epsilon")),
        )


def _tpr(attack: str, r: Mapping[str, Any], fpr: str, family: int) -> Figure:
    name = f"membership.tpr_at_fpr_{fpr}"
    value = _finite((r.get("tpr_at_fpr") or {}).get(fpr))
    ci = _pair((r.get("tpr_at_fpr_ci") or {}).get(fpr))
    n_non = r.get("n_non_members")
    why = None
    if isinstance(n_non, int) and n_non > 0 and float(fpr) < 1 / n_non:
        why = f"FPR {fpr} is not resolved: {n_non} non-members measure FPRs down to {1 / n_non:.2g}"
    elif ci is None:
        why = "no interval was recorded"
    return Figure(name, attack, value, ci, family=family, unjudged=why)


# ----------------------------------------------------------------------------- WP29 risks
def _risks(summary: Mapping[str, Any]) -> Iterator[Figure]:
    conf = _finite(summary.get("confidence")) or 0.95
    for key in RISKS:
        est = summary.get(key)
        if isinstance(est, dict):
            yield _risk(f"risk.{key}", "", est, conf, 1)
    per_column = (summary.get("inference") or {}).get("per_column") or {}
    for column, est in per_column.items():
        if isinstance(est, dict):
            yield _risk("risk.inference", str(column), est, conf, len(per_column))


def _risk(name: str, component: str, est: Mapping[str, Any], conf: float, family: int) -> Figure:
    ci = _pair(est.get("risk_ci"))
    why = None if ci is not None else "no interval was recorded"
    return Figure(name, component, _finite(est.get("risk")), ci, confidence=conf, family=family, unjudged=why)


# ----------------------------------------------------------------------------- helpers
def _finite(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = _finite(value[0]), _finite(value[1])
        if lo is not None and hi is not None:
            return (lo, hi)
    return None
