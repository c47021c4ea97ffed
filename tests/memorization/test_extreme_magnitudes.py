"""Exact across the value domain: values from 1e-100 to 1e15, mixes of tiny and large, against the float64 brute force.

Beyond the domain (0 or ``1e-100 <= |x| <= 1e15``) tables are refused (tests/data/test_value_domain.py
and the last tests here).

The reference (``brute.py``) evaluates each distance's formula with an overflow-free norm
(``hypot``). For ``fang2024`` a query far from every reference row makes the float64 formula
itself ill-conditioned (``ê`` divides a difference of two nearly equal norms by their spread),
so the comparison allows exactly the rounding that the float64 formula carries: a norm is
known to ``~k eps`` relatively, i.e. ``ê`` to ``~k eps e_max / spread``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from brute import _nums, brute_force
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabmem import Schema
from tabmem.data.encoding import TableEncoder
from tabmem.errors import SchemaError
from tabmem.memorization.replicas import ReplicaDetector

SCHEMA = Schema(("x", "y", "c", "t"), ("x", "y"), ("c", "t"), "t", "binclass")
EXPONENTS = [-100, -90, -50, -20, 0, 3, 8, 12, 14]  # mantissas up to 7.5 (x 1.25): inside the domain
EPS = np.finfo(float).eps


def extreme_tables(seed: int, n_train: int, n_syn: int, exps: tuple[int, ...]):
    """Columns whose values mix a few decimal magnitudes (per column), with ties, copies and outliers."""
    rng = np.random.default_rng(seed)

    def column(n: int, col: int) -> np.ndarray:
        e = rng.choice(exps[col * 2 : col * 2 + 2], n)
        mant = rng.choice([1.0, 2.0, 3.0, 5.0, 7.5, -4.0], n)
        return mant * 10.0 ** e.astype(float)

    train = pd.DataFrame(
        {
            "x": column(n_train, 0),
            "y": column(n_train, 1),
            "c": rng.choice(["p", "q"], n_train),
            "t": rng.integers(0, 2, n_train),
        }
    )
    syn = train.sample(n_syn, replace=True, random_state=seed).reset_index(drop=True)  # exact copies
    k = n_syn // 3
    syn.loc[: k - 1, "x"] = column(k, 0) * 1.25  # near rows
    syn.loc[k : 2 * k - 1, "y"] = column(k, 2 if len(exps) > 4 else 1)  # other magnitudes, possibly far away
    return train, syn


def tolerances(train: pd.DataFrame, syn: pd.DataFrame, distance: str) -> np.ndarray:
    """Absolute error of each synthetic row's float64 distances (module docstring)."""
    if distance != "fang2024":
        return np.full(len(syn), 1e-15)
    t_num, s_num = _nums(train, SCHEMA), _nums(syn, SCHEMA)
    out = []
    for x in s_num:
        e = np.hypot.reduce(t_num - x, axis=1)
        spread = e.max() - e.min()
        out.append(64 * EPS * e.max() / spread / SCHEMA.n_columns if spread > 0 else 0.0)
    return np.array(out) + 1e-300


def check_close(res: pd.DataFrame, bf: pd.DataFrame, tol: np.ndarray) -> None:
    for col in ("d1", "d2"):
        ours, ref = res[col].to_numpy(), bf[col].to_numpy()
        # inside the domain every distance is finite (l2 at most ~1e136), non-negative and equal
        assert np.array_equal(np.isinf(ours), np.isinf(ref)) and (ours >= 0).all(), col
        fin = np.isfinite(ref)
        assert (np.abs(ours[fin] - ref[fin]) <= tol[fin] + 1e-9 * np.abs(ref[fin])).all(), col
    dist = bf.attrs["all"]
    rows = np.arange(len(bf))
    for col, ref in (("nn1", "d1"), ("nn2", "d2")):
        # our neighbour is at the brute-force k-th distance (exact ties may pick another index)
        chosen, best = dist[rows, res[col].to_numpy()], bf[ref].to_numpy()
        fin = np.isfinite(best)
        assert (chosen[~fin] == best[~fin]).all(), col
        assert (np.abs(chosen[fin] - best[fin]) <= tol[fin] + 1e-9 * np.abs(best[fin])).all(), col
    # ratios wherever they are well-determined (d2 well above the rounding of the formula)
    r_ours, r_ref, d2 = res["ratio"].to_numpy(), bf["ratio"].to_numpy(), bf["d2"].to_numpy()
    firm = d2 > 1e3 * tol
    assert np.array_equal(np.isnan(r_ours[firm]), np.isnan(r_ref[firm]))
    ok = firm & ~np.isnan(r_ref)
    np.testing.assert_allclose(r_ours[ok], r_ref[ok], rtol=1e-6, atol=0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n_train=st.integers(2, 40),
    n_syn=st.integers(1, 20),
    distance=st.sampled_from(["fang2024", "gower", "l2"]),
    exps=st.lists(st.sampled_from(EXPONENTS), min_size=4, max_size=4).map(tuple),
)
def test_property_extreme_magnitudes_equal_brute_force(seed, n_train, n_syn, distance, exps) -> None:
    train, syn = extreme_tables(seed, n_train, n_syn, exps)
    det = ReplicaDetector(distance, memory_budget=20_000).fit(train, SCHEMA)
    res = det.score(syn, unseen="mismatch").table
    enc = det.encoder_  # l2 standardises with the encoder's mean and std, tested below
    std = np.where(enc.std_ > 0, enc.std_, 1.0)
    bf = brute_force(train, syn, SCHEMA, distance, std=std, mean=enc.mean_)
    check_close(res, bf, tolerances(train, syn, distance))


@pytest.mark.parametrize("scale", [1e14, 1e-100, 1e-50, 1.0])
def test_encoder_mean_std_at_the_domain_edges(scale: float) -> None:
    values = np.array([1.0, 2.0, 4.0, -3.0, 7.5]) * scale
    enc = TableEncoder(Schema(("v",), ("v",), ())).fit(pd.DataFrame({"v": values}))
    ref = np.array([1.0, 2.0, 4.0, -3.0, 7.5])
    np.testing.assert_allclose(enc.mean_[0], ref.mean() * scale, rtol=1e-15)
    np.testing.assert_allclose(enc.std_[0], ref.std() * scale, rtol=1e-15)


# ------------------------------------------------------------ extreme magnitudes
def adult_like(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.integers(17, 90, n).astype(float),
            "y": rng.integers(10_000, 1_000_000, n).astype(float),
            "c": rng.choice(["p", "q", "r"], n),
            "t": rng.integers(0, 2, n),
        }
    )


@pytest.mark.parametrize("distance", ["fang2024", "gower", "l2"])
@pytest.mark.parametrize("where,value", [("train", 1e15), ("train", -1e15), ("synthetic", 1e15), ("synthetic", 1e12)])
def test_one_huge_value_gives_the_brute_force_rate(distance: str, where: str, value: float) -> None:
    train = adult_like(300)
    syn = pd.concat([train.iloc[:100], adult_like(100, seed=1)], ignore_index=True)  # 100 exact copies
    (train if where == "train" else syn).loc[7, "y"] = value
    det = ReplicaDetector(distance).fit(train, SCHEMA)
    res = det.score(syn, unseen="mismatch")
    enc = det.encoder_
    bf = brute_force(train, syn, SCHEMA, distance, std=np.where(enc.std_ > 0, enc.std_, 1.0), mean=enc.mean_)
    check_close(res.table, bf, tolerances(train, syn, distance))
    with np.errstate(invalid="ignore"):
        assert res.memorization_rate == pytest.approx(np.mean(bf["ratio"].to_numpy() < 1 / 3))
    assert (res.table["d1"] >= 0).all()


@pytest.mark.parametrize("where,name", [("train", "training"), ("synthetic", "synthetic")])
def test_one_value_beyond_the_domain_is_refused(where: str, name: str) -> None:
    train = adult_like(300)
    syn = pd.concat([train.iloc[:100], adult_like(100, seed=1)], ignore_index=True)
    (train if where == "train" else syn).loc[7, "y"] = 1e308
    with pytest.raises(SchemaError, match=rf"^{name} table: column 'y' row 7 holds a value of magnitude 1e308, "):
        ReplicaDetector("fang2024").fit(train, SCHEMA).score(syn)


def test_copies_are_found_next_to_a_training_value_of_1e15() -> None:
    train = adult_like(300)
    train.loc[0, "y"] = 1e15
    syn = train.iloc[1:201].reset_index(drop=True)
    t = ReplicaDetector("fang2024").fit(train, SCHEMA).score(syn).table
    assert (t["d1"] == 0).all() and (t["nn1"] == np.arange(1, 201)).all()
    # the second neighbour is a distinct row a tiny (but nonzero) normalised distance away
    assert (t["d2"] > 0).all() and t["is_replica"].all()


def test_all_distances_are_exact_with_tiny_values_only() -> None:
    rng = np.random.default_rng(3)
    train = adult_like(80)
    train["x"] = train["x"] * 1e-99  # near the domain's lower edge: 1.7e-98 .. 9e-98
    train["y"] = train["y"] * 1e-103  # 1e-99 .. 1e-97
    syn = train.sample(30, random_state=1).reset_index(drop=True)
    syn.loc[:9, "x"] = syn.loc[:9, "x"] * (1 + rng.random(10))
    for distance in ["fang2024", "gower", "l2"]:
        det = ReplicaDetector(distance).fit(train, SCHEMA)
        res = det.score(syn).table
        enc = det.encoder_
        bf = brute_force(train, syn, SCHEMA, distance, std=np.where(enc.std_ > 0, enc.std_, 1.0), mean=enc.mean_)
        check_close(res, bf, tolerances(train, syn, distance))
