"""NeighborIndex's documented contract: estimator conventions, the policies it passes on, its messages.

Every message a user can see is matched whole (anchored); the search results are held to the
float64 brute force of ``tests/memorization/brute.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "memorization"))
from brute import all_distances  # noqa: E402

from tabmem import Schema  # noqa: E402
from tabmem.data.encoding import TableEncoder  # noqa: E402
from tabmem.data.schema import ValidatedTable, validate  # noqa: E402
from tabmem.errors import NotFittedError, ParameterError, SchemaError  # noqa: E402
from tabmem.neighbors import NeighborIndex  # noqa: E402
from tabmem.neighbors.distances import DISTANCES, Fang2024Distance, GowerDistance  # noqa: E402

SCHEMA = Schema(("x", "y", "c"), ("x", "y"), ("c",))
NOT_FITTED = r"^NeighborIndex is not fitted: call fit\(reference\) first$"


def ref_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
            "y": [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
            "c": ["a", "b", "a", "b", "a", "b", "a", "b"],
        }
    )


def query_table() -> pd.DataFrame:
    return pd.DataFrame({"x": [0.4, 6.6, 3.0], "y": [0.0, 3.0, 1.0], "c": ["b", "a", "a"]})


def brute(ref: pd.DataFrame, q: pd.DataFrame, schema: Schema, distance: str, k: int):
    d = all_distances(ref, q, schema, distance)
    order = np.lexsort((np.broadcast_to(np.arange(len(ref)), d.shape), d), axis=1)[:, :k]
    return order, np.take_along_axis(d, order, axis=1)


def test_constructor_stores_the_arguments_and_checks_nothing() -> None:
    index = NeighborIndex("no-such-distance", n_jobs=0, memory_budget=-3, nan="bogus")
    assert (index.distance, index.n_jobs, index.memory_budget, index.nan) == ("no-such-distance", 0, -3, "bogus")
    default = NeighborIndex()
    assert (default.distance, default.n_jobs, default.memory_budget, default.nan) == (
        "gower",
        None,
        1 << 30,
        "match",
    )


def test_defaults_gower_and_missing_values_match() -> None:
    ref = ref_table()
    ref.loc[2, "x"] = np.nan  # nan="match" by default: accepted
    index = NeighborIndex().fit(ref, SCHEMA)
    assert isinstance(index.distance_, GowerDistance)
    assert isinstance(NeighborIndex("fang2024").fit(ref, SCHEMA).distance_, Fang2024Distance)
    assert index.n_reference_ == 8 and index.schema_ == SCHEMA
    with pytest.raises(SchemaError, match=r"^reference table: column 'x' has 1 missing value"):
        NeighborIndex(nan="error").fit(ref, SCHEMA)


@pytest.mark.parametrize("distance", DISTANCES.names())
def test_kneighbors_equals_the_brute_force_exactly_on_a_small_table(distance: str) -> None:
    ref, q = ref_table(), query_table()
    idx, dist = NeighborIndex(distance, n_jobs=1).fit(ref, SCHEMA).kneighbors(q, k=3)
    b_idx, b_dist = brute(ref, q, SCHEMA, distance, 3)
    np.testing.assert_array_equal(idx, b_idx)
    np.testing.assert_allclose(dist, b_dist, rtol=1e-12, atol=1e-15)


def test_the_schema_given_is_the_schema_used_and_inferred_otherwise() -> None:
    ref, q = ref_table(), query_table()
    as_cat = Schema(("x", "y", "c"), ("x",), ("y", "c"))  # y compared as a category
    index = NeighborIndex("gower").fit(ref, as_cat)
    assert index.schema_ == as_cat and index.encoder_.schema == as_cat
    _, dist = index.kneighbors(q, k=2)
    np.testing.assert_allclose(dist, brute(ref, q, as_cat, "gower", 2)[1], rtol=1e-12)
    inferred = NeighborIndex("gower").fit(ref)
    assert inferred.schema_ == Schema.infer(ref)
    vt = validate(ref, as_cat, name="reference", nan="match")
    assert NeighborIndex("gower").fit(vt).schema_ == as_cat  # a validated table brings its schema


def test_a_registered_name_gives_that_distance_and_an_instance_is_copied() -> None:
    assert isinstance(NeighborIndex("gower").fit(ref_table(), SCHEMA).distance_, GowerDistance)
    proto = GowerDistance()
    index = NeighborIndex(proto).fit(ref_table(), SCHEMA)
    assert isinstance(index.distance_, GowerDistance) and index.distance_ is not proto
    assert not hasattr(proto, "ref_")


def test_fit_with_a_prefitted_encoder() -> None:
    ref, q = ref_table(), query_table()
    enc = TableEncoder(SCHEMA).fit(ref)
    index = NeighborIndex("gower", n_jobs=1).fit(ref, encoder=enc)  # clean= computed from reference
    assert index.encoder_ is enc and index.schema_ is enc.schema and index.n_reference_ == 8
    direct = NeighborIndex("gower", n_jobs=1).fit(ref, SCHEMA)
    for a, b in zip(index.kneighbors(q, k=3), direct.kneighbors(q, k=3)):
        np.testing.assert_array_equal(a, b)
    # the reference is validated under the index's nan policy and named in the message
    bad = ref.copy()
    bad.loc[3, "y"] = np.nan
    with pytest.raises(SchemaError, match=r"^reference table: column 'y' has 1 missing value"):
        NeighborIndex("gower", nan="error").fit(bad, encoder=enc)
    assert NeighborIndex("gower", nan="match").fit(bad, encoder=enc).n_reference_ == 8
    unseen = ref.copy()
    unseen.loc[0, "c"] = "zzz"
    with pytest.raises(SchemaError, match=r"^reference table: column 'c'"):
        NeighborIndex("gower").fit(unseen, encoder=enc)


def test_fit_needs_a_reference() -> None:
    with pytest.raises(ParameterError, match=r"^NeighborIndex\.fit: reference table is required$"):
        NeighborIndex().fit(None)
    enc = TableEncoder(SCHEMA).fit(ref_table())
    with pytest.raises(
        ParameterError, match=r"^NeighborIndex\.fit: give the reference table \(or clean=\) with encoder=$"
    ):
        NeighborIndex().fit(None, encoder=enc)


def test_parameter_messages_are_whole_and_checked_before_the_data() -> None:
    names = ", ".join(DISTANCES.names())
    cases = [
        ({"distance": 3}, rf"^distance must be a registered name \({names}\) or a Distance, got 3$"),
        ({"distance": "cosine"}, rf"^unknown distance 'cosine'; available: {names}$"),
        ({"n_jobs": 0}, r"^n_jobs must be a non-zero integer or None"),
        ({"memory_budget": 0}, r"^memory_budget must be a positive integer"),
        ({"memory_budget": 2.5}, r"^memory_budget must be a positive integer"),
        ({"nan": "drop"}, r"^nan must be one of 'match', 'error', got 'drop'$"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ParameterError, match=match):
            NeighborIndex(**kwargs).fit(None)  # the parameters are named before the missing table


def test_every_query_method_needs_fit_first() -> None:
    index = NeighborIndex()
    for call in (index.kneighbors, index.validate, index.prepare):
        with pytest.raises(NotFittedError, match=NOT_FITTED):
            call(query_table())


def test_validate_names_the_table_and_passes_the_policies_on() -> None:
    index = NeighborIndex("gower", nan="error").fit(ref_table(), SCHEMA)
    q = query_table()
    vt = index.validate(q)
    assert isinstance(vt, ValidatedTable) and vt.name == "queries" and vt.schema == SCHEMA
    with pytest.raises(SchemaError, match=r"^queries table: missing column\(s\): 'c'$"):
        index.validate(q.drop(columns="c"))
    with pytest.raises(SchemaError, match=r"^synthetic table: missing column\(s\): 'c'$"):
        index.validate(q.drop(columns="c"), name="synthetic")
    # nan: the index's policy unless given
    holes = q.copy()
    holes.loc[1, "x"] = np.nan
    with pytest.raises(SchemaError, match=r"^queries table: column 'x' has 1 missing value"):
        index.validate(holes)
    assert index.validate(holes, nan="match").data["x"].isna().sum() == 1
    assert len(index.validate(holes, nan="drop").data) == 2
    lenient = NeighborIndex("gower").fit(ref_table(), SCHEMA)
    assert lenient.validate(holes).data["x"].isna().sum() == 1
    with pytest.raises(SchemaError, match=r"^queries table: column 'x' has 1 missing value"):
        lenient.validate(holes, nan="error")
    # unseen: "mismatch" unless given; the reference's categories decide what is unseen
    new = q.copy()
    new.loc[0, "c"] = "zzz"
    assert list(index.validate(new).data["c"]) == ["zzz", "a", "a"]
    with pytest.raises(SchemaError, match=r"^queries table: column 'c'"):
        index.validate(new, unseen="error")
    assert len(index.validate(new, unseen="drop").data) == 2
    assert len(index.validate(q.assign(c=["b", "b", "zzz"]), unseen="drop").data) == 2
    # extra columns: ignored unless asked otherwise
    wide = q.assign(other=1.0)
    assert list(index.validate(wide).data.columns) == ["x", "y", "c"]
    with pytest.raises(SchemaError, match=r"^queries table: column\(s\) not in the training data: 'other'"):
        index.validate(wide, extra="error")


def test_unseen_query_categories_mismatch_in_kneighbors() -> None:
    ref = ref_table()
    q = query_table().iloc[:1].assign(c="zzz")
    _, dist = NeighborIndex("gower", n_jobs=1).fit(ref, SCHEMA).kneighbors(q, k=8)
    # gower: |dx|/7 + |dy|/3 + 1 (c mismatches every row), over 3 columns
    want = np.sort(np.abs(ref.x - 0.4) / 7 + np.abs(ref.y - 0.0) / 3 + 1.0) / 3
    np.testing.assert_allclose(dist[0], want, rtol=1e-12)


def test_prepare_passes_prepared_queries_through_and_revalidates_other_schemas() -> None:
    index = NeighborIndex("gower", n_jobs=1).fit(ref_table(), SCHEMA)
    q = query_table()
    prepared = index.prepare(q)
    assert index.prepare(prepared) is prepared
    np.testing.assert_array_equal(index.kneighbors(prepared, k=2)[0], index.kneighbors(q, k=2)[0])
    # validated against another schema (y categorical): validated again against the index's
    other = validate(q, Schema(("x", "y", "c"), ("x",), ("y", "c")), name="queries", nan="match")
    np.testing.assert_array_equal(index.prepare(other).num, prepared.num)
    np.testing.assert_array_equal(index.kneighbors(other, k=2)[1], index.kneighbors(q, k=2)[1])
    # validated under its own (stricter) policies against the same schema: used as is
    same = validate(q, SCHEMA, name="queries", nan="error")
    np.testing.assert_array_equal(index.prepare(same).num, prepared.num)
    # ... and under its own (laxer) policies too: never validated again, not even for nan="error"
    strict = NeighborIndex("gower", n_jobs=1, nan="error").fit(ref_table(), SCHEMA)
    holes = q.copy()
    holes.loc[2, "x"] = np.nan
    lax = validate(holes, SCHEMA, name="queries", nan="match")
    assert strict.prepare(lax).miss[:, 0].tolist() == [False, False, True]
    with pytest.raises(SchemaError, match=r"^queries table: column 'x' has 1 missing value"):
        strict.prepare(holes)  # a DataFrame is validated under the index's policy


def test_memory_budget_threads_and_block_rows_shape_the_blocks() -> None:
    ref, q = ref_table(), pd.concat([query_table()] * 4, ignore_index=True)  # 12 rows
    cell = 24 * len(ref)  # bytes per query row (blocked.BYTES_PER_CELL per reference cell)

    def blocks(index: NeighborIndex, **kw) -> list[int]:
        done: list[int] = []
        index.kneighbors(q, k=2, progress=done.append, **kw)
        return sorted(done)

    fitted = NeighborIndex("gower", n_jobs=1, memory_budget=5 * cell).fit(ref, SCHEMA)
    assert blocks(fitted) == [2, 5, 5]
    assert blocks(fitted, block_rows=4) == [4, 4, 4]
    assert blocks(fitted, block_rows=None) == [2, 5, 5]
    two = NeighborIndex("gower", n_jobs=2, memory_budget=6 * cell).fit(ref, SCHEMA)  # 3 rows per worker
    assert blocks(two) == [3, 3, 3, 3]
    want = two.kneighbors(q, k=2)
    np.testing.assert_array_equal(fitted.kneighbors(q, k=2)[0], want[0])
    with pytest.raises(ParameterError, match=r"^block_rows must be a positive integer"):
        fitted.kneighbors(q, block_rows=0)
    with pytest.raises(ParameterError, match=r"^k must be a positive integer, got 0$"):
        fitted.kneighbors(q, k=0)


def test_default_k_is_two() -> None:
    idx, dist = NeighborIndex("gower").fit(ref_table(), SCHEMA).kneighbors(query_table())
    assert idx.shape == dist.shape == (3, 2)


def test_repr_shows_the_parameters_and_the_fitted_size() -> None:
    index = NeighborIndex("gower", n_jobs=2, nan="error")
    assert repr(index) == "NeighborIndex(distance='gower', n_jobs=2, nan='error')"
    index.fit(ref_table(), SCHEMA)
    assert repr(index) == "NeighborIndex(distance='gower', n_jobs=2, nan='error', n_reference_=8)"
