"""A workflow's neighbour searches sharded over the executor pool (``--executor``, ``--jobs``, ``--shards``).

``with sharded_searches("ray", address=...)`` opens the pool once (:func:`~tabmem.runs.pool.pool_session`)
and, inside the block, splits every large :meth:`~tabmem.neighbors.NeighborIndex.kneighbors` call
into shards run by :func:`~tabmem.runs.pool.run_pool` (:mod:`tabmem.neighbors.shards`: each task
gets the fitted index and its query rows, and searches every reference row), and so does LevAtt's
edit-distance search (:meth:`~tabmem.neighbors.levenshtein.LevenshteinIndex.query`: its target strings). The merged result is
the in-process result, bit for bit. What runs where:

* ``executor="local"``, ``jobs`` 1 or ``None`` and no ``shards``: nothing changes (the search in this process);
* ``local`` with ``jobs = n``: ``n`` spawned worker processes of ``threads`` threads each (default:
  the CPUs shared among them);
* ``ray``: Ray tasks of ``threads`` threads (default 1) asking for as many CPUs, at most ``jobs``
  in flight (default: all).

Shards: ``shards``, else :data:`SHARDS_PER_SLOT` per task slot (``jobs``, else the cluster's CPUs
over ``threads``): a few per slot, so that a slow node or a late start leaves no slot idle for
long; each shard covers at least :data:`~tabmem.neighbors.shards.MIN_SHARD_CELLS` pairs, so small
searches stay in this process.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tabmem._checks import check_positive_int, threads_per_worker
from tabmem.errors import TabmemError
from tabmem.neighbors.shards import Sharding, sharding
from tabmem.runs.pool import check_pool, pool_session, run_pool

__all__ = ["SHARDS_PER_SLOT", "sharded_searches"]

#: shards per task slot when ``shards`` is not given
SHARDS_PER_SLOT = 4


@contextlib.contextmanager
def sharded_searches(
    executor: str = "local",
    *,
    jobs: int | None = None,
    address: str | None = None,
    shards: int | None = None,
    threads: int | None = None,
) -> Iterator[None]:
    """The neighbour searches inside this block run sharded on ``executor`` (module docstring)."""
    check_pool(executor, address)
    check_positive_int("jobs", jobs, allow_none=True)
    check_positive_int("shards", shards, allow_none=True)
    check_positive_int("threads", threads, allow_none=True)
    if executor == "local" and (jobs or 1) <= 1 and shards is None:
        yield  # the search in this process, as without a pool
        return
    with pool_session(executor, address) as cpus:
        if threads is None:
            threads = 1 if executor == "ray" else threads_per_worker(jobs or 1)
        slots = jobs or max(1, cpus // threads)
        run = functools.partial(_run_shards, executor=executor, jobs=jobs, address=address, threads=threads)
        with sharding(Sharding(run, shards or SHARDS_PER_SLOT * slots, threads)):
            yield


def _run_shards(
    fn: Callable[[Any], Any],
    payloads: Sequence[Any],
    on_done: Callable[[int, Any], None],
    *,
    executor: str,
    jobs: int | None,
    address: str | None,
    threads: int,
) -> None:
    """Every shard through :func:`run_pool`; the first that fails stops the search in one line."""

    def failed(i: int, why: str) -> None:
        raise TabmemError(f"the neighbour search failed in shard {i + 1} of {len(payloads)} ({executor}): {why}")

    run_pool(
        fn,
        payloads,
        on_done=on_done,
        on_failed=failed,
        executor=executor,
        jobs=jobs,
        address=address,
        num_cpus=threads,
        resources_from="--n-jobs",
        spread=True,  # equal shards: one node after the other, not all where the index was put
    )
