"""``tabmem rank``: rank the training records of a tracked run (``tabmem train --track-every``, ``tabmem track``) and save the ranking.

A thin shell over :func:`tabmem.mitigation.rank_records`. The ranking file (``train_row, score,
rank`` plus its ``.json`` sidecar with the training table's fingerprint) can be given to
``tabmem dynamiccut --ranking`` for any generator trained on the same table (transfer), or to
``tabmem prune`` for retraining with another tool. Prints
counts only.
"""

from __future__ import annotations

from pathlib import Path

import click

from tabmem.cli._options import (
    choice_option,
    count_option,
    dir_option,
    out_file_option,
    prepare_out_file,
    seed_option,
)
from tabmem.mitigation.ranking import RANKING_METHODS, RANKING_SUFFIXES


@click.command("rank")
@dir_option(
    "--run",
    "run_dir",
    "A tracked run directory (`tabmem train --track-every`, `tabmem track`) or its tracking/ directory.",
    exists=True,
    path_type=Path,
    required=True,
)
@choice_option(
    "--by",
    RANKING_METHODS,
    "intensity (DynamicCut), count (replicas at the last tracked epoch), first-memorization, random.",
    default="intensity",
    dest="method",
)
@count_option("--top-k", "k of the intensity score.", default=3)
@count_option("--warmup-epochs", "Use only tracked epochs <= T (intensity, first-memorization); default: all.")
@seed_option("Tie-break seed.")
@out_file_option("ranking file to write (.csv or .parquet; its .json sidecar is written beside it).")
def rank(run_dir: Path, method: str, top_k: int, warmup_epochs: int | None, seed: int, out_path: Path) -> None:
    """Rank training records by memorization from a tracked run; write ranking.csv (+ .json sidecar)."""
    from tabmem.mitigation import rank_records

    out_path = prepare_out_file(out_path, suffixes=RANKING_SUFFIXES)
    prepare_out_file(out_path.with_suffix(".json"), "--out (its .json sidecar)")
    ranking = rank_records(run_dir, method, top_k=top_k, warmup_epochs=warmup_epochs, random_state=seed)
    ranking.save(out_path)
    n_pos = int((ranking.table["score"] > 0).sum())
    click.echo(
        f"{method}: ranked {ranking.n_train} training records ({n_pos} with a positive score) -> {out_path} "
        f"(+ {out_path.with_suffix('.json').name})"
    )
