"""Exact replica search on Adult: tabmem next to like-for-like baselines and the machine's GEMM ceilings.

Usage (from the repo root)::

    python benchmarks/bench_replicas.py --data-dir ../shared/datasets            # Adult 32,561 x 32,561
    python benchmarks/bench_replicas.py --large 200000                             # peak memory at 200k x 200k

One run measures, on the same machine and load:

* the float32 and float64 GEMM ceilings (best of a few ``n x n x n`` products, all cores);
* (a) ``l2``: tabmem's ``NeighborIndex("l2").kneighbors(k=2)`` against scikit-learn
  ``NearestNeighbors(algorithm="brute").kneighbors(n_neighbors=2)`` on the *same* standardised
  features (the same work: scikit-learn computes it with a float64 GEMM);
* (b) ``fang2024`` and ``gower``, which scikit-learn cannot compute: against a faithful numpy
  brute force of the same distance (float64, column by column on blocks of query rows, the
  same threads), with scikit-learn's brute L2 above as a reference point only;
* the timed methods interleaved (each repeat runs all of them back to back), best of the
  repeats, wall and CPU time (all threads);
* a correctness check on every line: the fast result equals the baseline's (nearest and
  second-nearest indices except exact ties, distances and d1/d2 ratios to the printed relative
  difference).

GEMM work is counted by precision, each against its own ceiling: ``l2``'s float32 product; for
``fang2024`` and ``gower`` the float32 one-hot product that counts categorical matches (2 x
one-hot width FLOP per pair; tabmem reads the same counts from uint8 lookup tables, so this is
an *effective* rate, the GEMM formulation's work) and ``fang2024``'s float64 product of the
numerical part; scikit-learn's float64 product. "GEMM-bound %" is the time those products
would take at the ceilings divided by the wall time: 100% = as fast as the GEMM formulation
could possibly run; above 100% = faster than any GEMM formulation of the same search.
Element-wise work (square roots, argmin passes, the exact float64 re-evaluations) is not
counted as FLOPs.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import threadpool_limits

from tabmem._checks import resolve_n_jobs
from tabmem.data.datasets import load_dataset
from tabmem.data.schema import Schema
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.neighbors import NeighborIndex


def load() -> str:
    """The machine's load averages (``uptime``), to print next to every figure."""
    try:
        one, five, fifteen = os.getloadavg()
        return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"
    except OSError:  # pragma: no cover
        return "load unknown"


def gemm_ceiling(dtype: type, n: int = 2048, repeats: int = 5, clock=time.perf_counter) -> float:
    """Best GEMM GFLOP/s of this machine in ``dtype`` (all cores), timed by ``clock`` (``time.process_time``:
    per CPU second, which a loaded machine disturbs less; ``bench_scale`` times one thread so)."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n)).astype(dtype)
    b = rng.random((n, n)).astype(dtype)
    a @ b
    best = np.inf
    for _ in range(repeats):
        t0 = clock()
        a @ b
        best = min(best, clock() - t0)
    return 2 * n**3 / best / 1e9


def noisy_resample(train: pd.DataFrame, schema: Schema, n: int, seed: int = 0) -> pd.DataFrame:
    """Training rows resampled with Gaussian noise (5% of a std) on about half of the numerical cells."""
    rng = np.random.default_rng(seed)
    syn = train.sample(n, replace=True, random_state=seed).reset_index(drop=True)
    for c in schema.numerical:
        std = float(train[c].std())
        syn[c] = syn[c] + rng.normal(0, 0.05 * std, n) * (rng.random(n) < 0.5)
    return syn


# ------------------------------------------------------------------ baselines
def numpy_brute(distance: str, index: NeighborIndex, queries: pd.DataFrame, n_jobs: int, rows: int = 64):
    """Faithful float64 brute force of ``distance`` (column by column, blocks of ``rows`` queries).

    Uses the index's encoder only for the documented encodings (raw / range-scaled /
    standardised values, category codes); the distance itself is evaluated here from its
    definition, with ties going to the lowest index (stable two-pass argmin).
    """
    enc = index.encoder_
    ref = index._reference_clean  # type: ignore[attr-defined]
    qry = index.validate(queries, name="synthetic").data
    if distance == "fang2024":
        r_num, q_num = enc.numeric(ref), enc.numeric(qry)
    elif distance == "gower":
        rng = np.where(enc.range_ > 0, enc.range_, np.inf)
        r_num = np.where(np.isfinite(rng), (enc.numeric(ref) - enc.min_) / rng, 0.0)
        q_num = np.where(np.isfinite(rng), (enc.numeric(qry) - enc.min_) / rng, 0.0)
    else:
        std = np.where(enc.std_ > 0, enc.std_, 1.0)
        r_num, q_num = (enc.numeric(ref) - enc.mean_) / std, (enc.numeric(qry) - enc.mean_) / std
    r_cat, q_cat = enc.codes(ref), enc.codes(qry)
    m = enc.schema.n_columns
    n_q, n_r = len(qry), len(ref)
    idx = np.empty((n_q, 2), dtype=np.int64)
    dist = np.empty((n_q, 2))

    def block(start: int) -> None:
        sl = slice(start, min(start + rows, n_q))
        acc = np.zeros((sl.stop - sl.start, n_r))
        tmp = np.empty_like(acc)
        for c in range(r_num.shape[1]):
            np.subtract.outer(q_num[sl, c], r_num[:, c], out=tmp)
            if distance == "gower":
                np.abs(tmp, out=tmp)
                np.minimum(tmp, 1.0, out=tmp)
            else:
                np.multiply(tmp, tmp, out=tmp)
            acc += tmp
        mism = np.zeros_like(acc)
        for c in range(r_cat.shape[1]):
            mism += q_cat[sl, c][:, None] != r_cat[:, c][None, :]
        if distance == "fang2024":
            np.sqrt(acc, out=acc)
            lo, hi = acc.min(axis=1, keepdims=True), acc.max(axis=1, keepdims=True)
            sp = np.where(hi > lo, hi - lo, 1.0)
            d = ((acc - lo) / sp + mism) / m
        elif distance == "gower":
            d = (acc + mism) / m
        else:
            d = np.sqrt(acc + mism)
        r = np.arange(d.shape[0])
        i1 = d.argmin(axis=1)
        d1 = d[r, i1].copy()
        d[r, i1] = np.inf
        i2 = d.argmin(axis=1)
        idx[sl, 0], idx[sl, 1] = i1, i2
        dist[sl, 0], dist[sl, 1] = d1, d[r, i2]

    with threadpool_limits(1, "blas"), ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(block, range(0, n_q, rows)))
    return idx, dist


def sklearn_features(index: NeighborIndex, table: pd.DataFrame) -> np.ndarray:
    """tabmem's ``l2`` features (standardised numericals, one-hot / sqrt(2)) as a float64 array."""
    q = index.distance_.prepare(index.validate(table).data)
    return q.feats  # type: ignore[return-value]


def compare(fast: tuple[np.ndarray, np.ndarray], base: tuple[np.ndarray, np.ndarray]) -> str:
    """Same neighbours (except exact ties), same distances and ratios: the largest differences."""
    (fi, fd), (bi, bd) = fast, base
    with np.errstate(invalid="ignore", divide="ignore"):
        rel_d = np.nanmax(np.abs(fd - bd) / np.maximum(np.abs(bd), 1e-12 * np.nanmax(np.abs(bd))))
        fr, br = fd[:, 0] / fd[:, 1], bd[:, 0] / bd[:, 1]
        both = np.isfinite(fr) & np.isfinite(br)
        rel_r = float(np.max(np.abs(fr[both] - br[both]) / np.maximum(np.abs(br[both]), 1e-300), initial=0.0))
    nan_differ = int((np.isfinite(fr) != np.isfinite(br)).sum())
    differ = fi != bi
    tie = np.isclose(fd, bd, rtol=1e-12, atol=0)  # a different index at the same distance is a tie
    untied = int((differ & ~tie).sum())
    ok = untied == 0 and rel_d < 1e-9 and nan_differ == 0
    return (
        f"{'OK' if ok else 'MISMATCH'}: idx differ {int(differ.sum())} (all ties: {untied == 0}), "
        f"max rel diff d {rel_d:.1e}, ratio {rel_r:.1e}, ratio defined differently {nan_differ}"
    )


def timed(fn) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of the whole process, i.e. all its threads, result) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


# ------------------------------------------------------------------ main runs
def run_adult(data_dir: str | None, repeats: int, n_jobs: int | None, distances: list[str], rows: int) -> None:
    ds = load_dataset("adult", data_dir=data_dir)
    train, schema = ds.train, ds.schema
    syn = noisy_resample(train, schema, len(train))
    if rows:
        syn = syn.iloc[:rows].reset_index(drop=True)
    jobs = resolve_n_jobs(n_jobs)
    n = len(syn) * len(train)
    print(f"machine: {os.cpu_count()} cores, n_jobs={jobs}; {load()} at start")
    c32, c64 = gemm_ceiling(np.float32), gemm_ceiling(np.float64)
    print(f"GEMM ceilings (all cores, 2048^3): float32 {c32:.0f} GFLOP/s, float64 {c64:.0f} GFLOP/s")
    print(f"Adult: {len(train):,} training rows x {len(syn):,} synthetic rows (noisy resample), k = 2")

    indexes = {d: NeighborIndex(d, n_jobs=n_jobs).fit(train, schema) for d in distances}
    feat_index = indexes.get("l2") or NeighborIndex("l2", n_jobs=n_jobs).fit(train, schema)
    xt, xs = sklearn_features(feat_index, train), sklearn_features(feat_index, syn)
    queries = {d: ix.validate(syn, name="synthetic") for d, ix in indexes.items()}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in ["sklearn", *distances]}
    results: dict[str, object] = {}
    # interleaved: every repeat runs every method back to back, so all of them see the same load
    for _ in range(repeats):
        wall, cpu, out = timed(
            lambda: NearestNeighbors(n_neighbors=2, algorithm="brute", n_jobs=jobs).fit(xt).kneighbors(xs)
        )
        runs["sklearn"].append((wall, cpu))
        results["sklearn"] = (out[1], out[0])  # type: ignore[index]
        for d in distances:
            wall, cpu, results[d] = timed(lambda d=d: indexes[d].kneighbors(queries[d], k=2))
            runs[d].append((wall, cpu))
    print(f"timed runs done ({repeats} interleaved repeats); {load()}")
    t_sk, cpu_sk = min(w for w, _ in runs["sklearn"]), min(c for _, c in runs["sklearn"])
    print(
        f"{'distance':9s} {'method':29s} {'wall s':>7s} {'CPU s':>6s} {'rows/s':>7s} {'GFLOP/s':>13s} "
        f"{'GEMM-bound':>10s} {'vs base':>7s} {'vs sk L2':>8s}  check against the numpy float64 brute force"
    )
    for d in distances:
        index = indexes[d]
        index._reference_clean = index.validate(train, name="training").data  # type: ignore[attr-defined]
        t_base, cpu_base, base = timed(lambda d=d, index=index: numpy_brute(d, index, syn, jobs))
        ref = index.distance_.ref_
        f32 = f64 = 0.0
        if d == "fang2024":
            f64 = 2.0 * n * ref.aug.shape[1]
            f32 = 2.0 * n * ref.n_onehot
        elif d == "gower":
            f32 = 2.0 * n * ref.n_onehot
        else:
            f32 = 2.0 * n * ref.aug.shape[1]
        t_fast, cpu_fast = min(w for w, _ in runs[d]), min(c for _, c in runs[d])
        bound = (f32 / c32 + f64 / c64) / 1e9
        gf = f"{f32 / t_fast / 1e9:.0f} f32" + (f" +{f64 / t_fast / 1e9:.0f} f64" if f64 else "")
        print(
            f"{d:9s} {'tabmem NeighborIndex':29s} {t_fast:7.2f} {cpu_fast:6.1f} {len(syn) / t_fast:7,.0f} {gf:>13s} "
            f"{100 * bound / t_fast:9.0f}% {t_base / t_fast:6.1f}x {t_sk / t_fast:7.2f}x  {compare(results[d], base)}"
        )
        print(f"{'':9s}   runs (wall/CPU s): {', '.join(f'{w:.2f}/{c:.1f}' for w, c in runs[d])}")
        print(f"{'':9s} {'numpy brute force, float64':29s} {t_base:7.2f} {cpu_base:6.1f} {len(syn) / t_base:7,.0f}")
        if d == "l2":
            sk_gf = 2.0 * n * xt.shape[1] / 1e9
            print(
                f"{'':9s} {'scikit-learn brute (inexact)':29s} {t_sk:7.2f} {cpu_sk:6.1f} {len(syn) / t_sk:7,.0f} "
                f"{sk_gf / t_sk:9.0f} f64 {100 * sk_gf / c64 / t_sk:9.0f}% {t_base / t_sk:6.1f}x {1:7.2f}x  "
                f"{compare(results['sklearn'], base)}"
            )
    print(
        f"scikit-learn NearestNeighbors(brute).kneighbors(2) on tabmem's l2 features: {t_sk:.2f} s wall, "
        f"{cpu_sk:.1f} s CPU (runs: {', '.join(f'{w:.2f}/{c:.1f}' for w, c in runs['sklearn'])})"
    )
    print(
        "CPU-time ratios (less sensitive to other load): "
        + ", ".join(f"{d} {cpu_sk / min(c for _, c in runs[d]):.2f}x sklearn" for d in distances)
    )
    print(f"{load()} at end")


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
        f"(fitted state {base / 2**30:.2f} GiB, budget 1 GiB); {load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="datasets directory (load_dataset's data_dir)")
    parser.add_argument("--distances", default="fang2024,gower,l2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=None, help="worker threads (default: all available CPUs)")
    parser.add_argument("--rows", type=int, default=0, help="only the first ROWS synthetic rows (quick runs)")
    parser.add_argument("--large", type=int, default=0, help="run the memory check at this size instead")
    args = parser.parse_args()
    if args.large:
        run_large(args.large, args.distances.split(",")[0])
        return
    run_adult(args.data_dir, args.repeats, args.n_jobs, args.distances.split(","), args.rows)


if __name__ == "__main__":
    main()
