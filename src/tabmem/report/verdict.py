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
* **Distance evidence** (with a holdout; ``tabmem audit``'s ``data_copying``, ``authenticity``,
  ``identical_matches``, ``nndr``): each figure is stated next to the holdout's. The data-copying
  test (Meehan et al. 2020) finds copying when its one-sided p-value is below its ``alpha``
  (synthetic rows closer to the training rows than real unseen rows are, Z < 0); a p-value of
  Z above ``1 - alpha`` says the generator underfits (rows farther than real ones), not that it leaks.
* **Privacy audit** (attack outputs with ``_privacy``): the best empirical ε lower bound over the
  attacks; next to a claimed ε (a DP generator) it is "consistent with the claim" or, above it,
  evidence that the DP training is broken.
* **Fidelity** (Shape, Trend) and **utility** (MLE against the same model trained on real rows)
  are stated, not judged: what is good enough depends on the use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tabmem.attacks.base import ATTACKS
from tabmem.gate import FAIL, PASS, Judgement, Policy, evaluate, figures_of, load_policy
from tabmem.gate.figures import Measured, excess_interval
from tabmem.gate.intervals import widen
from tabmem.memorization.summary import EXCESS_MEMORIZATION, NO_DISCRIMINATION
from tabmem.report.decision import measured_of
from tabmem.report.model import Attacks, Audit, Cell, Quality, Risk
from tabmem.report.readers import finite

__all__ = [
    "Finding",
    "CellVerdict",
    "cell_verdict",
    "strongest_attack",
    "attack_name",
    "fmt_pct",
    "fmt_ci",
    "evidence_finding",
    "evidence_lines",
    "privacy_finding",
    "midst_phrase",
    "discrimination_note",
]


def attack_name(name: str) -> str:
    """An attack's name in the report: its class's ``display_name`` (:mod:`tabmem.attacks.base`), else ``name``."""
    return ATTACKS[name].label() if name in ATTACKS else name


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
    """The verdict of one cell: the policy's badge (naming the rules that set it), one finding per topic,
    and the policy's judgements (:mod:`tabmem.gate`, the engine of ``tabmem check``)."""

    level: str
    badge: str
    findings: list[Finding] = field(default_factory=list)
    policy: str = "standard"
    judgements: list[Judgement] = field(default_factory=list)


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


def _why_no_interval(audit: Audit) -> str:
    """Why an audit has no excess interval: too few rows to resample (re-running cannot help), or none recorded."""
    sizes = {"synthetic": audit.get("n_synthetic"), "holdout": audit.get("n_holdout")}
    small = [f"{n} {name} row{'s' if n != 1 else ''}" for name, n in sizes.items() if isinstance(n, int) and n < 2]
    if small:
        return (
            f"no interval: {' and '.join(small)} cannot be resampled (a bootstrap interval needs at least 2 per table)."
        )
    return "no bootstrap interval recorded (re-run to get one)."


# ----------------------------------------------------------------------------- findings
def discrimination_note(audit: Audit | None) -> str | None:
    """The audit's warning that its distance cannot tell copies from real unseen rows on the data, or ``None``."""
    if audit is None or audit.get("distance_discriminates") is not False:
        return None
    for message in audit.get("warnings") or []:
        if NO_DISCRIMINATION in str(message):
            return str(message)
    return f"the {audit.get('distance', '?')} distance {NO_DISCRIMINATION} on this data"


def memorization_finding(audit: Audit | None) -> Finding:
    """The memorization verdict: replicas beyond the holdout's, with the caution that the distance cannot
    discriminate where the audit found so, and exact copies beyond the holdout's (which need no distance)."""
    finding = _memorization_finding(audit)
    note = discrimination_note(audit)
    if note is not None:
        text = f"{finding.text} Caution: {note[0].upper()}{note[1:]}."
        if finding.level == "alert":
            finding = Finding(finding.topic, finding.level, finding.headline, text)
        else:
            finding = Finding(finding.topic, "info", "distance cannot discriminate", text)
    copies = exact_copy_sentence(audit)
    if copies is None:
        return finding
    found, sentence = copies
    text = f"{finding.text} {sentence}"
    if found:
        headline = "exact copies" if finding.level != "alert" else f"{finding.headline}, with exact copies"
        return Finding(finding.topic, "alert", headline, text)
    return Finding(finding.topic, finding.level, finding.headline, text)


def exact_copy_sentence(audit: Audit | None) -> tuple[bool, str] | None:
    """``(found, sentence)``: exact copies of training rows against the holdout's, with Newcombe's interval of
    the excess (found: it lies above 0); None without a holdout."""
    if audit is None:
        return None
    summary = audit.summary if isinstance(audit, Audit) else audit  # a summary mapping is read the same way
    fig = next(
        (f for f in figures_of(Measured("", audits={"": summary})) if f.name == "memorization.exact_copy_excess"),
        None,
    )
    if fig is None or fig.value is None:
        return None
    rate, hold = finite(audit.get("exact_copy_rate")), finite(audit.get("holdout_exact_copy_rate"))
    base = f"Exact copies: {fmt_pct(rate)} of synthetic rows equal a training row, against {fmt_pct(hold)} of real unseen rows"
    if fig.ci is None:
        return False, base + "."
    ci_txt = f"95% CI {fmt_ci(fig.ci, pct=True)} points"
    if fig.ci[0] > 0:
        return (
            True,
            f"{base}: {fmt_points(fig.value)} beyond the baseline ({ci_txt}): the generator copies training rows.",
        )
    return False, f"{base} (excess {fmt_points(fig.value)}, {ci_txt})."


def _memorization_finding(audit: Audit | None) -> Finding:
    if audit is None:
        return Finding("Memorization", "missing", "not measured", "No replica audit in this cell.")
    rate = finite(audit.get("memorization_rate"))
    hold = finite(audit.get("holdout_memorization_rate"))
    excess = finite(audit.get(EXCESS_MEMORIZATION))
    ci = _ci(excess_interval(audit))
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
            f"{base}: excess {fmt_points(excess)}; " + _why_no_interval(audit),
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
    label = attack_name(name)
    n_attacks = sum(finite(x.get("auc")) is not None for x in attacks.results.values())
    which = f"the strongest of {n_attacks} attacks" if n_attacks > 1 else "the only attack run"
    corrected = ci
    if ci is not None and auc is not None and n_attacks > 1:  # choosing the strongest: Bonferroni over the attacks
        corrected = widen(auc, ci, recorded=0.95, wanted=1 - 0.05 / n_attacks)
    leaks = corrected is not None and corrected[0] > 0.5
    tprs = "; ".join(tpr_phrase(r, f, leaks=leaks) for f in ("0.1", "0.01"))
    if r.get("midst_tpr_at_fpr"):
        tprs += "; " + ", ".join(midst_phrase(r, f) for f in ("0.1", "0.01"))
        eps = finite((r.get("epsilon_lower_bound") or {}).get("epsilon"))
        if eps is not None:
            tprs += f"; ε lower bound {eps:.2f}"
    auc_txt = f"AUC {auc:.3f}" + (f" (95% CI {fmt_ci(ci)})" if ci else " (no interval recorded)")
    if ci is not None and corrected is not None and n_attacks > 1:
        auc_txt += f", {fmt_ci(corrected)} corrected for choosing the best of {n_attacks}"
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
    holds = "which holds 0.5" if n_attacks == 1 or ci[0] <= 0.5 else "which holds 0.5 once corrected"
    return Finding(
        "Membership inference",
        "ok",
        "chance level",
        f"{verdict.capitalize()}: {label}, {which}, reaches {auc_txt}, {holds}; {tprs}.",
    )


def _copying_phrase(copying: dict[str, Any]) -> tuple[str, str]:
    """(level, sentence) of the data-copying test: alert (copying), info (underfitting) or ok."""
    z, p = finite(copying.get("z")), finite(copying.get("p_value"))
    alpha = finite(copying.get("alpha")) or 0.05
    flagged = copying.get("cells_flagged") or []
    used, n_cells = copying.get("n_cells_used"), copying.get("n_cells")
    of = f" of {used} tested" if isinstance(used, int) else ""
    untested = ""
    if isinstance(n_cells, int) and isinstance(used, int) and used != n_cells:
        untested = f"; {n_cells - used} of {n_cells} k-means cells hold too few synthetic rows to test"
    if z is None or p is None:
        return "info", "The data-copying test could not be computed (too few rows in the cells)."
    nums = f"Z = {z:.2f}, p = {p:.2g}; {len(flagged)}{of} cell{'' if used == 1 else 's'} flagged{untested}"
    if p < alpha:
        return "info", (
            f"Data-copying test: synthetic rows lie closer to their training rows than real unseen rows do "
            f"({nums}; p < {alpha:g}). The test cannot tell copying from rows concentrated on a dense subgroup "
            "(real unseen rows from one subgroup trip it too), so it sets no verdict: the replica and exact-copy "
            "excesses do."
        )
    if p > 1 - alpha:
        return "info", (
            f"Data-copying test: synthetic rows lie farther from the training rows than real unseen rows do "
            f"({nums}): the generator underfits, no sign of copying."
        )
    return "ok", f"Data-copying test: no difference from real unseen rows ({nums})."


def evidence_lines(audit: Audit | None) -> list[tuple[str, str]]:
    """``(level, sentence)`` per piece of distance evidence in the audit's summary, each next to its holdout figure.

    Empty when the summary holds none (``tabmem train`` runs and audits written by an older tabmem).
    """
    if audit is None:
        return []
    lines: list[tuple[str, str]] = []
    copying = audit.get("data_copying")
    if isinstance(copying, dict):
        lines.append(_copying_phrase(copying))
    auth = audit.get("authenticity") or {}
    syn, hold = finite(auth.get("synthetic_closer_share")), finite(auth.get("holdout_closer_share"))
    if syn is not None:
        versus = f", against {fmt_pct(hold)} of real unseen rows" if hold is not None else " (no holdout to compare)"
        lines.append(
            (
                "neutral",
                f"Authenticity (Alaa et al. 2022): {fmt_pct(syn)} of synthetic rows lie closer to their nearest training "
                f"row than that row lies to its own nearest neighbour{versus}.",
            )
        )
    ident = audit.get("identical_matches") or {}
    syn, hold = finite(ident.get("synthetic_share")), finite(ident.get("holdout_share"))
    if syn is not None:
        versus = f", against {fmt_pct(hold, 2)} of real unseen rows" if hold is not None else ""
        lines.append(
            ("neutral", f"Identical matches: {fmt_pct(syn, 2)} of synthetic rows equal a training row{versus}.")
        )
    nndr = audit.get("nndr") or {}
    sq = ((nndr.get("synthetic") or {}).get("quantiles")) or {}
    hq = ((nndr.get("holdout") or {}).get("quantiles")) or {}
    if finite(sq.get("0.5")) is not None:
        parts = []
        for key, word in (("0.05", "5% quantile"), ("0.5", "median")):
            v = finite(sq.get(key))
            if v is not None:
                h = finite(hq.get(key))
                parts.append(f"{word} {v:.3f}" + (f" (holdout {h:.3f})" if h is not None else ""))
        lines.append(
            (
                "neutral",
                "Nearest-neighbour distance ratio d1/d2 (0: a copy): "
                + ", ".join(parts)
                + ("; lower than the holdout's means closer to single training rows." if hq else "."),
            )
        )
    distance = auth.get("distance") or (audit.get("nndr") or {}).get("distance") or audit.get("distance")
    if lines and distance == "fang2024":
        lines.append(
            (
                "info",
                "fang2024 min-max scales the numerical distances per query row, so the nearest training row is often "
                "at distance 0 without being a copy: these figures separate less on it than on gower or l2 (the holdout "
                "figures show how much).",
            )
        )
    return lines


def evidence_finding(audit: Audit | None) -> Finding:
    """The distance evidence as one line: stated next to the holdout's, never an alert (see :func:`_copying_phrase`)."""
    lines = evidence_lines(audit)
    if not lines:
        text = (
            "Not computed for this audit: the data-copying test, authenticity, identical matches and NNDR are written "
            "by tabmem audit and a study's audit step, with a holdout (a tabmem train run's own audit does not write "
            "them: audit its synthetic.csv)."
        )
        return Finding("Distance evidence", "missing", "not measured", text)
    tested = isinstance(audit.get("data_copying"), dict)  # type: ignore[union-attr]
    level = lines[0][0] if tested else "info"  # the copying test comes first: the only one with a verdict
    z = finite((audit.get("data_copying") or {}).get("z")) if tested else None  # type: ignore[union-attr]
    underfits = "underfits" if z is not None else "test not computed"
    closer = z is not None and z < 0
    headline = {
        "ok": "no copying found",
        "info": ("closer than real rows" if closer else underfits) if tested else "no test",
    }[level]
    text = lines[0][1] if tested else ""
    compact = []
    for key, label, part in (
        ("authenticity", "closer than their training row's neighbour", "closer_share"),
        ("identical_matches", "identical to a training row", "share"),
    ):
        d = audit.get(key) or {}  # type: ignore[union-attr]
        syn, hold = finite(d.get(f"synthetic_{part}")), finite(d.get(f"holdout_{part}"))
        if syn is not None:
            compact.append(f"{label} {fmt_pct(syn)}" + (f" (holdout {fmt_pct(hold)})" if hold is not None else ""))
    q = (audit.get("nndr") or {}).get("synthetic", {}).get("quantiles", {})  # type: ignore[union-attr]
    h = (audit.get("nndr") or {}).get("holdout", {}).get("quantiles", {})  # type: ignore[union-attr]
    if finite(q.get("0.5")) is not None:
        hold = finite(h.get("0.5"))
        compact.append(f"median NNDR {float(q['0.5']):.3f}" + (f" (holdout {hold:.3f})" if hold is not None else ""))
    if compact:
        text += (" " if text else "") + "Synthetic rows " + "; ".join(compact) + "."
    return Finding("Distance evidence", level, headline, text)


def midst_phrase(r: dict[str, Any], fpr: str) -> str:
    """MIDST's TPR at FPR <= ``fpr`` with its exact (Clopper-Pearson) interval, or n/a."""
    m = (r.get("midst_tpr_at_fpr") or {}).get(fpr) or {}
    tpr = finite(m.get("tpr"))
    if tpr is None:
        return f"MIDST TPR@{fpr}: n/a"
    ci = _ci(m.get("tpr_ci"))
    return f"MIDST TPR@{fpr} {tpr:.3f}" + (f" (exact CI {fmt_ci(ci)})" if ci else "")


def privacy_finding(attacks: Attacks | None) -> Finding | None:
    """The best empirical ε lower bound over the attacks, next to the claimed ε; None without one."""
    p = attacks.privacy if attacks is not None else {}
    eps = finite(p.get("epsilon_lower_bound"))
    if not p or eps is None or p.get("attack") is None:
        return None
    name = attack_name(str(p["attack"]))
    delta, conf = finite(p.get("delta")), finite(p.get("confidence"))
    text = (
        f"Empirical ε lower bound {eps:.2f}"
        + (f" at δ = {delta:.2g}" if delta is not None else "")
        + f" ({name}, the best of the attacks"
        + (f"; it holds with probability {conf:.2f} over all of them" if conf is not None else "")
        + ")"
    )
    claimed = finite(p.get("claimed_epsilon"))
    if claimed is None:
        level, headline = "info", "no claim to check"
        if eps > 0:
            text += f"; no ε was claimed for this generator, but no (ε, δ)-DP guarantee at this δ with ε below {eps:.2f} can hold for it."
        else:
            text += "; no ε was claimed, and these attacks certify no leak (which is not a proof of privacy)."
    elif bool(p.get("exceeds_claim", eps > claimed)):
        level, headline = "alert", "exceeds the claim"
        text += f", above the claimed ε = {claimed:g}: exceeds the claim, so the DP training does not deliver its guarantee."
    else:
        level, headline = "ok", "consistent with the claim"
        text += f", at most the claimed ε = {claimed:g}: consistent with the claim."
    return Finding("Privacy audit", level, headline, text)


RISK_LABELS = {
    "risk.singling_out_univariate": "singling out (one column)",
    "risk.singling_out_multivariate": "singling out",
    "risk.linkability": "linkability",
    "risk.inference": "inference",
}


def risk_finding(risk: Risk | None) -> Finding | None:
    """The WP29 risks of ``tabmem risk`` in one line: each risk with its interval; an alert when one lies above 0
    with its interval widened for the number of risks read (choosing the largest is corrected for)."""
    if risk is None:
        return None
    figs = [f for f in figures_of(Measured("", risk=risk.summary)) if f.value is not None and f.ci is not None]
    if not figs:
        return Finding("Anonymisation risks", "missing", "not measured", "The risk summary holds no estimate.")
    k = len(figs)
    parts, found = [], []
    for f in figs:
        label = RISK_LABELS.get(f.name, f.name) + (f" of {f.component}" if f.component else "")
        parts.append(f"{label} {f.value:.3f} (95% CI {fmt_ci(f.ci)})")
        lo, _ = widen(f.value, f.ci, recorded=f.confidence, wanted=1 - (1 - f.confidence) / k)
        if lo > 0:
            found.append(label)
    text = (
        "WP29 risks (anonymeter's definitions: success on training rows beyond the control rows', 0 = no more "
        "than about anyone): " + "; ".join(parts) + "."
    )
    if found:
        return Finding(
            "Anonymisation risks",
            "alert",
            "above zero",
            f"{text} Above zero, corrected for {k} risks: {', '.join(found)}.",
        )
    return Finding("Anonymisation risks", "ok", "none above zero", text)


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
        extra = (
            f"; c2st {c2st:.3f} (classifier two-sample test, a detection score: 1 = a classifier cannot tell "
            "synthetic rows from real ones" + (f"; its AUC is {auc:.3f})" if auc is not None else ")")
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
            f". dcr_share {dcr:.3f}: the fraction of synthetic rows closer to a training row than to a holdout row "
            f"(goal: closest to the ideal {ideal:.3g}, what a table that copies nothing gives)"
        )
    return Finding("Utility", "neutral", "", text + ".")


def cell_verdict(cell: Cell, policy: Policy | None = None) -> CellVerdict:
    """The badge, the findings and the policy's judgements of one cell.

    The badge is the policy's verdict (``standard`` unless given), from the engine of ``tabmem check``
    on the same summaries: it fails when a rule fails, is "not shown" when a rule is unresolved, and
    names the rules that set it. The findings say what each number means; they never set the badge.
    """
    policy = policy if policy is not None else load_policy()
    mem, att = memorization_finding(cell.audit), attack_finding(cell.attacks)
    others = [(d, a) for d, a in cell.audits.items() if a is not cell.audit]
    if others:
        parts = []
        for d, a in others:
            ex = finite(a.get(EXCESS_MEMORIZATION))
            ci = _ci(excess_interval(a))
            rate = f"{fmt_points(ex)}" if ex is not None else f"rate {fmt_pct(finite(a.get('memorization_rate')))}"
            parts.append(f"{d}: {rate}" + (f" (95% CI {fmt_ci(ci, pct=True)})" if ci else ""))
        mem.text += " With the other distances: " + "; ".join(parts) + "."
    findings = [mem, att, fidelity_finding(cell.quality), utility_finding(cell.quality)]
    evidence = evidence_finding(cell.audit) if cell.audit is not None else None
    privacy = privacy_finding(cell.attacks)
    risks = risk_finding(cell.risk)
    findings += [f for f in (evidence, privacy, risks) if f is not None]
    judgements = list(evaluate(policy, [measured_of(cell)]).judgements)
    level, badge = policy_badge(policy.name, judgements)
    if cell.status not in ("done", "ok", "finished", "success"):
        badge, level = f"cell {cell.status}" + (f": {cell.error}" if cell.error else ""), "missing"
    return CellVerdict(level=level, badge=badge, findings=findings, policy=policy.name, judgements=judgements)


def policy_badge(policy: str, judgements: list[Judgement]) -> tuple[str, str]:
    """``(level, badge)`` of a policy's judgements: alert (a rule fails), info (a rule unresolved or a required
    figure missing), ok (every judged rule passes), missing (no rule could be judged)."""
    failed = [j.rule.id for j in judgements if j.status == FAIL or (j.failed and j.status != "unresolved")]
    unresolved = [j.rule.id for j in judgements if j.status == "unresolved"]
    passed = [j.rule.id for j in judgements if j.status == PASS]
    if failed:
        extra = f"; {', '.join(unresolved)} unresolved" if unresolved else ""
        return "alert", f"Fails the {policy} policy: {', '.join(failed)}{extra}"
    if unresolved:
        return "info", f"Not shown within the {policy} policy: {', '.join(unresolved)} unresolved"
    if passed:
        n = len(passed)
        return "ok", f"Passes the {policy} policy ({n} rule{'s' * (n != 1)} judged: {', '.join(passed)})"
    return "missing", "Privacy not measured"
