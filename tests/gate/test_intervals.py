"""The rules' own intervals against independent references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from tabmem.gate.intervals import newcombe_difference, widen, wilson_interval, z_value


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 89), (3, 10), (56, 70), (1000, 1000), (17, 2000)])
def test_wilson_matches_scipy(k, n):
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_newcombe_matches_the_published_examples():
    """Newcombe (1998), Statistics in Medicine 17:873-890, table II, method 10."""
    assert newcombe_difference(56, 70, 48, 80) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    assert newcombe_difference(9, 10, 3, 10) == pytest.approx((0.1705, 0.8090), abs=5e-5)
    assert newcombe_difference(0, 10, 0, 20) == pytest.approx((-0.1611, 0.2775), abs=5e-5)


def test_newcombe_covers_the_difference_at_its_nominal_rate():
    rng = np.random.default_rng(0)
    p1, p2, n1, n2 = 0.02, 0.01, 400, 150
    hits = 0
    for _ in range(2000):
        lo, hi = newcombe_difference(int(rng.binomial(n1, p1)), n1, int(rng.binomial(n2, p2)), n2)
        hits += lo <= p1 - p2 <= hi
    assert hits / 2000 >= 0.93


def test_widen_scales_each_side_by_the_quantile_ratio():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    lo, hi = widen(0.6, (0.55, 0.7), recorded=0.95, wanted=1 - 0.05 / 4)
    r = z_value(1 - 0.05 / 4) / z_value(0.95)
    assert (lo, hi) == pytest.approx((0.6 - 0.05 * r, 0.6 + 0.1 * r))
    assert widen(0.6, (0.55, 0.7), recorded=0.95, wanted=0.95) == pytest.approx((0.55, 0.7))
