"""Replica detection: hand-computed truth tables, brute-force equivalence, aggregates."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from brute import brute_force
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabmem import Schema
from tabmem.memorization.replicas import ReplicaDetector, gini, mem_auc_exact, mem_auc_trapz10, memorization_rate
from tabmem.neighbors.distances import DISTANCES as REGISTERED_DISTANCES

SCHEMA = Schema(("x", "y", "c", "t"), ("x", "y"), ("c", "t"), "t", "binclass")
DISTANCES = REGISTERED_DISTANCES.names()  # every registered distance is held to the brute force


def train_table() -> pd.DataFrame:
    return pd.DataFrame(
        {"x": [0.0, 3.0, 0.0, 10.0], "y": [0.0, 4.0, 1.0, 0.0], "c": ["a", "a", "b", "a"], "t": [0, 0, 1, 1]}
    )


# ---------------------------------------------------------------- truth tables
def test_fang2024_truth_table() -> None:
    # query (0, 0, a, 0): raw Euclidean e = [0, 5, 1, 10]; min-max -> [0, .5, .1, 1];
    # mismatches h = [0, 0, 2, 1]; d*M = [0, .5, 2.1, 2] -> nn1 = 0 (d=0), nn2 = 1 (d=.5/4): r = 0
    # query (2, 4, a, 0): e = [sqrt(20), 1, sqrt(13), sqrt(80)]
    syn = pd.DataFrame({"x": [0.0, 2.0], "y": [0.0, 4.0], "c": ["a", "a"], "t": [0, 0]})
    res = ReplicaDetector("fang2024").fit(train_table(), SCHEMA).score(syn)
    t = res.table
    assert list(t.nn1) == [0, 1] and list(t.nn2) == [1, 0]
    assert t.d1[0] == 0 and t.d2[0] == pytest.approx(0.5 / 4)
    e = np.array([math.sqrt(20), 1.0, math.sqrt(13), math.sqrt(80)])
    ehat = (e - e.min()) / (e.max() - e.min())
    assert t.d1[1] == pytest.approx(ehat[1] / 4) and t.d2[1] == pytest.approx(ehat[0] / 4)
    assert t.ratio[1] == pytest.approx(0.0)  # the closest row is the min -> ê = 0
    assert list(t.is_replica) == [True, True]


def test_gower_truth_table() -> None:
    # ranges x: 10, y: 4. query (5, 2, b, 1): |dx|/10 = [.5,.2,.5,.5], |dy|/4 = [.5,.5,.25,.5]
    # mismatches: c -> [1,1,0,1], t -> [1,1,0,0]; sums = [3, 2.7, .75, 2] / 4
    syn = pd.DataFrame({"x": [5.0], "y": [2.0], "c": ["b"], "t": [1]})
    t = ReplicaDetector("gower").fit(train_table(), SCHEMA).score(syn).table
    assert t.nn1[0] == 2 and t.nn2[0] == 3
    assert t.d1[0] == pytest.approx(0.75 / 4) and t.d2[0] == pytest.approx(2.0 / 4)
    assert t.ratio[0] == pytest.approx(0.375) and not t.is_replica[0]


def test_gower_clips_out_of_range_values_at_one() -> None:
    syn = pd.DataFrame({"x": [100.0], "y": [0.0], "c": ["a"], "t": [0]})
    t = ReplicaDetector("gower").fit(train_table(), SCHEMA).score(syn).table
    # x differs by >= 90 = 9 ranges from every row: clipped to 1 each
    assert t.d1[0] == pytest.approx((1 + 0 + 0 + 0) / 4)


def test_l2_truth_table() -> None:
    train = train_table()
    syn = pd.DataFrame({"x": [0.0], "y": [0.0], "c": ["b"], "t": [0]})
    t = ReplicaDetector("l2").fit(train, SCHEMA).score(syn).table
    mean, std = train[["x", "y"]].mean().to_numpy(), train[["x", "y"]].std(ddof=0).to_numpy()
    z = (train[["x", "y"]].to_numpy() - mean) / std
    zq = (np.array([0.0, 0.0]) - mean) / std
    d = np.sqrt(((z - zq) ** 2).sum(1) + np.array([1, 1, 1, 2]))  # one mismatch adds exactly 1
    order = np.argsort(d, kind="stable")
    assert t.nn1[0] == order[0] and t.d1[0] == pytest.approx(d[order[0]])
    assert t.d2[0] == pytest.approx(d[order[1]])


def test_zero_over_zero_is_not_a_replica_and_ties_go_to_lowest_index() -> None:
    train = pd.concat([train_table().iloc[[1]], train_table()], ignore_index=True)  # rows 0 and 2 identical
    syn = train.iloc[[0]].reset_index(drop=True)
    t = ReplicaDetector("fang2024").fit(train, SCHEMA).score(syn).table
    assert t.nn1[0] == 0 and t.nn2[0] == 2
    assert np.isnan(t.ratio[0]) and not t.is_replica[0]


# --------------------------------------------------------------- brute force
def random_tables(seed: int, n_train: int, n_syn: int, *, nan: bool = False, constant: bool = False):
    rng = np.random.default_rng(seed)
    train = pd.DataFrame(
        {
            "x": rng.normal(0, 1, n_train).round(1),  # rounding creates many ties
            "y": rng.normal(1e7, 1e5, n_train).round(-3),  # large magnitude: float32 cancellation trap
            "c": rng.choice(["p", "q", "r"], n_train),
            "t": rng.integers(0, 2, n_train),
        }
    )
    if constant:
        train["x"] = 1.5
    dup = rng.integers(0, n_train, max(1, n_train // 10))
    train.iloc[dup[: len(dup) // 2]] = train.iloc[dup[len(dup) // 2 : len(dup) // 2 * 2]].to_numpy()
    syn = train.sample(n_syn, replace=True, random_state=seed).reset_index(drop=True)
    half = n_syn // 2
    syn.loc[: half - 1, "x"] = syn.loc[: half - 1, "x"] + rng.normal(0, 0.3, half).round(1)
    syn.loc[: half // 2, "y"] = syn.loc[: half // 2, "y"] + rng.normal(0, 2e4, half // 2 + 1).round(-3)
    if nan:
        train.loc[rng.random(n_train) < 0.1, "x"] = np.nan
        syn.loc[rng.random(n_syn) < 0.1, "x"] = np.nan
    return train, syn


def check_equal(res_table: pd.DataFrame, bf: pd.DataFrame) -> None:
    np.testing.assert_allclose(res_table.d1, bf.d1, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res_table.d2, bf.d2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res_table.ratio, bf.ratio, rtol=1e-6, atol=1e-12)
    # identical neighbours except on exact ties (equal up to float64 rounding of the sum)
    dist = bf.attrs["all"]
    rows = np.arange(len(bf))
    for col, ref in (("nn1", "d1"), ("nn2", "d2")):
        ours = res_table[col].to_numpy()
        differ = ours != bf[col].to_numpy()
        assert differ.mean() <= 0.1, f"{col}: {differ.sum()} of {len(bf)} rows differ"
        np.testing.assert_allclose(dist[rows[differ], ours[differ]], bf[ref].to_numpy()[differ], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("constant", [False, True])
def test_blocked_equals_brute_force(distance: str, constant: bool) -> None:
    train, syn = random_tables(1, 400, 150, constant=constant)
    res = ReplicaDetector(distance).fit(train, SCHEMA).score(syn)
    check_equal(res.table, brute_force(train, syn, SCHEMA, distance))


@pytest.mark.parametrize("distance", DISTANCES)
def test_result_independent_of_block_size_and_threads(distance: str) -> None:
    train, syn = random_tables(2, 300, 200)
    ref = ReplicaDetector(distance, n_jobs=1).fit(train, SCHEMA).score(syn).table
    tiny = ReplicaDetector(distance, n_jobs=2, memory_budget=50_000).fit(train, SCHEMA).score(syn).table
    pd.testing.assert_frame_equal(ref, tiny)


@pytest.mark.parametrize("lookup", [True, False])
@pytest.mark.parametrize("share", [0.0, 1.0])
@pytest.mark.parametrize("distance", ["fang2024", "gower"])
def test_pruned_and_dense_searches_both_equal_brute_force(monkeypatch, distance: str, share: float, lookup) -> None:
    # share 1.0: the categorical pruning always runs (in chunks of 64 surviving pairs); 0.0: never;
    # lookup False: match counts from the one-hot GEMM instead of the uint8 lookup tables
    import tabmem.neighbors.blocked as blocked
    from tabmem.neighbors.distances import Distance

    monkeypatch.setattr(blocked, "_PRUNED_PAIRS", 64)
    if not lookup:
        monkeypatch.setattr(Distance, "_lookup_setup", lambda self: setattr(self, "_groups", None))

    def run(train, syn, max_share):
        monkeypatch.setattr(blocked, "_PRUNED_MAX_SHARE", max_share)
        return ReplicaDetector(distance, nan="match", memory_budget=200_000).fit(train, SCHEMA).score(syn).table

    for seed in range(4):
        train, syn = random_tables(seed, 300, 120, nan=distance == "gower" and seed % 2 == 1)
        table = run(train, syn, share)
        check_equal(table, brute_force(train, syn, SCHEMA, distance))
        pd.testing.assert_frame_equal(table, run(train, syn, 1.0 - share))  # bit for bit, whichever path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n_train=st.integers(2, 60),
    n_syn=st.integers(1, 40),
    distance=st.sampled_from(DISTANCES),
    constant=st.booleans(),
)
def test_property_blocked_equals_brute_force(seed, n_train, n_syn, distance, constant) -> None:
    train, syn = random_tables(seed, n_train, n_syn, constant=constant)
    res = ReplicaDetector(distance, memory_budget=20_000).fit(train, SCHEMA).score(syn, unseen="mismatch")
    check_equal(res.table, brute_force(train, syn, SCHEMA, distance))


def test_gower_nan_semantics_match_sdmetrics_convention() -> None:
    train, syn = random_tables(3, 200, 80, nan=True)
    res = ReplicaDetector("gower", nan="match").fit(train, SCHEMA).score(syn)
    check_equal(res.table, brute_force(train, syn, SCHEMA, "gower"))


@pytest.mark.parametrize("distance", ["fang2024", "l2"])
def test_nan_match_imputes_mean_and_counts_missingness_as_a_mismatch(distance: str) -> None:
    train, syn = random_tables(4, 150, 60, nan=True)
    res = ReplicaDetector(distance, nan="match").fit(train, SCHEMA).score(syn)
    # reference: impute the training mean and add an explicit categorical "x is missing" column
    mean = train["x"].mean()
    schema2 = Schema(("x", "y", "c", "t", "x_missing"), ("x", "y"), ("c", "t", "x_missing"), "t", "binclass")

    def expand(df):
        return df.assign(x=df["x"].fillna(mean), x_missing=df["x"].isna())

    std = [train["x"].std(ddof=0), train["y"].std(ddof=0)]  # statistics of the observed values
    bf = brute_force(expand(train), expand(syn), schema2, distance, std=std)
    if distance == "fang2024":  # the indicator is not a column of the table: M stays 4
        bf[["d1", "d2"]] = bf[["d1", "d2"]] * 5 / 4
    check_equal(res.table, bf)


def test_unseen_category_mismatches_everything() -> None:
    train = train_table()
    syn = pd.DataFrame({"x": [0.0], "y": [0.0], "c": ["zzz"], "t": [0]})
    with pytest.raises(Exception, match="never seen in training"):
        ReplicaDetector().fit(train, SCHEMA).score(syn)
    t = ReplicaDetector("gower").fit(train, SCHEMA).score(syn, unseen="mismatch").table
    assert t.d1[0] == pytest.approx((0 + 0 + 1 + 0) / 4)


def test_categories_compare_as_canonical_strings() -> None:
    # an integer category read back from CSV as float (1.0) or string ("1") is the same category
    train = pd.DataFrame({"x": [0.0, 5.0, 9.0], "c": [1, 2, 3]})
    schema = Schema(("x", "c"), ("x",), ("c",))
    syn = pd.DataFrame({"x": [0.0, 0.0], "c": ["1", 1.0]})
    t = ReplicaDetector("gower").fit(train, schema).score(syn).table
    assert (t.nn1 == 0).all() and (t.d1 == 0).all()


# ---------------------------------------------------------------- aggregates
def test_aggregates_match_definitions() -> None:
    train, syn = random_tables(5, 300, 300)
    res = ReplicaDetector("fang2024").fit(train, SCHEMA).score(syn)
    t = res.table
    bf = brute_force(train, syn, SCHEMA, "fang2024")  # the truth: never the result's own columns
    r = bf.ratio.to_numpy()
    assert res.memorization_rate == pytest.approx(np.mean(np.nan_to_num(r, nan=2.0) < 1 / 3))
    assert res.mem_auc == pytest.approx(np.mean(np.where(np.isnan(r), 0, 1 - r)))
    grid = np.linspace(0, 1, 10)
    rates = [np.mean(np.nan_to_num(r, nan=2.0) < g) for g in grid]
    assert res.mem_auc_trapz10 == pytest.approx(
        sum((rates[i] + rates[i + 1]) / 2 * (grid[1] - grid[0]) for i in range(9))
    )
    counts = np.zeros(len(train), int)
    share = np.zeros(len(train))
    for nn1, ratio in zip(bf.nn1, bf.ratio):
        if not np.isnan(ratio):
            counts[nn1] += ratio < 1 / 3
            share[nn1] += (1 - ratio) / len(bf)
    assert counts.sum() > 20  # the table has replicas to count
    assert (res.record_counts == counts).all()
    np.testing.assert_allclose(res.record_mem_auc, share)
    assert res.record_mem_auc.sum() == pytest.approx(res.mem_auc)
    assert res.summary().to_dict()["n_replicas"] == counts.sum()
    assert t.is_replica.tolist() == [bool(x < 1 / 3) if not np.isnan(x) else False for x in r]
    recs = res.records()
    assert list(recs.columns) == ["train_row", "replica_count", "mem_auc"] and len(recs) == len(train)


def test_mem_auc_formulas_on_known_ratios() -> None:
    r = np.array([0.0, 0.2, 1 / 3, 1.0, np.nan])
    assert mem_auc_exact(r) == pytest.approx((1 + 0.8 + 2 / 3 + 0 + 0) / 5)
    # papers' grid: per-row contribution (m - 0.5)/9 with m = #grid points > r (the papers' code)
    grid = np.linspace(0, 1, 10)
    contrib = [((grid > x).sum() - 0.5) / 9 if not np.isnan(x) and (grid > x).any() else 0 for x in r]
    assert mem_auc_trapz10(r) == pytest.approx(np.mean(contrib))
    assert memorization_rate(r) == pytest.approx(2 / 5)


def test_gini_reference() -> None:
    assert gini(np.array([1, 1, 1, 1])) == pytest.approx(0.0)
    v = np.array([0, 0, 0, 10])
    # mean absolute difference / (2 mean)
    mad = np.abs(v[:, None] - v[None, :]).mean()
    assert gini(v) == pytest.approx(mad / (2 * v.mean()))
    assert np.isnan(gini(np.zeros(3)))


def test_holdout_baseline_and_excess() -> None:
    train, syn = random_tables(6, 300, 200)
    holdout, _ = random_tables(7, 150, 10)
    res = ReplicaDetector("gower").fit(train, SCHEMA).score(syn, holdout=holdout, unseen="mismatch")
    s = res.summary().to_dict()
    assert s["holdout_memorization_rate"] == res.holdout.memorization_rate
    assert s["excess_memorization"] == pytest.approx(res.memorization_rate - res.holdout.memorization_rate)
    for key in ["n_train", "n_synthetic", "distance", "threshold", "memorization_rate", "mem_auc", "mem_auc_trapz10"]:
        assert key in s


def test_planted_replicas_found_and_real_holdout_rows_mostly_not(shared_data_dir) -> None:
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("shoppers", data_dir=shared_data_dir)
    train = ds.train.iloc[:3000].reset_index(drop=True)
    planted = train.sample(200, random_state=0).reset_index(drop=True)
    for distance in ["gower", "l2"]:
        det = ReplicaDetector(distance).fit(train, ds.schema)
        res = det.score(planted)
        assert res.memorization_rate >= 0.95  # copies are found (not 1: training duplicates give 0/0)
        hold = det.score(ds.test.iloc[:500], unseen="mismatch")
        assert hold.memorization_rate < 0.2


def test_score_before_fit_and_bad_threshold() -> None:
    with pytest.raises(RuntimeError, match="not fitted"):
        ReplicaDetector().score(train_table())
    with pytest.raises(ValueError, match="threshold"):
        ReplicaDetector(threshold=0).fit(train_table(), SCHEMA)
    with pytest.raises(ValueError, match="unknown distance"):
        ReplicaDetector("cosine").fit(train_table(), SCHEMA)


def test_training_nan_needs_opt_in() -> None:
    train = train_table()
    train.loc[0, "x"] = np.nan
    with pytest.raises(Exception, match="missing value"):
        ReplicaDetector().fit(train, SCHEMA)
    ReplicaDetector(nan="match").fit(train, SCHEMA)


def test_nan_drop_keeps_file_positions() -> None:
    syn = pd.DataFrame({"x": [0.0, np.nan, 3.0], "y": [0.0, 1.0, 4.0], "c": ["a", "a", "a"], "t": [0, 0, 0]})
    t = ReplicaDetector(nan="drop").fit(train_table(), SCHEMA).score(syn).table
    assert list(t.synthetic_row) == [0, 2]


# ------------------------------------------------------------ bootstrap intervals
def test_summary_intervals_cover_and_are_reproducible() -> None:
    train, syn = random_tables(6, 300, 200)
    holdout, _ = random_tables(7, 150, 10)
    res = ReplicaDetector("gower").fit(train, SCHEMA).score(syn, holdout=holdout, unseen="mismatch")
    s = res.summary().to_dict()
    assert s == res.summary().to_dict()  # same seed, same intervals
    assert res.summary(random_state=1).to_dict()["excess_memorization_ci"] != s["excess_memorization_ci"]
    for key, value in [
        ("memorization_rate_ci", s["memorization_rate"]),
        ("holdout_memorization_rate_ci", s["holdout_memorization_rate"]),
        ("excess_memorization_ci", s["excess_memorization"]),
    ]:
        lo, hi = s[key]
        assert lo <= value <= hi, key
    # a rate's interval is about the normal one, +-1.96 sqrt(p (1 - p) / n)
    p, n = s["memorization_rate"], s["n_synthetic"]
    half = 1.96 * math.sqrt(p * (1 - p) / n)
    assert s["memorization_rate_ci"][1] - s["memorization_rate_ci"][0] == pytest.approx(2 * half, rel=0.15)
    # the difference of independent rates is wider than either
    ph, nh = s["holdout_memorization_rate"], s["n_holdout"]
    half_diff = 1.96 * math.sqrt(p * (1 - p) / n + ph * (1 - ph) / nh)
    assert s["excess_memorization_ci"][1] - s["excess_memorization_ci"][0] == pytest.approx(2 * half_diff, rel=0.15)
    assert s["confidence"] == 0.95 and s["n_bootstrap"] == 2000
    narrow = res.summary(confidence=0.5).to_dict()["excess_memorization_ci"]
    assert narrow[1] - narrow[0] < s["excess_memorization_ci"][1] - s["excess_memorization_ci"][0]


def test_summary_interval_arguments_are_checked() -> None:
    from tabmem.errors import ParameterError

    train, syn = random_tables(6, 50, 20)
    res = ReplicaDetector("gower").fit(train, SCHEMA).score(syn)
    assert "excess_memorization_ci" not in res.summary().to_dict()  # no holdout, no excess
    with pytest.raises(ParameterError, match="confidence"):
        res.summary(confidence=1.0).to_dict()
    with pytest.raises(ParameterError, match="n_bootstrap"):
        res.summary(n_bootstrap=-1).to_dict()
    assert all(
        np.isnan(v) for v in res.summary(n_bootstrap=0).to_dict()["memorization_rate_ci"]
    )  # no resamples, no interval
