"""One search kernel, two source trees, alternated in fresh processes: CPU seconds and the ratio to the GEMM floor.

Usage (from the repo root; ``--old-src`` a checkout of the code before the change, e.g.
``git archive <commit> src | tar -x -C /tmp/old``)::

    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_ab.py --old-src /path/to/old/src --n 300000 --distance fang2024
    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_ab.py --old-src /path/to/old/src --n 100000 --self-search
    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_ab.py --old-src - --n 100000 --repeats 3 --self-search-paths
    OMP_NUM_THREADS=1 python benchmarks/bench_kernel_ab.py --old-src - --n 1000000 --rows 44 --repeats 10 --pruned-chunks

Each child builds the N-row training table of ``bench_scale.py`` (Adult, or ``--dataset``, resampled and jittered), fits
the index (one thread), measures this machine's float32/float64 GEMM rates per CPU second (the floor,
``bench_scale.floors``), and times ``--repeats`` searches of the same ``--rows`` synthetic query rows
against all N training rows (``--self-search``: the training table's whole self-search,
:func:`tabmem.memorization.authenticity.nearest_other_distance`, instead). Children alternate
old, new, new, old, ...; the results of both trees must be the same bytes (checked).
``--self-search-paths``: in one process (this tree), the ``--distance`` self-search by the k-nearest search
and by the symmetric one (``tabmem.neighbors.symmetric``), alternated. ``--pruned-chunks``: in one
process, the pruned search's passes over one block, whole-block or on row chunks, alternated.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replicas import gemm_ceiling, load, noisy_resample  # noqa: E402

HERE = Path(__file__).resolve().parent


def child(
    n: int,
    distance: str,
    rows: int,
    repeats: int,
    self_search: bool,
    data_dir: str,
    part: str,
    holdout: bool,
    dataset: str = "adult",
) -> dict:
    from threadpoolctl import threadpool_limits

    from tabmem.data.datasets import load_dataset
    from tabmem.memorization.authenticity import nearest_other_distance
    from tabmem.neighbors import NeighborIndex

    ds = load_dataset(dataset, data_dir=data_dir)
    train = noisy_resample(ds.train, ds.schema, n, seed=1)
    index = NeighborIndex(distance, n_jobs=1).fit(train, ds.schema)
    queries = noisy_resample(ds.test if holdout else train, ds.schema, rows, seed=3 if holdout else 2)
    with threadpool_limits(1):
        c32 = gemm_ceiling(np.float32, clock=time.process_time)
        c64 = gemm_ceiling(np.float64, clock=time.process_time)
    ref = index.distance_.ref_
    f64 = ref.aug.shape[1] if distance == "fang2024" else 0  # type: ignore[union-attr]
    n_q = n if self_search else rows
    floor = 2 * n_q * n * (ref.n_onehot / (c32 * 1e9) + f64 / (c64 * 1e9))
    cpu, digest = [], ""
    for _ in range(repeats):
        t = time.process_time()
        if part == "matches":  # the match counts alone, of every block of the query rows (128 rows each)
            q = index.prepare(queries)
            out = np.concatenate(
                [index.distance_._matches(None, q.codes[s : s + 128]) for s in range(0, rows, 128)], axis=0
            )
        elif self_search:
            out = nearest_other_distance(index, train)
        else:
            out = np.concatenate(index.kneighbors(queries, k=2), axis=1)
        cpu.append(time.process_time() - t)
        digest = hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest()[:16]
    return {"cpu": cpu, "floor": floor, "c32": c32, "c64": c64, "digest": digest}


def self_search_paths(n: int, repeats: int, n_jobs: int, data_dir: str, distance: str) -> None:
    """In one process, alternated: the self-search by the k-nearest search (k = 2, the path before
    ``tabmem.neighbors.symmetric``) and by the symmetric search (each pair once); the same bytes."""
    from tabmem.data.datasets import load_dataset
    from tabmem.neighbors import NeighborIndex
    from tabmem.neighbors.symmetric import nearest_other

    ds = load_dataset("adult", data_dir=data_dir)
    train = noisy_resample(ds.train, ds.schema, n, seed=1)
    index = NeighborIndex(distance, n_jobs=n_jobs).fit(train, ds.schema)

    def knn() -> np.ndarray:
        idx, dist = index.kneighbors(train, k=2)
        return np.where(idx[:, 0] == np.arange(n), dist[:, 1], dist[:, 0])

    def sym() -> np.ndarray:
        return nearest_other(index.distance_, n_jobs=n_jobs)  # type: ignore[return-value]

    spent: dict[str, list[float]] = {"k-nearest": [], "symmetric": []}
    for r in range(repeats):
        out = {}
        for name, fn in [("k-nearest", knn), ("symmetric", sym)][:: 1 if r % 2 == 0 else -1]:
            t = time.process_time()
            out[name] = fn()
            spent[name].append(time.process_time() - t)
        assert out["k-nearest"].tobytes() == out["symmetric"].tobytes()
    a, b = np.median(spent["k-nearest"]), np.median(spent["symmetric"])
    print(
        f"{distance} self-search of {n:,} rows, {n_jobs} thread(s), {repeats} alternated repeats, same bytes: "
        f"CPU s k-nearest {[round(x, 2) for x in spent['k-nearest']]}, symmetric "
        f"{[round(x, 2) for x in spent['symmetric']]}; median {a:.2f} / {b:.2f} = {a / b:.2f}x; {load()}"
    )


def pruned_chunks(n: int, rows: int, repeats: int, distance: str, data_dir: str) -> None:
    """In one process, alternated: the pruned search's passes (after the match counts) over one block of
    ``rows`` x ``n`` as whole-block passes and on row chunks that stay in cache (``blocked._CACHE_BYTES``)."""
    import tabmem.neighbors.blocked as blocked
    from tabmem.data.datasets import load_dataset
    from tabmem.neighbors import NeighborIndex

    ds = load_dataset("adult", data_dir=data_dir)
    train = noisy_resample(ds.train, ds.schema, n, seed=1)
    index = NeighborIndex(distance, n_jobs=1).fit(train, ds.schema)
    q = index.prepare(noisy_resample(train, ds.schema, rows, seed=2))
    pb = index.distance_.pruned_block(q, slice(0, rows))
    chunk = blocked._CACHE_BYTES
    spent: dict[str, list[float]] = {"whole": [], "chunks": []}
    for r in range(repeats):
        for name, value in [("whole", 1 << 62), ("chunks", chunk)][:: 1 if r % 2 == 0 else -1]:
            blocked._CACHE_BYTES = value
            t = time.process_time()
            blocked._search_pruned(index.distance_, pb, 2)
            spent[name].append(time.process_time() - t)
    blocked._CACHE_BYTES = chunk
    a, b = np.median(spent["whole"]) * 1e3, np.median(spent["chunks"]) * 1e3
    print(
        f"{distance} pruned passes of one {rows} x {n:,} block, {repeats} alternated repeats, CPU ms median: "
        f"whole {a:.1f}, row chunks {b:.1f}: {a / b:.2f}x; {load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-src", required=True, help="the src/ folder of the code before the change")
    parser.add_argument("--new-src", default=str(HERE.parent / "src"))
    parser.add_argument("--n", type=int, default=300_000)
    parser.add_argument("--distance", default="fang2024")
    parser.add_argument("--rows", type=int, default=1024, help="query rows searched (not with --self-search)")
    parser.add_argument("--repeats", type=int, default=2, help="searches per child")
    parser.add_argument("--pairs", type=int, default=2, help="old/new child pairs, alternated")
    parser.add_argument("--self-search", action="store_true")
    parser.add_argument("--holdout", action="store_true", help="query rows: Adult's test split resampled (seed 3)")
    parser.add_argument(
        "--part", choices=("search", "matches"), default="search", help="matches: the match counts only"
    )
    parser.add_argument("--dataset", default="adult", help="the table resampled (not with the in-process modes)")
    parser.add_argument("--data-dir", default=os.environ.get("TABMEM_DATA_DIR", "../shared/datasets"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--self-search-paths", action="store_true", help="k-nearest vs symmetric self-search")
    parser.add_argument("--pruned-chunks", action="store_true", help="pruned passes: whole block vs row chunks")
    args = parser.parse_args()
    if args.pruned_chunks:
        pruned_chunks(args.n, args.rows, args.repeats, args.distance, args.data_dir)
        return
    if args.self_search_paths:
        self_search_paths(args.n, args.repeats, 1, args.data_dir, args.distance)
        return
    if args.child:
        point = child(
            args.n,
            args.distance,
            args.rows,
            args.repeats,
            args.self_search,
            args.data_dir,
            args.part,
            args.holdout,
            args.dataset,
        )
        print(json.dumps(point))
        return
    what = f"{args.dataset}: " + ("self-search" if args.self_search else f"{args.rows} query rows")
    what += ", match counts only" if args.part == "matches" else ""
    what += " (holdout rows)" if args.holdout else ""
    print(f"{args.distance}, {what} x {args.n:,} reference rows; {load()} at start", flush=True)
    got: dict[str, list[dict]] = {"old": [], "new": []}
    for p in range(args.pairs):
        for name in ("old", "new") if p % 2 == 0 else ("new", "old"):
            src = args.old_src if name == "old" else args.new_src
            env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1", TABMEM_SELF_SEARCH_CACHE="off")
            cmd = [
                sys.executable,
                __file__,
                "--child",
                "--old-src",
                src,
                "--n",
                str(args.n),
                "--distance",
                args.distance,
            ]
            cmd += ["--rows", str(args.rows), "--repeats", str(args.repeats), "--data-dir", args.data_dir]
            cmd += ["--dataset", args.dataset]
            cmd += ["--self-search"] if args.self_search else []
            cmd += ["--part", args.part] + (["--holdout"] if args.holdout else [])
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            got[name].append(r)
            print(f"  {name}: CPU s {[round(c, 2) for c in r['cpu']]}, floor {r['floor']:.2f} s, "
                  f"GEMM {r['c32']:.0f}/{r['c64']:.0f} GFLOP/s, {r['digest']}; {load()}", flush=True)  # fmt: skip
    digests = {r["digest"] for rs in got.values() for r in rs}
    med = {k: float(np.median([c for r in rs for c in r["cpu"]])) for k, rs in got.items()}
    fl = {k: float(np.median([r["floor"] for r in rs])) for k, rs in got.items()}
    print(
        f"median CPU s old {med['old']:.2f} (/floor {med['old'] / fl['old']:.2f}), new {med['new']:.2f} "
        f"(/floor {med['new'] / fl['new']:.2f}): old/new {med['old'] / med['new']:.2f}x; "
        f"same bytes: {len(digests) == 1}; {load()} at end"
    )


if __name__ == "__main__":
    main()
