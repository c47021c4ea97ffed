"""The neighbour search sharded over tasks: the query rows split, every task searching all reference rows.

Inside ``with sharding(Sharding(run, shards, threads))`` every :meth:`NeighborIndex.kneighbors`
call big enough to be worth it splits its query rows into at most ``shards`` contiguous shards
(each of at least :data:`MIN_SHARD_CELLS` distance evaluations), hands them to ``run`` (the
executor pool of :mod:`tabmem.runs.searches`: local worker processes or Ray tasks) and writes
each shard's rows back in place. A task receives a copy of the fitted index (fitted once, on the
caller's side, never refitted) and its shard's prepared query rows, and runs the ordinary search
with ``threads`` threads. The answer of a query row depends on that row and the reference only
(exact, ties by the lowest reference index), so the merged result is the unsharded result, bit
for bit, whatever the shards, the executor or the machine.

The sharding is a context, like :func:`tabmem._checks.limit_threads`: a workflow
(``runs.audit``, ``runs.attack``) opens it around the searches it owns, and the layers below
(replica detection, authenticity, DCR) need no executor argument.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from tabmem._checks import check_positive_int
from tabmem.errors import TabmemError
from tabmem.neighbors import device
from tabmem.neighbors.distances import Queries

__all__ = [
    "DEVICE_NOT_SHARDED",
    "MIN_SHARD_CELLS",
    "ShardMap",
    "Sharding",
    "active_sharding",
    "shard_bounds",
    "sharding",
]

#: a shard holds at least this many query x reference pairs (~0.1-0.3 s of search on one core): smaller
#: searches (the data-copying test's cells on Adult) stay in this process, where a pool would cost more
MIN_SHARD_CELLS = 1 << 26
#: the one line when a device search (``--device cuda``) meets a sharded one: the device is this process's
DEVICE_NOT_SHARDED = (
    "--device runs the neighbour search in this process on its device: it is not combined with sharded "
    "searches (--executor ray, --jobs > 1, --shards); drop one of them"
)
#: ``run(fn, payloads, on_done)`` calls ``fn(payloads[i])`` somewhere and ``on_done(i, result)`` here for
#: every ``i``; it raises (one line) when a task fails
ShardMap = Callable[[Callable[[Any], Any], Sequence[Any], Callable[[int, Any], None]], None]


@dataclass(frozen=True)
class Sharding:
    """Where the shards run (``run``), how many at most (``shards``), with how many threads each (``threads``)."""

    run: ShardMap
    shards: int
    threads: int = 1

    def __post_init__(self) -> None:
        check_positive_int("shards", self.shards)
        check_positive_int("threads", self.threads)


_ACTIVE: ContextVar[Sharding | None] = ContextVar("tabmem_sharding", default=None)


@contextlib.contextmanager
def sharding(plan: Sharding | None) -> Iterator[None]:
    """Searches in this block run sharded by ``plan`` (``None``: in this process, unsharded)."""
    token = _ACTIVE.set(plan)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active_sharding() -> Sharding | None:
    """The sharding in effect here, if any."""
    return _ACTIVE.get()


def shard_bounds(n_rows: int, n_ref: int, shards: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` row ranges: at most ``shards``, each of at least :data:`MIN_SHARD_CELLS`
    pairs (one range when the search is smaller), sizes differing by at most one row."""
    n = int(min(shards, n_rows, max(1, (n_rows * max(n_ref, 1)) // MIN_SHARD_CELLS)))
    edges = [n_rows * i // n for i in range(n + 1)] if n_rows else [0, 0]
    return list(zip(edges[:-1], edges[1:]))


def sharded_kneighbors(
    index: Any,
    queries: Queries,
    k: int,
    *,
    block_rows: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """``index.kneighbors(queries, k)`` (a fitted :class:`~tabmem.neighbors.NeighborIndex`) run over the active sharding; ``None`` when none is active or one shard
    would do (the caller searches in this process)."""
    plan = _ACTIVE.get()
    if plan is None:
        return None
    bounds = shard_bounds(len(queries), index.n_reference_, plan.shards)
    if len(bounds) < 2:
        return None
    if device.current() is not None:  # the tasks would search on the CPU: say so rather than drop the device
        raise TabmemError(DEVICE_NOT_SHARDED)
    shipped = copy.copy(index)  # the fitted index as it is: one thread count per task
    shipped.n_jobs = plan.threads
    idx = np.empty((len(queries), k), dtype=np.int64)
    dist = np.empty((len(queries), k), dtype=np.float64)

    def done(i: int, found: tuple[np.ndarray, np.ndarray]) -> None:
        start, stop = bounds[i]
        idx[start:stop], dist[start:stop] = found
        if progress is not None:
            progress(stop - start)

    payloads = _Shards(queries, bounds)
    plan.run(functools.partial(search_shard, shipped, k, block_rows), payloads, done)
    return idx, dist


def search_shard(index: Any, k: int, block_rows: int | None, queries: Queries) -> tuple[np.ndarray, np.ndarray]:
    """One task: the ordinary (unsharded) search of ``queries`` in ``index``."""
    with sharding(None):
        return index.kneighbors(queries, k, block_rows=block_rows)


class _Shards(Sequence[Queries]):
    """The shards' query rows, sliced when a task starts (views: no copy until they are sent)."""

    def __init__(self, queries: Queries, bounds: list[tuple[int, int]]) -> None:
        self.queries, self.bounds = queries, bounds

    def __len__(self) -> int:
        return len(self.bounds)

    def __getitem__(self, i: int) -> Queries:  # type: ignore[override]
        start, stop = self.bounds[i]
        return self.queries.rows(slice(start, stop))
