"""Exact copies, rare-value leakage and undefined ratios against brute force."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem import Schema
from tabmem.data.schema import canonical_category, validate
from tabmem.errors import ParameterError
from tabmem.memorization.copies import ExactCopies, RareValues
from tabmem.memorization.replicas import ReplicaDetector

SCHEMA = Schema(("x", "y", "k"), ("x", "y"), ("k",))


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": rng.integers(0, 4, n).astype(float),  # few values: many duplicates
            "y": rng.choice([0.0, -0.0, 1.5, np.nan], n),
            "k": rng.choice(["a", "b", None], n),
        }
    )


def _key(row: pd.Series) -> tuple:
    x, y = float(row["x"]), float(row["y"])
    return (x + 0.0, "nan" if np.isnan(y) else y + 0.0, canonical_category(row["k"]))


@pytest.mark.parametrize("seed", range(5))
def test_exact_copies_equal_a_row_by_row_comparison(seed) -> None:
    rng = np.random.default_rng(seed)
    train, syn = _table(rng, 60), _table(rng, 80)
    keys = {_key(r) for _, r in train.iterrows()}
    expected = [_key(r) in keys for _, r in syn.iterrows()]
    clean_t = validate(train, SCHEMA, name="training", nan="match").data
    clean_s = validate(syn, SCHEMA, nan="match").data
    got = ExactCopies().fit(clean_t, SCHEMA).match(clean_s)
    assert got.tolist() == expected
    assert 0 < sum(expected) < len(expected)  # the draw has both kinds


def test_exact_copies_verify_hash_matches_on_values(monkeypatch) -> None:
    """Every row hashing alike is still compared on its values: a forced collision is not a copy."""
    import tabmem.memorization.copies as copies

    monkeypatch.setattr(copies, "_hash_rows", lambda num, codes: np.zeros(len(num), dtype=np.uint64))
    train = pd.DataFrame({"x": [1.0, 2.0], "y": [0.0, 0.0], "k": ["a", "b"]})
    syn = pd.DataFrame({"x": [2.0, 3.0], "y": [0.0, 0.0], "k": ["b", "b"]})
    got = ExactCopies().fit(train, SCHEMA).match(validate(syn, SCHEMA).data)
    assert got.tolist() == [True, False]


def test_forced_collisions_match_missing_values_only_to_missing_values(monkeypatch) -> None:
    """Under a hash collision a missing value equals a missing value, never a number (either side)."""
    import tabmem.memorization.copies as copies

    monkeypatch.setattr(copies, "_hash_rows", lambda num, codes: np.zeros(len(num), dtype=np.uint64))
    train = pd.DataFrame({"x": [np.nan, 2.0], "y": [0.0, 0.0], "k": ["a", "a"]})
    syn = pd.DataFrame({"x": [1.0, np.nan, 2.0, 2.0], "y": [0.0, 0.0, np.nan, 0.0], "k": ["a", "a", "a", "a"]})
    clean_t = validate(train, SCHEMA, name="training", nan="match").data
    got = ExactCopies().fit(clean_t, SCHEMA).match(validate(syn, SCHEMA, nan="match").data)
    assert got.tolist() == [False, True, False, True]


@pytest.mark.parametrize("k", [2, 3])
def test_rare_values_equal_counting_by_hand(k) -> None:
    rng = np.random.default_rng(7)
    train = pd.DataFrame(
        {
            "x": rng.integers(0, 30, 50).astype(float),
            "y": np.round(rng.normal(size=50), 2),
            "k": rng.choice(list("abcdefgh"), 50),
        }
    )
    syn = pd.DataFrame(
        {
            "x": rng.integers(0, 30, 40).astype(float),
            "y": np.round(rng.normal(size=40), 2),
            "k": rng.choice(list("abcdefghz"), 40),
        }
    )
    rare = {c: {v for v, n in train[c].astype(str).value_counts().items() if n < k} for c in SCHEMA.columns}
    rows = [any(str(r[c]) in rare[c] for c in SCHEMA.columns) for _, r in syn.iterrows()]
    clean_t = validate(train, SCHEMA, name="training").data
    res = RareValues(k).fit(clean_t, SCHEMA).score(validate(syn, SCHEMA).data)
    assert res.rows.tolist() == rows
    assert res.n_rare_values == sum(len(v) for v in rare.values())
    leaked = {c: {str(v) for v in syn[c] if str(v) in rare[c]} for c in SCHEMA.columns}
    assert res.per_column.set_index("column")["n_leaked"].to_dict() == {c: len(v) for c, v in leaked.items()}
    with pytest.raises(ParameterError, match=r"^rare_k must be in \[2, inf\], got 1$"):
        RareValues(1).fit(clean_t, SCHEMA)
    assert RareValues().k == 2  # values that occur once


def test_a_missing_category_is_not_a_rare_value() -> None:
    """Missing values are not values: one missing category in training is not rare, nor leaked."""
    train = pd.DataFrame({"x": [1.0, 1.0, 2.0, 2.0], "y": [0.0, 0.0, 0.0, 0.0], "k": ["a", "a", None, "b"]})
    syn = pd.DataFrame({"x": [1.0], "y": [0.0], "k": [None]})
    clean_t = validate(train, SCHEMA, name="training").data
    res = RareValues().fit(clean_t, SCHEMA).score(validate(syn, SCHEMA).data)
    assert res.n_rare_values == 1 and res.rows.tolist() == [False]  # only k = b


def test_papers_rule_and_duplicates_replica_on_duplicated_training_rows() -> None:
    train = pd.DataFrame({"x": [1.0, 1.0, 5.0, 9.0], "y": [0.0, 0.0, 2.0, 3.0], "k": ["a", "a", "b", "c"]})
    syn = pd.concat([train.iloc[[0, 0, 2]], pd.DataFrame({"x": [7.0], "y": [1.0], "k": ["c"]})], ignore_index=True)
    papers = ReplicaDetector("fang2024").fit(train, SCHEMA).score(syn)
    # rows 0, 1 copy a duplicated training row: d1 = d2 = 0, undefined, not replicas under the papers' rule
    assert papers.table["ratio"].isna().tolist() == [True, True, False, False]
    assert papers.n_undefined_ratio == 2 and papers.table["is_replica"].tolist()[:3] == [False, False, True]
    assert papers.exact_copy_rate == 0.75 and papers.summary().to_dict()["n_exact_copies"] == 3
    (warning,) = papers.warnings()
    assert "2 synthetic row(s) have an undefined ratio" in warning and "duplicates='replica'" in warning
    counted = ReplicaDetector("fang2024", duplicates="replica").fit(train, SCHEMA).score(syn)
    assert counted.table["is_replica"].tolist()[:3] == [True, True, True]
    assert (
        counted.memorization_rate == papers.memorization_rate + 0.5
        and counted.summary().to_dict()["duplicates"] == "replica"
    )
    assert "counted as replicas" in counted.warnings()[0]
    with pytest.raises(ParameterError, match="duplicates"):
        ReplicaDetector(duplicates="always").fit(train, SCHEMA)


def test_one_row_training_table_reports_its_copies() -> None:
    train = pd.DataFrame({"x": [1.0], "y": [2.0], "k": ["a"]})
    syn = pd.concat([train] * 5 + [pd.DataFrame({"x": [3.0], "y": [2.0], "k": ["a"]})], ignore_index=True)
    res = ReplicaDetector("gower").fit(train, SCHEMA).score(syn)
    assert res.memorization_rate == 0.0 and res.n_undefined_ratio == 6
    assert res.exact_copy_rate == 5 / 6 and "one row" in res.warnings()[0]
    assert ReplicaDetector("gower", duplicates="replica").fit(train, SCHEMA).score(syn).memorization_rate == 5 / 6


def test_summary_has_holdout_baselines_of_every_figure() -> None:
    rng = np.random.default_rng(3)
    train = pd.DataFrame({"x": rng.normal(size=80), "y": rng.normal(size=80), "k": rng.choice(list("ab"), 80)})
    hold = pd.DataFrame({"x": rng.normal(size=50), "y": rng.normal(size=50), "k": rng.choice(list("ab"), 50)})
    syn = pd.concat([train.iloc[:20], hold.iloc[:20]], ignore_index=True)
    s = ReplicaDetector().fit(train, SCHEMA).score(syn, holdout=hold).summary().to_dict()
    assert s["exact_copy_rate"] == 0.5 and s["holdout_exact_copy_rate"] == 0.0
    assert s["rare_value_leakage"] == 0.5 and s["holdout_rare_value_leakage"] == 0.0  # continuous values: all one-off
    assert s["excess_rare_value_leakage"] == 0.5 and s["rare_values"]["n_leaked"] == 40
    assert s["warnings"] == []


def test_rows_hashed_in_chunks_hash_alike(monkeypatch) -> None:
    """Hashing a few rows at a time (bounded temporaries) gives every row the hash it gets in one pass."""
    import tabmem.memorization.copies as copies

    rng = np.random.default_rng(3)
    clean = validate(_table(rng, 200), SCHEMA, name="training", nan="match").data
    fitted = ExactCopies().fit(clean, SCHEMA)
    whole = copies._hash_rows(fitted.num_, fitted.codes_)
    monkeypatch.setattr(copies, "HASH_ROWS", 7)
    np.testing.assert_array_equal(copies._hash_rows(fitted.num_, fitted.codes_), whole)
    syn = validate(_table(rng, 90), SCHEMA, nan="match").data
    assert ExactCopies().fit(clean, SCHEMA).match(syn).tolist() == fitted.match(syn).tolist()
