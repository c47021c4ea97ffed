"""``tabmem dynamiccut``: warm up with tracking, rank records, prune the top fraction, retrain from scratch.

A thin shell over :func:`tabmem.experiments.dynamiccut_to_dir` (directory layout there:
``warmup/``, ``ranking.csv``, ``retrain/``, ``synthetic.csv``, ``summary.json``). The terminal shows
one line per stage and a before/after table of aggregates; no record values are printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    default_threads,
    load_command_table,
    parse_params,
    prepare_out_dir,
    read_user_table,
    seed_option,
    torch_options,
    training_table_options,
)
from tabmem.mitigation.ranking import RANKING_METHODS
from tabmem.neighbors.distances import DISTANCES


@click.command("dynamiccut")
@training_table_options
@click.option(
    "--holdout",
    "holdout_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Real rows never trained on: the baseline (default with --dataset: its test split).",
)
@click.option(
    "--test",
    "test_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Real test rows for MLE (default with --dataset: its test split).",
)
@click.option("--model", default="tabddpm", show_default=True, help="Generator (tabddpm, tvae, ctgan, ...).")
@click.option(
    "--preset", default="small", show_default=True, help="Preset of the model; 'none' for the class defaults."
)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Generator parameter (JSON), repeatable.")
@click.option("--epochs", type=click.IntRange(min=1), default=None, help="Full schedule (default: the preset's).")
@click.option(
    "--warmup-epochs",
    type=click.IntRange(min=1),
    default=None,
    help="Stage 1 trains the first T epochs of the full schedule with tracking (intensity, first-memorization).",
)
@click.option("--track-every", type=click.IntRange(min=1), default=None, help="Track memorization every K epochs.")
@click.option(
    "--top-k",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Intensity = mean of each record's k largest per-epoch Mem-AUC.",
)
@click.option(
    "--prune",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.10,
    show_default=True,
    help="Fraction of training records removed: ceil(p N).",
)
@click.option(
    "--prune-by",
    type=click.Choice(list(RANKING_METHODS)),
    default="intensity",
    show_default=True,
    help="Ranking: intensity (DynamicCut), count (oracle: full run), first-memorization, random (control).",
)
@click.option(
    "--ranking",
    "ranking_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A ranking.csv of this table (e.g. from another generator: transfer); skips stage 1.",
)
@click.option("--mix", default=None, help="Augmenter applied to the pruned table (DynamicCutMix: tabcutmix).")
@click.option(
    "--mix-ratio",
    type=click.FloatRange(min=0, min_open=True),
    default=0.3,
    show_default=True,
    help="New rows of --mix as a fraction of the pruned table.",
)
@click.option("--mix-param", "mix_params", multiple=True, metavar="KEY=VALUE", help="Parameter of --mix, repeatable.")
@click.option(
    "--distance", type=click.Choice(DISTANCES.names()), default="fang2024", show_default=True, help="Replica distance."
)
@click.option(
    "--baseline",
    "baseline_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="A `tabmem train` run of the same model on the whole table, shown as 'before'.",
)
@click.option("--no-quality", is_flag=True, help="Skip Shape/Trend/MLE.")
@click.option(
    "--mle-grid",
    type=click.Choice(["tabsyn", "tiny"]),
    default="tabsyn",
    show_default=True,
    help="XGBoost grid of MLE.",
)
@seed_option("Random seed (training, tracking, tie-breaks, augmentation).")
@torch_options
@click.option(
    "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output directory."
)
@click.option("--resume", is_flag=True, help="Continue an interrupted run in --out at the stage where it stopped.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def dynamiccut(
    train: str | None,
    dataset: str | None,
    data_dir: str | None,
    categorical: tuple[str, ...],
    numerical: tuple[str, ...],
    target: str | None,
    encoding: str,
    holdout_path: Path | None,
    test_path: Path | None,
    model: str,
    preset: str,
    params: tuple[str, ...],
    epochs: int | None,
    warmup_epochs: int | None,
    track_every: int | None,
    top_k: int,
    prune: float,
    prune_by: str,
    ranking_path: Path | None,
    mix: str | None,
    mix_ratio: float,
    mix_params: tuple[str, ...],
    distance: str,
    baseline_dir: Path | None,
    no_quality: bool,
    mle_grid: str,
    seed: int,
    threads: int | None,
    device: str | None,
    out_dir: Path,
    resume: bool,
    quiet: bool,
) -> None:
    """Remove the most memorized training records (DynamicCut) and retrain; report memorization before/after."""
    import torch

    from tabmem.experiments.dynamiccut import dynamiccut_to_dir
    from tabmem.generators import GENERATORS
    from tabmem.mitigation import AUGMENTERS

    GENERATORS.get(model)  # unknown names fail before any data is read
    if mix is not None:
        AUGMENTERS.get(mix)
    loaded = load_command_table()
    holdout, test, source = loaded.test, loaded.test, dict(loaded.source)
    if holdout_path is not None:
        holdout = read_user_table(holdout_path, encoding=encoding, option="--holdout")
        source["holdout"] = str(holdout_path)
    if test_path is not None:
        test = read_user_table(test_path, encoding=encoding, option="--test")
        source["test"] = str(test_path)
    prepare_out_dir(out_dir)
    torch.set_num_threads(threads or default_threads())
    p = parse_params(params)
    if epochs is not None:
        p["epochs"] = epochs
    if device is not None:
        p["device"] = device
    summary = dynamiccut_to_dir(
        loaded.table,
        loaded.schema,
        out_dir,
        model=model,
        preset=None if preset.lower() == "none" else preset,
        params=p,
        warmup_epochs=warmup_epochs,
        track_every=track_every,
        top_k=top_k,
        prune=prune,
        prune_by=prune_by,
        ranking=ranking_path,
        mix=mix,
        mix_ratio=mix_ratio,
        mix_params=parse_params(mix_params, "--mix-param"),
        distance=distance,
        holdout=holdout,
        test=test,
        seed=seed,
        resume=resume,
        progress=not quiet,
        log=click.echo,
        source=source,
        dataset=dataset,
        quality=not no_quality,
        mle_grid=mle_grid,
        baseline=baseline_dir,
    )
    print_before_after(summary)
    click.echo(f"wrote {out_dir}/summary.json, ranking.csv, synthetic.csv")


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def _num(v: Any) -> str:
    return "-" if v is None else f"{v:.4f}"


def print_before_after(summary: dict[str, Any]) -> None:
    """A table of aggregates: warm-up model, baseline (if given) and the retrained model; no records."""
    from rich.console import Console
    from rich.table import Table

    columns: list[tuple[str, dict[str, Any]]] = []
    warm = summary.get("warmup")
    if warm:
        columns.append((f"warm-up ({warm.get('epochs')} ep.)", {**warm, "n_retrain": summary["n_train"]}))
    if summary.get("baseline"):
        columns.append(("before: no pruning", {**summary["baseline"], "n_retrain": summary["n_train"]}))
    label = f"after: {summary['prune_by']} {100 * summary['prune']:.0f}%" + (
        f" + {summary['mix']}" if summary.get("mix") else ""
    )
    columns.append((label, summary))
    table = Table(title=f"memorization vs the original {summary['n_train']} training rows ({summary['distance']})")
    table.add_column("")
    for name, _ in columns:
        table.add_column(name, justify="right")
    rows = [
        ("rows trained on", lambda s: str(s.get("n_retrain", "-"))),
        ("memorization rate", lambda s: _pct(s.get("memorization_rate"))),
        ("holdout baseline", lambda s: _pct(s.get("holdout_memorization_rate"))),
        ("excess over holdout", lambda s: _excess(s)),
        ("rate vs pruned table", lambda s: _pct(s.get("memorization_rate_vs_pruned"))),
        ("Mem-AUC", lambda s: _num(s.get("mem_auc"))),
        ("Shape", lambda s: _num((s.get("quality") or {}).get("shape"))),
        ("Trend", lambda s: _num((s.get("quality") or {}).get("trend"))),
        ("MLE", lambda s: _num((s.get("quality") or {}).get("mle"))),
    ]
    for name, get in rows:
        table.add_row(name, *[get(s) for _, s in columns])
    Console().print(table)


def _excess(s: dict[str, Any]) -> str:
    v = s.get("excess_memorization")
    if v is None:
        return "-"
    ci = s.get("excess_memorization_ci")
    text = f"{100 * v:+.2f} pts"
    if ci and ci[0] is not None:
        text += f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
    return text
