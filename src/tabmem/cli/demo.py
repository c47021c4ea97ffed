"""``tabmem demo``: the whole job on the embedded default dataset (scikit-learn's diabetes).

1. a deliberately leaky stand-in for a generator (a noisy resample of the training rows: it is
   *not* a generative model, and is labelled as such) to show what memorization looks like;
2. a real generator (TabDDPM, ``small`` preset) trained with per-record memorization tracking,
   when torch is installed;
3. for each synthetic table: a replica audit against the training rows with the real held-out
   rows as the no-memorization baseline, and the quality metrics (fidelity and utility).

Everything runs locally in a few minutes; outputs go to ``--out``.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from tabmem._io import write_frame, write_json
from tabmem.cli._options import echo_threads, prepare_out_dir, seed_option
from tabmem.cli.audit import summary_table, write_outputs
from tabmem.data.datasets import load_dataset
from tabmem.data.schema import Schema
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.neighbors.distances import DISTANCES


def noisy_resample(
    train: pd.DataFrame, schema: Schema, n: int, *, copy_fraction: float = 0.3, seed: int = 0
) -> pd.DataFrame:
    """Resample training rows; keep ``copy_fraction`` as exact copies and jitter the rest.

    Numerical values of the jittered rows get Gaussian noise of 25% of the column's standard
    deviation (integer columns stay integers); categorical values are kept. A stand-in that
    leaks on purpose, not a generator.
    """
    rng = np.random.default_rng(seed)
    syn = train.sample(n, replace=True, random_state=seed).reset_index(drop=True)
    jitter = rng.random(n) >= copy_fraction
    for c in schema.numerical:
        values = syn[c].to_numpy(dtype=float)
        noisy = values + rng.normal(0, 0.25 * float(train[c].std()), n)
        if pd.api.types.is_integer_dtype(train[c].dtype):
            noisy = np.round(noisy)
        syn[c] = np.where(jitter, noisy, values).astype(train[c].dtype)
    return syn


def audit_and_quality(
    name: str, train, test, syn, schema, out: Path, console: Console, distance: str, with_quality: bool
) -> dict:
    detector = ReplicaDetector(distance).fit(train, schema)
    result = detector.score(syn, holdout=test, unseen="mismatch")
    summary = write_outputs(result, out / name / "audit")
    console.print(summary_table(summary, title=f"Replica audit: {name}"))
    row = {
        "memorization_rate": summary["memorization_rate"],
        "holdout_memorization_rate": summary["holdout_memorization_rate"],
        "excess_memorization": summary["excess_memorization"],
    }
    if with_quality:
        from tabmem.metrics.report import quality_report

        report = quality_report(train, syn, schema, test=test, holdout=test, mle_grid="tabsyn")
        report.save(out / name / "quality")
        q = report.summary()
        row.update({k: q.get(k) for k in ("shape", "trend", "mle", "mmd", "wasserstein", "dcr_share")})
        row["dcr_share_ideal"] = (q.get("details", {}).get("dcr_share") or {}).get("ideal")
    return row


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="tabmem-demo", show_default=True)
@click.option("--distance", type=click.Choice(DISTANCES.names()), default="fang2024", show_default=True)
@click.option(
    "--epochs", type=click.IntRange(min=1), default=None, help="TabDDPM training epochs (default: the demo's setting)."
)
@click.option("--no-generator", is_flag=True, help="Skip training the TabDDPM generator.")
@click.option("--no-quality", is_flag=True, help="Skip the quality metrics.")
@seed_option("Random seed of the demo's resample and generator.")
def demo(out, distance, epochs, no_generator, no_quality, seed) -> None:
    """Audit synthetic data for memorization on the embedded diabetes dataset."""
    console = Console()
    t0 = time.perf_counter()
    out_dir = prepare_out_dir(out)
    ds = load_dataset("diabetes")
    train, test, schema = ds.train, ds.test, ds.schema
    console.print(
        f"[bold]tabmem demo[/bold] on diabetes (scikit-learn, {len(train)} training / {len(test)} held-out rows, "
        f"{len(schema.columns)} columns). Distance: {distance}."
    )
    rows: dict[str, dict] = {}
    console.rule("1. A leaky stand-in: noisy resample of the training rows (not a generator)")
    resample = noisy_resample(train, schema, len(train), seed=seed)
    write_frame(out_dir / "resample.csv", resample)
    rows["noisy resample"] = audit_and_quality(
        "resample", train, test, resample, schema, out_dir, console, distance, not no_quality
    )

    if not no_generator and importlib.util.find_spec("torch") is not None:
        console.rule("2. TabDDPM (small preset) trained with per-record memorization tracking")
        import torch

        from tabmem.data.io import read_table
        from tabmem.experiments import demo_train

        gen_dir = out_dir / "tabddpm"
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # small network: one thread is fastest and leaves the other core free
        echo_threads(1, 1, "(torch: the small network runs fastest on one)")
        try:
            info = demo_train(
                train, schema, gen_dir, epochs=epochs or 20, track_every=5, holdout=test, seed=seed, progress=True
            )
        finally:
            torch.set_num_threads(threads)
        for finding in info.get("dynamics_findings", []) or []:
            console.print(f"  Top vs Non-top: {finding}")
        syn = read_table(gen_dir / "synthetic.csv")
        rows["TabDDPM"] = audit_and_quality(
            "tabddpm", train, test, syn, schema, out_dir, console, distance, not no_quality
        )
    elif not no_generator:
        console.print("[yellow]torch is not installed: skipping the generator (pip install 'tabmem[all]').[/yellow]")

    table = Table(
        title="Headline: memorization next to fidelity and utility",
        header_style="bold",
        caption="MLE: RMSE of XGBoost trained on each table, tested on real held-out rows (lower is better); "
        "DCR share: no-copy value = n_train/(n_train+n_holdout)" + _ideal(rows),
    )
    cols = ["memorization_rate", "holdout_memorization_rate", "excess_memorization"]
    if not no_quality:
        cols += ["shape", "trend", "mle", "dcr_share"]
    short = {
        "memorization_rate": "mem. rate",
        "holdout_memorization_rate": "holdout rate",
        "excess_memorization": "excess",
        "mle": "MLE",
        "dcr_share": "DCR share",
    }
    table.add_column("synthetic table")
    for c in cols:
        table.add_column(short.get(c, c), justify="right")
    for name, row in rows.items():
        table.add_row(name, *[_fmt(row.get(c)) for c in cols])
    console.print(table)
    write_json(out_dir / "demo_summary.json", rows)
    console.print(
        f"[dim]Done in {time.perf_counter() - t0:.0f} s. Outputs in {out_dir}/: per table an audit/ folder "
        "(summary.json, replicas.csv, records.csv) and a quality/ folder; demo_summary.json. The holdout rate is what "
        "real rows never trained on score: only the excess over it is evidence of memorization.[/dim]"
    )


def _ideal(rows: dict[str, dict]) -> str:
    ideal = next((r.get("dcr_share_ideal") for r in rows.values() if r.get("dcr_share_ideal") is not None), None)
    return "" if ideal is None else f" = {ideal:.2f} here"


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)
