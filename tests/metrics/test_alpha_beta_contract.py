"""alpha-precision / beta-recall: ties, minimal sizes, messages, far rows and the metric's output."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics import AlphaPrecision, BetaRecall
from tabmem.metrics.alpha_beta import _norms, alpha_beta_naive

ALPHAS = np.linspace(0, 1, 30)


def _loops(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Precision and coverage curves by the definitions (<= on both radii), with scipy distances."""
    c = x.mean(0)
    radii = np.quantile(np.sqrt(((x - c) ** 2).sum(1)), ALPHAS)
    to_c = np.sqrt(((y - c) ** 2).sum(1))
    prec = np.array([np.mean([d <= r for d in to_c]) for r in radii])
    dxx = cdist(x, x)
    np.fill_diagonal(dxx, np.inf)
    dxy = cdist(x, y)
    nn = dxy.argmin(1)
    d = np.sqrt(((y[nn] - y.mean(0)) ** 2).sum(1))
    q = np.quantile(d, ALPHAS)
    cov = np.array([np.mean([(dxy[i, nn[i]] <= dxx[i].min()) and (d[i] <= qk) for i in range(len(x))]) for qk in q])
    return prec, cov


def test_ties_count_as_inside_both_radii():
    # exact copies: every synthetic row sits on a real radius, every real row at distance 0 from its copy,
    # and the duplicated real rows have a nearest other real row at distance 0 as well
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 1.0], [3.0, 1.0]])
    out = alpha_beta_naive(x, x.copy())
    prec, cov = _loops(x, x.copy())
    np.testing.assert_array_equal(out["precision_curve"], prec)
    np.testing.assert_array_equal(out["coverage_curve"], cov)
    assert out["coverage_curve"][-1] == 1.0 and out["precision_curve"][-1] == 1.0
    np.testing.assert_array_equal(out["alphas"], ALPHAS)


def test_minimal_sizes_and_messages():
    x, y = np.array([[0.0], [1.0]]), np.array([[0.5]])
    out = alpha_beta_naive(x, y)
    prec, cov = _loops(x, y)
    np.testing.assert_array_equal(out["precision_curve"], prec)
    np.testing.assert_array_equal(out["coverage_curve"], cov)
    msg = r"^alpha-precision/beta-recall need at least 2 real rows and 1 synthetic row$"
    for a, b in ((x[:1], y), (x, y[:0])):
        with pytest.raises(TabmemError, match=msg):
            alpha_beta_naive(a, b)
    schema = Schema(("a",), ("a",), ())
    one = pd.DataFrame({"a": [1.0]})
    with pytest.raises(TabmemError, match=r"^alpha-precision/beta-recall need at least 2 real rows$"):
        AlphaPrecision().evaluate(one, pd.DataFrame({"a": [1.0, 2.0]}), schema)
    two = pd.DataFrame({"a": [1.0, 2.0]})
    assert AlphaPrecision().evaluate(two, one, schema).value is not None


def test_norms_of_features_at_the_domain_edge_do_not_overflow():
    # a value at 1e15 over a real range near 1e-100 is a feature of ~1e115: its square stays finite
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _norms(np.array([[3e115, 4e115], [3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(got, [5e115, 5.0, 0.0], rtol=1e-15)


def _tables():
    rng = np.random.default_rng(0)
    real = pd.DataFrame({"a": rng.normal(size=60), "b": rng.uniform(0, 5, 60), "c": rng.choice(["x", "y"], 60)})
    syn = pd.DataFrame({"a": rng.normal(0.3, 1, 45), "b": rng.uniform(0, 6, 45), "c": rng.choice(["x", "y"], 45)})
    return real, syn


SCHEMA = Schema(("a", "b", "c"), ("a", "b"), ("c",))


def _features(df, real):
    cols = [((df[c] - real[c].min()) / (real[c].max() - real[c].min())).to_numpy(float) for c in ("a", "b")]
    return np.column_stack(cols + [(df["c"] == v).to_numpy(float) for v in ("x", "y")])


@pytest.mark.parametrize("far", [False, True])
def test_metrics_equal_the_loop_reference_and_report_both_values(far):
    real, syn = _tables()
    if far:  # far beyond 2**40 ranges: the exact path of the neighbour search, still finite in float64
        syn.loc[7, "a"] = 1e15  # the value domain's bound
    x, y = _features(real, real), _features(syn, real)
    prec, cov = _loops(x, y)
    want_a = 1 - np.abs(ALPHAS - prec).sum() / ALPHAS.sum()
    want_b = 1 - np.abs(ALPHAS - cov).sum() / ALPHAS.sum()
    a = AlphaPrecision().evaluate(real, syn, SCHEMA)
    b = BetaRecall(n_jobs=1).evaluate(real, syn, SCHEMA)
    assert a.value == pytest.approx(want_a, abs=1e-12) and b.value == pytest.approx(want_b, abs=1e-12)
    assert a.details == {"beta_recall": pytest.approx(want_b, abs=1e-12)}
    assert b.details == {"alpha_precision": pytest.approx(want_a, abs=1e-12)}
    assert list(a.breakdown.columns) == ["alpha", "precision_curve", "coverage_curve"]
    np.testing.assert_allclose(a.breakdown["precision_curve"], prec, atol=1e-15)
    np.testing.assert_allclose(b.breakdown["coverage_curve"], cov, atol=1e-15)
    assert AlphaPrecision(n_jobs=2).n_jobs == 2


def test_n_jobs_is_checked():
    real, syn = _tables()
    with pytest.raises(TabmemError, match=r"^n_jobs must be a non-zero integer or None"):
        AlphaPrecision(n_jobs=0).evaluate(real, syn, SCHEMA)


def test_a_synthetic_value_far_beyond_a_tiny_real_range_is_evaluated():
    # (1e15 - min) / 3e-90 is ~3e104: finite inside the value domain, so the metric is computed
    real, syn = _tables()
    real["b"] = np.linspace(0.0, 3e-90, 60)
    syn["b"] = np.linspace(0.0, 3e-90, 45)
    syn.loc[4, "b"] = 1e15
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert 0.0 <= AlphaPrecision().evaluate(real, syn, SCHEMA).value <= 1.0


def test_a_synthetic_value_beyond_the_domain_is_refused_in_one_line():
    real, syn = _tables()
    syn.loc[4, "b"] = 1e308
    with pytest.raises(TabmemError, match=r"^synthetic table: column 'b' row 4 holds a value of magnitude 1e308, "):
        AlphaPrecision().evaluate(real, syn, SCHEMA)


def test_given_neighbours_are_used_as_given():
    # neighbours from elsewhere (the metric passes the blocked search's): real row 0 has its synthetic
    # neighbour beyond its nearest real row, row 1 on it; scikit-learn's would cover both
    x, y = np.array([[0.0], [1.0]]), np.array([[0.5]])
    out = alpha_beta_naive(x, y, neighbors=(np.array([1.0, 1.0]), np.array([1.5, 1.0]), np.array([0, 0])))
    # one synthetic row: its distance to the synthetic centre is 0 = every quantile, so C(a) = share covered
    np.testing.assert_array_equal(out["coverage_curve"], np.full(30, 0.5))
    assert alpha_beta_naive(x, y)["coverage_curve"][0] == 1.0


def test_near_duplicate_rows_use_exact_distances():
    # real rows (1, 1) and (1 - 3e-9, 1), a synthetic row 1e-9 from the first: the coverage decisions
    # rest on differences of 1e-9, below the rounding of a |x|^2 - 2 x.y + |y|^2 distance
    schema = Schema(("a", "b"), ("a", "b"), ())
    real = pd.DataFrame({"a": [0.0, 1.0, 1 - 3e-9, 0.5, 0.25], "b": [0.0, 1.0, 1.0, 0.5, 0.75]})
    syn = pd.DataFrame({"a": [1 - 1e-9, 0.3, 0.6], "b": [1.0, 0.2, 0.5]})
    x, y = real.to_numpy(), syn.to_numpy()  # ranges 1, minima 0: the features are the values
    prec, cov = _loops(x, y)
    res = AlphaPrecision().evaluate(real, syn, schema)
    np.testing.assert_array_equal(res.breakdown["coverage_curve"], cov)
    np.testing.assert_array_equal(res.breakdown["precision_curve"], prec)


def test_the_nearest_synthetic_row_on_the_far_side_of_the_features():
    # from real row (1, 0): synthetic A (-0.01, 0) is nearest (d^2 1.0201) although its features
    # point away from the query's (A.x < 0); B (0, 0.1581) and C (0, 0.1673) are farther.
    # The real row (0, 0.15) at d^2 1.0225 sits between: only A covers (1, 0)
    schema = Schema(("a", "b"), ("a", "b"), ())
    real = pd.DataFrame({"a": [1.0, 0.0, 0.5], "b": [0.0, 0.15, 1.0]})
    syn = pd.DataFrame({"a": [0.0, 0.0, -0.01], "b": [0.1581, 0.1673, 0.0]})
    x, y = real.to_numpy(), syn.to_numpy()
    prec, cov = _loops(x, y)
    res = BetaRecall().evaluate(real, syn, schema)
    np.testing.assert_array_equal(res.breakdown["coverage_curve"], cov)
    assert cov[-1] > 0  # row (1, 0) is covered through A
