"""``tabmem prune``: the training table without the top fraction of a ranking's records, for retraining elsewhere.

A thin shell over DynamicCut's pruning (:func:`tabmem.mitigation.dynamiccut.retrain_table`, one
implementation): the ranking (what ``tabmem rank --out`` writes, CSV or Parquet with its ``.json``
sidecar) must be of this training table (same fingerprint and size); the ``ceil(p N)`` records of
rank <= ``ceil(p N)`` are removed, the others kept in their order with their values as read. The
transfer path (rank with tabmem's TabDDPM, prune, retrain with your own tool, audit) is in
docs/mitigation.md. Prints counts only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    echo_schema,
    echo_warning,
    file_option,
    load_training_table,
    out_file_option,
    prepare_out_file,
    training_table_options,
)
from tabmem.errors import TabmemError

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


@click.command("prune")
@training_table_options
@file_option(
    "--ranking",
    "ranking_path",
    "A ranking of this training table (`tabmem rank --out`: .csv or .parquet, its .json sidecar beside it).",
    path_type=Path,
    required=True,
)
@click.option(
    "--prune",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    required=True,
    help="Fraction of training records removed, from the top of the ranking: ceil(p N).",
)
@out_file_option("The pruned training table to write (.csv or .parquet).")
def prune(ranking_path: Path, prune: float, out_path: Path, **table: Any) -> None:
    """Write the training table without the top FRACTION of a ranking's records (retrain with any tool)."""
    from tabmem._io import write_frame
    from tabmem.data.fingerprint import table_fingerprint
    from tabmem.data.schema import validate
    from tabmem.mitigation.dynamiccut import retrain_table
    from tabmem.mitigation.ranking import Ranking, n_to_prune

    out_path = prepare_out_file(out_path, suffixes=TABLE_SUFFIXES)
    for flag, given in (("--train", table["train"]), ("--ranking", ranking_path)):
        if given is not None and Path(given).resolve() == out_path.resolve():
            raise TabmemError(f"--out: {str(out_path)!r} is the {flag} file: choose another file name")
    ranking = Ranking.load(ranking_path)
    loaded = load_training_table(**table)
    if loaded.inferred:
        echo_schema(loaded.schema, str(table["train"]))
    clean = validate(loaded.table, loaded.schema, name="training", nan="match")
    ranking.check_table(table_fingerprint(clean), len(clean), what=f"--ranking {str(ranking_path)!r}")
    if ranking.fingerprint is None:
        echo_warning(
            f"--ranking {str(ranking_path)!r} has no .json sidecar: only its size could be checked against the "
            "training table, not that it ranks this table's records"
        )
    try:
        n_to_prune(len(clean), prune)
    except TabmemError as exc:
        raise TabmemError(f"--prune: {exc}") from None
    pruned = retrain_table(clean, loaded.schema, ranking, prune)
    write_frame(out_path, pruned.table)
    click.echo(
        f"removed {len(pruned.pruned_rows)} of {len(clean)} training records (the top {100 * prune:g}% of the "
        f"{ranking.method} ranking); {pruned.n_kept} kept -> {out_path}"
    )
