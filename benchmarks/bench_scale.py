"""Audit time against the GEMM floor, and peak memory, from 32k to 1M rows (``docs/scale.md``).

Usage (from the repo root; one thread, as on a loaded 2-core machine)::

    OMP_NUM_THREADS=1 python benchmarks/bench_scale.py --sizes 32000,100000 --extrapolate 300000,1000000

Training and synthetic tables of N rows each are Adult rows resampled with replacement, their
numerical cells jittered (5% of a standard deviation, about half of the cells: ``bench_replicas``'s
``noisy_resample``), the synthetic table resampled from the training one. Every point is one
``tabmem.runs.audit.audit_to_dir`` (distance evidence on, no holdout) in a fresh process, so that
its peak memory (``ru_maxrss``) and its in-memory cache are its own:

* ``cold``: an empty self-search cache: the audit runs two full searches, synthetic x training
  and training x training (authenticity), and stores the second;
* ``warm``: the same audit again in a new process, with the disk cache the cold run filled
  (:mod:`tabmem.memorization.selfsearch`): one search.

The **GEMM floor** of one N x M search is the time of the matrix products that a GEMM formulation
of it cannot avoid, at this machine's rates per CPU second measured (``bench_replicas.gemm_ceiling``
timed by ``time.process_time``, one thread) right before the point: ``2 N M F32 / rate32`` with ``F32`` the one-hot width (the categorical
match counts), plus for ``fang2024`` ``2 N M F64 / rate64`` with ``F64 = k + 2`` (its float64
numerical product). Ratios: search / floor (the kernel), audit / floor of the searches it ran.
Sizes listed under ``--probe-sizes`` are run whole except their searches, cut to their first
``--probe-rows`` query rows (each other query row gets a recycled answer): the fitted state, the blocks
and the outputs are full size, so the peak memory is measured, and the search seconds are the
measured seconds per query row times the rows (marked ``searches cut``); there the training table's
self-search runs as a k-nearest search (the symmetric one, ``tabmem.neighbors.symmetric``, cannot be
cut by query rows): an upper bound of a ``gower`` cold audit. Points listed under
``--extrapolate`` are not run: their times are the largest measured point's
ratio times their floor plus its other work scaled by N, their memory a straight line through
the measured peaks in N; they are marked ``extrapolated``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replicas import gemm_ceiling, load, noisy_resample  # noqa: E402

GIB = 2**30


# ------------------------------------------------------------------ one audit (child process)
def child(n: int, distance: str, data_dir: str, memory_gb: float, n_jobs: int, probe: int = 0) -> dict:
    """One audit of N x N in this process: its parts' seconds and its peak memory.

    ``probe`` > 0 cuts every search to its first ``probe`` query rows (the others get those rows'
    answers, recycled): the blocks, fitted state and outputs are full size, so the peak memory is
    the audit's; the search seconds are scaled up by ``queries / probe`` (reported as such).
    """
    from tabmem.data.datasets import load_dataset
    from tabmem.memorization import selfsearch
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.runs.audit import audit_to_dir

    if probe:
        _cut_searches(probe)

    t_import = time.perf_counter()  # after the imports: the start-up is what the driver adds
    ds = load_dataset("adult", data_dir=data_dir)
    train = noisy_resample(ds.train, ds.schema, n, seed=1)
    syn = noisy_resample(train, ds.schema, n, seed=2)
    schema = ds.schema
    del ds
    rss_tables = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = {"search": np.zeros(2), "self_search": np.zeros(2)}  # (wall, CPU) seconds
    score, self_search = ReplicaDetector.score, selfsearch.nearest_other_distance

    def timing(part, fn):  # noqa: ANN001, ANN202
        def run(*args, **kwargs):  # noqa: ANN202
            t = clock()
            out = fn(*args, **kwargs)
            times[part] += clock() - t
            return out

        return run

    ReplicaDetector.score = timing("search", score)  # type: ignore[method-assign]
    selfsearch.nearest_other_distance = timing("self_search", self_search)  # type: ignore[assignment]
    detector = ReplicaDetector(distance, n_jobs=n_jobs, memory_budget=int(memory_gb * GIB))
    t0 = clock()
    with tempfile.TemporaryDirectory() as out:
        audit_to_dir(detector, train, syn, schema, out)
    measured = clock() - t0
    total = measured.copy()
    for part, (m, n_q, spent) in zip(("search", "self_search"), _PROBED):  # the cut searches, scaled up
        extra = spent * (n_q / m - 1)
        times[part] += extra
        total += extra
    widths = {"f32": detector.distance_.ref_.n_onehot, "f64": 0}
    if distance == "fang2024":
        widths["f64"] = detector.distance_.ref_.aug.shape[1]  # type: ignore[union-attr]
    return {
        "n": n,
        "probe": probe,
        "distance": distance,
        "build_s": t0[0] - t_import,
        "audit_measured_s": measured[0],
        "audit_s": total[0],
        "audit_cpu_s": total[1],
        **{f"{k}_s": v[0] for k, v in times.items()},
        **{f"{k}_cpu_s": v[1] for k, v in times.items()},
        "widths": widths,
        "rss_tables": rss_tables,
        "rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def _cut_searches(probe: int) -> None:
    """Every ``NeighborIndex.kneighbors`` searches its first ``probe`` query rows only (``child``)."""
    import dataclasses

    import tabmem.memorization.authenticity as authenticity
    import tabmem.neighbors.index as index_module

    search = index_module.kneighbors
    # the symmetric self-search (tabmem.neighbors.symmetric) cannot be cut by query rows: the probe
    # times the k-nearest self-search instead (twice its cost: an upper bound)
    authenticity.nearest_other = lambda *args, **kwargs: None  # type: ignore[assignment]

    def cut(distance, queries, k=2, **kwargs):  # noqa: ANN001, ANN202 - kneighbors' signature
        n_q = len(queries)
        m = min(probe, n_q)
        part = {
            f.name: (v[:m] if isinstance(v := getattr(queries, f.name), np.ndarray) else v)
            for f in dataclasses.fields(queries)
        }
        progress = kwargs.pop("progress", None)
        t = clock()
        idx, dist = search(distance, dataclasses.replace(queries, **part), k, **kwargs)
        _PROBED.append((m, n_q, clock() - t))
        if progress:
            progress(n_q)
        rows = np.arange(n_q) % m
        return idx[rows], dist[rows]

    index_module.kneighbors = cut  # type: ignore[assignment]


_PROBED: list[tuple[int, int, np.ndarray]] = []  # (rows searched, rows asked, (wall, CPU) s) per cut search


def clock() -> np.ndarray:
    """(wall, CPU) seconds now; CPU time counts this process's threads (one here: the work done)."""
    return np.array([time.perf_counter(), time.process_time()])


#: --ab: (distance, module constant, before, after, what is timed)
AB = {
    "matches": ("gower", "_MATCH_BLOCK_BYTES", 1 << 62, 16 << 20, "match counts summed whole / in column tiles"),
}


def ab(kind: str, n: int, rows: int, repeats: int, data_dir: str) -> None:
    """One kernel part on the same blocks before and after a change of its constant, alternated (CPU s)."""
    import tabmem.neighbors.distances as distances
    from tabmem.data.datasets import load_dataset
    from tabmem.neighbors import NeighborIndex

    distance, constant, before, after, what = AB[kind]
    ds = load_dataset("adult", data_dir=data_dir)
    train = noisy_resample(ds.train, ds.schema, n, seed=1)
    index = NeighborIndex(distance, n_jobs=1).fit(train, ds.schema)
    d = index.distance_
    q = index.prepare(noisy_resample(train, ds.schema, rows * repeats, seed=2))
    spent: dict[str, list[float]] = {"before": [], "after": []}
    for r in range(repeats):
        block = slice(r * rows, (r + 1) * rows)
        order = [("before", before), ("after", after)]
        for name, value in order if r % 2 == 0 else order[::-1]:
            setattr(distances, constant, value)
            t = time.process_time()
            d._matches(None, q.codes[block])
            spent[name].append(time.process_time() - t)
    setattr(distances, constant, after)
    b, a = np.median(spent["before"]), np.median(spent["after"])
    print(
        f"{what}: {rows} x {n:,} blocks, {repeats} alternated repeats, CPU median "
        f"before {b * 1e3:.1f} ms, after {a * 1e3:.1f} ms: {b / a:.2f}x; {load()}"
    )


# ------------------------------------------------------------------ driver
def run_point(n: int, distance: str, mode: str, cache: Path, args: argparse.Namespace, probe: int = 0) -> dict:
    env = dict(os.environ, TABMEM_CACHE_DIR=str(cache), OMP_NUM_THREADS=str(args.n_jobs))
    env.pop("TABMEM_SELF_SEARCH_CACHE", None)  # cold: the cache folder is new (the run fills it); warm: it is full
    cmd = [sys.executable, __file__, "--child", str(n), distance, "--data-dir", args.data_dir]
    cmd += ["--memory-gb", str(args.memory_gb), "--n-jobs", str(args.n_jobs), "--probe", str(probe)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"child {n} {distance} {mode} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out.update(mode=mode, wall_s=wall, startup_s=wall - out["build_s"] - out["audit_measured_s"])
    return out


def floors(point: dict, c32: float, c64: float) -> float:
    n = float(point["n"])
    w = point["widths"]
    return 2 * n * n * (w["f32"] / (c32 * 1e9) + w["f64"] / (c64 * 1e9))


def rates(n_jobs: int) -> tuple[float, float]:
    """float32 and float64 GEMM GFLOP/s per CPU second (one thread: per second of work, whatever the load)."""
    with threadpool_limits(n_jobs):
        return gemm_ceiling(np.float32, clock=time.process_time), gemm_ceiling(np.float64, clock=time.process_time)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32000,100000")
    parser.add_argument("--extrapolate", default="300000,1000000")
    parser.add_argument("--distances", default="fang2024,gower")
    parser.add_argument("--data-dir", default=os.environ.get("TABMEM_DATA_DIR", "../shared/datasets"))
    parser.add_argument("--memory-gb", type=float, default=1.0, help="the search's memory budget (--memory-gb)")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--probe-sizes", default="", help="sizes run with every search cut to --probe query rows")
    parser.add_argument("--probe-rows", type=int, default=2048, help="query rows searched at --probe-sizes")
    parser.add_argument("--probe", type=int, default=0, help=argparse.SUPPRESS)  # the child's cut
    parser.add_argument("--json", default=None, help="also write every point here")
    parser.add_argument("--ab", choices=sorted(AB), default=None, help="only time one kernel change, before/after")
    parser.add_argument("--ab-n", type=int, default=1_000_000, help="reference rows of --ab")
    parser.add_argument("--child", nargs=2, metavar=("N", "DISTANCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        point = child(int(args.child[0]), args.child[1], args.data_dir, args.memory_gb, args.n_jobs, args.probe)
        print(json.dumps(point))
        return
    if args.ab:
        rows = int(args.memory_gb * GIB) // (24 * args.ab_n)  # the search's block rows (blocked.py)
        ab(args.ab, args.ab_n, int(np.clip(rows, 1, 128)), 10, args.data_dir)
        return

    print(f"machine: {os.cpu_count()} cores, n_jobs={args.n_jobs}, --memory-gb {args.memory_gb}; {load()} at start")
    head = (
        f"{'N':>9s} {'distance':9s} {'mode':5s} {'search s':>8s} {'cpu s':>7s} {'floor s':>7s} {'cpu/fl':>6s} "
        f"{'wall/fl':>7s} {'self s':>7s} {'audit s':>8s} {'cpu s':>7s} {'a cpu/fl':>8s} {'a-floor':>7s} {'start':>5s} "
        f"{'GiB':>5s}  GEMM f32/f64 GFLOP/s, load"
    )
    print(head)
    points: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [(int(s), 0) for s in args.sizes.split(",") if s]
        sizes += [(int(s), args.probe_rows) for s in args.probe_sizes.split(",") if s]
        for n, probe in sizes:
            for distance in args.distances.split(","):
                cache = Path(tmp) / f"{n}-{distance}"
                for mode in ("cold", "warm"):
                    c32, c64 = rates(args.n_jobs)  # measured right before the point: the same load
                    p = run_point(n, distance, mode, cache, args, probe)
                    p.update(c32=c32, c64=c64, floor_s=floors(p, c32, c64), load=load())
                    p["searches"] = 2 if p["self_search_s"] > 0 else 1
                    points.append(p)
                    show(p)
    for n in [int(s) for s in args.extrapolate.split(",") if s]:
        for distance in args.distances.split(","):
            for mode in ("cold", "warm"):
                show(extrapolate(points, n, distance, mode))
    if args.json:
        Path(args.json).write_text(json.dumps(points, indent=1))
    print(f"{load()} at end")


def show(p: dict) -> None:
    """One line: the search against its floor (CPU and wall), the audit against the floor of its searches."""
    floor = p["floor_s"]
    audit_floor = p["searches"] * floor
    tag = "  extrapolated" if p.get("extrapolated") else f"  {p['c32']:.0f}/{p['c64']:.0f}, {p['load']}"
    if p.get("probe") and not p.get("extrapolated"):
        tag += f"; searches cut to {p['probe']:,} query rows, times scaled up"
    print(
        f"{p['n']:>9,d} {p['distance']:9s} {p['mode']:5s} {p['search_s']:8.1f} {p['search_cpu_s']:7.1f} {floor:7.1f} "
        f"{p['search_cpu_s'] / floor:6.2f} {p['search_s'] / floor:7.2f} {p['self_search_s']:7.1f} {p['audit_s']:8.1f} "
        f"{p['audit_cpu_s']:7.1f} {p['audit_cpu_s'] / audit_floor:8.2f} {p['audit_cpu_s'] - audit_floor:7.1f} "
        f"{p['startup_s']:5.1f} {p['rss_peak'] / GIB:5.2f}{tag}",
        flush=True,
    )


def extrapolate(points: list[dict], n: int, distance: str, mode: str) -> dict:
    """Times: the largest point's (probed or whole) scaled by N^2; memory: a line through the two largest peaks."""
    same = sorted((p for p in points if p["distance"] == distance and p["mode"] == mode), key=lambda p: p["n"])
    last = same[-1]
    grow = (n / last["n"]) ** 2
    floor = last["floor_s"] * grow
    scaled = {k: last[k] * grow for k in ("search_s", "self_search_s", "search_cpu_s", "self_search_cpu_s")}
    rest = last["audit_s"] - last["search_s"] - last["self_search_s"]  # validation, evidence, writing: O(N) or so
    rest_cpu = last["audit_cpu_s"] - last["search_cpu_s"] - last["self_search_cpu_s"]
    if len(same) > 1:
        a, b = same[-2], same[-1]
        slope = (b["rss_peak"] - a["rss_peak"]) / (b["n"] - a["n"])
        peak = b["rss_peak"] + slope * (n - b["n"])
    else:
        peak = last["rss_peak"] * n / last["n"]
    return {
        **last,
        "n": n,
        "floor_s": floor,
        **scaled,
        "audit_s": scaled["search_s"] + scaled["self_search_s"] + rest * n / last["n"],
        "audit_cpu_s": scaled["search_cpu_s"] + scaled["self_search_cpu_s"] + rest_cpu * n / last["n"],
        "rss_peak": peak,
        "extrapolated": True,
    }


if __name__ == "__main__":
    main()
