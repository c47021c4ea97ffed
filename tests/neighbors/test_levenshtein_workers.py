"""LevenshteinIndex.query's worker processes: when they start, how many, and what each one gets.

Documented: ``n_jobs`` worker processes (the one rule of :mod:`tabmem._checks`), small problems
(fewer than ``_PARALLEL_MIN_PAIRS`` query x string pairs) and ``n_jobs=1`` run in-process; on Linux
the forked workers inherit the index (nothing pickled) and run one BLAS thread each; elsewhere the
index is handed to each worker's initializer.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein
from threadpoolctl import threadpool_info, threadpool_limits

import tabmem._checks as checks
from tabmem.errors import TabmemError
from tabmem.neighbors import levenshtein
from tabmem.neighbors.levenshtein import LevenshteinIndex

_REAL_WORKER_RUN = levenshtein._worker_run
_POOL_SIZES: list[object] = []


def brute(queries: list[str], strings: list[str]) -> list[int]:
    return [min(Levenshtein.distance(q, s) for s in strings) for q in queries]


def data(n_strings: int = 40, n_queries: int = 12) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(31)
    chars = np.array(list("abc0123"))
    make = lambda n: ["".join(rng.choice(chars, int(rng.integers(2, 12)))) for _ in range(n)]  # noqa: E731
    return make(n_strings), make(n_queries)


@pytest.fixture
def dispatch(monkeypatch):
    """Replace the worker pool by an in-process stand-in that records the worker count asked for."""
    calls: list[int] = []
    search = levenshtein._search_block

    def fake_parallel(index, queries, blocks, jobs):
        calls.append(jobs)
        return [search(index, queries[a:b]) for a, b in blocks]

    monkeypatch.setattr(levenshtein, "_parallel", fake_parallel)
    return calls


def run(n_jobs: int | None, *, min_pairs: int = 0, block_size: int = 4) -> None:
    """Query 12 strings against 40 (480 pairs) and check the result against brute force."""
    strings, queries = data()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(levenshtein, "_PARALLEL_MIN_PAIRS", min_pairs)
        out = LevenshteinIndex(n_jobs=n_jobs, block_size=block_size).fit(strings).query(queries)
    assert out.distance.tolist() == brute(queries, strings)


def test_small_problems_and_one_job_run_in_process(dispatch) -> None:
    run(2, min_pairs=2_000_000)  # 480 pairs, 3 blocks: too small for workers
    run(1)  # n_jobs=1: never a worker
    run(2, block_size=64)  # one block: nothing to share out
    assert dispatch == []


def test_workers_start_at_the_pair_threshold(dispatch) -> None:
    run(2, min_pairs=40 * 12 + 1)  # one pair short of the threshold
    assert dispatch == []
    run(2, min_pairs=40 * 12)  # at the threshold
    run(2, min_pairs=0, block_size=6)  # two blocks
    assert dispatch == [2, 2]


@pytest.mark.parametrize(
    ("cpus", "n_jobs", "expected"),
    [
        (3, -1, 3),  # -1: the CPUs this process may use (tabmem._checks.available_cpus), not the machine's
        (3, None, 3),  # None: the same
        (3, -2, 2),  # -k: all but k - 1
        (3, 2, 2),
        (3, 100, 100),  # a positive count is given as asked (the one n_jobs rule)
    ],
)
def test_worker_count(dispatch, monkeypatch, cpus, n_jobs, expected) -> None:
    monkeypatch.setattr(checks, "available_cpus", lambda: cpus)
    run(n_jobs)
    assert dispatch == [expected]


def test_one_available_cpu_means_one_job(dispatch, monkeypatch) -> None:
    monkeypatch.setattr(checks, "available_cpus", lambda: 1)
    run(-1)
    run(None)
    assert dispatch == []


def test_one_job_stays_in_process_on_a_large_machine(dispatch, monkeypatch) -> None:
    monkeypatch.setattr(checks, "available_cpus", lambda: 8)
    run(1)
    assert dispatch == []


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2", True])
def test_bad_n_jobs_is_refused(n_jobs) -> None:
    strings, queries = data()
    message = f"n_jobs must be a non-zero integer or None (None/-1: all available CPUs), got {n_jobs!r}"
    with pytest.raises(TabmemError, match="^" + re.escape(message) + "$"):
        LevenshteinIndex(n_jobs=n_jobs).fit(strings).query(queries)


def test_worker_setup_for_both_start_methods(monkeypatch) -> None:
    strings, queries = data()
    idx = LevenshteinIndex(n_jobs=1).fit(strings)
    expected = brute(queries, strings)
    # a worker that inherits nothing receives the index through its initializer
    monkeypatch.setattr(levenshtein, "_WORKER_INDEX", None)
    with threadpool_limits(limits=2):
        levenshtein._worker_init(idx)
        info = threadpool_info()
        assert info and all(lib["num_threads"] == 1 for lib in info)  # one BLAS thread per worker
    assert levenshtein._worker_run(queries)[0].tolist() == expected
    # a forked worker inherits the index and is initialised with None: it keeps the index
    other = LevenshteinIndex(n_jobs=1).fit(strings[:5])
    monkeypatch.setattr(levenshtein, "_WORKER_INDEX", other)
    levenshtein._worker_init(None)
    assert levenshtein._worker_run(queries)[0].tolist() == brute(queries, strings[:5])


class _FreshWorkers:
    """In-process stand-in for a pool of workers that inherit nothing (spawn, as on macOS/Windows)."""

    def __init__(self, max_workers=None, mp_context=None, initializer=None, initargs=()):
        self.initializer, self.initargs = initializer, initargs

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items):
        out = []
        for item in items:
            levenshtein._WORKER_INDEX = None  # a fresh interpreter
            if self.initializer is not None:
                self.initializer(*self.initargs)
            out.append(fn(item))
        return out


def test_non_linux_workers_get_the_index_through_the_initializer(monkeypatch) -> None:
    monkeypatch.setattr(levenshtein, "sys", SimpleNamespace(platform="darwin"))
    monkeypatch.setattr(levenshtein, "ProcessPoolExecutor", _FreshWorkers)
    monkeypatch.setattr(levenshtein, "_PARALLEL_MIN_PAIRS", 0)
    strings, queries = data()
    with threadpool_limits(limits=None):  # the initializer limits BLAS threads: restore them afterwards
        res = LevenshteinIndex(n_jobs=2, block_size=4).fit(strings).query(queries)
    assert res.distance.tolist() == brute(queries, strings)


class _CountingPool(ProcessPoolExecutor):
    def __init__(self, max_workers=None, **kwargs):
        _POOL_SIZES.append(max_workers)
        super().__init__(max_workers, **kwargs)


def _probe_worker_run(queries):
    """Runs in a worker: record its BLAS thread counts, then search."""
    threads = [lib["num_threads"] for lib in threadpool_info()]
    Path(os.environ["TABMEM_LEV_PROBE"], f"{os.getpid()}.json").write_text(json.dumps(threads))
    return _REAL_WORKER_RUN(queries)


def _refuse_pickling(self, protocol):
    raise AssertionError("the index was pickled")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork path is Linux-only")
def test_linux_workers_are_forked_with_the_index_and_one_blas_thread(monkeypatch, tmp_path) -> None:
    """Fork even when the application made spawn the default (PyTorch users often do); pickle nothing."""
    monkeypatch.setattr(levenshtein, "_PARALLEL_MIN_PAIRS", 0)
    monkeypatch.setattr(levenshtein, "ProcessPoolExecutor", _CountingPool)
    monkeypatch.setattr(levenshtein, "_worker_run", _probe_worker_run)
    monkeypatch.setattr(LevenshteinIndex, "__reduce_ex__", _refuse_pickling)
    monkeypatch.setenv("TABMEM_LEV_PROBE", str(tmp_path))
    _POOL_SIZES.clear()
    strings, queries = data(n_queries=16)
    method = mp.get_start_method(allow_none=True)
    mp.set_start_method("spawn", force=True)
    try:
        with threadpool_limits(limits=2):  # a forked worker would inherit 2 BLAS threads
            res = LevenshteinIndex(n_jobs=2, block_size=4).fit(strings).query(queries)
    finally:
        mp.set_start_method(method, force=True)
    assert res.distance.tolist() == brute(queries, strings)
    assert _POOL_SIZES == [2]
    seen = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert 1 <= len(seen) <= 2 and all(t and all(n == 1 for n in t) for t in seen)
