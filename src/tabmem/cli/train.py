"""``tabmem train``: train a registered generator with checkpoints and per-record memorization tracking.

A thin shell over :func:`tabmem.runs.train.train_to_dir` (see there for the output layout:
model.pt, checkpoint.pt, synthetic.csv, tracking/, summary.json, dynamics.json). Nothing here
prints or logs raw training records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    choice_option,
    count_option,
    distance_option,
    echo_schema,
    echo_warning,
    epochs_option,
    file_option,
    generator_params,
    load_training_table,
    model_option,
    out_dir_option,
    params_option,
    prepare_out_dir,
    preset_option,
    read_user_table,
    seed_option,
    set_torch_threads,
    torch_options,
    training_table_options,
)
from tabmem.errors import TabmemError
from tabmem.memorization.replicas import DUPLICATES
from tabmem.runs.protocol import TRAIN_RUN


@click.command("train")
@training_table_options
@file_option(
    "--holdout",
    "holdout_path",
    "Real rows not trained on, for the holdout baseline (default with --dataset: its test split).",
    path_type=Path,
    default=None,
)
@model_option("Generator name from the registry (tabddpm, tvae, ctgan, ...).")
@click.option(
    "--backbone",
    default=None,
    help="--model llm only: local path or hub name of a causal LM for from_pretrained (default: GPT-2 from scratch).",
)
@preset_option("Named preset of the model (e.g. small, paper); 'none' for the class defaults.")
@params_option("Override a generator parameter (JSON values), repeatable: --param lr=1e-3 --param layers=[512,512].")
@epochs_option("Number of epochs (default: the preset's).")
@seed_option("Random seed (same seed, same model and samples on CPU).")
@count_option("--track-every", "Track per-record memorization every K epochs (0 = off).", default=0, min=0)
@count_option("--track-samples", "Rows sampled per tracked epoch (default |train|).")
@distance_option()
@count_option("--checkpoint-every", "Checkpoint every N epochs (default: --track-every, else epochs/10).")
@torch_options
@out_dir_option()
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the run in --out from its checkpoint (from scratch, same seed, when it has none yet).",
)
@click.option(
    "--overwrite", is_flag=True, help="Replace the training run in --out (only its files; nothing else is deleted)."
)
@choice_option(
    "--duplicates",
    DUPLICATES,
    "Undefined ratios in the final audit: papers = not memorized, replica = an exact copy is a replica.",
    default="papers",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--stop-excess",
    type=float,
    default=None,
    help="Memorization-aware checkpoint choice: the largest allowed upper end of the tracked excess "
    "memorization's 95% interval over --selection-holdout (a fraction: 0.02 = 2 points); model.pt and "
    "synthetic.csv come from the chosen epoch, last_model.pt is the last one.",
)
@click.option(
    "--quality-floor", type=float, default=None, help="--stop-excess: smallest allowed Shape of the tracked sample."
)
@click.option(
    "--choose",
    type=click.Choice(["last", "best-quality"]),
    default="last",
    show_default=True,
    help="--stop-excess: the last eligible tracked epoch, or the eligible one with the best Shape.",
)
@click.option(
    "--stop-early", is_flag=True, help="--stop-excess: also end training once tracked epochs exceed the limit."
)
@count_option("--patience", "--stop-early: tracked epochs in a row above the limit before stopping.", default=1)
@file_option(
    "--selection-holdout",
    "selection_holdout_path",
    "--stop-excess: real rows never trained on, used only to choose the epoch (not the evaluation --holdout).",
    path_type=Path,
    default=None,
)
def train(
    holdout_path: Path | None,
    model: str,
    backbone: str | None,
    preset: str,
    params: tuple[str, ...],
    epochs: int | None,
    seed: int,
    track_every: int,
    track_samples: int | None,
    distance: str,
    checkpoint_every: int | None,
    threads: int | None,
    device: str | None,
    out_dir: Path,
    resume: bool,
    overwrite: bool,
    duplicates: str,
    quiet: bool,
    stop_excess: float | None,
    quality_floor: float | None,
    choose: str,
    stop_early: bool,
    patience: int,
    selection_holdout_path: Path | None,
    **table: Any,
) -> None:
    """Train a generator, tracking per-record memorization; write the model, synthetic.csv and dynamics.json."""
    from tabmem.generators import GENERATORS, get_generator

    if resume and overwrite:
        raise TabmemError("--resume and --overwrite exclude each other")
    generator_cls = GENERATORS.get(model)  # an unknown name fails before any data is read
    p = generator_params(params, epochs=epochs, device=device)
    if backbone is not None and "backbone" not in generator_cls._param_names():
        raise TabmemError(f"--backbone only applies to generators built on a language model (llm), not {model!r}")
    if backbone is not None:
        p["backbone"] = backbone
    preset_name = None if preset.lower() == "none" else preset
    # the preset and every parameter are checked before any table is read
    get_generator(model, preset=preset_name, dataset=table["dataset"], **p).check_params()
    from tabmem.runs.train import check_selection

    has_sel = selection_holdout_path is not None
    check_selection(stop_excess, quality_floor, choose, stop_early, patience, track_every, has_sel)
    prepare_out_dir(out_dir, kind=TRAIN_RUN)
    loaded = load_training_table(**table)
    train_df, schema, holdout, source = loaded.table, loaded.schema, loaded.test, dict(loaded.source)
    if loaded.inferred:
        echo_schema(schema, str(table["train"]))
    if holdout_path is not None:
        holdout = read_user_table(holdout_path, encoding=table["encoding"], option="--holdout")
        source["holdout"] = str(holdout_path)
    selection_holdout = None
    if selection_holdout_path is not None:
        selection_holdout = read_user_table(
            selection_holdout_path, encoding=table["encoding"], option="--selection-holdout"
        )
        source["selection_holdout"] = str(selection_holdout_path)
    set_torch_threads(threads)
    from tabmem.runs.train import train_to_dir

    summary = train_to_dir(
        train_df,
        schema,
        out_dir,
        model=model,
        preset=preset_name,
        params=p,
        seed=seed,
        track_every=track_every,
        track_samples=track_samples,
        distance=distance,
        holdout=holdout,
        checkpoint_every=checkpoint_every,
        resume=resume,
        progress=not quiet,
        source=source,
        dataset=table["dataset"],
        overwrite=overwrite,
        duplicates=duplicates,
        on_warning=echo_warning,
        stop_excess=stop_excess,
        quality_floor=quality_floor,
        choose=choose,
        stop_early=stop_early,
        patience=patience,
        selection_holdout=selection_holdout,
    )
    rate = summary["memorization_rate"]
    line = (
        f"{model}: {summary['epochs']} epochs in {summary['train_seconds']:.0f}s; memorization rate {100 * rate:.2f}%"
    )
    if summary.get("holdout_memorization_rate") is not None:
        line += f" (holdout baseline {100 * summary['holdout_memorization_rate']:.2f}%)"
    line += f"; exact copies {100 * summary['exact_copy_rate']:.2f}%"
    if summary.get("holdout_exact_copy_rate") is not None:
        line += f" (holdout {100 * summary['holdout_exact_copy_rate']:.2f}%)"
    click.echo(line)
    if summary.get("selection"):
        sel = summary["selection"]
        lo, hi = sel["excess_vs_selection_holdout_ci"]
        click.echo(
            f"chose epoch {sel['chosen_epoch']} of {sel['epochs_trained']} ({sel['reason']}); excess over the selection "
            f"holdout {100 * sel['excess_vs_selection_holdout']:+.2f} pts [{100 * lo:+.2f}, {100 * hi:+.2f}]"
        )
    click.echo(f"wrote {out_dir}/model.pt, synthetic.csv, summary.json" + (", dynamics.json" if track_every else ""))
