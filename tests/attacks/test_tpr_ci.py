"""Bootstrap intervals of TPR at a fixed FPR, against a brute-force threshold scan."""

from __future__ import annotations

import numpy as np
import pytest

from tabmem.attacks.evaluation import evaluate_membership
from tabmem.errors import TabmemError


def brute_tpr_at(scores: np.ndarray, y: np.ndarray, f: float) -> float:
    """TPR@f as the paper interpolates it, from a threshold scan written out by hand."""
    thresholds = np.r_[np.inf, np.unique(scores)[::-1]]
    fpr = np.array([(scores[~y] >= t).mean() for t in thresholds])
    tpr = np.array([(scores[y] >= t).mean() for t in thresholds])
    return float(np.interp(f, fpr, tpr))


def brute_ci(scores, y, fprs, n_boot, seed):
    rng = np.random.default_rng(seed)
    pos, neg = scores[y], scores[~y]
    lab = np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]
    draws = []
    for _ in range(n_boot):
        s = np.r_[pos[rng.integers(pos.size, size=pos.size)], neg[rng.integers(neg.size, size=neg.size)]]
        draws.append([brute_tpr_at(s, lab, f) for f in fprs])
    lo, hi = np.quantile(np.array(draws), [0.025, 0.975], axis=0)
    return {f: (lo[i], hi[i]) for i, f in enumerate(fprs)}


def test_tpr_interval_equals_a_brute_force_bootstrap():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(60, bool), np.zeros(80, bool)]
    scores = np.round(rng.normal(size=140) + 0.8 * y, 1)  # rounded: many ties, as edit distances have
    fprs = (0.0, 0.05, 0.1, 0.3)
    ours = evaluate_membership(scores, y, fprs=fprs, n_bootstrap=150, random_state=7).tpr_at_fpr_ci
    ref = brute_ci(scores, y, fprs, 150, 7)
    for f in fprs:
        np.testing.assert_allclose(ours[f], ref[f], atol=1e-12)
    point = evaluate_membership(scores, y, fprs=fprs, n_bootstrap=0).tpr_at_fpr
    assert ours[0.3][0] <= point[0.3] <= ours[0.3][1]


def test_separable_scores_and_disabled_bootstrap():
    y = np.r_[np.ones(20, bool), np.zeros(20, bool)]
    scores = np.r_[np.arange(20) + 100.0, np.arange(20.0)]
    assert evaluate_membership(scores, y, fprs=(0.1,), n_bootstrap=50).tpr_at_fpr_ci[0.1] == (1.0, 1.0)
    assert all(np.isnan(v) for v in evaluate_membership(scores, y, fprs=(0.1,), n_bootstrap=0).tpr_at_fpr_ci[0.1])
    with pytest.raises(TabmemError, match="fprs"):
        evaluate_membership(scores, y, fprs=(1.5,))


@pytest.mark.parametrize("n", [2, 37, 400])
def test_roc_points_equal_scikit_learn(n):
    from sklearn.metrics import roc_curve

    from tabmem.attacks.evaluation import _roc_points

    rng = np.random.default_rng(n)
    scores = np.round(rng.normal(size=n), 1)
    y = np.arange(n) % 3 == 0
    fpr, tpr, _ = roc_curve(y, scores, drop_intermediate=False)
    ours = _roc_points(scores, y)
    np.testing.assert_array_equal(ours[0], fpr)
    np.testing.assert_array_equal(ours[1], tpr)
