"""Column Shapes: KS / TV building blocks and the Shape metric against hand-counted values.

Each expected number is worked out by hand from the definitions in ``tabmem.metrics.shape``
(KS = largest gap between the two empirical CDFs; TV = half the L1 gap between the category
frequencies; sdmetrics' 1e-6 real count for a synthetic-only category; 14-decimal rounding
below 2**52 only).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from tabmem.data.schema import Schema
from tabmem.metrics.shape import Shape, column_shapes, ks_complement, ks_statistic, total_variation, tv_complement


def test_ks_accepts_object_arrays_and_ignores_nan():
    # DataFrame.to_numpy() of a mixed frame gives object arrays of floats
    real = np.array([0.0, 1.0, np.nan], dtype=object)
    syn = np.array([1.0], dtype=object)
    # F_real = 1/2 at 0, F_syn = 0 there: gap 1/2
    assert ks_statistic(real, syn) == 0.5
    assert ks_complement(real, syn) == 0.5
    assert ks_statistic([0.0, 1.0], [1.0]) == 0.5


@pytest.mark.parametrize("empty_side", ["real", "synthetic"])
def test_ks_is_nan_when_either_side_has_no_values(empty_side):
    values, empty = np.array([1.0, 2.0]), np.array([np.nan])
    args = (empty, values) if empty_side == "real" else (values, empty)
    assert np.isnan(ks_statistic(*args))
    assert np.isnan(ks_complement(*args))


def test_ks_rounding_is_14_decimals_below_2_pow_52_and_none_above():
    # two distinct floats near 491 that agree to 14 decimals: sdmetrics' rounding makes them equal
    assert 491.1258716479309 != 491.125871647931
    assert ks_complement(np.array([491.1258716479309]), np.array([491.125871647931])) == 1.0
    # integers from 2**52 up are compared exactly: 14-decimal rounding would merge neighbours
    for a, b in ((7372220045040680.0, 7372220045040681.0), (4.52856302824409e24, 4.5285630282440907e24)):
        assert ks_complement(np.array([a]), np.array([b])) == 0.0
    # a huge value is kept (not dropped): one of two synthetic values beyond every real one
    assert ks_complement(np.array([1e300]), np.array([1e300, 1.0])) == 0.5


def test_total_variation_by_hand_counts():
    assert total_variation(["a"], ["b"]) == 1.0
    assert total_variation(["a"], ["a", "b"]) == 0.5  # p_r = (1, 0), p_s = (1/2, 1/2)
    assert total_variation([], ["a"]) == 0.5  # an empty side has all-zero frequencies
    assert total_variation(["a", "b"], []) == 0.5
    # categories compare by value and type: the integer 1 is not the string "1"
    assert total_variation([1, 2], ["1", "2"]) == 1.0
    assert total_variation([1, "1"], ["1"]) == 0.5
    assert total_variation(["1"], [1, "1"]) == 0.5


def test_tv_complement_ignores_missing_and_regularises_synthetic_only_categories():
    na = "<NA>"
    r = np.array(["a", "a", "b", na, na], dtype=object)
    s = np.array(["a", "b", na], dtype=object)
    # without NA: p_r = (2/3, 1/3), p_s = (1/2, 1/2) -> TV = 1/6
    assert tv_complement(r, s) == pytest.approx(1 - 1 / 6, abs=1e-15)
    # one synthetic-only category seen once: real count 1e-6 (also in the real total)
    r2 = np.array(["a"], dtype=object)
    s2 = np.array(["a", "b", "c", "c"], dtype=object)
    cr = np.array([1.0, 1e-6, 1e-6]) / 1.000002
    cs = np.array([1, 1, 2]) / 4
    assert tv_complement(r2, s2) == pytest.approx(1 - 0.5 * np.abs(cs - cr).sum(), abs=1e-15)
    # integers and strings are different categories
    assert tv_complement([1, 2], ["1", "2"]) == pytest.approx(0.0, abs=1e-5)
    assert tv_complement([1, "1"], ["1"]) == 0.5
    assert tv_complement(["1"], [1, "1"]) == pytest.approx(0.5, abs=1e-5)
    # categories seen only in the real table: p_s = (1, 0, 0), p_r = (1/3, 1/3, 1/3) -> TV 2/3
    assert tv_complement(["a", "b", "c"], ["a"]) == pytest.approx(1 / 3, abs=1e-15)
    assert tv_complement(["a"], ["a"]) == 1.0  # one value per side is enough


@pytest.mark.parametrize("real, syn", [(["<NA>"], ["a"]), (["a"], ["<NA>", "<NA>"]), ([], ["a"]), (["a"], [])], ids=str)
def test_tv_complement_is_nan_without_categories_on_a_side(real, syn):
    assert np.isnan(tv_complement(np.array(real, dtype=object), np.array(syn, dtype=object)))


SCHEMA = Schema(("n", "c"), ("n",), ("c",))


def test_shape_breakdown_and_value_by_hand():
    real = pd.DataFrame({"n": [1.0, 2.0, 3.0, np.nan], "c": ["x", "x", "y", "y"]})
    syn = pd.DataFrame({"n": [1.0, 2.0, 5.0, 6.0], "c": ["x", "y", "y", "y"]})
    res = Shape().evaluate(real, syn, SCHEMA)
    # n: F_real reaches 1 at 3 where F_syn = 1/2 -> KS 1/2; c: p_r = (1/2, 1/2), p_s = (1/4, 3/4) -> TV 1/4
    assert list(res.breakdown.columns) == ["column", "metric", "score"]
    assert res.breakdown["column"].tolist() == ["n", "c"]
    assert res.breakdown["metric"].tolist() == ["KSComplement", "TVComplement"]
    np.testing.assert_allclose(res.breakdown["score"].to_numpy(float), [0.5, 0.75], rtol=0, atol=1e-15)
    assert res.value == pytest.approx(0.625, abs=1e-15)
    assert res.details == {"n_columns_scored": 2}
    assert (res.name, res.goal, res.bounds) == ("shape", "maximize", (0.0, 1.0))
    table = column_shapes(real.assign(n=real["n"].astype(float)), syn, SCHEMA)
    assert table["metric"].tolist() == ["KSComplement", "TVComplement"]


def test_shape_of_a_table_without_columns_is_none():
    empty = pd.DataFrame(index=range(3))
    res = Shape().evaluate(empty, empty, Schema((), (), ()))
    assert res.value is None and res.details == {"n_columns_scored": 0}
    assert list(res.breakdown.columns) == ["column", "metric", "score"] and res.breakdown.empty


def test_shape_skips_a_column_with_no_values_and_is_none_without_any():
    real = pd.DataFrame({"n": [np.nan, np.nan], "c": ["x", "y"]})
    syn = pd.DataFrame({"n": [1.0, 2.0], "c": ["x", "x"]})
    res = Shape().evaluate(real, syn, SCHEMA)
    assert np.isnan(res.breakdown["score"].iloc[0])
    assert res.value == pytest.approx(0.5) and res.details["n_columns_scored"] == 1
    only_num = Schema(("n",), ("n",), ())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" warning either
        empty = Shape().evaluate(real[["n"]], syn[["n"]], only_num)
    assert empty.value is None and empty.details["n_columns_scored"] == 0
