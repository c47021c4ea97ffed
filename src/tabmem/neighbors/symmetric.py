"""Every reference row's distance to its nearest *other* reference row, each pair of rows searched once.

The self-search of a table (authenticity's nearest-other-row distance,
:func:`tabmem.memorization.authenticity.nearest_other_distance`) visits every pair twice in the
k-nearest search (:mod:`tabmem.neighbors.blocked`), once from each row. Where the distance can
evaluate a pair for both rows at once (:class:`~tabmem.neighbors.distances.SymmetricPairs`:
``gower``, whose ``d(i, j) = d(j, i)`` bit for bit; ``fang2024``, whose ``e(i, j)`` is symmetric and
is normalised by each row's own spread, found first by the search's own extremes pass), only the
pairs above the diagonal are searched: a block of rows ``[s, e)`` against the reference rows from
``s`` on, and every evaluated pair ``(i, j)``, ``j > i``, offers its distances to both rows' minima.
That halves the match counts and the pruning scans.

Exact, by the categorical pruning of :func:`tabmem.neighbors.blocked._search_pruned`: a pair with
``h`` categorical mismatches has ``d >= h / M``. Row ``i``'s nearest-other distance is at most
``U_i``, the exact distance to its neighbours in one sort of the table (category codes, then the
numerical values: O(N log N)), so its nearest other row has ``h <= U_i M``, i.e. at least
``need_i`` matches. A pair is evaluated in float64 when it passes the test of either row; every
exact distance offered to a row is a candidate, and its minimum is the exact minimum. Only
distances are returned: the minimum is the same whichever of several tied rows attains it, so the
result equals the k-nearest search's bit for bit (tested against it and a brute force).

``None`` where this does not apply (the distance offers no symmetric pairs (``l2``) or has no
categorical columns, fewer than two rows, or pruning is not selective on the first block): the
caller runs the k-nearest search.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np
from threadpoolctl import threadpool_limits

from tabmem._checks import resolve_n_jobs
from tabmem.neighbors.blocked import (
    _PRUNED_MAX_SHARE,
    _PRUNED_PAIRS,
    BYTES_PER_CELL,
    DEFAULT_MEMORY_BUDGET,
    block_rows_for,
)
from tabmem.neighbors.distances import Distance

__all__ = ["nearest_other"]

_MAX_ROWS = 128  # rows of a block at most (as the k-nearest search's blocks)


def nearest_other(
    distance: Distance,
    *,
    n_jobs: int | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray | None:
    """Distance of every reference row of a fitted ``distance`` to its nearest other reference row
    (0 for a row with an exact duplicate), or ``None`` where the symmetric search does not apply
    (module docstring). ``progress(n_rows)`` is called after each block with its share of the work in
    rows (the blocks shrink along the diagonal; the rows add up to the table's)."""
    pairs = distance.symmetric_pairs()
    ref = distance.ref_
    n = distance.n_ref
    if pairs is None or n < 2 or ref.n_onehot == 0:
        return None
    n_jobs = resolve_n_jobs(n_jobs)
    n_cat, m = float(distance.n_cat_total), float(distance.n_columns_)
    share = pairs.prepare_share if pairs.prepare else 0.0
    reported = [0]

    def report(fraction: float) -> None:  # the bar's rows: the work done so far as a share of the table's rows
        if progress:
            rows = int(round(n * fraction))
            progress(rows - reported[0])
            reported[0] = rows

    with threadpool_limits(limits=1, user_api="blas"), _pool(n_jobs) as run_all:
        if pairs.prepare is not None:  # per-row state over every reference row (blocks as the k-nearest search's)
            step = block_rows_for(n, n_jobs, memory_budget)
            for s in run_all(lambda s: pairs.prepare(slice(s, min(s + step, n))) or s, range(0, n, step)):
                report(share * min(s + step, n) / n)
        upper = _sort_bound(distance, pairs.exact)
        need_f = n_cat - np.floor(upper * m * (1 + 1e-12) + 1e-9)  # fewest matches a pair can have (docstring)
        need = np.clip(need_f, 0, n_cat).astype(np.uint8 if distance._groups is not None else np.float32)
        blocks = _blocks(n, n_jobs, memory_budget)
        total_pairs = sum((e - s) * (n - s) for s, e in blocks)
        best = np.full(n, np.inf)
        lock = threading.Lock()
        state = {"selective": True, "pairs": 0}

        def run(block: tuple[int, int]) -> tuple[int, int]:
            s, e = block
            if state["selective"] and not _block(distance, pairs.exact, s, e, need, n_cat, best, lock):
                state["selective"] = False
            return block

        for s, e in run_all(run, blocks):
            if not state["selective"]:
                break
            state["pairs"] += (e - s) * (n - s)
            report(1.0 if s == blocks[-1][0] else share + (1 - share) * state["pairs"] / total_pairs)
    return best if state["selective"] else None


@contextlib.contextmanager
def _pool(n_jobs: int) -> Iterator[Callable]:
    """``run_all(fn, items)``: ``map`` in this thread, or on ``n_jobs`` threads (in order; the rest
    cancelled when the caller stops early)."""
    if n_jobs == 1:
        yield map
        return
    pool = ThreadPoolExecutor(max_workers=n_jobs)
    try:
        yield pool.map
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _blocks(n: int, n_jobs: int, memory_budget: int) -> list[tuple[int, int]]:
    """Row ranges ``[s, e)``: each block (rows x reference rows from ``s`` on) inside the budget of one worker."""
    per_worker = memory_budget // max(n_jobs, 1)
    out, s = [], 0
    while s < n:
        rows = int(np.clip(per_worker // max(BYTES_PER_CELL * (n - s), 1), 1, _MAX_ROWS))
        out.append((s, min(s + rows, n)))
        s += rows
    return out


def _sort_bound(distance: Distance, exact: Callable) -> np.ndarray:
    """``U_i``: exact distance of every row to its neighbours in the table sorted by codes then values."""
    ref = distance.ref_
    keys = [ref.num[:, c] for c in range(ref.num.shape[1] - 1, -1, -1)]
    keys += [ref.codes[:, c] for c in range(ref.codes.shape[1] - 1, -1, -1)]
    order = np.lexsort(keys) if keys else np.arange(len(ref))
    a, b = order[:-1], order[1:]
    d_a, d_b = exact(a, b, distance._mismatches(ref, a, b))
    upper = np.full(len(ref), np.inf)
    np.minimum.at(upper, a, d_a)
    np.minimum.at(upper, b, d_b)
    return upper


def _block(
    distance: Distance,
    exact: Callable,
    s: int,
    e: int,
    need: np.ndarray,
    n_cat: float,
    best: np.ndarray,
    lock: threading.Lock,
) -> bool:
    """Rows ``[s, e)`` against the reference rows from ``s`` on: the surviving pairs ``j > i`` update ``best``
    on both sides. ``False``: in the first block, more than a quarter of the pairs survive (pruning is
    not selective on this table: the k-nearest search's dense path is cheaper)."""
    ref = distance.ref_
    matches = distance._block_matches(ref, slice(s, e), start=s)
    n_rows, width = matches.shape
    thr = np.minimum(need[s:e, None], need[None, s:])  # the dtype of the match counts
    flat = np.flatnonzero(matches >= thr)
    del thr
    # judged on the first block (every reference row): the diagonal's n_rows pairs always survive
    if s == 0 and flat.size - n_rows > _PRUNED_MAX_SHARE * n_rows * (width - 1):
        return False
    for c0 in range(0, flat.size, _PRUNED_PAIRS):  # bounded memory: ~100 bytes a surviving pair
        rr, cc = np.divmod(flat[c0 : c0 + _PRUNED_PAIRS], width)
        keep = cc > rr  # above the diagonal only: the pair (i, i) and pairs (j, i), j < i, are elsewhere
        rr, cc = rr[keep], cc[keep]
        if not rr.size:
            continue
        d_row, d_col = exact(rr + s, cc + s, n_cat - matches[rr, cc].astype(np.float64))
        starts = np.flatnonzero(np.r_[True, rr[1:] != rr[:-1]])  # survivors come sorted by row
        row_min = np.minimum.reduceat(d_row, starts)
        rows = rr[starts] + s
        with lock:
            best[rows] = np.minimum(best[rows], row_min)
            np.minimum.at(best, cc + s, d_col)
    return True
