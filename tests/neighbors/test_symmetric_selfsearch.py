"""The symmetric self-search (each pair once) gives the k-nearest search's nearest-other distances bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_fang2024_kernel import brute

from tabmem.data.schema import Schema
from tabmem.neighbors import NeighborIndex
from tabmem.neighbors.symmetric import nearest_other

SCHEMA = Schema(("x", "y", "k", "j"), ("x", "y"), ("k", "j"))


def _table(n: int, seed: int, *, nan: bool = False, coarse: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    step = 10.0 if coarse else 0.1  # coarse values: many exact ties between different rows
    frame = pd.DataFrame(
        {
            "x": np.round(rng.normal(50, 10, n) / step) * step,
            "y": np.round(rng.exponential(100, n) / step) * step,
            "k": rng.choice(["a", "b", "c", "d"], n).astype(object),
            "j": rng.choice(["u", "v", "w"], n).astype(object),
        }
    )
    if nan:
        frame.loc[rng.random(n) < 0.1, "x"] = np.nan
        frame.loc[rng.random(n) < 0.05, "y"] = np.nan
    frame.iloc[7] = frame.iloc[3]  # exact duplicates: nearest other at 0
    frame.iloc[n - 1] = frame.iloc[0]
    return frame


def _kneighbors_path(index: NeighborIndex, train: pd.DataFrame) -> np.ndarray:
    """The k-nearest search's answer (the path before the symmetric search): the table queried as a DataFrame."""
    n = len(train)
    idx, dist = index.kneighbors(train, k=2)
    own = idx[:, 0] == np.arange(n)
    return np.where(own, dist[:, 1], dist[:, 0])


def _brute(index: NeighborIndex, train: pd.DataFrame) -> np.ndarray:
    """Float64 brute force, pair by pair (``fang2024``: the papers' formula, columns summed in order)."""
    d = index.distance_
    n = d.n_ref
    if index.distance == "fang2024":
        full = brute(train, train, SCHEMA)
    else:
        full = np.stack([d.pair_distances(d.ref_, np.full(n, i), np.arange(n)) for i in range(n)])
    np.fill_diagonal(full, np.inf)
    return full.min(axis=1)


@pytest.mark.parametrize("distance", ["gower", "fang2024"])
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize("n_jobs,budget", [(1, 1 << 30), (2, 1 << 14), (3, 1 << 12)])
def test_equals_kneighbors_and_brute_force_bit_for_bit(distance, nan, coarse, n_jobs, budget):
    n = 300
    train = _table(n, 1, nan=nan, coarse=coarse)
    index = NeighborIndex(distance, n_jobs=n_jobs, memory_budget=budget).fit(train, SCHEMA)
    seen: list[int] = []
    sym = nearest_other(index.distance_, n_jobs=n_jobs, memory_budget=budget, progress=seen.append)
    assert sym is not None
    assert sym.tobytes() == _kneighbors_path(index, train).tobytes()
    if not (nan and distance == "fang2024"):  # the papers' formula has no missing values
        assert sym.tobytes() == _brute(index, train).tobytes()
    assert sym[3] == sym[7] == sym[0] == sym[n - 1] == 0.0
    assert sum(seen) == n and min(seen) >= 0


def test_the_audit_path_uses_it_and_falls_back_where_it_does_not_apply(monkeypatch):
    from tabmem.memorization import authenticity

    calls = []
    real = authenticity.nearest_other
    monkeypatch.setattr(authenticity, "nearest_other", lambda *a, **k: calls.append(1) or real(*a, **k))
    train = _table(200, 2)
    for distance in ("gower", "fang2024", "l2"):
        index = NeighborIndex(distance).fit(train, SCHEMA)
        got = authenticity.nearest_other_distance(index, train)
        assert got.tobytes() == _kneighbors_path(index, train).tobytes()
    assert len(calls) == 3  # tried every time; l2 (no categorical pruning, no symmetric pairs) falls back
    assert nearest_other(NeighborIndex("l2").fit(train, SCHEMA).distance_) is None


@pytest.mark.parametrize("distance", ["gower", "fang2024"])
def test_one_row_and_no_categorical_columns_fall_back(distance):
    one = NeighborIndex(distance).fit(_table(20, 3).iloc[:1], SCHEMA)
    assert nearest_other(one.distance_) is None
    numeric = Schema(("x", "y"), ("x", "y"), ())
    index = NeighborIndex(distance).fit(_table(20, 3)[["x", "y"]], numeric)
    assert nearest_other(index.distance_) is None
