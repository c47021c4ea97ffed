"""``tabmem augment``: add rows made by a training-data augmenter (TabCutMix, TabCutMixPlus, SMOTE, Mixup, IJF).

A thin shell over :mod:`tabmem.mitigation`: ``DIR/augmented.csv`` holds the training rows unchanged
and in order, followed by the new rows; ``DIR/summary.json`` has ``method``, ``ratio``,
``n_original``, ``n_new``, ``seed``, ``params``. The terminal shows counts only, never records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    count_option,
    load_training_table,
    out_dir_option,
    params_option,
    parse_params,
    prepare_out_dir,
    ratio_option,
    seed_option,
    training_table_options,
)
from tabmem.runs.protocol import AUGMENT_RUN, RunDirectory


@click.command("augment")
@training_table_options
@click.option(
    "--method",
    required=True,
    help="Augmenter: tabcutmix, tabcutmix-plus, smote, mixup or ijf (label-conditioned ones need --target).",
)
@ratio_option("--ratio", "New rows as a fraction of the training rows: int(ratio * N).")
@count_option("--n-new", "Number of new rows (overrides --ratio).", min=0)
@params_option("Augmenter parameter (JSON values), repeatable: --param mode=paper --param threshold=0.3.")
@seed_option("Random seed (same seed, same rows).")
@out_dir_option()
def augment(
    method: str,
    ratio: float,
    n_new: int | None,
    params: tuple[str, ...],
    seed: int,
    out_dir: Path,
    **table: Any,
) -> None:
    """Append augmented rows to a training table (new rows only are generated; the originals are unchanged)."""
    from tabmem._io import write_frame, write_json
    from tabmem.mitigation import augmented_table, get_augmenter

    p = parse_params(params)
    aug = get_augmenter(method, **p)  # unknown methods and arguments fail before any data is read
    loaded = load_training_table(**table)
    prepare_out_dir(out_dir, kind=AUGMENT_RUN)
    click.get_current_context().with_resource(RunDirectory(out_dir, AUGMENT_RUN).lock())  # one writer
    new = aug.fit(loaded.table, loaded.schema).augment(n_new=n_new, ratio=ratio, random_state=seed)
    write_frame(out_dir / "augmented.csv", augmented_table(loaded.table, new))
    summary = {
        "method": method,
        "ratio": ratio if n_new is None else None,
        "n_original": len(loaded.table),
        "n_new": len(new),
        "seed": seed,
        "params": aug.get_params(),
        "target": loaded.schema.target,
        "source": loaded.source,
    }
    write_json(out_dir / "summary.json", summary)
    click.echo(
        f"{method}: {len(new)} new rows appended to {len(loaded.table)} training rows "
        f"-> {out_dir}/augmented.csv ({len(loaded.table) + len(new)} rows), summary.json"
    )
