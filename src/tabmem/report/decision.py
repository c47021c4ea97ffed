"""The release decision over output directories: cells read by the readers, judged by :mod:`tabmem.gate`.

:func:`measured_of` hands a cell's summaries to the rule engine as written; :func:`check_dirs` is
``tabmem check``: every directory given (a study, a train run, an audit/attack/quality/risk
output, or a directory of those) read into cells, every cell judged by one policy. The report's
verdict (:func:`tabmem.report.verdict.cell_verdict`) calls the same engine on the same cells, so
the two never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tabmem.errors import TabmemError
from tabmem.gate import Measured, Policy, Scorecard, evaluate, figures_of
from tabmem.report.model import Cell
from tabmem.report.readers import load_report_data

__all__ = ["check_dirs", "measured_of", "cells_of"]


def measured_of(cell: Cell, label: str | None = None) -> Measured:
    """What the rule engine judges of ``cell``: its audits (by distance), attack, quality and risk summaries."""
    risk = getattr(cell, "risk", None)
    audits = cell.audits or ({str(cell.audit.get("distance", "")): cell.audit} if cell.audit is not None else {})
    return Measured(
        label=label or cell.name,
        audits={d: a.summary for d, a in audits.items()},
        attacks=cell.attacks.summary if cell.attacks is not None else None,
        quality=cell.quality.summary if cell.quality is not None else None,
        risk=risk.summary if risk is not None else None,
    )


def cells_of(paths: Sequence[str | Path]) -> list[tuple[str, Cell]]:
    """``(label, cell)`` for every cell of every directory; labels name the directory when several are given."""
    out: list[tuple[str, Cell]] = []
    for path in paths:
        data = load_report_data(path)
        for cell in data.cells:
            single = len(data.cells) == 1 and data.kind != "study"
            label = str(path) if single else f"{path}/{cell.name}" if len(paths) > 1 else cell.name
            out.append((label, cell))
    return out


def check_dirs(paths: Sequence[str | Path], policy: Policy) -> Scorecard:
    """``tabmem check``: ``policy`` applied to every cell of ``paths``; one line (TabmemError) when none holds a figure."""
    if not paths:
        raise TabmemError(
            "RESULTS: give at least one output directory (a study, a run, an audit/attack/quality/risk output)"
        )
    measured = [measured_of(cell, label) for label, cell in cells_of(paths)]
    judged = {r.figure for r in policy.rules}
    if not any(f.name in judged for m in measured for f in figures_of(m)):
        names = ", ".join(repr(str(p)) for p in paths)
        raise TabmemError(
            f"RESULTS: {names} hold no figure the {policy.name!r} policy judges (its rules read "
            f"{', '.join(sorted(judged))}); give the output of tabmem audit (with --holdout), attack, risk or quality"
        )
    return evaluate(policy, measured)
