"""Edges of the replica aggregates: Gini, heavy-tail shares and summary intervals.

Hand-computed values and properties (added where mutation checking found the tests silent).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tabmem.errors import ParameterError
from tabmem.memorization.replicas import ReplicaResult, gini


def test_gini_small_cases():
    assert gini(np.array([5])) == 0.0  # one record holds everything it can: no inequality among one
    assert gini(np.array([0, 1])) == pytest.approx(0.5)  # mean |difference| 0.5 / (2 x mean 0.5)
    assert math.isnan(gini(np.array([])))


def _result(counts: list[int], n_train: int, n_other: int = 1) -> ReplicaResult:
    """A result whose replicas are attributed to training records as ``counts`` says, plus non-replicas."""
    nn1 = np.repeat(np.arange(len(counts)), counts)
    k = len(nn1)
    n = k + n_other
    table = pd.DataFrame(
        {
            "synthetic_row": np.arange(n),
            "nn1": np.r_[nn1, np.full(n_other, n_train - 1)],
            "nn2": np.zeros(n, int),
            "d1": np.r_[np.zeros(k), np.full(n_other, 0.9)],
            "d2": np.ones(n),
            "ratio": np.r_[np.zeros(k), np.full(n_other, 0.9)],
            "is_replica": np.r_[np.ones(k, bool), np.zeros(n_other, bool)],
        }
    )
    return ReplicaResult(table, n_train, 1 / 3, "gower")


def test_heavy_tail_shares_use_the_top_fraction_of_all_records():
    res = _result([5, 4, 3, 2, 1], n_train=30)  # 15 replicas on 5 of 30 records
    ht = res.heavy_tail()
    assert ht["n_records_with_replicas"] == 5
    assert ht["top_1pct_share"] == pytest.approx(5 / 15)  # ceil(0.01 x 30) = 1 record
    assert ht["top_10pct_share"] == pytest.approx((5 + 4 + 3) / 15)  # ceil(0.10 x 30) = 3 records
    none = _result([], n_train=30).heavy_tail()
    assert none["n_records_with_replicas"] == 0
    assert math.isnan(none["top_1pct_share"]) and math.isnan(none["top_10pct_share"]) and math.isnan(none["gini"])


def test_summary_interval_arguments_name_the_option():
    res = _result([2, 1], n_train=10)
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(ParameterError, match=r"^confidence must"):
            res.summary(confidence=bad).to_dict()
    with pytest.raises(ParameterError, match=r"^n_bootstrap"):
        res.summary(n_bootstrap=-1).to_dict()
    assert res.summary(n_bootstrap=0).to_dict()["memorization_rate_ci"] == [None, None] or all(
        math.isnan(x) for x in res.summary(n_bootstrap=0).to_dict()["memorization_rate_ci"]
    )  # no resamples: no interval


def test_summary_resamples_synthetic_and_holdout_independently_and_by_seed():
    rng = np.random.default_rng(0)
    counts = np.bincount(rng.integers(0, 50, 90), minlength=50).tolist()  # 90 replicas, 210 other rows
    res = _result(counts, n_train=60, n_other=210)
    same = ReplicaResult(res.table, 60, 1 / 3, "gower", holdout=_result(counts, n_train=60, n_other=210))
    s = same.summary().to_dict()
    lo, hi = s["excess_memorization_ci"]
    assert hi - lo > 0.05  # two independent resamplings of identical rows still differ
    assert s["holdout_mem_auc"] == same.holdout.mem_auc
    other = same.summary(random_state=1).to_dict()
    for key in ("memorization_rate_ci", "holdout_memorization_rate_ci"):
        assert other[key] != s[key], key  # the seed drives both resamplings
    half = same.summary(confidence=0.5).to_dict()
    for key in ("memorization_rate_ci", "holdout_memorization_rate_ci"):
        assert half[key][1] - half[key][0] < s[key][1] - s[key][0], key


def test_rate_and_mem_auc_of_one_row_no_row_and_out_of_range_ratios():
    from tabmem.memorization.replicas import mem_auc_exact, mem_auc_trapz10, memorization_rate

    assert memorization_rate(np.array([0.1])) == 1.0 and memorization_rate(np.array([0.5])) == 0.0
    assert mem_auc_exact(np.array([0.25])) == 0.75
    assert mem_auc_trapz10(np.array([0.0])) == pytest.approx(17 / 18)  # rate 0 at t = 0, then 1: trapezoid
    for f in (memorization_rate, mem_auc_exact, mem_auc_trapz10):
        assert math.isnan(f(np.array([])))
    assert memorization_rate([0.1, None]) == 0.5  # a missing ratio is not a replica
    assert mem_auc_exact([0.5, None]) == 0.25 and mem_auc_trapz10([0.0, None]) == pytest.approx(17 / 36)
    # the area under [r < t] over t in [0, 1] is 1 - r clipped to [0, 1]
    assert mem_auc_exact(np.array([1.5])) == 0.0 and mem_auc_exact(np.array([-0.5])) == 1.0


def test_rate_bootstrap_default_seed_is_zero():
    from tabmem.memorization.uncertainty import proportion_ci, proportion_difference_ci

    assert proportion_ci(14, 40, n_bootstrap=50) == proportion_ci(14, 40, n_bootstrap=50, random_state=0)
    assert proportion_ci(14, 40, n_bootstrap=50) != proportion_ci(14, 40, n_bootstrap=50, random_state=1)
    assert proportion_difference_ci(14, 40, 9, 40, n_bootstrap=50) == proportion_difference_ci(
        14, 40, 9, 40, n_bootstrap=50, random_state=0
    )


def test_score_defaults_name_the_table_and_refuse_extra_columns():
    from tabmem.data.schema import Schema
    from tabmem.errors import SchemaError
    from tabmem.memorization.replicas import ReplicaDetector

    train = pd.DataFrame({"x": [0.0, 1.0, 2.0], "c": ["a", "b", "a"]})
    schema = Schema(("x", "c"), ("x",), ("c",))
    with pytest.raises(Exception, match=r"^ReplicaDetector is not fitted"):
        ReplicaDetector().score(train)
    det = ReplicaDetector("gower").fit(train, schema)
    with pytest.raises(SchemaError, match=r"^synthetic table"):
        det.score(train.assign(extra=1))  # extra="error" by default, and the message names the table
    assert len(det.score(train.assign(extra=1), extra="ignore").table) == 3
