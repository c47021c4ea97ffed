"""``tabmem train``: train a registered generator with checkpoints and per-record memorization tracking.

A thin shell over :func:`tabmem.experiments.train_to_dir` (see there for the output layout:
model.pt, checkpoint.pt, synthetic.csv, tracking/, summary.json, dynamics.json). Nothing here
prints or logs raw training records.
"""

from __future__ import annotations

from pathlib import Path

import click

from tabmem.cli._options import (
    default_threads,
    echo_schema,
    echo_threads,
    echo_warning,
    load_command_table,
    parse_params,
    prepare_out_dir,
    read_user_table,
    seed_option,
    torch_options,
    training_table_options,
)
from tabmem.errors import TabmemError
from tabmem.memorization.replicas import DUPLICATES
from tabmem.neighbors.distances import DISTANCES


@click.command("train")
@training_table_options
@click.option(
    "--holdout",
    "holdout_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Real rows not trained on, for the holdout baseline (default with --dataset: its test split).",
)
@click.option(
    "--model",
    default="tabddpm",
    show_default=True,
    help="Generator name from the registry (tabddpm, tvae, ctgan, ...).",
)
@click.option(
    "--backbone",
    default=None,
    help="--model llm only: local path or hub name of a causal LM for from_pretrained (default: GPT-2 from scratch).",
)
@click.option(
    "--preset",
    default="small",
    show_default=True,
    help="Named preset of the model (e.g. small, paper); 'none' for the class defaults.",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a generator parameter (JSON values), repeatable: --param lr=1e-3 --param layers=[512,512].",
)
@click.option("--epochs", type=click.IntRange(min=1), default=None, help="Number of epochs (default: the preset's).")
@seed_option("Random seed (same seed, same model and samples on CPU).")
@click.option(
    "--track-every",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Track per-record memorization every K epochs (0 = off).",
)
@click.option(
    "--track-samples",
    type=click.IntRange(min=1),
    default=None,
    help="Rows sampled per tracked epoch (default |train|).",
)
@click.option(
    "--distance", type=click.Choice(DISTANCES.names()), default="fang2024", show_default=True, help="Replica distance."
)
@click.option(
    "--checkpoint-every",
    type=click.IntRange(min=1),
    default=None,
    help="Checkpoint every N epochs (default: --track-every, else epochs/10).",
)
@torch_options
@click.option(
    "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output directory."
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the run in --out from its checkpoint (from scratch, same seed, when it has none yet).",
)
@click.option(
    "--overwrite", is_flag=True, help="Replace the training run in --out (only its files; nothing else is deleted)."
)
@click.option(
    "--duplicates",
    type=click.Choice(DUPLICATES),
    default="papers",
    show_default=True,
    help="Undefined ratios in the final audit: papers = not memorized, replica = an exact copy is a replica.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def train(
    train: str | None,
    dataset: str | None,
    data_dir: str | None,
    categorical: tuple[str, ...],
    numerical: tuple[str, ...],
    target: str | None,
    encoding: str,
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
) -> None:
    """Train a generator, tracking per-record memorization; write the model, synthetic.csv and dynamics.json."""
    import torch

    from tabmem.generators import GENERATORS, get_generator

    if resume and overwrite:
        raise TabmemError("--resume and --overwrite exclude each other")
    generator_cls = GENERATORS.get(model)  # an unknown name fails before any data is read
    p = parse_params(params)
    if backbone is not None and "backbone" not in generator_cls._param_names():
        raise TabmemError(f"--backbone only applies to generators built on a language model (llm), not {model!r}")
    if epochs is not None:
        p["epochs"] = epochs
    if device is not None:
        p["device"] = device
    if backbone is not None:
        p["backbone"] = backbone
    preset_name = None if preset.lower() == "none" else preset
    # the preset and every parameter are checked before any table is read
    get_generator(model, preset=preset_name, dataset=dataset, **p).check_params()
    prepare_out_dir(out_dir)
    loaded = load_command_table()
    train_df, schema, holdout, source = loaded.table, loaded.schema, loaded.test, dict(loaded.source)
    if loaded.inferred:
        echo_schema(schema, str(train))
    if holdout_path is not None:
        holdout = read_user_table(holdout_path, encoding=encoding, option="--holdout")
        source["holdout"] = str(holdout_path)
    n_threads = threads or default_threads()
    torch.set_num_threads(n_threads)
    echo_threads(1, n_threads, "(torch)")
    from tabmem.experiments.training import train_to_dir

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
        dataset=dataset,
        overwrite=overwrite,
        duplicates=duplicates,
        on_warning=echo_warning,
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
    click.echo(f"wrote {out_dir}/model.pt, synthetic.csv, summary.json" + (", dynamics.json" if track_every else ""))
