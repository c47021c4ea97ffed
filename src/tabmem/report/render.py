"""Render a :class:`ReportData` into one self-contained HTML page (Jinja2 template, inline SVG and CSS).

The page loads nothing: no scripts, fonts, stylesheets or images from anywhere (a test checks it
in a headless browser with the network cut). Order: the verdict per cell, the overview plots
across cells, one section per cell, then every number behind the plots, each cell's config and
the versions.
"""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from tabmem._io import jsonable
from tabmem.errors import TabmemError
from tabmem.gate import Policy, load_policy
from tabmem.report import plots, risk_tables, tables
from tabmem.report.model import Cell, ReportData
from tabmem.report.readers import KIND_NAMES
from tabmem.report.verdict import cell_verdict, evidence_lines

__all__ = ["render_report", "report_versions", "cell_labels"]

TEMPLATES = Path(__file__).parent / "templates"
VERSION_PACKAGES = ("tabmem", "numpy", "pandas", "scipy", "scikit-learn", "torch", "matplotlib", "jinja2")


def report_versions() -> dict[str, str]:
    """Versions of Python and the packages that wrote the report (missing packages left out)."""
    out = {"python": platform.python_version()}
    for name in VERSION_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _config_json(cell: Cell) -> str:
    parts: dict[str, Any] = {}
    if cell.config:
        parts["config.json"] = cell.config
    if cell.attacks is not None and cell.attacks.meta.get("config"):
        parts["attack"] = cell.attacks.meta["config"]
    if cell.quality is not None and cell.quality.summary.get("config"):
        parts["quality"] = cell.quality.summary["config"]
    if cell.risk is not None:
        keys = ("secrets", "aux", "chosen", "n_attacks", "confidence", "seed")
        parts["risk"] = {k: cell.risk.summary[k] for k in keys if k in cell.risk.summary}
    if cell.audit is not None and not cell.config:
        parts["audit"] = {k: cell.audit.get(k) for k in ("distance", "threshold", "schema") if k in cell.audit.summary}
    return json.dumps(jsonable(parts), indent=2, sort_keys=False)


# ----------------------------------------------------------------------------- labels
def cell_labels(cells: list[Cell]) -> list[str]:
    """Short labels: the axes that differ across cells (all axes for one cell), else the cell names; cells of
    different run types (a folder of unrelated runs) are named after their directory and run type."""
    if len(cells) == 1:
        c = cells[0]
        return [" · ".join(str(v) for k, v in c.axes.items() if k != "seed") or c.name]
    if len({c.kind for c in cells}) > 1:
        return [f"{c.name} ({KIND_NAMES.get(c.kind, c.kind)})" for c in cells]
    keys = [k for k in dict.fromkeys(k for c in cells for k in c.axes)]
    varying = [k for k in keys if len({str(c.axes.get(k)) for c in cells}) > 1]
    labels = [
        " · ".join(f"{c.axes[k]}" if k != "seed" else f"seed {c.axes[k]}" for k in varying if k in c.axes)
        for c in cells
    ]
    if len(set(labels)) < len(labels) or not all(labels):
        labels = [c.name for c in cells]
    return labels


def _anchor(i: int) -> str:
    return f"cell-{i + 1}"


# ----------------------------------------------------------------------------- page
def render_report(
    data: ReportData, *, records: dict[str, pd.DataFrame] | None = None, policy: Policy | None = None
) -> str:
    """The HTML page of ``data``. ``records`` (cell name -> training rows) is shown only when given; the
    verdict is ``policy``'s (the ``standard`` policy when None), as ``tabmem check`` gives it."""
    policy = policy if policy is not None else load_policy()
    _require_extra()
    import jinja2

    labels = cell_labels(data.cells)
    cells = []
    for i, (cell, label) in enumerate(zip(data.cells, labels)):
        held, dyn_table = tables.dynamics_findings(cell)
        verdict = cell_verdict(cell, policy)
        figs = {
            "heavy_tail": plots.heavy_tail_figure(cell.audit) if cell.audit is not None else None,
            "epochs": plots.epochs_figure(cell.training, cell.audit) if cell.training is not None else None,
            "roc": plots.roc_figure(cell.attacks) if cell.attacks is not None else None,
            "distances": plots.distance_figure(cell.attacks) if cell.attacks is not None else None,
            "shape": plots.shape_figure(cell.quality) if cell.quality is not None else None,
        }
        epochs = tables.epochs_table(cell.training) if cell.training is not None else None
        shown = None
        if records and cell.name in records:
            shown = tables.frame_table(records[cell.name], "")
        cells.append(
            {
                "anchor": _anchor(i),
                "label": label,
                "name": cell.name,
                "path": cell.path,
                "axes": cell.axes,
                "verdict": verdict,
                "evidence": _evidence_blocks(cell),
                "evidence_finding": next((f for f in verdict.findings if f.topic == "Distance evidence"), None),
                "privacy_finding": next((f for f in verdict.findings if f.topic == "Privacy audit"), None),
                "privacy_table": tables.privacy_table(cell),
                "held": held,
                "figs": figs,
                "audit_tables": tables.audit_tables(cell),
                "attack_tables": tables.attack_tables(cell),
                "quality_tables": tables.quality_tables(cell),
                "risk": risk_tables.risk_section(cell),
                "dynamics_table": dyn_table,
                "epochs_table": epochs,
                "dynamiccut_table": tables.dynamiccut_table(cell),
                "config": _config_json(cell),
                "records": shown,
                "has_results": cell.has_results,
                "error": cell.error,
                "has": {
                    "audit": cell.audit is not None,
                    "training": cell.training is not None,
                    "attacks": cell.attacks is not None,
                    "quality": cell.quality is not None,
                    "dynamiccut": cell.dynamiccut is not None,
                    "risk": cell.risk is not None,
                },
            }
        )
    colour_by = next((k for k in ("mitigation", "defense", "defence", "generator") if _varies(data.cells, k)), None)
    overview = {
        "rates": plots.rates_figure(data.cells, labels),
        "frontier": plots.frontier_figure(data.cells, labels, colour_by) if len(data.cells) > 1 else None,
        "arms": plots.arms_frontier_figure(data.cells, colour_by) if colour_by in ("mitigation", "defense") else None,
    }
    summary_table = tables.overview_table(data.cells, labels)
    comparisons = tables.comparison_notes(data.cells, labels)
    headline = _headline([c["verdict"] for c in cells])
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    css = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2").render(
        data=data,
        cells=cells,
        overview=overview,
        summary_table=summary_table,
        comparisons=comparisons,
        headline=headline,
        policy=policy,
        css=css,
        report_versions=report_versions(),
        show_records=bool(records),
        n_cells=len(cells),
    )


def _evidence_blocks(cell: Cell) -> list[dict[str, Any]]:
    """Per audit that holds distance evidence (the primary one first): its lines, figure and tables."""
    blocks = []
    audits = cell.audits or ({str(cell.audit.get("distance", "")): cell.audit} if cell.audit is not None else {})
    for distance, audit in audits.items():
        lines = evidence_lines(audit)
        if lines:
            blocks.append(
                {
                    "distance": distance,
                    "lines": lines,
                    "figure": plots.evidence_figure(audit),
                    "tables": tables.evidence_tables(audit),
                }
            )
    return blocks


def _headline(verdicts: list) -> str:
    """One sentence over every cell: how many fail the policy, how many are not shown within it, how many pass."""
    n = len(verdicts)
    policy = verdicts[0].policy if verdicts else "standard"
    leak = sum(v.level == "alert" for v in verdicts)
    ok = sum(v.level == "ok" for v in verdicts)
    missing = sum(v.level == "missing" for v in verdicts)
    parts = [f"{leak} of {n} synthetic tables fail the {policy} policy (a rule's figure beyond its limit)"]
    if n - leak - ok - missing:
        parts.append(f"{n - leak - ok - missing} not shown within it (an interval holds a limit)")
    if ok:
        parts.append(f"{ok} pass{'es' if ok == 1 else ''} it")
    if missing:
        parts.append(f"{missing} without results")
    return "; ".join(parts) + "."


def _require_extra() -> None:
    """One clear line when the ``report`` extra (matplotlib, jinja2) is missing."""
    import importlib.util

    missing = [m for m in ("matplotlib", "jinja2") if importlib.util.find_spec(m) is None]
    if missing:
        raise TabmemError(f"tabmem report needs {' and '.join(missing)}: pip install 'tabmem[report]'")


def _varies(cells: list[Cell], key: str) -> bool:
    return len({str(c.axes.get(key)) for c in cells if key in c.axes}) > 1
