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
of it cannot avoid, at this machine's rates measured (``bench_replicas.gemm_ceiling``, one thread)
right before the point: ``2 N M F32 / rate32`` with ``F32`` the one-hot width (the categorical
match counts), plus for ``fang2024`` ``2 N M F64 / rate64`` with ``F64 = k + 2`` (its float64
numerical product). Ratios: search / floor (the kernel), audit / floor of the searches it ran.
Points listed under ``--extrapolate`` are not run: their times are the largest measured point's
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
def child(n: int, distance: str, data_dir: str, memory_gb: float, n_jobs: int) -> dict:
    """One audit of N x N in this process: its parts' seconds and its peak memory."""
    from tabmem.data.datasets import load_dataset
    from tabmem.memorization import selfsearch
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.runs.audit import audit_to_dir

    t_import = time.perf_counter()
    ds = load_dataset("adult", data_dir=data_dir)
    train = noisy_resample(ds.train, ds.schema, n, seed=1)
    syn = noisy_resample(train, ds.schema, n, seed=2)
    schema = ds.schema
    del ds
    rss_tables = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = {"search": 0.0, "self_search": 0.0}
    score, self_search = ReplicaDetector.score, selfsearch.nearest_other_distance

    def timed_score(self, *args, **kwargs):
        t = time.perf_counter()
        out = score(self, *args, **kwargs)
        times["search"] += time.perf_counter() - t
        return out

    def timed_self(*args, **kwargs):
        t = time.perf_counter()
        out = self_search(*args, **kwargs)
        times["self_search"] += time.perf_counter() - t
        return out

    ReplicaDetector.score = timed_score  # type: ignore[method-assign]
    selfsearch.nearest_other_distance = timed_self  # type: ignore[assignment]
    detector = ReplicaDetector(distance, n_jobs=n_jobs, memory_budget=int(memory_gb * GIB))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        audit_to_dir(detector, train, syn, schema, out)
    total = time.perf_counter() - t0
    widths = {"f32": detector.distance_.ref_.onehot.shape[1], "f64": 0}
    if distance == "fang2024":
        widths["f64"] = detector.distance_.ref_.aug.shape[1]  # type: ignore[union-attr]
    return {
        "n": n,
        "distance": distance,
        "build_s": t0 - t_import,
        "audit_s": total,
        **{f"{k}_s": v for k, v in times.items()},
        "widths": widths,
        "rss_tables": rss_tables,
        "rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


# ------------------------------------------------------------------ driver
def run_point(n: int, distance: str, mode: str, cache: Path, args: argparse.Namespace) -> dict:
    env = dict(os.environ, TABMEM_CACHE_DIR=str(cache), OMP_NUM_THREADS=str(args.n_jobs))
    env.pop("TABMEM_SELF_SEARCH_CACHE", None)  # cold: the cache folder is new (the run fills it); warm: it is full
    cmd = [sys.executable, __file__, "--child", str(n), distance, "--data-dir", args.data_dir]
    cmd += ["--memory-gb", str(args.memory_gb), "--n-jobs", str(args.n_jobs)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"child {n} {distance} {mode} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out.update(mode=mode, wall_s=wall, startup_s=wall - out["build_s"] - out["audit_s"])
    return out


def floors(point: dict, c32: float, c64: float) -> float:
    n = float(point["n"])
    w = point["widths"]
    return 2 * n * n * (w["f32"] / (c32 * 1e9) + w["f64"] / (c64 * 1e9))


def rates(n_jobs: int) -> tuple[float, float]:
    with threadpool_limits(n_jobs):
        return gemm_ceiling(np.float32), gemm_ceiling(np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32000,100000")
    parser.add_argument("--extrapolate", default="300000,1000000")
    parser.add_argument("--distances", default="fang2024,gower")
    parser.add_argument("--data-dir", default=os.environ.get("TABMEM_DATA_DIR", "../shared/datasets"))
    parser.add_argument("--memory-gb", type=float, default=1.0, help="the search's memory budget (--memory-gb)")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write every point here")
    parser.add_argument("--child", nargs=2, metavar=("N", "DISTANCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1], args.data_dir, args.memory_gb, args.n_jobs)))
        return

    print(f"machine: {os.cpu_count()} cores, n_jobs={args.n_jobs}, --memory-gb {args.memory_gb}; {load()} at start")
    head = (
        f"{'N':>9s} {'distance':9s} {'mode':5s} {'search s':>8s} {'floor s':>7s} {'s/floor':>7s} {'self s':>7s} "
        f"{'audit s':>8s} {'a/floor':>7s} {'a-floor':>7s} {'start s':>7s} {'peak GiB':>8s}  GEMM f32/f64 GFLOP/s, load"
    )
    print(head)
    points: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.sizes.split(",") if s]:
            for distance in args.distances.split(","):
                cache = Path(tmp) / f"{n}-{distance}"
                for mode in ("cold", "warm"):
                    c32, c64 = rates(args.n_jobs)  # measured right before the point: the same load
                    p = run_point(n, distance, mode, cache, args)
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
    floor = p["floor_s"]
    audit_floor = p["searches"] * floor
    tag = "  extrapolated" if p.get("extrapolated") else f"  {p['c32']:.0f}/{p['c64']:.0f}, {p['load']}"
    print(
        f"{p['n']:>9,d} {p['distance']:9s} {p['mode']:5s} {p['search_s']:8.1f} {floor:7.1f} "
        f"{p['search_s'] / floor:7.2f} {p['self_search_s']:7.1f} {p['audit_s']:8.1f} {p['audit_s'] / audit_floor:7.2f} "
        f"{p['audit_s'] - audit_floor:7.1f} {p['startup_s']:7.1f} {p['rss_peak'] / GIB:8.2f}{tag}",
        flush=True,
    )


def extrapolate(points: list[dict], n: int, distance: str, mode: str) -> dict:
    """Times: the largest measured point's ratios at this N's floor; memory: a line through the peaks."""
    same = sorted((p for p in points if p["distance"] == distance and p["mode"] == mode), key=lambda p: p["n"])
    last = same[-1]
    grow = (n / last["n"]) ** 2
    floor = last["floor_s"] * grow
    rest = last["audit_s"] - last["search_s"] - last["self_search_s"]  # validation, evidence, writing: O(N) or so
    search, self_s = last["search_s"] * grow, last["self_search_s"] * grow
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
        "search_s": search,
        "self_search_s": self_s,
        "audit_s": search + self_s + rest * n / last["n"],
        "rss_peak": peak,
        "extrapolated": True,
    }


if __name__ == "__main__":
    main()
