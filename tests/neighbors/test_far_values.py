"""``gower`` and ``l2`` with reference rows far outside the encoder's range, checked by hand.

An encoder fitted on another table (``fit(None, encoder=..., clean=...)``, as alpha/beta does)
can put reference values outside Gower's ``[0, 1]`` or past ``l2``'s ``2^40`` fast-pass limit
(values inside the value domain, ``|x| <= 1e15``, never leave float64 once scaled). The search is exact only if every fast key keeps the
:class:`~tabmem.neighbors.distances.Block` contract (``key - margin`` is a lower bound of the
exact key). References here: hand-computed distances with binary-exact values, ``math.hypot``,
and float64 sums of squares of the standardised values (encoders fitted on ``[-1, 1]``: mean 0,
population std 1, so standardised values equal raw ones; a constant column keeps std 1).
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

EPS32 = float(np.finfo(np.float32).eps)
T40 = 2.0**40  # l2's fast-pass limit in standardised units


def unit_encoder(cols: tuple[str, ...], lo: float = -1.0, hi: float = 1.0) -> TableEncoder:
    schema = Schema(cols, cols, ())
    return TableEncoder(schema).fit(pd.DataFrame([[lo] * len(cols), [hi] * len(cols)], columns=cols), nan="match")


def fit_on(distance: str, enc: TableEncoder, ref: pd.DataFrame) -> NeighborIndex:
    return NeighborIndex(distance, n_jobs=1).fit(None, encoder=enc, clean=enc.validate(ref, nan="match"))


# --------------------------------------------------------------------------------------- gower
@pytest.mark.parametrize("far_x,q_x", [(2.0, 0.0), (-1.0, 1.0)])
def test_gower_reference_column_beyond_the_range_on_one_side_is_clipped(far_x: float, q_x: float) -> None:
    # encoder range [0, 1]: row 0's x lies outside it on one side only (the query inside), so its x
    # part is min(|q_x - far_x|, 1) = 1, not 2. Unclipped, its key 2 would rank it behind rows whose
    # keys are 1.5, 1.75, 1.875 and the search would "prove" row 1 the nearest
    enc = unit_encoder(("x", "y"), 0.0, 1.0)
    delta = np.array([0.75, 0.875, 0.9375])
    near_x = q_x + delta if q_x == 0.0 else q_x - delta
    ref = pd.DataFrame({"x": np.r_[far_x, near_x], "y": np.r_[0.0, delta]})
    index = fit_on("gower", enc, ref)
    idx, d = index.kneighbors(pd.DataFrame({"x": [q_x], "y": [0.0]}), k=2)
    # (1 + 0) / 2 for row 0, (delta + delta) / 2 for row 1
    np.testing.assert_array_equal(idx, [[0, 1]])
    np.testing.assert_array_equal(d, [[0.5, 0.75]])


# ------------------------------------------------------------------------------------------ l2
def test_l2_reference_rows_beyond_the_fast_range_keep_lower_bound_keys() -> None:
    # all reference rows are past 2^40 (no fast keys); the query is at the origin. Row 3 is the
    # nearest although its largest coordinate is the largest: rows 0-2 are farther through y
    # (d^2 >= (2^40 + 1)^2 + 2^42 > (2^40 + 2)^2). A far key that overestimates (or is NaN) lets the
    # search stop at the first three rows
    enc = unit_encoder(("x", "y"))
    rows = [(T40 + 1.0, 2.0**21), (T40 + 1.0, 2.0**22), (T40 + 1.0, 2.0**23), (T40 + 2.0, 0.0)]
    index = fit_on("l2", enc, pd.DataFrame(rows, columns=["x", "y"]))
    expected = [math.hypot(*r) for r in rows]
    assert expected[3] < expected[0] < expected[1] < expected[2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idx, d = index.kneighbors(pd.DataFrame({"x": [0.0], "y": [0.0]}), k=2)
    np.testing.assert_array_equal(idx, [[3, 0]])
    np.testing.assert_allclose(d, [[expected[3], expected[0]]], rtol=1e-15)


def test_l2_far_reference_rows_are_neither_evaluated_nor_warned_about(monkeypatch: pytest.MonkeyPatch) -> None:
    # rows 0, 1 are within 2 of the query; rows 2.. lie past 2^40 (up to the domain's 1e15: its
    # squared gap is beyond float32). Their lower-bound keys, >= (2^41 - 0)^2, prove them farther
    # than row 1 without an exact evaluation, and nothing overflows loudly
    enc = unit_encoder(("x",))
    far = [2.0**41, -(2.0**42), 3.0 * T40, 1e15, -1e15, 2.0**49]
    index = fit_on("l2", enc, pd.DataFrame({"x": [1.0, -2.0, *far]}))
    evaluated: list[np.ndarray] = []
    original = index.distance_.pair_distances

    def counting(q, q_idx, r_idx):
        evaluated.append(np.asarray(r_idx).copy())
        return original(q, q_idx, r_idx)

    monkeypatch.setattr(index.distance_, "pair_distances", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idx, d = index.kneighbors(pd.DataFrame({"x": [0.0, 0.5]}), k=1)
    np.testing.assert_array_equal(idx[:, 0], [0, 0])
    np.testing.assert_array_equal(d[:, 0], [1.0, 0.5])
    assert set(np.concatenate(evaluated).tolist()) <= {0, 1}


def test_l2_single_row_block_margin_covers_a_large_column_among_many_small_ones() -> None:
    # one query row (BLAS takes a matrix-vector path): four columns at 1000 and 400 at 0.3. The
    # float32 product loses the small squares next to the large ones, so the key of an identical
    # row (exact 0) errs by ~20 eps32 * (|q|^2 + max |t|^2 + 1); the margin must grow with the
    # number of columns to cover it
    cols = tuple(f"x{i}" for i in range(404))
    row = np.r_[np.full(4, 1000.0), np.full(400, 0.3)]
    other = row.copy()
    other[0] += 3.0
    ref = np.vstack([row, other])
    index = fit_on("l2", unit_encoder(cols), pd.DataFrame(ref, columns=cols))
    prepared = index.prepare(pd.DataFrame([row], columns=cols))
    blk = index.distance_.block(prepared, slice(0, 1))
    exact_key = ((ref - row) ** 2).sum(axis=1)  # 0 and 9
    lower = blk.key[0].astype(np.float64) - blk.margin[0]
    assert np.isfinite(blk.margin[0])
    assert np.all(lower <= exact_key), (blk.key, blk.margin, exact_key)


def test_l2_constant_column_at_the_domain_bound_compares_in_raw_units() -> None:
    # the encoder's column is constant at -1e15 (std 0 counts as 1): standardised, 1e15 and 5e14 are
    # 2e15 and 1.5e15; their distance is |1e15 - 5e14| / 1, exactly
    enc = TableEncoder(Schema(("x",), ("x",), ())).fit(pd.DataFrame({"x": [-1e15, -1e15]}), nan="match")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = fit_on("l2", enc, pd.DataFrame({"x": [1e15, 5e14, 8e14]}))
        prepared = index.prepare(pd.DataFrame({"x": [5e14]}))
        queries = index.prepare(pd.DataFrame({"x": [5e14, 8e14]}))
        got = index.distance_.pair_distances(prepared, np.zeros(3, dtype=int), np.arange(3))
        idx, d = index.kneighbors(queries, k=2)
    np.testing.assert_array_equal(got, [5e14, 0.0, 3e14])
    np.testing.assert_array_equal(idx, [[1, 2], [2, 0]])
    np.testing.assert_array_equal(d, [[0.0, 3e14], [0.0, 2e14]])
