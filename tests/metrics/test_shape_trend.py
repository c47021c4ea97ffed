"""Shape and Trend against sdmetrics 0.32 (QualityReport and its single metrics).

The comparisons with scipy and hand computations run in the default suite: test_shape_trend_scipy.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from metric_tables import perturbed_resample, sdmetrics_metadata

from reference_libs import require
from tabmem.data.schema import Schema
from tabmem.metrics.shape import Shape, ks_complement, tv_complement
from tabmem.metrics.trend import Trend, discretize

pytestmark = pytest.mark.reference


@pytest.fixture(scope="module", autouse=True)
def sdmetrics():
    """sdmetrics pins pandas < 3: imported only where these tests run (CI's reference virtualenv)."""
    return require("sdmetrics")


def _sdmetrics_scores(real, syn, schema, all_pairs: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from sdmetrics.reports.single_table import QualityReport

    rep = QualityReport()
    if all_pairs:
        rep.real_correlation_threshold = 0
        rep.real_association_threshold = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep.generate(real, syn, sdmetrics_metadata(schema), verbose=False)
    props = rep.get_properties().set_index("Property")["Score"]
    return props["Column Shapes"], props["Column Pair Trends"], rep.get_details("Column Pair Trends")


def _compare(real, syn, schema):
    for all_pairs, pair_filter in ((True, "all"), (False, "sdmetrics")):
        ref_shape, ref_trend, ref_details = _sdmetrics_scores(real, syn, schema, all_pairs)
        shape = Shape().evaluate(real, syn, schema)
        trend = Trend(pair_filter=pair_filter).evaluate(real, syn, schema)
        assert shape.value == pytest.approx(ref_shape, abs=1e-9)
        if np.isnan(ref_trend):
            assert trend.value is None
        else:
            assert trend.value == pytest.approx(ref_trend, abs=1e-9)
        contributing = ref_details["Meets Threshold?"].astype("boolean").fillna(False) & ref_details["Score"].notna()
        assert trend.details["n_pairs_scored"] == int(contributing.sum())
        merged = ref_details.merge(trend.breakdown, left_on=["Column 1", "Column 2"], right_on=["column_1", "column_2"])
        assert len(merged) == len(ref_details) == len(trend.breakdown)
        both = merged["Score"].notna() & merged["score"].notna()
        assert (merged["Score"].isna() == merged["score"].isna()).all()
        np.testing.assert_allclose(merged.loc[both, "Score"], merged.loc[both, "score"], atol=1e-9)


@pytest.mark.parametrize("dataset", ["adult", "shoppers"])
def test_quality_report_matches_sdmetrics_on_paper_datasets_subsample(dataset, request):
    train, _, schema = request.getfixturevalue(dataset)
    real = train.sample(2000, random_state=3).reset_index(drop=True)
    syn = perturbed_resample(real, schema, seed=4)
    _compare(real, syn, schema)


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["adult", "shoppers"])
def test_quality_report_matches_sdmetrics_full_size(dataset, request):
    train, _, schema = request.getfixturevalue(dataset)
    syn = perturbed_resample(train, schema, seed=5)
    _compare(train, syn, schema)


def test_missing_values_constant_columns_and_unseen_categories_match_sdmetrics():
    rng = np.random.default_rng(0)
    n = 400
    real = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n) * 3 + 1,
            "e": rng.normal(size=n),
            "const": np.ones(n),
            "c": rng.choice(["x", "y", "z"], n).astype(object),
            "d": rng.choice(["p", "q"], n).astype(object),
        }
    )
    real["e"] = real["a"] * 2 + rng.normal(size=n) * 0.5  # a correlated pair survives the sdmetrics filter
    real.loc[rng.random(n) < 0.1, "a"] = np.nan
    real.loc[rng.random(n) < 0.05, "c"] = np.nan
    syn = real.sample(300, replace=True, random_state=1).reset_index(drop=True)
    syn["b"] = syn["b"] + rng.normal(size=300)
    syn.loc[:9, "c"] = "w"  # category never seen in the real table
    syn.loc[rng.random(300) < 0.2, "b"] = np.nan
    schema = Schema(("a", "b", "e", "const", "c", "d"), ("a", "b", "e", "const"), ("c", "d"))
    _compare(real, syn, schema)


def test_ks_complement_equals_sdmetrics():
    from sdmetrics.single_column import KSComplement

    rng = np.random.default_rng(1)
    for _ in range(20):
        x = np.round(rng.normal(size=rng.integers(1, 300)), rng.integers(0, 3))
        y = np.round(rng.normal(0.3, 1.2, size=rng.integers(1, 300)), rng.integers(0, 3))
        assert ks_complement(x, y) == pytest.approx(KSComplement.compute(pd.Series(x), pd.Series(y)), abs=1e-12)


def test_tv_complement_regularisation_equals_sdmetrics():
    from sdmetrics.single_column import TVComplement

    r = np.array(["a"] * 5 + ["b"] * 3, dtype=object)
    s = np.array(["a", "c", "c", "b"], dtype=object)
    assert tv_complement(r, s) == pytest.approx(TVComplement.compute(pd.Series(r), pd.Series(s)), abs=1e-15)


def test_discretize_is_sdmetrics_binning():
    from sdmetrics.reports.single_table._properties.column_pair_trends import ColumnPairTrends

    rng = np.random.default_rng(2)
    v = rng.exponential(size=500)
    v[::17] = np.nan
    ref, _ = ColumnPairTrends()._discretize_column("v", pd.Series(v))
    np.testing.assert_array_equal(discretize(v), ref)
    assert discretize(v)[np.nanargmax(v)] == 11  # the maximum lands in an 11th bin
    assert discretize(v)[0 if np.isnan(v[0]) else 17] == 11  # so does NaN


def test_unified_sdmetrics_quality_report_gives_the_same_numbers(adult):
    from sdmetrics.reports import QualityReport as UnifiedQualityReport

    train, _, schema = adult
    real = train.sample(1500, random_state=9).reset_index(drop=True)
    syn = perturbed_resample(real, schema, seed=10)
    rep = UnifiedQualityReport()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep.generate({"t": real}, {"t": syn}, {"tables": {"t": sdmetrics_metadata(schema)}}, verbose=False)
    props = rep.get_properties().set_index("Property")["Score"]
    trend = Trend(pair_filter="sdmetrics").evaluate(real, syn, schema)
    assert Shape().evaluate(real, syn, schema).value == pytest.approx(props["Column Shapes"], abs=1e-9)
    assert trend.value == pytest.approx(props["Column Pair Trends"], abs=1e-9)
    details = rep.get_details("Column Pair Trends")
    assert trend.details["n_pairs_scored"] == int(details["Meets Threshold?"].astype("boolean").fillna(False).sum())
