"""``tabmem track``: per-record memorization tracking from the synthetic snapshots any generator wrote.

A thin shell over :func:`tabmem.runs.track.track_to_dir` (layout there: ``snapshots.csv``,
``tracking/``, ``synthetic.csv``, ``summary.json``, ``dynamics.json``): the run directory reads as a
``tabmem train --track-every`` run for ``tabmem rank``, ``report`` and ``attack --run``. Prints
aggregates only, never training records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    choice_option,
    distance_option,
    echo_schema,
    echo_warning,
    file_option,
    load_training_table,
    out_dir_option,
    prepare_out_dir,
    read_user_table,
    seed_option,
    training_table_options,
)
from tabmem.errors import TabmemError
from tabmem.memorization.replicas import DUPLICATES
from tabmem.runs.protocol import TRACK_RUN


@click.command("track")
@training_table_options
@click.option(
    "--snapshots",
    required=True,
    help="Glob of the synthetic tables a generator wrote during training (CSV or Parquet; quote it; ** recurses); "
    "the epoch is the last integer in each file name.",
)
@file_option(
    "--holdout",
    "holdout_path",
    "Real rows not trained on, for the final audit's baseline (default with --dataset: its test split).",
    path_type=Path,
    default=None,
)
@click.option(
    "--generator",
    default="external",
    show_default=True,
    help="Name of the generator that wrote the snapshots (a label in config.json and the report).",
)
@distance_option()
@choice_option(
    "--duplicates",
    DUPLICATES,
    "Undefined ratios in the final audit: papers = not memorized, replica = an exact copy is a replica.",
    default="papers",
)
@seed_option("Seed of the final audit's bootstrap intervals and distance evidence.")
@out_dir_option()
@click.option(
    "--resume", is_flag=True, help="Continue the run in --out (epochs scored are kept; new snapshots are added)."
)
@click.option(
    "--overwrite", is_flag=True, help="Replace the track run in --out (only its files; nothing else is deleted)."
)
def track(
    snapshots: str,
    holdout_path: Path | None,
    generator: str,
    distance: str,
    duplicates: str,
    seed: int,
    out_dir: Path,
    resume: bool,
    overwrite: bool,
    **table: Any,
) -> None:
    """Track per-record memorization from synthetic snapshots of any generator; write a tracked run directory."""
    if resume and overwrite:
        raise TabmemError("--resume and --overwrite exclude each other")
    from tabmem.runs.track import find_snapshots, track_to_dir

    found = find_snapshots(snapshots)  # a bad glob or file name fails before any table is read
    prepare_out_dir(out_dir, kind=TRACK_RUN)
    loaded = load_training_table(**table)
    holdout, source = loaded.test, dict(loaded.source)
    if loaded.inferred:
        echo_schema(loaded.schema, str(table["train"]))
    if holdout_path is not None:
        holdout = read_user_table(holdout_path, encoding=table["encoding"], option="--holdout")
        source["holdout"] = str(holdout_path)
    source["snapshots"] = snapshots
    summary = track_to_dir(
        loaded.table,
        loaded.schema,
        [s.path for s in found],
        out_dir,
        holdout=holdout,
        distance=distance,
        generator=generator,
        seed=seed,
        resume=resume,
        overwrite=overwrite,
        source=source,
        duplicates=duplicates,
        on_warning=echo_warning,
        read=lambda path: read_user_table(path, encoding=table["encoding"], option="--snapshots"),
    )
    line = (
        f"{generator}: {summary['n_snapshots']} snapshots (epochs {found[0].epoch}-{found[-1].epoch}); "
        f"final memorization rate {100 * summary['memorization_rate']:.2f}%"
    )
    if summary.get("holdout_memorization_rate") is not None:
        line += f" (holdout baseline {100 * summary['holdout_memorization_rate']:.2f}%)"
    click.echo(line)
    click.echo(f"wrote {out_dir}/tracking/, synthetic.csv, summary.json, dynamics.json")
