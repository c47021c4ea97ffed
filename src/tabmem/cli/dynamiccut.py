"""``tabmem dynamiccut``: warm up with tracking, rank records, prune the top fraction, retrain from scratch.

``--reweight W`` keeps the top fraction in the table at training weight ``W`` instead of removing it
(``--reweight-shape linear``: weights rising with the rank from ``W`` to 1 at the cut).

A thin shell over :func:`tabmem.runs.dynamiccut.dynamiccut_to_dir` (directory layout there:
``warmup/``, ``ranking.csv``, ``retrain/``, ``synthetic.csv``, ``summary.json``). The terminal shows
one line per stage and a before/after table of aggregates; no record values are printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    choice_option,
    count_option,
    dir_option,
    distance_option,
    echo_warning,
    epochs_option,
    file_option,
    generator_params,
    load_training_table,
    mle_grid_option,
    model_option,
    out_dir_option,
    params_option,
    parse_params,
    prepare_out_dir,
    preset_option,
    ratio_option,
    read_user_table,
    seed_option,
    set_torch_threads,
    torch_options,
    training_table_options,
)
from tabmem.memorization.summary import EXCESS_MEMORIZATION, EXCESS_MEMORIZATION_CI
from tabmem.mitigation.ranking import RANKING_METHODS
from tabmem.mitigation.reweight import REWEIGHT_SHAPES
from tabmem.mitigation.summary import DynamicCutSummary
from tabmem.runs.protocol import DYNAMICCUT_RUN


@click.command("dynamiccut")
@training_table_options
@file_option(
    "--holdout",
    "holdout_path",
    "Real rows never trained on: the baseline (default with --dataset: its test split).",
    path_type=Path,
    default=None,
)
@file_option(
    "--test",
    "test_path",
    "Real test rows for MLE (default with --dataset: its test split).",
    path_type=Path,
    default=None,
)
@model_option("Generator (tabddpm, tvae, ctgan, ...).")
@preset_option("Preset of the model; 'none' for the class defaults.")
@params_option("Generator parameter (JSON), repeatable.")
@epochs_option("Full schedule (default: the preset's).")
@count_option(
    "--warmup-epochs",
    "Stage 1 trains the first T epochs of the full schedule with tracking (intensity, first-memorization).",
)
@count_option("--track-every", "Track memorization every K epochs.")
@count_option("--top-k", "Intensity = mean of each record's k largest per-epoch Mem-AUC.", default=3)
@click.option(
    "--prune",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.10,
    show_default=True,
    help="Fraction of training records removed: ceil(p N).",
)
@choice_option(
    "--prune-by",
    RANKING_METHODS,
    "Ranking: intensity (DynamicCut), count (oracle: full run), first-memorization, random (control).",
    default="intensity",
)
@file_option(
    "--ranking",
    "ranking_path",
    "A ranking.csv of this table (e.g. from another generator: transfer); skips stage 1.",
    path_type=Path,
    default=None,
)
@click.option(
    "--reweight",
    type=click.FloatRange(min=0, max=1, max_open=True),
    default=None,
    help="Keep the top --prune records at this training weight instead of removing them (0 <= W < 1).",
)
@choice_option(
    "--reweight-shape",
    REWEIGHT_SHAPES,
    "With --reweight: step (all top records at W) or linear (W for the top record, rising to 1 at the cut).",
    default="step",
)
@click.option("--mix", default=None, help="Augmenter applied to the pruned table (DynamicCutMix: tabcutmix).")
@ratio_option("--mix-ratio", "New rows of --mix as a fraction of the pruned table.")
@params_option("Parameter of --mix, repeatable.", "--mix-param", "mix_params")
@distance_option()
@dir_option(
    "--baseline",
    "baseline_dir",
    "A `tabmem train` run of the same model on the whole table, shown as 'before'.",
    exists=True,
    path_type=Path,
    default=None,
)
@click.option("--no-quality", is_flag=True, help="Skip Shape/Trend/MLE.")
@mle_grid_option()
@seed_option("Random seed (training, tracking, tie-breaks, augmentation).")
@torch_options
@out_dir_option()
@click.option("--resume", is_flag=True, help="Continue an interrupted run in --out at the stage where it stopped.")
@click.option(
    "--overwrite", is_flag=True, help="Replace the DynamicCut run in --out (only its files; nothing else is deleted)."
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def dynamiccut(
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
    reweight: float | None,
    reweight_shape: str,
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
    overwrite: bool,
    quiet: bool,
    **table: Any,
) -> None:
    """Remove the most memorized training records (DynamicCut) and retrain; report memorization before/after."""
    from tabmem.generators import GENERATORS
    from tabmem.mitigation import AUGMENTERS
    from tabmem.mitigation.dynamiccut import DynamicCut
    from tabmem.runs.dynamiccut import dynamiccut_to_dir

    GENERATORS.get(model)  # unknown names fail before any data is read
    if mix is not None:
        AUGMENTERS.get(mix)
    loaded = load_training_table(**table)
    holdout, test, source = loaded.test, loaded.test, dict(loaded.source)
    if holdout_path is not None:
        holdout = read_user_table(holdout_path, encoding=table["encoding"], option="--holdout")
        source["holdout"] = str(holdout_path)
    if test_path is not None:
        test = read_user_table(test_path, encoding=table["encoding"], option="--test")
        source["test"] = str(test_path)
    prepare_out_dir(out_dir, kind=DYNAMICCUT_RUN)
    set_torch_threads(threads)
    cut = DynamicCut(
        model,
        preset=None if preset.lower() == "none" else preset,
        params=generator_params(params, epochs=epochs, device=device),
        warmup_epochs=warmup_epochs,
        track_every=track_every,
        top_k=top_k,
        prune=prune,
        prune_by=prune_by,
        mix=mix,
        mix_ratio=mix_ratio,
        mix_params=parse_params(mix_params, "--mix-param"),
        distance=distance,
        random_state=seed,
        dataset=table["dataset"],
        reweight=reweight,
        reweight_shape=reweight_shape,
    )
    summary = dynamiccut_to_dir(
        loaded.table, loaded.schema, out_dir, cut, ranking=ranking_path, holdout=holdout, test=test,
        resume=resume, overwrite=overwrite, progress=not quiet, log=click.echo, source=source,
        quality=not no_quality, mle_grid=mle_grid, baseline=baseline_dir,
    )  # fmt: skip
    print_before_after(summary)
    for message in summary.warnings or []:
        echo_warning(message)
    click.echo(f"wrote {out_dir}/summary.json, ranking.csv, synthetic.csv")


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def _num(v: Any) -> str:
    return "-" if v is None else f"{v:.4f}"


def print_before_after(summary: DynamicCutSummary) -> None:
    """A table of aggregates: warm-up model, baseline (if given) and the retrained model; no records."""
    from rich.console import Console
    from rich.table import Table

    columns: list[tuple[str, dict[str, Any]]] = []
    warm = summary.warmup
    if warm:
        columns.append((f"warm-up ({warm.get('epochs')} ep.)", {**warm, "n_retrain": summary.n_train}))
    if summary.baseline is not None:
        columns.append(("before: no pruning", {**summary.baseline.to_dict(), "n_retrain": summary.n_train}))
    label = f"after: {summary.prune_by} {100 * summary.prune:.0f}%" + (f" + {summary.mix}" if summary.mix else "")
    if summary.reweight is not None:
        label += f" at weight {summary.reweight:g}" + (" (linear)" if summary.reweight_shape == "linear" else "")
    columns.append((label, summary.to_dict()))
    table = Table(title=f"memorization vs the original {summary.n_train} training rows ({summary.distance})")
    table.add_column("")
    for name, _ in columns:
        table.add_column(name, justify="right")
    rows = [
        ("rows trained on", lambda s: str(s.get("n_retrain", "-"))),
        ("memorization rate", lambda s: _pct(s.get("memorization_rate"))),
        ("holdout baseline", lambda s: _pct(s.get("holdout_memorization_rate"))),
        ("excess over holdout", lambda s: _excess(s)),
        (
            "rate vs pruned table" if summary.reweight is None else "rate vs full-weight records",
            lambda s: _pct(s.get("memorization_rate_vs_pruned")),
        ),
        ("Mem-AUC", lambda s: _num(s.get("mem_auc"))),
        ("Shape", lambda s: _num((s.get("quality") or {}).get("shape"))),
        ("Trend", lambda s: _num((s.get("quality") or {}).get("trend"))),
        ("MLE", lambda s: _num((s.get("quality") or {}).get("mle"))),
    ]
    for name, get in rows:
        table.add_row(name, *[get(s) for _, s in columns])
    Console().print(table)


def _excess(s: dict[str, Any]) -> str:
    v = s.get(EXCESS_MEMORIZATION)
    if v is None:
        return "-"
    ci = s.get(EXCESS_MEMORIZATION_CI)
    text = f"{100 * v:+.2f} pts"
    if ci and ci[0] is not None:
        text += f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"
    return text
