"""The shared parts of the distances: ``norm_rows``, ``Distance.fit`` and the
categorical match counts (uint8 lookup tables, one-hot GEMM, mismatch counts).

References: ``math.hypot`` for norms of differences at the edges of the value domain; match counts by comparing the raw category values of every pair;
Gower distances from the formula, by hand.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from tabmem import Schema
from tabmem.data.encoding import TableEncoder
from tabmem.neighbors import NeighborIndex
from tabmem.neighbors.distances import GowerDistance, L2Distance, norm_rows


def brute_matches(q: pd.DataFrame, ref: pd.DataFrame, cols) -> np.ndarray:
    """Number of categorical columns on which each (query, reference) pair agrees."""
    out = np.zeros((len(q), len(ref)), dtype=np.int64)
    for c in cols:
        out += q[c].astype(object).to_numpy()[:, None] == ref[c].astype(object).to_numpy()[None, :]
    return out


# ----------------------------------------------------------------------------------- norm_rows
def test_norm_rows_of_no_columns_is_zero_per_row() -> None:
    for in_order in (False, True):
        got = norm_rows(np.zeros((3, 0)), columns_in_order=in_order)
        assert got.shape == (3,)
        np.testing.assert_array_equal(got, 0.0)


@pytest.mark.parametrize("in_order", [False, True])
def test_norm_rows_at_the_edges_of_the_domain_without_warnings(in_order: bool) -> None:
    rows = np.array(
        [
            [3.0, 4.0, 0.0],
            [2e15, -2e15, 1e15],  # the largest differences of values in the domain
            [1e-116, 3e-116, 0.0],  # about the smallest nonzero ones
            [0.0, 0.0, 0.0],
            [2e15, 1e-116, 1.0],
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = norm_rows(rows, columns_in_order=in_order)
    expected = [math.hypot(*r) for r in rows.tolist()]
    np.testing.assert_allclose(got, expected, rtol=4e-16)


# ---------------------------------------------------------------------------- Distance.fit
SCHEMA = Schema(("x", "c"), ("x",), ("c",))
REF = pd.DataFrame({"x": [0.0, 2.0, np.nan, 4.0], "c": ["a", "b", "a", "b"]})
QUERY = pd.DataFrame({"x": [1.0, np.nan], "c": ["b", "a"]})
# Gower by hand: range 4, (min(|x - t| / 4, 1) or the NaN rule + [c != t_c]) / 2
EXPECTED = np.array([[0.25 + 1, 0.25 + 0, 1 + 1, 0.75 + 0], [1 + 0, 1 + 1, 0 + 0, 1 + 1]]) / 2


def _pairs(dist, q: pd.DataFrame) -> np.ndarray:
    prepared = dist.prepare(dist.encoder_.validate(q, name="queries", nan="match"))
    n_q, n = len(q), dist.n_ref
    return dist.pair_distances(prepared, np.repeat(np.arange(n_q), n), np.tile(np.arange(n), n_q)).reshape(n_q, n)


def test_distance_fit_on_a_table_and_schema_keeps_missing_values() -> None:
    dist = GowerDistance().fit(REF, SCHEMA)
    assert dist.n_ref == 4 and dist.n_columns_ == 2 and dist.schema_ == SCHEMA
    np.testing.assert_array_equal(dist.encoder_.min_, [0.0])
    np.testing.assert_array_equal(dist.encoder_.max_, [4.0])
    np.testing.assert_array_equal(_pairs(dist, QUERY), EXPECTED)


def test_distance_fit_with_an_encoder_validates_the_reference_itself() -> None:
    enc = TableEncoder(SCHEMA).fit(REF, nan="match")
    dist = GowerDistance().fit(REF, encoder=enc)  # no clean frame: the reference is validated here
    np.testing.assert_array_equal(_pairs(dist, QUERY), EXPECTED)
    with pytest.raises(Exception, match=r"^reference table: missing column\(s\): 'c'$"):
        GowerDistance().fit(REF[["x"]], encoder=enc)


def test_distance_fit_names_the_reference_in_errors() -> None:
    with pytest.raises(Exception, match=r"^reference table: missing column\(s\): 'c'$"):
        GowerDistance().fit(REF[["x"]], SCHEMA)


@pytest.mark.parametrize("args", [(None, SCHEMA), (REF, None), (None, None)])
def test_distance_fit_needs_a_reference_and_schema_or_an_encoder(args) -> None:
    with pytest.raises(ValueError, match=r"^fit needs \(reference, schema\) or \(encoder, clean\)$"):
        L2Distance().fit(*args)


# ------------------------------------------------------------------- categorical match counts
def _cat_tables(n_cols: int, n_cats: int, n_ref: int, n_q: int, seed: int):
    rng = np.random.default_rng(seed)
    cols = tuple(f"c{i}" for i in range(n_cols))
    letters = np.array(list("abcdefghij"[:n_cats]))
    ref = pd.DataFrame({c: rng.choice(letters, n_ref) for c in cols})
    q = pd.DataFrame({c: rng.choice(letters, n_q) for c in cols})
    for c in cols:  # a query equal to a reference row: every column matches
        q.loc[0, c] = ref.loc[3, c]
    return Schema(cols, (), cols), ref, q


@pytest.mark.parametrize(
    "n_cols,n_cats",
    [
        (1, 3),  # one column
        (6, 4),  # two lookup groups (5 slots each: 4 columns, then 2)
        (9, 4),  # three lookup groups
        (32, 3),  # 32 columns of 4 slots: the product of all slots is 2**64, 0 in int64
        (60, 2),  # many columns: the product of all slots overflows int64
        (256, 2),  # more than 255 columns: counts beyond uint8, the one-hot GEMM counts them
    ],
)
def test_match_counts_equal_brute_force(n_cols: int, n_cats: int) -> None:
    schema, ref, q = _cat_tables(n_cols, n_cats, 40, 12, seed=n_cols)
    index = NeighborIndex("gower", n_jobs=1).fit(ref, schema)
    dist = index.distance_
    prepared = index.prepare(q)
    expected = brute_matches(q, ref, schema.categorical)
    assert expected[0, 3] == n_cols
    np.testing.assert_array_equal(np.asarray(dist._matches(prepared.onehot, prepared.codes), dtype=np.int64), expected)
    np.testing.assert_array_equal(np.asarray(dist._matches(prepared.onehot), dtype=np.int64), expected)
    pb = dist.pruned_block(prepared, slice(0, len(q)))
    np.testing.assert_array_equal(np.asarray(pb.matches, dtype=np.int64), expected)
    # the distance of a categorical-only table is the share of mismatching columns
    rr, jj = np.repeat(np.arange(len(q)), len(ref)), np.tile(np.arange(len(ref)), len(q))
    d = dist.pair_distances(prepared, rr, jj).reshape(len(q), len(ref))
    np.testing.assert_allclose(d, (n_cols - expected) / n_cols, rtol=1e-15)


@pytest.mark.parametrize("distance", ["fang2024", "l2"])
def test_no_missing_value_indicators_without_gaps_in_the_reference(distance: str) -> None:
    schema = Schema(("x", "c", "d"), ("x",), ("c", "d"))
    rng = np.random.default_rng(11)
    ref = pd.DataFrame({"x": rng.normal(size=30), "c": rng.choice(list("abc"), 30), "d": rng.choice(list("uv"), 30)})
    q = pd.DataFrame({"x": [0.1, np.nan, 2.0], "c": ["a", "b", "c"], "d": ["u", "u", "v"]})
    index = NeighborIndex(distance, n_jobs=1).fit(ref, schema)
    dist = index.distance_
    assert dist.n_cat_total == 2
    prepared = index.prepare(q)
    assert prepared.codes.shape[1] == 2
    expected = brute_matches(q, ref, ("c", "d"))
    np.testing.assert_array_equal(np.asarray(dist._matches(prepared.onehot), dtype=np.int64), expected)
    # with the codes too: the lookup tables where the distance prunes, the GEMM otherwise (l2)
    got = dist._matches(prepared.onehot, prepared.codes)
    np.testing.assert_array_equal(np.asarray(got, dtype=np.int64), expected)


def test_single_categorical_column_mismatches_count() -> None:
    schema = Schema(("x", "c"), ("x",), ("c",))
    ref = pd.DataFrame({"x": [0.0, 1.0, 2.0], "c": ["a", "b", "a"]})
    q = pd.DataFrame({"x": [1.0, 0.5], "c": ["a", "zz"]})
    dist = NeighborIndex("gower", n_jobs=1).fit(ref, schema).distance_
    prepared = dist.prepare(dist.encoder_.validate(q, name="queries", nan="match", unseen="mismatch"))
    rr, jj = np.repeat([0, 1], 3), np.tile([0, 1, 2], 2)
    got = dist.pair_distances(prepared, rr, jj).reshape(2, 3)
    # range 2: |x - t| / 2, plus 1 for a different category (an unseen one differs from all)
    np.testing.assert_array_equal(got, np.array([[0.5 + 0, 0 + 1, 0.5 + 0], [0.25 + 1, 0.25 + 1, 0.75 + 1]]) / 2)


# ------------------------------------------------------------------------------- degenerate
@pytest.mark.parametrize("distance", ["fang2024", "gower", "l2"])
def test_empty_reference_from_an_encoder_has_no_neighbours(distance: str) -> None:
    # a cell of a partition may hold no rows: fitting works, every query gets -1 / inf
    enc = TableEncoder(SCHEMA).fit(REF, nan="match")
    clean = enc.validate(REF, nan="match").iloc[:0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = NeighborIndex(distance, n_jobs=1).fit(None, encoder=enc, clean=clean)
        idx, d = index.kneighbors(QUERY, k=2)
    assert index.n_reference_ == 0
    np.testing.assert_array_equal(idx, -1)
    np.testing.assert_array_equal(d, np.inf)


def test_l2_without_columns_puts_every_row_at_distance_zero() -> None:
    index = NeighborIndex("l2", n_jobs=1).fit(pd.DataFrame(index=range(3)), Schema((), (), ()))
    idx, d = index.kneighbors(pd.DataFrame(index=range(2)), k=2)
    np.testing.assert_array_equal(idx, [[0, 1], [0, 1]])  # all tie at 0: the lowest indices
    np.testing.assert_array_equal(d, 0.0)
