"""The exact neighbour search and LevAtt's bag bounds: numpy (``--device cpu``) against torch on a device.

Usage (from the repo root; the same command on any machine)::

    python benchmarks/bench_device.py                          # CUDA when torch sees it, else torch's CPU device
    python benchmarks/bench_device.py --n-ref 1000000 --n-query 50000 --memory-gb 8

It detects CUDA (``torch.cuda.is_available()``); without it, it says that no GPU was found and
runs the torch path on torch's CPU device instead (smaller default sizes): those are *not* GPU
figures. One run, on one random mixed table (numerical columns and categorical columns of
Adult-like cardinalities; the queries are noisy copies of reference rows, so the nearest rows
are close and some are exact copies), per distance (``gower``, ``fang2024``, ``l2``):

* ``NeighborIndex(distance).kneighbors(queries, k=2)`` with numpy (all CPUs) and inside
  ``use_device(device)``, best wall time of ``--repeats`` after one warm-up call (CUDA start-up and
  moving the reference to the device are not timed);
* query rows per second, and the rate of the distance's GEMM work: ``2 x n_query x n_ref x width``
  FLOP per product (``l2``: the float32 product of the augmented features; ``fang2024``: the
  float64 product of the numerical part plus the float32 one-hot product; ``gower``: the float32
  one-hot product only, its L1 part is element-wise and not counted);
* the host's (numpy, all CPUs) and the device's float32 and float64 GEMM ceilings (best of a few
  square products), and each path's time over its GEMM floor (``x floor``: its GEMM FLOP at its
  ceilings; ``gower``'s element-wise L1 is outside the floor, so its ratio is large);
* equality: the device's neighbours and distances must equal numpy's bit for bit (exit status 1
  otherwise).

LevAtt: the bag-distance lower bounds of ``--n-strings`` serialised rows against as many
(``LevenshteinIndex.lower_bounds``: a float32 product of unary count codes), numpy against the
device, GFLOP/s of that product, and equality; then the whole search of ``--n-search`` queries in
one process on both paths (equality, and the share of its time the bounds take: all a device can
save there, the rest is RapidFuzz on the CPU).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.neighbors import NeighborIndex, device
from tabmem.neighbors.levenshtein import LevenshteinIndex

CARDINALITIES = (9, 16, 7, 15, 6, 5, 2, 42)  # Adult's categorical columns


def mixed_table(n: int, n_num: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    cols: dict[str, np.ndarray] = {}
    for j in range(n_num):
        cols[f"x{j}"] = np.round(rng.lognormal(3.0, 1.0, n), 1) if j % 2 else rng.integers(17, 90, n).astype(float)
    for j, card in enumerate(CARDINALITIES):
        p = rng.dirichlet(np.ones(card))
        cols[f"c{j}"] = rng.choice([f"v{v}" for v in range(card)], n, p=p)
    df = pd.DataFrame(cols)
    num = tuple(c for c in df if c.startswith("x"))
    return df, Schema(tuple(df.columns), num, tuple(c for c in df if c.startswith("c")))


def noisy_queries(ref: pd.DataFrame, schema: Schema, n: int, seed: int) -> pd.DataFrame:
    """Reference rows resampled; noise (5% of a std) on half of the numerical cells; a tenth exact copies."""
    rng = np.random.default_rng(seed)
    q = ref.sample(n, replace=True, random_state=seed).reset_index(drop=True)
    copy = rng.random(n) < 0.1
    for c in schema.numerical:
        noise = rng.normal(0, 0.05 * ref[c].std(), n) * (rng.random(n) < 0.5) * ~copy
        q[c] = q[c] + noise
    return q


def gemm_ceiling(dev, dtype, n: int, repeats: int = 5) -> float:
    """Best GEMM GFLOP/s of ``dev`` in ``dtype`` (torch, full precision)."""
    import torch

    a = torch.rand((n, n), dtype=dtype, device=dev)
    b = torch.rand((n, n), dtype=dtype, device=dev)
    best = np.inf
    with device._full_precision():
        for _ in range(repeats + 1):
            _sync(dev)
            t0 = time.perf_counter()
            a @ b
            _sync(dev)
            best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def host_ceiling(dtype, n: int = 2048, repeats: int = 3) -> float:
    """Best numpy GEMM GFLOP/s of this host in ``dtype`` (all cores)."""
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)).astype(dtype), rng.random((n, n)).astype(dtype)
    best, _ = best_time(lambda: a @ b, repeats + 1)
    return 2 * n**3 / best / 1e9


def _sync(dev) -> None:
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def best_time(fn, repeats: int):
    out, best = None, np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def gemm_flops(index: NeighborIndex, n_query: int) -> dict[str, float]:
    """FLOP of the distance's GEMMs for ``n_query`` rows against the whole reference, by precision."""
    dist = index.distance_
    n_ref, onehot = dist.n_ref, dist.ref_.n_onehot
    cells = 2.0 * n_query * n_ref
    name = index.distance if isinstance(index.distance, str) else type(dist).__name__
    if name == "l2":
        return {"f32": cells * dist.ref_.aug.shape[1], "f64": 0.0}
    if name == "fang2024":
        return {"f32": cells * onehot, "f64": cells * dist.ref_.aug.shape[1]}
    return {"f32": cells * onehot, "f64": 0.0}


def bench_search(args, dev, label: str, ceilings: dict[str, tuple[float, float]]) -> bool:
    ref, schema = mixed_table(args.n_ref, args.n_num, seed=0)
    queries = noisy_queries(ref, schema, args.n_query, seed=1)
    budget = int(args.memory_gb * 2**30)
    ok = True
    print(f"\nexact 2-NN search, {args.n_query:,} queries x {args.n_ref:,} reference rows, "
          f"{args.n_num} numerical + {len(CARDINALITIES)} categorical columns")  # fmt: skip
    print(f"{'distance':10} {'path':10} {'seconds':>9} {'rows/s':>12} {'GFLOP/s f32':>12} {'GFLOP/s f64':>12} "
          f"{'x floor':>8}  result")  # fmt: skip
    for name in ("gower", "fang2024", "l2"):
        index = NeighborIndex(name, n_jobs=-1, memory_budget=budget).fit(ref, schema)
        q = index.prepare(queries)
        flops = gemm_flops(index, args.n_query)
        t_np, (i_np, d_np) = best_time(lambda index=index, q=q: index.kneighbors(q, k=2), args.repeats)
        with device.use_device(label):
            index.kneighbors(index.prepare(queries.iloc[:256]), k=2)  # warm-up: start-up, reference to the device
            t_dev, (i_dev, d_dev) = best_time(lambda index=index, q=q: index.kneighbors(q, k=2), args.repeats)
        same = np.array_equal(i_np, i_dev) and np.array_equal(d_np, d_dev)
        ok &= same
        for path, t in (("numpy", t_np), (label, t_dev)):
            f32 = flops["f32"] / t / 1e9
            f64 = flops["f64"] / t / 1e9
            c32, c64 = ceilings["host" if path == "numpy" else "device"]
            floor = flops["f32"] / 1e9 / c32 + flops["f64"] / 1e9 / c64  # the GEMMs alone at the ceilings
            verdict = "" if path == "numpy" else ("identical" if same else "DIFFERENT")
            print(f"{name:10} {path:10} {t:9.3f} {args.n_query / t:12,.0f} {f32:12.1f} {f64:12.1f} "
                  f"{t / floor:8.1f}  {verdict}")  # fmt: skip
        print(f"{'':10} {'speed-up':10} {t_np / t_dev:9.2f}x")
    return ok


def bench_levatt(args, label: str) -> bool:
    ref, schema = mixed_table(args.n_strings, args.n_num, seed=3)
    rows = [",".join(map(str, r)) for r in ref.itertuples(index=False)]
    noisy = noisy_queries(ref, schema, args.n_strings, seed=4)
    queries = [",".join(map(str, r)) for r in noisy.itertuples(index=False)]
    index = LevenshteinIndex(n_jobs=1).fit(rows)
    dim = index.codes_t_.shape[0]
    flop = 2.0 * len(queries) * len(rows) * dim
    t_np, lb_np = best_time(lambda: index.lower_bounds(queries), args.repeats)
    sub = queries[: args.n_search]
    t_search, res_np = best_time(lambda: index.query(sub), 1)
    t_sub_bounds, _ = best_time(lambda: index.lower_bounds(sub), args.repeats)
    with device.use_device(label):
        index.lower_bounds(queries[:64])  # warm-up
        t_dev, lb_dev = best_time(lambda: index.lower_bounds(queries), args.repeats)
        t_search_dev, res_dev = best_time(lambda: index.query(sub), 1)
    same = np.array_equal(lb_np, lb_dev)
    same_search = np.array_equal(res_np.distance, res_dev.distance) and np.array_equal(res_np.index, res_dev.index)
    print(f"\nLevAtt bag bounds, {len(queries):,} x {len(rows):,} row strings, {dim} unary code columns")
    print(f"{'path':10} {'seconds':>9} {'rows/s':>12} {'GFLOP/s f32':>12}  result")
    for path, t in (("numpy", t_np), (label, t_dev)):
        verdict = "" if path == "numpy" else ("identical" if same else "DIFFERENT")
        print(f"{path:10} {t:9.3f} {len(queries) / t:12,.0f} {flop / t / 1e9:12.1f}  {verdict}")
    print(f"{'speed-up':10} {t_np / t_dev:9.2f}x")
    print(f"whole LevAtt search (one process) on {len(sub):,} queries: numpy {t_search:.2f} s, of which the bag "
          f"bounds {t_sub_bounds:.2f} s ({100 * t_sub_bounds / t_search:.0f}%); {label} {t_search_dev:.2f} s; "
          f"{'identical' if same_search else 'DIFFERENT'}")  # fmt: skip
    return same and same_search


def main(argv: list[str] | None = None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-ref", type=int, default=None, help="reference rows (default 100000 on CUDA, 4000 without)")
    p.add_argument("--n-query", type=int, default=None, help="query rows (default 20000 on CUDA, 2000 without)")
    p.add_argument("--n-num", type=int, default=6, help="numerical columns")
    p.add_argument("--n-strings", type=int, default=None, help="LevAtt strings (default 20000 on CUDA, 2000 without)")
    p.add_argument("--n-search", type=int, default=500, help="LevAtt queries of the whole search (timed, checked)")
    p.add_argument("--memory-gb", type=float, default=4.0, help="working memory of each search (host or device)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default=None, help="cuda, cuda:N or torch-cpu (default: cuda when present)")
    args = p.parse_args(argv)
    cuda = torch.cuda.is_available()
    label = args.device or ("cuda" if cuda else device.TORCH_CPU)
    dev = device.torch_device(label)
    big = dev.type == "cuda"
    args.n_ref = args.n_ref or (100_000 if big else 4_000)
    args.n_query = args.n_query or (20_000 if big else 2_000)
    args.n_strings = args.n_strings or (20_000 if big else 2_000)
    print(f"torch {torch.__version__}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    if big:
        print(f"GPU: {torch.cuda.get_device_name(dev)}")
    else:
        print("no GPU found (torch.cuda.is_available() is False): the torch path runs on torch's CPU device; "
              "these are not GPU figures")  # fmt: skip
    n = 8192 if big else 1024
    ceilings = {
        "host": (host_ceiling(np.float32), host_ceiling(np.float64)),
        "device": (gemm_ceiling(dev, torch.float32, n), gemm_ceiling(dev, torch.float64, n)),
    }
    for where, (c32, c64) in ceilings.items():
        print(f"{where} GEMM ceilings: float32 {c32:,.0f} GFLOP/s, float64 {c64:,.0f} GFLOP/s")
    ok = bench_search(args, dev, label, ceilings)
    ok &= bench_levatt(args, label)
    print("\nall results identical to numpy" if ok else "\nRESULTS DIFFER FROM NUMPY")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
