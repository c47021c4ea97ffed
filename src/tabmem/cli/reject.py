"""``tabmem reject``: drop the replicas of training rows from a synthetic table made by any tool.

A thin shell over :meth:`tabmem.mitigation.rejection.RejectionSampler.filter` (no top-up: the
table has what it has; ``tabmem sample --reject-replicas`` draws more from a tabmem model). The
kept rows are written in their order with their values as read; prints counts only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    distance_option,
    echo_schema,
    file_option,
    load_training_table,
    n_jobs_option,
    out_file_option,
    prepare_out_file,
    read_user_table,
    threshold_option,
    training_table_options,
)
from tabmem.errors import TabmemError


@click.command("reject")
@training_table_options
@file_option("--synthetic", None, "Synthetic table to filter (CSV or Parquet).", path_type=Path, required=True)
@distance_option()
@threshold_option()
@file_option("--report", "report_path", "Also write the counts as JSON to this file.", path_type=Path)
@n_jobs_option("Worker threads of the neighbour search (default: every CPU available).")
@out_file_option("The synthetic table without its replicas (.csv or .parquet).")
def reject(
    synthetic: Path,
    distance: str,
    threshold: float,
    report_path: Path | None,
    n_jobs: int | None,
    out_path: Path,
    **table: Any,
) -> None:
    """Write SYNTHETIC without the rows that are replicas of a training row (d1/d2 < threshold, or exact copies)."""
    from tabmem._io import write_frame, write_json
    from tabmem.mitigation.rejection import RejectionSampler

    out_path = prepare_out_file(out_path, suffixes=(".csv", ".parquet", ".pq"))
    if out_path.resolve() == synthetic.resolve():
        raise TabmemError(f"--out: {str(out_path)!r} is the --synthetic file: choose another file name")
    loaded = load_training_table(**table)
    if loaded.inferred:
        echo_schema(loaded.schema, str(table["train"]))
    syn = read_user_table(synthetic, encoding=table["encoding"], option="--synthetic")
    if len(syn) == 0:
        raise TabmemError(f"{synthetic}: the synthetic table is empty")
    sampler = RejectionSampler(distance, threshold, n_jobs=n_jobs).fit(loaded.table, loaded.schema)
    kept, report = sampler.filter(syn)
    write_frame(out_path, kept)
    if report_path is not None:
        write_json(report_path, report.to_dict())
    click.echo(
        f"kept {report.n_kept:,} of {report.n_drawn:,} rows; rejected {report.n_rejected:,} "
        f"({100 * report.rejection_rate:.1f}%) as replicas ({report.distance}, d1/d2 < {report.threshold:.4g}) "
        f"-> {out_path}"
    )
