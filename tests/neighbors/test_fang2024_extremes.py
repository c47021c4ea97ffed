"""``fang2024``'s exact ``e`` extremes per query row (``Fang2024Distance._extremes``), on both of its paths.

Each query row's distances are normalised by its smallest and largest ``e`` over all reference rows.
They are found from the reference rows near the row on the principal axis (a window and both tails
of the projection order, ``_projected_extremes``); a row whose window and tails hold too many
reference rows takes the full GEMM pass (``_dense_extremes``). Both are checked bit for bit against
a pair-by-pair loop (the papers' squares added column after column), each path forced on every
row, on tables that make them hard: no dominant axis, ties at both extremes (duplicated and
mirrored reference rows), missing values (imputed with the reference mean), the edges of the value
domain, a single reference row; then the whole search against the float64 brute force.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_fang2024_kernel import ONE, brute, brute_knn, edge_tables, far_from_mean, fitted
from test_fang2024_pruned import FOUR, four_cats

import tabmem.neighbors.distances as distances
from tabmem import Schema
from tabmem.neighbors import NeighborIndex

pytestmark = pytest.mark.filterwarnings("error")

TWO = Schema(("x", "y", "c"), ("x", "y"), ("c",))
PATHS = {"projected": np.inf, "dense": 0.0, "default": distances._PROJECTED_MAX_SHARE}


def brute_extremes(dist: distances.Fang2024Distance, q: distances.Queries) -> tuple[np.ndarray, np.ndarray]:
    """Per query row, min and max of ``e`` over every reference row: a loop over pairs' columns, in float64."""
    t, x = dist.ref_.num, q.num  # missing values: the reference mean, as the distance imputes them
    e = np.zeros((len(x), len(t)))
    for c in range(t.shape[1]):
        diff = x[:, None, c] - t[None, :, c]
        e = diff * diff if c == 0 else e + diff * diff
    e = np.sqrt(e)
    return e.min(axis=1), e.max(axis=1)


def check_extremes(ref: pd.DataFrame, queries: pd.DataFrame, schema: Schema, monkeypatch, path: str) -> None:
    monkeypatch.setattr(distances, "_PROJECTED_MAX_SHARE", PATHS[path])
    dist, q = fitted(ref, queries, schema)
    lo, hi = dist._extremes(q, np.arange(len(queries)))
    want_lo, want_hi = brute_extremes(dist, q)
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)


def isotropic(seed: int, n_ref: int = 300, n_q: int = 90) -> tuple[pd.DataFrame, pd.DataFrame]:
    """No dominant axis (a round cloud, values on a coarse grid: many ties); some query rows far out."""
    rng = np.random.default_rng(seed)

    def rows(n: int) -> pd.DataFrame:
        xy = np.round(rng.normal(0, 3, (n, 2)), 1)
        return pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "c": rng.choice(["a", "b"], n)})

    ref, q = rows(n_ref), rows(n_q)
    q.loc[:4, ["x", "y"]] = [[40.0, 0.0], [0.0, -40.0], [30.0, 30.0], [0.0, 0.0], [1e6, -1e6]]
    return ref, q


def mirrored() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reference rows in mirrored, duplicated pairs around the query rows: ties at both extremes on the axis."""
    x = np.array([-7.0, -3.0, -1.0, 1.0, 3.0, 7.0, -7.0, 7.0, 1.0, -1.0])
    ref = pd.DataFrame({"x": x, "y": np.zeros(len(x)), "c": ["a", "b"] * 5})
    q = pd.DataFrame({"x": [0.0, 0.0, 2.0, -2.0], "y": [0.0, 5.0, 0.0, 1.0], "c": ["a", "b", "a", "b"]})
    return ref, q


def with_missing(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    ref, q = isotropic(seed, 200, 60)
    rng = np.random.default_rng(seed + 100)
    ref.loc[rng.random(len(ref)) < 0.15, "y"] = np.nan
    q.loc[rng.random(len(q)) < 0.2, "y"] = np.nan
    q.loc[rng.random(len(q)) < 0.1, "x"] = np.nan  # missing on the query side only
    return ref, q


@pytest.mark.parametrize("path", list(PATHS))
def test_extremes_equal_the_pairwise_loop(monkeypatch, path: str) -> None:
    tables = [isotropic(0), mirrored(), with_missing(1), far_from_mean(2, n_ref=150, n_q=40)]
    for ref, q in tables:
        schema = TWO if "c" in ref else Schema(("x", "y"), ("x", "y"), ())
        check_extremes(ref, q, schema, monkeypatch, path)
    check_extremes(*edge_tables(), ONE, monkeypatch, path)
    check_extremes(pd.DataFrame({"x": [3.5], "c": ["a"]}), pd.DataFrame({"x": [0.0, 3.5, -1e15], "c": ["a"] * 3}),
                   ONE, monkeypatch, path)  # fmt: skip
    s = 2.0**-340  # the lower edge of the domain next to its upper edge
    ref = pd.DataFrame({"x": [0.0, 256 * s, 512 * s, 768 * s], "c": ["a", "b", "a", "b"]})
    check_extremes(ref, pd.DataFrame({"x": [2.0**-320, 1e15, 2.0**-319], "c": ["a", "a", "b"]}), ONE, monkeypatch, path)


def test_extremes_in_small_pieces(monkeypatch) -> None:
    """Window and tails evaluated a few pairs at a time (chunks that end inside a row's range)."""
    monkeypatch.setattr(distances, "_PROJECTED_PAIRS", 3)
    check_extremes(*isotropic(3), TWO, monkeypatch, "projected")


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("k", [1, 3])
def test_search_equals_brute_force(monkeypatch, path: str, k: int) -> None:
    """The pruned search (and the dense one, both read the extremes) with ties, copies and far rows."""
    monkeypatch.setattr(distances, "_PROJECTED_MAX_SHARE", PATHS[path])
    ref, q = isotropic(4)
    q = pd.concat([q, ref.iloc[:10]], ignore_index=True)  # exact copies: e = 0
    ref = pd.concat([ref, ref.iloc[:20]], ignore_index=True)  # duplicated reference rows: ties
    for r, qq, schema in [(ref, q, TWO), (*mirrored(), TWO)]:
        full = brute(r, qq, schema)
        b_idx, b_dist = brute_knn(full, k)
        idx, d = NeighborIndex("fang2024", n_jobs=1).fit(r, schema).kneighbors(qq, k=k, block_rows=16)
        np.testing.assert_array_equal(d, b_dist)
        np.testing.assert_array_equal(idx, b_idx)
    ref4, q4 = far_from_mean(6, n_ref=200, n_q=60)
    ref4 = four_cats(ref4, 1)
    q4 = four_cats(q4, 2, ref4)
    full = brute(ref4, q4, FOUR)
    b_idx, b_dist = brute_knn(full, k)
    idx, d = NeighborIndex("fang2024", n_jobs=1).fit(ref4, FOUR).kneighbors(q4, k=k, block_rows=20)
    np.testing.assert_array_equal(d, b_dist)
    np.testing.assert_array_equal(idx, b_idx)


def test_search_with_missing_values_same_on_both_paths(monkeypatch) -> None:
    """Missing values (imputed, plus a mismatch indicator): the same bits whichever path finds the extremes."""
    ref, q = with_missing(5)
    got = {}
    for path in ("projected", "dense"):
        monkeypatch.setattr(distances, "_PROJECTED_MAX_SHARE", PATHS[path])
        got[path] = NeighborIndex("fang2024", n_jobs=1).fit(ref, TWO).kneighbors(q, k=3, block_rows=16)
    for a, b in zip(got["projected"], got["dense"]):
        np.testing.assert_array_equal(a, b)
    assert np.isfinite(got["dense"][1]).all()


def test_projection_is_selective_along_a_dominant_axis(monkeypatch) -> None:
    """One column spread 1e5 times wider than the other (Adult's weights): a few reference rows per query
    row are evaluated; the rows far off the axis take the full pass, in the same block, with the same bits."""
    rng = np.random.default_rng(7)
    n = 4000

    def rows(m: int) -> pd.DataFrame:
        return pd.DataFrame({"x": rng.uniform(0, 1e6, m).round(), "y": rng.normal(0, 10, m).round(1),
                             "c": rng.choice(["a", "b"], m)})  # fmt: skip

    queries = rows(200)
    queries.loc[:2, "y"] = [5e5, -5e5, 2e6]  # far off the axis: their window holds most reference rows
    dist, q = fitted(rows(n), queries, TWO)
    counted = []
    reduce = dist._range_extreme

    def spy(q, qi, start, stop, smallest):
        counted.append(np.maximum(stop - start, 0).sum())
        return reduce(q, qi, start, stop, smallest)

    monkeypatch.setattr(dist, "_range_extreme", spy)
    dense = dist._projected_extremes(q, np.arange(200))[2]
    np.testing.assert_array_equal(np.flatnonzero(dense), [0, 1, 2])
    assert sum(counted) < 0.01 * 200 * n
    lo, hi = dist._extremes(q, np.arange(200))
    np.testing.assert_array_equal(np.stack([lo, hi]), np.stack(brute_extremes(dist, q)))


def test_nearest_row_at_the_edge_of_the_window(monkeypatch) -> None:
    """The rows next to the query on the axis (the first evaluated) are at e = 10.0005; the nearest row,
    at e = 10, lies on the axis 10 away: exactly at the edge of the window they open (no column
    covariance: the principal axis is x itself)."""
    near = [(x, y) for x in (-0.2, -0.1, 0.1, 0.2) for y in (-10.0, 10.0)]
    xy = np.array(near + [(10.0, 0.0), (-10.0, 0.0)] + [(x, 0.0) for x in np.arange(-975.0, 1000.0, 50.0)])
    ref = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "c": ["a", "b"] * (len(xy) // 2) + ["a"] * (len(xy) % 2)})
    q = pd.DataFrame({"x": [0.0, 0.0, 1e-3], "y": [0.0, 0.0, 0.0], "c": ["a", "b", "a"]})
    check_extremes(ref, q, TWO, monkeypatch, "projected")


@pytest.mark.parametrize("path", list(PATHS))
def test_the_power_iteration_axis_of_wide_tables_keeps_the_extremes_exact(monkeypatch, path):
    """Above ``_EIGH_MAX_COLS`` numerical columns the axis comes from power iteration (no k x k Gram
    matrix and O(k^3) eigh: a 3 x 20,000 table took minutes); any unit axis keeps the extremes exact."""
    monkeypatch.setattr(distances, "_EIGH_MAX_COLS", 1)
    ref, q = isotropic(3)
    check_extremes(ref, q, TWO, monkeypatch, path)


def test_the_power_iteration_axis_finds_a_dominant_axis() -> None:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(500, 40)) * np.r_[10.0, np.ones(39)]  # column 0 dominates
    axis = distances._power_axis(w)
    want = np.linalg.eigh(w.T @ w)[1][:, -1]
    assert abs(float(axis @ want)) > 0.999
