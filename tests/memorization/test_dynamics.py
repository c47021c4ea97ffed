"""Training-dynamics quantities against hand-computed truth tables and brute-force statistics."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tabmem.errors import TabmemError
from tabmem.memorization.dynamics import TrainingDynamics, cliffs_delta, compare_groups

# 4 tracked epochs x 5 records of replica counts
COUNTS = np.array(
    [
        [0, 1, 0, 0, 0],
        [2, 0, 0, 0, 1],
        [3, 1, 0, 0, 0],
        [0, 2, 0, 1, 1],
    ]
)
EPOCHS = [5, 10, 15, 20]


@pytest.fixture
def dyn():
    auc = COUNTS / 10.0 + 0.001
    return TrainingDynamics(np.array(EPOCHS), COUNTS.astype(np.int32), auc)


@pytest.mark.parametrize(
    "row, first, forgets, cum",
    [
        (0, 10.0, 1, 2),  # memorized at 10, 15; forgotten at 20
        (1, 5.0, 1, 3),  # 5, -, 15, 20: one forgetting event (5 -> 10)
        (2, np.nan, 0, 0),  # never
        (3, 20.0, 0, 1),
        (4, 10.0, 1, 2),  # 10, forgotten at 15, back at 20
    ],
)
def test_truth_table(dyn, row, first, forgets, cum):
    fm = dyn.first_memorization_epoch()
    assert (np.isnan(fm[row]) and np.isnan(first)) or fm[row] == first
    assert dyn.forgetting_events()[row] == forgets
    assert dyn.cumulative_memorization("indicator")[-1, row] == cum
    assert dyn.cumulative_memorization("count")[-1, row] == COUNTS[:, row].sum()


def test_from_records_roundtrip(dyn):
    e, r = np.nonzero(COUNTS)
    rec = pd.DataFrame(
        {"epoch": np.array(EPOCHS)[e], "train_row": r, "replica_count": COUNTS[e, r], "mem_auc": COUNTS[e, r] / 10.0}
    )
    back = TrainingDynamics.from_records(rec, EPOCHS, 5)
    np.testing.assert_array_equal(back.counts, COUNTS)
    with pytest.raises(TabmemError, match="not in the tracked epochs"):
        TrainingDynamics.from_records(rec, [5, 10], 5)
    with pytest.raises(TabmemError, match="outside"):
        TrainingDynamics.from_records(rec, EPOCHS, 3)


def test_top_mask_and_per_record(dyn):
    # final counts: [0, 2, 0, 1, 1]; q=0.4 -> k=2: row 1, then rows 3/4 tie (1) -> cumulative count 2 (row 4) > 1 (row 3)
    np.testing.assert_array_equal(np.flatnonzero(dyn.top_mask(0.4)), [1, 4])
    # q large: only records with a final replica can be Top
    np.testing.assert_array_equal(np.flatnonzero(dyn.top_mask(0.99)), [1, 3, 4])
    per = dyn.per_record(early_fraction=0.5)
    assert per.loc[1, "early_mem_auc"] == pytest.approx((0.101 + 0.001) / 2)
    assert per.loc[0, "peak_mem_auc"] == pytest.approx(0.301)
    with pytest.raises(TabmemError, match="q must be"):
        dyn.top_mask(0)


def test_trajectories(dyn):
    tr = dyn.trajectories(q=0.2)  # k = 1: row 1
    np.testing.assert_allclose(tr["top_frac_memorized"], [1, 0, 1, 1])
    np.testing.assert_allclose(tr["nontop_frac_ever_memorized"], [0, 0.5, 0.5, 0.75])


def brute(a, b):
    gt = sum(x > y for x, y in itertools.product(a, b))
    lt = sum(x < y for x, y in itertools.product(a, b))
    eq = len(a) * len(b) - gt - lt
    return (gt - lt) / (len(a) * len(b)), (gt + 0.5 * eq) / (len(a) * len(b))


@pytest.mark.parametrize("seed", range(4))
def test_effect_sizes_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, 13).astype(float)
    b = rng.integers(0, 6, 17).astype(float)
    delta, ps = brute(a, b)
    assert cliffs_delta(a, b) == pytest.approx(delta)
    res = compare_groups(a, b)
    assert res["prob_superiority"] == pytest.approx(ps)
    assert res["cliffs_delta"] == pytest.approx(2 * ps - 1)
    assert res["p_value"] == pytest.approx(stats.mannwhitneyu(a, b, method="asymptotic").pvalue)
    assert res["top_median"] == np.median(a)


def test_compare_detects_planted_effect():
    rng = np.random.default_rng(0)
    E, N = 12, 400
    counts = np.zeros((E, N), dtype=np.int32)
    # 40 "hard" records: memorized from epoch 1 on, strongly; others memorized late and weakly
    counts[:, :40] = rng.integers(1, 5, (E, 40))
    late = rng.random((E, N - 40)) < np.linspace(0.0, 0.2, E)[:, None]
    counts[:, 40:] = late
    auc = counts * 0.01
    d = TrainingDynamics(np.arange(1, E + 1), counts, auc)
    out = d.compare(q=0.1)
    assert out["n_top"] == 40
    assert out["findings"]["top_memorized_earlier"]["holds"] is True
    assert out["findings"]["top_stronger_early_mem_auc"]["holds"] is True
    assert out["metrics"]["first_memorization_epoch"]["top_median"] == 1.0
    assert out["findings"]["top_more_forgetting"]["holds"] is False  # hard records are never forgotten


def test_degenerate_inputs():
    d = TrainingDynamics(np.array([1]), np.zeros((1, 5), np.int32), np.zeros((1, 5)))
    out = d.compare()
    assert out["n_top"] == 0 and out["findings"]["top_memorized_earlier"]["holds"] is None
    with pytest.raises(TabmemError, match="strictly increasing"):
        TrainingDynamics(np.array([2, 1]), np.zeros((2, 3), np.int32), np.zeros((2, 3)))


@pytest.mark.parametrize("k, max_epoch", [(1, None), (2, None), (3, 15), (9, 10)])
def test_intensity_score_against_naive(dyn, k, max_epoch):
    got = dyn.intensity_score(k=k, max_epoch=max_epoch)
    for r in range(dyn.n_records):
        vals = sorted(
            (dyn.mem_auc[i, r] for i, e in enumerate(EPOCHS) if max_epoch is None or e <= max_epoch), reverse=True
        )
        assert got[r] == pytest.approx(np.mean(vals[:k]))
    with pytest.raises(TabmemError, match="no tracked epoch"):
        dyn.intensity_score(max_epoch=1)
    with pytest.raises(TabmemError, match="k must be"):
        dyn.intensity_score(k=0)
