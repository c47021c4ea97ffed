"""The report's tables: every number behind the plots, formatted for the page.

Each function takes a part of the report model and returns :class:`Table` objects (column names
and rows of formatted cells); a cell is a string, or a (value, interval) pair shown on two lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmem.gate.figures import excess_interval
from tabmem.memorization.summary import EXCESS_MEMORIZATION
from tabmem.report.model import Audit, Cell, DynamicCutRun, Training
from tabmem.report.plots import distance_histogram
from tabmem.report.readers import DYNAMICCUT_THRESHOLD, finite
from tabmem.report.verdict import attack_name, fmt_ci, fmt_pct, strongest_attack

__all__ = [
    "Table",
    "audit_tables",
    "attack_tables",
    "quality_tables",
    "dynamics_findings",
    "dynamics_sentences",
    "frame_table",
    "overview_table",
    "epochs_table",
    "evidence_tables",
    "privacy_table",
    "dynamiccut_table",
    "fmt_mem_auc",
    "difference_note",
    "comparison_notes",
    "quality_goal",
    "ONE_SEED",
]

FINDING_TEXT = {
    "top_memorized_earlier": ("first_memorization_epoch", "were memorized earlier", "median first epoch"),
    "top_stronger_early_mem_auc": (
        "early_mem_auc",
        "were memorized more strongly early on",
        "mean early record Mem-AUC share",
    ),
    "top_more_forgetting": (
        "n_forgetting_events",
        "were forgotten and re-memorized more often",
        "mean forgetting events",
    ),
}


@dataclass
class Table:
    """A table for the template: column names and rows of already formatted cells."""

    columns: list[str]
    rows: list[list[str | tuple[str, str]]]
    caption: str = ""
    numeric: list[bool] = field(default_factory=list)


#: the report's names of the per-record quantities of ``dynamics.json`` and ``trajectories.csv``: a record's
#: Mem-AUC_e(x_r) is its share of the table's Mem-AUC (the shares sum to it), not the table's Mem-AUC
RECORD_MEASURES = {
    "first_memorization_epoch": "first memorization epoch",
    "early_mem_auc": "early record Mem-AUC share (%)",
    "mean_mem_auc": "mean record Mem-AUC share (%)",
    "peak_mem_auc": "peak record Mem-AUC share (%)",
    "n_forgetting_events": "forgetting events",
    "cumulative_memorized_epochs": "memorized epochs",
}
#: what a difference without an interval, from one seed, is
ONE_SEED = "one seed: no interval; not an effect until repeated"


# ----------------------------------------------------------------------------- formatting
def fmt_mem_auc(v: Any) -> str:
    """Mem-AUC (exact or trapz10, of a table) and a record's Mem-AUC share: percent, like the rates it sums."""
    f = finite(v)
    if f is None:
        return "-"
    return f"{100 * f:.2f}%" if f == 0 or abs(f) >= 1e-3 else f"{100 * f:.2g}%"


def _pct2(v: Any) -> str:
    f = finite(v)
    return "-" if f is None else fmt_pct(f, 2)


def _ci_pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = finite(value[0]), finite(value[1])
        if lo is not None and hi is not None:
            return (lo, hi)
    return None


def difference_note(before: Any, after: Any, before_ci: Any = None, after_ci: Any = None, *, unit: str = "") -> str:
    """A difference between two numbers in words: whether their intervals overlap, or that it rests on one seed.

    ``unit="points"`` shows percentage points (rates); otherwise the difference in the numbers' own scale.
    """
    a, b = finite(before), finite(after)
    if a is None or b is None:
        return "-"
    d = b - a
    diff = f"{100 * d:+.2f} points" if unit == "points" else f"{d:+.3g}"
    lo_hi = _ci_pair(before_ci), _ci_pair(after_ci)
    if lo_hi[0] is not None and lo_hi[1] is not None:
        (l1, h1), (l2, h2) = lo_hi
        if l1 <= h2 and l2 <= h1:
            return f"{diff}; the intervals overlap: no difference shown"
        return f"{diff}; the intervals do not overlap"
    return f"{diff}; {ONE_SEED}"


def _num(v: Any, digits: int = 4) -> str:
    f = finite(v)
    if f is None:
        return "-" if v is None else str(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return f"{int(v):,}"
    if f != 0 and (abs(f) < 1e-3 or abs(f) >= 1e6):
        return f"{f:.3g}"
    return f"{f:.{digits}g}"


def _ci_cell(ci: Any, digits: int = 3) -> str:
    return fmt_ci(ci, digits=digits)


def frame_table(frame: pd.DataFrame, caption: str = "") -> Table:
    rows = [[_num(v) for v in row] for row in frame.itertuples(index=False)]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    return Table([str(c) for c in frame.columns], rows, caption, numeric)


def _effect_words(delta: float) -> str:
    """Cliff's delta magnitude (Romano et al. 2006: 0.147 / 0.33 / 0.474)."""
    a = abs(delta)
    return "negligible" if a < 0.147 else "small" if a < 0.33 else "medium" if a < 0.474 else "large"


# ----------------------------------------------------------------------------- per part
def audit_tables(cell: Cell) -> list[Table]:
    tables = []
    for a in cell.audits.values():
        tables += _oneaudit_tables(a, len(cell.audits) > 1)
    return tables


def _discrimination_row(summary: Any) -> list[list[str]]:
    """A row under the memorization rate when the distance cannot discriminate on the data (the verdict says why)."""
    if summary.get("distance_discriminates") is not False:
        return []
    return [["distance discriminates on this data", "no: the rate says nothing about copying", ""]]


def _oneaudit_tables(a: Audit, name_distance: bool) -> list[Table]:
    s = a.summary
    rows = [
        ["training rows", _num(s.get("n_train")), ""],
        ["synthetic rows", _num(s.get("n_synthetic")), ""],
        ["holdout rows", _num(s.get("n_holdout")), ""],
        ["distance / threshold", f"{s.get('distance')} / {_num(s.get('threshold'), 3)}", ""],
        ["memorization rate", fmt_pct(finite(s.get("memorization_rate")), 2), _ci_pct(s.get("memorization_rate_ci"))],
        *_discrimination_row(s),
        [
            "holdout memorization rate",
            fmt_pct(finite(s.get("holdout_memorization_rate")), 2),
            _ci_pct(s.get("holdout_memorization_rate_ci")),
        ],
        [
            "excess memorization (points)",
            _points(s.get(EXCESS_MEMORIZATION)),
            _ci_pct(excess_interval(s), points=True),
        ],
        ["Mem-AUC (exact)", fmt_mem_auc(s.get("mem_auc")), ""],
        ["Mem-AUC (papers' 10-point trapezoid)", fmt_mem_auc(s.get("mem_auc_trapz10")), ""],
        ["holdout Mem-AUC", fmt_mem_auc(s.get("holdout_mem_auc")), ""],
        ["replicas", _num(s.get("n_replicas")), ""],
    ]
    tail = s.get("heavy_tail") or {}
    rows += [
        ["training records with >= 1 replica", _num(tail.get("n_records_with_replicas")), ""],
        ["share of replicas on the top 1% of records", fmt_pct(finite(tail.get("top_1pct_share"))), ""],
        ["share of replicas on the top 10% of records", fmt_pct(finite(tail.get("top_10pct_share"))), ""],
        ["Gini of the replica counts", _num(tail.get("gini"), 3), ""],
    ]
    conf = s.get("confidence")
    ci_head = f"{round(100 * conf)}% CI" if finite(conf) else "CI"
    head = f"replica audit ({s.get('distance')})" if name_distance else "replica audit"
    caption = (
        "Intervals of the rates: percentile bootstrap. The excess: that bootstrap widened to Newcombe's score "
        "interval where wider (a bootstrap of zero counts collapses to 0 to 0), the interval tabmem check judges."
    )
    tables = [Table([head, "value", ci_head], rows, caption, [False, True, True])]
    if a.record_counts is not None and a.record_counts.sum() > 0:
        counts = a.record_counts
        order = np.lexsort((np.arange(counts.size), -counts))[:10]
        order = order[counts[order] > 0]
        total = counts.sum()
        top = [[f"{int(i):,}", f"{int(counts[i]):,}", fmt_pct(counts[i] / total)] for i in order]
        tables.append(
            Table(
                ["training row (position)", "replicas", "share of all replicas"],
                top,
                "Most-replicated training records, by position in the training table (values are not shown).",
                [True, True, True],
            )
        )
    return tables


def _ci_pct(ci: Any, points: bool = False) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or finite(ci[0]) is None or finite(ci[1]) is None:
        return "-"
    lo, hi = 100 * float(ci[0]), 100 * float(ci[1])
    return f"{lo:+.2f} to {hi:+.2f}" if points else f"{lo:.2f}% to {hi:.2f}%"


def _points(v: Any) -> str:
    f = finite(v)
    return "-" if f is None else f"{100 * f:+.2f}"


def evidence_tables(audit: Audit | None) -> list[Table]:
    """The distance evidence of an audit, each figure next to the holdout's (none when the summary has none)."""
    if audit is None:
        return []
    s = audit.summary
    auth, ident, nndr = s.get("authenticity") or {}, s.get("identical_matches") or {}, s.get("nndr") or {}
    copying = s.get("data_copying")
    if not (auth or ident or nndr or isinstance(copying, dict)):
        return []
    rows: list[list[str | tuple[str, str]]] = []
    if isinstance(copying, dict):
        flagged = copying.get("cells_flagged") or []
        rows += [
            ["data-copying test: Z (Z << 0: copying)", _num(copying.get("z"), 3), "0 (null: same as holdout)"],
            [
                "data-copying test: p-value (one-sided)",
                _num(copying.get("p_value"), 3),
                f"alpha {copying.get('alpha')}",
            ],
            [
                "data-copying test: cells flagged",
                f"{len(flagged)} of {copying.get('n_cells_used')} used",
                f"{copying.get('n_cells')} k-means cells, distance {copying.get('distance')}",
            ],
        ]
    if auth:
        rows.append(
            [
                "closer to their training row than its neighbour (authenticity)",
                fmt_pct(finite(auth.get("synthetic_closer_share")), 2),
                fmt_pct(finite(auth.get("holdout_closer_share")), 2),
            ]
        )
    if ident:
        rows.append(
            [
                "identical to a training row",
                fmt_pct(finite(ident.get("synthetic_share")), 2),
                fmt_pct(finite(ident.get("holdout_share")), 2),
            ]
        )
    syn, hold = nndr.get("synthetic") or {}, nndr.get("holdout") or {}
    for q, v in (syn.get("quantiles") or {}).items():
        rows.append([f"NNDR d1/d2, {float(q):g} quantile", _num(v, 3), _num((hold.get("quantiles") or {}).get(q), 3)])
    if syn:
        rows.append(["NNDR d1/d2, mean", _num(syn.get("mean"), 3), _num(hold.get("mean"), 3)])
    dist = auth.get("distance") or nndr.get("distance") or s.get("distance")
    tables = [
        Table(
            ["distance evidence", "synthetic", "holdout (real rows never trained on)"],
            rows,
            f"Each figure next to the same figure for real holdout rows (distance {dist}); exact neighbour search.",
            [False, True, True],
        )
    ]
    per_cell = copying.get("per_cell") if isinstance(copying, dict) else None
    if per_cell:
        tables.append(
            Table(
                ["k-means cell", "training rows", "holdout rows", "synthetic rows", "Z", "used", "flagged"],
                [
                    [
                        str(c.get("cell")),
                        _num(c.get("n_train")),
                        _num(c.get("n_holdout")),
                        _num(c.get("n_synthetic")),
                        _num(c.get("z"), 3),
                        "yes" if c.get("used") else "no",
                        "yes" if c.get("flagged") else "no",
                    ]
                    for c in per_cell
                ],
                "Data-copying test per cell (Meehan et al. 2020): Z of the synthetic rows' distances to the training rows "
                "against the holdout rows'; a cell is used when it holds enough synthetic rows.",
                [True, True, True, True, True, False, False],
            )
        )
    return tables


def privacy_table(cell: Cell) -> Table | None:
    """Per attack: MIDST TPR at FPR 0.1 / 0.01 with exact intervals, the smallest resolvable FPR, the ε lower bound."""
    att = cell.attacks
    if att is None or not any(r.get("midst_tpr_at_fpr") for r in att.results.values()):
        return None
    rows = []
    for name, r in sorted(att.results.items(), key=lambda kv: -(finite(kv[1].get("auc")) or 0)):
        midst = r.get("midst_tpr_at_fpr") or {}
        row: list[str | tuple[str, str]] = [attack_name(name)]
        for f in ("0.1", "0.01"):
            m = midst.get(f) or {}
            row.append((_num(m.get("tpr"), 3), _ci_cell(m.get("tpr_ci")) if m.get("tpr_ci") else ""))
        eps = r.get("epsilon_lower_bound") or {}
        row += [_num(r.get("min_resolved_fpr"), 3), _num(eps.get("epsilon"), 3)]
        rows.append(row)
    p = att.privacy
    cap = (
        "MIDST TPR at FPR <= f: the largest TPR of a threshold whose measured FPR is at most f, with its exact "
        "(Clopper-Pearson) 95% interval. ε lower bound: from Clopper-Pearson bounds on TPR and FPR at a threshold "
        "chosen on half of the targets and evaluated on the other half"
    )
    delta = finite(p.get("delta")) or finite(
        (next(iter(att.results.values()), {}).get("epsilon_lower_bound") or {}).get("delta")
    )
    cap += f" (δ = {delta:.2g})." if delta is not None else "."
    best = finite(p.get("epsilon_lower_bound"))
    if best is not None and p.get("attack") is not None:
        cap += (
            f" Best over the attacks, each at confidence {finite(p.get('per_attack_confidence')) or 0:.4g} "
            f"(Bonferroni): ε >= {best:.3f} ({attack_name(p['attack'])})"
        )
        claimed = finite(p.get("claimed_epsilon"))
        if claimed is not None:
            verdict = "exceeds the claim" if p.get("exceeds_claim") else "consistent with the claim"
            cap += f", claimed ε = {claimed:g}: {verdict}"
        cap += "."
    return Table(
        ["attack", "MIDST TPR@0.1", "MIDST TPR@0.01", "smallest resolvable FPR", "ε lower bound"],
        rows,
        cap,
        [False, True, True, True, True],
    )


def dynamics_sentences(dyn: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Top vs Non-top findings of a ``dynamics.json``, in words with their effect sizes: ``(held, not_held)``.

    A finding holds when the tracker's two-sided Mann-Whitney test gives p < 0.05 in the stated
    direction (``findings[key]["holds"]``); the effect size is Cliff's delta with its magnitude
    (Romano et al. 2006). Findings absent from the file are left out of both lists.
    """
    metrics, findings = dyn.get("metrics") or {}, dyn.get("findings") or {}
    q = finite(dyn.get("q"))
    top = f"Top {q:.0%}" if q is not None else "Top"
    held, not_held = [], []
    for key, (metric, phrase, stat) in FINDING_TEXT.items():
        f, m = findings.get(key), metrics.get(metric) or {}
        if not isinstance(f, dict) or "holds" not in f:
            continue
        use_median = stat.startswith("median")
        a = m.get("top_median" if use_median else "top_mean")
        b = m.get("nontop_median" if use_median else "nontop_mean")
        d, p = finite(f.get("cliffs_delta")), finite(f.get("p_value"))
        effect = "no effect size" if d is None else f"Cliff's delta {d:+.2f}, {_effect_words(d)}"
        test = "" if p is None else f"; Mann-Whitney p = {p:.2g}"
        shown = fmt_mem_auc if "mem_auc" in metric else (lambda v: _num(v, 3))
        numbers = f"{stat} {shown(a)} vs {shown(b)} for the rest ({effect}{test})"
        if f.get("holds"):
            held.append(f"The {top} records (most replicated at the end) {phrase}: {numbers}.")
        else:
            not_held.append(f"Did not hold: that the {top} records {phrase}; {numbers}.")
    return held, not_held


def dynamics_findings(cell: Cell) -> tuple[list[str], Table | None]:
    """Plain-words Top vs Non-top findings that hold (with effect sizes) and the table of all comparisons."""
    t = cell.training
    dyn = (t.dynamics if t is not None else None) or {}
    if not dyn:
        return [], None
    metrics, findings = dyn.get("metrics") or {}, dyn.get("findings") or {}
    q = dyn.get("q", 0.1)
    held, _ = dynamics_sentences(dyn)
    rows = []
    for metric, m in metrics.items():
        finding = next((k for k, v in FINDING_TEXT.items() if v[0] == metric), None)
        holds = (findings.get(finding) or {}).get("holds") if finding else None
        shown = fmt_mem_auc if "mem_auc" in metric else _num
        rows.append(
            [
                RECORD_MEASURES.get(metric, metric),
                shown(m.get("top_mean")),
                shown(m.get("nontop_mean")),
                shown(m.get("top_median")),
                shown(m.get("nontop_median")),
                _num(m.get("cliffs_delta"), 3),
                _num(m.get("p_value"), 3),
                "-" if holds is None else ("yes" if holds else "no"),
            ]
        )
    table = Table(
        ["measure", "Top mean", "Non-top mean", "Top median", "Non-top median", "Cliff's delta", "p", "finding holds"],
        rows,
        f"Top {q:.0%} ({_num(dyn.get('n_top'))} records) vs Non-top ({_num(dyn.get('n_nontop'))}); two-sided "
        "Mann-Whitney U; a finding holds when p < 0.05 in the stated direction. A record's Mem-AUC share is its "
        "part of the table's Mem-AUC (the shares of all records sum to it).",
        [False, True, True, True, True, True, True, False],
    )
    return held, table


def attack_tables(cell: Cell) -> list[Table]:
    att = cell.attacks
    if att is None:
        return []
    fprs = ("0", "0.001", "0.01", "0.1")
    rows = []
    for name, r in sorted(att.results.items(), key=lambda kv: -(finite(kv[1].get("auc")) or 0)):
        tpr, ci = r.get("tpr_at_fpr") or {}, r.get("tpr_at_fpr_ci") or {}
        row = [attack_name(name), _num(r.get("auc"), 3), _ci_cell(r.get("auc_ci"))]
        n_non = r.get("n_non_members")
        for f in fprs:
            if isinstance(n_non, int) and 0 < float(f) < 1 / n_non:
                row.append((_num(tpr.get(f), 3), "not resolved"))
            else:
                row.append((_num(tpr.get(f), 3), _ci_cell(ci.get(f)) if ci.get(f) else ""))
        row += [_num(r.get("balanced_accuracy"), 3), _num(r.get("n_members")), _num(r.get("n_non_members"))]
        rows.append(row)
    meta = att.meta
    n_non = meta.get("n_non_members")
    cap = "TPR at FPR f: the paper's interpolation on the ROC curve, with its 95% bootstrap interval."
    if isinstance(n_non, int) and n_non > 0:
        cap += f" {n_non:,} non-members measure FPRs down to 1/{n_non:,} = {1 / n_non:.2g}; below that a TPR is not resolved."
    if meta.get("skipped"):
        cap += " Skipped: " + "; ".join(f"{k} ({v})" for k, v in meta["skipped"].items()) + "."
    tables = [
        Table(
            ["attack", "AUC", "AUC 95% CI", *[f"TPR@{f}" for f in fprs], "balanced acc.", "members", "non-members"],
            rows,
            cap,
            [False] + [True] * 9,
        )
    ]
    if att.roc is not None and len(att.roc):
        grid = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
        rows = []
        for name, curve in att.roc.groupby("attack", sort=False):
            fpr, tpr = curve["fpr"].to_numpy(float), curve["tpr"].to_numpy(float)
            rows.append([attack_name(name), *[f"{np.interp(g, fpr, tpr):.3f}" for g in grid]])
        tables.append(
            Table(
                ["attack", *[f"FPR {g:g}" for g in grid]],
                rows,
                "The plotted ROC curves: TPR at these FPRs (the full curves are in roc.csv).",
                [False] + [True] * len(grid),
            )
        )
    for name, d in att.distances.items():
        rows = []
        for label, mask in (("members", d["is_member"]), ("non-members", ~d["is_member"])):
            v = d.loc[mask, "distance"].to_numpy(float)
            if v.size:
                q = np.quantile(v, [0.0, 0.1, 0.25, 0.5, 0.75, 0.9])
                rows.append([label, f"{v.size:,}", *[_num(x) for x in q], _num(v.mean())])
        tables.append(
            Table(
                ["group", "n", "min", "10%", "25%", "median", "75%", "90%", "mean"],
                rows,
                f"{attack_name(name)}: distance to the closest synthetic row (minus the attack's score).",
                [False] + [True] * 8,
            )
        )
        hist = distance_histogram(d, integer=name == "levatt")
        tables.append(
            Table(
                ["distance from", "to", "members (%)", "non-members (%)"],
                [
                    [_num(lo), _num(hi), f"{m:.2f}", f"{n:.2f}"]
                    for lo, hi, m, n in hist.itertuples(index=False, name=None)
                ],
                f"The bins of the {attack_name(name)} histogram (the last bin holds the top 0.5% of distances).",
                [True] * 4,
            )
        )
    return tables


def quality_tables(cell: Cell) -> list[Table]:
    q = cell.quality
    if q is None:
        return []
    s = q.summary
    details, skipped = s.get("details") or {}, s.get("skipped") or {}
    names = ("shape", "trend", "mle", "mmd", "wasserstein", "alpha_precision", "beta_recall", "c2st", "dcr_share")
    rows = []
    for key in names:
        if key not in s:
            continue
        d = details.get(key) or {}
        note = skipped.get(key, "")
        if key == "mle" and d.get("real") and d.get("score"):
            note = f"{d['score']}; trained on real rows: {_num(d['real'].get(d['score']))}"
        elif key == "dcr_share" and d:
            note = "share of synthetic rows closer to a training row than to a holdout row"
        elif key == "c2st" and not note:
            auc = finite(d.get("mean_auc"))
            note = "classifier two-sample test (detection): 1 = a classifier cannot tell synthetic rows from real ones"
            note += f"; its AUC {auc:.3f}" if auc is not None else ""
        elif key == "trend" and d:
            note = f"{d.get('n_pairs_scored')}/{d.get('n_pairs_total')} pairs scored"
        rows.append([key, _num(s.get(key)), quality_goal(s, key), note])
    tables = [Table(["metric", "value", "goal", "note"], rows, "", [False, True, False, False])]
    if q.shape_breakdown is not None and len(q.shape_breakdown):
        tables.append(frame_table(q.shape_breakdown, "Shape per column (the bars of the column-shapes plot)."))
    return tables


def quality_goal(summary: dict[str, Any], key: str) -> str:
    """A quality metric's goal as the report shows it: the summary's ``goals``, except for a metric with an
    ``ideal`` in its details (``dcr_share``), whose goal is to come closest to that ideal."""
    ideal = finite(((summary.get("details") or {}).get(key) or {}).get("ideal"))
    if ideal is not None:
        return f"closest to the ideal {ideal:.3g}"
    return str((summary.get("goals") or {}).get(key, ""))


def overview_table(cells: list[Cell], labels: list[str]) -> Table:
    """One row per cell: the verdict's numbers side by side (all rates in %, AUCs as fractions)."""
    rows = []
    for c, lab in zip(cells, labels):
        a, q = c.audit, c.quality
        best = strongest_attack(c.attacks)
        rows.append(
            [
                lab,
                fmt_pct(finite(a.get("memorization_rate")), 2) if a else "-",
                fmt_pct(finite(a.get("holdout_memorization_rate")), 2) if a else "-",
                (_points(a.get(EXCESS_MEMORIZATION)) + f" ({_ci_pct(excess_interval(a), points=True)})")
                if a and finite(a.get(EXCESS_MEMORIZATION)) is not None
                else "-",
                f"{attack_name(best[0])} {_num(best[1].get('auc'), 3)}" if best else "-",
                _num((best[1].get("tpr_at_fpr") or {}).get("0.1"), 3) if best else "-",
                _copying_cell(a),
                _epsilon_cell(c),
                _num(q.value("shape"), 3) if q else "-",
                _num(q.value("trend"), 3) if q else "-",
                _mle_cell(q) if q else "-",
            ]
        )
    return Table(
        [
            "cell",
            "memorization",
            "holdout",
            "excess, points (95% CI)",
            "strongest attack, AUC",
            "TPR@0.1",
            "copying Z (p)",
            "ε lower bound",
            "Shape",
            "Trend",
            "MLE (real)",
        ],
        rows,
        "",
        [False] + [True] * 10,
    )


def _epsilon_cell(cell: Cell) -> str | tuple[str, str]:
    """The ε lower bounds as the cards state them, in their format (two decimals): the privacy card's best over
    the attacks (``_privacy``, Bonferroni-corrected) and, where it differs or is missing, the bound of the strongest
    attack alone (its ``epsilon_lower_bound``, what the membership-inference card states)."""
    att = cell.attacks
    if att is None:
        return "-"
    best = strongest_attack(att)
    own = finite((best[1].get("epsilon_lower_bound") or {}).get("epsilon")) if best is not None else None
    headline = finite(att.privacy.get("epsilon_lower_bound"))
    if headline is None:
        return "-" if own is None else (f"{own:.2f}", f"{attack_name(best[0])} alone" if best else "")
    if own is None or f"{own:.2f}" == f"{headline:.2f}":
        return f"{headline:.2f}"
    return (f"{headline:.2f}", f"{attack_name(best[0])} alone: {own:.2f}" if best else "")


def comparison_notes(cells: list[Cell], labels: list[str]) -> list[str]:
    """What a difference between cells rests on: for a measure with intervals whether they overlap, for one
    without (Shape, Trend, MLE, Mem-AUC) that a difference between single seeds is not an effect until repeated."""
    if len(cells) < 2:
        return []
    notes = []
    configs: dict[tuple, set] = {}
    for c in cells:
        configs.setdefault(tuple((k, str(v)) for k, v in c.axes.items() if k != "seed"), set()).add(c.axes.get("seed"))
    one_seed = all(len(seeds) == 1 for seeds in configs.values())
    for name, get, ci_of in (
        ("excess memorization", lambda c: finite(c.audit.get(EXCESS_MEMORIZATION)) if c.audit else None,
         lambda c: _ci_pair(excess_interval(c.audit)) if c.audit else None),
        ("strongest attack AUC", lambda c: finite((strongest_attack(c.attacks) or ("", {}))[1].get("auc")),
         lambda c: _ci_pair((strongest_attack(c.attacks) or ("", {}))[1].get("auc_ci"))),
    ):  # fmt: skip
        have = [(lab, ci) for c, lab in zip(cells, labels) if get(c) is not None and (ci := ci_of(c)) is not None]
        if len(have) < 2:
            continue
        apart = [
            f"{a} and {b}"
            for i, (a, ca) in enumerate(have)
            for b, cb in have[i + 1 :]
            if ca[1] < cb[0] or cb[1] < ca[0]
        ]
        title = name[0].upper() + name[1:]
        n_pairs = len(have) * (len(have) - 1) // 2
        if apart:
            rest = "; every other pair overlaps" if len(apart) < n_pairs else ""
            notes.append(f"{title}: the intervals of {'; '.join(apart)} do not overlap{rest}.")
        else:
            notes.append(f"{title}: the intervals overlap: no cell differs from another on it.")
    for name, get in (
        ("Mem-AUC", lambda c: finite(c.audit.get("mem_auc")) if c.audit else None),
        ("Shape", lambda c: c.quality.value("shape") if c.quality else None),
        ("Trend", lambda c: c.quality.value("trend") if c.quality else None),
        ("MLE", lambda c: c.quality.value("mle") if c.quality else None),
    ):
        have = [(lab, v) for c, lab in zip(cells, labels) if (v := get(c)) is not None]
        if len(have) < 2:
            continue
        lo, hi = min(have, key=lambda t: t[1]), max(have, key=lambda t: t[1])
        shown = fmt_mem_auc if name == "Mem-AUC" else (lambda v: f"{v:.3f}")
        span = f"{name} {shown(lo[1])} ({lo[0]}) to {shown(hi[1])} ({hi[0]})"
        if one_seed:
            notes.append(f"{span}: {ONE_SEED}.")
        else:
            notes.append(f"{span}: no interval; compare the spread over the seeds before calling it an effect.")
    return notes


def _copying_cell(a: Audit | None) -> str:
    """The data-copying test's Z and p of the primary audit (Z << 0: copying), or "-"."""
    copying = a.get("data_copying") if a is not None else None
    if not isinstance(copying, dict) or finite(copying.get("z")) is None:
        return "-"
    return f"{float(copying['z']):.2f} ({_num(copying.get('p_value'), 2)})"


def _mle_cell(q) -> str:
    v = q.value("mle")
    if v is None:
        return "-"
    d = (q.summary.get("details") or {}).get("mle") or {}
    real = (d.get("real") or {}).get(d.get("score")) if d.get("score") else None
    return f"{_num(v, 3)} ({_num(real, 3)})" if finite(real) is not None else _num(v, 3)


EPOCH_COLUMNS = {
    "epoch": "epoch",
    "memorization_rate": "memorization rate",
    "mem_auc": "Mem-AUC (exact)",
    "n_replicas": "replicas",
    "n_records_memorized": "records memorized",
}
TRAJECTORY_COLUMNS = {
    "mean_mem_auc": "mean record Mem-AUC share",
    "frac_memorized": "memorized at this epoch",
    "frac_ever_memorized": "memorized so far",
}


def epochs_table(training: Training) -> Table | None:
    """The numbers behind the epochs figure: tracked epochs joined with the Top vs Non-top trajectories, the
    Mem-AUC (the table's, and a record's share of it) in percent like the figure."""
    if training.epochs is None:
        return None
    cols = [c for c in EPOCH_COLUMNS if c in training.epochs]
    table = training.epochs[cols]
    if training.trajectories is not None:
        table = table.merge(training.trajectories, on="epoch", how="left")
    names, rows = [], []
    for col in table.columns:
        group, _, rest = str(col).partition("_")
        if col in EPOCH_COLUMNS:
            names.append(EPOCH_COLUMNS[col])
        elif group in ("top", "nontop") and rest in TRAJECTORY_COLUMNS:
            names.append(f"{'Top' if group == 'top' else 'Non-top'}: {TRAJECTORY_COLUMNS[rest]}")
        else:
            names.append(str(col))
    for row in table.itertuples(index=False):
        cells: list[str | tuple[str, str]] = []
        for col, v in zip(table.columns, row):
            if "mem_auc" in str(col):
                cells.append(fmt_mem_auc(v))
            elif "rate" in str(col) or "frac" in str(col):
                cells.append(_pct2(v))
            else:
                cells.append(_num(v))
        rows.append(cells)
    return Table(names, rows, "Per tracked epoch.", [True] * len(names))


def _measure(d: dict[str, Any], key: str) -> Any:
    """``d[key]``, or ``d["quality"][k]`` for ``key = "quality.k"``."""
    if key.startswith("quality."):
        q = d.get("quality")
        return q.get(key.split(".", 1)[1]) if isinstance(q, dict) else None
    return d.get(key)


def dynamiccut_table(cell: Cell) -> Table | None:
    """A DynamicCut run before and after: memorization (rate, excess with its interval, Mem-AUC) and the quality
    figures the run has, for the warm-up model, the baseline (``--baseline``) and the model retrained on the pruned
    table; the last column says what the after-before difference rests on."""
    run: DynamicCutRun | None = cell.dynamiccut
    if run is None:
        return None
    s = run.summary
    after = {**s, "n_rows": s.get("n_retrain")}
    columns: list[tuple[str, dict[str, Any]]] = []
    warm = s.get("warmup") if isinstance(s.get("warmup"), dict) else None
    if warm:
        columns.append((f"warm-up ({warm.get('epochs')} epochs)", {**warm, "n_rows": s.get("n_train")}))
    base = s.get("baseline") if isinstance(s.get("baseline"), dict) else None
    if base:
        columns.append(("before: no pruning", {**base, "n_rows": base.get("n_train")}))
    prune = finite(s.get("prune"))
    label = f"after: {s.get('prune_by')} {100 * prune:.0f}% removed" if prune is not None else "after"
    columns.append((label + (f" + {s.get('mix')}" if s.get("mix") else ""), after))
    before_name, before = columns[-2] if len(columns) > 1 else ("", None)  # the baseline, else the warm-up

    def quality(d: dict[str, Any], key: str) -> Any:
        return (d.get("quality") or {}).get(key) if isinstance(d.get("quality"), dict) else None

    measures: list[tuple[str, Any, Any, str]] = [  # name, value of a column, its interval, unit of the difference
        ("rows trained on", lambda d: _num(d.get("n_rows")), None, ""),
        ("memorization rate (vs the original table)",
         lambda d: _pct2(d.get("memorization_rate")), "memorization_rate", "points"),
        ("holdout baseline rate", lambda d: _pct2(d.get("holdout_memorization_rate")), None, ""),
        ("excess memorization (points)", lambda d: _points(d.get(EXCESS_MEMORIZATION)), EXCESS_MEMORIZATION, "points"),
        ("memorization rate vs the pruned table (what it trained on)",
         lambda d: _pct2(d.get("memorization_rate_vs_pruned")), None, ""),
        ("Mem-AUC (exact)", lambda d: fmt_mem_auc(d.get("mem_auc")), "mem_auc", "points"),
    ]  # fmt: skip
    for key, name in (("shape", "Shape"), ("trend", "Trend"), ("mle", "MLE")):
        if any(finite(quality(d, key)) is not None for _, d in columns):
            measures.append((name, lambda d, k=key: _num(quality(d, k), 3), f"quality.{key}", ""))
    if finite(quality(after, "mle_real")) is not None:
        measures.append(
            ("MLE of the same model trained on the real rows", lambda d: _num(quality(d, "mle_real"), 3), None, "")
        )
    rows: list[list[str | tuple[str, str]]] = []
    for name, show, key, unit in measures:
        row: list[str | tuple[str, str]] = [name]
        for _, d in columns:
            ci = d.get(f"{key}_ci") if key else None
            value = show(d)
            row.append((value, _ci_pct(ci, points=True)) if _ci_pair(ci) is not None else value)
        if before is not None and key is not None:
            b, a = (_measure(before, key), _measure(after, key))
            row.append(difference_note(b, a, before.get(f"{key}_ci"), after.get(f"{key}_ci"), unit=unit))
        elif before is not None:
            row.append("")
        rows.append(row)
    head = ["measure", *[n for n, _ in columns]]
    if before is not None:
        head.append(f"after vs {before_name.split(':')[0].split(' (')[0]}")
    n_pruned, n_train = s.get("n_pruned"), s.get("n_train")
    cap = (
        f"DynamicCut removed {_num(n_pruned)} of {_num(n_train)} training records (ranked by {s.get('prune_by')}, "
        f"ranking from {s.get('ranking_source')}) and retrained {s.get('model')} from scratch on the rest; every rate is "
        f"measured against the original {_num(n_train)} training rows (distance {s.get('distance')}, d1/d2 < "
        f"{DYNAMICCUT_THRESHOLD:.3g}) "
        "unless stated. Intervals: 95% bootstrap."
    )
    if not base:
        cap += (
            " No baseline run was given (tabmem dynamiccut --baseline DIR: the same model trained on the whole table), "
            "so the only 'before' is the warm-up model, trained for fewer epochs: not a like-for-like comparison."
        )
    return Table(head, rows, cap, [False] + [True] * (len(head) - 1))
