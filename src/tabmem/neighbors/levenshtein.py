"""Exact minimum Levenshtein distance from each query string to a set of strings (LevAtt's kernel).

For every query ``q`` :class:`LevenshteinIndex` returns ``min_s Lev(q, s)`` (uniform weights,
integer, exact) and the position of one string reaching it, without ever building a
``|Q| x |S|`` matrix. Cheap work first, expensive work only where it can still matter:

1. **exact-duplicate hash**: a query equal to some string has distance 0, search over;
2. **bag-distance lower bound** for every (query, string) pair at once:
   ``Lev(q, s) >= max(|q|, |s|) - sum_c min(n_c(q), n_c(s))`` where ``n_c`` counts character
   ``c``. Proof: write ``P = sum_c (n_c(q) - n_c(s))^+`` and ``N = sum_c (n_c(s) - n_c(q))^+``;
   ``max(P, N)`` equals the bound; an insertion or a deletion changes one count by one, so
   ``P`` or ``N`` by one; a substitution changes two counts in opposite directions, which moves
   ``P`` and ``N`` together by at most one each; so every edit changes ``max(P, N)`` by at most
   one, and it is 0 when the strings are equal. The bound dominates the length difference
   (``P - N = |q| - |s|``). The sum of minima is computed as one BLAS matrix product of
   *unary* (thermometer) encodings of the counts, in blocks of queries (bounded memory);
3. **LCS lower bound** for the queries that the bag bound leaves with many candidates (far
   queries: rows of random digits defeat any bag bound): ``Lev(q, s) >= max(|q|, |s|) - LCS(q, s)``.
   Proof: an optimal alignment has ``M`` matches, ``S`` substitutions, ``I`` insertions and
   ``D`` deletions with ``|q| = M + S + D`` and ``|s| = M + S + I``, so
   ``Lev = S + I + D >= max(|q|, |s|) - M``, and ``M <= LCS`` because the matches form a common
   subsequence. RapidFuzz's bit-parallel LCS (Hyyrö 2004) is several times cheaper per pair
   than its Levenshtein, and on CASP-like rows this bound removes ~99 % of the far candidates;
4. **progressive cutoff**: the remaining candidates are visited in increasing bound order; the
   best exact distance so far is the ``score_cutoff`` of every further comparison (RapidFuzz's
   bit-parallel Hyyrö 2003 Levenshtein, banded below the cutoff), and the search stops as soon
   as the next bound reaches the best distance (no remaining string can be closer);
5. queries run in parallel over ``n_jobs`` worker processes (RapidFuzz's ``extractOne`` holds
   the GIL, so threads would not scale).
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import LCSseq, Levenshtein

from tabmem._checks import check_positive_int, resolve_n_jobs
from tabmem.errors import TabmemError
from tabmem.neighbors import device

_MAX_BUCKETS = 96  # distinct characters kept as their own count bucket (the rest share one)
_MAX_UNARY = 48  # unary columns per bucket; wider count ranges are quantised (still a valid bound)
_BLOCK_BYTES = 256 << 20  # working memory of one block, per worker
_PARALLEL_MIN_PAIRS = 2_000_000  # below this, worker start-up costs more than it saves
_LCS_MIN_CANDIDATES = 64  # queries with more candidates left after the bag bound get the LCS bound


@dataclass(frozen=True)
class LevenshteinResult:
    """Per-query result: ``distance[i] = min_s Lev(q_i, s)`` and ``index[i]`` one ``s`` reaching it.

    ``n_exact`` counts the exact edit-distance evaluations made (the rest were skipped by the
    hash or the bounds); ``n_pairs = |Q| * |S|``.
    """

    distance: np.ndarray
    index: np.ndarray
    n_exact: int
    n_pairs: int


class _CountEncoder:
    """Thermometer encoding of per-character counts: ``u(q) . v(s) >= sum_c min(n_c(q), n_c(s))`` (exact when unquantised)."""

    def __init__(self, strings: Sequence[str]) -> None:
        codes, _ = _code_points(strings)
        freq_all = np.bincount(codes) if codes.size else np.zeros(0, np.int64)  # code points are < 0x110000
        values = np.flatnonzero(freq_all)
        freq = freq_all[values]
        order = np.lexsort((values, -freq))  # most frequent first, ties by code point: deterministic
        kept = np.sort(values[order[:_MAX_BUCKETS]])
        self.kept = kept
        self.n_buckets = len(kept) + (1 if len(values) > len(kept) else 0)
        other = len(kept) if self.n_buckets > len(kept) else -1
        self.table = np.full(int(kept.max()) + 1 if kept.size else 1, other, dtype=np.int64)
        self.table[kept] = np.arange(len(kept))
        self.other = other
        counts = self.counts(strings)
        self.lo = counts.min(axis=0) if len(strings) else np.zeros(self.n_buckets, np.int64)
        hi = counts.max(axis=0) if len(strings) else np.zeros(self.n_buckets, np.int64)
        span = hi - self.lo
        self.step = np.maximum(1, -(-span // _MAX_UNARY))  # ceil(span / _MAX_UNARY)
        self.width = -(-span // self.step)
        self.offset = np.concatenate([[0], np.cumsum(self.width)]).astype(np.int64)
        self.dim = int(self.offset[-1])
        self.hi = hi
        self.quantised = bool((self.step > 1).any())

    def counts(self, strings: Sequence[str]) -> np.ndarray:
        """(n, n_buckets) character counts; characters outside the kept alphabet go to the last bucket or nowhere."""
        n, nb = len(strings), self.n_buckets
        codes, rows = _code_points(strings)
        inside = codes < self.table.size
        bucket = np.full(codes.size, self.other, dtype=np.int64)
        bucket[inside] = self.table[codes[inside]]
        keep = bucket >= 0
        width = max(nb, 1)
        flat = np.bincount(rows[keep] * width + bucket[keep], minlength=n * width)
        return flat.reshape(n, width)[:, :nb].astype(np.int64)

    def encode(self, counts: np.ndarray, *, query: bool) -> tuple[np.ndarray, np.ndarray]:
        """Unary codes (n, dim) float32 and the per-row constant ``sum_c min(n_c, lo_c)``."""
        n = counts.shape[0]
        base = np.minimum(counts, self.lo).sum(axis=1)
        excess = np.clip(counts - self.lo, 0, self.hi - self.lo)
        if self.dim == 0:
            return np.zeros((n, 0), np.float32), base
        levels = -(-excess // self.step)  # ceil: quantising upward keeps the product an upper bound
        codes = np.zeros((n, self.dim), dtype=np.float32)
        for b in range(self.n_buckets):
            w = int(self.width[b])
            if w == 0:
                continue
            cols = np.arange(1, w + 1)
            block = (levels[:, b : b + 1] >= cols).astype(np.float32)
            if query:
                block *= float(self.step[b])
            codes[:, self.offset[b] : self.offset[b] + w] = block
        return codes, base


class LevenshteinIndex:
    """Exact nearest-string search under Levenshtein distance (see module docstring).

    Parameters
    ----------
    n_jobs:
        Worker processes for :meth:`query`, the library's one rule (:mod:`tabmem._checks`):
        ``None`` every CPU this process may use, ``k`` workers, ``-1`` all, ``-k`` all but ``k - 1``.
        Small problems run in-process.
    block_size:
        Most queries per block of the bound computation; blocks are shrunk so that one block's
        working memory (~16 bytes per query x string pair) stays under 256 MB per worker.
    """

    def __init__(self, n_jobs: int | None = 2, block_size: int = 64) -> None:
        self.n_jobs = n_jobs
        self.block_size = block_size

    def fit(self, strings: Sequence[str]) -> "LevenshteinIndex":
        """Index the strings searched (for LevAtt: the serialised synthetic rows)."""
        strings = _as_str_list(strings, "strings")
        if len(strings) == 0:
            raise TabmemError("LevenshteinIndex.fit: no strings to index (the synthetic table is empty)")
        if any(len(s) >= 1 << 24 for s in strings):
            raise TabmemError("strings: strings of 2**24 characters or more are not supported")
        check_positive_int("LevenshteinIndex: block_size", self.block_size)
        self.strings_ = strings
        self.array_ = np.array(strings, dtype=object)
        self.lengths_ = np.fromiter((len(s) for s in strings), dtype=np.int64, count=len(strings))
        self.first_index_: dict[str, int] = {}
        for i, s in enumerate(strings):
            self.first_index_.setdefault(s, i)
        self.encoder_ = _CountEncoder(strings)
        codes, self.base_ = self.encoder_.encode(self.encoder_.counts(strings), query=False)
        self.codes_t_ = np.ascontiguousarray(codes.T)
        self._lengths_f32 = self.lengths_.astype(np.float32)
        return self

    # ------------------------------------------------------------------ query
    def query(self, queries: Sequence[str]) -> LevenshteinResult:
        """Exact ``min_s Lev(q, s)`` and an argmin for every query (deterministic, whatever ``n_jobs``)."""
        if not hasattr(self, "strings_"):
            raise TabmemError("LevenshteinIndex is not fitted: call fit(strings) first")
        queries = _as_str_list(queries, "queries")
        n = len(queries)
        if n == 0:
            return LevenshteinResult(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0)
        if any(len(q) >= 1 << 24 for q in queries):
            raise TabmemError("queries: strings of 2**24 characters or more are not supported")
        jobs = resolve_n_jobs(self.n_jobs)
        # bounded memory: a block holds ~16 bytes per (query, string) pair (bounds, LCS, temporaries)
        step = int(max(1, min(self.block_size, _BLOCK_BYTES // (16 * len(self.strings_)))))
        blocks = [(i, min(i + step, n)) for i in range(0, n, step)]
        small = n * len(self.strings_) < _PARALLEL_MIN_PAIRS
        if jobs == 1 or len(blocks) == 1 or small:
            parts = [_search_block(self, queries[a:b]) for a, b in blocks]
        else:
            parts = _parallel(self, queries, blocks, jobs)
        dist = np.concatenate([p[0] for p in parts])
        idx = np.concatenate([p[1] for p in parts])
        return LevenshteinResult(dist, idx, int(sum(p[2] for p in parts)), n * len(self.strings_))

    def lower_bounds(self, queries: Sequence[str]) -> np.ndarray:
        """The (|Q|, |S|) bag-distance lower bounds (for tests and diagnostics; dense, use on small inputs)."""
        queries = _as_str_list(queries, "queries")
        return np.rint(self._bounds(queries)).astype(np.int64)

    def _bounds(self, queries: list[str]) -> np.ndarray:
        """Bag-distance lower bounds (float32 holding exact integers: every value is below 2**24)."""
        enc = self.encoder_
        counts = enc.counts(queries)
        codes, base = enc.encode(counts, query=True)
        lq = np.fromiter((len(s) for s in queries), dtype=np.float32, count=len(queries))
        ls = self._lengths_f32
        dev = device.current()
        if dev is not None:  # the same bounds computed on the device (device.bag_bounds)
            return device.bag_bounds(self, codes, self.codes_t_, base, lq, ls, enc.quantised, dev)
        lb = np.maximum(lq[:, None], ls[None, :])
        if enc.dim:
            # sum_c min(n_c(q), n_c(s)) <= base_q + codes product, so lb stays a valid lower bound
            lb -= codes @ self.codes_t_
        lb -= base.astype(np.float32)[:, None]
        if enc.quantised:
            np.maximum(lb, np.abs(lq[:, None] - ls[None, :]), out=lb)
        return lb


def _code_points(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All code points of all strings (uint32) and the row each belongs to (vectorised via UTF-32)."""
    if len(strings) == 0:
        return np.zeros(0, np.uint32), np.zeros(0, np.int64)
    lengths = np.fromiter((len(s) for s in strings), dtype=np.int64, count=len(strings))
    codes = np.frombuffer("".join(strings).encode("utf-32-le"), dtype=np.uint32)
    rows = np.repeat(np.arange(len(strings), dtype=np.int64), lengths)
    return codes, rows


# ---------------------------------------------------------------------- worker side
def _search_block(index: LevenshteinIndex, queries: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    n = len(queries)
    dist = np.empty(n, dtype=np.int64)
    arg = np.empty(n, dtype=np.int64)
    n_exact = 0
    todo = []
    for i, q in enumerate(queries):
        hit = index.first_index_.get(q)
        if hit is not None:
            dist[i], arg[i] = 0, hit
        else:
            todo.append(i)
    if not todo:
        return dist, arg, 0
    todo_q = [queries[i] for i in todo]
    lbs = index._bounds(todo_q)
    strings, array = index.strings_, index.array_
    # seeds: the few smallest bag bounds give each query a first upper bound
    bests = np.empty(len(todo), dtype=np.int64)
    best_js = np.empty(len(todo), dtype=np.int64)
    seeds = []
    for row, q in enumerate(todo_q):
        lb = lbs[row]
        k0 = min(8, lb.size)
        seed = np.argpartition(lb, k0 - 1)[:k0] if k0 < lb.size else np.arange(lb.size)
        seed = seed[np.argsort(lb[seed], kind="stable")]
        best, best_j = None, -1
        for j in seed.tolist():
            if best is not None and lb[j] >= best:
                break
            d = Levenshtein.distance(q, strings[j], score_cutoff=None if best is None else best - 1)
            n_exact += 1
            if best is None or d < best:
                best, best_j = d, j
        bests[row], best_js[row] = best, best_j
        seeds.append(seed)
    # far queries (many candidates under the bag bound): tighten with the LCS bound, one cdist call
    n_cand = (lbs < bests[:, None]).sum(axis=1)
    heavy = np.flatnonzero(n_cand > _LCS_MIN_CANDIDATES)
    if heavy.size:
        lcs = process.cdist([todo_q[r] for r in heavy], strings, scorer=LCSseq.similarity, dtype=np.int32)
        lq = np.fromiter((len(todo_q[r]) for r in heavy), dtype=np.int64, count=heavy.size)
        lcs_lb = np.maximum(lq[:, None].astype(np.float32), index._lengths_f32[None, :])
        lcs_lb -= lcs
        del lcs
        np.maximum(lcs_lb, lbs[heavy], out=lcs_lb)
        lbs[heavy] = lcs_lb
        del lcs_lb
    for row, i in enumerate(todo):
        q = queries[i]
        lb = lbs[row]
        seed = seeds[row]
        best, best_j = int(bests[row]), int(best_js[row])
        if best > 0:
            mask = lb < best
            mask[seed] = False
            cand = np.flatnonzero(mask)
            if cand.size:
                order = cand[np.argsort(lb[cand], kind="stable")]
                bounds = lb[order]
                start = 0
                chunk = 64
                while start < order.size and bounds[start] < best:
                    stop = min(int(np.searchsorted(bounds, best, side="left")), start + chunk)
                    sub = order[start:stop]
                    n_exact += stop - start
                    res = process.extractOne(q, array[sub].tolist(), scorer=Levenshtein.distance, score_cutoff=best - 1)
                    if res is not None and res[1] < best:
                        best, best_j = int(res[1]), int(sub[res[2]])
                        if best == 0:
                            break
                    start = stop
                    chunk = min(chunk * 2, 8192)
        dist[i], arg[i] = best, best_j
    return dist, arg, n_exact


_WORKER_INDEX: LevenshteinIndex | None = None


def _worker_init(index: LevenshteinIndex | None) -> None:
    global _WORKER_INDEX
    device.not_in_workers()  # a forked worker must not touch the parent's CUDA device: its bounds on its CPU
    try:  # one BLAS thread per worker process
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:  # pragma: no cover - threadpoolctl missing
        pass
    if index is not None:
        _WORKER_INDEX = index


def _worker_run(queries: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    assert _WORKER_INDEX is not None
    return _search_block(_WORKER_INDEX, queries)


def _parallel(index: LevenshteinIndex, queries: list[str], blocks: list[tuple[int, int]], jobs: int):
    global _WORKER_INDEX
    if sys.platform.startswith("linux"):
        ctx = mp.get_context("fork")
        _WORKER_INDEX = index  # inherited by the forked workers, nothing pickled
        init_arg = None
    else:  # pragma: no cover - non-Linux platforms
        ctx = mp.get_context("spawn")
        init_arg = index
    try:
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(init_arg,)
        ) as ex:
            return list(ex.map(_worker_run, [queries[a:b] for a, b in blocks]))
    finally:
        _WORKER_INDEX = None


def _as_str_list(strings: Sequence[str], name: str) -> list[str]:
    if isinstance(strings, str):
        raise TabmemError(f"{name}: expected a sequence of strings, got a single string")
    out = list(strings)
    bad = [i for i, s in enumerate(out) if not isinstance(s, str)]
    if bad:
        raise TabmemError(f"{name}: {len(bad)} item(s) are not strings (first positions: {bad[:5]})")
    return out


def min_levenshtein(queries: Sequence[str], strings: Sequence[str], *, n_jobs: int | None = 2) -> LevenshteinResult:
    """Exact ``min_s Lev(q, s)`` for every query (convenience wrapper around :class:`LevenshteinIndex`)."""
    return LevenshteinIndex(n_jobs=n_jobs).fit(strings).query(queries)
