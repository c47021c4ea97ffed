"""``tabmem report``: one self-contained HTML page from a study, a train run or audit/attack/quality/risk outputs.

* :mod:`.readers`: one function per input kind, all producing the same :mod:`.model`;
* :mod:`.decision`: cells handed to the rule engine (:mod:`tabmem.gate`): ``tabmem check``;
* :mod:`.verdict`: what the numbers say, in plain words, and the policy's badge;
* :mod:`.plots`: matplotlib figures as inline SVG;
* :mod:`.render`: the Jinja2 page (``templates/``).

:func:`write_report` is the library call behind the command.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tabmem._io import write_text
from tabmem.errors import TabmemError, name_setting, suggest
from tabmem.gate import Policy, load_policy
from tabmem.report.model import Attacks, Audit, Cell, Quality, ReportData, Risk, Training
from tabmem.report.readers import detect_kind, load_report_data
from tabmem.report.render import render_report

__all__ = [
    "write_report",
    "load_report_data",
    "render_report",
    "detect_kind",
    "ReportData",
    "Cell",
    "Audit",
    "Attacks",
    "Quality",
    "Training",
    "Risk",
]


def _show() -> str:
    """``show_records=True`` in the library, ``--show-records`` under the command line."""
    return name_setting("show_records=True", "--show-records")


def write_report(
    path: str | Path,
    out: str | Path | None = None,
    *,
    show_records: bool = False,
    train: pd.DataFrame | None = None,
    data_dir: str | Path | None = None,
    n_records: int = 10,
    policy: Policy | str | Path | None = None,
) -> Path:
    """Read ``path`` (any input of :func:`load_report_data`) and write the HTML report; returns its path.

    ``out`` defaults to ``path/report.html``. With ``show_records`` the ``n_records``
    most-replicated training records of each cell are shown with their values, read from
    ``train`` or from the source the run recorded (a registered dataset, found in ``data_dir``,
    or a training file); otherwise the report holds positions and counts only. The verdict is
    ``policy``'s (a :class:`~tabmem.gate.Policy`, a built-in name or a TOML file; ``standard`` when None).
    """
    chosen = policy if isinstance(policy, Policy) else load_policy(policy)
    data = load_report_data(path)
    out_path = Path(out) if out is not None else Path(path) / "report.html"
    if out_path.exists() and out_path.is_dir():
        raise TabmemError(
            f"{name_setting('out', '--out')}: {str(out_path)!r} is a directory; give the HTML file to write"
        )
    records = _records(data, train, data_dir, n_records) if show_records else None
    return write_text(out_path, render_report(data, records=records, policy=chosen))


def _records(
    data: ReportData, train: pd.DataFrame | None, data_dir: str | Path | None, n: int
) -> dict[str, pd.DataFrame]:
    """Per cell: its most-replicated training records with their values and replica counts."""
    out: dict[str, pd.DataFrame] = {}
    for cell in data.cells:
        if cell.audit is None or cell.audit.record_counts is None:
            continue
        table = train if train is not None else _training_table(cell, data_dir)
        counts = cell.audit.record_counts
        if len(table) != counts.size:
            raise TabmemError(
                f"{_show()}: the training table has {len(table):,} rows but cell {cell.name!r} counts replicas "
                f"for {counts.size:,} training records: it is not that cell's training table"
            )
        order = np.lexsort((np.arange(counts.size), -counts))[:n]
        order = order[counts[order] > 0]
        shown = table.iloc[order].reset_index(drop=True)
        shown.insert(0, "replicas", counts[order])
        shown.insert(0, "training row", order)
        out[cell.name] = shown
    return out


def _training_table(cell: Cell, data_dir: str | Path | None) -> pd.DataFrame:
    source = cell.config.get("source") if isinstance(cell.config.get("source"), dict) else {}
    if source.get("dataset"):
        from tabmem.data.datasets import load_dataset

        return load_dataset(source["dataset"], data_dir=data_dir).train
    if source.get("train"):
        from tabmem.data.io import read_table

        p = Path(source["train"])
        if not p.is_file():
            raise TabmemError(f"{_show()}: cell {cell.name!r} was trained on {str(p)!r}, which is not there now")
        return read_table(p)
    ways = [w for w in (suggest("train=TABLE", "--train", "FILE"), suggest("", "--dataset", "NAME")) if w]
    raise TabmemError(
        f"{_show()}: cell {cell.name!r} does not record its training table; pass {' or '.join(ways) or 'train=TABLE'}"
    )
