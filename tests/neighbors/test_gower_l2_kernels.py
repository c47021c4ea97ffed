"""The ``gower`` and ``l2`` fast passes against float64 brute force, pair by pair.

The search is only exact if every :class:`Block` keeps its contract (``margin`` bounds
``|key - exact key|``; ``key_to_distance`` and ``distance_to_key`` map between keys and
distances), so these tests check the block itself, on every pair, and the cases the end-to-end
tests rarely reach: several reference tiles, missing values on one side only, constant columns,
queries far outside the reference range, values and spreads at the edges of the value domain
(``1e15``, ``1e-100``), numeric-only tables
(dense path) and the categorical pruning block. References: a vectorised float64 formula per
pair (Gower: mean over columns of ``min(|x - t| / range, 1)``, ``[x != t]``, NaN vs NaN 0 and NaN
vs a value 1; l2: Euclidean distance of standardised values and one-hot / sqrt(2)), exact
rational arithmetic (``fractions``) at the domain's bound, and scikit-learn.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import pairwise_distances

from tabmem import Schema
from tabmem.data.encoding import TableEncoder
from tabmem.neighbors import NeighborIndex

NUM = ("x", "y", "z", "w", "k")
CAT = ("c", "d")
MIXED = Schema(NUM + CAT, NUM, CAT)


def mixed_tables(n_ref: int, n_q: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Missing values in both (y), only in queries (z), only in the reference (w, never in its
    first rows), a constant column with gaps (k); queries partly outside the reference range."""
    rng = np.random.default_rng(seed)

    def make(n: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "x": rng.uniform(-3.0, 5.0, n),
                "y": rng.integers(0, 7, n).astype(float),
                "z": rng.normal(10.0, 2.0, n),
                "w": rng.uniform(0.0, 1.0, n),
                "k": np.full(n, 5.0),
                "c": rng.choice(["a", "b", "e"], n),
                "d": rng.choice(["u", "v"], n),
            }
        )

    ref, q = make(n_ref), make(n_q)
    ref.loc[rng.random(n_ref) < 0.15, "y"] = np.nan
    ref.loc[np.r_[False, False, False, False, False, rng.random(n_ref - 5) < 0.2], "w"] = np.nan
    ref.loc[[7, 11], "k"] = np.nan
    q.loc[rng.random(n_q) < 0.15, "y"] = np.nan
    q.loc[rng.random(n_q) < 0.2, "z"] = np.nan
    q.loc[[1, 4], "k"] = np.nan
    q.loc[[2, 3], "k"] = 9.0  # another value of the reference's constant column: contributes 0
    lo, hi = ref["x"].min(), ref["x"].max()
    span = hi - lo
    q.loc[0, "x"] = hi + 0.5 * span  # scaled 1.5: clipped at 1
    q.loc[5, "x"] = lo - 2.5 * span  # scaled -2.5
    q.loc[6, "x"] = np.nan  # a gap in the same column as the out-of-range values
    q.loc[8, "z"] = ref["z"].max() + 0.4 * (ref["z"].max() - ref["z"].min())  # scaled in (1, 2)
    q.loc[9, "c"] = "never-seen"
    return ref, q


def gower_brute(ref: pd.DataFrame, q: pd.DataFrame, num, cat) -> np.ndarray:
    """``(sum_num part + sum_cat [x != t]) / M`` for every (query, reference) pair, float64."""
    total = np.zeros((len(q), len(ref)))
    for c in num:
        t = ref[c].to_numpy(float)
        x = q[c].to_numpy(float)
        rng = np.nanmax(t) - np.nanmin(t)
        diff = np.abs(x[:, None] - t[None, :])
        part = np.minimum(diff / rng, 1.0) if rng > 0 else np.zeros_like(diff)
        xm, tm = np.isnan(x)[:, None], np.isnan(t)[None, :]
        part = np.where(xm & tm, 0.0, np.where(xm | tm, 1.0, part))
        total += part
    for c in cat:
        x = q[c].astype(object).to_numpy()
        t = ref[c].astype(object).to_numpy()
        total += x[:, None] != t[None, :]
    return total / (len(num) + len(cat))


def l2_brute(ref: pd.DataFrame, q: pd.DataFrame, num, cat) -> np.ndarray:
    """scikit-learn Euclidean distances of standardised values (reference mean, population std)
    and one-hot / sqrt(2) (a mismatch adds exactly 1 to d^2)."""
    t = ref[list(num)].to_numpy(float)
    x = q[list(num)].to_numpy(float)
    mean, std = t.mean(axis=0), t.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    parts_t, parts_x = [(t - mean) / std], [(x - mean) / std]
    for c in cat:
        cats = sorted(set(ref[c]) | set(q[c]))
        parts_t.append((ref[c].to_numpy()[:, None] == np.array(cats)[None, :]) / np.sqrt(2.0))
        parts_x.append((q[c].to_numpy()[:, None] == np.array(cats)[None, :]) / np.sqrt(2.0))
    fx, ft = np.hstack(parts_x), np.hstack(parts_t)
    if np.abs(fx).max() < 1e100:
        return pairwise_distances(fx, ft, metric="euclidean")
    return np.hypot.reduce(fx[:, None, :] - ft[None, :, :], axis=2)  # no overflow of the squares


def all_pairs(n_q: int, n_ref: int) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(np.arange(n_q), n_ref), np.tile(np.arange(n_ref), n_q)


def check_block(dist, prepared, expected: np.ndarray, key_of, *, rtol: float = 1e-12) -> np.ndarray:
    """The Block contract on every pair; ``key_of(d)`` is the documented key of distance ``d``."""
    n_q, n_ref = expected.shape
    blk = dist.block(prepared, slice(0, n_q))
    rr, jj = all_pairs(n_q, n_ref)
    np.testing.assert_allclose(blk.exact(rr, jj).reshape(n_q, n_ref), expected, rtol=rtol, atol=1e-14)
    true_key = key_of(expected)
    margin = np.broadcast_to(np.asarray(blk.margin, dtype=float), (n_q,))
    tame = np.isfinite(margin)
    assert np.all(margin[tame] >= 0)
    err = np.abs(blk.key.astype(np.float64) - true_key)
    bad = tame[:, None] & ~(err <= margin[:, None])
    assert not bad.any(), f"{bad.sum()} keys off by more than their margin (worst {err[bad].max():.3g})"
    np.testing.assert_allclose(blk.distance_to_key(rr, expected.ravel()), true_key.ravel(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(blk.key_to_distance(rr, true_key.ravel()), expected.ravel(), rtol=1e-9, atol=1e-12)
    return margin


# --------------------------------------------------------------------------------------- gower
@pytest.mark.parametrize("n_ref,n_q", [(40, 12), (300, 520)])  # 520 query rows: 256-wide reference tiles
def test_gower_block_keys_within_margin_of_brute_force(n_ref: int, n_q: int) -> None:
    ref, q = mixed_tables(n_ref, n_q)
    index = NeighborIndex("gower", n_jobs=1).fit(ref, MIXED)
    dist = index.distance_
    expected = gower_brute(ref, q, NUM, CAT)
    m, n_cat = len(MIXED.columns), len(CAT)
    check_block(dist, index.prepare(q), expected, lambda d: d * m - n_cat)
    # a block that starts inside the query table maps its local rows to the right queries
    blk = dist.block(index.prepare(q), slice(3, 7))
    rr, jj = all_pairs(4, n_ref)
    np.testing.assert_allclose(blk.exact(rr, jj).reshape(4, n_ref), expected[3:7], rtol=1e-12, atol=1e-14)


def test_gower_block_margin_covers_float32_rounding_of_many_columns() -> None:
    # 24 numeric columns with values in (0, 1): the float32 sum of the terms is off by ~1e-6
    rng = np.random.default_rng(3)
    cols = tuple(f"n{i}" for i in range(24))
    schema = Schema(cols, cols, ())
    ref = pd.DataFrame(rng.uniform(0, 1, (200, 24)), columns=cols)
    q = pd.DataFrame(rng.uniform(0, 1, (60, 24)), columns=cols)
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    expected = gower_brute(ref, q, cols, ())
    check_block(index.distance_, index.prepare(q), expected, lambda d: d * 24)
    idx, d = index.kneighbors(q, k=2)
    np.testing.assert_allclose(d, np.sort(expected, axis=1)[:, :2], rtol=1e-12)


def test_gower_one_numeric_column_key_error_within_margin() -> None:
    # one column (k = 1): a single rounded float32 difference per key
    rng = np.random.default_rng(4)
    schema = Schema(("x",), ("x",), ())
    ref = pd.DataFrame({"x": rng.uniform(0, 1, 300)})
    q = pd.DataFrame({"x": rng.uniform(0, 1, 50)})
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    check_block(index.distance_, index.prepare(q), gower_brute(ref, q, ("x",), ()), lambda d: d)


def test_gower_categorical_only_block_counts_mismatches() -> None:
    schema = Schema(("c", "d", "e"), (), ("c", "d", "e"))
    rng = np.random.default_rng(5)
    ref = pd.DataFrame({c: rng.choice(list("pqrs"), 50) for c in "cde"})
    q = pd.DataFrame({c: rng.choice(list("pqrst"), 20) for c in "cde"})
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    expected = gower_brute(ref, q, (), ("c", "d", "e"))
    margin = check_block(index.distance_, index.prepare(q), expected, lambda d: d * 3 - 3)
    assert np.all(margin < 1e-3)


def test_gower_numeric_only_dense_search_equals_brute_force() -> None:
    # no categorical column: no pruning block, the dense search alone (with missing values)
    ref, q = mixed_tables(150, 40, seed=1)
    schema = Schema(NUM, NUM, ())
    ref, q = ref[list(NUM)], q[list(NUM)]
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    assert index.distance_.pruned_block(index.prepare(q), slice(0, len(q))) is None
    expected = gower_brute(ref, q, NUM, ())
    idx, d = index.kneighbors(q, k=3)
    order = np.lexsort((np.broadcast_to(np.arange(len(ref)), expected.shape), expected), axis=1)[:, :3]
    np.testing.assert_allclose(d, np.take_along_axis(expected, order, axis=1), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(idx, order)


def test_gower_pruned_block_counts_matches_and_gives_exact_distances() -> None:
    ref, q = mixed_tables(60, 15, seed=2)
    index = NeighborIndex("gower", n_jobs=1).fit(ref, MIXED)
    prepared = index.prepare(q)
    pb = index.distance_.pruned_block(prepared, slice(4, 12))
    assert pb is not None
    qs = q.iloc[4:12]
    matches = sum((qs[c].to_numpy()[:, None] == ref[c].to_numpy()[None, :]).astype(int) for c in CAT)
    np.testing.assert_array_equal(np.asarray(pb.matches, dtype=float), matches)
    rr, jj = all_pairs(8, len(ref))
    h = (len(CAT) - matches).ravel().astype(float)
    got = pb.exact(rr, jj, h).reshape(8, len(ref))
    np.testing.assert_allclose(got, gower_brute(ref, qs, NUM, CAT), rtol=1e-12, atol=1e-14)


def test_gower_pruned_block_only_with_categorical_columns() -> None:
    schema = Schema(("x", "c"), ("x",), ("c",))
    ref = pd.DataFrame({"x": [0.0, 1.0, 2.0], "c": ["a", "a", "a"]})  # one category: one one-hot column
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    q = index.prepare(pd.DataFrame({"x": [0.5], "c": ["a"]}))
    pb = index.distance_.pruned_block(q, slice(0, 1))
    assert pb is not None
    np.testing.assert_array_equal(np.asarray(pb.matches, dtype=float), [[1, 1, 1]])
    num_only = NeighborIndex("gower", n_jobs=1).fit(ref[["x"]], Schema(("x",), ("x",), ()))
    assert num_only.distance_.pruned_block(num_only.prepare(pd.DataFrame({"x": [0.5]})), slice(0, 1)) is None


def test_gower_constant_column_with_gaps_hand_computed() -> None:
    # constant column: equal values (any value) contribute 0, a gap against a value 1, gap vs gap 0
    schema = Schema(("k", "x"), ("k", "x"), ())
    ref = pd.DataFrame({"k": [5.0, 5.0, np.nan], "x": [0.0, 4.0, 2.0]})
    q = pd.DataFrame({"k": [7.0, np.nan, 5.0], "x": [1.0, 2.0, 9.0]})
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    prepared = index.prepare(q)
    rr, jj = all_pairs(3, 3)
    got = index.distance_.pair_distances(prepared, rr, jj).reshape(3, 3)
    expected = (
        np.array(
            [
                [0 + 0.25, 0 + 0.75, 1 + 0.25],
                [1 + 0.5, 1 + 0.5, 0 + 0.0],
                [0 + 1.0, 0 + 1.0, 1 + 1.0],
            ]
        )
        / 2
    )
    np.testing.assert_array_equal(got, expected)
    check_block(index.distance_, prepared, expected, lambda d: d * 2)


def test_gower_range_at_the_domain_bound_exact_rationals() -> None:
    # values at +-1e15, range 2e15 (the largest the domain allows): exact to rounding, no warning
    schema = Schema(("x", "y"), ("x", "y"), ())
    ref = pd.DataFrame({"x": [-1e15, 1e15, 3.0e14, -7.0e14], "y": [0.0, 1.0, 2.0, 4.0]})
    q = pd.DataFrame({"x": [9e14, -1e15, 0.0, 1e15 - 1.0], "y": [1.0, 3.0, 0.5, 2.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
        prepared = index.prepare(q)
    lo, hi = Fraction(-1e15), Fraction(1e15)
    expected = np.empty((4, 4))
    for i, xv in enumerate(q["x"]):
        for j, tv in enumerate(ref["x"]):
            part_x = min(abs(Fraction(xv) - Fraction(tv)) / (hi - lo), Fraction(1))
            part_y = min(abs(Fraction(q["y"][i]) - Fraction(ref["y"][j])) / 4, Fraction(1))
            expected[i, j] = float((part_x + part_y) / 2)
    rr, jj = all_pairs(4, 4)
    got = index.distance_.pair_distances(prepared, rr, jj).reshape(4, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    check_block(index.distance_, prepared, expected, lambda d: d * 2, rtol=1e-14)
    _, d = index.kneighbors(q, k=1)
    np.testing.assert_allclose(d[:, 0], expected.min(axis=1), rtol=1e-14)


def test_gower_queries_far_outside_the_range_warn_nothing_and_clip() -> None:
    schema = Schema(("x", "c"), ("x",), ("c",))
    ref = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["a", "b", "a", "b"]})
    q = pd.DataFrame({"x": [1e15, -1e15, 2.5], "c": ["a", "a", "b"]})
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepared = index.prepare(q)
        idx, d = index.kneighbors(q, k=1)
    expected = gower_brute(ref, q, ("x",), ("c",))
    np.testing.assert_allclose(d[:, 0], expected.min(axis=1), rtol=1e-15)
    np.testing.assert_array_equal(idx[:, 0], [0, 0, 3])  # ties at 1/2: the lower index
    check_block(index.distance_, prepared, expected, lambda d: d * 2 - 1)


def test_gower_missing_values_in_reference_without_indicators() -> None:
    # gower has no missing-value indicators: one gap against a value costs exactly 1/M, not 2/M
    schema = Schema(("x", "c"), ("x",), ("c",))
    ref = pd.DataFrame({"x": [0.0, np.nan, 4.0], "c": ["a", "a", "b"]})
    q = pd.DataFrame({"x": [1.0, np.nan], "c": ["a", "b"]})
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    assert index.distance_.n_cat_total == 1
    prepared = index.prepare(q)
    rr, jj = all_pairs(2, 3)
    got = index.distance_.pair_distances(prepared, rr, jj).reshape(2, 3)
    np.testing.assert_array_equal(got, np.array([[0.25, 1.0, 1.75], [2.0, 1.0, 1.0]]) / 2)
    idx, d = index.kneighbors(q, k=3)
    np.testing.assert_array_equal(idx, [[0, 1, 2], [1, 2, 0]])


def test_gower_reference_outside_the_encoder_range_finds_the_true_neighbour() -> None:
    schema = Schema(("x", "y"), ("x", "y"), ())
    enc = TableEncoder(schema).fit(pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}), nan="match")
    ref = pd.DataFrame({"x": [10.0, 3.0, 4.0], "y": [0.5, 0.6, 0.7]})
    clean = enc.validate(ref, nan="match", unseen="mismatch")
    index = NeighborIndex("gower", n_jobs=1).fit(None, encoder=enc, clean=clean)
    idx, d = index.kneighbors(pd.DataFrame({"x": [0.5], "y": [0.5]}), k=1)
    # scaled with the encoder's range 1: (min(9.5, 1) + 0) / 2, (1 + 0.1) / 2, (1 + 0.2) / 2
    assert idx[0, 0] == 0 and d[0, 0] == pytest.approx(0.5)


@pytest.mark.parametrize("distance", ["gower", "l2"])
def test_values_far_beyond_a_tiny_scale_stay_finite_and_exact(distance: str) -> None:
    # another table's encoder with the smallest spread the domain allows (~1e-100): values at 1e15 scale
    # to ~1e115 on both sides, finite; equal values are at 0, unequal ones far apart, without a warning
    schema = Schema(("x",), ("x",), ())
    enc = TableEncoder(schema).fit(pd.DataFrame({"x": [0.0, 1e-100]}), nan="match")
    clean = enc.validate(pd.DataFrame({"x": [1e15, 0.0, 5e14, -1e15]}), nan="match")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = NeighborIndex(distance, n_jobs=1).fit(None, encoder=enc, clean=clean)
        idx, d = index.kneighbors(pd.DataFrame({"x": [1e15, 5e14]}), k=1)
        prepared = index.prepare(pd.DataFrame({"x": [1e15, -1e15]}))
        pairs = index.distance_.pair_distances(prepared, np.array([0, 0, 0, 1, 1]), np.array([0, 2, 3, 3, 0]))
    np.testing.assert_array_equal(idx[:, 0], [0, 2])
    np.testing.assert_array_equal(d[:, 0], [0.0, 0.0])
    if distance == "gower":  # one range or more: clipped at 1
        np.testing.assert_array_equal(pairs, [0.0, 1.0, 1.0, 0.0, 1.0])
    else:
        scale = enc.std_[0]
        gaps = np.array([0.0, 5e14, 2e15, 0.0, 2e15]) / scale
        np.testing.assert_allclose(pairs, gaps, rtol=1e-15)
        assert np.isfinite(pairs).all() and pairs.max() > 1e115


def test_l2_reference_rows_beyond_the_fast_range_are_found() -> None:
    # an encoder fitted on another table (std 1) puts a reference row past the 2^40 fast-pass limit
    # right next to a query inside it: the float32 pass cannot see that row, the search must
    schema = Schema(("x",), ("x",), ())
    enc = TableEncoder(schema).fit(pd.DataFrame({"x": [-1.0, 1.0]}), nan="match")
    t = 2.0**40
    ref = pd.DataFrame({"x": [t - 10.0, t + 1.0, t - 20.0, 3.0, t - 30.0, 0.0]})
    index = NeighborIndex("l2", n_jobs=1).fit(None, encoder=enc, clean=enc.validate(ref, nan="match"))
    idx, d = index.kneighbors(pd.DataFrame({"x": [t, 0.5, t + 1.0]}), k=2)
    np.testing.assert_array_equal(idx, [[1, 0], [5, 3], [1, 0]])
    np.testing.assert_array_equal(d, [[1.0, 10.0], [0.5, 2.5], [0.0, 11.0]])


def test_gower_reference_outside_the_range_is_not_overestimated_by_float32() -> None:
    # x is scaled by the encoder's range 1; near 1e8 float32 rounds to multiples of 8, so the fast pass
    # would see the true neighbour (x gap 0.25) at a gap of 8 -> 1 and rank it behind three worse rows
    schema = Schema(("x", "y"), ("x", "y"), ())
    enc = TableEncoder(schema).fit(pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}), nan="match")
    ref = pd.DataFrame({"x": [5.0, 6.0, 7.0, 1e8 + 4.125], "y": [0.25, 0.25, 0.25, 0.5]})
    index = NeighborIndex("gower", n_jobs=1).fit(None, encoder=enc, clean=enc.validate(ref, nan="match"))
    idx, d = index.kneighbors(pd.DataFrame({"x": [1e8 + 3.875], "y": [0.0]}), k=2)
    # all values binary-exact: (0.25 + 0.5) / 2 for row 3, (1 + 0.25) / 2 for row 0
    np.testing.assert_array_equal(idx, [[3, 0]])
    np.testing.assert_array_equal(d, [[0.375, 0.625]])


@pytest.mark.parametrize("distance", ["gower", "l2"])
def test_exact_pairs_far_beyond_a_tiny_scale_warn_nothing(distance: str) -> None:
    # queries at the domain's edge against values inside a ~1e-100 range: the exact pass prints no RuntimeWarning
    schema = Schema(("x",), ("x",), ())
    enc = TableEncoder(schema).fit(pd.DataFrame({"x": [0.0, 1e-100]}), nan="match")
    clean = enc.validate(pd.DataFrame({"x": [1e-100, 0.0]}), nan="match")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = NeighborIndex(distance, n_jobs=1).fit(None, encoder=enc, clean=clean)
        prepared = index.prepare(pd.DataFrame({"x": [1e15, -1e15]}))
        got = index.distance_.pair_distances(prepared, np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    if distance == "gower":  # clipped at 1
        np.testing.assert_array_equal(got, 1.0)
    else:  # about 2e115 standard deviations, finite
        assert np.isfinite(got).all() and (got > 1e115).all()


# ------------------------------------------------------------------------------------------ l2
def test_l2_block_keys_within_margin_of_brute_force() -> None:
    ref, q = mixed_tables(120, 30, seed=6)
    num = ("x", "z", "w2")
    ref["w2"] = np.r_[np.zeros(119), 400.0]  # an outlier: its squared norm (~120) dominates ref_sq_max
    q["w2"] = 0.0
    ref, q = ref[list(num + CAT)], q[list(num + CAT)].dropna()
    q = q[q.c != "never-seen"]
    schema = Schema(num + CAT, num, CAT)
    index = NeighborIndex("l2", n_jobs=1).fit(ref, schema)
    expected = l2_brute(ref, q, num, CAT)
    check_block(index.distance_, index.prepare(q), expected, lambda d: d * d, rtol=1e-10)


def test_l2_margin_covers_queries_near_the_mean_and_far_reference_rows() -> None:
    # the float32 key of a far reference row errs by ~ulp(|t|^2): the margin must grow with the
    # reference's largest squared norm, not only with the query's
    schema = Schema(("x",), ("x",), ())
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, 500), [301.37, 410.11, 530.7, 660.3, 770.9]]
    ref = pd.DataFrame({"x": x})
    q = pd.DataFrame({"x": x.mean() + rng.normal(0, 0.01, 20)})
    index = NeighborIndex("l2", n_jobs=1).fit(ref, schema)
    check_block(index.distance_, index.prepare(q), l2_brute(ref, q, ("x",), ()), lambda d: d * d, rtol=1e-10)


def test_l2_margin_of_keys_near_one_with_tiny_query_norms() -> None:
    # reference standardised to -1 and 1, queries at ~1e-3: keys ~1 err by ~ulp(1), far more
    # than the queries' squared norms (~1e-6); the margin's constant term covers it
    schema = Schema(("x",), ("x",), ())
    ref = pd.DataFrame({"x": [-1.0, 1.0]})
    q = pd.DataFrame({"x": [0.001, -0.0013, 0.0007]})
    index = NeighborIndex("l2", n_jobs=1).fit(ref, schema)
    check_block(index.distance_, index.prepare(q), l2_brute(ref, q, ("x",), ()), lambda d: d * d, rtol=1e-10)


def test_l2_queries_beyond_the_fast_range_are_exact() -> None:
    # a standardised value beyond 2**40 (values in the domain, far outside the reference's spread) makes
    # the row's float32 keys meaningless: those rows are evaluated exactly against every reference row
    schema = Schema(("x", "y"), ("x", "y"), ())
    ref = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "y": [5.0, 3.0, 1.0, 0.0, 2.0, 4.0]})
    q = pd.DataFrame({"x": [3e12, -1e15, 1e15, 2.5], "y": [0.0, 4.9, 2.0, 1.0]})
    index = NeighborIndex("l2", n_jobs=1).fit(ref, schema)
    prepared = index.prepare(q)
    np.testing.assert_array_equal(prepared.tame, [False, False, False, True])
    blk = index.distance_.block(prepared, slice(0, 4))
    assert np.isinf(blk.margin[:3]).all() and np.isfinite(blk.margin[3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idx, d = index.kneighbors(q, k=2)
    expected = l2_brute(ref, q, ("x", "y"), ())
    order = np.lexsort((np.broadcast_to(np.arange(len(ref)), expected.shape), expected), axis=1)[:, :2]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_allclose(d, np.take_along_axis(expected, order, axis=1), rtol=1e-12)


def test_l2_exact_pairs_far_apart_stay_finite_without_warnings() -> None:
    # std ~1e-100 (the smallest spread of the domain), queries at +-1e15: standardised ~+-1e115, finite
    schema = Schema(("x",), ("x",), ())
    ref = pd.DataFrame({"x": [-1e-100, 1e-100]})  # mean 0, std 1e-100: standardised -1 and 1
    q = pd.DataFrame({"x": [1e15, -1e15]})
    index = NeighborIndex("l2", n_jobs=1).fit(ref, schema)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepared = index.prepare(q)
        got = index.distance_.pair_distances(prepared, np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
        idx, d = index.kneighbors(q, k=1)
    z = 1e15 / 1e-100
    np.testing.assert_allclose(got, [z + 1, z - 1, z - 1, z + 1], rtol=1e-15)
    # z + 1 and z - 1 are the same float64 (the float64 formula's answer): a tie, the lower index
    np.testing.assert_array_equal(idx[:, 0], [0, 0])
    np.testing.assert_array_equal(d[:, 0], got[[0, 2]])


# ------------------------------------------------------------------------------ base class
@pytest.mark.parametrize("distance", ["fang2024", "gower", "l2"])
def test_subtract_matches_subtracts_the_one_hot_product_in_place(distance: str) -> None:
    ref, q = mixed_tables(30, 9, seed=7)
    index = NeighborIndex(distance, n_jobs=1).fit(ref, MIXED)
    dist = index.distance_
    prepared = index.prepare(q)
    onehot = prepared.onehot
    start = np.random.default_rng(8).uniform(-5, 5, (len(q), len(ref))).astype(np.float32)
    key = start.copy()
    dist._subtract_matches(key, onehot)
    matches = sum((q[c].to_numpy()[:, None] == ref[c].to_numpy()[None, :]).astype(float) for c in CAT)
    if distance != "gower":  # fang2024 and l2 add one two-state indicator per reference column with gaps
        for c in NUM:
            if ref[c].isna().any():
                matches = matches + (q[c].isna().to_numpy()[:, None] == ref[c].isna().to_numpy()[None, :])
    np.testing.assert_allclose(key, start - matches, rtol=1e-6, atol=1e-6)
