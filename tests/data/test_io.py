"""How read_table reads what CSV files really hold: separators, decimal commas, NA-like strings, codes, BOM."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.io import read_notes, read_table, sniff_separator
from tabmem.data.schema import Schema, key_columns_warning, key_like_columns
from tabmem.errors import TabmemError


def _write(tmp_path, text: str | bytes, name: str = "t.csv"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_separator_is_sniffed(tmp_path, sep) -> None:
    t = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [0.5, 1.5, 2.5]})
    p = tmp_path / "t.csv"
    t.to_csv(p, index=False, sep=sep)
    got = read_table(p)
    pd.testing.assert_frame_equal(got, t, check_dtype=False)
    assert read_notes(got).get("sep", ",") == sep


def test_header_name_with_a_comma_is_one_column(tmp_path) -> None:
    p = _write(tmp_path, '"hours, per week",age\n40,31\n38,45\n')
    t = read_table(p)
    assert list(t.columns) == ["hours, per week", "age"]
    assert t["hours, per week"].tolist() == [40, 38]


def test_ambiguous_separator_is_refused_naming_sep(tmp_path) -> None:
    p = _write(tmp_path, "a;b,c\n1;2,3\n4;5,6\n")
    with pytest.raises(TabmemError, match=r"separator is ambiguous.*';' and|',' and ';'.*sep"):
        read_table(p)
    assert list(read_table(p, sep=";").columns) == ["a", "b,c"]


def test_a_wrong_given_separator_is_refused(tmp_path) -> None:
    p = _write(tmp_path, "a;b\n1;2\n")
    with pytest.raises(TabmemError, match=r"sep '\|' leaves the header in one column.*';'-separated"):
        read_table(p, sep="|")
    assert list(read_table(_write(tmp_path, "a\n1\n", "one.csv"), sep=";").columns) == ["a"]


def test_ragged_file_still_names_the_line(tmp_path) -> None:
    p = _write(tmp_path, "a,b\n1,2\n3,4,5\n6,7\n")
    with pytest.raises(TabmemError, match="line 3"):
        read_table(p)


def test_single_column(tmp_path) -> None:
    assert read_table(_write(tmp_path, "a\n1\n2\n"))["a"].tolist() == [1, 2]
    assert sniff_separator("a\n1\n") == ","


def test_decimal_commas_in_semicolon_file(tmp_path) -> None:
    p = _write(tmp_path, "x;y;z\n1,5;2;a\n-0,25;3;b\n10;4;c\n")
    t = read_table(p)
    assert t["x"].tolist() == [1.5, -0.25, 10.0] and t["y"].tolist() == [2, 3, 4]
    assert read_notes(t)["decimal"] == ","


def test_decimal_comma_exact(tmp_path) -> None:
    rng = np.random.default_rng(0)
    x = np.round(rng.normal(0, 1000, 500), 6)
    t = pd.DataFrame({"x": x, "k": np.arange(500) % 3})
    p = tmp_path / "t.csv"
    t.to_csv(p, index=False, sep=";", decimal=",")
    assert (read_table(p)["x"].to_numpy() == x).all()


def test_comma_then_three_digits_is_refused_naming_decimal(tmp_path) -> None:
    p = _write(tmp_path, "amount;k\n1,500;a\n12,250;b\n950;c\n")
    with pytest.raises(TabmemError, match=r"'amount'.*three digits.*decimal=','"):
        read_table(p)
    assert read_table(p, decimal=",")["amount"].tolist() == [1.5, 12.25, 950.0]
    assert read_table(p, decimal=".")["amount"].tolist() == ["1,500", "12,250", "950"]


def test_decimal_commas_next_to_decimal_points_are_refused(tmp_path) -> None:
    p = _write(tmp_path, "a;b\n1,5;2.5\n2,5;3.5\n")
    with pytest.raises(TabmemError, match=r"'a' holds decimal commas and column 'b' decimal points"):
        read_table(p)


def test_bad_sep_and_decimal_values(tmp_path) -> None:
    p = _write(tmp_path, "a,b\n1,2\n")
    with pytest.raises(TabmemError, match="sep"):
        read_table(p, sep=":")
    with pytest.raises(TabmemError, match="decimal"):
        read_table(p, decimal="x")
    with pytest.raises(TabmemError, match="decimal comma needs a separator"):
        read_table(p, sep=",", decimal=",")


def test_na_like_strings_stay_categories_in_text_columns(tmp_path) -> None:
    p = _write(tmp_path, "region,smoker,score\nNA,None,1.5\nEU,yes,NA\nnull,no,\n,no,2.5\n")
    t = read_table(p)
    assert t["region"].tolist()[:3] == ["NA", "EU", "null"] and pd.isna(t["region"][3])
    assert t["smoker"].tolist() == ["None", "yes", "no", "no"]
    assert t["score"].dtype == np.float64 and t["score"].isna().tolist() == [False, True, True, False]
    assert read_notes(t)["na_kept"] == ["region", "smoker"]


def test_codes_with_leading_zeros_are_text_and_agree_with_parquet(tmp_path) -> None:
    p = _write(tmp_path, "zip,n\n00501,1\n10001,2\n02134,3\n")
    t = read_table(p)
    assert t["zip"].tolist() == ["00501", "10001", "02134"] and t["n"].tolist() == [1, 2, 3]
    assert read_notes(t)["codes"] == {"zip": "codes with leading zeros"}
    twin = tmp_path / "t.parquet"
    pd.DataFrame({"zip": ["00501", "10001", "02134"], "n": [1, 2, 3]}).to_parquet(twin, index=False)
    s1, s2 = Schema.infer(t), Schema.infer(read_table(twin))
    assert s1 == s2 and "zip" in s1.categorical


def test_integers_beyond_2_53_are_text(tmp_path) -> None:
    big = [2**60 + 1, 2**60 + 2, 5]
    p = _write(tmp_path, "rid,v\n" + "".join(f"{b},{i}\n" for i, b in enumerate(big)))
    t = read_table(p)
    assert t["rid"].tolist() == [str(b) for b in big]  # as floats the first two would collide
    assert "rid" in Schema.infer(t).categorical
    # a Parquet int64 twin is categorical too (exact as categories, colliding as floats)
    assert "rid" in Schema.infer(pd.DataFrame({"rid": big, "v": [0, 1, 2]})).categorical


def test_byte_order_mark_is_dropped(tmp_path) -> None:
    t = read_table(_write(tmp_path, b"\xef\xbb\xbfa;b\n1;2\n"))
    assert list(t.columns) == ["a", "b"]


def test_plain_numbers_unchanged(tmp_path) -> None:
    p = _write(tmp_path, "a,b,c,d\n1,0.5,True,0\n2,1e3,False,10\n3,inf,True,0\n")
    t = read_table(p)
    assert t["a"].dtype == np.int64 and t["b"].tolist() == [0.5, 1000.0, float("inf")]
    assert t["c"].dtype == bool and t["d"].tolist() == [0, 10, 0]
    assert read_notes(t) == {}


# ----------------------------------------------------------------------------- identifier columns
def _table(n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "patient_id": np.arange(1000, 1000 + n),
            "age": rng.integers(20, 90, n),
            "weight": np.round(rng.normal(70, 10, n), 2),  # unique floats: a measurement, not a key
            "fnlwgt": rng.choice(10**6, n, replace=False),  # unique integers with an ordinary name
            "sex": rng.choice(["F", "M"], n),
        }
    )


def test_planted_patient_id_is_detected() -> None:
    t = _table()
    assert key_like_columns(t) == ["patient_id"]
    assert key_like_columns(t.assign(patient_id=[f"P{i:06d}" for i in range(len(t))])) == ["patient_id"]
    assert key_like_columns(t.assign(PatientID=t.pop("patient_id"))) == ["PatientID"]
    assert key_like_columns(_table().assign(row=np.arange(50))) == ["patient_id", "row"]  # consecutive integers


def test_measurements_categoricals_and_small_tables_are_not_keys() -> None:
    t = _table().drop(columns="patient_id")
    assert key_like_columns(t) == []
    assert key_like_columns(_table(10)) == []  # too few rows to tell
    dup = _table()
    dup.loc[3, "patient_id"] = dup.loc[4, "patient_id"]
    assert key_like_columns(dup) == []  # not one value per row
    assert key_like_columns(_table(), Schema.infer(_table(), target="patient_id")) == []


def test_key_warning_names_columns_and_the_way_out() -> None:
    msg = key_columns_warning(["patient_id"])
    assert "'patient_id'" in msg and "table.drop(columns=['patient_id'])" in msg


def test_replica_detector_reports_identifier_columns() -> None:
    from tabmem.memorization.replicas import ReplicaDetector

    train = _table()
    result = ReplicaDetector().fit(train).score(train.iloc[:10], holdout=train.iloc[10:20])
    assert any("'patient_id' look like identifiers" in w and "table.drop(columns=" in w for w in result.warnings())
    assert result.holdout is not None and result.holdout.input_warnings == []
    plain = ReplicaDetector().fit(train.drop(columns="patient_id")).score(train.drop(columns="patient_id").iloc[:5])
    assert not any("identifiers" in w for w in plain.warnings())
