"""C2ST features by hand: real-mean filling, boolean 0/1 with the real mode, one-hot of real categories."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.schema import Schema
from tabmem.metrics.base import prepare_tables
from tabmem.metrics.detection import detection_features

SCHEMA = Schema(("n", "b", "c"), ("n",), ("b", "c"))


def _features(real, syn, schema=SCHEMA):
    prep, _ = prepare_tables(real, syn, schema, nan="match")
    return detection_features(prep.encoder, prep.real, prep.synthetic)


def test_features_by_hand():
    real = pd.DataFrame({"n": [1.0, np.nan, 3.0, 5.0], "b": [True, False, True, None], "c": ["y", "x", None, "y"]})
    syn = pd.DataFrame({"n": [np.nan, 2.0, 4.0], "b": [None, True, False], "c": ["z", "x", "y"]})
    xr, xs = _features(real, syn)
    # columns: n (NaN -> real mean 3), b (True 1 / False 0, NA -> real mode 1), one-hot c over <NA>, x, y
    np.testing.assert_array_equal(xr, [[1, 1, 0, 0, 1], [3, 0, 0, 1, 0], [3, 1, 1, 0, 0], [5, 1, 0, 0, 1]])
    np.testing.assert_array_equal(xs, [[3, 1, 0, 0, 0], [2, 1, 0, 1, 0], [4, 0, 0, 0, 1]])  # unseen 'z': zeros


# the TableEncoder fitted on an all-missing real column warns (data/encoding.py; reported, not a metrics module)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_mode_ties_take_the_smaller_value_and_empty_columns_fall_back_to_zero():
    real = pd.DataFrame({"n": [np.nan, np.nan], "b": [True, False], "c": ["x", "x"]})
    syn = pd.DataFrame({"n": [7.0, np.nan], "b": [None, True], "c": ["x", "x"]})
    xr, xs = _features(real, syn)
    np.testing.assert_array_equal(xr, [[0, 1, 1], [0, 0, 1]])  # n all missing in real: filled with 0
    np.testing.assert_array_equal(xs, [[7, 0, 1], [0, 1, 1]])  # b: NA -> the mode of {1, 0}, which is 0


def test_a_column_with_no_known_real_value_is_one_hot_not_boolean():
    schema = Schema(("b",), (), ("b",))
    real = pd.DataFrame({"b": [None, None]})
    syn = pd.DataFrame({"b": [True, None]})
    xr, xs = _features(real, syn, schema)
    np.testing.assert_array_equal(xr, [[1], [1]])  # the only real category is <NA>
    np.testing.assert_array_equal(xs, [[0], [1]])


def test_only_numerical_or_only_categorical_columns():
    num = Schema(("n",), ("n",), ())
    xr, xs = _features(pd.DataFrame({"n": [1.0, 2.0]}), pd.DataFrame({"n": [3.0]}), num)
    np.testing.assert_array_equal(xr, [[1], [2]])
    np.testing.assert_array_equal(xs, [[3]])
    cat = Schema(("c",), (), ("c",))
    xr, xs = _features(pd.DataFrame({"c": ["x", "y"]}), pd.DataFrame({"c": ["y", "w", "x"]}), cat)
    np.testing.assert_array_equal(xr, [[1, 0], [0, 1]])
    np.testing.assert_array_equal(xs, [[0, 1], [0, 0], [1, 0]])


def test_a_schema_without_columns_gives_empty_feature_matrices():
    empty = pd.DataFrame(index=range(3))
    xr, xs = _features(empty, empty.iloc[:2], Schema((), (), ()))
    assert xr.shape == (3, 0) and xs.shape == (2, 0)
