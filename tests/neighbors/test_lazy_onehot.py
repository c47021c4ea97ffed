"""The one-hot of prepared rows is built only where it is read, and equals the one it replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem import Schema
from tabmem.neighbors import NeighborIndex
from tabmem.neighbors.distances import Queries

SCHEMA = Schema(("x", "y", "c", "d", "t"), ("x", "y"), ("c", "d", "t"), "t", "binclass")


def _tables(seed: int, n_ref: int = 300, n_q: int = 90) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)

    def make(n: int) -> pd.DataFrame:
        t = pd.DataFrame(
            {
                "x": rng.normal(0, 1, n).round(1),
                "y": rng.integers(0, 5, n).astype(float),
                "c": rng.choice(["p", "q", "r"], n),
                "d": rng.choice(list("abcdefg"), n),
                "t": rng.integers(0, 2, n),
            }
        )
        t.loc[rng.random(n) < 0.1, "x"] = np.nan  # missing-value indicators (fang2024, l2)
        return t

    ref, q = make(n_ref), make(n_q)
    q.loc[:4, "d"] = "unseen"
    return ref, q


def _old_onehot(index: NeighborIndex, prepared: Queries, table: pd.DataFrame) -> np.ndarray:
    """The one-hot as it was built before (the encoder's, then ``[ind, ~ind]`` of the indicator columns)."""
    dist = index.distance_
    clean = index.validate(table, nan="match").data
    onehot = index.encoder_.one_hot(clean, dtype=np.float32)
    n_ind = prepared.codes.shape[1] - len(SCHEMA.categorical)
    if n_ind:
        ind = dist._indicator_cols(prepared.miss)
        onehot = np.concatenate([onehot, np.concatenate([ind, ~ind], axis=1).astype(np.float32)], axis=1)
    return onehot


@pytest.mark.parametrize("distance", ["gower", "fang2024", "l2"])
def test_lazy_onehot_equals_the_encoders(distance: str) -> None:
    ref, q = _tables(1)
    index = NeighborIndex(distance).fit(ref, SCHEMA)
    prepared = index.prepare(q)
    expected = _old_onehot(index, prepared, q)
    assert prepared.n_onehot == expected.shape[1]
    rows = slice(7, 40)
    np.testing.assert_array_equal(prepared.onehot_rows(rows), expected[rows])  # built for those rows only
    np.testing.assert_array_equal(prepared.onehot, expected)
    assert prepared.onehot.dtype == np.float32


@pytest.mark.parametrize("distance", ["gower", "fang2024"])
def test_search_reads_the_codes_only_and_finds_the_same_neighbours(distance: str) -> None:
    """With lookup tables the search never builds a one-hot; the neighbours equal those of the one-hot
    product (no lookup tables) and of the dense search, bit for bit."""
    ref, q = _tables(2)
    index = NeighborIndex(distance, n_jobs=1).fit(ref, SCHEMA)
    dist = index.distance_
    assert dist._groups is not None
    prepared = index.prepare(q)
    idx, d = index.kneighbors(prepared, k=3, block_rows=16)
    assert prepared._onehot is None and dist.ref_._onehot is None  # neither side's one-hot was built

    gemm = NeighborIndex(distance, n_jobs=1).fit(ref, SCHEMA)
    gemm.distance_._groups = None  # the match counts from the one-hot product
    idx2, d2 = gemm.kneighbors(q, k=3, block_rows=16)
    np.testing.assert_array_equal(idx, idx2)
    np.testing.assert_array_equal(d, d2)

    dense = NeighborIndex(distance, n_jobs=1).fit(ref, SCHEMA)
    dense.distance_.pruned_block = lambda q, rows: None  # type: ignore[method-assign]  # the dense search
    idx3, d3 = dense.kneighbors(q, k=3, block_rows=16)
    np.testing.assert_array_equal(idx, idx3)
    np.testing.assert_array_equal(d, d3)


def test_rows_keep_the_onehot_only_where_it_is_kept() -> None:
    ref, q = _tables(3)
    index = NeighborIndex("fang2024").fit(ref, SCHEMA)
    prepared = index.prepare(q)
    part = prepared.rows(slice(10, 20))
    assert part._onehot is None and len(part) == 10
    np.testing.assert_array_equal(part.onehot, prepared.onehot[10:20])
    kept = prepared.rows(slice(10, 20))  # the whole one-hot is kept now: its rows are views of it
    assert kept._onehot is not None and np.shares_memory(kept._onehot, prepared.onehot)
    np.testing.assert_array_equal(kept.codes, prepared.codes[10:20])
