"""MMD options, subsampling, bandwidth and error messages against scipy/scikit-learn references.

The references encode the tables with pandas (real mean and population std, one-hot), draw the
documented subsamples with their own ``default_rng`` and sum the RBF kernel with scikit-learn.
"""

from __future__ import annotations

import warnings
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist
from sklearn.metrics.pairwise import rbf_kernel

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics import MMD
from tabmem.metrics.mmd import kernel_sum, median_bandwidth, mmd2_linear, mmd2_unbiased

SCHEMA = Schema(("a", "b", "c"), ("a", "b"), ("c",))


def _table(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"a": rng.normal(shift, 1, n), "b": rng.normal(5, 2, n), "c": rng.choice(["p", "q", "r"], n).astype(object)}
    )


def _encode(df: pd.DataFrame, real: pd.DataFrame) -> np.ndarray:
    cols = [((df[c] - real[c].mean()) / real[c].std(ddof=0)).to_numpy(float) for c in ("a", "b")]
    cols += [(df["c"] == level).to_numpy(float) for level in sorted(real["c"].unique())]
    return np.column_stack(cols)


def _unbiased(x: np.ndarray, y: np.ndarray, gamma: float) -> float:
    kxx, kyy, kxy = rbf_kernel(x, x, gamma=gamma), rbf_kernel(y, y, gamma=gamma), rbf_kernel(x, y, gamma=gamma)
    n, m = len(x), len(y)
    return (kxx.sum() - n) / (n * (n - 1)) + (kyy.sum() - m) / (m * (m - 1)) - 2 * kxy.mean()


def _linear(x: np.ndarray, y: np.ndarray, gamma: float) -> float:
    p = min(len(x), len(y)) // 2

    def k(u, v):
        return np.exp(-gamma * ((u - v) ** 2).sum())

    terms = [
        k(x[2 * i], x[2 * i + 1]) + k(y[2 * i], y[2 * i + 1]) - k(x[2 * i], y[2 * i + 1]) - k(x[2 * i + 1], y[2 * i])
        for i in range(p)
    ]
    return float(np.mean(terms))


def _median(pooled: np.ndarray) -> float:
    """Median pairwise distance; for an even number of pairs, the root of the median squared distance
    (any value between the two middle distances is a median; this is the one tabmem takes)."""
    return float(np.sqrt(np.median(pdist(pooled, "sqeuclidean"))))


def _median_gamma(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    sigma = _median(np.vstack([x, y]))
    return sigma, 1.0 / (2.0 * sigma**2)


# -------------------------------------------------------------------------------- kernels
def test_kernel_sum_in_small_blocks_equals_the_whole_matrix():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(11, 3)), rng.normal(size=(7, 3))
    k_ab, k_aa = rbf_kernel(a, b, gamma=0.4), rbf_kernel(a, a, gamma=0.4)
    with mock.patch("tabmem.metrics.mmd.block_rows", lambda n_ref: 3):  # blocks of 3, 3, 3, 2 rows
        assert kernel_sum(a, b, 0.4) == pytest.approx(k_ab.sum(), rel=1e-13)
        assert kernel_sum(a, a, 0.4, exclude_diagonal=True) == pytest.approx(k_aa.sum() - 11, rel=1e-13)
    assert kernel_sum(a, a, 0.4, exclude_diagonal=True) == pytest.approx(k_aa.sum() - 11, rel=1e-13)


def test_a_kernel_value_never_exceeds_one():
    # for this row the rounded exponent of ||a - a||^2 is +2.2e-16, not 0
    a = np.array([[-0.92, -0.46, 0.22]])
    assert kernel_sum(a, a, 0.7) == 1.0


def test_median_bandwidth_equals_scipy_and_falls_back_to_one():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(3, 2)) * 0.01, rng.normal(size=(3, 2)) * 0.01  # 15 pairs, distances well below 1
    assert median_bandwidth(x, y, np.random.default_rng(0)) == pytest.approx(
        np.median(pdist(np.vstack([x, y]))), rel=1e-12
    )
    same = np.ones((4, 2))
    assert median_bandwidth(same, same, np.random.default_rng(0)) == 1.0  # no spread: sigma 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one pooled row: no pair, no "empty slice" warning
        assert median_bandwidth(np.ones((1, 2)), np.zeros((0, 2)), np.random.default_rng(0)) == 1.0


@pytest.mark.parametrize("n_max, n", [(5, 9), (1000, 1001)])
def test_median_bandwidth_subsamples_n_max_pooled_rows_without_replacement(n_max, n):
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(n - 4, 2)), rng.normal(size=(4, 2))
    pooled = np.vstack([x, y])
    pick = np.random.default_rng(9).choice(n, n_max, replace=False)
    want = _median(pooled[pick])
    kw = {} if n_max == 1000 else {"n_max": n_max}  # 1000 is the documented default
    assert median_bandwidth(x, y, np.random.default_rng(9), **kw) == pytest.approx(want, rel=1e-12)


def test_estimators_at_their_minimal_sizes_and_their_messages():
    x = np.array([[0.0], [1.0]])
    y = np.array([[0.5], [2.0], [3.0]])
    assert mmd2_unbiased(x, y, 0.5) == pytest.approx(_unbiased(x, y, 0.5), abs=1e-15)
    assert mmd2_linear(x, y, 0.5) == pytest.approx(_linear(x, y, 0.5), abs=1e-15)  # one pair, y's third row unused
    assert mmd2_unbiased(x, y[:2], 0.5) == pytest.approx(_unbiased(x, y[:2], 0.5), abs=1e-15)
    x4, y7 = np.arange(4.0)[:, None] / 3, np.arange(7.0)[:, None] / 5
    assert mmd2_linear(x4, y7, 0.3) == pytest.approx(_linear(x4, y7, 0.3), abs=1e-15)
    x5, y4 = np.arange(5.0)[:, None] / 3, np.arange(4.0)[:, None] / 5
    assert mmd2_linear(x5, y4, 0.3) == pytest.approx(_linear(x5, y4, 0.3), abs=1e-15)
    assert mmd2_linear(y4, x5, 0.3) == pytest.approx(_linear(y4, x5, 0.3), abs=1e-15)
    for a, b in ((x[:1], y), (y, x[:1])):
        with pytest.raises(TabmemError, match=r"^MMD needs at least 2 rows in each table$"):
            mmd2_unbiased(a, b, 0.5)
        with pytest.raises(TabmemError, match=r"^the linear MMD estimator needs at least 2 rows in each table$"):
            mmd2_linear(a, b, 0.5)


# ------------------------------------------------------------------------------- the metric
def test_explicit_gamma_in_both_modes():
    real, syn = _table(40, 1), _table(30, 2, shift=0.5)
    res = MMD(gamma=0.125).evaluate(real, syn, SCHEMA)
    assert res.value == pytest.approx(_unbiased(_encode(real, real), _encode(syn, real), 0.125), rel=1e-10)
    assert res.details == {
        "mode": "standardized",
        "estimator": "unbiased",
        "gamma": 0.125,
        "bandwidth": 2.0,
        "n_real": 40,
        "n_synthetic": 30,
    }
    paper = MMD(mode="paper", gamma=0.25).evaluate(real, syn, SCHEMA)

    def raw(df):
        return np.column_stack([df["a"], df["b"]] + [(df["c"] == v).to_numpy(float) for v in ("p", "q", "r")])

    x, y = raw(real), raw(syn)
    k = rbf_kernel
    want = k(x, x, gamma=0.25).mean() + k(y, y, gamma=0.25).mean() - 2 * k(x, y, gamma=0.25).mean()
    assert paper.value == pytest.approx(want, rel=1e-10)
    assert paper.breakdown is None
    assert paper.details == {"mode": "paper", "estimator": "biased", "gamma": 0.25, "n_real": 40, "n_synthetic": 30}
    assert MMD(gamma=0.25).gamma == 0.25 and MMD(random_state=4).random_state == 4


def test_subsampling_draws_real_then_synthetic_rows_from_the_seed():
    real, syn = _table(50, 3), _table(40, 4, shift=0.3)
    res = MMD(max_samples=30, random_state=2).evaluate(real, syn, SCHEMA)
    rng = np.random.default_rng(2)
    x = _encode(real, real)[rng.choice(50, 30, replace=False)]
    y = _encode(syn, real)[rng.choice(40, 30, replace=False)]
    sigma, gamma = _median_gamma(x, y)
    assert res.details["n_real"] == res.details["n_synthetic"] == 30
    assert res.details["bandwidth"] == pytest.approx(sigma, rel=1e-12)
    assert res.value == pytest.approx(_unbiased(x, y, gamma), rel=1e-9, abs=1e-13)
    full = MMD(max_samples=None).evaluate(real, syn, SCHEMA)
    assert (full.details["n_real"], full.details["n_synthetic"]) == (50, 40)


def test_tables_of_exactly_max_samples_rows_are_not_resampled():
    # 600 + 600 pooled rows > 1000: the bandwidth sample is the first draw of the seed
    real, syn = _table(600, 5), _table(600, 6, shift=0.2)
    res = MMD(max_samples=600, random_state=1).evaluate(real, syn, SCHEMA)
    x, y = _encode(real, real), _encode(syn, real)
    pooled = np.vstack([x, y])[np.random.default_rng(1).choice(1200, 1000, replace=False)]
    sigma = _median(pooled)
    assert res.details["bandwidth"] == pytest.approx(sigma, rel=1e-12)
    assert res.value == pytest.approx(_unbiased(x, y, 1.0 / (2.0 * sigma**2)), rel=1e-9, abs=1e-13)


def test_linear_estimator_permutes_with_the_seed_and_uses_every_row():
    real, syn = _table(25, 7), _table(20, 8, shift=0.5)
    res = MMD(estimator="linear", random_state=3, max_samples=5).evaluate(real, syn, SCHEMA)
    rng = np.random.default_rng(3)
    x = _encode(real, real)[rng.permutation(25)]
    y = _encode(syn, real)[rng.permutation(20)]
    sigma, gamma = _median_gamma(x, y)
    assert res.value == pytest.approx(_linear(x, y, gamma), rel=1e-10, abs=1e-13)
    assert res.details["estimator"] == "linear" and res.details["n_real"] == 25 and res.details["n_synthetic"] == 20


@pytest.mark.parametrize(
    "params, message",
    [
        ({"mode": "raw"}, r"^mode must be 'standardized' or 'paper', got 'raw'$"),
        ({"estimator": "biased"}, r"^estimator must be 'unbiased' or 'linear', got 'biased'$"),
        ({"max_samples": 0}, r"^max_samples must be a positive integer or None, got 0$"),
        ({"gamma": 0.0}, r"^gamma must be a positive number, got 0.0$"),
        ({"gamma": -1.0}, r"^gamma must be a positive number, got -1.0$"),
        ({"gamma": float("inf")}, r"^gamma must be a positive number, got inf$"),
    ],
)
def test_mmd_options_are_checked_with_one_clear_message(params, message):
    real = _table(10, 9)
    with pytest.raises(TabmemError, match=message):
        MMD(**params).evaluate(real, real, SCHEMA)


def test_median_bandwidth_draws_nothing_without_more_rows_than_n_max():
    rng = np.random.default_rng(3)
    x, y = np.arange(6.0).reshape(3, 2), np.ones((2, 2))
    median_bandwidth(x, y, rng, n_max=5)
    assert rng.random() == np.random.default_rng(3).random()


def test_the_default_seed_is_zero():
    real, syn = _table(30, 12), _table(30, 13, shift=0.4)
    default = MMD(estimator="linear").evaluate(real, syn, SCHEMA).value  # the linear estimator always permutes
    assert default == MMD(estimator="linear", random_state=0).evaluate(real, syn, SCHEMA).value
    assert default != MMD(estimator="linear", random_state=1).evaluate(real, syn, SCHEMA).value


def test_a_small_positive_gamma_is_accepted():
    real = _table(10, 9)
    assert MMD(gamma=0.5).evaluate(real, real, SCHEMA).details["gamma"] == 0.5


def test_values_beyond_the_value_domain_are_refused_naming_the_table_column_and_row():
    # inside the domain (|x| <= 1e15, spreads >= ~1e-116) squared distances cannot overflow float64;
    # beyond it the tables are refused before the kernel is computed
    real, syn = _table(20, 10), _table(20, 11)
    syn.loc[3, "b"] = 1e200
    with pytest.raises(TabmemError, match=r"^synthetic table: column 'b' row 3 holds a value of magnitude 1e200, "):
        MMD(mode="paper").evaluate(real, syn, SCHEMA)
    bad_real = real.copy()
    bad_real.loc[0, "a"] = -1e200
    with pytest.raises(TabmemError, match=r"^real table: column 'a' row 0 holds a value of magnitude 1e200, "):
        MMD(mode="paper").evaluate(bad_real, _table(20, 11), SCHEMA)
    # at the domain's bound, far outside a tiny real spread: finite
    real_b = real.assign(b=np.linspace(0.0, 3e-90, 20))
    syn2 = _table(20, 11)
    syn2.loc[5, "b"] = 1e15
    assert np.isfinite(MMD().evaluate(real_b, syn2, SCHEMA).value)
