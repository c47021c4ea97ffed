"""``tabmem audit``: replica detection of a synthetic table against its training table.

Next to the replica rates, ``summary.json`` holds distance evidence with its own null
(:func:`tabmem.memorization.evidence.distance_evidence`): the data-copying test (with a holdout),
authenticity, identical matches and NNDR, each next to the holdout's figure.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from tabmem._checks import resolve_n_jobs
from tabmem.cli._options import (
    MEMORY_GB,
    FiniteRange,
    address_option,
    choice_option,
    count_option,
    distance_option,
    echo_schema,
    echo_threads,
    echo_warning,
    executor_option,
    file_option,
    load_training_table,
    n_jobs_option,
    prepare_out_dir,
    read_user_table,
    search_device_option,
    seed_option,
    shards_option,
    training_table_options,
)
from tabmem.errors import TabmemError
from tabmem.memorization.replicas import DUPLICATES, ReplicaDetector
from tabmem.memorization.summary import AuditSummary
from tabmem.neighbors.device import use_device
from tabmem.neighbors.shards import DEVICE_NOT_SHARDED
from tabmem.runs.audit import AUDIT_RUN, audit_to_dir
from tabmem.runs.memory import audit_memory, available_memory_bytes, check_audit_memory, resident_bytes
from tabmem.runs.pool import check_pool

PROGRESS_MIN_CELLS = 2e8  # show a progress bar when |synthetic| x |train| exceeds this


class RowsPerSecond(ProgressColumn):
    """The search's speed in rows per second (rich's own speed estimate, over its recent window)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("? rows/s" if speed is None else f"{speed:,.0f} rows/s", style="progress.data.speed")


@contextlib.contextmanager
def progress_bar(
    console: Console, total_rows: int, n_train: int, description: str = "nearest neighbours"
) -> Iterator[Callable[[int], None] | None]:
    """A progress bar of the neighbour search (its per-rows callback) when the job is large, else ``None``."""
    if float(total_rows) * n_train < PROGRESS_MIN_CELLS or not console.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} rows"),
        RowsPerSecond(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total_rows)
        yield lambda n: progress.advance(task, n)


def summary_table(summary: AuditSummary, title: str = "Replica audit") -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("training rows", f"{summary.n_train:,}"),
        ("synthetic rows", f"{summary.n_synthetic:,}"),
        ("distance / threshold", f"{summary.distance} / {summary.threshold:.4g}"),
        ("memorization rate", f"{100 * summary.memorization_rate:.2f}%"),
        ("Mem-AUC (exact, 1 - mean r)", f"{100 * summary.mem_auc:.2f}%"),
        ("Mem-AUC (papers' 10-point trapezoid)", f"{100 * summary.mem_auc_trapz10:.2f}%"),
    ]
    if summary.holdout_memorization_rate is not None and summary.excess_memorization is not None:
        rows += [
            ("holdout rate (real unseen rows)", f"{100 * summary.holdout_memorization_rate:.2f}%"),
            ("excess memorization", f"{100 * summary.excess_memorization:+.2f} points"),
        ]
    rows.append(
        ("exact copies of training rows", _with_holdout(summary.exact_copy_rate, summary.holdout_exact_copy_rate))
    )
    if summary.rare_value_leakage is not None and summary.rare_values is not None:
        k = summary.rare_values.k
        label = "rows with a one-off training value" if k == 2 else f"rows with a training value in < {k} rows"
        rows.append((label, _with_holdout(summary.rare_value_leakage, summary.holdout_rare_value_leakage)))
    auth = summary.authenticity or {}
    if auth:
        rows.append(
            (
                "closer than their training row's neighbour (authenticity)",
                f"{_pct(auth['synthetic_closer_share'])} (holdout {_pct(auth.get('holdout_closer_share', float('nan')))})",
            )
        )
    copying = summary.evidence.data_copying if summary.evidence is not None else None
    if copying:
        rows.append(
            (
                "data-copying test (Z << 0: copying)",
                f"Z = {copying['z']:.2f}, p = {copying['p_value']:.3g}, {len(copying['cells_flagged'])} cell(s) flagged",
            )
        )
    tail = summary.heavy_tail
    gini = tail.gini
    rows += [
        ("records with >= 1 replica", f"{tail.n_records_with_replicas:,}"),
        ("replicas owed to top 1% / 10% records", f"{_pct(tail.top_1pct_share)} / {_pct(tail.top_10pct_share)}"),
        ("Gini of replica counts", "n/a" if gini is None or gini != gini else f"{gini:.3f}"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    return table


def _pct(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{100 * x:.1f}%"


def _with_holdout(value: float | None, hold: float | None) -> str:
    text = "n/a" if value is None or value != value else f"{100 * value:.2f}%"
    if hold is not None and hold == hold:
        text += f" (holdout {100 * hold:.2f}%)"
    return text


@click.command()
@training_table_options
@file_option("--synthetic", None, "Synthetic table to audit.", required=True)
@file_option("--holdout", None, "Real rows never trained on: the no-memorization baseline.")
@click.option("--no-holdout", is_flag=True, help="With --dataset, do not score its test split as holdout.")
@distance_option()
@click.option(
    "--threshold",
    type=FiniteRange(0, 1, min_open=True),
    default=1 / 3,
    show_default="0.3333",
    help="A synthetic row is a replica when d1/d2 < threshold (0 < threshold <= 1).",
)
@choice_option(
    "--nan",
    ["error", "drop", "match"],
    "Missing numerical values: fail, drop those synthetic rows, or compare them (documented semantics).",
    default="error",
)
@choice_option(
    "--unseen",
    ["error", "drop", "mismatch"],
    "Categories absent from training: fail, drop those rows, or count them as mismatches.",
    default="error",
)
@choice_option(
    "--duplicates",
    DUPLICATES,
    "Rows whose ratio d1/d2 is undefined (copies of duplicated training rows, a one-row training table): "
    "papers = not memorized (the papers' rule), replica = a row identical to a training row is a replica.",
    default="papers",
)
@count_option(
    "--rare-k",
    "Rare-value leakage: training values occurring in fewer than K rows (2: values that occur once).",
    default=2,
    min=2,
)
@click.option("--ignore-extra", is_flag=True, help="Drop columns that are not in the training table.")
@click.option("--out", "out", type=click.Path(file_okay=False), default="tabmem-audit", show_default=True)
@count_option("--copying-cells", "k-means cells of the data-copying test (needs a holdout).", default=10)
@seed_option("Seed of the k-means cells.")
@click.option("--show-records", is_flag=True, help="Print the most-replicated training records (raw values!).")
@n_jobs_option("Worker threads (default: every CPU available; -1 = all).")
@click.option(
    "--memory-gb",
    type=MEMORY_GB,
    default=1.0,
    show_default=True,
    help="Working-memory budget of the neighbour search (GiB); the whole audit's estimated peak is printed.",
)
@search_device_option()
@executor_option("Where the neighbour searches run: in this process / local worker processes, or Ray tasks.")
@n_jobs_option(
    "Search tasks at once (local: worker processes, default none: in this process; ray: default all).", flag="--jobs"
)
@address_option()
@shards_option()
def audit(
    synthetic,
    holdout,
    no_holdout,
    distance,
    threshold,
    nan,
    unseen,
    duplicates,
    rare_k,
    ignore_extra,
    out,
    copying_cells,
    seed,
    show_records,
    n_jobs,
    memory_gb,
    device,
    executor,
    jobs,
    address,
    shards,
    **table: Any,
) -> None:
    """Find synthetic rows that replicate training rows (d1/d2 < threshold), exact copies and rare-value leakage."""
    check_pool(executor, address)
    if device != "cpu" and (executor == "ray" or (jobs is not None and jobs != 1) or shards is not None):
        raise TabmemError(DEVICE_NOT_SHARDED)
    console = Console()
    out_dir = prepare_out_dir(out, kind=AUDIT_RUN)
    loaded = load_training_table(**table)
    train_df, schema = loaded.table, loaded.schema
    if loaded.inferred:
        echo_schema(schema, str(table["train"]))
    syn = read_user_table(synthetic, encoding=table["encoding"], option="--synthetic")
    hold = (
        read_user_table(holdout, encoding=table["encoding"], option="--holdout")
        if holdout
        else (None if no_holdout else loaded.test)
    )
    if syn.shape[0] == 0:
        raise TabmemError(f"{synthetic}: the synthetic table is empty")
    detector = ReplicaDetector(
        distance,
        threshold,
        nan=nan,
        n_jobs=n_jobs,
        memory_budget=int(memory_gb * 2**30),
        duplicates=duplicates,
        rare_k=rare_k,
    )
    echo_threads(resolve_n_jobs(n_jobs, "--n-jobs"), 1, "each in the neighbour search")
    _echo_memory(train_df, syn, hold, schema, memory_gb, resolve_n_jobs(n_jobs, "--n-jobs"))
    summary = use_device(device)(audit_to_dir)(  # the neighbour searches on --device
        detector,
        train_df,
        syn,
        schema,
        out_dir,
        holdout=hold,
        unseen=unseen,
        extra="ignore" if ignore_extra else "error",
        copying_cells=min(copying_cells, len(train_df)),
        seed=seed,
        timed=True,
        progress=lambda rows, n_train: progress_bar(console, rows, n_train),
        executor=executor,
        jobs=None if jobs is None else resolve_n_jobs(jobs, "--jobs"),
        address=address,
        shards=shards,
    )
    console.print(summary_table(summary))
    for message in summary.warnings:
        echo_warning(message)
    console.print(
        f"[dim]{summary.seconds:.1f} s. Outputs: {out_dir}/summary.json, replicas.csv (one row per synthetic row), "
        f"records.csv (one row per training record), rare_values.csv (counts per column).[/dim]"
    )
    if show_records:
        _show_records(console, train_df, out_dir)


def _echo_memory(train_df: Any, syn: Any, hold: Any, schema: Any, memory_gb: float, threads: int) -> None:
    """The audit's estimated peak in one line (tabmem.runs.memory); one clear error when it clearly cannot fit."""
    n_scored = len(syn) + (0 if hold is None else len(hold))
    estimate = audit_memory(
        len(train_df),
        n_scored,
        schema.n_columns,
        int(memory_gb * 2**30),
        n_categorical=len(schema.categorical),
        n_jobs=threads,
        copying=hold is not None,
    )
    available, held = available_memory_bytes(), resident_bytes()
    check_audit_memory(estimate, available, held=held)
    click.echo(estimate.line(None if available is None else available + held), err=True)


def _show_records(console: Console, train_df: Any, out_dir: Path) -> None:
    """The ten most-replicated training records (records.csv), with their raw values (--show-records)."""
    import pandas as pd

    records = pd.read_csv(out_dir / "records.csv").sort_values("replica_count", ascending=False).head(10)
    records = records[records.replica_count > 0]
    shown = train_df.iloc[records.train_row.to_numpy()].assign(replica_count=records.replica_count.to_numpy())
    console.print("[bold]Most-replicated training records (raw values, shown because --show-records):[/bold]")
    console.print(shown.to_string())
