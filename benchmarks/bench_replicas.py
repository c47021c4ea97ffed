"""Throughput of exact replica detection next to baselines and the machine's matmul ceiling.

Usage (from the repo root, with the datasets directory available)::

    python benchmarks/bench_replicas.py                  # Adult 32,561 x 32,561, all distances
    python benchmarks/bench_replicas.py --large 200000   # peak extra memory at 200k x 200k (minutes)

For each distance it prints wall time, synthetic rows/s, effective GFLOP/s of the BLAS work,
the speed-up over scikit-learn ``NearestNeighbors(algorithm="brute").kneighbors(n_neighbors=2)``
on the same ``l2`` encoding, and over a per-row pandas loop like the papers' reference code
(timed on a subsample and extrapolated). Peak extra memory is measured with ``tracemalloc``
(numpy reports its buffers to it).
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import MinMaxScaler
from threadpoolctl import threadpool_limits

from tabmem.data.datasets import load_dataset
from tabmem.data.schema import Schema
from tabmem.memorization.replicas import ReplicaDetector


def matmul_ceiling(n: int = 3072, repeats: int = 3) -> float:
    """Best float32 GEMM GFLOP/s of this machine (all cores)."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def paper_loop_seconds_per_row(train: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_rows: int) -> float:
    """Per-row pandas loop in the style of the papers' ``custom_distance`` (seconds per synthetic row)."""
    num, cat = list(schema.numerical), list(schema.categorical)
    t_num, t_cat = train[num], train[cat]
    t0 = time.perf_counter()
    for i in range(n_rows):
        row = synthetic.iloc[i]
        e = np.sqrt(((t_num - row[num].astype(float)) ** 2).sum(axis=1)).to_numpy().reshape(-1, 1)
        e = MinMaxScaler().fit_transform(e).ravel()
        h = (t_cat != row[cat]).sum(axis=1).to_numpy()
        d = (e + h) / len(schema.columns)
        i1 = int(np.argmin(d))
        d1 = d[i1]
        d[i1] = np.inf
        _ = d1 / d.min()
    return (time.perf_counter() - t0) / n_rows


def sklearn_brute_seconds(detector: ReplicaDetector, synthetic: pd.DataFrame) -> float:
    """scikit-learn brute-force kneighbors(2) on tabmem's l2 encoding of the same rows."""
    enc = detector.encoder_
    clean_t = enc.validate(detector._train_for_bench, name="training")  # type: ignore[attr-defined]
    clean_s = enc.validate(synthetic, unseen="mismatch")

    def feats(clean):
        std = np.where(enc.std_ > 0, enc.std_, 1.0)
        return np.concatenate([(enc.numeric(clean) - enc.mean_) / std, enc.one_hot(clean) / np.sqrt(2)], axis=1)

    xt, xs = feats(clean_t), feats(clean_s)
    t0 = time.perf_counter()
    NearestNeighbors(n_neighbors=2, algorithm="brute").fit(xt).kneighbors(xs)
    return time.perf_counter() - t0


def gemm_flops(distance: str, schema: Schema, detector: ReplicaDetector, n_syn: int, n_train: int) -> float:
    q = detector.distance_.ref_
    if distance == "fang2024":
        k = q.aug.shape[1] + q.onehot.shape[1]
    elif distance == "l2":
        k = q.aug.shape[1]
    else:  # gower: one-hot GEMM (the numerical L1 part is element-wise, not counted)
        k = q.onehot.shape[1]
    return 2.0 * n_syn * n_train * k


def noisy_resample(train: pd.DataFrame, schema: Schema, n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    syn = train.sample(n, replace=True, random_state=seed).reset_index(drop=True)
    for c in schema.numerical:
        std = float(train[c].std())
        syn[c] = syn[c] + rng.normal(0, 0.05 * std, n) * (rng.random(n) < 0.5)
    return syn


def run_adult(distances: list[str], loop_rows: int, repeats: int) -> None:
    ds = load_dataset("adult")
    train, schema = ds.train, ds.schema
    syn = noisy_resample(train, schema, len(train))
    ceiling = matmul_ceiling()
    print(f"machine: {os.cpu_count()} cores, float32 matmul ceiling {ceiling:.0f} GFLOP/s")
    print(f"Adult: {len(train):,} training rows x {len(syn):,} synthetic rows")
    loop = paper_loop_seconds_per_row(train, syn, schema, loop_rows)
    print(
        f"papers-style pandas loop: {1e3 * loop:.1f} ms/row -> {loop * len(syn):.0f} s extrapolated ({loop_rows} rows timed)"
    )
    det_l2 = ReplicaDetector("l2").fit(train, schema)
    det_l2._train_for_bench = train  # type: ignore[attr-defined]
    sk = min(sklearn_brute_seconds(det_l2, syn) for _ in range(repeats))
    print(f"scikit-learn NearestNeighbors(brute).kneighbors(2), l2 encoding: {sk:.2f} s")
    print(
        f"{'distance':10s} {'wall s':>8s} {'rows/s':>10s} {'GFLOP/s':>8s} {'% ceiling':>9s} {'vs sklearn':>10s} {'vs loop':>8s}"
    )
    for distance in distances:
        det = ReplicaDetector(distance).fit(train, schema)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            det.score(syn)
            times.append(time.perf_counter() - t0)
        wall = min(times)
        gf = gemm_flops(distance, schema, det, len(syn), len(train)) / wall / 1e9
        print(
            f"{distance:10s} {wall:8.2f} {len(syn) / wall:10,.0f} {gf:8.1f} {100 * gf / ceiling:8.0f}% "
            f"{sk / wall:9.2f}x {loop * len(syn) / wall:7.0f}x"
        )


def run_large(n: int, distance: str) -> None:
    rng = np.random.default_rng(0)

    def table(m: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "age": rng.integers(17, 90, m).astype(float),
                "income": rng.lognormal(10, 1, m).round(),
                "hours": rng.integers(1, 99, m).astype(float),
                "job": rng.choice([f"j{i}" for i in range(15)], m),
                "country": rng.choice([f"c{i}" for i in range(40)], m),
                "label": rng.integers(0, 2, m),
            }
        )

    train, syn = table(n), table(n)
    schema = Schema.infer(train, categorical=["job", "country", "label"], target="label")
    tracemalloc.start()
    t0 = time.perf_counter()
    det = ReplicaDetector(distance).fit(train, schema)
    base, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    det.score(syn)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    wall = time.perf_counter() - t0
    print(
        f"{distance}: {n:,} x {n:,} in {wall:.0f} s; peak extra memory during score {(peak - base) / 2**30:.2f} GiB "
        f"(fitted state {base / 2**30:.2f} GiB, budget 1 GiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distances", default="fang2024,gower,l2")
    parser.add_argument("--loop-rows", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--large", type=int, default=0, help="run the memory check at this size instead")
    parser.add_argument("--threads", type=int, default=0, help="limit BLAS threads for the baselines (0 = all)")
    args = parser.parse_args()
    if args.large:
        run_large(args.large, args.distances.split(",")[0])
        return
    if args.threads:
        with threadpool_limits(args.threads):
            run_adult(args.distances.split(","), args.loop_rows, args.repeats)
    else:
        run_adult(args.distances.split(","), args.loop_rows, args.repeats)


if __name__ == "__main__":
    main()
