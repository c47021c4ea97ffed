"""Wilson-score rates and the residual risk against closed forms (scipy's Wilson interval, hand algebra)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest, norm

from tabmem.risk.rates import Rate, residual, wilson
from tabmem.risk.summary import RiskEstimate, estimate


@pytest.mark.parametrize("n,k", [(1000, 850), (1000, 0), (1000, 1000), (37, 5), (2000, 13), (1, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_centre_plus_minus_error_is_scipys_wilson_interval(n, k, confidence):
    r = wilson(n, k, confidence)
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    assert r.value - r.error == pytest.approx(ci.low, abs=1e-12)
    assert r.value + r.error == pytest.approx(ci.high, abs=1e-12)
    z = norm.ppf(0.5 + confidence / 2)
    assert r.value == pytest.approx((k + z * z / 2) / (n + z * z), abs=1e-15)


def test_anonymeters_documented_success_rates():
    # the values anonymeter's own tests state for 1000 attacks (rounded to 3 digits)
    for k, value, error in [(850, 0.849, 0.022), (0, 0.002, 0.002), (1000, 0.998, 0.002)]:
        r = wilson(1000, k, 0.95)
        assert round(r.value, 3) == value and round(r.error, 3) == error


def test_residual_and_its_propagated_error():
    a, c = Rate(0.6, 0.03), Rate(0.2, 0.02)
    r = residual(a, c)
    assert r.value == pytest.approx((0.6 - 0.2) / 0.8)
    da, dc = 1 / 0.8, (0.6 - 1) / 0.8**2
    assert r.error == pytest.approx(math.hypot(0.03 * da, 0.02 * dc))


def test_estimate_clips_to_unit_interval_and_round_trips():
    e = estimate(
        n_attacks=500,
        n_success=10,
        n_control_attacks=400,
        n_control_success=30,
        n_baseline_attacks=500,
        n_baseline_success=2,
        confidence=0.95,
    )
    assert e.risk == 0.0 and e.risk_ci[0] == 0.0 and 0.0 <= e.risk_ci[1] <= 1.0
    assert e.n_control_attacks == 400 and e.n_baseline_attacks is None
    d = e.to_dict()
    assert "n_baseline_attacks" not in d
    assert RiskEstimate.from_dict(d) == e
    lo, hi = binomtest(10, 500).proportion_ci(method="wilson")
    assert e.attack_rate_ci == pytest.approx([lo, hi], abs=1e-12)
