"""Measure the per-unit costs of the study cost model (``tabmem.studies.estimate``) on this machine.

Each step is timed in CPU seconds of this process (``time.process_time``, one torch/BLAS thread),
so the constants do not depend on how busy a shared machine is; the table prints the measured
constant next to the one in ``estimate.py`` and their ratio. Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_study_costs.py --data-dir ../shared/datasets [--quick]
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import torch

import tabmem.studies.estimate as est


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default=None)
    p.add_argument("--quick", action="store_true", help="skip the paper-size presets")
    args = p.parse_args()
    torch.set_num_threads(1)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    from tabmem.data.datasets import load_dataset
    from tabmem.generators import get_generator

    adult = load_dataset("adult", data_dir=args.data_dir)
    n = 1000
    train = adult.train.sample(n, random_state=0).reset_index(drop=True)
    d = len(adult.schema.columns)
    print("| cost | measured | estimate.py | ratio |\n|---|---|---|---|", flush=True)

    def record(name: str, measured: float, ref: float) -> None:
        ratio = measured / ref if ref else float("nan")
        print(f"| {name} | {measured:.3g} | {ref:.3g} | {ratio:.2f} |", flush=True)

    def train_cost(model, preset, epochs, table, schema, **kw):
        gen = get_generator(model, preset=preset, epochs=epochs, device="cpu", **kw)
        secs, _ = cpu(lambda: gen.fit(table, schema, random_state=0))
        unit = secs / (epochs * len(table) * (len(schema.columns) / 15.0))
        s_secs, _ = cpu(lambda: gen.sample(len(table), random_state=1))
        record(f"train {model}/{preset}", unit, est.TRAIN_COST.get((model, preset), float("nan")))
        record(
            f"sample {model}/{preset}",
            s_secs / (len(table) * len(schema.columns)),
            est.SAMPLE_COST.get((model, preset), float("nan")),
        )
        return gen

    gen = train_cost("tabddpm", "small", 20, train, adult.schema)
    train_cost("tvae", "small", 10, train, adult.schema)
    train_cost("ctgan", "small", 10, train, adult.schema)
    if not args.quick:
        small = train.iloc[:500].reset_index(drop=True)
        train_cost("tabddpm", "paper", 2, small, adult.schema)
        train_cost("tvae", "paper", 5, small, adult.schema)
        train_cost("ctgan", "paper", 5, small, adult.schema)
    diabetes = load_dataset("diabetes", data_dir=args.data_dir)
    train_cost("llm", "small", 3, diabetes.train, diabetes.schema)
    if not args.quick:
        train_cost("llm", "realtabformer", 1, diabetes.train.iloc[:160], diabetes.schema)

    # the exact neighbour search of the audit
    from tabmem.memorization.replicas import ReplicaDetector

    synthetic = gen.sample(n, random_state=2)
    holdout = adult.test.iloc[:n]
    det = ReplicaDetector("fang2024", n_jobs=1).fit(train, adult.schema)
    secs, _ = cpu(lambda: det.score(synthetic, holdout=holdout, unseen="mismatch"))
    record("audit seconds (2,000 queries x 1,000 rows)", secs, est.search_seconds(2 * n, n, d))

    # attacks
    from tabmem.attacks.runner import run_attacks

    for attack in ("levatt", "dcr", "mc", "density"):
        secs, _ = cpu(
            lambda a=attack: run_attacks(
                train,
                holdout,
                synthetic,
                adult.schema,
                attacks=[a],
                attack_params={a: {"n_jobs": 1}} if a in ("levatt", "dcr", "mc") else {},
                n_bootstrap=0,
            )
        )
        cell = SimpleNamespace(dataset=SimpleNamespace(n_rows=n, n_columns=d))
        record(
            f"attack {attack} seconds (2,000 targets x 1,000 rows)", secs, est.attack_seconds([attack], 2 * n, n, cell)
        )

    # quality metrics
    from tabmem.metrics.report import quality_report

    for metric in ("shape", "trend", "mle", "mmd", "wasserstein", "alpha_precision", "c2st", "dcr_share"):
        secs, _ = cpu(
            lambda m=metric: quality_report(
                train,
                synthetic,
                adult.schema,
                test=adult.test.iloc[:2000],
                holdout=holdout,
                metrics=[m],
                mle_grid="tabsyn",
            )
        )
        record(f"quality {metric} row-column", secs / (n * d), est.QUALITY_COST[metric])


if __name__ == "__main__":
    main()
