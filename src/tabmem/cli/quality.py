"""``tabmem quality``: fidelity, utility and DCR-share metrics of a synthetic table."""

from __future__ import annotations

from pathlib import Path

import click

from tabmem.cli._options import (
    choice_option,
    column_names,
    echo_schema,
    echo_threads,
    file_option,
    infer_schema,
    mle_grid_option,
    n_jobs_option,
    out_dir_option,
    prepare_out_dir,
    read_user_table,
    schema_options,
    seed_option,
    threads_option,
)
from tabmem.errors import TabmemError
from tabmem.runs.protocol import QUALITY_RUN, RunDirectory


@click.command("quality")
@file_option("--real", "real_path", "Real training table (CSV/Parquet).", required=True)
@file_option("--synthetic", "synthetic_path", "Synthetic table.", required=True)
@file_option("--test", "test_path", "Real test table (enables MLE).")
@file_option("--holdout", "holdout_path", "Real holdout, same size as --real (enables DCR share).")
@schema_options
@click.option(
    "--metrics",
    "metric_names",
    default=None,
    help="Comma-separated subset of: shape,trend,mle,mmd,wasserstein,alpha_precision,beta_recall,c2st,dcr_share.",
)
@choice_option(
    "--pair-filter",
    ["all", "sdmetrics"],
    "Trend pairs: all (papers, sdmetrics 0.11.1) or sdmetrics' recent default thresholds.",
    default="all",
)
@click.option(
    "--trend-max-pairs",
    type=click.IntRange(min=1),
    default=1_000_000,  # tabmem.metrics.trend.MAX_PAIRS (a literal: --help imports no numpy)
    show_default=True,
    help="Skip trend (with a warning) when the table has more column pairs than this: pairs grow as columns^2.",
)
@mle_grid_option()
@seed_option("Random seed (MLE split, MMD subsample, C2ST folds, projections).")
@n_jobs_option("Workers for XGBoost / neighbour search (-1: all).", default=1)
@threads_option("BLAS threads of each worker (default: the CPUs available divided among the workers)")
@out_dir_option("Output directory (summary.json + breakdown CSVs).", path_type=None)
def quality(
    real_path: str,
    synthetic_path: str,
    test_path: str | None,
    holdout_path: str | None,
    categorical: tuple[str, ...],
    numerical: tuple[str, ...],
    target: str | None,
    encoding: str,
    metric_names: str | None,
    pair_filter: str,
    trend_max_pairs: int,
    mle_grid: str,
    seed: int,
    n_jobs: int,
    threads: int | None,
    out_dir: str,
) -> None:
    """Score SYNTHETIC against REAL: Shape, Trend, MLE, MMD, Wasserstein, alpha/beta, C2ST, DCR share.

    Writes OUT/summary.json (null + reason in "skipped" for a metric that could not run) and
    OUT/<metric>_breakdown.csv. Only aggregate numbers are printed, never records.
    """
    import pandas as pd
    from rich.console import Console
    from rich.table import Table

    from tabmem._checks import limit_threads, resolve_n_jobs, threads_per_worker
    from tabmem.metrics.report import SUMMARY_KEYS, quality_report

    n_jobs = resolve_n_jobs(n_jobs, "--n-jobs")
    metrics = column_names(metric_names) if metric_names else None
    unknown = [m for m in metrics or [] if m not in SUMMARY_KEYS]
    if unknown:
        raise TabmemError(f"--metrics: unknown metric(s) {unknown}; choose from {', '.join(SUMMARY_KEYS)}")
    threads = threads or threads_per_worker(n_jobs)
    prepare_out_dir(out_dir, kind=QUALITY_RUN)
    click.get_current_context().with_resource(RunDirectory(out_dir, QUALITY_RUN).lock())  # one writer
    real = read_user_table(real_path, encoding=encoding, option="--real")
    synthetic = read_user_table(synthetic_path, encoding=encoding, option="--synthetic")
    test = read_user_table(test_path, encoding=encoding, option="--test") if test_path else None
    holdout = read_user_table(holdout_path, encoding=encoding, option="--holdout") if holdout_path else None
    schema = infer_schema(real, categorical, numerical, target, name=Path(real_path).stem)
    echo_schema(schema, real_path)
    echo_threads(n_jobs, threads, "each" if n_jobs > 1 else "")
    console = Console(stderr=True)
    with console.status("computing quality metrics") as status, limit_threads(threads):
        report = quality_report(
            real,
            synthetic,
            schema,
            test=test,
            holdout=holdout,
            metrics=metrics,
            pair_filter=pair_filter,
            trend_max_pairs=trend_max_pairs,
            mle_grid=mle_grid,
            random_state=seed,
            n_jobs=n_jobs,
            progress=lambda name: status.update(f"computing {name}"),
        )
    path = report.save(out_dir)
    table = Table(title=f"quality of {Path(synthetic_path).name} vs {Path(real_path).name}")
    for col in ("metric", "value", "goal", "note"):
        table.add_column(col, justify="right" if col == "value" else "left")
    for row in report.to_frame().itertuples(index=False):
        value = "-" if row.value is None or pd.isna(row.value) else f"{row.value:.4f}"
        if value != "-" and abs(row.value) >= 1e6:
            value = f"{row.value:.4g}"
        table.add_row(row.metric, value, row.goal, row.note)
    Console().print(table)
    for name, reason in report.skipped.items():  # a metric that could not run on these tables (not a missing input)
        if not reason.startswith("no ") or " given " not in reason:
            click.echo(f"warning: {name} not computed: {reason}", err=True)
    click.echo(f"wrote {path}")
