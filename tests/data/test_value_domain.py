"""The value domain: numerical values are 0 or ``1e-100 <= |x| <= 1e15``; anything else is refused.

:func:`tabmem.data.schema.validate` is the one place every table passes through before a distance,
an encoder, a generator or a metric sees it: a value outside the domain is one line naming the
table, the column, the first row (0-based) and its magnitude, through the library and the CLI.
Exactness at the domain's edges is checked where the kernels are (tests/neighbors,
tests/memorization/test_extreme_magnitudes.py).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from tabmem import Schema
from tabmem.cli import main
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import MAX_MAGNITUDE, MIN_MAGNITUDE, validate
from tabmem.errors import SchemaError
from tabmem.metrics.dcr_share import DCRShare
from tabmem.neighbors import NeighborIndex

SCHEMA = Schema(("x", "c"), ("x",), ("c",))
TAIL = (
    r", outside the value domain \(0 or 1e-100 <= \|x\| <= 1e15\); rescale the column \(e\.g\. to thousands, "
    r"or log\), or declare it categorical if it is an identifier$"
)


def table(n: int = 30, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(0, 1, n), "c": rng.choice(["a", "b"], n)})


def with_value(df: pd.DataFrame, row: int, value: float) -> pd.DataFrame:
    out = df.copy()
    out.loc[row, "x"] = value
    return out


def test_the_bounds() -> None:
    assert MAX_MAGNITUDE == 1e15 and MIN_MAGNITUDE == 1e-100


@pytest.mark.parametrize("value", [0.0, -0.0, 1e15, -1e15, 1e-100, -1e-100, 999_999_999_999_999.0, 2.0**-332])
def test_values_inside_the_domain_are_accepted(value: float) -> None:
    checked = validate(with_value(table(), 3, value), SCHEMA)
    assert checked.data["x"].iloc[3] == value


@pytest.mark.parametrize(
    "value,shown",
    [
        (1.0000000000000002e15, "1e15"),
        (-2e16, "2e16"),
        (1e300, "1e300"),
        (1.7976931348623157e308, "1.8e308"),
        (9e-101, "9e-101"),
        (-5e-324, "4.94e-324"),
    ],
)
def test_a_value_outside_is_one_line_naming_table_column_row_and_magnitude(value: float, shown: str) -> None:
    with pytest.raises(SchemaError) as err:
        validate(with_value(table(), 7, value), SCHEMA, name="synthetic")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"synthetic table: column 'x' row 7 holds a value of magnitude {shown},")
    assert re.search(TAIL, message), message


def test_several_rows_outside_are_counted_with_the_first_ones() -> None:
    df = table()
    df.loc[[2, 5, 9], "x"] = [1e20, -1e16, 1e-300]
    with pytest.raises(
        SchemaError, match=r"row 2 holds a value of magnitude 1e20, .* \(3 rows outside, first rows: 2, 5, 9\);"
    ):
        validate(df, SCHEMA, name="holdout")


def test_identifiers_declared_categorical_are_not_numbers() -> None:
    df = table().assign(c=np.arange(30) * 10**17)  # 64-bit ids: categorical, compared as strings
    validate(df, SCHEMA)


def test_inf_and_nan_keep_their_own_messages() -> None:
    with pytest.raises(SchemaError, match=r"column 'x' has 1 infinite value\(s\) \(first rows: 4\)$"):
        validate(with_value(table(), 4, np.inf), SCHEMA)
    validate(with_value(table(), 4, np.nan), SCHEMA, nan="match")  # missing: the nan policy's business


# ---------------------------------------------------------------------------- through the library
def test_every_role_is_refused_through_the_library() -> None:
    train, syn, hold = table(seed=1), table(seed=2), table(seed=3)
    cases = [
        ("training", lambda: TableEncoder(SCHEMA).fit(with_value(train, 3, 1e-200)), 3),
        ("reference", lambda: NeighborIndex("gower", n_jobs=1).fit(with_value(train, 3, 1e20), SCHEMA), 3),
        (
            "queries",
            lambda: NeighborIndex("fang2024", n_jobs=1).fit(train, SCHEMA).kneighbors(with_value(syn, 4, -2e16)),
            4,
        ),
        ("holdout", lambda: DCRShare().evaluate(train, syn, SCHEMA, holdout=with_value(hold, 5, 1e300)), 5),
        ("synthetic", lambda: DCRShare().evaluate(train, with_value(syn, 6, 1e300), SCHEMA, holdout=hold), 6),
        ("real", lambda: DCRShare().evaluate(with_value(train, 7, 1e300), syn, SCHEMA, holdout=hold), 7),
    ]
    for name, call, row in cases:
        with pytest.raises(SchemaError, match=rf"^{name} table: column 'x' row {row} holds a value of magnitude"):
            call()


def test_generators_refuse_before_training() -> None:
    pytest.importorskip("torch")
    from tabmem.generators import get_generator

    with pytest.raises(SchemaError, match=r"^training table: column 'x' row 2 holds a value of magnitude 1e150"):
        get_generator("tvae", epochs=1).fit(with_value(table(), 2, 1e150), SCHEMA)


def test_an_encoder_at_the_domain_bound_has_a_finite_range_and_warns_nothing() -> None:
    df = pd.DataFrame({"x": [-1e15, 1e15, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = TableEncoder(Schema(("x",), ("x",), ())).fit(df)
    assert enc.range_[0] == 2e15 and enc.mean_[0] == 0.0
    assert enc.std_[0] == pytest.approx(np.sqrt(2 / 3) * 1e15, rel=1e-15)


# ---------------------------------------------------------------------------------- through the CLI
def test_audit_exits_with_the_one_line_message(tmp_path, capsys) -> None:
    train, syn = table(40, seed=4), with_value(table(40, seed=5), 3, 1e20)
    train.to_csv(tmp_path / "train.csv", index=False)
    syn.to_csv(tmp_path / "syn.csv", index=False)
    with pytest.raises(SystemExit) as exit_:
        main(["audit", "--train", str(tmp_path / "train.csv"), "--synthetic", str(tmp_path / "syn.csv"),
              "--out", str(tmp_path / "out")])  # fmt: skip
    assert exit_.value.code == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line]
    assert errors == [lines[-1]], text  # one line, the last one (after the schema and threads notes)
    assert lines[-1].startswith("Error: synthetic table: column 'x' row 3 holds a value of magnitude 1e20"), text
    assert lines[-1].endswith("or declare it categorical if it is an identifier"), text
