"""Auditor's numbers: Clopper-Pearson against its definition and published values, the ε bound by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta, binom
from sklearn.metrics import roc_curve

from tabmem.attacks.auditing import clopper_pearson, epsilon_lower_bound, membership_audit, operating_points
from tabmem.errors import ParameterError, TabmemError


@pytest.mark.parametrize(
    "k, n, lo, hi",
    [
        (5, 100, 0.0164, 0.1128),  # published 95% exact intervals (e.g. Newcombe 1998 tables)
        (10, 100, 0.0490, 0.1762),
        (90, 100, 0.8238, 0.9510),
        (0, 100, 0.0, 1 - 0.025 ** (1 / 100)),  # closed forms at the ends
        (100, 100, 0.025 ** (1 / 100), 1.0),
    ],
)
def test_clopper_pearson_published_values(k, n, lo, hi):
    got_lo, got_hi = clopper_pearson(k, n, 0.95)
    assert abs(float(got_lo) - lo) < 6e-5 and abs(float(got_hi) - hi) < 6e-5


@pytest.mark.parametrize("k, n", [(1, 7), (3, 20), (17, 50), (49, 50)])
def test_clopper_pearson_solves_its_defining_tail_equations(k, n):
    """P[X >= k | lo] = α/2 and P[X <= k | hi] = α/2 (Clopper & Pearson 1934), by the binomial CDF."""
    lo, hi = clopper_pearson(k, n, 0.9)
    assert binom.sf(k - 1, n, float(lo)) == pytest.approx(0.05, abs=1e-9)
    assert binom.cdf(k, n, float(hi)) == pytest.approx(0.05, abs=1e-9)


def test_epsilon_hand_computed_perfect_and_90_10():
    delta = 1e-5
    # perfect separation, 100 members and 100 non-members: TPR_lo = 0.025^(1/100), FPR_hi = 1 - 0.025^(1/100)
    y = np.r_[np.ones(100, bool), np.zeros(100, bool)]
    s = np.r_[np.ones(100), np.zeros(100)]
    r = 0.025 ** (1 / 100)
    want = math.log((r - delta) / (1 - r))
    got = epsilon_lower_bound(s, y, delta=delta)
    assert got["epsilon_all_thresholds"] == pytest.approx(want, rel=1e-9)
    assert want == pytest.approx(3.2818, abs=1e-3)
    # 90 of 100 members and 10 of 100 non-members flagged: log((0.8238 - δ) / 0.1762) from the published interval
    s = np.r_[np.ones(90), np.zeros(10), np.ones(10), np.zeros(90)]
    got = epsilon_lower_bound(s, y, delta=delta)["epsilon_all_thresholds"]
    assert got == pytest.approx(math.log((0.8238 - delta) / 0.1762), abs=1e-3)


def test_epsilon_is_zero_without_signal_and_split_bound_is_valid():
    """Under the null (scores independent of membership) any ε > 0 is a false proof of leakage: the
    signed split bound must make one in at most 1 - confidence of the trials."""
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(100, bool), np.zeros(100, bool)]
    false_split = 0
    for trial in range(200):
        b = epsilon_lower_bound(rng.normal(size=200), y, random_state=trial)
        false_split += b["epsilon"] > 0
        assert b["epsilon"] >= 0 and b["epsilon_all_thresholds"] >= 0
    assert false_split <= 10  # 5 % of 200


def test_split_bound_detects_a_real_leak_and_is_reproducible():
    y = np.r_[np.ones(500, bool), np.zeros(500, bool)]
    s = np.r_[np.ones(250), np.zeros(250), np.zeros(500)] + np.random.default_rng(1).uniform(0, 0.1, 1000)
    a, b = epsilon_lower_bound(s, y, random_state=3), epsilon_lower_bound(s, y, random_state=3)
    assert a == b and a["epsilon"] > 1.0 and a["n_select"] + a["n_evaluate"] == 1000
    assert a["epsilon"] <= a["epsilon_all_thresholds"] + 1e-12 or a["n_evaluate"] < 1000


def test_midst_tpr_equals_the_challenge_definition():
    """MIDST scores max(tpr[fpr <= f]) on scikit-learn's ROC curve."""
    rng = np.random.default_rng(2)
    y = rng.uniform(size=300) < 0.5
    s = np.round(rng.normal(size=300) + y, 1)  # ties
    fpr, tpr, _ = roc_curve(y, s)
    got = operating_points(s, y, fprs=(0.1, 0.01))["midst_tpr_at_fpr"]
    for f in (0.1, 0.01):
        assert got[repr(f)]["tpr"] == pytest.approx(max(tpr[fpr <= f]))
        assert got[repr(f)]["fpr"] <= f


def test_conservative_threshold_brute_force():
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(400, bool), np.zeros(400, bool)]
    s = rng.normal(size=800) + 1.5 * y
    got = operating_points(s, y, fprs=(0.1, 0.01))
    best = {0.1: 0.0, 0.01: 0.0}
    for t in np.unique(s):  # every threshold "score >= t", by a loop
        fp, tp = int((s[~y] >= t).sum()), int((s[y] >= t).sum())
        hi = 1.0 if fp == 400 else float(beta.ppf(0.95, fp + 1, 400 - fp))
        for f in best:
            if hi <= f:
                best[f] = max(best[f], tp / 400)
    for f in best:
        c = got["conservative_tpr_at_fpr"][repr(f)]
        assert (c["tpr"] or 0.0) == pytest.approx(best[f])
        assert c["tpr"] is None or c["fpr_upper"] <= f
    # 400 non-members cannot certify FPR <= 0.001: 1 - 0.05^(1/400) = 0.0075
    few = operating_points(s, y, fprs=(0.001,))
    assert few["conservative_tpr_at_fpr"]["0.001"]["tpr"] is None
    assert few["min_certified_fpr"] == pytest.approx(1 - 0.05 ** (1 / 400))


def test_membership_audit_block_and_errors():
    y = np.r_[np.ones(50, bool), np.zeros(40, bool)]
    out = membership_audit(np.arange(90.0), y)
    assert out["min_resolved_fpr"] == pytest.approx(1 / 40)
    assert set(out) >= {"midst_tpr_at_fpr", "conservative_tpr_at_fpr", "epsilon_lower_bound", "min_resolved_fpr"}
    with pytest.raises(ParameterError, match="delta"):
        epsilon_lower_bound(np.arange(90.0), y, delta=1.5)
    with pytest.raises(TabmemError, match="same length"):
        membership_audit(np.arange(3.0), y)
    with pytest.raises(ParameterError, match="k <= n"):
        clopper_pearson(5, 3)
