"""Schema inference and validation: every bad input gets a clear error naming column and rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem import Schema, SchemaError, validate_table
from tabmem.data.encoding import TableEncoder
from tabmem.data.io import read_table
from tabmem.data.schema import NA_CATEGORY, canonical_categories, canonical_category, validate
from tabmem.errors import ParameterError, TabmemError


def table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [30, 41, 52, 23],
            "income": [1200.5, 3100.0, 800.25, 0.0],
            "sex": ["F", "M", "F", "M"],
            "code": [1, 2, 1, 3],
            "label": [True, False, False, True],
        }
    )


# ----------------------------------------------------------------- inference
def test_infer_rule() -> None:
    s = Schema.infer(table(), target="label")
    # age: 4 distinct values in 4 rows, code: 3 in 4; values that do not repeat are measurements
    assert s.numerical == ("age", "income", "code")
    assert set(s.categorical) == {"sex", "label"}
    assert s.task == "binclass"
    codes = pd.concat([table()] * 3, ignore_index=True)  # the same values, each repeated: codes
    assert set(Schema.infer(codes).categorical) == {"age", "sex", "code", "label"}
    many = pd.DataFrame({"n": np.arange(100), "y": np.arange(100) * 0.5})
    s2 = Schema.infer(many, target="y")
    assert s2.numerical == ("n", "y") and s2.task == "regression"


def test_tiny_tables_keep_integer_columns_numerical() -> None:
    """A one-row table must not turn every integer column categorical."""
    one = table().iloc[[0]]
    assert Schema.infer(one).numerical == ("age", "income", "code")
    two_equal = pd.DataFrame({"k": [4, 4], "x": [1, 2]})
    assert Schema.infer(two_equal).categorical == ("k",)  # a repeated value is a code
    assert Schema.infer(pd.DataFrame({"k": [1, 2, 3, 1, 2, 3]})).categorical == ("k",)


def test_numeric_column_with_a_few_words_is_an_error_naming_column_count_and_rows() -> None:
    t = pd.DataFrame({"age": [str(v) for v in range(20, 60)], "sex": ["F", "M"] * 20})
    t.loc[7, "age"] = "forty"
    t.loc[30, "age"] = "n/a"
    with pytest.raises(
        SchemaError,
        match=r"column 'age' is numeric except for 2 cell\(s\) \(first rows: 7, 30\).*categorical=\['age'\]",
    ) as err:
        Schema.infer(t)
    assert "forty" not in str(err.value)  # no cell of a user table is quoted
    assert Schema.infer(t, categorical=["age"]).categorical == ("age", "sex")  # accepted on request
    t.loc[:5, "age"] = "x"  # 8 of 40 cells are words: a categorical column, no error
    assert "age" in Schema.infer(t).categorical
    numbers = pd.DataFrame({"v": ["1", "2.5", None, "4"]})  # text that is all numbers: numerical
    assert Schema.infer(numbers).numerical == ("v",)


def test_missing_category_is_a_missing_value_not_an_unseen_category() -> None:
    syn = table()
    syn["sex"] = syn["sex"].astype(object)
    syn.loc[2, "sex"] = np.nan
    with pytest.raises(
        SchemaError, match=r"column 'sex' has 1 missing value\(s\) \(the training column has none\) \(first rows: 2\)"
    ) as err:
        validate_table(syn, SCHEMA, categories=cats())
    assert "never seen" not in str(err.value)
    assert len(validate_table(syn, SCHEMA, categories=cats(), nan="drop")) == 3
    kept = validate_table(syn, SCHEMA, categories=cats(), nan="match")  # kept: matches no training category
    assert kept["sex"].tolist()[2] == NA_CATEGORY


def test_user_kinds_win_and_unknown_names_are_reported() -> None:
    s = Schema.infer(table(), numerical=["age", "code"], target="label")
    assert "age" in s.numerical and "code" in s.numerical
    with pytest.raises(SchemaError, match="'nope'"):
        Schema.infer(table(), categorical=["nope"])


def test_schema_round_trip_and_overrides() -> None:
    s = Schema.infer(table(), target="label")
    assert Schema.from_dict(s.to_dict()) == s
    s2 = s.with_overrides(numerical=["age"])
    assert "age" in s2.numerical and s2.target == "label"


def test_schema_rejects_inconsistent_declarations() -> None:
    with pytest.raises(ValueError, match="both"):
        Schema(("a",), ("a",), ("a",))
    with pytest.raises(ValueError, match="target"):
        Schema(("a",), ("a",), (), target="b")


# -------------------------------------------------------------- canonical values
@pytest.mark.parametrize(
    "value,expected",
    [
        (1, "1"),
        (1.0, "1"),
        ("1", "1"),
        (np.int64(7), "7"),
        (True, "True"),
        (np.nan, NA_CATEGORY),
        (None, NA_CATEGORY),
        (2.5, "2.5"),
        ("a b", "a b"),
    ],
)
def test_canonical_category(value, expected) -> None:
    assert canonical_category(value) == expected


def test_canonical_categories_vectorised_equals_scalar() -> None:
    mixed = pd.Series(["a", None, 1, 1.0, "1", True, np.nan, "b"], dtype=object)  # 1 == 1.0 == True hash alike
    strings = pd.Series(np.random.default_rng(0).choice(["x", "y", None], 500), dtype=object)
    for s in [
        pd.Series([1, 2, 3]),
        pd.Series([1.0, np.nan, 2.5]),
        pd.Series([True, False]),
        pd.Series(["x", None]),
        mixed,
        strings,
    ]:
        assert list(canonical_categories(s)) == [canonical_category(v) for v in s]


# ------------------------------------------------------------------ validation
SCHEMA = Schema(
    ("age", "income", "sex", "code", "label"), ("age", "income"), ("sex", "code", "label"), "label", "binclass"
)


def cats():
    return TableEncoder(SCHEMA).fit(table()).category_sets()


def test_missing_and_extra_columns_named() -> None:
    bad = table().drop(columns=["sex"]).assign(zip="x")
    with pytest.raises(SchemaError) as err:
        validate_table(bad, SCHEMA)
    msg = str(err.value)
    assert "missing column(s): 'sex'" in msg and "'zip'" in msg
    ok = validate_table(table().assign(zip="x"), SCHEMA, extra="ignore")
    assert list(ok.columns) == list(SCHEMA.columns)


def test_wrong_dtype_names_column_and_rows() -> None:
    bad = table().astype({"income": object})
    bad.loc[[1, 3], "income"] = ["n/a", "??"]
    with pytest.raises(SchemaError, match=r"'income' is numerical but 2 row\(s\).*first rows: 1, 3"):
        validate_table(bad, SCHEMA)
    with pytest.raises(SchemaError, match="booleans"):
        validate_table(table().assign(age=True), SCHEMA)


def test_nan_policies() -> None:
    bad = table()
    bad.loc[2, "income"] = np.nan
    with pytest.raises(SchemaError, match=r"'income' has 1 missing value\(s\) \(first rows: 2\)"):
        validate_table(bad, SCHEMA)
    dropped = validate_table(bad, SCHEMA, nan="drop")
    assert list(dropped.index) == [0, 1, 3]
    kept = validate_table(bad, SCHEMA, nan="match")
    assert np.isnan(kept.loc[2, "income"])


def test_infinite_values_rejected() -> None:
    bad = table()
    bad.loc[0, "income"] = np.inf
    with pytest.raises(SchemaError, match="infinite"):
        validate_table(bad, SCHEMA)


def test_unseen_categories() -> None:
    bad = table()
    bad.loc[[0, 2], "sex"] = "X"
    with pytest.raises(
        SchemaError, match=r"'sex' has 2 row\(s\) with categories never seen in training \(first rows: 0, 2\)"
    ):
        validate_table(bad, SCHEMA, categories=cats())
    assert len(validate_table(bad, SCHEMA, categories=cats(), unseen="drop")) == 2
    assert len(validate_table(bad, SCHEMA, categories=cats(), unseen="mismatch")) == 4


def test_empty_and_duplicated_and_not_a_frame() -> None:
    with pytest.raises(SchemaError, match="empty"):
        validate_table(table().iloc[:0], SCHEMA)
    dup = pd.concat([table(), table()[["sex"]]], axis=1)
    with pytest.raises(SchemaError, match="duplicated column name 'sex'"):
        validate_table(dup, SCHEMA)
    with pytest.raises(SchemaError, match="DataFrame"):
        validate_table(np.zeros((2, 2)), SCHEMA)  # type: ignore[arg-type]


def test_all_problems_reported_together() -> None:
    bad = table()
    bad.loc[0, "income"] = np.nan
    bad.loc[1, "sex"] = "X"
    with pytest.raises(SchemaError) as err:
        validate_table(bad, SCHEMA, categories=cats())
    assert len(err.value.problems) == 2


def test_clean_output_types() -> None:
    clean = validate_table(table(), SCHEMA)
    assert clean["age"].dtype == np.float64 and clean["label"].tolist() == ["True", "False", "False", "True"]


# ---------------------------------------------------------------------- reading
def test_read_table_errors(tmp_path) -> None:
    latin = tmp_path / "latin.csv"
    latin.write_bytes("name,value\nJos\xe9,1\n".encode("latin-1"))
    with pytest.raises(TabmemError, match=r"latin.csv: is not valid utf-8: byte 0xe9 .*line 2.*encoding='latin-1'"):
        read_table(latin)
    assert read_table(latin, encoding="latin-1")["name"][0] == "José"
    dup = tmp_path / "dup.csv"
    dup.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(TabmemError, match="duplicated column name 'a'"):
        read_table(dup)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(TabmemError, match="empty"):
        read_table(empty)
    with pytest.raises(Exception, match="not found"):
        read_table(tmp_path / "missing.csv")


def test_read_table_bom_semicolon_and_parquet(tmp_path) -> None:
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbfa;b\n1;x\n")
    t = read_table(p)
    assert list(t.columns) == ["a", "b"] and t["a"][0] == 1
    pq = tmp_path / "t.parquet"
    table().to_parquet(pq)
    pd.testing.assert_frame_equal(read_table(pq), table())


@pytest.mark.parametrize("option", ["nan", "unseen", "extra"])
def test_a_misspelt_policy_is_one_clear_error_not_another_policy(option) -> None:
    """nan='bogus' used to keep missing values as nan='match' would (found by mutation checking)."""
    schema = Schema(("x", "k"), ("x",), ("k",))
    table = pd.DataFrame({"x": [np.nan, 1.0], "k": ["z", "a"], "e": [0, 0]})
    with pytest.raises(ParameterError, match=rf"^{option} must be one of .*, got 'bogus'$"):
        validate(table, schema, categories={"k": {"a"}}, **{option: "bogus"})


def test_an_object_column_of_numbers_and_bools_is_canonicalised_not_shared() -> None:
    """The clean frame shares a string-dtype column's memory (already canonical); an object column
    (pandas 2's strings, or mixed values) must still be canonicalised: the reference tests on pandas 2
    caught a version that shared every object column and left 1, 2.0 and True as they were."""
    schema = Schema(("x", "k"), ("x",), ("k",))
    table = pd.DataFrame({"x": [0.0, 1.0, 2.0], "k": pd.Series([1, 2.0, True], dtype=object)})
    assert list(validate_table(table, schema)["k"]) == ["1", "2", "True"]
    strings = pd.DataFrame({"x": [0.0, 1.0], "k": pd.Series(["a", "b"], dtype="string")})
    assert list(validate_table(strings, schema)["k"]) == ["a", "b"]
