"""``fang2024`` under categorical pruning (``Fang2024Distance.pruned_block`` and its exact ``e`` extremes).

The pruned search needs, per query row, the exact smallest and largest ``e`` over *all* reference
rows (they fix ``ê`` of every pair): found from the rows near each row on the principal axis, or by a
float64 GEMM pass in column tiles whose candidates a bound makes certain (both paths checked one by one
in ``test_fang2024_extremes``). Checked bit for bit against the pair-by-pair reference of
``test_fang2024_kernel`` on tables that make the GEMM cancel (near-ties at both extremes), span
several tiles, hold rows beyond the fast pass's range, or have no spread of ``e``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_fang2024_kernel import MIXED, ONE, brute, brute_knn, edge_tables, far_from_mean, fitted

from tabmem import Schema
from tabmem.neighbors import NeighborIndex

pytestmark = pytest.mark.filterwarnings("error")

FOUR = Schema(("x", "y", "a", "b", "c", "t"), ("x", "y"), ("a", "b", "c", "t"), "t", "binclass")


def check_pruned_contract(ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema) -> None:
    """``matches`` are the exact match counts and ``exact(rows, refs, h)`` has the reference's bits."""
    dist, q = fitted(ref, queries, schema)
    full = brute(ref, queries, schema)
    n_q, n_ref = full.shape
    pb = dist.pruned_block(q, slice(0, n_q))
    t_cat = ref[list(schema.categorical)].astype(str).to_numpy()
    q_cat = queries[list(schema.categorical)].astype(str).to_numpy()
    matches = (q_cat[:, None, :] == t_cat[None, :, :]).sum(axis=2)
    np.testing.assert_array_equal(pb.matches, matches)
    rows, refs = np.repeat(np.arange(n_q), n_ref), np.tile(np.arange(n_ref), n_q)
    h = (len(schema.categorical) - matches).ravel().astype(float)
    np.testing.assert_array_equal(pb.exact(rows, refs, h).reshape(n_q, n_ref), full)


def check_pruned_search(ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema, k: int, block_rows=None) -> None:
    full = brute(ref, queries, schema)
    b_idx, b_dist = brute_knn(full, k)
    idx, d = NeighborIndex("fang2024", n_jobs=1).fit(ref, schema).kneighbors(queries, k=k, block_rows=block_rows)
    np.testing.assert_array_equal(d, b_dist)
    np.testing.assert_array_equal(idx, b_idx)


def four_cats(df: pd.DataFrame, seed: int, copy_from: pd.DataFrame | None = None) -> pd.DataFrame:
    """Four categorical columns; query rows copy a reference row's categories (selective pruning)."""
    rng = np.random.default_rng(seed)
    out = df[["x", "y"]].copy()
    if copy_from is None:
        for c, n in (("a", 6), ("b", 5), ("c", 4)):
            out[c] = rng.choice([f"{c}{i}" for i in range(n)], len(df))
        out["t"] = rng.integers(0, 2, len(df))
    else:
        pick = rng.integers(0, len(copy_from), len(df))
        for c in ("a", "b", "c", "t"):
            out[c] = copy_from[c].to_numpy()[pick]
    return out


@pytest.mark.parametrize("seed", [0, 3])
def test_pruned_block_exact_when_the_gemm_cancels(seed: int) -> None:
    ref, q = far_from_mean(seed, n_ref=150, n_q=40)
    ref4 = four_cats(ref, seed)
    check_pruned_contract(ref4, four_cats(q, seed + 1, ref4), FOUR)


@pytest.mark.parametrize("k", [1, 2])
def test_pruned_search_equals_brute_force(k: int) -> None:
    ref, q = far_from_mean(4, n_ref=200, n_q=60)
    ref4 = four_cats(ref, 1)
    check_pruned_search(ref4, four_cats(q, 2, ref4), FOUR, k=k, block_rows=20)


def test_pruned_extremes_over_several_tiles() -> None:
    """520 query rows in one block: the GEMM pass runs in tiles of 256 reference rows (700 here)."""
    ref, q = far_from_mean(8, n_ref=700, n_q=520)
    ref4 = four_cats(ref, 3)
    check_pruned_contract(ref4, four_cats(q, 4, ref4), FOUR)


def test_pruned_extremes_over_several_tiles_ordinary_values() -> None:
    rng = np.random.default_rng(11)
    ref = pd.DataFrame({"x": rng.normal(0, 1, 600).round(2), "y": rng.normal(0, 3, 600).round(2)})
    q = pd.DataFrame({"x": rng.normal(0, 1, 530).round(2), "y": rng.normal(0, 3, 530).round(2)})
    ref4 = four_cats(ref, 5)
    check_pruned_contract(ref4, four_cats(q, 6, ref4), FOUR)


def test_pruned_extremes_in_different_tiles() -> None:
    """Reference sorted by value (tiles of 256 rows: 0-255, 256-511, 512-599), queries near the low end: every
    row's nearest reference row lies in the first tile and its farthest, clearly separated, in the last."""
    rng = np.random.default_rng(13)
    ref = pd.DataFrame({"x": np.arange(600, dtype=float), "c": rng.choice(["a", "b"], 600)})
    q = pd.DataFrame({"x": rng.integers(0, 100, 520).astype(float) + 0.25, "c": rng.choice(["a", "b"], 520)})
    check_pruned_contract(ref, q, ONE)


def test_pruned_nearest_row_on_a_tile_boundary() -> None:
    """Every query's nearest reference row is row 256, the first row of the second tile of 256."""
    rng = np.random.default_rng(14)
    x = np.arange(600, dtype=float)
    x[256] = -5.0
    ref = pd.DataFrame({"x": x, "c": rng.choice(["a", "b"], 600)})
    q = pd.DataFrame({"x": rng.uniform(-5.5, -4.5, 520).round(3), "c": rng.choice(["a", "b"], 520)})
    check_pruned_contract(ref, q, ONE)


def test_pruned_farthest_rows_a_unit_apart_at_2_to_49() -> None:
    """The farthest reference rows are 2^49 + j (8 ulps apart, near the domain's 1e15): the float64 pass
    cannot order them, the nearest row (0, at distance 1) is certain; the largest e must still be found exactly."""
    rng = np.random.default_rng(15)
    ref = pd.DataFrame({"x": np.concatenate([[0.0], -(2.0**49) - rng.permutation(41)]), "c": ["a", "b"] * 21})
    q = pd.DataFrame({"x": rng.integers(1, 4, 30).astype(float), "c": rng.choice(["a", "b"], 30)})
    check_pruned_contract(ref, q, ONE)


def test_pruned_rows_at_the_edge_of_the_domain() -> None:
    ref, q = edge_tables()
    check_pruned_contract(ref, q, ONE)
    ref2, q2 = far_from_mean(5, n_ref=60, n_q=10)
    q2.loc[2, "x"] = -1e15
    ref4 = four_cats(ref2, 7)
    q4 = four_cats(q2, 8, ref4)
    check_pruned_contract(ref4, q4, FOUR)
    check_pruned_search(ref4, q4, FOUR, k=2)


@pytest.mark.parametrize("values", [[2.0, 2.0, 2.0], [3.5]])
def test_pruned_when_e_has_no_spread(values: list[float]) -> None:
    ref = pd.DataFrame({"x": values, "c": (["a", "b"] * 4)[: len(values)]})
    q = pd.DataFrame({"x": [0.25, 2.0, -1e3], "c": ["a", "b", "z"]})
    check_pruned_contract(ref, q, ONE)


def test_pruned_rows_of_very_different_magnitudes() -> None:
    """Both edges of the domain in one block: ~1.1e-100 against 1e15."""
    s = 2.0**-340
    ref = pd.DataFrame({"x": [0.0, 256 * s, 512 * s, 768 * s], "c": ["a", "b", "a", "b"]})
    q = pd.DataFrame({"x": [2.0**-320, 1e15, 2.0**-319], "c": ["a", "a", "b"]})
    check_pruned_contract(ref, q, ONE)


def test_pruned_with_a_spread_tiny_against_the_reference_scale() -> None:
    ref = pd.DataFrame({"x": [-1.0, 1.0, -1.0], "c": ["a", "b", "b"]})
    q = pd.DataFrame({"x": [2.0**-52, -(2.0**-52), 0.0], "c": ["a", "a", "b"]})
    check_pruned_contract(ref, q, ONE)


def test_pruned_on_values_at_the_lower_edge_of_the_domain() -> None:
    rng = np.random.default_rng(22)
    tiny = 2.0**-330
    ref_i = pd.DataFrame({"x": rng.integers(-300, 300, 90) * 1.0, "y": rng.integers(0, 40, 90) * 1.0})
    q_i = ref_i.sample(25, random_state=2).reset_index(drop=True)
    q_i["x"] += rng.integers(-3, 4, 25)
    ref4, q4 = four_cats(ref_i, 9), None
    q4 = four_cats(q_i, 10, ref4)
    full = brute(ref4, q4, FOUR)
    scaled_ref, scaled_q = ref4.copy(), q4.copy()
    for c in ("x", "y"):
        scaled_ref[c] *= tiny
        scaled_q[c] *= tiny
    dist, prepared = fitted(scaled_ref, scaled_q, FOUR)
    pb = dist.pruned_block(prepared, slice(0, len(q4)))
    n_q, n_ref = full.shape
    rows, refs = np.repeat(np.arange(n_q), n_ref), np.tile(np.arange(n_ref), n_q)
    h = (4 - pb.matches.astype(float)).ravel()
    np.testing.assert_array_equal(pb.exact(rows, refs, h).reshape(n_q, n_ref), full)


def test_pruned_with_a_spread_below_one() -> None:
    ref = pd.DataFrame({"x": [0.001, 0.002, 0.004, 0.0075], "c": ["a", "b", "a", "b"]})
    q = pd.DataFrame({"x": [0.003, 0.0, 0.01], "c": ["a", "b", "a"]})
    check_pruned_contract(ref, q, ONE)


def test_pruned_mixed_schema_with_target() -> None:
    rng = np.random.default_rng(12)
    ref = pd.DataFrame(
        {
            "x": rng.normal(0, 1, 80).round(2),
            "y": rng.normal(0, 1, 80).round(2),
            "c": rng.choice(["p", "q", "r"], 80),
            "t": rng.integers(0, 2, 80),
        }
    )
    q = ref.sample(30, random_state=1).reset_index(drop=True)
    q["x"] += 0.01
    check_pruned_contract(ref, q, MIXED)


def wide_cats(df: pd.DataFrame, seed: int, copy_from: pd.DataFrame | None = None) -> pd.DataFrame:
    """``four_cats`` with 12, 11 and 10 levels: more joint values than one lookup table holds."""
    rng = np.random.default_rng(seed)
    out = df[["x", "y"]].copy()
    for c, n in (("a", 12), ("b", 11), ("c", 10)):
        out[c] = rng.choice([f"{c}{i}" for i in range(n)], len(df))
    out["t"] = rng.integers(0, 2, len(df))
    if copy_from is not None:  # most query rows copy a reference row's categories (selective pruning)
        pick = rng.integers(0, len(copy_from), len(df))
        keep = rng.random(len(df)) < 0.8
        for c in ("a", "b", "c", "t"):
            out[c] = np.where(keep, copy_from[c].to_numpy()[pick], out[c].to_numpy())
    return out


@pytest.mark.parametrize(("k", "cats"), [(1, "wide"), (3, "wide"), (2, "four")])
def test_match_counts_summed_in_column_tiles(monkeypatch, k: int, cats: str) -> None:
    """Blocks too large for the cache sum their lookup-table gathers in column tiles (7 columns here,
    a ragged last tile): the same exact counts, the same neighbours as the float64 brute force."""
    import tabmem.neighbors.distances as distances

    make = wide_cats if cats == "wide" else four_cats
    ref, q = far_from_mean(5, n_ref=200, n_q=60)
    ref4 = make(ref, 4)
    queries = make(q, 6, ref4)
    queries.loc[3, "a"] = "never-seen"  # an unseen category matches no reference row, in every tile
    whole = fitted(ref4, queries, FOUR)
    expected = whole[0].pruned_block(whole[1], slice(0, len(queries))).matches
    monkeypatch.setattr(distances, "_MATCH_BLOCK_BYTES", 0)
    monkeypatch.setattr(distances, "_MATCH_TILE_COLS", 7)
    monkeypatch.setattr(distances, "_MATCH_TILE_BYTES", 1)
    check_pruned_contract(ref4, queries, FOUR)
    dist, prepared = fitted(ref4, queries, FOUR)
    assert dist._groups is not None and (len(dist._groups) > 1) == (cats == "wide")  # one table, or several
    np.testing.assert_array_equal(dist.pruned_block(prepared, slice(0, len(queries))).matches, expected)
    check_pruned_search(ref4, queries, FOUR, k=k, block_rows=16)


@pytest.mark.parametrize("cache_bytes", [1, 450])
def test_pruned_passes_in_row_chunks(monkeypatch, cache_bytes: int) -> None:
    """The pruned search's passes over a block run on chunks of rows (1 row, or 2 rows and a ragged last
    chunk here): the same neighbours as the float64 brute force, with duplicates and ties."""
    import tabmem.neighbors.blocked as blocked

    ref, q = far_from_mean(5, n_ref=200, n_q=60)
    ref4 = four_cats(ref, 4)
    queries = four_cats(q, 6, ref4)
    monkeypatch.setattr(blocked, "_CACHE_BYTES", cache_bytes)
    check_pruned_contract(ref4, queries, FOUR)
    for k in (1, 2, 3):
        check_pruned_search(ref4, queries, FOUR, k=k, block_rows=16)
