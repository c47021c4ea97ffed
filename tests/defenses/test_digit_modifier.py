"""DigitModifier against naive references (the LevAtt paper's definition)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tabmem.defenses import DigitModifier
from tabmem.defenses.digit_modifier import flip_digits
from tabmem.errors import TabmemError


def naive_flip_all(v: float, integer: bool = False) -> float:
    s = str(abs(int(v))) if integer else str(abs(float(v)))
    if "e" in s:
        s = f"{abs(v):.10f}".rstrip("0")
    s = "".join(str((int(ch) + 1) % 10) if ch.isdigit() else ch for ch in s)
    return math.copysign(float(s), v)


def naive_g(df: pd.DataFrame, cols, p_min, p_max, scale, scope):
    pooled = [abs(x) for c in cols for x in df[c] if not math.isnan(x)]
    out = {}
    for c in cols:
        pool = pooled if scope == "pooled" else [abs(x) for x in df[c] if not math.isnan(x)]
        col = []
        for x in df[c]:
            if math.isnan(x):
                col.append(float("nan"))
                continue
            a = abs(x)
            if scale == "magnitude":
                amt = a / max(pool)
            elif scale == "log":
                amt = math.log(a + 1) / max(math.log(w + 1) for w in pool)
            else:
                amt = sum(w < a for w in pool) / (len(pool) - 1)
            col.append(p_min + (p_max - p_min) * amt)
        out[c] = col
    return pd.DataFrame(out, index=df.index)


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "x": np.round(rng.normal(0, 10, 60), 3),
            "y": np.round(rng.exponential(1000, 60), 1),
            "k": rng.integers(0, 500, 60),
            "cat": rng.choice(["a", "b"], 60),
        }
    ).assign(x=lambda d: d.x.where(rng.random(60) > 0.1))


@pytest.mark.parametrize("scale", ["magnitude", "log", "rank"])
@pytest.mark.parametrize("scope", ["pooled", "per_column"])
def test_flip_probability_matches_naive(table, scale, scope):
    dm = DigitModifier(0.05, 0.6, scale=scale, scope=scope)
    got = dm.flip_probabilities(table)
    ref = naive_g(table, ["x", "y", "k"], 0.05, 0.6, scale, scope)
    assert list(got.columns) == ["x", "y", "k"]
    np.testing.assert_allclose(got.to_numpy(), ref.to_numpy(), rtol=1e-12)


def test_probability_one_flips_every_digit_like_naive(table):
    out = DigitModifier(1.0, 1.0, random_state=0).transform(table)
    for c, integer in (("x", False), ("y", False), ("k", True)):
        for v, w in zip(table[c], out[c]):
            if math.isnan(v):
                assert math.isnan(w)
            else:
                assert w == pytest.approx(naive_flip_all(v, integer), rel=1e-12, abs=1e-12)
    assert out["k"].dtype == table["k"].dtype and out["x"].dtype == np.float64
    pd.testing.assert_series_equal(out["cat"], table["cat"])


def test_known_values():
    df = pd.DataFrame({"a": [19.5, -0.09, 1e-5, 0.0], "n": [9, 10, 0, 99]})
    out = DigitModifier(1.0, 1.0).transform(df)
    assert out["a"].tolist() == [20.6, -1.1, 1.11112, 1.1]
    assert out["n"].tolist() == [0, 21, 1, 0]


def test_known_values_of_long_and_huge_floats():
    # str() keeps 13 decimals here (not the 10 of the scientific-notation expansion), and a value
    # >= 1e16 is written in scientific notation by str(): expanded to '10000000000000000.0'
    df = pd.DataFrame({"a": [0.1234567890123, 1e16, -2.5e16]})
    out = DigitModifier(1.0, 1.0).transform(df)
    assert out["a"].tolist() == [1.2345678901234, 21111111111111111.1, -36111111111111111.1]
    assert out["a"].tolist() == [naive_flip_all(v) for v in df["a"]]


def test_nullable_integer_column_keeps_its_dtype_and_missing_values():
    df = pd.DataFrame({"n": pd.array([9, None, 10, 123], dtype="Int64")})
    out = DigitModifier(1.0, 1.0).transform(df)
    assert out["n"].dtype == "Int64"
    assert out["n"].isna().tolist() == [False, True, False, False]
    assert out["n"].dropna().tolist() == [0, 21, 234]


def test_fit_uses_the_schema_kinds_and_keeps_the_index():
    from tabmem.data.schema import Schema

    df = pd.DataFrame({"x": [1.5, 22.0, 3.25], "code": [1, 2, 1]}, index=[10, 20, 30])
    schema = Schema(("x", "code"), ("x",), ("code",))  # an integer-coded categorical is not modified
    dm = DigitModifier(1.0, 1.0).fit(df, schema)
    out = dm.transform(df)
    assert out["code"].tolist() == [1, 2, 1] and out["x"].tolist() == [2.6, 33.1, 4.36]
    probs = dm.flip_probabilities(df)
    assert list(probs.index) == [10, 20, 30] and list(probs.columns) == ["x"]
    assert list(out.index) == [10, 20, 30]


def test_probability_zero_is_identity_and_input_unchanged(table):
    before = table.copy()
    out = DigitModifier(0.0, 0.0, random_state=1).transform(table)
    pd.testing.assert_frame_equal(out, before)
    pd.testing.assert_frame_equal(table, before)


def test_flip_rate_follows_g():
    rng = np.random.default_rng(0)
    strings = ["".join(rng.choice(list("0123456789"), 12)) for _ in range(4000)]
    prob = np.where(np.arange(4000) < 2000, 0.1, 0.7)
    flipped = flip_digits(strings, prob, np.random.default_rng(1))
    changed = np.array([[a != b for a, b in zip(s, f)] for s, f in zip(strings, flipped)])
    assert abs(changed[:2000].mean() - 0.1) < 0.01
    assert abs(changed[2000:].mean() - 0.7) < 0.01
    for s, f in zip(strings[:50], flipped[:50]):
        for a, b in zip(s, f):
            assert b == a or int(b) == (int(a) + 1) % 10


def test_seed_reproducible_and_sign_kept(table):
    a = DigitModifier(0.3, 0.9, random_state=7).transform(table)
    b = DigitModifier(0.3, 0.9, random_state=7).transform(table)
    c = DigitModifier(0.3, 0.9, random_state=8).transform(table)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    ok = table["x"].notna() & (table["x"] != 0)
    assert (np.sign(a["x"][ok]) == np.sign(table["x"][ok])).all()


def test_in_range_keeps_training_range(table):
    train = table.assign(y=table["y"].clip(100, 2000), k=table["k"].clip(10, 300))
    dm = DigitModifier(0.9, 1.0, in_range=True, random_state=0, columns=["x", "y", "k"]).fit(train)
    out = dm.transform(table)
    for c in ["x", "y", "k"]:
        vals = out[c].dropna()
        assert vals.min() >= train[c].min() and vals.max() <= train[c].max()
    unconstrained = DigitModifier(0.9, 1.0, random_state=0).transform(table)
    assert (unconstrained["y"] > 2000).any()


def test_errors():
    df = pd.DataFrame({"a": [1.0, 2.0], "s": ["u", "v"]})
    with pytest.raises(TabmemError, match="p_min"):
        DigitModifier(-0.1, 0.5).transform(df)
    with pytest.raises(TabmemError, match="p_min must be <= p_max"):
        DigitModifier(0.6, 0.5).transform(df)
    with pytest.raises(TabmemError, match="scale"):
        DigitModifier(scale="linear").transform(df)
    with pytest.raises(TabmemError, match="'s'"):
        DigitModifier(columns=["s"]).transform(df)
    with pytest.raises(TabmemError, match=r"DigitModifier\(in_range=True\) needs fit"):
        DigitModifier(in_range=True).transform(df)
    with pytest.raises(TabmemError, match="infinite"):
        DigitModifier().transform(pd.DataFrame({"a": [1.0, np.inf]}))


def in_range_reference(original: float, modified: float, lo: float, hi: float) -> float:
    """The in_range rule by its definition: keep a modified value inside [lo, hi], else the original (clipped)."""
    if math.isnan(original):
        return original
    if lo <= modified <= hi:
        return modified
    return min(max(original, lo), hi)


def test_in_range_falls_back_to_the_original_value_not_the_clipped_one():
    train = pd.DataFrame({"v": [0.0, 60.0]})
    syn = pd.DataFrame({"v": [55.0, 19.5, 70.0, 5.0, -3.0]})
    out = DigitModifier(1.0, 1.0, in_range=True, columns=["v"]).fit(train).transform(syn)
    # every digit of str(v) flips: 55.0 -> 66.1 (outside: back to 55, not 60), 19.5 -> 20.6 (kept), 70.0 -> 81.1 (outside and
    # the original is outside too: 70 clipped to 60), 5.0 -> 6.1 (kept), -3.0 -> -4.1 (outside: -3 clipped to 0)
    assert out["v"].tolist() == [55.0, 20.6, 60.0, 6.1, 0.0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_in_range_equals_its_definition_cell_by_cell(table, seed):
    train = table.assign(y=table["y"].clip(100, 2000), k=table["k"].clip(10, 300), x=table["x"].clip(-8, 8))
    cols = ["x", "y", "k"]
    free = DigitModifier(0.3, 0.9, random_state=seed, columns=cols).fit(train).transform(table)
    kept = DigitModifier(0.3, 0.9, in_range=True, random_state=seed, columns=cols).fit(train).transform(table)
    n_fallbacks = 0
    for c in cols:
        lo, hi = float(train[c].min()), float(train[c].max())
        for v, w, got in zip(table[c], free[c], kept[c]):
            expected = in_range_reference(float(v), float(w), lo, hi)
            if math.isnan(expected):
                assert math.isnan(got)
            else:
                assert got == expected  # the same digit flips (same seed), then the rule
                n_fallbacks += not (lo <= w <= hi)
    assert n_fallbacks > 10  # the rule was exercised


@pytest.mark.parametrize("scale", ["magnitude", "log", "rank"])
def test_degenerate_pools_follow_the_formula(scale):
    # all zeros: a(v) = 0 (no division by a zero maximum), so g = p_min and every digit still flips at p_min = 1
    zeros = pd.DataFrame({"z": [0.0, 0.0, 0.0]})
    dm = DigitModifier(1.0, 1.0, scale=scale)
    assert dm.flip_probabilities(zeros)["z"].tolist() == [1.0, 1.0, 1.0]
    assert dm.transform(zeros)["z"].tolist() == [1.1, 1.1, 1.1]
    # one value: a(v) = v / max = 1 for magnitude/log; rank has no spread (|V| - 1 = 0) -> 0
    one = pd.DataFrame({"v": [np.nan, 0.5, np.nan]})
    g = DigitModifier(0.2, 0.6, scale=scale).flip_probabilities(one)["v"]
    assert np.isnan(g[0]) and np.isnan(g[2])
    assert g[1] == pytest.approx(0.2 if scale == "rank" else 0.6)
    # only missing values: nothing to modify, no error
    empty = pd.DataFrame({"e": [np.nan, np.nan]})
    assert DigitModifier(0.2, 0.6, scale=scale).transform(empty)["e"].isna().all()


def test_magnitudes_below_one_scale_by_their_maximum():
    df = pd.DataFrame({"s": [0.2, 0.5, 0.05]})
    g = DigitModifier(0.0, 1.0).flip_probabilities(df)["s"]
    np.testing.assert_allclose(g, [0.4, 1.0, 0.1])


def test_in_range_bounds_are_inclusive():
    train = pd.DataFrame({"v": [0.6, 66.1]})
    syn = pd.DataFrame({"v": [9.5, 55.0, 60.0]})
    out = DigitModifier(1.0, 1.0, in_range=True, columns=["v"]).fit(train).transform(syn)
    # 9.5 -> 0.6 == min and 55.0 -> 66.1 == max are kept; 60.0 -> 71.1 falls back to 60.0
    assert out["v"].tolist() == [0.6, 66.1, 60.0]


def test_fit_transform_is_fit_then_transform():
    train = pd.DataFrame({"v": [0.6, 66.1], "c": [1, 2]})  # c: an integer-coded categorical
    syn = pd.DataFrame({"v": [9.5, 55.0, 60.0], "c": [1, 1, 2]})
    from tabmem.data.schema import Schema

    schema = Schema(("v", "c"), ("v",), ("c",))
    dm = DigitModifier(1.0, 1.0, in_range=True)
    pd.testing.assert_frame_equal(dm.fit_transform(train, syn, schema), dm.fit(train, schema).transform(syn))
    out = dm.fit_transform(train, syn, schema)
    assert out["v"].tolist() == [0.6, 66.1, 60.0] and out["c"].tolist() == [1, 1, 2]  # the schema's kinds


def test_column_choice_and_parameter_errors_name_the_problem():
    df = pd.DataFrame({"a": [1.5, 2.5], "flag": [True, False], "s": ["u", "v"]})
    out = DigitModifier(1.0, 1.0).transform(df)  # inferred columns: numeric, not bool
    assert out["flag"].tolist() == [True, False] and out["a"].tolist() == [2.6, 3.6]
    assert DigitModifier(1.0, 1.0, columns=[]).transform(df).equals(df)  # nothing to modify
    with pytest.raises(TabmemError, match=r"column\(s\) \['nope'\] not in the table \(columns: \['a', 'flag', 's'\]\)"):
        DigitModifier(columns=["nope"]).transform(df)
    with pytest.raises(TabmemError, match=r"column\(s\) \['flag'\] are not numerical \(dtypes: \['bool'\]\)"):
        DigitModifier(columns=["flag"]).transform(df)
    fitted = DigitModifier().fit(df[["a"]])
    with pytest.raises(TabmemError, match=r"column\(s\) \['a'\] not in the synthetic table"):
        fitted.transform(df[["flag", "s"]])
    for bad in ("a", True, 1.5, -0.1):
        with pytest.raises(TabmemError, match="p_max must be a probability in \\[0, 1\\]"):
            DigitModifier(0.0, bad).transform(df)
    with pytest.raises(TabmemError, match="scope must be 'pooled' or 'per_column', got scope='rows'"):
        DigitModifier(scope="rows").transform(df)


def test_float32_column_with_missing_values_keeps_its_dtype():
    df = pd.DataFrame({"f": np.array([1.5, np.nan, 2.25], dtype=np.float32)})
    out = DigitModifier(1.0, 1.0).transform(df)
    assert out["f"].dtype == np.float32 and np.isnan(out["f"][1])
    np.testing.assert_allclose(out["f"][[0, 2]], [2.6, 3.36], rtol=1e-6)
