"""Where the memory of one ``tabmem audit`` goes: its resident set per phase (``docs/scale.md``).

Usage (from the repo root; the arguments after ``--`` are ``tabmem audit``'s)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/profile_audit_memory.py OUT.json -- \\
        --train train_300000.parquet --synthetic synthetic_300000.parquet --unseen mismatch --n-jobs 1 --out DIR

The audit runs in this process. The phases are the library calls it makes (reading, validating,
fitting the encoder, the distance and its lookup tables, the exact-copy and rare-value indexes,
preparing the queries, the searches, the self-search, the data-copying test, the outputs), each
wrapped to push its name on a stack. A thread reads ``VmRSS`` and ``ru_maxrss`` every 20 ms: the
largest resident set seen in each phase, and the growth of the peak (``ru_maxrss``) attributed to
the phase running when it grew (a spike shorter than 20 ms still counts, in the phase of its tick).
"""

from __future__ import annotations

import functools
import importlib
import json
import resource
import sys
import threading
import time
from typing import Any, Callable

#: (module, function) and (module, class, method) wrapped as phases, with their names
FUNCTIONS = [
    ("tabmem.cli._options", "read_user_table", "read"),
    ("tabmem.cli._options", "load_training_table", "load_train"),
    ("tabmem.data.schema", "validate", "validate"),
    ("tabmem.data.schema", "key_like_columns", "key_like"),
    ("tabmem.data.fingerprint", "table_fingerprint", "fingerprint"),
    ("tabmem.memorization.selfsearch", "nearest_other_distances", "selfsearch"),
    ("tabmem.memorization.authenticity", "authenticity", "authenticity"),
    ("tabmem._io", "write_frame", "write_frame"),
    ("tabmem.memorization.evidence", "distance_evidence", "evidence"),
]
METHODS = [
    ("tabmem.data.encoding", "TableEncoder", "fit", "encoder_fit"),
    ("tabmem.neighbors.distances", "Distance", "fit", "dist_fit"),
    ("tabmem.neighbors.distances", "Distance", "_lookup_setup", "lookup_setup"),
    ("tabmem.neighbors.index", "NeighborIndex", "prepare", "prepare"),
    ("tabmem.neighbors.index", "NeighborIndex", "kneighbors", "kneighbors"),
    ("tabmem.memorization.replicas", "ReplicaDetector", "fit", "det_fit"),
    ("tabmem.memorization.replicas", "ReplicaDetector", "score", "score"),
    ("tabmem.memorization.replicas", "ReplicaResult", "summary", "summary"),
    ("tabmem.memorization.replicas", "ReplicaResult", "save", "save"),
    ("tabmem.memorization.copies", "ExactCopies", "fit", "copies_fit"),
    ("tabmem.memorization.copies", "ExactCopies", "match", "copies_match"),
    ("tabmem.memorization.copies", "RareValues", "fit", "rare_fit"),
    ("tabmem.memorization.copies", "RareValues", "score", "rare_score"),
    ("tabmem.memorization.copying", "DataCopyingTest", "fit", "copying_fit"),
    ("tabmem.memorization.copying", "DataCopyingTest", "test", "copying_test"),
]

_stack = ["start"]


def _phase(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        _stack.append(label)
        try:
            return fn(*args, **kwargs)
        finally:
            _stack.pop()

    return inner


def _instrument() -> None:
    import tabmem.cli
    import tabmem.cli.audit
    import tabmem.memorization.copying
    import tabmem.memorization.evidence
    import tabmem.runs.audit  # noqa: F401  (every consumer imported before its functions are replaced)

    for module, name, label in FUNCTIONS:
        original = getattr(importlib.import_module(module), name)
        wrapped = _phase(label, original)
        for loaded in list(sys.modules.values()):  # the function where it was imported by name too
            if getattr(loaded, name, None) is original:
                setattr(loaded, name, wrapped)
    for module, cls_name, name, label in METHODS:
        cls = getattr(importlib.import_module(module), cls_name)
        setattr(cls, name, _phase(label, cls.__dict__[name]))


def _rss_kib() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    out, args = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
    _instrument()
    import tabmem.cli

    seen: dict[str, int] = {}
    growth: dict[str, int] = {}
    order: list[str] = []
    stop = threading.Event()

    def sample() -> None:
        last = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        while not stop.is_set():
            rss, peak = _rss_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            phase = "/".join(_stack[-3:])
            if phase not in seen:
                order.append(phase)
            seen[phase] = max(seen.get(phase, 0), rss)
            if peak > last:
                growth[phase] = growth.get(phase, 0) + peak - last
                last = peak
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    try:
        tabmem.cli.main(["audit", *args])
    except SystemExit:
        pass
    stop.set()
    sampler.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows = [{"phase": p, "max_rss_kib": seen[p], "peak_growth_kib": growth.get(p, 0)} for p in order]
    result = {"args": args, "wall_s": time.perf_counter() - t0, "ru_maxrss_kib": peak, "phases": rows}
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"ru_maxrss {peak / 2**20:.3f} GiB", file=sys.stderr)
    for r in rows:
        print(
            f"{r['max_rss_kib'] / 2**20:7.3f} GiB max  +{r['peak_growth_kib'] / 2**20:6.3f} GiB  {r['phase']}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
