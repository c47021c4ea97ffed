"""Exact k-nearest-neighbour search in query blocks against *all* reference rows.

Never approximate, never subsample the reference side: a missed neighbour under-reports
privacy risk (SDMetrics#934). The search

0. where the distance offers it (``fang2024``, ``gower``: every categorical mismatch adds
   ``1/M``, so ``d >= h/M`` for ``h`` mismatches), **prunes by categorical matches**: one float32
   GEMM of 0/1 one-hots counts the matches of every pair exactly (small integers); the exact
   distances of the ``k`` best-matching reference rows bound the k-th nearest from above, and
   only the reference rows whose match count can still beat that bound (typically well under
   1% of them on Adult) are evaluated, exactly in float64 (:func:`_search_pruned`). Where more
   than a quarter would survive, the dense search below runs instead;
1. evaluates a block of queries against every reference row with BLAS (see
   :mod:`tabmem.neighbors.distances`), giving a key matrix and a per-row error bound;
2. takes the approximate ``k + 1`` smallest keys per row (repeated ``argmin``, which is linear
   and keeps numpy's lowest-index rule);
3. recomputes those candidates exactly in float64 and orders them by (distance, index);
4. proves the result: every other reference row has an exact key of at least
   ``(k+1)-th approximate key - margin``; rows where that bound does not clear the k-th exact
   distance (near-ties, duplicated reference rows) are recomputed exactly against all rows;
   a row whose margin is infinite (its fast keys carry no information: a value beyond
   ``2^40`` reference spreads, inside the value domain) is evaluated exactly against every
   reference row.

Memory is bounded by ``memory_budget`` whatever the table sizes; blocks run on ``n_jobs``
threads (numpy and BLAS release the GIL; the library's one rule, :mod:`tabmem._checks`:
``None`` = every CPU this process may use, ``-1`` all, ``-k`` all but ``k - 1``) with BLAS itself
kept single-threaded to avoid oversubscription.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from tabmem._checks import check_positive_int, resolve_n_jobs
from tabmem.neighbors import device
from tabmem.neighbors.distances import Distance, PrunedBlock, Queries

DEFAULT_MEMORY_BUDGET = 1 << 30  # bytes of working memory for all workers together
BYTES_PER_CELL = 24  # key (<= 8) + match counts (4) + temporaries, per query x reference cell
_PRUNED_MAX_SHARE = 0.25  # above this share of surviving pairs, the dense search is cheaper
_PRUNED_PAIRS = 1 << 20  # surviving pairs evaluated at a time (~100 bytes each)
_CACHE_BYTES = 1 << 20  # rows of match counts per pass of the pruned search (stays in L2 cache)


def block_rows_for(n_ref: int, n_jobs: int, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> int:
    """Rows per block so that all workers together stay inside ``memory_budget``."""
    per_worker = memory_budget // max(n_jobs, 1)
    rows = per_worker // max(BYTES_PER_CELL * max(n_ref, 1), 1)
    return int(np.clip(rows, 1, 128))


def kneighbors(
    distance: Distance,
    queries: Queries,
    k: int = 2,
    *,
    block_rows: int | None = None,
    n_jobs: int | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``k`` nearest reference rows of every query row.

    Returns ``(indices, distances)``, both ``(n_queries, k)``, sorted by distance with ties
    broken by the lower reference index. If there are fewer than ``k`` reference rows the
    missing columns hold index -1 and distance ``inf``. ``progress(n_done_rows)`` is called
    after each block.
    """
    n_q, n_ref = len(queries), distance.n_ref
    check_positive_int("k", k)
    idx = np.full((n_q, k), -1, dtype=np.int64)
    dist = np.full((n_q, k), np.inf, dtype=np.float64)
    if n_q == 0 or n_ref == 0:
        return idx, dist
    dev = device.current()  # inside device.use_device("cuda"): the distance blocks run on that device
    if dev is not None and device.supports(distance):
        device.kneighbors(distance, queries, k, dev, idx, dist, memory_budget=memory_budget,
                          block_rows=block_rows, progress=progress)  # fmt: skip
        return idx, dist
    n_jobs = resolve_n_jobs(n_jobs)
    step = block_rows or block_rows_for(n_ref, n_jobs, memory_budget)
    blocks = [slice(s, min(s + step, n_q)) for s in range(0, n_q, step)]

    prune = [True]  # once a block shows the pruning is not selective, the rest go dense (same result)

    def run(rows: slice) -> slice:
        i, d = _search_block(distance, queries, rows, k, prune)
        idx[rows, : i.shape[1]] = i
        dist[rows, : d.shape[1]] = d
        return rows

    with threadpool_limits(limits=1, user_api="blas"):
        if n_jobs == 1 or len(blocks) == 1:
            for rows in blocks:
                run(rows)
                if progress:
                    progress(rows.stop - rows.start)
        else:
            with ThreadPoolExecutor(max_workers=n_jobs) as pool:
                for rows in pool.map(run, blocks):
                    if progress:
                        progress(rows.stop - rows.start)
    return idx, dist


def _search_block(
    distance: Distance, queries: Queries, rows: slice, k: int, prune: list[bool] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    if prune is None or prune[0]:
        pb = distance.pruned_block(queries, rows)
        if pb is not None:
            found = _search_pruned(distance, pb, k)
            if found is not None:
                return found
        if prune is not None:
            prune[0] = False
    return _search_dense(distance, queries, rows, k)


def _search_pruned(distance: Distance, pb: PrunedBlock, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact top-k by categorical pruning (module docstring, step 0); ``None``: not selective here.

    Proof: the ``k`` reference rows with the most categorical matches have exact distances
    whose largest, ``U``, bounds the k-th smallest distance from above; a reference row with
    ``h`` mismatches has distance ``>= h / M``, so every row that can be among the k nearest
    (ties at ``U`` included) has ``h <= U M``, i.e. ``matches >= n_cat - floor(U M)`` (with a
    relative slack of 1e-12 for the rounding of ``U``). Exactly those rows are evaluated in
    float64 and ordered by (distance, index).
    """
    matches = pb.matches
    n_rows, n_ref = matches.shape
    kk = min(k, n_ref)
    n_cat = float(distance.n_cat_total)
    m = float(distance.n_columns_)
    r = np.arange(n_rows)
    best = np.empty((n_rows, kk), dtype=np.int64)
    h_best = np.empty((n_rows, kk), dtype=np.float64)
    # the passes over the block run on chunks of rows that stay in cache: a block larger than the
    # cache is then read from memory twice in all, not once per pass (argmax, compare, nonzero)
    step = max(1, _CACHE_BYTES // max(n_ref * matches.itemsize, 1))
    chunks = [slice(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]
    for c in chunks:
        best[c], h_best[c] = _best_matching(matches[c], kk, n_cat)
    d_best = pb.exact(np.repeat(r, kk), best.ravel(), h_best.ravel()).reshape(n_rows, kk)
    upper = d_best.max(axis=1) * m
    need = n_cat - np.floor(upper * (1 + 1e-12) + 1e-9)  # fewest matches a row can have and still compete
    need = np.clip(need, 0, n_cat).astype(matches.dtype)
    # 1-D nonzero: ~10x faster than a 2-D one; row-major, as one call over the block would give
    flat = np.concatenate([np.flatnonzero(matches[c] >= need[c, None]) + c.start * n_ref for c in chunks])
    if flat.size > _PRUNED_MAX_SHARE * n_rows * n_ref:
        return None
    idx = np.empty((n_rows, kk), dtype=np.int64)
    dist = np.empty((n_rows, kk), dtype=np.float64)
    row_start = np.searchsorted(flat, np.arange(n_rows + 1) * n_ref)
    start = 0
    while start < n_rows:  # chunks of rows with at most _PRUNED_PAIRS surviving pairs (bounded memory)
        stop = int(np.searchsorted(row_start, row_start[start] + _PRUNED_PAIRS, side="right")) - 1
        stop = min(max(stop, start + 1), n_rows)
        rr, jj = np.divmod(flat[row_start[start] : row_start[stop]], n_ref)
        d = pb.exact(rr, jj, n_cat - matches[rr, jj].astype(np.float64))
        order = np.lexsort((jj, d, rr))
        rr, jj, d = rr[order], jj[order], d[order]
        first = np.searchsorted(rr, np.arange(start, stop))
        take = first[:, None] + np.arange(kk)[None, :]
        idx[start:stop] = jj[take]
        dist[start:stop] = d[take]
        start = stop
    return idx, dist


def _best_matching(matches: np.ndarray, kk: int, n_cat: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row, ``kk`` distinct reference rows with the most matches (lowest index first among equals;
    any ``kk`` distinct rows give a bound, the best-matching a tight one) and their mismatch counts."""
    n_rows = matches.shape[0]
    r = np.arange(n_rows)
    best = np.empty((n_rows, kk), dtype=np.int64)
    saved = []
    for t in range(kk):
        j = matches.argmax(axis=1)
        dup = (best[:, :t] == j[:, None]).any(axis=1)  # all the rest are 0 (uint8 counts: no -1)
        for i in np.flatnonzero(dup):
            j[i] = np.setdiff1d(np.arange(t + 1), best[i, :t])[0]
        best[:, t] = j
        saved.append(matches[r, j].copy())
        matches[r, j] = 0
    for t in range(kk):
        matches[r, best[:, t]] = saved[t]
    return best, n_cat - np.stack(saved, axis=1).astype(np.float64)


def _search_dense(distance: Distance, queries: Queries, rows: slice, k: int) -> tuple[np.ndarray, np.ndarray]:
    blk = distance.block(queries, rows)
    key = blk.key
    n_rows, n_ref = key.shape
    m = min(k + 1, n_ref)
    r = np.arange(n_rows)
    cand = np.empty((n_rows, m), dtype=np.int64)
    cand_key = np.empty((n_rows, m), dtype=np.float64)
    for t in range(m):
        j = key.argmin(axis=1)
        cand[:, t] = j
        cand_key[:, t] = key[r, j]
        key[r, j] = np.inf
    exact = blk.exact(np.repeat(r, m), cand.ravel()).reshape(n_rows, m)
    order = _lexsort_rows(exact, cand)
    cand = np.take_along_axis(cand, order, axis=1)
    exact = np.take_along_axis(exact, order, axis=1)
    kk = min(k, n_ref)
    if m == n_ref:
        return cand[:, :kk], exact[:, :kk]
    # every row outside the candidates has exact key >= (largest approximate candidate key) - margin
    floor = blk.key_to_distance(r, cand_key[:, m - 1] - blk.margin)
    margin = np.broadcast_to(np.asarray(blk.margin, dtype=np.float64), (n_rows,))
    for i in np.flatnonzero(~(exact[:, kk - 1] < floor)):
        if not np.isfinite(margin[i]):  # no information in the keys: every reference row
            extra = np.arange(n_ref)
        else:
            # near-tie: every row whose approximate key could beat the current k-th is recomputed exactly
            bound = blk.distance_to_key(np.array([i]), exact[i, kk - 1 : kk])[0] + margin[i]
            extra = np.union1d(np.flatnonzero(key[i] <= bound), cand[i])
        d_extra = blk.exact(np.full(len(extra), i), extra)
        best = np.lexsort((extra, d_extra))[:kk]
        cand[i, :kk] = extra[best]
        exact[i, :kk] = d_extra[best]
    return cand[:, :kk], exact[:, :kk]


def _lexsort_rows(values: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Per-row argsort by ``values`` then ``ties`` (small number of columns)."""
    order = np.argsort(ties, axis=1, kind="stable")
    v = np.take_along_axis(values, order, axis=1)
    order2 = np.argsort(v, axis=1, kind="stable")
    return np.take_along_axis(order, order2, axis=1)
