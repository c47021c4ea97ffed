"""Bootstrap intervals of memorization rates: the binomial shortcut equals resampling rows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tabmem.errors import ParameterError
from tabmem.memorization.uncertainty import interval_note, proportion_ci, proportion_difference_ci


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


@pytest.mark.parametrize("confidence", [0.5, 0.8])
def test_any_confidence_gives_the_exact_binomial_quantiles(confidence):
    # the percentile interval cuts (1 - confidence) / 2 from each tail of Binomial(n, k/n) / n;
    # n = 1000 makes a wrong tail (e.g. (1 - confidence) / 3) miss by several counts
    k, n = 300, 1000
    tail = (1 - confidence) / 2
    exact = stats.binom.ppf([tail, 1 - tail], n, k / n) / n
    lo, hi = proportion_ci(k, n, n_bootstrap=200_000, confidence=confidence, random_state=2)
    assert lo == pytest.approx(exact[0], abs=1.01 / n) and hi == pytest.approx(exact[1], abs=1.01 / n)
    # the difference with an all-zero second sample is the first rate's interval
    dlo, dhi = proportion_difference_ci(k, n, 0, 40, n_bootstrap=200_000, confidence=confidence, random_state=2)
    assert dlo == pytest.approx(exact[0], abs=1.01 / n) and dhi == pytest.approx(exact[1], abs=1.01 / n)


def test_one_row_gives_no_interval_and_one_resample_a_degenerate_one():
    # one row resamples to itself: the "interval" would be the point, [x, x], so it is undefined
    assert all(np.isnan(proportion_ci(1, 1)))
    assert all(np.isnan(proportion_difference_ci(1, 1, 1, 3, n_bootstrap=5000)))
    assert all(np.isnan(proportion_difference_ci(1, 3, 1, 1, n_bootstrap=5000)))
    assert interval_note("excess_memorization_ci", {"synthetic": 1, "holdout": 1}) == (
        "excess_memorization_ci is null: a bootstrap interval needs at least 2 rows per table, got 1 synthetic row "
        "and 1 holdout row (one row resamples to itself: the interval would be the point, [x, x])"
    )
    assert interval_note("memorization_rate_ci", {"synthetic": 2}) is None
    # two rows: 1 - Binomial(3, 1/3)/3 against Binomial(2, 1/2)/2 is an interval again
    lo, hi = proportion_difference_ci(1, 2, 1, 3, n_bootstrap=5000)
    assert lo < hi
    # n_bootstrap=1 is the caller's choice of one resample: a degenerate interval, as asked
    for interval in (proportion_ci(3, 10, n_bootstrap=1), proportion_difference_ci(3, 10, 1, 10, n_bootstrap=1)):
        assert np.isfinite(interval[0]) and interval[0] == interval[1]


def test_defaults_are_1000_resamples_at_95_percent():
    # large n: the resampled rates are nearly continuous, so one more resample moves a quantile
    default = proportion_ci(3000, 10_000)
    assert default == proportion_ci(3000, 10_000, n_bootstrap=1000, confidence=0.95, random_state=0)
    assert default != proportion_ci(3000, 10_000, n_bootstrap=1001)
    default = proportion_difference_ci(3000, 10_000, 1000, 5000)
    assert default == proportion_difference_ci(
        3000, 10_000, 1000, 5000, n_bootstrap=1000, confidence=0.95, random_state=0
    )
    assert default != proportion_difference_ci(3000, 10_000, 1000, 5000, n_bootstrap=1001)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: proportion_ci(1, -1), r"^proportion_ci: n must be in \[0, inf\], got -1$"),
        (lambda: proportion_ci(1, 0), r"^proportion_ci: k must be in \[0, 0\], got 1$"),
        (lambda: proportion_ci(11, 10), r"^proportion_ci: k must be in \[0, 10\], got 11$"),
        (lambda: proportion_ci(1, 10, n_bootstrap=-1), r"^n_bootstrap must be in \[0, inf\], got -1$"),
        (lambda: proportion_ci(1, 10, confidence=1.5), r"^confidence "),
        (lambda: proportion_difference_ci(11, 10, 1, 10), r"^proportion_difference_ci: k must be in \[0, 10\]"),
        (lambda: proportion_difference_ci(1, 10, 11, 10), r"^proportion_difference_ci: k must be in \[0, 10\]"),
        (lambda: proportion_difference_ci(1, 10, 1, -2), r"^proportion_difference_ci: n must be in \[0, inf\]"),
        (lambda: proportion_difference_ci(1, 10, 1, 10, n_bootstrap=-1), r"^n_bootstrap must be in \[0, inf\]"),
        (lambda: proportion_difference_ci(1, 10, 1, 10, confidence=2.0), r"^confidence "),
    ],
)
def test_bad_arguments_name_the_function_and_argument(call, message):
    with pytest.raises(ParameterError, match=message):
        call()


def test_zero_resamples_of_a_difference_is_no_interval():
    assert all(np.isnan(proportion_difference_ci(3, 10, 1, 10, n_bootstrap=0)))
    assert all(np.isnan(proportion_difference_ci(0, 0, 1, 10)))
