"""The report's tables: every number behind the plots, formatted for the page.

Each function takes a part of the report model and returns :class:`Table` objects (column names
and rows of formatted cells); a cell is a string, or a (value, interval) pair shown on two lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmem.memorization.summary import EXCESS_MEMORIZATION, EXCESS_MEMORIZATION_CI
from tabmem.report.model import Audit, Cell, Training
from tabmem.report.plots import distance_histogram
from tabmem.report.readers import finite
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
]

FINDING_TEXT = {
    "top_memorized_earlier": ("first_memorization_epoch", "were memorized earlier", "median first epoch"),
    "top_stronger_early_mem_auc": ("early_mem_auc", "were memorized more strongly early on", "mean early Mem-AUC"),
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


# ----------------------------------------------------------------------------- formatting
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
            _ci_pct(s.get(EXCESS_MEMORIZATION_CI), points=True),
        ],
        ["Mem-AUC (exact)", _num(s.get("mem_auc")), ""],
        ["Mem-AUC (papers' 10-point trapezoid)", _num(s.get("mem_auc_trapz10")), ""],
        ["holdout Mem-AUC", _num(s.get("holdout_mem_auc")), ""],
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
    ci_head = f"{round(100 * conf)}% bootstrap CI" if finite(conf) else "CI"
    head = f"replica audit ({s.get('distance')})" if name_distance else "replica audit"
    tables = [Table([head, "value", ci_head], rows, "", [False, True, True])]
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
        numbers = f"{stat} {_num(a, 3)} vs {_num(b, 3)} for the rest ({effect}{test})"
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
        rows.append(
            [
                metric,
                _num(m.get("top_mean")),
                _num(m.get("nontop_mean")),
                _num(m.get("top_median")),
                _num(m.get("nontop_median")),
                _num(m.get("cliffs_delta"), 3),
                _num(m.get("p_value"), 3),
                "-" if holds is None else ("yes" if holds else "no"),
            ]
        )
    table = Table(
        ["measure", "Top mean", "Non-top mean", "Top median", "Non-top median", "Cliff's delta", "p", "finding holds"],
        rows,
        f"Top {q:.0%} ({_num(dyn.get('n_top'))} records) vs Non-top ({_num(dyn.get('n_nontop'))}); two-sided "
        "Mann-Whitney U; a finding holds when p < 0.05 in the stated direction.",
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
    details, skipped, goals = s.get("details") or {}, s.get("skipped") or {}, s.get("goals") or {}
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
            note = f"no-copy value {_num(d.get('ideal'), 3)}"
        elif key == "trend" and d:
            note = f"{d.get('n_pairs_scored')}/{d.get('n_pairs_total')} pairs scored"
        rows.append([key, _num(s.get(key)), goals.get(key, ""), note])
    tables = [Table(["metric", "value", "goal", "note"], rows, "", [False, True, False, False])]
    if q.shape_breakdown is not None and len(q.shape_breakdown):
        tables.append(frame_table(q.shape_breakdown, "Shape per column (the bars of the column-shapes plot)."))
    return tables


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
                (_points(a.get(EXCESS_MEMORIZATION)) + f" ({_ci_pct(a.get(EXCESS_MEMORIZATION_CI), points=True)})")
                if a and finite(a.get(EXCESS_MEMORIZATION)) is not None
                else "-",
                f"{attack_name(best[0])} {_num(best[1].get('auc'), 3)}" if best else "-",
                _num((best[1].get("tpr_at_fpr") or {}).get("0.1"), 3) if best else "-",
                _copying_cell(a),
                _num((c.attacks.privacy if c.attacks else {}).get("epsilon_lower_bound"), 3),
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


def epochs_table(training: Training) -> pd.DataFrame | None:
    """The numbers behind the epochs figure: tracked epochs joined with the Top vs Non-top trajectories."""
    if training.epochs is None:
        return None
    cols = [
        c
        for c in ("epoch", "memorization_rate", "mem_auc", "n_replicas", "n_records_memorized")
        if c in training.epochs
    ]
    table = training.epochs[cols]
    if training.trajectories is not None:
        table = table.merge(training.trajectories, on="epoch", how="left")
    return table
