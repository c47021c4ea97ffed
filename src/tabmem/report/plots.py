"""The report's figures, each an inline SVG string (style and conversion in :mod:`.svg`).

Each function takes parts of the report model and returns the SVG, or None when the data for that
figure is absent; the numbers are plotted as the producing commands wrote them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tabmem.gate.figures import excess_interval
from tabmem.memorization.summary import EXCESS_MEMORIZATION
from tabmem.report.model import Attacks, Audit, Cell, Quality, Training
from tabmem.report.readers import finite
from tabmem.report.svg import (
    BASE,
    GRID,
    INK,
    MUTED,
    PALETTE,
    SYNTH,
    WIDTH,
    ci_err,
    new_figure,
    styled,
    to_svg,
)

__all__ = [
    "rates_figure",
    "heavy_tail_figure",
    "epochs_figure",
    "roc_figure",
    "distance_figure",
    "shape_figure",
    "frontier_figure",
    "arms_frontier_figure",
    "distance_histogram",
    "evidence_figure",
]

MAX_CORNERS = 1500  # ROC corners drawn one by one up to this many per curve
MAX_POINT_LABELS = 12  # the frontier names its points up to this many cells (the table lists them all)
ATTACK_COLOURS = {
    "levatt": PALETTE[5],
    "dcr": PALETTE[0],
    "mc": PALETTE[2],
    "density": PALETTE[3],
    "domias": PALETTE[1],
}


# ----------------------------------------------------------------------------- memorization


def _rate_dot(ax, rate: float, ci: Any, y: float, label: str | None, color: str, zorder: int, **style: Any) -> None:
    """A rate (in %) as a dot at height ``y``, its confidence interval as a horizontal error bar."""
    err = ci_err(rate, ci)
    xerr = None if err is None else 100 * np.array(err)
    ax.errorbar(
        100 * rate, y, xerr=xerr, fmt="o", color=color, ms=7, capsize=3, lw=1.2, zorder=zorder, label=label, **style
    )


@styled
def rates_figure(cells: Sequence[Cell], labels: Sequence[str]) -> str | None:
    """Per cell: memorization rate next to the holdout rate (95% CIs), and their difference."""
    rows = [(lab, c.audit) for c, lab in zip(cells, labels) if c.audit is not None]
    rows = [(lab, a) for lab, a in rows if finite(a.get("memorization_rate")) is not None]
    if not rows:
        return None
    has_excess = any(finite(a.get(EXCESS_MEMORIZATION)) is not None for _, a in rows)
    n = len(rows)
    fig, axes = new_figure(1.3 + 0.42 * n, 2 if has_excess else 1, width_ratios=[3, 2] if has_excess else None)
    ax = axes[0]
    ys = np.arange(n)[::-1]
    for y, (_, a) in zip(ys, rows):
        rate, hold = finite(a.get("memorization_rate")), finite(a.get("holdout_memorization_rate"))
        if hold is not None:
            ax.plot([100 * hold, 100 * rate], [y, y], color="#C9CED6", lw=2, zorder=1)
            label = "holdout rows (real, never trained on)" if y == ys[0] else None
            _rate_dot(ax, hold, a.get("holdout_memorization_rate_ci"), y - 0.08, label, BASE, 3, mfc="white", mec=BASE)
        label = "synthetic rows" if y == ys[0] else None
        _rate_dot(ax, rate, a.get("memorization_rate_ci"), y + 0.08, label, SYNTH, 4)
    ax.set_yticks(ys, [lab for lab, _ in rows])
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel("rows flagged as replicas of a training row (%)")
    ax.set_title("Memorization rate next to its holdout baseline")
    ax.grid(axis="y", visible=False)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside upper left", ncol=2)
    if has_excess:
        bx = axes[1]
        for y, (_, a) in zip(ys, rows):
            ex = finite(a.get(EXCESS_MEMORIZATION))
            if ex is None:
                continue
            ci = excess_interval(a)
            err = ci_err(ex, ci)
            sig = err is not None and float(ci[0]) > 0
            bx.errorbar(
                100 * ex,
                y,
                xerr=None if err is None else 100 * np.array(err),
                fmt="s",
                color=SYNTH if sig else INK,
                mfc=SYNTH if sig else "white",
                ms=6,
                capsize=3,
                lw=1.2,
            )
        bx.axvline(0, color=MUTED, lw=1, ls="--")
        bx.set_yticks(ys, [""] * n)
        bx.set_ylim(-0.6, n - 0.4)
        bx.grid(axis="y", visible=False)
        bx.set_xlabel("excess: synthetic - holdout (points)")
        bx.set_title("Excess memorization, 95% CI")
        lo, hi = bx.get_xlim()
        span = max(abs(lo), abs(hi), 1.0)
        bx.set_xlim(-span, span)
    return to_svg(fig, "Memorization rate of each synthetic table next to its holdout baseline, with 95% intervals")


@styled
def heavy_tail_figure(audit: Audit) -> str | None:
    """Sorted per-record replica counts and the concentration curve (top 1% / 10% shares marked)."""
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    counts = audit.record_counts
    if counts is None or counts.size == 0 or counts.sum() == 0:
        return None
    n = counts.size
    sorted_counts = np.sort(counts)[::-1]
    k = int((sorted_counts > 0).sum())
    fig, (ax, bx) = new_figure(3.2, 2)
    # runs of equal counts: one step per distinct count (exact, and small for any number of records)
    change = np.flatnonzero(np.diff(sorted_counts[:k])) + 1
    starts = np.r_[0, change]
    edges = np.r_[starts, k] + 0.5
    ax.stairs(sorted_counts[starts], edges, fill=True, color=SYNTH, alpha=0.25, lw=0)
    ax.stairs(sorted_counts[starts], edges, color=SYNTH, lw=1.4, baseline=None)
    for q, style in ((0.01, ":"), (0.10, "--")):
        cut = max(1, math.ceil(q * n))
        if cut <= k:
            ax.axvline(cut + 0.5, color=INK, lw=0.9, ls=style)
            ax.annotate(
                f"top {q:.0%}",
                (cut + 0.5, 0.97),
                xycoords=("data", "axes fraction"),
                xytext=(3, 0),
                textcoords="offset points",
                va="top",
                fontsize=8,
                color=INK,
            )
    ax.set_xlim(0.5, k + 0.5)
    ax.set_ylim(0, None)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.set_xlabel(f"training records with >= 1 replica, most replicated first ({k:,} of {n:,})")
    ax.set_ylabel("replicas")
    ax.set_title("Replicas per training record")
    share = np.r_[0.0, np.cumsum(sorted_counts) / sorted_counts.sum()]
    knots = np.unique(np.r_[0, starts, k, n])  # the curve is straight between runs of equal counts
    bx.plot(100 * knots / n, 100 * share[knots], color=SYNTH, lw=1.6, label="observed")
    bx.plot([0, 100], [0, 100], color=MUTED, lw=1, ls="--", label="replicas spread evenly")
    for q in (0.01, 0.10):
        cut = max(1, math.ceil(q * n))
        s = share[cut]
        bx.plot([100 * cut / n], [100 * s], "o", color=INK, ms=4)
        bx.annotate(
            f"top {q:.0%}: {100 * s:.0f}% of replicas",
            (100 * cut / n, 100 * s),
            xytext=(8, -4 if q > 0.05 else 4),
            textcoords="offset points",
            fontsize=8,
            color=INK,
        )
    bx.set_xlim(0, 100)
    bx.set_ylim(0, 102)
    bx.set_xlabel("share of training records, most replicated first (%)")
    bx.set_ylabel("share of replicas (%)")
    bx.set_title("Concentration")
    bx.legend(loc="lower right")
    return to_svg(fig, "Heavy tail of the per-record replica counts")


@styled
def epochs_figure(training: Training, audit: Audit | None) -> str | None:
    """Memorization over the tracked epochs (holdout baseline as reference) and Top vs Non-top trajectories."""
    from matplotlib.ticker import MaxNLocator

    ep = training.epochs
    if ep is None or len(ep) < 2:  # one tracked epoch is not a trajectory (its numbers are in the tables)
        return None
    traj = training.trajectories
    has_traj = traj is not None and len(traj) > 0
    fig, axes = new_figure(3.6, 2 if has_traj else 1)
    ax = axes[0]
    ax.plot(ep["epoch"], 100 * ep["memorization_rate"], "o-", color=SYNTH, ms=3.5, lw=1.6, label="memorization rate")
    if "mem_auc" in ep:
        ax.plot(ep["epoch"], 100 * ep["mem_auc"], "-", color=SYNTH, alpha=0.45, lw=1.2, label="Mem-AUC (exact)")
    hold = finite(audit.get("holdout_memorization_rate")) if audit is not None else None
    if hold is not None:
        ci = audit.get("holdout_memorization_rate_ci") if audit is not None else None
        if isinstance(ci, (list, tuple)) and finite(ci[0]) is not None and finite(ci[1]) is not None:
            ax.axhspan(100 * float(ci[0]), 100 * float(ci[1]), color=BASE, alpha=0.12, lw=0)
        ax.axhline(100 * hold, color=BASE, ls="--", lw=1.2, label="holdout baseline")
    ax.set_xlabel("epoch")
    ax.set_ylabel("%")
    ax.set_title("Memorization over training")
    for axis in axes:
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    if has_traj:
        bx = axes[1]
        dyn = training.dynamics or {}
        n_top, n_non = dyn.get("n_top"), dyn.get("n_nontop")
        q = dyn.get("q", 0.1)
        for group, colour, n_g in (("top", SYNTH, n_top), ("nontop", BASE, n_non)):
            name = f"Top {q:.0%}" if group == "top" else "Non-top"
            suffix = f" (n={n_g:,})" if isinstance(n_g, int) else ""
            for column, style, lw, label in (
                ("frac_ever_memorized", "-", 1.8, f"{name}{suffix}: memorized so far"),
                ("frac_memorized", ":", 1.4, f"{name}: memorized at this epoch"),
            ):
                bx.plot(traj["epoch"], 100 * traj[f"{group}_{column}"], style, color=colour, lw=lw, label=label)
        bx.set_ylim(0, 102)
        bx.set_xlabel("epoch")
        bx.set_ylabel("records (%)")
        bx.set_title("Top vs Non-top records")
        bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7.5)
    return to_svg(fig, "Memorization over training epochs and Top vs Non-top trajectories")


# ----------------------------------------------------------------------------- distance evidence
def _nndr_curve(part: dict) -> tuple[np.ndarray, np.ndarray]:
    """Quantile levels and NNDR values of one side (the fine ``curve`` when written, else the quantiles)."""
    points = part.get("curve") or part.get("quantiles") or {}
    pairs = sorted((float(k), finite(v)) for k, v in points.items())
    pairs = [(q, v) for q, v in pairs if v is not None]
    return np.array([q for q, _ in pairs]), np.array([v for _, v in pairs])


@styled
def evidence_figure(audit: Audit) -> str | None:
    """The distance evidence next to its holdout reference: NNDR quantile curves, closer/identical shares,
    and the data-copying test's Z per k-means cell."""
    from statistics import NormalDist

    s = audit.summary
    nndr = s.get("nndr") or {}
    auth, ident = s.get("authenticity") or {}, s.get("identical_matches") or {}
    copying = s.get("data_copying") if isinstance(s.get("data_copying"), dict) else None
    q_syn, v_syn = _nndr_curve(nndr.get("synthetic") or {})
    if q_syn.size == 0 and not auth and copying is None:
        return None
    panels = ["nndr", "shares"] + (["copying"] if copying and copying.get("per_cell") else [])
    fig, axes = new_figure(3.0, len(panels), width_ratios=[4, 3, 3][: len(panels)])
    ax = axes[0]
    q_hold, v_hold = _nndr_curve(nndr.get("holdout") or {})
    for q, v, colour, label in (
        (q_hold, v_hold, BASE, "holdout (real rows never trained on)"),
        (q_syn, v_syn, SYNTH, "synthetic"),
    ):
        if q.size:
            ax.plot(100 * q, v, color=colour, lw=1.8, marker="o" if q.size <= 6 else None, ms=4, label=label)
    ax.set_xlim(0, 100)
    ax.set_ylim(0, None)
    ax.set_xlabel("quantile of the rows (%)")
    ax.set_ylabel("d1 / d2")
    ax.set_title("Nearest-neighbour distance ratio")
    ax.legend(loc="best")
    bx = axes[1]
    bars = [
        (
            "closer than its\nneighbour",
            finite(auth.get("synthetic_closer_share")),
            finite(auth.get("holdout_closer_share")),
        ),
        ("identical to a\ntraining row", finite(ident.get("synthetic_share")), finite(ident.get("holdout_share"))),
    ]
    ys = np.arange(len(bars))[::-1]
    for y, (_, syn, hold) in zip(ys, bars):
        if hold is not None:
            bx.barh(y - 0.18, 100 * hold, height=0.34, color=BASE, alpha=0.85, label="holdout" if y == ys[0] else None)
            bx.annotate(
                f"{100 * hold:.1f}%",
                (100 * hold, y - 0.18),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
                color=INK,
            )
        if syn is not None:
            bx.barh(
                y + 0.18, 100 * syn, height=0.34, color=SYNTH, alpha=0.85, label="synthetic" if y == ys[0] else None
            )
            bx.annotate(
                f"{100 * syn:.1f}%",
                (100 * syn, y + 0.18),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
                color=INK,
            )
    bx.set_yticks(ys, [b[0] for b in bars])
    bx.set_xlim(0, 115)
    bx.set_xlabel("share of the rows (%)")
    bx.set_title("Closeness to training rows")
    bx.legend(loc="lower right")
    if "copying" in panels:
        cx = axes[2]
        cells = copying["per_cell"]  # type: ignore[index]
        zs = np.array([finite(c.get("z")) if finite(c.get("z")) is not None else np.nan for c in cells])
        colours = [SYNTH if c.get("flagged") else (BASE if c.get("used") else GRID) for c in cells]
        x = np.arange(len(cells))
        cx.bar(x, np.nan_to_num(zs), color=colours, width=0.7)
        cx.axhline(0, color=INK, lw=0.8)
        used = int(copying.get("n_cells_used") or 0)  # type: ignore[union-attr]
        alpha = finite(copying.get("alpha")) or 0.05  # type: ignore[union-attr]
        label = "k-means cell (grey: not tested)"
        if used:
            cut = NormalDist().inv_cdf(alpha / used)  # a cell is flagged when Φ(Z) < alpha / cells used
            cx.axhline(cut, color=SYNTH, lw=0.9, ls="--")
            label += f"\ndashed: flagged below Z = {cut:.2f}"
        cx.set_xticks(x, [str(c.get("cell")) for c in cells])
        cx.set_xlabel(label)
        cx.set_ylabel("Z (< 0: closer than real rows)")
        cx.set_title("Data-copying test per cell")
    return to_svg(fig, "Distance evidence: synthetic rows next to real holdout rows")


# ----------------------------------------------------------------------------- attacks
def _roc_grid(fpr: np.ndarray, tpr: np.ndarray, lo: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The ROC at the corners, interpolated as TPR@FPR is (straight segments between corners).

    ``lo`` given: on a log-spaced grid from ``lo`` to 1 (straight segments bend on a log axis).
    Curves with more than :data:`MAX_CORNERS` corners are drawn on a fine grid instead of every
    corner (a pixel holds several of them); the tables give the exact numbers.
    """
    many = fpr.size > MAX_CORNERS
    if lo is None:
        if not many:
            return fpr, tpr
        grid = np.linspace(0.0, 1.0, MAX_CORNERS)
        return np.r_[0.0, grid], np.r_[0.0, np.interp(grid, fpr, tpr)]
    corners = fpr[fpr >= lo] if not many else np.zeros(0)
    grid = np.unique(np.r_[np.geomspace(lo, 1.0, 400 if not many else MAX_CORNERS), corners])
    return grid, np.interp(grid, fpr, tpr)


@styled
def roc_figure(attacks: Attacks) -> str | None:
    """ROC curves of every attack, on linear axes and on a log-scaled FPR axis (low-FPR regime)."""
    from matplotlib.ticker import NullFormatter

    roc = attacks.roc
    if roc is None or len(roc) == 0:
        return None
    results = attacks.results
    n_non = next((r.get("n_non_members") for r in results.values() if r.get("n_non_members")), None)
    min_fpr = 1.0 / n_non if n_non else 1e-3
    lo = min(1e-3, min_fpr / 3)
    fig, (ax, bx) = new_figure(3.6, 2, width_ratios=[2, 3])
    order = sorted(results, key=lambda a: -(finite(results[a].get("auc")) or 0))
    for i, name in enumerate(order):
        curve = roc[roc["attack"] == name]
        if curve.empty:
            continue
        fpr, tpr = curve["fpr"].to_numpy(float), curve["tpr"].to_numpy(float)
        colour = ATTACK_COLOURS.get(name, PALETTE[i % len(PALETTE)])
        auc = finite(results[name].get("auc"))
        label = f"{_attack_label(name)} (AUC {auc:.3f})" if auc is not None else _attack_label(name)
        ax.plot(*_roc_grid(fpr, tpr, None), color=colour, lw=1.5, label=label)
        gx, gy = _roc_grid(fpr, tpr, lo)
        bx.plot(gx, gy, color=colour, lw=1.5, label=label)
        for f in (0.01, 0.1):
            if f >= min_fpr:
                bx.plot([f], [np.interp(f, fpr, tpr)], "o", color=colour, ms=3.5)
    for axis in (ax, bx):
        xs = np.geomspace(lo, 1, 200)
        axis.plot(xs, xs, color=MUTED, lw=1, ls="--", label="chance")
        axis.set_ylim(0, 1.01)
        axis.set_ylabel("true-positive rate (members found)")
    ax.set_xlim(0, 1)
    ax.set_xlabel("false-positive rate")
    ax.set_title("ROC")
    bx.set_xscale("log")
    bx.set_xlim(lo, 1)
    ticks = [t for t in (1e-4, 1e-3, 1e-2, 1e-1, 1.0) if t >= lo]
    bx.set_xticks(ticks, [f"{t:g}" for t in ticks])
    bx.xaxis.set_minor_formatter(NullFormatter())
    if min_fpr > lo:
        bx.axvspan(lo, min_fpr, color="#9AA1AB", alpha=0.18, lw=0)
        bx.annotate(
            f"not resolved:\n< 1/{n_non:,} non-members" if n_non else "not resolved",
            (math.sqrt(lo * min_fpr), 0.97),
            ha="center",
            va="top",
            fontsize=7,
            color=MUTED,
        )
    for f in (0.01, 0.1):
        bx.axvline(f, color=GRID, lw=1.2, zorder=0)
    bx.set_xlabel("false-positive rate (log scale)")
    bx.set_title("Low false-positive rates")
    fig.legend(*bx.get_legend_handles_labels(), loc="outside right upper")
    return to_svg(fig, "ROC curves of the membership-inference attacks, linear and log-scaled FPR")


def _attack_label(name: str) -> str:
    from tabmem.report.verdict import attack_name

    return attack_name(name)


@styled
def distance_figure(attacks: Attacks) -> str | None:
    """Histograms of the distance to the closest synthetic row, members vs non-members (LevAtt, DCR)."""
    from tabmem.report.readers import distance_attacks

    described = distance_attacks()
    names = [a for a in described if a in attacks.distances]
    if not names:
        return None
    fig, axes = new_figure(3.0, len(names), width=min(WIDTH, 5.0 * len(names)))
    for ax, name in zip(axes, names):
        d = attacks.distances[name]
        hist = distance_histogram(d, integer=name == "levatt")
        edges = np.r_[hist["from"].to_numpy(), hist["to"].to_numpy()[-1]]
        for group, colour, label in (
            ("non_members", BASE, "non-members"),
            ("members", SYNTH, "members (training rows)"),
        ):
            values = d.loc[d["is_member"] == (group == "members"), "distance"].to_numpy(float)
            if values.size == 0:
                continue
            ax.stairs(hist[f"{group}_pct"], edges, fill=True, color=colour, alpha=0.22, lw=0)
            ax.stairs(
                hist[f"{group}_pct"], edges, color=colour, lw=1.5, label=f"{label}: median {np.median(values):.3g}"
            )
        ax.set_xlabel(described[name])
        ax.set_ylabel("share of the group (%)")
        ax.set_ylim(0, None)
        ax.set_title(f"{_attack_label(name)}: members vs non-members")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1)
    return to_svg(fig, "Distance to the closest synthetic row, members vs non-members")


def distance_histogram(distances: pd.DataFrame, *, integer: bool) -> pd.DataFrame:
    """The bins of :func:`distance_figure`: ``from``, ``to``, ``members_pct``, ``non_members_pct``.

    Each group's shares add up to 100%: distances above the last edge (the top 0.5%) count in the
    last bin.
    """
    d = distances["distance"].to_numpy(float)
    member = distances["is_member"].to_numpy(bool)
    edges = _bins(d, integer=integer, n_small=int(min(member.sum(), (~member).sum())))
    out = pd.DataFrame({"from": edges[:-1], "to": edges[1:]})
    for group, mask in (("members", member), ("non_members", ~member)):
        v = np.clip(d[mask & np.isfinite(d)], edges[0], edges[-1])
        counts = np.histogram(v, bins=edges)[0]
        out[f"{group}_pct"] = 100.0 * counts / max(v.size, 1)
    return out


def _bins(values: np.ndarray, *, integer: bool, n_small: int) -> np.ndarray:
    """Bin edges: unit bins for integer distances over a short range, else 3 n^(1/3) bins (10 to 50) of the smaller group."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.linspace(0, 1, 11)
    lo, hi = float(values.min()), float(np.quantile(values, 0.995))
    if integer and hi - lo <= 60:
        return np.arange(math.floor(lo) - 0.5, math.ceil(hi) + 1.5)
    if hi <= lo:
        hi = lo + 1.0
    n_bins = int(np.clip(3 * max(n_small, 1) ** (1 / 3), 10, 50))
    return np.linspace(lo, hi, n_bins + 1)


# ----------------------------------------------------------------------------- quality
@styled
def shape_figure(quality: Quality) -> str | None:
    """Per-column Shape score (KS / TV complement), worst column on top."""
    b = quality.shape_breakdown
    if b is None or len(b) == 0:
        return None
    b = b.dropna(subset=["score"]).sort_values("score", ascending=False, kind="stable")
    n = len(b)
    fig, (ax,) = new_figure(1.1 + 0.22 * n)
    colours = [PALETTE[0] if m == "KSComplement" else PALETTE[2] for m in b["metric"]]
    ax.barh(np.arange(n), b["score"], color=colours, height=0.7)
    ax.set_yticks(np.arange(n), b["column"].astype(str).tolist(), fontsize=8 if n < 40 else 6)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, n - 0.4)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("similarity of the column's distribution (1 = identical)")
    overall = quality.value("shape")
    if overall is not None:
        ax.axvline(overall, color=INK, lw=1, ls="--")
    ax.set_title("Column shapes" + (f" (mean {overall:.3f}, dashed)" if overall is not None else ""))
    from matplotlib.patches import Patch

    fig.legend(
        handles=[
            Patch(color=PALETTE[0], label="numerical: 1 - KS statistic"),
            Patch(color=PALETTE[2], label="categorical: 1 - total variation"),
        ],
        loc="outside upper left",
        ncol=2,
    )
    return to_svg(fig, "Per-column distribution similarity (Shape)")


@styled
def frontier_figure(cells: Sequence[Cell], labels: Sequence[str], colour_by: str | None = None) -> str | None:
    """Privacy against fidelity/utility across cells: excess memorization (or attack AUC) vs Shape, Trend, MLE."""
    from tabmem.report.verdict import strongest_attack

    rows = []
    for c, lab in zip(cells, labels):
        if c.quality is None:
            continue
        ex = finite(c.audit.get(EXCESS_MEMORIZATION)) if c.audit is not None else None
        best = strongest_attack(c.attacks)
        auc = finite(best[1].get("auc")) if best else None
        rows.append((c, lab, ex, auc))
    use_excess = sum(r[2] is not None for r in rows) >= 2
    use_auc = not use_excess and sum(r[3] is not None for r in rows) >= 2
    if not (use_excess or use_auc):
        return None
    xs = [
        (k, t)
        for k, t in (("shape", "Shape"), ("trend", "Trend"), ("mle", "MLE"))
        if sum(r[0].quality.value(k) is not None for r in rows) >= 2
    ]
    if not xs:
        return None
    groups = sorted({str(c.axes.get(colour_by, "")) for c, *_ in rows}) if colour_by else [""]
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}
    fig, axes = new_figure(3.2, len(xs), width=min(WIDTH, 3.2 * len(xs) + 1.2), sharey=True)
    for ax, (key, title) in zip(axes, xs):
        pts = []
        for c, lab, ex, auc in rows:
            x = c.quality.value(key)
            y = ex if use_excess else auc
            if x is None or y is None:
                continue
            ci = excess_interval(c.audit) if use_excess else strongest_attack(c.attacks)[1].get("auc_ci")
            err = ci_err(y, ci)
            scale = 100 if use_excess else 1
            g = str(c.axes.get(colour_by, "")) if colour_by else ""
            ax.errorbar(
                x,
                scale * y,
                yerr=None if err is None else scale * np.array(err),
                fmt="o",
                color=colour[g],
                ms=5,
                capsize=2,
                lw=1,
            )
            if len(rows) <= MAX_POINT_LABELS:
                ax.annotate(lab, (x, scale * y), xytext=(4, 3), textcoords="offset points", fontsize=7, color=INK)
            pts.append((x, scale * y))
        goal = next(
            (r[0].quality.summary.get("goals", {}).get(key) for r in rows if r[0].quality.value(key) is not None), None
        )
        front = _pareto(pts, maximize_x=goal != "minimize")
        if len(front) > 1:
            ax.plot(*zip(*front), color=MUTED, lw=1, ls="-", zorder=0)
        ax.axhline(0 if use_excess else 0.5, color=MUTED, lw=1, ls="--")
        better = "higher" if goal != "minimize" else "lower"
        ax.set_xlabel(f"{title} ({better} is better)")
        ax.set_title(title)
    axes[0].set_ylabel("excess memorization (points)" if use_excess else "strongest attack AUC")
    if colour_by and len(groups) > 1:
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], marker="o", ls="", color=colour[g], label=g or "-") for g in groups]
        fig.legend(handles=handles, title=colour_by, loc="outside right upper")
    return to_svg(fig, "Privacy-utility frontier across cells")


def _mean_interval(values: list[float]) -> tuple[float, float | None]:
    """Mean and 95% t half-width over seeds (None for one value)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), None
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))


def _arm_values(cells: Sequence[Cell]) -> dict[str, list[float]]:
    """Per metric of the frontier, the finite values of these cells (one per seed)."""
    from tabmem.report.verdict import strongest_attack

    out: dict[str, list[float]] = {"excess": [], "auc": [], "shape": [], "mle": []}
    for c in cells:
        ex = finite(c.audit.get(EXCESS_MEMORIZATION)) if c.audit is not None else None
        best = strongest_attack(c.attacks)
        auc = finite(best[1].get("auc")) if best else None
        for key, v in (("excess", None if ex is None else 100 * ex), ("auc", auc)):
            if v is not None:
                out[key].append(v)
        for key in ("shape", "mle"):
            v = c.quality.value(key) if c.quality is not None else None
            if v is not None and finite(v) is not None:
                out[key].append(100 * v)
    return out


ARM_Y = {"excess": ("excess memorization (points)", "audit"), "auc": ("strongest attack AUC", "attack")}
ARM_X = {"shape": ("Shape %", "quality (metrics: shape)"), "mle": ("MLE %", "quality (metrics: mle)")}


def arm_groups(cells: Sequence[Cell], arm: str = "mitigation") -> dict[str, list[Cell]]:
    """Cells grouped by ``arm`` (and by any other axis that varies, seeds excepted), in first-seen order."""
    others = [k for k in dict.fromkeys(k for c in cells for k in c.axes) if k not in (arm, "seed")]
    varying = [k for k in others if len({str(c.axes.get(k)) for c in cells}) > 1]
    groups: dict[str, list[Cell]] = {}
    for c in cells:
        if arm not in c.axes or c.status != "done":
            continue
        label = " · ".join([str(c.axes[arm]), *(str(c.axes.get(k, "-")) for k in varying)])
        groups.setdefault(label, []).append(c)
    return groups


@styled
def arms_frontier_figure(cells: Sequence[Cell], arm: str = "mitigation") -> str | None:
    """One point per arm (mean over its seeds, bars: 95% t-intervals over seeds on both axes): excess
    memorization (and the strongest attack's AUC, where attacked) against Shape and MLE.

    None unless at least two arms. A missing axis is a panel that says which results are missing
    (nothing is drawn for it); an arm of one seed has no interval (its own bootstrap is not a seed interval).
    """
    groups = arm_groups(cells, arm)
    if len(groups) < 2:
        return None
    values = {g: _arm_values(cs) for g, cs in groups.items()}
    ys = [k for k in ARM_Y if k == "excess" or any(v[k] for v in values.values())]
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}
    from matplotlib.figure import Figure

    fig = Figure(figsize=(min(WIDTH, 7.6), 2.9 * len(ys) + 0.5), layout="constrained")
    axes = fig.subplots(len(ys), len(ARM_X), squeeze=False)
    for row, ykey in zip(axes, ys):
        ytitle, ystep = ARM_Y[ykey]
        for ax, (xkey, (xtitle, xstep)) in zip(row, ARM_X.items()):
            ax.set_xlabel(f"{xtitle} (higher is better)")
            ax.set_ylabel(ytitle)
            missing = [s for k, s in ((xkey, xstep), (ykey, ystep)) if not any(v[k] for v in values.values())]
            if missing:
                ax.text(0.5, 0.5, "not in the results:\n" + "\n".join(missing), ha="center", va="center",
                        transform=ax.transAxes, color=MUTED, fontsize=9)  # fmt: skip
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            for g, v in values.items():
                if not v[xkey] or not v[ykey]:
                    continue
                (x, xh), (y, yh) = _mean_interval(v[xkey]), _mean_interval(v[ykey])
                ax.errorbar(x, y, xerr=xh, yerr=yh, fmt="o", color=colour[g], ms=8, capsize=3, lw=1.6)
                ax.annotate(g, (x, y), xytext=(5, 4), textcoords="offset points", fontsize=8, color=INK)
            ax.axhline(0 if ykey == "excess" else 0.5, color=MUTED, lw=1, ls="--")
    n = {g: len(cs) for g, cs in groups.items()}
    seeds = f"{min(n.values())}-{max(n.values())}" if len(set(n.values())) > 1 else str(min(n.values()))
    fig.suptitle(f"Frontier by {arm}: mean over seeds ({seeds} per arm)", x=0.01, ha="left", fontsize=10,
                 fontweight="bold", color=INK)  # fmt: skip
    return to_svg(fig, f"Frontier by {arm} (excess memorization against Shape and MLE): " + ", ".join(groups))


def _pareto(points: list[tuple[float, float]], *, maximize_x: bool) -> list[tuple[float, float]]:
    """The points no other point beats on both axes (better x, lower y), in x order."""
    pts = sorted(set(points), key=lambda p: (-p[0] if maximize_x else p[0], p[1]))
    front, best_y = [], math.inf
    for x, y in pts:
        if y < best_y:
            front.append((x, y))
            best_y = y
    return sorted(front)
