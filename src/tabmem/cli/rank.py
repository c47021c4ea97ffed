"""``tabmem rank``: rank the training records of a tracked run (``tabmem train --track-every``) and save the ranking.

A thin shell over :func:`tabmem.mitigation.rank_records`. The ranking file (``train_row, score,
rank`` plus its ``.json`` sidecar with the training table's fingerprint) can be given to
``tabmem dynamiccut --ranking`` for any generator trained on the same table (transfer). Prints
counts only.
"""

from __future__ import annotations

from pathlib import Path

import click

from tabmem.mitigation.ranking import RANKING_METHODS


@click.command("rank")
@click.option(
    "--run",
    "run_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="A `tabmem train` run directory with tracking (or its tracking/ directory).",
)
@click.option(
    "--by",
    "method",
    type=click.Choice(list(RANKING_METHODS)),
    default="intensity",
    show_default=True,
    help="intensity (DynamicCut), count (replicas at the last tracked epoch), first-memorization, random.",
)
@click.option("--top-k", type=click.IntRange(min=1), default=3, show_default=True, help="k of the intensity score.")
@click.option(
    "--warmup-epochs",
    type=click.IntRange(min=1),
    default=None,
    help="Use only tracked epochs <= T (intensity, first-memorization); default: all.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Tie-break seed.")
@click.option(
    "--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), required=True, help="ranking CSV to write."
)
def rank(run_dir: Path, method: str, top_k: int, warmup_epochs: int | None, seed: int, out_path: Path) -> None:
    """Rank training records by memorization from a tracked run; write ranking.csv (+ .json sidecar)."""
    from tabmem.mitigation import rank_records

    ranking = rank_records(run_dir, method, top_k=top_k, warmup_epochs=warmup_epochs, random_state=seed)
    ranking.save(out_path)
    n_pos = int((ranking.table["score"] > 0).sum())
    click.echo(
        f"{method}: ranked {ranking.n_train} training records ({n_pos} with a positive score) -> {out_path} "
        f"(+ {out_path.with_suffix('.json').name})"
    )
