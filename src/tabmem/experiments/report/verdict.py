"""The verdict: what one cell's numbers say, in plain words, with the numbers that say it.

Rules (no threshold is tuned; each rests on an interval that the producing command wrote):

* **Memorization** is reported only as an *excess* over the holdout baseline (real rows never
  trained on, scored the same way). It is found when the 95% bootstrap interval of the excess
  lies above 0; "none beyond the baseline" when the interval holds 0; without a holdout the rate
  is shown but no verdict is drawn (closeness alone is not evidence: real unseen rows are close
  too).
* **Membership inference**: the strongest attack is the one with the highest AUC. An attack
  "tells members apart" when its AUC interval lies above 0.5. TPR at FPR f is compared with
  chance (TPR = f) and reported as not resolved when f < 1 / n_non_members.
* **Fidelity** (Shape, Trend) and **utility** (MLE against the same model trained on real rows)
  are stated, not judged: what is good enough depends on the use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tabmem.experiments.report.model import Attacks, Audit, Cell, Quality
from tabmem.experiments.report.readers import finite

__all__ = ["Finding", "CellVerdict", "cell_verdict", "strongest_attack", "ATTACK_NAMES", "fmt_pct", "fmt_ci"]

ATTACK_NAMES = {
    "levatt": "LevAtt",
    "dcr": "DCR",
    "mc": "Monte Carlo",
    "density": "density (KDE)",
    "domias": "DOMIAS",
}
MLE_NAMES = {"rmse": "RMSE", "auc": "ROC-AUC", "macro_f1": "macro-F1"}
LEVELS = ("alert", "ok", "info", "neutral", "missing")


@dataclass
class Finding:
    """One line of the verdict: ``level`` is alert (evidence of leakage), ok, info (no conclusion),
    neutral (a number stated, not judged: fidelity, utility) or missing."""

    topic: str
    level: str
    headline: str
    text: str


@dataclass
class CellVerdict:
    """The verdict of one cell: an overall badge and one finding per topic."""

    level: str
    badge: str
    findings: list[Finding] = field(default_factory=list)


# ----------------------------------------------------------------------------- formatting
def fmt_pct(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def fmt_points(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:+.{digits}f} points"


def fmt_ci(ci: Any, *, pct: bool = False, digits: int = 3) -> str:
    """``[lo, hi]`` as "lo to hi" (percent points when ``pct``); "n/a" when missing."""
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return "n/a"
    lo, hi = finite(ci[0]), finite(ci[1])
    if lo is None or hi is None:
        return "n/a"
    if pct:
        return f"{100 * lo:+.1f} to {100 * hi:+.1f}"
    return f"{lo:.{digits}f} to {hi:.{digits}f}"


def _ci(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = finite(value[0]), finite(value[1])
        if lo is not None and hi is not None:
            return (lo, hi)
    return None


# ----------------------------------------------------------------------------- findings
def memorization_finding(audit: Audit | None) -> Finding:
    if audit is None:
        return Finding("Memorization", "missing", "not measured", "No replica audit in this cell.")
    rate = finite(audit.get("memorization_rate"))
    hold = finite(audit.get("holdout_memorization_rate"))
    excess = finite(audit.get("excess_memorization"))
    ci = _ci(audit.get("excess_memorization_ci"))
    dist = f"distance {audit.get('distance', '?')}, d1/d2 < {_threshold(audit.get('threshold'))}"
    if hold is None or excess is None:
        return Finding(
            "Memorization",
            "info",
            "no baseline",
            f"{fmt_pct(rate)} of synthetic rows are replicas of a training row ({dist}), but no holdout rows were "
            "scored: real rows never trained on can be as close, so this rate alone is not evidence.",
        )
    conf = f"{round(100 * float(audit.get('confidence', 0.95)))}% CI"
    base = (
        f"{fmt_pct(rate)} of synthetic rows are replicas of a training row, against {fmt_pct(hold)} of real rows "
        f"never trained on ({dist})"
    )
    if ci is None:
        return Finding(
            "Memorization",
            "info",
            "no interval",
            f"{base}: excess {fmt_points(excess)}; no bootstrap interval recorded (re-run to get one).",
        )
    ci_txt = f"{conf} {fmt_ci(ci, pct=True)} points"
    if ci[0] > 0:
        return Finding(
            "Memorization", "alert", "found", f"{base}: {fmt_points(excess)} beyond the baseline ({ci_txt})."
        )
    if ci[1] < 0:
        return Finding(
            "Memorization",
            "ok",
            "below the baseline",
            f"{base}: {fmt_points(excess)}, fewer replicas than real unseen rows ({ci_txt}).",
        )
    return Finding(
        "Memorization",
        "ok",
        "none beyond the baseline",
        f"{base}: excess {fmt_points(excess)} ({ci_txt}, which holds 0).",
    )


def _threshold(t: Any) -> str:
    v = finite(t)
    if v is None:
        return "?"
    return "1/3" if abs(v - 1 / 3) < 1e-9 else f"{v:.3g}"


def heavy_tail_sentence(audit: Audit | None) -> str | None:
    """How concentrated the replicas are on few training records (top 1% / 10% shares)."""
    if audit is None:
        return None
    tail = audit.get("heavy_tail") or {}
    n = tail.get("n_records_with_replicas")
    top1, top10 = finite(tail.get("top_1pct_share")), finite(tail.get("top_10pct_share"))
    if not n or top1 is None or top10 is None:
        return None
    n_train = audit.get("n_train")
    of = f" of {n_train:,}" if isinstance(n_train, int) else ""
    return (
        f"Replicas fall on {n:,}{of} training records; the top 1% of records account for {fmt_pct(top1)} of them "
        f"and the top 10% for {fmt_pct(top10)}."
    )


def strongest_attack(attacks: Attacks | None) -> tuple[str, dict[str, Any]] | None:
    """The attack with the highest AUC (ties: the first in the summary)."""
    if attacks is None:
        return None
    best = None
    for name, r in attacks.results.items():
        auc = finite(r.get("auc"))
        if auc is not None and (best is None or auc > best[2]):
            best = (name, r, auc)
    return None if best is None else (best[0], best[1])


def tpr_phrase(r: dict[str, Any], fpr: str, *, leaks: bool = False) -> str:
    """'TPR 0.35 (CI 0.30 to 0.40; chance 0.10)' at one FPR, or why it is not resolved.

    For an attack that ``leaks`` (AUC above chance), an unresolved FPR is completed by the share of
    members it finds with no false positive at all (the tie-aware TPR at FPR 0).
    """
    tpr = finite((r.get("tpr_at_fpr") or {}).get(fpr))
    n_non = r.get("n_non_members")
    if tpr is None:
        return f"at FPR {fpr}: n/a"
    if isinstance(n_non, int) and n_non > 0 and float(fpr) < 1 / n_non:
        text = f"at FPR {fpr}: not resolved ({n_non:,} non-members measure FPRs down to {1 / n_non:.2g})"
        tpr0 = finite((r.get("tpr_at_fpr_strict") or {}).get("0"))
        if leaks and tpr0:
            text += f", but it finds {fmt_pct(tpr0)} of members with no false positive at all"
        return text
    ci = _ci((r.get("tpr_at_fpr_ci") or {}).get(fpr))
    ci_txt = f"CI {fmt_ci(ci)}; " if ci else ""
    return f"at FPR {fpr}: TPR {tpr:.3f} ({ci_txt}chance {float(fpr):g})"


def attack_finding(attacks: Attacks | None) -> Finding:
    best = strongest_attack(attacks)
    if attacks is None or best is None:
        return Finding("Membership inference", "missing", "not measured", "No attack results in this cell.")
    name, r = best
    auc = finite(r.get("auc"))
    ci = _ci(r.get("auc_ci"))
    label = ATTACK_NAMES.get(name, name)
    n_attacks = len(attacks.results)
    which = f"the strongest of {n_attacks} attacks" if n_attacks > 1 else "the only attack run"
    leaks = ci is not None and ci[0] > 0.5
    tprs = "; ".join(tpr_phrase(r, f, leaks=leaks) for f in ("0.1", "0.01"))
    auc_txt = f"AUC {auc:.3f}" + (f" (95% CI {fmt_ci(ci)})" if ci else " (no interval recorded)")
    if leaks:
        return Finding(
            "Membership inference",
            "alert",
            "members told apart",
            f"{label}, {which}, tells members from non-members: {auc_txt}; {tprs}.",
        )
    verdict = "no attack beats chance" if n_attacks > 1 else "the attack does not beat chance"
    if ci is None:
        return Finding("Membership inference", "info", "no interval", f"{label}, {which}: {auc_txt}; {tprs}.")
    return Finding(
        "Membership inference",
        "ok",
        "chance level",
        f"{verdict.capitalize()}: {label}, {which}, reaches {auc_txt}, which holds 0.5; {tprs}.",
    )


def fidelity_finding(quality: Quality | None) -> Finding:
    if quality is None:
        return Finding("Fidelity", "missing", "not measured", "No quality metrics in this cell.")
    shape, trend = quality.value("shape"), quality.value("trend")
    parts = []
    if shape is not None:
        parts.append(f"Shape {shape:.3f} (column distributions)")
    if trend is not None:
        parts.append(f"Trend {trend:.3f} (pairwise correlations)")
    if not parts:
        return Finding("Fidelity", "missing", "not measured", "Shape and Trend were not computed.")
    c2st = quality.value("c2st")
    auc = finite(((quality.summary.get("details") or {}).get("c2st") or {}).get("mean_auc"))
    extra = ""
    if c2st is not None:
        extra = f"; detection score {c2st:.3f} (1 = a classifier cannot tell synthetic rows from real ones" + (
            f"; its AUC is {auc:.3f})" if auc is not None else ")"
        )
    return Finding(
        "Fidelity", "neutral", "", f"{' and '.join(parts)}, where 1 means identical to the real table{extra}."
    )


def utility_finding(quality: Quality | None) -> Finding:
    if quality is None:
        return Finding("Utility", "missing", "not measured", "No quality metrics in this cell.")
    d = (quality.summary.get("details") or {}).get("mle") or {}
    syn = finite(quality.summary.get("mle"))
    key = d.get("score")
    real = finite((d.get("real") or {}).get(key)) if key else None
    if syn is None:
        why = (quality.summary.get("skipped") or {}).get("mle", "not computed")
        return Finding("Utility", "missing", "not measured", f"MLE: {why}.")
    name = MLE_NAMES.get(str(key), str(key))
    text = f"A model trained on the synthetic rows scores {name} {syn:.4g} on real test rows"
    if real is not None:
        text += f", against {real:.4g} when trained on the real rows"
        if real != 0 and key == "rmse":
            text += f" ({abs(syn / real - 1):.0%} {'more' if syn > real else 'less'} error)"
        elif real != 0:
            text += f" ({syn / real:.0%} of the real rows' score)"
    dcr = finite(quality.summary.get("dcr_share"))
    ideal = finite(((quality.summary.get("details") or {}).get("dcr_share") or {}).get("ideal"))
    if dcr is not None and ideal is not None:
        text += (
            f". DCR share {dcr:.3f}: the fraction of synthetic rows closer to a training row than to a holdout row "
            f"(no-copy value {ideal:.3f})"
        )
    return Finding("Utility", "neutral", "", text + ".")


def cell_verdict(cell: Cell) -> CellVerdict:
    """The badge and the four findings of one cell."""
    mem, att = memorization_finding(cell.audit), attack_finding(cell.attacks)
    others = [(d, a) for d, a in cell.audits.items() if a is not cell.audit]
    if others:
        parts = []
        for d, a in others:
            ex = finite(a.get("excess_memorization"))
            ci = _ci(a.get("excess_memorization_ci"))
            rate = f"{fmt_points(ex)}" if ex is not None else f"rate {fmt_pct(finite(a.get('memorization_rate')))}"
            parts.append(f"{d}: {rate}" + (f" (95% CI {fmt_ci(ci, pct=True)})" if ci else ""))
        mem.text += " With the other distances: " + "; ".join(parts) + "."
    findings = [mem, att, fidelity_finding(cell.quality), utility_finding(cell.quality)]
    if cell.status not in ("done", "ok", "finished", "success"):
        badge, level = f"cell {cell.status}" + (f": {cell.error}" if cell.error else ""), "missing"
    elif mem.level == "alert" and att.level == "alert":
        badge, level = "Memorizes, and attacks tell members apart", "alert"
    elif mem.level == "alert":
        badge, level = "Memorizes beyond the holdout baseline", "alert"
    elif att.level == "alert":
        badge, level = "An attack tells members apart", "alert"
    elif mem.level == "ok" and att.level == "ok":
        badge, level = "No leakage found", "ok"
    elif mem.level == "ok" and att.level == "missing":
        badge, level = "No memorization beyond the baseline (no attacks run)", "ok"
    elif att.level == "ok" and mem.level == "missing":
        badge, level = "No attack beats chance (no replica audit)", "ok"
    elif mem.level == "missing" and att.level == "missing":
        badge, level = "Privacy not measured", "missing"
    else:
        badge, level = "Inconclusive", "info"
    return CellVerdict(level=level, badge=badge, findings=findings)
