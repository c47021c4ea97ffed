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
   **bigram bound** next to it, the larger of the two kept: with ``G(x)`` the multiset of the
   ``|x| - 1`` bigrams of ``x``, ``Lev(q, s) >= ceil((max(|G(q)|, |G(s)|) - |G(q) & G(s)|) / 2)``
   (the q-gram lemma, Ukkonen 1992, for q = 2). Proof: fix an optimal alignment; a substitution or
   deletion of ``q[i]`` touches the 2 bigrams of ``q`` covering ``i``, an insertion the 1 spanning
   its gap; an untouched bigram of ``q`` reappears in ``s`` at its aligned place, distinct ones at
   distinct places, so ``|G(q) & G(s)| >= |G(q)| - 2 Lev``; the same from ``s``'s side. Digits and
   separators repeat in every row string, so the bag bound is loose on tabular rows; bigrams keep
   the order of neighbouring characters (on Adult rows they leave about half the candidates the
   bag bound leaves). Same unary GEMM (the 512 most frequent bigrams of the indexed strings keep
   their own count, the rest share one; dropped when their codes would pass 1 GiB);
3. **LCS lower bound** for the queries that the count bounds leave with many candidates (far
   queries: rows of random digits defeat any bag bound): ``Lev(q, s) >= max(|q|, |s|) - LCS(q, s)``,
   computed for those candidates only (the strings whose count bound is below the best distance
   of the query's seeds: the 8 strings of smallest bound). Proof: an optimal alignment has ``M``
   matches, ``S`` substitutions, ``I`` insertions and
   ``D`` deletions with ``|q| = M + S + D`` and ``|s| = M + S + I``, so
   ``Lev = S + I + D >= max(|q|, |s|) - M``, and ``M <= LCS`` because the matches form a common
   subsequence. RapidFuzz's bit-parallel LCS (Hyyrö 2004) is several times cheaper per pair
   than its Levenshtein, and on CASP-like rows this bound removes ~99 % of the far candidates;
4. **progressive cutoff**: the remaining candidates are visited in increasing bound order; the
   best exact distance so far is the ``score_cutoff`` of every further comparison (RapidFuzz's
   bit-parallel Hyyrö 2003 Levenshtein, banded below the cutoff), and the search stops as soon
   as the next bound reaches the best distance (no remaining string can be closer);
5. queries run in parallel over ``n_jobs`` worker processes (RapidFuzz's ``extractOne`` holds
   the GIL, so threads would not scale), or sharded over the executor pool when a sharding is
   active (:mod:`tabmem.neighbors.shards`: ``tabmem attack --executor/--jobs/--shards``); a
   query's answer depends on that query and the strings only, so the result is the same bit for bit.

Memory: a block of queries holds :data:`_PAIR_BYTES` (16) bytes per (query, string) pair, sized
to ``memory_budget`` (or :func:`tabmem.neighbors.settings.working_memory`, all workers together;
default 256 MiB a worker); the index keeps the strings and their unary codes, 4 bytes per code
column and string (about 1,600 columns, 6.5 kB a string, on Adult's canonical rows).
"""

from __future__ import annotations

import copy
import functools
import multiprocessing as mp
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import LCSseq, Levenshtein

from tabmem._checks import check_positive_int, resolve_n_jobs
from tabmem.errors import TabmemError
from tabmem.neighbors import device, settings
from tabmem.neighbors.shards import DEVICE_NOT_SHARDED, active_sharding, shard_bounds, sharding

_MAX_BUCKETS = 96  # distinct characters kept as their own count bucket (the rest share one)
_MAX_UNARY = 48  # unary columns per bucket; wider count ranges are quantised (still a valid bound)
_BIGRAM_BUCKETS = 512  # distinct bigrams kept as their own count bucket (the rest share one)
_BIGRAM_UNARY = 16  # unary columns per bigram bucket (wider count ranges quantised)
_BIGRAM_MAX_BYTES = 1 << 30  # the bigram codes of the indexed strings are kept below this (else no bigram bound)
_BLOCK_BYTES = 256 << 20  # working memory of one block, per worker, when no memory budget is given
_PAIR_BYTES = 16  # working memory per (query, string) pair of a block: two float32 bound rows and temporaries
_PARALLEL_MIN_PAIRS = 2_000_000  # below this, worker start-up costs more than it saves
_LCS_MIN_CANDIDATES = 64  # queries with more candidates left after the count bounds get the LCS bound


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
    """Thermometer encoding of per-token counts: ``u(q) . v(s) >= sum_c min(n_c(q), n_c(s))`` (exact when unquantised).

    Tokens are the strings' ``g``-grams (characters for ``g = 1``); the ``max_buckets`` most frequent
    keep their own count, the others share one, and count ranges wider than ``max_unary`` are
    quantised upward: both can only raise the product, so the bound stays a lower bound.
    """

    def __init__(
        self, strings: Sequence[str], g: int = 1, max_buckets: int = _MAX_BUCKETS, max_unary: int = _MAX_UNARY
    ) -> None:
        self.g = g
        tokens, _ = _grams(strings, g)
        values, freq = np.unique(tokens, return_counts=True)
        order = np.lexsort((values, -freq))  # most frequent first, ties by token: deterministic
        kept = np.sort(values[order[:max_buckets]])
        self.kept = kept
        self.n_buckets = len(kept) + (1 if len(values) > len(kept) else 0)
        self.other = len(kept) if self.n_buckets > len(kept) else -1
        lo = np.zeros(self.n_buckets, np.int64)
        hi = np.zeros(self.n_buckets, np.int64)
        for i, (a, b) in enumerate(_chunks(len(strings))):  # in row chunks: bounded memory
            counts = self.counts(strings[a:b])
            lo = counts.min(axis=0) if i == 0 else np.minimum(lo, counts.min(axis=0))
            hi = counts.max(axis=0) if i == 0 else np.maximum(hi, counts.max(axis=0))
        self.lo = lo
        span = hi - self.lo
        self.step = np.maximum(1, -(-span // max_unary))  # ceil(span / max_unary)
        self.width = -(-span // self.step)
        self.offset = np.concatenate([[0], np.cumsum(self.width)]).astype(np.int64)
        self.dim = int(self.offset[-1])
        self.hi = hi
        self.quantised = bool((self.step > 1).any())

    def counts(self, strings: Sequence[str]) -> np.ndarray:
        """(n, n_buckets) token counts; tokens outside the kept ones go to the last bucket or nowhere."""
        n, nb = len(strings), self.n_buckets
        tokens, rows = _grams(strings, self.g)
        pos = np.searchsorted(self.kept, tokens)
        found = pos < len(self.kept)
        found[found] = self.kept[pos[found]] == tokens[found]
        bucket = np.where(found, pos, self.other)
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


class _GramBound:
    """The fitted strings' side of the ``g``-gram count bound (module docstring, step 2)."""

    def __init__(self, strings: Sequence[str], lengths: np.ndarray, encoder: _CountEncoder) -> None:
        self.g = encoder.g
        self.encoder = encoder
        self.codes_t, self.base = _encode_reference(encoder, strings)
        self.n_grams = np.maximum(lengths - (self.g - 1), 0).astype(np.float32)

    def raw(self, queries: list[str], lq: np.ndarray) -> np.ndarray:
        """``max(|G(q)|, |G(s)|) - sum_c min(n_c(q), n_c(s))`` (its relaxation) for every pair, float32."""
        enc = self.encoder
        codes, base = enc.encode(enc.counts(queries), query=True)
        nq = np.maximum(lq - (self.g - 1), 0).astype(np.float32)
        dev = device.current()
        if dev is not None:  # the same values computed on the device (device.bag_bounds)
            return device.bag_bounds(self, codes, self.codes_t, base, nq, self.n_grams, enc.quantised, dev)
        lb = np.maximum(nq[:, None], self.n_grams[None, :])
        if enc.dim:
            lb -= codes @ self.codes_t
        lb -= base.astype(np.float32)[:, None]
        if enc.quantised:
            np.maximum(lb, np.abs(nq[:, None] - self.n_grams[None, :]), out=lb)
        return lb


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

    def __init__(self, n_jobs: int | None = 2, block_size: int = 64, memory_budget: int | None = None) -> None:
        self.n_jobs = n_jobs
        self.block_size = block_size
        self.memory_budget = memory_budget

    def fit(self, strings: Sequence[str]) -> "LevenshteinIndex":
        """Index the strings searched (for LevAtt: the serialised synthetic rows)."""
        strings = _as_str_list(strings, "strings")
        if len(strings) == 0:
            raise TabmemError("LevenshteinIndex.fit: no strings to index (the synthetic table is empty)")
        if any(len(s) >= 1 << 24 for s in strings):
            raise TabmemError("strings: strings of 2**24 characters or more are not supported")
        check_positive_int("LevenshteinIndex: block_size", self.block_size)
        check_positive_int("LevenshteinIndex: memory_budget", self.memory_budget, allow_none=True)
        self.strings_ = strings
        self.array_ = np.array(strings, dtype=object)
        self.lengths_ = np.fromiter((len(s) for s in strings), dtype=np.int64, count=len(strings))
        self.first_index_: dict[str, int] = {}
        for i, s in enumerate(strings):
            self.first_index_.setdefault(s, i)
        self.encoder_ = _CountEncoder(strings)
        self.codes_t_, self.base_ = _encode_reference(self.encoder_, strings)
        self._lengths_f32 = self.lengths_.astype(np.float32)
        bigram_encoder = _CountEncoder(strings, 2, _BIGRAM_BUCKETS, _BIGRAM_UNARY)
        small = 4 * bigram_encoder.dim * len(strings) <= _BIGRAM_MAX_BYTES
        self.bigrams_ = _GramBound(strings, self.lengths_, bigram_encoder) if small else None
        return self

    # ------------------------------------------------------------------ query
    def query(self, queries: Sequence[str], *, progress: Callable[[int], None] | None = None) -> LevenshteinResult:
        """Exact ``min_s Lev(q, s)`` and an argmin for every query (deterministic, whatever ``n_jobs``,
        the memory budget or the shards); ``progress(rows)`` is called as blocks of queries finish."""
        if not hasattr(self, "strings_"):
            raise TabmemError("LevenshteinIndex is not fitted: call fit(strings) first")
        queries = _as_str_list(queries, "queries")
        n = len(queries)
        if n == 0:
            return LevenshteinResult(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0)
        if any(len(q) >= 1 << 24 for q in queries):
            raise TabmemError("queries: strings of 2**24 characters or more are not supported")
        sharded = _sharded_query(self, queries, progress)
        if sharded is not None:
            return sharded
        jobs = resolve_n_jobs(self.n_jobs)
        blocks = [(i, min(i + self.block_rows(jobs), n)) for i in range(0, n, self.block_rows(jobs))]
        small = n * len(self.strings_) < _PARALLEL_MIN_PAIRS
        if jobs == 1 or len(blocks) == 1 or small:
            parts = []
            for a, b in blocks:
                parts.append(_search_block(self, queries[a:b]))
                if progress is not None:
                    progress(b - a)
        else:
            extra = {} if progress is None else {"progress": progress}
            parts = _parallel(self, queries, blocks, jobs, **extra)
        dist = np.concatenate([p[0] for p in parts])
        idx = np.concatenate([p[1] for p in parts])
        return LevenshteinResult(dist, idx, int(sum(p[2] for p in parts)), n * len(self.strings_))

    def block_rows(self, jobs: int = 1) -> int:
        """Queries per block: ``block_size``, fewer when a block's working memory (:data:`_PAIR_BYTES` per
        query x string pair) would exceed the memory budget (``memory_budget``, else the enclosing
        :func:`~tabmem.neighbors.settings.working_memory`, over the ``jobs`` workers; without either,
        :data:`_BLOCK_BYTES` each)."""
        budget = self.memory_budget if self.memory_budget is not None else settings.current_memory()
        per_worker = _BLOCK_BYTES if budget is None else budget // max(jobs, 1)
        return int(max(1, min(self.block_size, per_worker // (_PAIR_BYTES * len(self.strings_)))))

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


def _chunks(n: int, rows: int = 8192) -> list[tuple[int, int]]:
    return [(a, min(a + rows, n)) for a in range(0, n, rows)]


def _encode_reference(encoder: _CountEncoder, strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The indexed strings' unary codes, transposed (dim, n) float32, and their constants, in row chunks."""
    codes_t = np.empty((encoder.dim, len(strings)), dtype=np.float32)
    base = np.empty(len(strings), dtype=np.int64)
    for a, b in _chunks(len(strings)):
        codes, base[a:b] = encoder.encode(encoder.counts(strings[a:b]), query=False)
        codes_t[:, a:b] = codes.T
    return codes_t, base


def _grams(strings: Sequence[str], g: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``g``-gram (1 or 2) of every string as an int64 token, and the row it belongs to."""
    codes, rows = _code_points(strings)
    codes = codes.astype(np.int64)
    if g == 1:
        return codes, rows
    inside = rows[:-1] == rows[1:]  # both characters in the same string
    return (codes[:-1] * 0x110000 + codes[1:])[inside], rows[:-1][inside]


# ---------------------------------------------------------------------- worker side
def _search_block(index: LevenshteinIndex, queries: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Steps 1-4 of the module docstring for one block of queries: (distances, argmins, exact evaluations)."""
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
    lbs = _combined_bounds(index, todo_q)
    strings, array, ls = index.strings_, index.array_, index._lengths_f32
    for row, q in enumerate(todo_q):
        lb = lbs[row]
        # seeds: the few smallest bounds give the query a first upper bound
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
        assert best is not None
        if best > 0:
            mask = lb < best
            mask[seed] = False
            cand = np.flatnonzero(mask)
            if cand.size > _LCS_MIN_CANDIDATES:  # many left: tighten them with the LCS bound (step 3)
                lcs = process.cdist([q], array[cand].tolist(), scorer=LCSseq.similarity, dtype=np.int32)[0]
                tight = np.maximum(np.float32(len(q)), ls[cand]) - lcs
                np.maximum(lb[cand], tight, out=tight)
                keep = tight < best
                cand, bounds_c = cand[keep], tight[keep]
            else:
                bounds_c = lb[cand]
            if cand.size:
                order_c = np.argsort(bounds_c, kind="stable")
                order, bounds = cand[order_c], bounds_c[order_c]
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
        dist[todo[row]], arg[todo[row]] = best, best_j
    return dist, arg, n_exact


def _combined_bounds(index: LevenshteinIndex, queries: list[str]) -> np.ndarray:
    """The larger of the bag bound and the bigram bound ``ceil(raw / 2)`` for every pair (float32, exact integers)."""
    lbs = index._bounds(queries)
    bigrams = getattr(index, "bigrams_", None)
    if bigrams is not None and bigrams.encoder.n_buckets:
        lq = np.fromiter((len(q) for q in queries), dtype=np.float32, count=len(queries))
        raw = bigrams.raw(queries, lq)
        raw *= 0.5
        np.ceil(raw, out=raw)
        np.maximum(lbs, raw, out=lbs)
        del raw
    return lbs


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


def _parallel(
    index: LevenshteinIndex,
    queries: list[str],
    blocks: list[tuple[int, int]],
    jobs: int,
    progress: Callable[[int], None] | None = None,
):
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
            parts = []
            for (a, b), part in zip(blocks, ex.map(_worker_run, [queries[a:b] for a, b in blocks])):
                parts.append(part)
                if progress is not None:
                    progress(b - a)
            return parts
    finally:
        _WORKER_INDEX = None


# ---------------------------------------------------------------------- sharded over the executor
def _sharded_query(
    index: LevenshteinIndex, queries: list[str], progress: Callable[[int], None] | None
) -> LevenshteinResult | None:
    """The query split over the active sharding (:mod:`tabmem.neighbors.shards`), else ``None``.

    Every query's answer depends on that query and the indexed strings only, so the merged result
    is the in-process one, bit for bit (``n_exact`` included)."""
    plan = active_sharding()
    if plan is None:
        return None
    bounds = shard_bounds(len(queries), len(index.strings_), plan.shards)
    if len(bounds) < 2:
        return None
    if device.current() is not None:
        raise TabmemError(DEVICE_NOT_SHARDED)
    shipped = copy.copy(index)  # the fitted index as it is: one thread count per task
    shipped.n_jobs = plan.threads
    if shipped.memory_budget is None:  # the context does not travel with the task: its budget does
        shipped.memory_budget = settings.current_memory()
    dist = np.empty(len(queries), dtype=np.int64)
    idx = np.empty(len(queries), dtype=np.int64)
    n_exact = [0]

    def done(i: int, found: LevenshteinResult) -> None:
        start, stop = bounds[i]
        dist[start:stop], idx[start:stop] = found.distance, found.index
        n_exact[0] += found.n_exact
        if progress is not None:
            progress(stop - start)

    plan.run(functools.partial(_query_shard, shipped), [queries[a:b] for a, b in bounds], done)
    return LevenshteinResult(dist, idx, n_exact[0], len(queries) * len(index.strings_))


def _query_shard(index: LevenshteinIndex, queries: list[str]) -> LevenshteinResult:
    """One task: the ordinary (unsharded) query."""
    with sharding(None):
        return index.query(queries)


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
