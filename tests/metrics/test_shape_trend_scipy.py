"""Shape and Trend building blocks against scipy and hand computations (default suite, pandas 3).

The comparisons with sdmetrics itself need pandas < 3 and run in CI's reference virtualenv
(test_shape_trend.py, ``-m reference``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp
from scipy.stats.contingency import association

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics.shape import Shape, ks_complement, ks_statistic, total_variation, tv_complement
from tabmem.metrics.trend import Trend, cramers_v


def test_ks_equals_scipy():
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = np.round(rng.normal(size=rng.integers(1, 300)), rng.integers(0, 3))
        y = np.round(rng.normal(0.3, 1.2, size=rng.integers(1, 300)), rng.integers(0, 3))
        assert ks_statistic(x, y) == pytest.approx(ks_2samp(x, y).statistic, abs=1e-12)
        assert ks_complement(x, y) == pytest.approx(1 - ks_2samp(x, y).statistic, abs=1e-12)
    assert np.isnan(ks_statistic(np.array([np.nan]), np.array([1.0])))


def test_total_variation_by_hand():
    r = np.array(["a"] * 5 + ["b"] * 3, dtype=object)
    s = np.array(["a", "c", "c", "b"], dtype=object)
    # p_r = (5/8, 3/8, 0), p_s = (1/4, 1/4, 1/2)
    assert total_variation(r, s) == pytest.approx(0.5 * (3 / 8 + 1 / 8 + 1 / 2))
    assert tv_complement(r, r) == pytest.approx(1.0)


def test_cramers_v_equals_scipy():
    rng = np.random.default_rng(3)
    for _ in range(10):
        t = rng.integers(0, 30, size=(rng.integers(2, 6), rng.integers(2, 6)))
        t[t.sum(axis=1) == 0, 0] = 1
        t[:, t.sum(axis=0) == 0] = 1
        assert cramers_v(t) == pytest.approx(association(t, method="cramer"), abs=1e-12)
    assert np.isnan(cramers_v(np.array([[3, 4]])))


def test_trend_options_are_validated():
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"]})
    schema = Schema(("a", "b"), ("a",), ("b",))
    with pytest.raises(TabmemError, match="pair_filter"):
        Trend(pair_filter="some").evaluate(df, df, schema)
    with pytest.raises(TabmemError, match="real_correlation_threshold"):
        Trend(real_correlation_threshold=2).evaluate(df, df, schema)
    res = Trend(binning="real_edges").evaluate(df, df, schema)
    assert res.value == pytest.approx(1.0)
    assert Shape().evaluate(df, df, schema).value == pytest.approx(1.0)
