"""Dtype restoration: a validated table given back in its recorded dtypes, column by column.

The round trip ``restore_dtypes(validate(df).data, ...) == df`` is the specification: what validation
turns into floats and canonical strings comes back in the user's dtype, missing values included
(pandas 3 ``str``, nullable ``Int``/``UInt``/``Float``/``boolean``, ``category`` levels and order).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.dtypes import category_dtypes, restore_categorical, restore_dtypes, restore_numerical
from tabmem.data.schema import NA_CATEGORY, Schema, validate

PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3

# (column, kind): the value of each column and the dtype it must come back in
CATEGORICAL = {
    "str": pd.Series(["a", "b", "a", "c"], dtype="str"),
    "str_na": pd.Series(["a", None, "b", "a"], dtype="str"),
    "string_na": pd.Series(["x", pd.NA, "y", "x"], dtype="string"),
    "object_na": pd.Series(["u", None, "v", "u"], dtype=object),
    "bool": pd.Series([True, False, True, True]),
    "boolean": pd.Series([True, False, True, False], dtype="boolean"),
    "boolean_na": pd.Series([True, None, False, True], dtype="boolean"),
    "int32": pd.Series([1, 2, 1, 3], dtype="int32"),
    "int64_na": pd.Series([1, None, 2, 1], dtype="Int64"),
    "UInt8": pd.Series([1, 2, 250, 1], dtype="UInt8"),
    "float_cat": pd.Series([0.5, 1.0, np.nan, 0.5]),
    "category_int": pd.Series(pd.Categorical([3, 1, 3, 2], categories=[3, 2, 1, 0], ordered=True)),
    "category_str_na": pd.Series(pd.Categorical(["lo", None, "hi", "lo"], categories=["lo", "mid", "hi"])),
}
NUMERICAL = {
    "int64": pd.Series([10, -3, 7, 1_000_000], dtype="int64"),
    "int16": pd.Series([10, -3, 7, 300], dtype="int16"),
    "Int64": pd.Series([10, -3, 7, 8], dtype="Int64"),
    "float64": pd.Series([0.1, 2.5, -1e15, 3.0]),  # -1e15: the value domain's bound
    "Float64_na": pd.Series([0.1, None, 2.0, 3.5], dtype="Float64"),
}


def _table() -> tuple[pd.DataFrame, Schema]:
    df = pd.DataFrame({**CATEGORICAL, **NUMERICAL})
    return df, Schema.infer(df, categorical=list(CATEGORICAL), numerical=list(NUMERICAL))


def _round_trip(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    vt = validate(df, schema, name="training", nan="match")
    return restore_dtypes(vt.data, schema, vt.dtypes, category_dtypes=category_dtypes(vt))


@pytest.mark.parametrize("column", [*CATEGORICAL, *NUMERICAL])
def test_round_trip_gives_back_the_training_column(column):
    df, schema = _table()
    back = _round_trip(df, schema)[column]
    pd.testing.assert_series_equal(back, df[column], check_exact=True)


def test_round_trip_of_the_whole_table_and_category_levels():
    df, schema = _table()
    back = _round_trip(df, schema)
    pd.testing.assert_frame_equal(back, df, check_exact=True)
    assert back["category_int"].cat.categories.tolist() == [3, 2, 1, 0] and back["category_int"].cat.ordered
    assert back["category_str_na"].isna().tolist() == [False, True, False, False]


def test_category_levels_are_recorded_from_the_table_as_given():
    df, schema = _table()
    vt = validate(df, schema, nan="match")
    assert (
        category_dtypes(vt)
        == category_dtypes(df)
        == {
            "category_int": {"categories": [3, 2, 1, 0], "ordered": True},
            "category_str_na": {"categories": ["lo", "mid", "hi"], "ordered": False},
        }
    )
    assert vt.dtypes["str"] == ("str" if PANDAS_3 else "object") and vt.dtypes["boolean_na"] == "boolean"


# ------------------------------------------------------------------ generated values the training column never held
@pytest.mark.parametrize(
    ("dtype", "values", "expected"),
    [
        # numpy integers: rounded, clipped to the dtype's range
        ("int64", [1.4, 2.6, -0.5], pd.array([1, 3, 0], dtype="int64")),
        ("uint8", [300.0, -5.0, 7.2], pd.array([255, 0, 7], dtype="uint8")),
        ("int16", [1e9, -1e9, 1.0], pd.array([32767, -32768, 1], dtype="int16")),
        # a value that is not finite cannot be an integer: the column stays float64
        ("int64", [1.0, np.nan], np.array([1.0, np.nan])),
        # nullable integers: NaN is <NA>
        ("Int64", [1.4, np.nan], pd.array([1, None], dtype="Int64")),
        ("UInt8", [-3.0, 400.0], pd.array([0, 255], dtype="UInt8")),
        # floats stay float64 (not rounded to the training precision)
        ("float32", [0.1, 0.2], np.array([0.1, 0.2])),
        ("Float64", [0.5, np.nan], pd.array([0.5, None], dtype="Float64")),
        ("object", [0.5, 2.0], np.array([0.5, 2.0])),
    ],
)
def test_restore_numerical(dtype, values, expected):
    out = pd.Series(restore_numerical(np.array(values), dtype))
    pd.testing.assert_series_equal(out, pd.Series(expected), check_exact=True)


@pytest.mark.parametrize(
    ("dtype", "values", "expected_dtype", "expected"),
    [
        # a missing value where training had none: the nullable dtype of the same kind and width
        ("bool", ["True", NA_CATEGORY], "boolean", [True, None]),
        ("int32", ["3", NA_CATEGORY], "Int32", [3, None]),
        ("uint16", ["3", NA_CATEGORY], "UInt16", [3, None]),
        ("float64", ["0.5", NA_CATEGORY], "float64", [0.5, None]),
        ("str" if PANDAS_3 else "object", ["a", NA_CATEGORY], "str" if PANDAS_3 else "object", ["a", None]),
        ("string", ["a", NA_CATEGORY], "string", ["a", None]),
        ("object", ["a", NA_CATEGORY], "object", ["a", None]),
        ("datetime64[us]", ["2020-01-02T00:00:00", NA_CATEGORY], "datetime64[us]", [pd.Timestamp("2020-01-02"), None]),
        ("category", ["b", "a"], "category", ["b", "a"]),  # levels not recorded (format-1 model): the values
        ("not a dtype", ["a"], "object", ["a"]),
    ],
)
def test_restore_categorical(dtype, values, expected_dtype, expected):
    out = pd.Series(restore_categorical(np.array(values, dtype=object), dtype))
    assert str(out.dtype) == expected_dtype
    assert [None if pd.isna(v) else v for v in out.tolist()] == expected


def test_pandas2_str_name_is_an_object_column(monkeypatch):
    """A model saved under pandas 3 (dtype name ``str``) read under pandas 2 gives an object column."""
    import tabmem.data.dtypes as dt

    monkeypatch.setattr(dt, "_PANDAS_3", False)
    out = pd.Series(restore_categorical(np.array(["a", NA_CATEGORY], dtype=object), "str"))
    assert out.dtype == object and out.tolist() == ["a", None]


def test_category_value_outside_recorded_levels_falls_back_to_values():
    levels = {"categories": ["x", "y"], "ordered": False}
    out = restore_categorical(np.array(["x", "z"], dtype=object), "category", levels)
    assert out.categories.tolist() == ["x", "z"]
    out = restore_categorical(np.array(["y", NA_CATEGORY], dtype=object), "category", levels)
    assert out.categories.tolist() == ["x", "y"] and out.isna().tolist() == [False, True]


def test_restore_dtypes_column_order_and_unrecorded_columns():
    schema = Schema(("n", "c"), ("n",), ("c",))
    clean = pd.DataFrame({"c": np.array(["a", "b"], dtype=object), "n": [1.0, 2.0]}, index=[5, 9])
    out = restore_dtypes(clean, schema, {})
    assert list(out.columns) == ["n", "c"] and isinstance(out.index, pd.RangeIndex)
    assert out["n"].dtype == np.float64 and out["c"].dtype == object
