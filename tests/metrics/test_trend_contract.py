"""Column Pair Trends against a pair-by-pair reference written from the documented rules.

The reference (``_reference_pairs``) loops over column pairs with scipy's ``pearsonr``, counted
joint frequencies (``collections.Counter``) and scipy's Cramér's V; numerical columns are binned by counting the equal-width
edges at or below each value (``np.digitize``'s rule, written out), NaN in the last bin.
"""

from __future__ import annotations

import warnings
from collections import Counter
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr
from scipy.stats.contingency import association

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics.base import prepare_tables
from tabmem.metrics.trend import Trend, _constant, _correlations, _pearson, column_pair_trends, cramers_v, discretize


def _edges(v: np.ndarray, n_bins: int) -> np.ndarray:
    v = v[~np.isnan(v)]
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, n_bins + 1)


def _bins(v: np.ndarray, edges: np.ndarray) -> list:
    return [len(edges) if np.isnan(x) else int((edges <= x).sum()) for x in v]


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 2 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return np.nan
    return float(pearsonr(x[ok], y[ok])[0])


def _is_constant(v: np.ndarray) -> bool:
    v = v[~np.isnan(v)]
    return v.size > 0 and (v == v[0]).all()


def _reference_pairs(real, syn, schema, corr_t=0.0, assoc_t=0.0, binning="per_table", n_bins=10):
    codes_r, codes_s = {}, {}
    for c in schema.columns:
        if schema.kind(c) == "numerical":
            r, s = real[c].to_numpy(float), syn[c].to_numpy(float)
            if binning == "per_table":
                codes_r[c], codes_s[c] = _bins(r, _edges(r, n_bins)), _bins(s, _edges(s, n_bins))
            else:
                e = _edges(r, n_bins)
                e[0], e[-1] = -np.inf, np.inf
                codes_r[c], codes_s[c] = _bins(r, e), _bins(s, e)
        else:
            codes_r[c] = real[c].fillna("<NA>").astype(str).tolist()
            codes_s[c] = syn[c].fillna("<NA>").astype(str).tolist()
    out = []
    for a, b in combinations(schema.columns, 2):
        if schema.kind(a) == "numerical" and schema.kind(b) == "numerical":
            ra, rb, sa, sb = (t[c].to_numpy(float) for t in (real, syn) for c in (a, b))
            if any(_is_constant(v) for v in (ra, rb, sa, sb)):
                rho_r = rho_s = np.nan
            else:
                rho_r, rho_s = _rho(ra, rb), _rho(sa, sb)
            if corr_t > 0 and not np.isnan(rho_r) and abs(rho_r) <= corr_t:
                score, rho_s = np.nan, np.nan
            else:
                score = 1 - abs(rho_r - rho_s) / 2
            meets = bool(np.isfinite(rho_r) and (corr_t <= 0 or abs(rho_r) > corr_t) and np.isfinite(score))
            out.append((a, b, "CorrelationSimilarity", score, rho_r, rho_s, np.nan, meets))
            continue
        jr, js = Counter(zip(codes_r[a], codes_r[b])), Counter(zip(codes_s[a], codes_s[b]))
        keys = set(jr) | set(js)
        rows_a, cols_b = sorted({k[0] for k in jr}, key=str), sorted({k[1] for k in jr}, key=str)
        t = np.array([[jr[(u, w)] for w in cols_b] for u in rows_a])
        v = float(association(t, method="cramer")) if min(t.shape) >= 2 else np.nan
        if assoc_t > 0 and not (np.isfinite(v) and v > assoc_t):
            out.append((a, b, "ContingencySimilarity", np.nan, np.nan, np.nan, v, False))
        else:
            score = 1 - 0.5 * sum(abs(jr[k] / len(real) - js[k] / len(syn)) for k in keys)
            out.append((a, b, "ContingencySimilarity", score, np.nan, np.nan, v, True))
    return out


COLUMNS = ["column_1", "column_2", "metric", "score", "real_correlation", "synthetic_correlation"]
COLUMNS += ["real_association", "meets_threshold"]


def _tables(seed: int, nan: bool):
    rng = np.random.default_rng(seed)
    n, m = 90, 70
    real = pd.DataFrame({"a": rng.normal(size=n), "k": rng.choice(["p", "q", "r"], n), "j": rng.choice(["u", "v"], n)})
    real["b"] = 0.9 * real["a"] + rng.normal(0, 0.4, n)
    real["w"] = rng.normal(size=n) * 1e-3 - real["a"] * 0.2
    real.loc[real["k"] == "p", "j"] = "u"  # a strong association
    syn = real.sample(m, replace=True, random_state=seed).reset_index(drop=True)
    syn["a"] = syn["a"] + rng.normal(0, 0.5, m)
    syn.loc[:4, "k"] = "new"  # a category the real table lacks
    if nan:
        real.loc[rng.random(n) < 0.15, "a"] = np.nan
        syn.loc[rng.random(m) < 0.2, "b"] = np.nan
        real.loc[rng.random(n) < 0.1, "k"] = None
    schema = Schema(("a", "k", "b", "j", "w"), ("a", "b", "w"), ("k", "j"))
    return real, syn, schema


def _check(res, ref):
    table = res.breakdown
    assert list(table.columns) == COLUMNS
    assert len(table) == len(ref)
    for row, want in zip(table.itertuples(index=False), ref):
        assert tuple(row)[:3] == want[:3]
        np.testing.assert_allclose(np.array(row[3:7], float), np.array(want[3:7], float), rtol=0, atol=1e-12)
        assert bool(row[7]) is want[7]


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("binning", ["per_table", "real_edges"])
def test_every_pair_equals_the_reference(nan, binning):
    real, syn, schema = _tables(3, nan)
    res = Trend(binning=binning).evaluate(real, syn, schema)
    ref = _reference_pairs(real, syn, schema, binning=binning)
    _check(res, ref)
    scores = [r[3] for r in ref if r[7]]
    assert res.value == pytest.approx(np.mean(scores), abs=1e-12)
    assert res.details["n_pairs_scored"] == len(scores) == 10 and res.details["n_pairs_total"] == 10
    assert res.details["pair_filter"] == "all"
    assert (res.details["real_correlation_threshold"], res.details["real_association_threshold"]) == (0.0, 0.0)


@pytest.mark.parametrize("nan", [False, True])
def test_sdmetrics_pair_filter_equals_the_reference(nan):
    real, syn, schema = _tables(4, nan)
    res = Trend(pair_filter="sdmetrics").evaluate(real, syn, schema)
    ref = _reference_pairs(real, syn, schema, corr_t=0.5, assoc_t=0.3)
    _check(res, ref)
    kept = [r[3] for r in ref if r[7]]
    assert 0 < len(kept) < 10  # the filter kept some pairs and dropped others
    assert res.value == pytest.approx(np.mean(kept), abs=1e-12) and res.details["n_pairs_scored"] == len(kept)
    assert (res.details["real_correlation_threshold"], res.details["real_association_threshold"]) == (0.5, 0.3)


def test_thresholds_are_strict_and_explicit_values_override_the_filter():
    real, syn, schema = _tables(5, False)
    base = Trend().evaluate(real, syn, schema).breakdown
    corr = base.loc[(base["column_1"] == "a") & (base["column_2"] == "b"), "real_correlation"].iloc[0]
    assoc = base.loc[(base["column_1"] == "k") & (base["column_2"] == "j"), "real_association"].iloc[0]
    at = Trend(real_correlation_threshold=abs(corr), real_association_threshold=assoc).evaluate(real, syn, schema)
    ref = _reference_pairs(real, syn, schema, corr_t=abs(corr), assoc_t=assoc)
    _check(at, ref)
    t = at.breakdown.set_index(["column_1", "column_2"])
    assert not t.loc[("a", "b"), "meets_threshold"] and np.isnan(t.loc[("a", "b"), "score"])  # |rho| == t: out
    assert not t.loc[("k", "j"), "meets_threshold"] and np.isnan(t.loc[("k", "j"), "score"])  # V == t: out
    below = Trend(
        pair_filter="sdmetrics", real_correlation_threshold=abs(corr) - 1e-9, real_association_threshold=assoc - 1e-9
    ).evaluate(real, syn, schema)
    b = below.breakdown.set_index(["column_1", "column_2"])
    assert b.loc[("a", "b"), "meets_threshold"] and b.loc[("k", "j"), "meets_threshold"]
    assert below.details["pair_filter"] == "sdmetrics"
    assert below.details["real_correlation_threshold"] == abs(corr) - 1e-9


def test_n_bins_changes_the_binning_as_the_reference_does():
    real, syn, schema = _tables(6, True)
    for n_bins in (1, 3):  # one bin: every value but the maximum and NaN in bin 1
        res = Trend(n_bins=n_bins).evaluate(real, syn, schema)
        _check(res, _reference_pairs(real, syn, schema, n_bins=n_bins))
        res = Trend(n_bins=n_bins, binning="real_edges").evaluate(real, syn, schema)
        _check(res, _reference_pairs(real, syn, schema, binning="real_edges", n_bins=n_bins))


def test_constant_and_empty_columns_give_nan_correlations_and_no_score():
    real = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [2.0, 2.0, 2.0, np.nan], "c": [1.0, 3.0, 2.0, 5.0]})
    syn = pd.DataFrame({"a": [1.0, 2.0, 3.0, 5.0], "b": [1.0, 2.0, 3.0, 4.0], "c": [4.0, 3.0, 1.0, 2.0]})
    schema = Schema(("a", "b", "c"), ("a", "b", "c"), ())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = Trend().evaluate(real, syn, schema)
    t = res.breakdown.set_index(["column_1", "column_2"])
    # b is constant in the real table: both correlations of its pairs are NaN, the pair is not scored
    for pair in (("a", "b"), ("b", "c")):
        assert np.isnan(t.loc[pair, "real_correlation"]) and np.isnan(t.loc[pair, "synthetic_correlation"])
        assert not t.loc[pair, "meets_threshold"]
    rho_r, rho_s = pearsonr(real["a"], real["c"])[0], pearsonr(syn["a"], syn["c"])[0]
    assert t.loc[("a", "c"), "score"] == pytest.approx(1 - abs(rho_r - rho_s) / 2, abs=1e-12)
    assert res.value == pytest.approx(1 - abs(rho_r - rho_s) / 2, abs=1e-12)
    assert res.details["n_pairs_scored"] == 1
    assert _constant(np.array([np.nan, 3.0, 3.0])) and not _constant(np.array([np.nan, np.nan]))
    assert not _constant(np.array([3.0, 4.0, 3.0])) and _constant(np.array([7.0]))


def test_trend_value_is_none_when_no_pair_is_scored():
    real = pd.DataFrame({"a": [1.0, 1.0, 1.0], "b": [1.0, 2.0, 3.0]})
    res = Trend().evaluate(real, real, Schema(("a", "b"), ("a", "b"), ()))
    assert res.value is None and res.details["n_pairs_scored"] == 0 and res.details["n_pairs_total"] == 1


def test_pearson_and_correlation_matrix_equal_scipy_with_missing_values():
    rng = np.random.default_rng(8)
    num = rng.normal(size=(40, 3))
    num[:, 1] += num[:, 0]
    num[:, 2] -= 2 * num[:, 0]
    holes = num.copy()
    holes[rng.random((40, 3)) < 0.2] = np.nan
    for m in (num, holes):
        corr = _correlations(m)
        for i, j in combinations(range(3), 2):
            assert corr[i, j] == corr[j, i] == pytest.approx(_rho(m[:, i], m[:, j]), abs=1e-12)
            assert _pearson(m[:, i], m[:, j]) == pytest.approx(_rho(m[:, i], m[:, j]), abs=1e-12)
        assert np.isnan(np.diag(corr)).all() if m is holes else np.allclose(np.diag(corr), 1.0)
    # fewer than two complete rows, or no spread: NaN
    assert np.isnan(_pearson(np.array([1.0, np.nan, 3.0]), np.array([np.nan, 2.0, 4.0])))
    assert np.isnan(_pearson(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])))
    # two complete rows are enough; perfect (anti-)correlation is exactly +-1
    assert _pearson(np.array([1.0, 2.0, np.nan]), np.array([5.0, 3.0, 1.0])) == -1.0
    assert _pearson(np.array([1.0, 2.0, 4.0]), np.array([2.0, 4.0, 8.0])) == 1.0
    # a constant column in the matrix path is NaN, not an error or a warning
    flat = np.column_stack([num[:, 0], np.full(40, 2.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(_correlations(flat)[0, 1])
        assert np.isnan(_correlations(np.column_stack([flat, np.full(40, np.nan)]))[0, 2])


def test_correlations_of_tiny_values_do_not_underflow():
    rng = np.random.default_rng(9)
    base = rng.normal(size=(30, 2))
    base[:, 1] += base[:, 0]
    want = pearsonr(base[:, 0], base[:, 1])[0]
    tiny = base * 1e-300  # squares underflow to 0 without the power-of-two rescaling
    assert _correlations(tiny)[0, 1] == pytest.approx(want, abs=1e-12)
    tiny_holes = tiny.copy()
    tiny_holes[3, 0] = np.nan
    ok = ~np.isnan(tiny_holes[:, 0])
    assert _pearson(tiny_holes[:, 0], tiny_holes[:, 1]) == pytest.approx(
        pearsonr(base[ok, 0], base[ok, 1])[0], abs=1e-12
    )


def test_discretize_counts_edges_at_or_below_each_value():
    v = np.array([0.0, 0.5, 1.0, 9.99, 10.0, np.nan])
    assert discretize(v).tolist() == _bins(v, _edges(v, 10)) == [1, 1, 2, 10, 11, 11]
    assert discretize(v, n_bins=2).tolist() == [1, 1, 1, 2, 3, 3]
    edges = np.array([-np.inf, 5.0, np.inf])
    assert discretize(v, edges).tolist() == [1, 1, 1, 2, 2, 3]


def test_column_pair_trends_defaults_score_every_pair_with_ten_bins_per_table():
    real, syn, schema = _tables(10, True)
    prep, _ = prepare_tables(real, syn, schema, nan="match")
    table = column_pair_trends(prep.real, prep.synthetic, schema)
    assert table["meets_threshold"].all() and len(table) == 10
    pd.testing.assert_frame_equal(table, Trend().evaluate(real, syn, schema).breakdown)
    _check(Trend().evaluate(real, syn, schema), _reference_pairs(real, syn, schema))


def test_discretize_accepts_object_arrays_and_cramers_v_of_one_row_is_nan_without_warning():
    assert discretize(np.array([0.0, 1.0, np.nan], dtype=object)).tolist() == [1, 11, 11]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(cramers_v(np.array([[3, 4]])))
        assert np.isnan(cramers_v(np.array([[0, 0], [0, 0]])))


def test_a_single_column_has_no_pairs():
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    res = Trend().evaluate(df, df, Schema(("a",), ("a",), ()))
    assert res.value is None and res.details["n_pairs_total"] == 0 and res.details["n_pairs_scored"] == 0


@pytest.mark.parametrize(
    "params, message",
    [
        ({"pair_filter": "some"}, r"^pair_filter must be 'all' or 'sdmetrics', got 'some'$"),
        ({"binning": "real"}, r"^binning must be 'per_table' or 'real_edges', got 'real'$"),
        ({"n_bins": 0}, r"^n_bins must be a positive integer, got 0$"),
        ({"n_bins": True}, r"^n_bins must be a positive integer, got True$"),
        ({"n_bins": 2.0}, r"^n_bins must be a positive integer, got 2.0$"),
        ({"real_correlation_threshold": 1.5}, r"^real_correlation_threshold must be between 0 and 1, got 1.5$"),
        ({"real_association_threshold": -0.1}, r"^real_association_threshold must be between 0 and 1, got -0.1$"),
    ],
)
def test_trend_options_are_checked_with_one_clear_message(params, message):
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"]})
    with pytest.raises(TabmemError, match=message):
        Trend(**params).evaluate(df, df, Schema(("a", "b"), ("a",), ("b",)))


def test_trend_thresholds_at_the_bounds_are_accepted():
    assert Trend(real_correlation_threshold=1, real_association_threshold=0).thresholds() == (1.0, 0.0)
    assert Trend(real_correlation_threshold=0, real_association_threshold=1).thresholds() == (0.0, 1.0)
    assert Trend(n_bins=np.int64(3)).thresholds() == (0.0, 0.0)
    assert Trend(pair_filter="sdmetrics").thresholds() == (0.5, 0.3)


@pytest.mark.parametrize(
    "x, slope, path",
    [
        ([-0.5, 0.2, -1.0, -0.2, -0.2], 7.0, "pair"),
        ([0.5, 0.2, 0.4, -0.7, -0.1], -3.0, "pair"),
        ([-0.7, 0.4, 0.9, 0.1, -0.7], 7.0, "matrix"),
        ([0.5, 0.2, 0.4, -0.7, -0.1], -3.0, "matrix"),
    ],
)
def test_exact_linear_relations_give_correlations_of_exactly_one(x, slope, path):
    # for these values the rounded formula lands just outside [-1, 1]; a correlation never does
    x = np.array(x)
    y = slope * x + 1
    rho = _pearson(x, y) if path == "pair" else _correlations(np.column_stack([x, y]))[0, 1]
    assert rho == np.sign(slope)


def test_a_zero_real_correlation_is_scored_when_every_pair_counts():
    real = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, -1.0, -1.0, 1.0]})  # rho exactly 0
    syn = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 2.0, 3.0, 4.0]})  # rho 1
    res = Trend().evaluate(real, syn, Schema(("a", "b"), ("a", "b"), ()))
    assert res.breakdown["real_correlation"].iloc[0] == 0.0
    assert res.value == pytest.approx(0.5, abs=1e-12) and res.details["n_pairs_scored"] == 1
