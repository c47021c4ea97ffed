"""NeighborIndex: fit once / query many, exact against a float64 brute force, the one n_jobs rule."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "memorization"))
from brute import all_distances  # noqa: E402

import tabmem.data.schema as schema_mod  # noqa: E402
from tabmem import Schema  # noqa: E402
from tabmem.data.encoding import TableEncoder  # noqa: E402
from tabmem.data.schema import validate  # noqa: E402
from tabmem.errors import NotFittedError, ParameterError  # noqa: E402
from tabmem.neighbors import NeighborIndex  # noqa: E402
from tabmem.neighbors.distances import DISTANCES, GowerDistance  # noqa: E402

SCHEMA = Schema(("x", "y", "c", "t"), ("x", "y"), ("c", "t"), "t", "binclass")


def tables(seed: int, n_ref: int = 120, n_q: int = 50) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)

    def make(n: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "x": rng.normal(0, 1, n).round(1),
                "y": rng.integers(0, 5, n).astype(float),
                "c": rng.choice(["p", "q", "r"], n),
                "t": rng.integers(0, 2, n),
            }
        )

    return make(n_ref), make(n_q)


def brute_kneighbors(ref: pd.DataFrame, queries: pd.DataFrame, distance: str, k: int):
    std = ref[["x", "y"]].std(ddof=0).to_numpy()
    dist = all_distances(ref, queries, SCHEMA, distance, std=np.where(std > 0, std, 1.0))
    order = np.lexsort((np.broadcast_to(np.arange(len(ref)), dist.shape), dist), axis=1)[:, :k]
    return order, np.take_along_axis(dist, order, axis=1), dist


@pytest.mark.parametrize("distance", DISTANCES.names())
@pytest.mark.parametrize("k", [1, 3])
def test_kneighbors_equals_brute_force_for_every_registered_distance(distance: str, k: int) -> None:
    ref, q = tables(0)
    index = NeighborIndex(distance, n_jobs=1).fit(ref, SCHEMA)
    idx, dist = index.kneighbors(q, k=k)
    b_idx, b_dist, full = brute_kneighbors(ref, q, distance, k)
    np.testing.assert_allclose(dist, b_dist, rtol=1e-9, atol=1e-12)
    # the same neighbours, except between rows whose brute-force distances tie (to float64 rounding)
    rows = np.arange(len(q))[:, None]
    np.testing.assert_allclose(full[rows, idx], b_dist, rtol=1e-12, atol=1e-15)
    assert (idx == b_idx).mean() > 0.9


def test_fit_once_query_many_and_independent_of_threads_and_memory() -> None:
    ref, q = tables(1)
    index = NeighborIndex("fang2024", n_jobs=1).fit(ref, SCHEMA)
    first = index.kneighbors(q, k=2)
    again = index.kneighbors(q.iloc[::-1].reset_index(drop=True), k=2)
    np.testing.assert_array_equal(first[0][::-1], again[0])
    other = NeighborIndex("fang2024", n_jobs=-1, memory_budget=30_000).fit(ref, SCHEMA).kneighbors(q, k=2)
    np.testing.assert_array_equal(first[0], other[0])
    np.testing.assert_array_equal(first[1], other[1])


def test_fewer_reference_rows_than_k_pad_with_minus_one_and_inf() -> None:
    ref, q = tables(2, n_ref=2, n_q=3)
    idx, dist = NeighborIndex("gower").fit(ref, SCHEMA).kneighbors(q, k=4)
    assert (idx[:, 2:] == -1).all() and np.isinf(dist[:, 2:]).all()


def test_validated_tables_are_not_validated_again(monkeypatch) -> None:
    ref, q = tables(3)
    vref = validate(ref, SCHEMA, name="reference", nan="match")
    vq = validate(q, SCHEMA, name="queries", nan="match")
    calls = []
    real = schema_mod._validate_raw
    monkeypatch.setattr(schema_mod, "_validate_raw", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    index = NeighborIndex("l2").fit(vref)
    index.kneighbors(vq, k=2)
    assert calls == []
    index.kneighbors(q, k=2)  # a DataFrame is validated, once
    assert len(calls) == 1


def test_prefitted_encoder_and_distance_instance() -> None:
    ref, q = tables(4)
    other, _ = tables(5)
    enc = TableEncoder(SCHEMA).fit(other)  # statistics of another table (e.g. the training table)
    clean = enc.validate(ref, nan="match", unseen="mismatch")
    proto = GowerDistance()
    index = NeighborIndex(proto).fit(None, encoder=enc, clean=clean)
    assert not hasattr(proto, "ref_")  # the instance passed in is not fitted in place
    assert index.encoder_ is enc and index.n_reference_ == len(ref)
    idx, _ = index.kneighbors(q, k=1)
    assert idx.shape == (len(q), 1)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": 1.5}, "n_jobs"),
        ({"n_jobs": "all"}, "n_jobs"),
        ({"memory_budget": 0}, "memory_budget"),
        ({"memory_budget": -1}, "memory_budget"),
        ({"nan": "drop"}, "nan"),
        ({"distance": "cosine"}, "cosine"),
        ({"distance": 3}, "distance"),
    ],
)
def test_bad_parameters_are_one_line_errors_naming_the_option(kwargs: dict, match: str) -> None:
    ref, _ = tables(6)
    with pytest.raises(ParameterError, match=match) as err:
        NeighborIndex(**kwargs).fit(ref, SCHEMA)
    assert "\n" not in str(err.value)


def test_query_errors() -> None:
    ref, q = tables(7)
    with pytest.raises(NotFittedError, match="not fitted"):
        NeighborIndex().kneighbors(q)
    index = NeighborIndex().fit(ref, SCHEMA)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ParameterError, match="k must be a positive integer"):
            index.kneighbors(q, k=bad)
    with pytest.raises(ParameterError, match="block_rows"):
        index.kneighbors(q, block_rows=0)


def test_unseen_categories_mismatch_every_reference_row() -> None:
    ref, q = tables(8)
    q.loc[0, "c"] = "never-seen"
    _, d_unseen = NeighborIndex("gower").fit(ref, SCHEMA).kneighbors(q.iloc[:1], k=1)
    q.loc[0, "c"] = "p"
    best_p = all_distances(ref[ref.c == "p"], q.iloc[:1], SCHEMA, "gower").min()
    assert d_unseen[0, 0] >= best_p


@pytest.mark.parametrize("distance", ["fang2024", "gower"])
def test_match_lookup_tables_equal_the_one_hot_product(distance: str) -> None:
    # categories unseen on either side (reference encoded with another table's encoder) and
    # missing-value indicators: the uint8 lookup and the float32 GEMM count the same matches
    rng = np.random.default_rng(9)
    ref, q = tables(9, n_ref=200, n_q=60)
    ref.loc[rng.random(len(ref)) < 0.2, "x"] = np.nan
    q.loc[rng.random(len(q)) < 0.2, "x"] = np.nan
    q.loc[:5, "c"] = "new"
    other, _ = tables(10, n_ref=150)
    other = other[other.c != "r"]  # "r" then is a category the encoder has never seen
    enc = TableEncoder(SCHEMA).fit(other, nan="match")
    clean = enc.validate(ref, nan="match", unseen="mismatch")
    index = NeighborIndex(distance).fit(None, encoder=enc, clean=clean)
    dist = index.distance_
    assert dist._groups is not None
    prepared = index.prepare(q)
    lookup = dist._matches(prepared.onehot, prepared.codes)
    gemm = dist._matches(prepared.onehot)
    assert lookup.dtype == np.uint8
    np.testing.assert_array_equal(lookup.astype(np.float32), gemm)
