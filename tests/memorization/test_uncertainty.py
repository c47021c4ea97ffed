"""Bootstrap intervals of memorization rates: the binomial shortcut equals resampling rows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tabmem.errors import ParameterError
from tabmem.memorization.uncertainty import proportion_ci, proportion_difference_ci


def naive_bootstrap(flags: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """The textbook bootstrap: resample rows with replacement, take the mean."""
    return np.array([flags[rng.integers(flags.size, size=flags.size)].mean() for _ in range(n_boot)])


@pytest.mark.parametrize(("k", "n"), [(30, 100), (3, 250), (97, 100)])
def test_rate_interval_matches_the_exact_bootstrap_distribution(k, n):
    # resampling n flags with k ones gives Binomial(n, k/n) / n: its quantiles are the exact interval
    lo, hi = proportion_ci(k, n, n_bootstrap=200_000, random_state=1)
    exact = stats.binom.ppf([0.025, 0.975], n, k / n) / n
    assert lo == pytest.approx(exact[0], abs=1.01 / n)
    assert hi == pytest.approx(exact[1], abs=1.01 / n)


def test_rate_interval_matches_a_naive_resampling_loop():
    flags = np.zeros(150, bool)
    flags[:40] = True
    ours = proportion_ci(40, 150, n_bootstrap=20_000, random_state=0)
    naive = np.quantile(naive_bootstrap(flags, 20_000, np.random.default_rng(5)), [0.025, 0.975])
    np.testing.assert_allclose(ours, naive, atol=1.01 / 150)


def test_difference_interval_matches_a_naive_two_sample_loop():
    syn = np.r_[np.ones(45, bool), np.zeros(155, bool)]
    hold = np.r_[np.ones(20, bool), np.zeros(130, bool)]
    rng = np.random.default_rng(3)
    naive = naive_bootstrap(syn, 20_000, rng) - naive_bootstrap(hold, 20_000, rng)
    ours = proportion_difference_ci(45, 200, 20, 150, n_bootstrap=20_000, random_state=0)
    np.testing.assert_allclose(ours, np.quantile(naive, [0.025, 0.975]), atol=0.006)
    # the point estimate lies inside, and a larger confidence widens the interval
    assert ours[0] < 45 / 200 - 20 / 150 < ours[1]
    wide = proportion_difference_ci(45, 200, 20, 150, n_bootstrap=20_000, confidence=0.99, random_state=0)
    assert wide[0] < ours[0] and wide[1] > ours[1]


def test_edge_cases_and_seeds():
    assert proportion_ci(0, 50) == (0.0, 0.0)
    assert proportion_ci(50, 50) == (1.0, 1.0)
    assert all(np.isnan(proportion_ci(0, 0)))
    assert all(np.isnan(proportion_ci(5, 10, n_bootstrap=0)))
    assert all(np.isnan(proportion_difference_ci(1, 2, 0, 0)))
    assert proportion_ci(7, 40, random_state=4) == proportion_ci(7, 40, random_state=4)
    with pytest.raises(ParameterError, match=r"k must be in \[0, 10\], got 11"):
        proportion_ci(11, 10)
    with pytest.raises(ParameterError, match="confidence"):
        proportion_ci(1, 10, confidence=1.5)
    with pytest.raises(ParameterError, match="n_bootstrap"):
        proportion_difference_ci(1, 10, 1, 10, n_bootstrap=-1)
