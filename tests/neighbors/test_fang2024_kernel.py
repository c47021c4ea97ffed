"""``fang2024``'s fast pass (``Fang2024Distance.block``) against an independent reference.

The reference is the papers' formula evaluated pair by pair in float64 (``e_j`` summed column after
column as in their pandas code, then ``ê = (e - min e)/(max e - min e)`` per query, 0 when all
``e`` are equal, plus the categorical mismatches, over ``M``). Inside the value domain (0 or
``1e-100 <= |x| <= 1e15``) the exact values of the search have its bits (module docstring of
:mod:`tabmem.neighbors.distances`), so the comparisons here are bit for bit.

The tables are built to reach every branch of the fast pass: reference rows far from their mean
(the GEMM ``|u|^2 + |v|^2 - 2 u.v`` then cancels, so the float32 keys of near rows are scrambled
and only the error bound keeps the search exact), near-ties at both the smallest and the largest
``e`` of a row, values at both edges of the value domain (``1e15``, ``1e-100``) in one table,
tables without numerical columns, and reference tables whose ``e`` has no spread.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem import Schema
from tabmem.neighbors import NeighborIndex
from tabmem.neighbors.distances import Fang2024Distance, Queries

NUM = Schema(("x", "y"), ("x", "y"), ())
MIXED = Schema(("x", "y", "c", "t"), ("x", "y"), ("c", "t"), "t", "binclass")
ONE = Schema(("x", "c"), ("x",), ("c",))
CATS = Schema(("c", "t"), (), ("c", "t"), "t", "binclass")

# the fast pass's overflow, division and invalid operations are handled: a user never sees a RuntimeWarning
pytestmark = pytest.mark.filterwarnings("error")


# ------------------------------------------------------------------ references
def brute(ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema) -> np.ndarray:
    """The papers' distance of every query row to every reference row (float64, pair by pair).

    Element-wise numpy: each pair's squares are added column after column, as the scalar loop
    ``total += (x_c - t_c) ** 2`` does, so every value has that loop's bits.
    """
    t_num = ref[list(schema.numerical)].to_numpy(dtype=float)
    q_num = queries[list(schema.numerical)].to_numpy(dtype=float)
    t_cat = ref[list(schema.categorical)].astype(str).to_numpy()
    q_cat = queries[list(schema.categorical)].astype(str).to_numpy()
    e = np.zeros((len(queries), len(ref)))
    for c in range(t_num.shape[1]):
        diff = q_num[:, None, c] - t_num[None, :, c]
        e = diff * diff if c == 0 else e + diff * diff
    e = np.sqrt(e)
    lo, hi = e.min(axis=1, keepdims=True), e.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        ehat = np.where(hi > lo, (e - lo) / (hi - lo), 0.0)
    h = np.zeros(e.shape)
    for c in range(t_cat.shape[1]):
        h += q_cat[:, None, c] != t_cat[None, :, c]
    return (ehat + h) / len(schema.columns)


def brute_knn(full: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest per row, ties broken by the lower reference index."""
    order = np.lexsort((np.broadcast_to(np.arange(full.shape[1]), full.shape), full), axis=1)[:, :k]
    return order, np.take_along_axis(full, order, axis=1)


def fitted(ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema) -> tuple[Fang2024Distance, Queries]:
    dist = Fang2024Distance().fit(ref, schema)
    clean = dist.encoder_.validate(queries, name="queries", nan="match", unseen="mismatch")
    return dist, dist.prepare(clean)


def check_block_contract(
    ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema, full: np.ndarray | None = None
) -> None:
    """``Block``'s contract against the brute force, for one block holding every query row.

    ``exact`` gives the reference's bits; ``key`` is within ``margin`` of the exact key of every
    pair (``distance_to_key`` of the exact distance), rows with an infinite margin excepted;
    ``key_to_distance`` inverts ``distance_to_key``.
    """
    dist, q = fitted(ref, queries, schema)
    full = brute(ref, queries, schema) if full is None else full
    n_q, n_ref = full.shape
    blk = dist.block(q, slice(0, n_q))
    rows, refs = np.repeat(np.arange(n_q), n_ref), np.tile(np.arange(n_ref), n_q)
    exact = blk.exact(rows, refs).reshape(n_q, n_ref)
    np.testing.assert_array_equal(exact, full)
    margin = np.broadcast_to(np.asarray(blk.margin, dtype=float), (n_q,))
    exact_key = blk.distance_to_key(rows, full.ravel()).reshape(n_q, n_ref)
    err = np.abs(blk.key.astype(float) - exact_key)
    sure = np.isfinite(margin)
    assert (err[sure] <= margin[sure, None]).all(), float((err[sure] - margin[sure, None]).max())
    back = blk.key_to_distance(rows, exact_key.ravel()).reshape(n_q, n_ref)
    np.testing.assert_allclose(back[sure], full[sure], rtol=1e-9, atol=1e-12)
    # the margin is a few roundings of the keys' scale, not a bound that makes every pair a candidate
    scale = np.abs(exact_key).max(axis=1) + 1.0 / len(schema.columns)
    assert (margin[sure] <= 1e-4 * scale[sure]).all()


def check_search(ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema, k: int = 3, block_rows=None) -> None:
    full = brute(ref, queries, schema)
    b_idx, b_dist = brute_knn(full, k)
    idx, d = NeighborIndex("fang2024", n_jobs=1).fit(ref, schema).kneighbors(queries, k=k, block_rows=block_rows)
    np.testing.assert_array_equal(d, b_dist)
    np.testing.assert_array_equal(idx, b_idx)


# ------------------------------------------------------------------ tables
def far_from_mean(seed: int, n_ref: int = 120, n_q: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two clusters at +-P (the reference mean near 0), rows a few hundredths apart, queries in the clusters.

    ``S̄`` carries an absolute error of ~``eps |P|^2``, i.e. ~0.03 on ``e``: the float32 keys of
    the rows near a query (and of the farthest rows) do not order them; only the bound does.
    """
    rng = np.random.default_rng(seed)
    p = np.array([1.5e6, -2.5e6])

    def rows(n: int, spread: float) -> np.ndarray:
        side = np.where(rng.random(n) < 0.5, 1.0, -1.0)[:, None]
        return side * p + np.round(rng.normal(0, spread, (n, 2)), 3)

    ref = pd.DataFrame(rows(n_ref, 0.02), columns=["x", "y"])
    q = rows(n_q, 0.02)
    q[: n_q // 4] = ref[["x", "y"]].to_numpy()[: n_q // 4]  # exact copies: e = 0
    return ref, pd.DataFrame(q, columns=["x", "y"])


def with_cats(df: pd.DataFrame, seed: int, levels: tuple[str, ...] = ("p",)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = df.copy()
    out["c"] = rng.choice(list(levels), len(df))
    out["t"] = rng.integers(0, 2, len(df))
    return out[["x", "y", "c", "t"]]


def edge_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Query row 0 at ``1e15``, the edge of the value domain, far beyond the reference (values 0..768).

    Its ``e_j = 1e15 - t_j`` are exact (integers below ``2^53``): ``ê`` is 1, 2/3, 1/3, 0 for
    ``t`` = 0, 256, 512, 768. Row 1 is an ordinary row in the same block.
    """
    ref = pd.DataFrame({"x": [0.0, 256.0, 512.0, 768.0], "c": ["a", "b", "a", "b"]})
    q = pd.DataFrame({"x": [1e15, 300.0], "c": ["a", "a"]})
    return ref, q


# ------------------------------------------------------------------ block contract
@pytest.mark.parametrize("seed", [0, 1])
def test_block_keys_within_margin_when_the_fast_pass_cancels(seed: int) -> None:
    ref, q = far_from_mean(seed)
    check_block_contract(ref, q, NUM)
    check_block_contract(with_cats(ref, seed, ("p", "q")), with_cats(q, seed + 7, ("p", "q", "r")), MIXED)


def test_block_contract_on_ordinary_values() -> None:
    rng = np.random.default_rng(3)
    ref = pd.DataFrame({"x": rng.normal(0, 1, 60).round(2), "y": rng.normal(5, 0.1, 60).round(3)})
    q = pd.DataFrame({"x": rng.normal(0, 1, 25).round(2), "y": rng.normal(5, 0.1, 25).round(3)})
    q.iloc[:6] = ref.iloc[:6].to_numpy()  # exact copies: e = 0
    check_block_contract(ref, q, NUM)
    check_block_contract(with_cats(ref, 1, ("p", "q")), with_cats(q, 2, ("p", "q")), MIXED)


def test_block_with_a_row_at_the_edge_of_the_domain() -> None:
    ref, q = edge_tables()
    dist, prepared = fitted(ref, q, ONE)
    assert prepared.tame is None  # every row in the domain is bounded by the fast pass
    # hand-computed: e = 1e15 - t, spread 768, M = 2; row 1: e = 300, 44, 212, 468 (spread 424)
    expected = np.array(
        [
            [(1.0 + 0) / 2, (2 / 3 + 1) / 2, (1 / 3 + 0) / 2, (0.0 + 1) / 2],
            [((300 - 44) / 424 + 0) / 2, (0.0 + 1) / 2, ((212 - 44) / 424 + 0) / 2, ((468 - 44) / 424 + 1) / 2],
        ]
    )
    np.testing.assert_allclose(brute(ref, q, ONE), expected, rtol=1e-15)
    blk = dist.block(prepared, slice(0, 2))
    assert np.isfinite(blk.margin).all()
    check_block_contract(ref, q, ONE)
    check_search(ref, q, ONE, k=2)
    check_search(ref, q, ONE, k=4)


def test_block_edge_rows_mixed_with_cancelling_rows() -> None:
    ref, q = far_from_mean(5, n_ref=50, n_q=12)
    q.loc[3, "x"] = 1e15  # the edge of the domain, ~1e9 reference spreads away
    q.loc[8, "y"] = -7e14
    check_block_contract(ref, q, NUM)
    check_search(ref, q, NUM, k=2)


def test_block_without_numerical_columns() -> None:
    rng = np.random.default_rng(4)
    ref = pd.DataFrame({"c": rng.choice(["a", "b", "c"], 30), "t": rng.integers(0, 2, 30)})
    q = pd.DataFrame({"c": rng.choice(["a", "b", "d"], 12), "t": rng.integers(0, 2, 12)})
    check_block_contract(ref, q, CATS)
    dist, prepared = fitted(ref, q, CATS)
    blk = dist.block(prepared, slice(0, len(q)))
    full = brute(ref, q, CATS)
    # d = mismatches / 2 exactly; the key orders like it (every float32 here is a small integer)
    np.testing.assert_array_equal(np.argsort(blk.key, axis=1, kind="stable"), np.argsort(full, axis=1, kind="stable"))


@pytest.mark.parametrize("values", [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0, 0.0], [3.5]])
def test_block_when_e_has_no_spread(values: list[float]) -> None:
    """All reference rows equal numerically: ``ê = 0`` (scikit-learn's MinMaxScaler), ``d = h / M``."""
    ref = pd.DataFrame({"x": values, "c": (["a", "b"] * 4)[: len(values)]})
    q = pd.DataFrame({"x": [0.25, 2.0, -1e3, 1e-7], "c": ["a", "b", "z", "a"]})
    expected = np.array([[float(c != qc) / 2 for c in ref["c"]] for qc in q["c"]])
    np.testing.assert_array_equal(brute(ref, q, ONE), expected)
    check_block_contract(ref, q, ONE)
    check_search(ref, q, ONE, k=1)


def test_block_with_a_spread_tiny_against_the_reference_scale() -> None:
    """``e`` = 1 -+ 2^-52 (two reference rows at -1 and 1, the query at 2^-52): ``ê`` is 0 and 1 exactly,
    although the spread is a quarter of a unit in the fast pass's frame (reference magnitudes ~2^49)."""
    ref = pd.DataFrame({"x": [-1.0, 1.0, -1.0], "c": ["a", "b", "b"]})
    q = pd.DataFrame({"x": [2.0**-52, -(2.0**-52), 0.0], "c": ["a", "a", "b"]})
    np.testing.assert_array_equal(brute(ref, q, ONE), [[0.5, 0.5, 1.0], [0.0, 1.0, 0.5], [0.5, 0.0, 0.0]])
    check_block_contract(ref, q, ONE)
    check_search(ref, q, ONE, k=2)


def test_block_on_values_at_the_lower_edge_of_the_domain() -> None:
    """Multiples of ``2^-330`` (~4.6e-100, just above the domain's 1e-100): no square underflows.

    The expected distances are the brute force on the same tables scaled by ``2^330`` (integers): ``ê``
    is a ratio of differences of norms, so an exact power-of-two scaling leaves every bit unchanged.
    The float32 keys underflow to 0 here, so the margin makes every pair a candidate: slow, exact.
    """
    rng = np.random.default_rng(21)
    tiny = 2.0**-330

    def table(n: int) -> pd.DataFrame:
        return pd.DataFrame({"x": rng.integers(-300, 300, n) * 1.0, "y": rng.integers(0, 40, n) * 1.0})

    ref_i, q_i = table(80), table(30)
    q_i.iloc[:8] = ref_i.iloc[:8].to_numpy()  # exact copies
    ref, q = ref_i * tiny, q_i * tiny
    full = brute(ref_i, q_i, NUM)
    np.testing.assert_array_equal(brute(ref, q, NUM), full)
    dist, prepared = fitted(ref, q, NUM)
    blk = dist.block(prepared, slice(0, len(q)))
    rows, refs = np.repeat(np.arange(len(q)), len(ref)), np.tile(np.arange(len(ref)), len(q))
    np.testing.assert_array_equal(blk.exact(rows, refs).reshape(full.shape), full)
    exact_key = blk.distance_to_key(rows, full.ravel()).reshape(full.shape)
    assert (np.abs(blk.key - exact_key) <= blk.margin[:, None]).all()
    b_idx, b_dist = brute_knn(full, 3)
    idx, d = NeighborIndex("fang2024", n_jobs=1).fit(ref, NUM).kneighbors(q, k=3)
    np.testing.assert_array_equal(d, b_dist)
    np.testing.assert_array_equal(idx, b_idx)


def test_block_sums_the_squares_column_after_column() -> None:
    """Seven numerical columns of mixed magnitudes: the papers' pandas sum (left to right) fixes the bits."""
    rng = np.random.default_rng(31)
    cols = tuple(f"v{i}" for i in range(7))
    schema = Schema(cols, cols, ())

    def table(n: int) -> pd.DataFrame:
        return pd.DataFrame(rng.normal(0, 1, (n, 7)) * 10.0 ** rng.integers(-3, 4, (n, 7)), columns=list(cols))

    ref, q = table(70), table(20)
    check_block_contract(ref, q, schema)
    check_search(ref, q, schema, k=2)


def test_block_with_differences_at_the_edge_of_the_domain() -> None:
    """Values at +-1e15 and differences up to 2e15 (spreads at the domain's bound), against the brute force."""
    ref = pd.DataFrame({"x": [-1e15, 1e15, 0.0, 5e14, -3e14], "y": [1e15, -9.99e14, 5e13, 0.0, 7e14]})
    q = pd.DataFrame({"x": [1e15, -1e15, 1e14, 9.5e14], "y": [0.0, 1e15, -1e15, -8e14]})
    check_block_contract(ref, q, NUM)
    check_search(ref, q, NUM, k=2)


def test_single_reference_row_far_from_the_queries() -> None:
    """One reference row at 1e15: ``ê = 0`` for every pair (max = min), ``d = h / M``, even for a query at 0."""
    ref = pd.DataFrame({"x": [1e15], "c": ["a"]})
    q = pd.DataFrame({"x": [0.0, 1e15, -1e15, 7.0], "c": ["a", "b", "a", "b"]})
    expected = np.array([[0.0], [0.5], [0.0], [0.5]])
    np.testing.assert_array_equal(brute(ref, q, ONE), expected)
    check_block_contract(ref, q, ONE)
    check_search(ref, q, ONE, k=1)


def test_block_contract_with_queries_around_multiples_of_the_mean() -> None:
    """A reference at ``2^49 + 0..768`` (mean ~2^49, spread 768): queries at -2^49, 2^48 and 1e15 are far from it,
    the GEMM cancels for the near ones; every row must carry keys within its margin."""
    ref = pd.DataFrame({"x": 2.0**49 + np.array([0.0, 256.0, 512.0, 768.0]), "c": ["a", "b", "a", "b"]})
    q = pd.DataFrame({"x": [-(2.0**49), 2.0**48, 1e15, 2.0**49 + 300.0, 2.0**49], "c": ["a", "b", "a", "a", "b"]})
    check_block_contract(ref, q, ONE)
    check_search(ref, q, ONE, k=2)


def test_block_with_a_spread_below_one() -> None:
    """``e`` spans less than 1 (values a few thousandths apart): ``ê`` divides by that spread, not by 1."""
    ref = pd.DataFrame({"x": [0.001, 0.002, 0.004, 0.0075], "c": ["a", "b", "a", "b"]})
    q = pd.DataFrame({"x": [0.003, 0.0, 0.01], "c": ["a", "b", "a"]})
    check_block_contract(ref, q, ONE)
    check_search(ref, q, ONE, k=2)


def test_block_wider_than_one_tile() -> None:
    """600 query rows x 600 reference rows: the float64 GEMM runs in column tiles of 256 reference rows."""
    rng = np.random.default_rng(6)
    ref = pd.DataFrame({"x": rng.normal(0, 1, 600).round(3), "y": rng.normal(0, 1, 600).round(3)})
    q = pd.DataFrame({"x": rng.normal(0, 1, 600).round(3), "y": rng.normal(0, 1, 600).round(3)})
    dist, prepared = fitted(ref, q, NUM)
    blk = dist.block(prepared, slice(0, 600))
    t, x = ref.to_numpy(), q.to_numpy()
    e = np.sqrt((x[:, None, 0] - t[None, :, 0]) ** 2 + (x[:, None, 1] - t[None, :, 1]) ** 2)
    ehat = (e - e.min(axis=1, keepdims=True)) / (e.max(axis=1, keepdims=True) - e.min(axis=1, keepdims=True))
    rows = np.repeat(np.arange(600), 600)
    exact_key = blk.distance_to_key(rows, (ehat / 2).ravel()).reshape(600, 600)
    assert (np.abs(blk.key - exact_key) <= blk.margin[:, None] + 1e-12 * e.max()).all()


# ------------------------------------------------------------------ search through the dense path
@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("k", [1, 3])
def test_dense_search_equals_brute_force_near_ties(seed: int, k: int) -> None:
    ref, q = far_from_mean(seed)
    check_search(ref, q, NUM, k=k)
    # one categorical value everywhere: pruning cannot select, the dense search runs with the categorical GEMM
    check_search(with_cats(ref, seed), with_cats(q, seed + 1), MIXED, k=k, block_rows=16)


def test_dense_search_extremes_found_exactly() -> None:
    """The nearest and farthest ``e`` of each row decide ``ê`` of every pair: d1 and the largest distance agree."""
    ref, q = far_from_mean(9, n_ref=150, n_q=30)
    full = brute(ref, q, NUM)
    dist, prepared = fitted(ref, q, NUM)
    blk = dist.block(prepared, slice(0, len(q)))
    n_q, n_ref = full.shape
    exact = blk.exact(np.repeat(np.arange(n_q), n_ref), np.tile(np.arange(n_ref), n_q)).reshape(n_q, n_ref)
    assert (exact.min(axis=1) == 0.0).all() and (exact.max(axis=1) == 0.5).all()  # ê spans [0, 1] exactly, M = 2


def test_pair_distances_is_not_offered() -> None:
    dist = Fang2024Distance().fit(pd.DataFrame({"x": [1.0, 2.0]}), Schema(("x",), ("x",), ()))
    with pytest.raises(
        NotImplementedError,
        match=r"^fang2024 normalises per query over all reference rows; use the brute-force helper$",
    ):
        dist.pair_distances(dist.ref_, np.array([0]), np.array([1]))


# ------------------------------------------------------------------ the bound D
def test_bound_covers_the_float32_rounding_of_any_value() -> None:
    """``D(x)`` bounds ``|x - e|`` for ``x = float32(e)``; with an exactly known ``e`` (``E = A = 0``) that is
    the float32 rounding alone, largest just above a power of two, and absolute below float32's normal range."""
    dist = Fang2024Distance().fit(pd.DataFrame({"x": [0.0, 1.0]}), Schema(("x",), ("x",), ()))
    rng = np.random.default_rng(0)
    tops = np.ldexp(1.0 + 2.0**-24 - 2.0**-50, np.arange(-120, 120))  # rounds down to 2^j: error ~2^-24 x
    mids = np.ldexp(1.5 + 2.0**-24 - 2.0**-50, np.arange(-120, 120))
    tiny = np.ldexp(rng.random(200) + 0.5, rng.integers(-160, -126, 200))  # float32 subnormals
    spread = rng.random(2000) * 10.0 ** rng.integers(-30, 30, 2000)
    e = np.concatenate([tops, mids, tiny, spread, [0.0]])
    x = e.astype(np.float32).astype(np.float64)
    zero = np.zeros(len(e))
    d = dist._bound(x, zero, zero)
    assert (np.abs(x - e) <= d).all(), float((np.abs(x - e) - d).max())


def test_rows_at_both_edges_of_the_domain_in_one_block() -> None:
    """Row 0 at ``2^-320`` against a reference at ``0..768 * 2^-340`` (the smallest nonzero ~1.1e-100):
    ``e = 2^-320 - t`` exactly, ``ê`` = 1, 2/3, 1/3, 0 (as in :func:`edge_tables`); row 1 at ``1e15`` in the
    same block (all its ``e`` equal: ``ê = 0``). No shared scaling is needed: nothing underflows in the domain.
    """
    s = 2.0**-340
    ref = pd.DataFrame({"x": [0.0, 256 * s, 512 * s, 768 * s], "c": ["a", "b", "a", "b"]})
    q = pd.DataFrame({"x": [2.0**-320, 1e15], "c": ["a", "a"]})
    full = brute(ref, q, ONE)
    np.testing.assert_array_equal(full[0], [0.5, (2 / 3 + 1) / 2, (1 / 3) / 2, 0.5])
    np.testing.assert_array_equal(full[1], [0.0, 0.5, 0.0, 0.5])
    check_block_contract(ref, q, ONE)
    check_search(ref, q, ONE, k=2)
