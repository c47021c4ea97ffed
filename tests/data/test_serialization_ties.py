"""Row strings format a value as Python prints it (ties included), so an exact string copy scores 0.

``np.round`` rounds the scaled binary value half-to-even: ``np.round(1.20625, 4)`` is ``1.2062``
where ``format(1.20625, ".4f")``, CSV writers and the LLM generators' string conversion give
``1.2063``; a synthetic row copied as text from a training row then scored LevAtt distance 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.attacks.levatt import LevAtt
from tabmem.data.schema import Schema
from tabmem.data.serialization import get_serializer
from tabmem.data.serialization.canonical import format_fixed

#: (value, decimals): exact binary ties (0.125, 0.0625, 2.5) and decimal "ties" that are not exact
TIES = [
    (1.20625, 4),
    (0.125, 2),
    (0.375, 2),
    (2.675, 2),
    (1.005, 2),
    (0.0625, 3),
    (2.5, 0),
    (3.5, 0),
    (0.5, 0),
    (1.0000005, 6),
    (-1.20625, 4),
    (-2.675, 2),
    (1234.56785, 4),
]


@pytest.mark.parametrize(("value", "decimals"), TIES)
def test_format_fixed_matches_python_on_ties(value, decimals):
    assert format_fixed(np.array([value]), decimals, "NaN")[0] == format(value, f".{decimals}f")


def test_format_fixed_known_strings_and_negative_zero():
    out = format_fixed(np.array([1.20625, 2.675, -0.0, -1e-9, np.nan, -0.004]), 2, "NaN").tolist()
    assert out == [format(1.20625, ".2f"), "2.67", "0.00", "0.00", "NaN", "0.00"]
    assert format_fixed(np.array([1.20625]), 4, "NaN")[0] == "1.2063"


def _table(values):
    return pd.DataFrame({"x": values, "c": ["a"] * len(values)})


@pytest.mark.parametrize("name", ["canonical", "great"])
def test_text_serializers_write_python_digits(name):
    train = _table([1.2063, 3.1416, 0.1])  # 4 decimals learned
    schema = Schema.infer(train, categorical=["c"])
    s = get_serializer(name, max_decimals=4).fit(train, schema)
    text = s.serialize(_table([1.20625]))[0]
    assert "1.2063" in text and "1.2062" not in text


@pytest.mark.parametrize(("value", "decimals"), [t for t in TIES if t[0] >= 0 and t[1] <= 4])
def test_realtabformer_digits_match_python(value, decimals):
    printed = float(format(value, f".{decimals}f"))  # the value as Python writes it with `decimals` decimals
    train = _table([printed, 10.0**-decimals])
    schema = Schema.infer(train, categorical=["c"])
    s = get_serializer("realtabformer", numeric_precision=decimals).fit(train, schema)
    assert s.specs_[0]["decimals"] == decimals
    assert s.serialize(_table([value])) == s.serialize(_table([printed]))
    parsed = s.parse(s.serialize(_table([value])))
    assert parsed.n_invalid == 0 and parsed.table["x"].iloc[0] == pytest.approx(printed)


def test_exact_string_copy_scores_levatt_distance_zero():
    # the synthetic row is the training row 1.20625 written with 4 decimals, as Python/CSV writers print it
    synthetic = _table([float(format(1.20625, ".4f")), 3.1416])
    members = _table([1.20625])
    schema = Schema.infer(synthetic, categorical=["c"])
    attack = LevAtt().fit(synthetic, schema)
    assert attack.distances(members).distance.tolist() == [0]
