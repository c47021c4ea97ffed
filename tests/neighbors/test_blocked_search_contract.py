"""The blocked search's contract, against a toy distance whose exact matrix is known.

:func:`tabmem.neighbors.blocked.kneighbors` must return the exact ``k`` smallest distances
per query row, ties broken by the lower reference index, whatever the fast keys are, as long
as they stay within the stated ``margin`` of the exact keys (``inf``: no information), and
whatever the categorical match counts allow it to prune. The toy distance below hands it an
exact matrix ``D``, adversarially perturbed keys and (optionally) match counts with
``D >= (n_cat - matches) / M``; the truth is a plain lexsort of each row of ``D``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tabmem.errors import ParameterError
from tabmem.neighbors.blocked import BYTES_PER_CELL, block_rows_for, kneighbors
from tabmem.neighbors.distances import Block, PrunedBlock


def truth(d: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: per row, the k smallest of D by (distance, index); -1/inf padding."""
    n_q, n_ref = d.shape
    idx = np.full((n_q, k), -1, dtype=np.int64)
    dist = np.full((n_q, k), np.inf)
    for i in range(n_q):
        order = sorted(range(n_ref), key=lambda j: (d[i, j], j))[:k]
        idx[i, : len(order)] = order
        dist[i, : len(order)] = d[i, order]
    return idx, dist


def assert_equals_truth(got: tuple[np.ndarray, np.ndarray], d: np.ndarray, k: int) -> None:
    """The search's neighbours and distances are the brute force's, exactly."""
    want = truth(d, k)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


class MatrixDistance:
    """A distance given by its exact matrix; fast keys = exact + noise, ``|noise| <= margin``.

    With ``matches`` it also offers the categorical pruning: ``d = (e + n_cat - matches) / M``
    for an ``e`` in [0, 1) that the toy keeps, so ``d >= (n_cat - matches) / M`` holds.
    """

    def __init__(self, d, noise=None, margin=None, *, e=None, matches=None, n_cat=0, n_columns=1):
        self.d = np.asarray(d, dtype=np.float64)
        self.noise = np.zeros_like(self.d) if noise is None else noise
        self.margin = np.zeros(len(self.d)) if margin is None else np.asarray(margin, dtype=np.float64)
        self.e, self.matches = e, matches
        self.n_cat_total, self.n_columns_ = n_cat, n_columns
        self.dense_calls: list[tuple[int, int]] = []
        self.pruned_calls: list[tuple[int, int]] = []
        self.exact_pairs = 0
        self.pruned_exact_rows: list[np.ndarray] = []  # the block-local rows of each exact() call

    @property
    def n_ref(self) -> int:
        return self.d.shape[1]

    def block(self, q, rows: slice) -> Block:
        self.dense_calls.append((rows.start, rows.stop))
        d = self.d[rows]
        key = d + self.noise[rows]
        key[~np.isfinite(self.margin[rows])] = 0.0  # no information at all in these rows' keys

        def exact(r, j):
            self.exact_pairs += len(r)
            return d[r, j]

        return Block(
            key=key,
            margin=self.margin[rows].copy(),
            exact=exact,
            key_to_distance=lambda r, key_: np.asarray(key_, dtype=np.float64),
            distance_to_key=lambda r, dd: np.asarray(dd, dtype=np.float64),
        )

    def pruned_block(self, q, rows: slice) -> PrunedBlock | None:
        if self.matches is None:
            return None
        self.pruned_calls.append((rows.start, rows.stop))
        e, m = self.e[rows], float(self.n_columns_)

        def exact(r, j, h):  # uses the mismatch count it is given, as the real distances do
            self.exact_pairs += len(r)
            self.pruned_exact_rows.append(np.asarray(r).copy())
            return (e[r, j] + h) / m

        return PrunedBlock(matches=self.matches[rows].copy(), exact=exact)


def categorical_toy(seed: int, n_q: int, n_ref: int, *, n_cat: int = 6, close: float = 0.05, integer_e: bool = False):
    """Match counts: mostly few matches, a ``close`` share of near-complete matches (selective pruning)."""
    rng = np.random.default_rng(seed)
    matches = rng.integers(0, 3, (n_q, n_ref))
    near = rng.random((n_q, n_ref)) < close
    matches[near] = rng.integers(n_cat - 1, n_cat + 1, near.sum())
    matches = matches.astype(np.uint8)
    e = rng.integers(0, 4, (n_q, n_ref)) / 4 if integer_e else rng.random((n_q, n_ref))
    m = n_cat + 1
    d = (e + (n_cat - matches.astype(np.float64))) / m  # rounded as exact() rounds
    return MatrixDistance(d, margin=np.full(n_q, 1e-9), e=e, matches=matches, n_cat=n_cat, n_columns=m)


# ------------------------------------------------------------------ the dense search
@pytest.mark.parametrize("k", [1, 2, 3, 7, 11, 12, 15])
def test_dense_search_is_exact_under_adversarial_keys_and_ties(k: int) -> None:
    rng = np.random.default_rng(k)
    n_q, n_ref = 40, 11
    d = rng.integers(0, 6, (n_q, n_ref)) / 8.0  # many exact ties
    margin = np.full(n_q, 0.3)  # keys off by up to 0.3: the candidates must be recomputed and proven
    noise = rng.uniform(-0.3, 0.3, (n_q, n_ref))
    noise[::3] = -0.3 * np.sign(d[::3] - d[::3].mean(axis=1, keepdims=True))  # keys invert the true order
    dist = MatrixDistance(d, noise, margin)
    assert_equals_truth(kneighbors(dist, range(n_q), k, block_rows=7, n_jobs=1), d, k)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_dense_search_with_exact_keys_and_near_ties(k: int) -> None:
    # keys exact but margins tight, distances crowded around the k-th: the proof must still hold
    rng = np.random.default_rng(10 + k)
    n_q, n_ref = 30, 50
    d = 1.0 + rng.integers(-2, 3, (n_q, n_ref)) * 1e-7
    noise = rng.uniform(-1e-7, 1e-7, (n_q, n_ref))
    dist = MatrixDistance(d, noise, np.full(n_q, 1e-7))
    got = kneighbors(dist, range(n_q), k, block_rows=8, n_jobs=1)
    assert_equals_truth(got, d, k)


def test_rows_whose_keys_carry_no_information_are_evaluated_against_every_row() -> None:
    rng = np.random.default_rng(3)
    n_q, n_ref, k = 12, 30, 3
    d = rng.random((n_q, n_ref))
    margin = np.full(n_q, 1e-12)
    margin[[0, 5, 11]] = np.inf  # their keys are all zero: nothing to learn from them
    dist = MatrixDistance(d, None, margin)
    got = kneighbors(dist, range(n_q), k, block_rows=4, n_jobs=1)
    assert_equals_truth(got, d, k)


def test_well_separated_rows_are_proven_from_the_candidates_alone() -> None:
    # exact keys, distinct distances, tiny margins: k + 1 exact evaluations per row suffice
    rng = np.random.default_rng(4)
    n_q, n_ref, k = 20, 60, 2
    d = rng.permuted(np.tile(np.arange(n_ref, dtype=np.float64), (n_q, 1)), axis=1)
    dist = MatrixDistance(d, None, np.full(n_q, 1e-9))
    got = kneighbors(dist, range(n_q), k, block_rows=20, n_jobs=1)
    np.testing.assert_array_equal(got[0], truth(d, k)[0])
    assert dist.exact_pairs == n_q * (k + 1)


# ----------------------------------------------------------------- the pruned search
@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("integer_e", [False, True])
def test_pruned_search_is_exact_and_never_evaluates_the_dense_block(k: int, integer_e: bool) -> None:
    dist = categorical_toy(k, 30, 200, integer_e=integer_e)
    got = kneighbors(dist, range(30), k, block_rows=10, n_jobs=1)
    assert_equals_truth(got, dist.d, k)
    # selective pruning (module docstring, step 0): a small share of the pairs, no dense block
    assert dist.pruned_calls == [(0, 10), (10, 20), (20, 30)] and dist.dense_calls == []
    assert dist.exact_pairs < 0.25 * 30 * 200


def test_pruned_search_in_small_chunks_of_surviving_pairs(monkeypatch) -> None:
    import tabmem.neighbors.blocked as blocked

    dist = categorical_toy(7, 25, 120, integer_e=True)
    want = truth(dist.d, 3)
    for pairs in (1, 5, 17, 64, 1 << 20):
        monkeypatch.setattr(blocked, "_PRUNED_PAIRS", pairs)
        dist.pruned_exact_rows.clear()
        got = kneighbors(dist, range(25), 3, block_rows=25, n_jobs=1)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        # memory: after the bound (k pairs per row), at most `pairs` surviving pairs at a time,
        # unless a single query row has more; every row in exactly one chunk, in order
        bound, *chunks = dist.pruned_exact_rows
        assert len(bound) == 25 * 3
        for rows in chunks:
            assert len(rows) <= pairs or len(np.unique(rows)) == 1
        np.testing.assert_array_equal(np.unique(np.concatenate(chunks)), np.arange(25))
        assert all(a.max() < b.min() for a, b in zip(chunks, chunks[1:]))
    assert dist.dense_calls == []


def test_pruned_bound_keeps_rows_tied_with_the_kth_distance() -> None:
    # query 0: refs 0..2 match everything (e = .5 -> d = .5/M); refs 3.. mismatch one column
    # (d >= 1/M); ref 9 mismatches one column with e = 0 and ref 10 ... ties must be kept exactly
    n_cat, m, n_ref = 3, 4, 40
    matches = np.zeros((1, n_ref), dtype=np.uint8)
    e = np.full((1, n_ref), 0.75)
    matches[0, [5, 17, 30]] = n_cat  # full matches, e = .75 -> d = .75/4
    matches[0, [2, 9, 31]] = n_cat - 1  # one mismatch, e = 0 -> d = 1/4 (ties with one another)
    e[0, [2, 9, 31]] = 0.0
    d = (e + (n_cat - matches.astype(np.float64))) / m
    for k in (1, 3, 4, 5, 6, 7):
        dist = MatrixDistance(d, None, [1e-12], e=e, matches=matches, n_cat=n_cat, n_columns=m)
        got = kneighbors(dist, range(1), k, n_jobs=1)
        assert_equals_truth(got, d, k)


def test_pruned_search_with_fewer_matching_rows_than_k() -> None:
    # only refs 0 and 1 share any category with the query: the k best-matching rows must still
    # be k distinct rows, and the counts restored, for the distances of refs 0 and 1 to be right
    n_cat, m, n_ref = 4, 5, 300
    matches = np.zeros((3, n_ref), dtype=np.uint8)
    matches[:, 0], matches[:, 1] = 4, 3
    rng = np.random.default_rng(5)
    e = rng.random((3, n_ref))
    d = (e + (n_cat - matches.astype(np.float64))) / m
    for k in (2, 3, 4):
        dist = MatrixDistance(d, None, np.full(3, 1e-12), e=e, matches=matches, n_cat=n_cat, n_columns=m)
        got = kneighbors(dist, range(3), k, n_jobs=1)
        assert_equals_truth(got, d, k)


def test_unselective_pruning_falls_back_to_the_dense_search_for_the_remaining_blocks() -> None:
    # every pair survives the bound (all rows match everything): the dense search runs instead,
    # and, once a block showed that, the later blocks do not try the pruning again
    rng = np.random.default_rng(6)
    n_q, n_ref, n_cat = 20, 30, 2
    matches = np.full((n_q, n_ref), n_cat, dtype=np.uint8)
    e = rng.random((n_q, n_ref))
    d = (e + (n_cat - matches.astype(np.float64))) / (n_cat + 1)
    dist = MatrixDistance(d, None, np.full(n_q, 1e-12), e=e, matches=matches, n_cat=n_cat, n_columns=n_cat + 1)
    got = kneighbors(dist, range(n_q), 2, block_rows=5, n_jobs=1)
    assert_equals_truth(got, d, 2)
    assert dist.pruned_calls == [(0, 5)]
    assert dist.dense_calls == [(0, 5), (5, 10), (10, 15), (15, 20)]


# ------------------------------------------------------------- blocks, threads, shapes
def test_block_rows_for_keeps_all_workers_inside_the_budget() -> None:
    # rows * n_ref * BYTES_PER_CELL * n_jobs <= budget, as many rows as fit, between 1 and 128
    assert BYTES_PER_CELL == 24
    assert block_rows_for(1000, 1, 24 * 1000 * 10) == 10
    assert block_rows_for(1000, 2, 24 * 1000 * 10) == 5
    assert block_rows_for(1000, 3, 24 * 1000 * 10) == 3
    assert block_rows_for(1000, 2, 24 * 1000 * 10 - 1) == 4
    assert block_rows_for(1000, 1, 24 * 1000 * 10 + 24 * 999) == 10
    assert block_rows_for(10, 1, 1 << 30) == 128  # at most 128 rows per block
    assert block_rows_for(10**9, 4, 1 << 20) == 1  # at least one row
    assert block_rows_for(0, 1, 24 * 50) == 50  # an empty reference counts as one column
    assert block_rows_for(100, 0, 24 * 100 * 7) == 7  # no workers counts as one
    assert block_rows_for(100, 1) == 128  # the default budget (1 GiB) allows the cap


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_blocks_follow_the_budget_and_progress_reports_every_row(n_jobs: int) -> None:
    rng = np.random.default_rng(8)
    n_q, n_ref = 23, 10
    d = rng.random((n_q, n_ref))
    dist = MatrixDistance(d, None, np.full(n_q, 1e-12))
    done: list[int] = []
    got = kneighbors(dist, range(n_q), 2, n_jobs=n_jobs, memory_budget=n_jobs * 24 * n_ref * 4, progress=done.append)
    np.testing.assert_array_equal(got[0], truth(d, 2)[0])
    assert sorted(dist.dense_calls) == [(s, min(s + 4, n_q)) for s in range(0, n_q, 4)]
    assert sorted(done) == [3, 4, 4, 4, 4, 4]


def test_explicit_block_rows_override_the_budget() -> None:
    rng = np.random.default_rng(9)
    d = rng.random((10, 5))
    dist = MatrixDistance(d, None, np.full(10, 1e-12))
    done: list[int] = []
    kneighbors(dist, range(10), 1, block_rows=6, n_jobs=1, progress=done.append)
    assert dist.dense_calls == [(0, 6), (6, 10)] and done == [6, 4]


def test_more_neighbours_than_reference_rows_pad_with_minus_one_and_inf() -> None:
    d = np.array([[0.5, 0.25, 0.5], [0.0, 0.0, 0.0]])
    for k in (3, 4, 6):
        idx, dist = kneighbors(MatrixDistance(d, None, [0.1, 0.1]), range(2), k, n_jobs=1)
        assert idx.shape == dist.shape == (2, k) and idx.dtype == np.int64
        np.testing.assert_array_equal(idx[:, :3], [[1, 0, 2], [0, 1, 2]])
        np.testing.assert_array_equal(dist[:, :3], [[0.25, 0.5, 0.5], [0.0, 0.0, 0.0]])
        assert (idx[:, 3:] == -1).all() and np.isposinf(dist[:, 3:]).all()


def test_no_queries_or_no_reference_rows() -> None:
    idx, dist = kneighbors(MatrixDistance(np.zeros((0, 4))), range(0), 2)
    assert idx.shape == dist.shape == (0, 2)
    idx, dist = kneighbors(MatrixDistance(np.zeros((3, 0))), range(3), 2)
    assert idx.shape == dist.shape == (3, 2)
    assert (idx == -1).all() and np.isposinf(dist).all() and idx.dtype == np.int64


def test_k_must_be_a_positive_integer() -> None:
    dist = MatrixDistance(np.zeros((2, 3)))
    for bad in (0, -2, 1.0, 2.5, True, "2", None):
        with pytest.raises(
            ParameterError, match=r"^k must be a positive integer, got " + repr(bad).replace(".", r"\.")
        ):
            kneighbors(dist, range(2), bad)
    idx, _ = kneighbors(dist, range(2), np.int64(2), n_jobs=1)  # numpy integers are integers
    assert idx.shape == (2, 2)


def test_a_single_reference_row_is_every_query_rows_nearest() -> None:
    d = np.array([[0.5], [0.0], [2.0]])
    idx, dist = kneighbors(MatrixDistance(d, None, np.full(3, 1e-12)), range(3), 2, n_jobs=1)
    np.testing.assert_array_equal(idx, [[0, -1], [0, -1], [0, -1]])
    np.testing.assert_array_equal(dist, [[0.5, np.inf], [0.0, np.inf], [2.0, np.inf]])


def test_no_reference_rows_with_a_distance_that_prunes() -> None:
    empty = np.zeros((3, 0))
    dist = MatrixDistance(empty, e=empty, matches=np.zeros((3, 0), dtype=np.uint8), n_cat=2, n_columns=3)
    idx, d = kneighbors(dist, range(3), 2, n_jobs=1)
    assert (idx == -1).all() and np.isposinf(d).all()


def test_default_k_is_two() -> None:
    d = np.array([[0.3, 0.1, 0.2]])
    idx, dist = kneighbors(MatrixDistance(d, None, [1e-12]), range(1))
    np.testing.assert_array_equal(idx, [[1, 2]])
    np.testing.assert_array_equal(dist, [[0.1, 0.2]])


def test_blas_is_single_threaded_inside_the_search() -> None:
    # the workers' BLAS calls must not each start a BLAS thread pool (oversubscription)
    from threadpoolctl import threadpool_info, threadpool_limits

    seen: list[int] = []

    class Recording(MatrixDistance):
        def block(self, q, rows):
            seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
            return super().block(q, rows)

    if not any(i["user_api"] == "blas" for i in threadpool_info()):
        pytest.skip("no BLAS library that threadpoolctl can see")
    with threadpool_limits(limits=2, user_api="blas"):
        kneighbors(Recording(np.zeros((4, 3))), range(4), 1, block_rows=2, n_jobs=1)
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("n_jobs,n_blocks", [(2, 2), (3, 6)])
def test_blocks_run_on_n_jobs_threads_at_once(n_jobs: int, n_blocks: int) -> None:
    # the barrier only opens when n_jobs blocks are evaluated at the same time (threads, not a loop)
    import threading
    import time

    barrier = threading.Barrier(n_jobs, timeout=15)  # generous on a loaded machine
    lock, live, peak, threads = threading.Lock(), [0], [0], set()

    class Concurrent(MatrixDistance):
        def block(self, q, rows):
            with lock:
                live[0] += 1
                peak[0] = max(peak[0], live[0])
                threads.add(threading.get_ident())
            barrier.wait()
            time.sleep(0.02)
            with lock:
                live[0] -= 1
            return super().block(q, rows)

    rng = np.random.default_rng(12)
    d = rng.random((2 * n_blocks, 5))
    got = kneighbors(Concurrent(d, None, np.full(len(d), 1e-12)), range(len(d)), 2, block_rows=2, n_jobs=n_jobs)
    np.testing.assert_array_equal(got[0], truth(d, 2)[0])
    assert peak[0] == n_jobs and len(threads) == n_jobs  # n_jobs workers, never more


@pytest.mark.parametrize("row", [0, 7])
def test_pruned_search_row_with_fewer_matching_rows_than_k_among_selective_rows(row: int) -> None:
    # one query row shares categories with two reference rows only; the other rows of its block
    # keep the pruning selective. The k best-matching rows taken for the bound must be distinct
    # and every match count restored, or the distances of refs 0 and 1 come out wrong.
    toy = categorical_toy(11, 20, 100, n_cat=6)
    matches, e = toy.matches, toy.e
    matches[row] = 0
    matches[row, 0], matches[row, 1] = 6, 5
    d = (e + (6 - matches.astype(np.float64))) / 7
    for k in (3, 4):
        dist = MatrixDistance(d, None, np.full(20, 1e-12), e=e, matches=matches, n_cat=6, n_columns=7)
        got = kneighbors(dist, range(20), k, n_jobs=1)
        assert_equals_truth(got, d, k)
        assert dist.dense_calls == []  # the pruned search answered


def test_pruned_bound_slack_is_relative_for_many_categorical_columns() -> None:
    # 2000 categorical columns (float32 GEMM counts): the bound U*M = 1999 is an integer up to
    # rounding; rows with exactly 1999 mismatches tie with it and must survive the pruning
    n_cat, m, n_ref = 2000, 2001, 40
    matches = np.zeros((1, n_ref), dtype=np.float32)
    e = np.full((1, n_ref), 0.5)
    matches[0, 5], e[0, 5] = n_cat, 0.0  # d = 0
    matches[0, [1, 9, 20]], e[0, [1, 9, 20]] = 1, 0.0  # d = 1999 / 2001, tied
    d = (e + (n_cat - matches.astype(np.float64))) / m
    for k in (2, 3, 4):
        dist = MatrixDistance(d, None, [1e-12], e=e, matches=matches, n_cat=n_cat, n_columns=m)
        got = kneighbors(dist, range(1), k, n_jobs=1)
        assert_equals_truth(got, d, k)
        assert dist.dense_calls == []


# ------------------------------------------------- the proof of the dense search, case by case
def keyed(d, key, margin) -> MatrixDistance:
    d = np.asarray(d, dtype=np.float64)
    return MatrixDistance(d, np.asarray(key, dtype=np.float64) - d, margin)


def test_a_row_outside_the_candidates_that_ties_the_kth_at_the_floor_is_found() -> None:
    # k = 1: candidates by key are refs 2 (key .75) and 0 (key 1.25, the lowest index of the tie);
    # the floor 1.25 - .25 = 1.0 equals the best candidate's exact distance, so ref 1 (d = 1.0,
    # key 1.25) may tie it, and does, with a lower index
    dist = keyed([[1.5, 1.0, 1.0]], [[1.25, 1.25, 0.75]], [0.25])
    idx, d = kneighbors(dist, range(1), 1, n_jobs=1)
    assert idx.tolist() == [[1]] and d.tolist() == [[1.0]]


def test_a_row_whose_key_is_exactly_at_the_refinement_bound_is_recomputed() -> None:
    # k = 1: candidates refs 1 (key .75, d 1.0) and 2 (key 1.0); the k-th's bound is
    # 1.0 + .25 = 1.25, exactly ref 0's key; ref 0 (d = 1.0) ties ref 1 with a lower index
    dist = keyed([[1.0, 1.0, 1.25]], [[1.25, 0.75, 1.0]], [0.25])
    idx, d = kneighbors(dist, range(1), 1, n_jobs=1)
    assert idx.tolist() == [[0]] and d.tolist() == [[1.0]]


def test_a_row_outside_the_candidates_closer_than_the_kth_is_found() -> None:
    # k = 2: candidates refs 0, 1, 2 (keys 0, 1.75, 1.75); ref 3 (d = 1.875) hides behind key 2.125
    dist = keyed([[0.0, 2.0, 2.0, 1.875]], [[0.0, 1.75, 1.75, 2.125]], [0.25])
    idx, d = kneighbors(dist, range(1), 2, n_jobs=1)
    assert idx.tolist() == [[0, 3]] and d.tolist() == [[0.0, 1.875]]


class AffineDistance(MatrixDistance):
    """Keys in another unit per query row: ``key = a_i d + b_i`` (+ noise within the margin)."""

    def __init__(self, d, a, b, noise, margin):
        super().__init__(d, noise, margin)
        self.a, self.b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)

    def block(self, q, rows: slice) -> Block:
        blk = super().block(q, rows)
        a, b = self.a[rows], self.b[rows]
        key = blk.key * a[:, None] + b[:, None]
        key[~np.isfinite(blk.margin)] = 0.0
        return Block(
            key=key,
            margin=blk.margin * a,
            exact=blk.exact,
            key_to_distance=lambda r, k_: (k_ - b[r]) / a[r],
            distance_to_key=lambda r, d_: d_ * a[r] + b[r],
        )


@pytest.mark.parametrize("k", [1, 2, 3])
def test_per_row_key_units_are_converted_with_each_rows_own_scale(k: int) -> None:
    # dyadic values: every conversion is exact, so ties stay ties
    rng = np.random.default_rng(20 + k)
    n_q, n_ref = 12, 9
    d = rng.integers(0, 8, (n_q, n_ref)) / 8.0
    noise = rng.integers(-2, 3, (n_q, n_ref)) / 16.0
    a = 2.0 ** rng.integers(-3, 4, n_q)
    b = rng.integers(-40, 40, n_q) / 4.0
    dist = AffineDistance(d, a, b, noise, np.full(n_q, 0.125))
    got = kneighbors(dist, range(n_q), k, block_rows=5, n_jobs=1)
    assert_equals_truth(got, d, k)
