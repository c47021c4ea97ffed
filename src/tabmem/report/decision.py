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

__all__ = ["check_dirs", "measured_in", "measured_of"]


def measured_of(cell: Cell, label: str | None = None) -> Measured:
    """What the rule engine judges of ``cell``: its audits (by distance), attack, quality and risk summaries."""
    audits = cell.audits or ({str(cell.audit.get("distance", "")): cell.audit} if cell.audit is not None else {})
    return Measured(
        label=label or cell.name,
        audits={d: a.summary for d, a in audits.items()},
        attacks=cell.attacks.summary if cell.attacks is not None else None,
        quality=cell.quality.summary if cell.quality is not None else None,
        risk=cell.risk.summary if cell.risk is not None else None,
    )


def measured_in(paths: Sequence[str | Path]) -> list[Measured]:
    """What ``tabmem check`` judges in ``paths``: each cell of a study or of a directory of cells on its own;
    directories that each hold one run (an audit, an attack, a quality or risk output, a train run) are
    the measures of one synthetic table and are judged together (two of one kind: one line)."""
    out: list[Measured] = []
    single: list[tuple[str, Measured]] = []
    for path in paths:
        data = load_report_data(path)
        if data.kind in ("study", "collection") or len(data.cells) != 1:
            prefix = f"{path}/" if len(paths) > 1 else ""
            out.extend(measured_of(cell, f"{prefix}{cell.name}") for cell in data.cells)
        else:
            single.append((str(path), measured_of(data.cells[0], str(path))))
    if single:
        out.insert(0, _together(single))
    return out


def _together(runs: list[tuple[str, Measured]]) -> Measured:
    """One table's measures from several run directories; the same part twice is refused, naming both."""
    audits: dict[str, object] = {}
    parts: dict[str, tuple[str, object]] = {}
    for path, m in runs:
        for distance, audit in m.audits.items():
            if distance in audits:
                raise TabmemError(
                    f"RESULTS: two {distance} audits given ({audits[distance][0]!r} and {path!r}): check one "  # type: ignore[index]
                    "synthetic table at a time, or give the study that holds them"
                )
            audits[distance] = (path, audit)
        for kind in ("attacks", "quality", "risk"):
            value = getattr(m, kind)
            if value is None:
                continue
            if kind in parts:
                raise TabmemError(
                    f"RESULTS: two {kind} outputs given ({parts[kind][0]!r} and {path!r}): check one synthetic "
                    "table at a time, or give the study that holds them"
                )
            parts[kind] = (path, value)
    return Measured(
        label=" + ".join(p for p, _ in runs),
        audits={d: a for d, (_, a) in audits.items()},  # type: ignore[misc]
        **{k: v for k, (_, v) in parts.items()},  # type: ignore[arg-type]
    )


def check_dirs(paths: Sequence[str | Path], policy: Policy) -> Scorecard:
    """``tabmem check``: ``policy`` applied to every table of ``paths`` (:func:`measured_in`); one line
    (TabmemError) when none holds a figure the policy judges."""
    if not paths:
        raise TabmemError(
            "RESULTS: give at least one output directory (a study, a run, an audit/attack/quality/risk output)"
        )
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise TabmemError(f"RESULTS: {str(p)!r} does not exist")
        if not p.is_dir():
            raise TabmemError(f"RESULTS: {str(p)!r} is a file; give the directory a tabmem command wrote")
    measured = measured_in(paths)
    judged = {r.figure for r in policy.rules}
    if not any(f.name in judged for m in measured for f in figures_of(m)):
        names = ", ".join(repr(str(p)) for p in paths)
        raise TabmemError(
            f"RESULTS: {names} hold no figure the {policy.name!r} policy judges (its rules read "
            f"{', '.join(sorted(judged))}); give the output of tabmem audit (with --holdout), attack, risk or quality"
        )
    return evaluate(policy, measured)
