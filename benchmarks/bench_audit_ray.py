"""One audit, three places: in this process, local worker processes, a Ray cluster; identical files, wall times.

The same Adult audit (32,561 synthetic rows against the 32,561 training rows, the 16,281 test rows
as holdout, with distance evidence: three full searches) runs

* ``local``: in this process, one search thread (``audit_to_dir`` with its defaults);
* ``workers``: ``executor="local", jobs=2``: two spawned worker processes of one thread each;
* ``ray``: ``executor="ray"`` on the cluster at ``--address`` (tasks of one CPU each), recording
  which node ran each shard;

and compares the four files byte for byte (sha256; the audit is untimed, so ``summary.json`` holds
no seconds). It also measures what shipping the fitted index costs: the pickled size of the fitted
:class:`~tabmem.neighbors.NeighborIndex` and the seconds to pickle and unpickle it, next to the
seconds to fit it (what every task would pay to refit from the training table instead).

A two-node cluster on one machine (Ray 2.5x needs token authentication for a second node)::

    export RAY_AUTH_MODE=token PYTHONPATH=$PWD/src   # the nodes' workers import this checkout
    ray get-auth-token --generate > /dev/null
    ray start --head --num-cpus 1 --port 6391 --temp-dir /tmp/ray_i26 --include-dashboard=false
    ray start --address <head ip>:6391 --num-cpus 1
    python benchmarks/bench_audit_ray.py --address <head ip>:6391 --out runs/bench_audit_ray.json
    ray stop

On one 2-core machine the wall times show no speed-up (both nodes share the same cores); the point
is that the cluster gives the local files and what the distribution costs.
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import json
import pickle
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from _paths import default_data_dir, require_data_dir

FILES = ("summary.json", "replicas.csv", "records.csv", "rare_values.csv")


def tables(data_dir: Path, rows: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Any]:
    """Adult's training rows, ``rows`` synthetic rows (training rows drawn with replacement, ages of every
    other one moved by one year: copies and near-copies) and the test rows as holdout."""
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=data_dir)
    train = ds.train.reset_index(drop=True)
    syn = train.sample(rows, replace=True, random_state=0).reset_index(drop=True)
    syn.loc[syn.index % 2 == 1, "age"] += 1
    return train, syn, ds.test.reset_index(drop=True), ds.schema


def shipping_cost(train: pd.DataFrame, schema: Any, distance: str) -> dict[str, float]:
    """Fit seconds of the index, and the pickled size and pickle + unpickle seconds of the fitted index."""
    from tabmem.memorization.replicas import ReplicaDetector

    t = time.perf_counter()
    detector = ReplicaDetector(distance, n_jobs=1).fit(train, schema)
    fit_s = time.perf_counter() - t
    t = time.perf_counter()
    blob = pickle.dumps(detector.index_, protocol=pickle.HIGHEST_PROTOCOL)
    pickle.loads(blob)
    return {
        "detector_fit_s": fit_s,
        "index_pickle_mb": len(blob) / 2**20,
        "index_pickle_unpickle_s": time.perf_counter() - t,
    }


def _on_node(fn: Any, payload: Any) -> tuple[Any, str]:
    """A shard's result with the Ray node that computed it."""
    import ray

    return fn(payload), ray.get_runtime_context().get_node_id()


def trace_nodes(nodes: collections.Counter[str]) -> None:
    """Count, per Ray node, the shards it searched (wraps the searches' pool; results unchanged)."""
    import tabmem.runs.searches as searches

    pool = searches.run_pool

    def traced(fn: Any, payloads: Any, *, on_done: Any, **kw: Any) -> None:
        if kw.get("executor") != "ray":
            return pool(fn, payloads, on_done=on_done, **kw)

        def done(i: int, result: tuple[Any, str]) -> None:
            nodes[result[1][:12]] += 1
            on_done(i, result[0])

        pool(functools.partial(_on_node, fn), payloads, on_done=done, **kw)

    searches.run_pool = traced


def audit(where: str, train, syn, hold, schema, distance: str, address: str | None, out: Path) -> float:
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.runs.audit import audit_to_dir

    kw: dict[str, Any] = {
        "local": {},
        "workers": {"executor": "local", "jobs": 2},
        "ray": {"executor": "ray", "address": address},
    }[where]
    t = time.perf_counter()
    audit_to_dir(ReplicaDetector(distance, n_jobs=1), train, syn, schema, out, holdout=hold, **kw)
    return time.perf_counter() - t


def digests(out: Path) -> dict[str, str]:
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in FILES}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--address", required=True, help="the Ray cluster (host:port of its head)")
    p.add_argument("--rows", type=int, default=32_561, help="synthetic rows")
    p.add_argument("--distance", default="gower")
    p.add_argument("--repeats", type=int, default=2, help="runs of each (in turns: local, workers, ray)")
    p.add_argument("--data-dir", default=default_data_dir())
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = p.parse_args()
    train, syn, hold, schema = tables(require_data_dir(args.data_dir), args.rows)
    print(f"adult: {len(train):,} training x {len(syn):,} synthetic rows, {len(hold):,} holdout; {args.distance}")
    report: dict[str, Any] = {
        "rows": {"train": len(train), "synthetic": len(syn), "holdout": len(hold)},
        "distance": args.distance,
        "machine": f"{platform.node()}: {platform.processor() or platform.machine()}",
        "shipping": shipping_cost(train, schema, args.distance),
    }
    print("shipping the fitted index:", {k: round(v, 3) for k, v in report["shipping"].items()})
    nodes: collections.Counter[str] = collections.Counter()
    trace_nodes(nodes)
    seconds: dict[str, list[float]] = {"local": [], "workers": [], "ray": []}
    files: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for where in seconds:
                out = Path(tmp) / f"{where}-{r}"
                seconds[where].append(audit(where, train, syn, hold, schema, args.distance, args.address, out))
                files.setdefault(where, digests(out))
                assert digests(out) == files[where], f"{where}: the files changed between repeats"
                print(f"{where:8s} run {r}: {seconds[where][-1]:7.1f} s")
    report["seconds"] = seconds
    report["median_s"] = {k: statistics.median(v) for k, v in seconds.items()}
    report["ratio_to_local"] = {k: report["median_s"][k] / report["median_s"]["local"] for k in seconds}
    report["sha256"] = files["local"]
    report["identical"] = {k: files[k] == files["local"] for k in files}
    report["ray_shards_per_node"] = dict(nodes)
    print("identical files:", report["identical"])
    print("ray shards per node:", dict(nodes))
    print("median seconds:", {k: round(v, 1) for k, v in report["median_s"].items()})
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
