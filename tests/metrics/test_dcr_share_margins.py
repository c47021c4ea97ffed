"""TabSyn L1 fast pass: float32 keys that never overestimate a float64 brute force by more than their margin.

:class:`tabmem.metrics.dcr_share.TabSynL1Distance` gives the blocked search float32 keys and a
per-row rounding bound (:class:`tabmem.neighbors.distances.Block`: ``key - margin`` is a lower
bound of the exact distance; ``inf`` for rows whose keys carry no information); and keys that
are good enough that well-separated neighbours are proved without extra exact evaluations.
The brute force here builds TabSyn's encoding
independently (numericals over the training range, a constant column over 1 as every encoding of
the project treats "no spread"; one-hot on the training categories, an unseen category all
zeros) and sums absolute differences in float64. Tables: mixed columns with rounding, big
reference rows against small queries, numeric-only and categorical-only, two column tiles, a
sum built to round up at every step, rows beyond ``2^40`` training ranges, values and ranges at
the edges of the value domain (``1e15``, ``1e-100``: scaled values up to ~1e115, still finite).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.metrics.dcr_share import TabSynL1Distance, nearest_l1
from tabmem.neighbors.index import NeighborIndex


def brute_l1(train: pd.DataFrame, ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema) -> np.ndarray:
    """(n_queries, n_ref) float64 L1 on [x / range_train, one-hot on the training categories]."""
    d = np.zeros((len(queries), len(ref)))
    for c in schema.numerical:
        rng = float(train[c].max() - train[c].min())
        rng = rng if rng > 0 else 1.0
        q, r = queries[c].to_numpy(float) / rng, ref[c].to_numpy(float) / rng
        d += np.abs(q[:, None] - r[None, :])
    for c in schema.categorical:
        seen = set(train[c])
        q, r = queries[c].to_numpy(object), ref[c].to_numpy(object)
        qs = np.array([v in seen for v in q])[:, None]
        rs = np.array([v in seen for v in r])[None, :]
        same = q[:, None] == r[None, :]
        # both seen: 0 or 2 one-hot cells differ; one unseen (all zeros): 1; both unseen: 0
        d += np.where(qs & rs, np.where(same, 0.0, 2.0), np.where(qs | rs, 1.0, 0.0))
    return d


def clean(enc: TableEncoder, table: pd.DataFrame) -> pd.DataFrame:
    """Validated against the training categories; unseen ones are kept (as DCRShare keeps them)."""
    return enc.validate(table, unseen="mismatch")


def fitted(train: pd.DataFrame, ref: pd.DataFrame, schema: Schema):
    enc = TableEncoder(schema).fit(train)
    return enc, TabSynL1Distance().fit(encoder=enc, clean=clean(enc, ref))


def check_block(train, ref, queries, schema, *, tame=None) -> np.ndarray:
    """Block over all query rows: exact pairs equal the brute force; key - margin <= exact (tame rows)."""
    enc, dist = fitted(train, ref, schema)
    q = dist.prepare(clean(enc, queries))
    n, n_ref = len(queries), len(ref)
    want = brute_l1(train, ref, queries, schema)
    blk = dist.block(q, slice(0, n))
    assert blk.key.shape == (n, n_ref)
    exact = blk.exact(np.repeat(np.arange(n), n_ref), np.tile(np.arange(n_ref), n)).reshape(n, n_ref)
    np.testing.assert_allclose(exact, want, rtol=1e-12, atol=0)
    margin = np.broadcast_to(np.asarray(blk.margin, dtype=np.float64), (n,))
    tame = np.ones(n, bool) if tame is None else np.asarray(tame)
    assert np.all(np.isfinite(margin[tame])) and np.all(margin[tame] >= 0)
    assert np.all(np.isinf(margin[~tame]))
    over = blk.key.astype(np.float64) - want  # how far each key overestimates the exact distance
    bad = tame[:, None] & ~(over <= margin[:, None])
    assert not bad.any(), f"{bad.sum()} keys above exact + margin, worst {np.max(over - margin[:, None])}"
    # and the search on top of it: the exact nearest distance per query row
    np.testing.assert_allclose(nearest_l1(enc, clean(enc, ref), clean(enc, queries)), want.min(axis=1), rtol=1e-12)
    return want


MIXED = Schema(("a", "b", "k", "c", "e"), ("a", "b", "k"), ("c", "e"))


def test_mixed_columns_ranges_constant_column_and_unseen_categories():
    rng = np.random.default_rng(5)
    # ranges 0.3 (not a binary fraction), 0.25 (below 1) and 0 (a constant column: over 1)
    train = pd.DataFrame(
        {"a": [0.1, 0.4, 0.2], "b": [1.0, 1.25, 1.1], "k": 7.0, "c": ["x", "y", "z"], "e": ["p", "q", "p"]}
    )
    n_ref, n_q = 23, 17
    ref = pd.DataFrame(
        {
            "a": rng.normal(0, 50, n_ref),
            "b": rng.normal(1, 3, n_ref),
            "k": rng.choice([7.0, 7.3, -2.1], n_ref),
            "c": rng.choice(["x", "y", "z", "w"], n_ref),  # "w": a holdout category unseen in training
            "e": rng.choice(["p", "q"], n_ref),
        }
    )
    queries = pd.DataFrame(
        {
            "a": rng.normal(0, 50, n_q),
            "b": rng.normal(1, 3, n_q),
            "k": rng.choice([7.0, 6.9, 1e3 / 3], n_q),
            "c": rng.choice(["x", "y", "v", "w"], n_q),  # unseen on the query side too
            "e": rng.choice(["p", "q", "r"], n_q),
        }
    )
    check_block(train, ref, queries, MIXED)


def test_a_constant_training_column_counts_raw_differences():
    schema = Schema(("k", "c"), ("k",), ("c",))
    train = pd.DataFrame({"k": [5.0, 5.0], "c": ["x", "y"]})
    ref = pd.DataFrame({"k": [5.0, 8.0, 5.5], "c": ["x", "x", "y"]})
    queries = pd.DataFrame({"k": [6.0, 5.0], "c": ["x", "y"]})
    want = check_block(train, ref, queries, schema)
    np.testing.assert_array_equal(want, [[1.0, 2.0, 2.5], [2.0, 5.0, 0.5]])


def test_reference_rows_far_larger_than_the_queries():
    # the rounding of the reference's large values must be inside every query row's margin,
    # even when the query row itself is small
    schema = Schema(("a", "b", "c"), ("a", "b"), ("c",))
    train = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0], "c": ["x", "y"]})
    ref = pd.DataFrame(
        {"a": [123456.7, -98765.43, 0.3, 77777.77], "b": [-54321.1, 33333.3, 0.1, 1.1], "c": ["x", "y", "x", "y"]}
    )
    queries = pd.DataFrame({"a": [0.0, 0.2, -0.1], "b": [0.0, 0.1, 0.3], "c": ["x", "y", "y"]})
    check_block(train, ref, queries, schema)


def test_numeric_only_small_values():
    schema = Schema(("a", "b"), ("a", "b"), ())
    train = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    ref = pd.DataFrame({"a": [0.1, 0.2, 0.05, 0.3], "b": [0.3, 0.1, 0.15, 0.0]})
    queries = pd.DataFrame({"a": [0.0, 0.11, 0.3], "b": [0.0, 0.29, 0.01]})
    check_block(train, ref, queries, schema)


def test_categorical_only_two_columns():
    schema = Schema(("c", "e"), (), ("c", "e"))
    train = pd.DataFrame({"c": ["x", "y", "z"], "e": ["p", "q", "q"]})
    ref = pd.DataFrame({"c": ["x", "y", "z", "x"], "e": ["p", "p", "q", "q"]})
    queries = pd.DataFrame({"c": ["x", "z", "u"], "e": ["q", "q", "p"]})
    want = check_block(train, ref, queries, schema)
    np.testing.assert_array_equal(want, [[2, 4, 2, 0], [4, 4, 0, 2], [1, 1, 3, 3]])


def test_two_column_tiles():
    # 2048 query rows in one block make the numeric pass work in tiles of 256 reference rows:
    # 300 reference rows take one full tile and one partial one
    rng = np.random.default_rng(11)
    schema = Schema(("a", "b"), ("a", "b"), ())
    train = pd.DataFrame({"a": [0.0, 3.0], "b": [0.0, 0.7]})
    ref = pd.DataFrame({"a": rng.normal(0, 2, 300), "b": rng.normal(0, 1, 300)})
    queries = pd.DataFrame({"a": rng.normal(0, 2, 2048), "b": rng.normal(0, 1, 2048)})
    check_block(train, ref, queries, schema)


def _rounding_up_terms(k: int) -> np.ndarray:
    """k float32 values in [1, 2) whose float32 running sum rounds up (by almost half an ulp) at each step."""
    s, out = np.float32(0.0), []
    for _ in range(k):
        tot = float(s) + 1.5
        ulp = 2.0 ** (np.floor(np.log2(tot)) - 23)
        t = (np.floor(tot / ulp) * ulp + ulp / 2 + 2.0**-23 if ulp >= 2.0**-21 else tot) - float(s)
        assert float(np.float32(t)) == t
        out.append(t)
        s = np.float32(s + np.float32(t))
    return np.array(out)


def test_a_sum_that_rounds_up_at_every_step_stays_within_the_margin():
    # worst-case float32 accumulation over 64 columns: the realised error is ~11 eps * scale,
    # far beyond a bound that ignored the number of terms, inside the stated one
    k = 64
    t = _rounding_up_terms(k)
    cols = [f"x{i}" for i in range(k)]
    schema = Schema(tuple(cols), tuple(cols), ())
    train = pd.DataFrame(np.array([np.zeros(k), np.ones(k)]), columns=cols)
    ref = pd.DataFrame(np.zeros((1, k)), columns=cols)
    queries = pd.DataFrame(t[None, :], columns=cols)
    enc, dist = fitted(train, ref, schema)
    blk = dist.block(dist.prepare(clean(enc, queries)), slice(0, 1))
    exact = t.sum()  # exact in float64 (64 terms of 24 significant bits)
    err = float(blk.key[0, 0]) - exact
    eps = float(np.finfo(np.float32).eps)
    assert err > 10 * eps * (exact + 1.0)  # the construction really rounds up every time
    assert err <= float(np.asarray(blk.margin)[0])


def assert_nearest_with_two_exact_pairs_per_row(monkeypatch, index, enc, train, ref, queries, schema) -> None:
    """The nearest rows equal the brute force, and only the k + 1 = 2 candidates per row were computed exactly."""
    pairs = []
    original = index.distance_.pair_distances

    def counting(q, q_idx, r_idx):
        pairs.append(len(q_idx))
        return original(q, q_idx, r_idx)

    monkeypatch.setattr(index.distance_, "pair_distances", counting)
    idx, d = index.kneighbors(index.distance_.prepare(clean(enc, queries)), k=1)
    want = brute_l1(train, ref, queries, schema)
    np.testing.assert_array_equal(idx[:, 0], want.argmin(axis=1))
    np.testing.assert_allclose(d[:, 0], want.min(axis=1), rtol=1e-12)
    assert sum(pairs) == 2 * len(queries)


def test_well_separated_neighbours_are_proved_from_the_fast_keys(monkeypatch):
    # each query sits 0.25 (of a 39 range) from one reference row: the k + 1 = 2 candidates per
    # row are the only pairs computed exactly; no near-tie recomputation
    schema = Schema(("a", "c"), ("a",), ("c",))
    ref = pd.DataFrame({"a": np.arange(40.0), "c": ["x", "y"] * 20})
    train = ref
    queries = pd.DataFrame({"a": [3.25, 17.25, 30.25, 0.25, 38.75], "c": ["y", "y", "x", "x", "y"]})
    enc = TableEncoder(schema).fit(train)
    index = NeighborIndex(TabSynL1Distance(), n_jobs=1).fit(None, encoder=enc, clean=clean(enc, ref))
    assert_nearest_with_two_exact_pairs_per_row(monkeypatch, index, enc, train, ref, queries, schema)


def test_far_reference_rows_get_keys_that_rule_them_out(monkeypatch):
    # three reference rows beyond 2^40 training ranges: their lower-bound keys (|r| - |q| ~ 2e13 ranges)
    # keep them out of the candidates, so still only the k + 1 = 2 candidates per row are computed exactly
    schema = Schema(("a", "c"), ("a",), ("c",))
    train = pd.DataFrame({"a": np.arange(40.0), "c": ["x", "y"] * 20})
    far = pd.DataFrame({"a": [1e15, -9e14, 8e14], "c": ["x", "y", "x"]})  # up to the value domain's 1e15
    ref = pd.concat([far.iloc[:1], train, far.iloc[1:]], ignore_index=True)
    queries = pd.DataFrame({"a": [3.25, 17.25, 30.25, 0.25, 38.75], "c": ["y", "y", "x", "x", "y"]})
    enc = TableEncoder(schema).fit(train)
    index = NeighborIndex(TabSynL1Distance(), n_jobs=1).fit(None, encoder=enc, clean=clean(enc, ref))
    assert index.distance_.ref_.tame.tolist() == [False] + [True] * 40 + [False, False]
    assert_nearest_with_two_exact_pairs_per_row(monkeypatch, index, enc, train, ref, queries, schema)


U = 2.0**38  # rows beyond 2^40 training ranges (4 U) take the exact path


def test_a_row_beyond_2_40_ranges_is_evaluated_exactly_against_every_reference_row():
    schema = Schema(("a", "b"), ("a", "b"), ())
    train = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})  # ranges 1: the encoding is the raw value
    # query 0 (6U, 0) is beyond 2^40; a fast pass that read it as 0 would rank X1, X2 before A
    # and prove X1 (3.5 U) although A is nearer (2.75 U)
    ref = pd.DataFrame({"a": [3 * U, 2 * U, 3.75 * U], "b": [0.5 * U, 2 * U, 0.5 * U]})
    queries = pd.DataFrame({"a": [6 * U, 0.5], "b": [0.0, 0.5]})
    want = check_block(train, ref, queries, schema, tame=[False, True])
    np.testing.assert_array_equal(want.min(axis=1), [2.75 * U, 3.5 * U - 1.0])
    assert want[0].argmin() == 2


def test_an_empty_reference_fits_and_gives_no_neighbour():
    schema = Schema(("a", "c"), ("a",), ("c",))
    train = pd.DataFrame({"a": [0.0, 2.0], "c": ["x", "y"]})
    enc = TableEncoder(schema).fit(train)
    rows = clean(enc, train)
    index = NeighborIndex(TabSynL1Distance(), n_jobs=1).fit(None, encoder=enc, clean=rows.iloc[:0])
    idx, d = index.kneighbors(index.distance_.prepare(rows), k=1)
    np.testing.assert_array_equal(idx, [[-1], [-1]])
    np.testing.assert_array_equal(d, [[np.inf], [np.inf]])


def test_differences_at_the_domain_bound_are_exact_without_numpy_warnings():
    schema = Schema(("a",), ("a",), ())
    train = pd.DataFrame({"a": [0.0, 1.0]})
    enc = TableEncoder(schema).fit(train)
    ref = enc.validate(pd.DataFrame({"a": [-1e15, 0.5]}))
    queries = enc.validate(pd.DataFrame({"a": [1e15, 0.25]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = nearest_l1(enc, ref, queries)
    np.testing.assert_array_equal(d, [1e15 - 0.5, 0.25])


def test_values_far_beyond_a_tiny_range_stay_finite_and_equal_values_are_at_zero():
    # training range 2e-100 (about the smallest spread of the domain): 1e15 scales to 5e114, finite
    schema = Schema(("a",), ("a",), ())
    enc = TableEncoder(schema).fit(pd.DataFrame({"a": [0.0, 2e-100]}))
    ref = enc.validate(pd.DataFrame({"a": [1e15, 0.0, 5e14, 1e-100]}))
    queries = enc.validate(pd.DataFrame({"a": [5e14, 1e15, -1e15, 2e-100]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = nearest_l1(enc, ref, queries)
    # -1e15 vs 0: 1e15 / 2e-100; 2e-100 vs 1e-100: half a range
    np.testing.assert_allclose(d, [0.0, 0.0, 5e114, 0.5], rtol=1e-15)
    assert d[0] == 0.0 and d[1] == 0.0


def test_a_far_reference_row_whose_key_would_double_is_still_found():
    # the far row (2e12 ranges, beyond 2^40) is nearest to the query at 1e12 (gap 1e12); the other two
    # rows are 1.9e12 and 1.99e12 away: a key of twice the gap would leave it behind both and prove the wrong row
    schema = Schema(("a",), ("a",), ())
    enc = TableEncoder(schema).fit(pd.DataFrame({"a": [0.0, 1.0]}))
    ref = pd.DataFrame({"a": [-0.9e12, -0.99e12, 2e12]})
    d = nearest_l1(enc, clean(enc, ref), clean(enc, pd.DataFrame({"a": [1e12]})))
    np.testing.assert_array_equal(d, [1e12])


def test_a_reference_row_beyond_2_40_ranges_is_not_missed():
    # its float32 values are 0: without its own lower-bound key a tame query near it would prove a farther row
    schema = Schema(("a",), ("a",), ())
    train = pd.DataFrame({"a": [0.0, 1.0]})
    enc = TableEncoder(schema).fit(train)
    t = 2.0**40
    ref = pd.DataFrame({"a": [t - 50, t + 2, t - 60, t - 70]})  # row 1 is beyond 2^40, 3 from the query
    queries = pd.DataFrame({"a": [t - 1, 0.5, t + 2]})  # the first two within 2^40: the fast pass bounds them
    want = brute_l1(train, ref, queries, schema).min(axis=1)
    np.testing.assert_array_equal(want, [3.0, t - 70.5, 0.0])
    np.testing.assert_array_equal(nearest_l1(enc, clean(enc, ref), clean(enc, queries)), want)
