"""Benchmark of LevAtt's exact min-Levenshtein search against brute-force baselines, same run, same data.

Data (CASP-like): CASP rows shuffled (seed 0); members = 20,000 rows;
synthetic = one-digit leaks of 16,000 members + 16,000 other real rows (32,000); queries =
1,000 members + 1,000 non-members (2,000). Rows are serialised with ``--format`` (``canonical``,
LevAtt's default, and/or the paper's ``paper_sft``).

Timed, all on the same strings:

* ``tabmem``: :class:`tabmem.neighbors.levenshtein.LevenshteinIndex` (fit + query), 2 workers and 1;
* (a) ``rapidfuzz.process.cdist`` + row minimum (1 worker; chunked so memory stays bounded);
* (b) the paper's Python double loop ``min(Levenshtein.distance(q, s) for s in S)``;
* (c) ``rapidfuzz.process.extractOne`` per query, spread over 2 processes;
* ceiling: ``cdist`` with ``workers=2`` (all the machine's cores on RapidFuzz's brute force).

Baselines run on a stratified subsample of queries (half members, half non-members) and are
extrapolated linearly in the number of queries (their cost is exactly linear in it); minima are
checked equal to ours on every subsample. The machine is shared: each timing is the minimum of
``--repeat`` runs, and ratios are what to read.

    python benchmarks/bench_levatt.py                        # quick (baselines on 100-200 queries)
    python benchmarks/bench_levatt.py --baseline-queries 2000  # full cdist/extractOne baselines
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from _paths import default_data_dir
from tabmem.attacks.leaks import one_digit_leak
from tabmem.data.serialization import get_serializer
from tabmem.neighbors.levenshtein import LevenshteinIndex


def make_data(n_queries: int, n_synthetic: int, data_dir: str | None) -> tuple[pd.DataFrame, pd.DataFrame, object, int]:
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("casp", data_dir=data_dir)
    df = pd.concat([ds.train, ds.test], ignore_index=True)
    rng = np.random.default_rng(0)
    df = df.iloc[rng.permutation(len(df))].reset_index(drop=True)
    half_s, half_q = n_synthetic // 2, n_queries // 2
    n_members = min(20_000, len(df) - n_synthetic // 2 - half_q)
    members = df.iloc[:n_members]
    outsiders = df.iloc[n_members : n_members + half_s]
    non_members = df.iloc[n_members + half_s : n_members + half_s + half_q]
    synthetic = pd.concat(
        [one_digit_leak(members.iloc[:half_s], ds.schema, random_state=1), outsiders], ignore_index=True
    )
    queries = pd.concat([members.iloc[rng.choice(n_members, half_q, replace=False)], non_members], ignore_index=True)
    return queries, synthetic, ds.schema, half_q


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (worker processes)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(fn, repeat: int):
    """(min wall seconds, min CPU seconds, result) over ``repeat`` runs."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        t, c = time.perf_counter(), _cpu()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    return min(walls), min(cpus), out


def cdist_min(q: list[str], s: list[str], workers: int = 1, chunk: int = 32) -> np.ndarray:
    out = []
    for a in range(0, len(q), chunk):
        d = process.cdist(q[a : a + chunk], s, scorer=Levenshtein.distance, dtype=np.int32, workers=workers)
        out.append(d.min(axis=1))
    return np.concatenate(out)


def paper_loop(q: list[str], s: list[str]) -> np.ndarray:
    return np.array([min(Levenshtein.distance(x, y) for y in s) for x in q])


_S: list[str] = []


def _extract_chunk(qs: list[str]) -> list[int]:
    return [int(process.extractOne(x, _S, scorer=Levenshtein.distance)[1]) for x in qs]


def extract_one_2proc(q: list[str], s: list[str]) -> np.ndarray:
    global _S
    _S = s
    import multiprocessing as mp

    chunks = [q[i::2] for i in range(2)]
    with ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as ex:
        parts = list(ex.map(_extract_chunk, chunks))
    out = np.empty(len(q), dtype=np.int64)
    out[0::2], out[1::2] = parts[0], parts[1]
    return out


def stratified(q: list[str], n_half: int, k: int) -> tuple[list[str], np.ndarray]:
    idx = np.r_[np.arange(min(k // 2, n_half)), n_half + np.arange(min(k - k // 2, len(q) - n_half))]
    return [q[i] for i in idx], idx


def run(fmt: str, queries: pd.DataFrame, synthetic: pd.DataFrame, schema, n_half: int, args) -> None:
    ser = get_serializer(fmt).fit(synthetic, schema)
    S, Q = ser.serialize(synthetic), ser.serialize(queries)
    nq, ns = len(Q), len(S)
    print(
        f"\n== format {fmt}: {nq} queries x {ns} synthetic rows, mean length {np.mean([len(x) for x in S]):.1f} chars"
    )
    w2, c2, res = best_of(lambda: LevenshteinIndex(n_jobs=2).fit(S).query(Q), args.repeat)
    w1, c1, res1 = best_of(lambda: LevenshteinIndex(n_jobs=1).fit(S).query(Q), 1)
    assert np.array_equal(res.distance, res1.distance)
    idx = LevenshteinIndex(n_jobs=1).fit(S)
    wm, cm, _ = best_of(lambda: idx.query(Q[:n_half]), 1)
    wn, cn, _ = best_of(lambda: idx.query(Q[n_half:]), 1)
    print(
        f"tabmem 2 workers: wall {w2:.2f} s, CPU {c2:.2f} s | 1 worker: wall {w1:.2f} s, CPU {c1:.2f} s | "
        f"exact Levenshtein on {res.n_exact / res.n_pairs:.2%} of pairs"
    )
    print(
        f"       1 worker CPU: member queries {cm:.2f} s, non-member queries {cn:.2f} s; median min distance "
        f"members {np.median(res.distance[:n_half]):.0f}, non-members {np.median(res.distance[n_half:]):.0f}"
    )
    rows = []
    for name, fn, k in [
        ("(a) cdist + row min, 1 worker", lambda q: cdist_min(q, S), args.baseline_queries),
        ("(b) paper's Python loop", lambda q: paper_loop(q, S), args.loop_queries),
        ("(c) extractOne over 2 processes", lambda q: extract_one_2proc(q, S), args.baseline_queries),
        ("ceiling: cdist, 2 workers", lambda q: cdist_min(q, S, workers=2), args.baseline_queries),
    ]:
        sub, sub_idx = stratified(Q, n_half, k)
        w, c, d = best_of(lambda fn=fn, sub=sub: fn(sub), args.repeat if k <= 200 else 1)
        same = np.array_equal(d, res.distance[sub_idx])
        scale = nq / len(sub)
        rows.append((name, len(sub), w * scale, c * scale, same))
    print(
        f"{'baseline (extrapolated to all queries)':40s} {'timed q':>7s} {'wall s':>8s} {'CPU s':>8s} "
        f"{'x wall (ours 2w)':>16s} {'x CPU (ours 1w)':>15s} {'same minima':>11s}"
    )
    for name, k, w, c, same in rows:
        print(f"{name:40s} {k:7d} {w:8.1f} {c:8.1f} {w / w2:16.1f} {c / c1:15.1f} {str(same):>11s}")
        assert same, f"minima differ from {name}"
    print("(CPU time is the fairer ratio on a shared, oversubscribed machine; wall time needs idle cores)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--synthetic", type=int, default=32000)
    p.add_argument("--format", default="both", choices=["canonical", "paper_sft", "both"])
    p.add_argument(
        "--baseline-queries", type=int, default=100, help="queries timed for cdist / extractOne (extrapolated)"
    )
    p.add_argument("--loop-queries", type=int, default=10, help="queries timed for the paper's loop (extrapolated)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    args = p.parse_args()
    queries, synthetic, schema, n_half = make_data(args.queries, args.synthetic, args.data_dir)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (shared; read the ratios)")
    for fmt in ["canonical", "paper_sft"] if args.format == "both" else [args.format]:
        run(fmt, queries, synthetic, schema, n_half, args)


if __name__ == "__main__":
    main()
