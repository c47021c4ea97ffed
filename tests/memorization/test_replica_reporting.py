"""What a replica audit reports, counted by hand: warnings, rare-value and exact-copy baselines, files.

Written from mutation-testing survivors (``benchmarks/mutation.py --modules replicas``): every
expected number below is counted from the small tables in this file, not read back from the code.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from tabmem import Schema
from tabmem._io import dumps_json
from tabmem.data.schema import validate
from tabmem.errors import NotFittedError, ParameterError, SchemaError, set_option_lookup
from tabmem.memorization.replicas import ReplicaDetector

SCHEMA = Schema(("x", "y", "k"), ("x", "y"), ("k",))


def _rows(*rows: tuple) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=["x", "y", "k"]).astype({"x": float, "y": float})


# x: 1 and 3 occur once (rare at k = 2), 2 and 4 twice; y: one value, never rare; k: c and d occur once
TRAIN = _rows((1, 0, "a"), (2, 0, "a"), (2, 0, "b"), (3, 0, "b"), (4, 0, "c"), (4, 0, "d"))
# rows 0 and 2 copy training rows; rare values: row 0 x=1, row 1 x=1 and k=c, row 3 x=3 and k=d
SYN = _rows((1, 0, "a"), (1, 0, "c"), (2, 0, "a"), (3, 0, "d"))
# rows 1 and 2 copy a training row; rare values: row 0 x=3 only
HOLD = _rows((3, 0, "a"), (2, 0, "b"), (2, 0, "b"))


@pytest.fixture
def audit():  # per test, not per module: mutmut links a function to the tests that run it
    return ReplicaDetector().fit(TRAIN, SCHEMA).score(SYN, holdout=HOLD)


def test_summary_baselines_equal_hand_counts(audit) -> None:
    s = audit.summary(n_bootstrap=0).to_dict()
    assert s["exact_copy_rate"] == 0.5 and s["n_exact_copies"] == 2
    assert s["holdout_exact_copy_rate"] == pytest.approx(2 / 3)
    assert s["excess_exact_copy_rate"] == pytest.approx(0.5 - 2 / 3)
    assert s["rare_value_leakage"] == 0.75 and s["holdout_rare_value_leakage"] == pytest.approx(1 / 3)
    assert s["excess_rare_value_leakage"] == pytest.approx(0.75 - 1 / 3)
    # distinct rare training values: 4 (x=1, x=3, k=c, k=d); all 4 in the synthetic rows, x=3 in the holdout
    assert s["rare_values"] == {"k": 2, "n_rare_values": 4, "n_leaked": 4, "n_in_holdout": 1}
    assert s["n_undefined_ratio"] == 0 and s["warnings"] == []


def test_rare_values_table_equals_hand_counts(audit) -> None:
    table = audit.rare_values()
    assert table.columns.tolist() == [
        "column",
        "kind",
        "n_rare",
        "n_leaked",
        "rows",
        "holdout_n_leaked",
        "holdout_rows",
    ]
    assert table.set_index("column").loc[:, "n_rare":].to_dict("index") == {
        "x": {"n_rare": 2, "n_leaked": 2, "rows": 3, "holdout_n_leaked": 1, "holdout_rows": 1},
        "y": {"n_rare": 0, "n_leaked": 0, "rows": 0, "holdout_n_leaked": 0, "holdout_rows": 0},
        "k": {"n_rare": 2, "n_leaked": 2, "rows": 2, "holdout_n_leaked": 0, "holdout_rows": 0},
    }
    assert table["kind"].tolist() == ["numerical", "numerical", "categorical"]


def test_results_without_rare_values_report_none(audit) -> None:
    """A result built without rare-value counts (or with a holdout lacking them) reports none of those keys."""
    bare = dataclasses.replace(audit, rare=None, holdout=None)
    empty = bare.rare_values()
    assert empty.empty and empty.columns.tolist() == ["column", "kind", "n_rare", "n_leaked", "rows"]
    assert "rare_value_leakage" not in bare.summary(n_bootstrap=0).to_dict()
    half = dataclasses.replace(audit, holdout=dataclasses.replace(audit.holdout, rare=None))
    s = half.summary(n_bootstrap=0).to_dict()
    assert s["rare_value_leakage"] == 0.75 and "holdout_rare_value_leakage" not in s
    assert "n_in_holdout" not in s["rare_values"] and "excess_rare_value_leakage" not in s
    assert "holdout_n_leaked" not in half.rare_values()


def test_save_writes_the_four_files(audit, tmp_path) -> None:
    summary = audit.save(tmp_path, seconds=1.5, n_bootstrap=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "rare_values.csv",
        "records.csv",
        "replicas.csv",
        "summary.json",
    ]
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["seconds"] == 1.5 == summary.seconds and list(written)[-1] == "seconds"
    assert written == json.loads(dumps_json(summary.to_dict()))
    rare = pd.read_csv(tmp_path / "rare_values.csv")
    assert rare["rows"].tolist() == [3, 0, 2] and rare["holdout_rows"].tolist() == [1, 0, 0]
    records = pd.read_csv(tmp_path / "records.csv")
    assert records["replica_count"].tolist() == [1, 1, 0, 0, 0, 0]  # the two copies' training rows


def test_undefined_ratio_warnings_word_the_cause_and_the_rate() -> None:
    dup = _rows((1, 0, "a"), (1, 0, "a"), (5, 2, "b"), (9, 3, "c"))
    syn = pd.concat([dup.iloc[[0, 0, 2]], _rows((7, 1, "c"))], ignore_index=True)
    res = ReplicaDetector().fit(dup, SCHEMA).score(syn)
    cause = "(d1 = d2 = 0: copies of rows that are duplicated in the training table)"
    head = f"2 synthetic row(s) have an undefined ratio d1/d2 {cause}; the papers' rule counts them as not memorized"
    assert res.warnings() == [
        f"{head}, while the exact-copy rate is 75.00%; pass duplicates='replica' to count exact copies as replicas"
    ]
    assert res.summary(n_bootstrap=0).to_dict()["n_undefined_ratio"] == 2
    try:  # under a command with --duplicates replica the flag is named; without it no advice is given
        set_option_lookup(lambda flag, value: (flag, value) == ("--duplicates", "replica"))
        assert res.warnings()[0].endswith("75.00%; pass --duplicates replica to count exact copies as replicas")
        set_option_lookup(lambda flag, value: False)
        assert res.warnings()[0].endswith("while the exact-copy rate is 75.00%")
    finally:
        set_option_lookup(None)
    # two training rows, both the same: still "duplicated", not "one row"
    two = ReplicaDetector().fit(dup.iloc[[0, 1]], SCHEMA).score(dup.iloc[[0]])
    assert two.warnings() == [
        f"1 synthetic row(s) have an undefined ratio d1/d2 {cause}; the papers' rule counts them as not memorized, "
        "while the exact-copy rate is 100.00%; pass duplicates='replica' to count exact copies as replicas"
    ]


def test_one_row_training_warning_counts_the_copies_it_calls_replicas() -> None:
    train = _rows((1, 2, "a"))
    syn = pd.concat([train] * 5 + [_rows((3, 2, "a"))], ignore_index=True)
    res = ReplicaDetector(duplicates="replica").fit(train, SCHEMA).score(syn)
    assert res.warnings() == [
        "6 synthetic row(s) have an undefined ratio d1/d2 (the training table has one row, so there is no second "
        "neighbour); 5 of them are exact copies of training rows and are counted as replicas (the papers' rule "
        "would not count them)"
    ]


def test_validate_uses_the_detectors_policies_and_names_the_table() -> None:
    with pytest.raises(NotFittedError, match=r"^ReplicaDetector is not fitted: call fit\(train, schema\) first$"):
        ReplicaDetector().validate(TRAIN)
    det = ReplicaDetector().fit(TRAIN, SCHEMA)
    unseen = _rows((1, 0, "z"))
    with pytest.raises(SchemaError, match=r"^synthetic table: column 'k' has 1 row\(s\) with categories never seen"):
        det.validate(unseen)
    with pytest.raises(SchemaError, match=r"^holdout table: column 'k'"):
        det.validate(unseen, name="holdout")
    two = _rows((1, 0, "z"), (2, 0, "a"))
    assert det.validate(two, unseen="drop").index.tolist() == [1]
    assert det.validate(two, unseen="mismatch").index.tolist() == [0, 1]
    extra = SYN.assign(extra=1)
    with pytest.raises(SchemaError, match=r"^synthetic table: column\(s\) not in the training data: 'extra'"):
        det.validate(extra)
    assert det.validate(extra, extra="ignore").data.columns.tolist() == ["x", "y", "k"]
    missing = _rows((np.nan, 0, "a"), (2, 0, "a"))
    with pytest.raises(SchemaError, match=r"^synthetic table: column 'x' has 1 missing value"):
        det.validate(missing)
    assert det.validate(missing, nan="drop").index.tolist() == [1]  # file positions kept
    # the detector's own policy is the default; "drop" must not become the index's "match"
    assert ReplicaDetector(nan="drop").fit(TRAIN, SCHEMA).validate(missing).index.tolist() == [1]
    # validating once and scoring the result equals scoring the DataFrame
    once = det.score(det.validate(SYN))
    pd.testing.assert_frame_equal(once.table, det.score(SYN).table)


def test_score_table_columns_and_progress() -> None:
    done: list[int] = []
    res = ReplicaDetector().fit(TRAIN, SCHEMA).score(SYN, holdout=HOLD, progress=done.append)
    assert res.table.columns.tolist() == [
        "synthetic_row", "nn1", "nn2", "d1", "d2", "ratio", "is_replica", "exact_copy", "rare_value"
    ]  # fmt: skip
    assert res.table["rare_value"].tolist() == [True, True, False, True]
    assert res.table["exact_copy"].tolist() == [True, False, True, False]
    assert sum(done) == len(SYN) + len(HOLD)  # rows done, synthetic then holdout


def test_undefined_ratios_raise_no_numpy_warning() -> None:
    """0/0 ratios (copies of duplicated training rows) are expected: no RuntimeWarning reaches the user."""
    dup = _rows((1, 0, "a"), (1, 0, "a"), (5, 2, "b"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = ReplicaDetector().fit(dup, SCHEMA).score(dup)
    assert res.n_undefined_ratio == 2 and np.isnan(res.ratio[:2]).all()


def test_no_replicas_gives_undefined_concentration_without_numpy_warnings() -> None:
    res = ReplicaDetector().fit(TRAIN, SCHEMA).score(_rows((50, 7, "a"), (60, 9, "b")))
    assert not res.table["is_replica"].any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0/0 shares and Gini are NaN by rule, not by a numpy warning
        tail = res.heavy_tail()
        res.summary(n_bootstrap=0).to_dict()
    assert list(tail) == ["n_records_with_replicas", "top_1pct_share", "top_10pct_share", "gini"]
    assert tail["n_records_with_replicas"] == 0 and all(
        np.isnan(v) for k, v in tail.items() if k != "n_records_with_replicas"
    )


def test_constructor_stores_its_arguments_and_fit_checks_them() -> None:
    det = ReplicaDetector()
    assert (det.distance, det.threshold, det.nan, det.n_jobs, det.duplicates, det.rare_k) == (
        "gower",
        1 / 3,
        "error",
        None,
        "papers",
        2,
    )
    assert ReplicaDetector(n_jobs=2).n_jobs == 2
    bad = [
        ({"threshold": 0.0}, r"^threshold must be in \(0"),
        ({"threshold": 1.5}, r"^threshold must be in \(0"),
        ({"n_jobs": 0}, r"^n_jobs must be a non-zero integer"),
        ({"memory_budget": 0}, r"^memory_budget must be a positive integer"),
        ({"duplicates": "always"}, r"^duplicates must be one of 'papers', 'replica'"),
        ({"rare_k": 1}, r"^rare_k must be in \[2, inf\], got 1$"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ParameterError, match=message):
            ReplicaDetector(**kwargs).fit(TRAIN, SCHEMA)
    assert ReplicaDetector(threshold=1.0).fit(TRAIN, SCHEMA).score(SYN).threshold == 1.0  # 1 is allowed


def test_holdout_is_scored_with_the_same_options_and_named_holdout() -> None:
    det = ReplicaDetector().fit(TRAIN, SCHEMA)
    odd = pd.concat([HOLD, _rows((np.nan, 0, "a"), (2, 0, "z"))], ignore_index=True).assign(extra=0)
    res = det.score(SYN.assign(extra=0), holdout=odd, nan="drop", unseen="drop", extra="ignore")
    assert res.holdout.table["synthetic_row"].tolist() == [0, 1, 2]  # the NaN and unseen rows dropped
    assert res.summary(n_bootstrap=0).to_dict()["distance"] == "gower"  # the default
    with pytest.raises(SchemaError, match=r"^holdout table: column 'k'"):
        det.score(SYN, holdout=_rows((2, 0, "z")))


def test_copies_are_replicas_whatever_the_second_distance() -> None:
    """A copy has ratio 0, also when its second neighbour is at distance exactly 1 or the table has 2 rows."""
    one = Schema(("k",), (), ("k",))
    res = ReplicaDetector("gower").fit(pd.DataFrame({"k": ["a", "b"]}), one).score(pd.DataFrame({"k": ["a"]}))
    assert (res.table["d1"].tolist(), res.table["d2"].tolist()) == ([0.0], [1.0])
    assert res.table["ratio"].tolist() == [0.0] and res.memorization_rate == 1.0
    two = ReplicaDetector().fit(TRAIN.iloc[[0, 5]], SCHEMA).score(TRAIN.iloc[[0, 5]])
    assert two.table["ratio"].tolist() == [0.0, 0.0] and two.n_undefined_ratio == 0


def test_fit_infers_or_takes_the_schema_and_passes_its_options_on() -> None:
    inferred = ReplicaDetector().fit(TRAIN)
    assert inferred.schema_ == Schema.infer(TRAIN)
    checked = validate(TRAIN, SCHEMA, name="training")
    det = ReplicaDetector(n_jobs=1, memory_budget=1 << 20).fit(checked)  # a validated table brings its schema
    assert det.schema_ == SCHEMA and det.encoder_.schema == SCHEMA
    assert (det.index_.n_jobs, det.index_.memory_budget) == (1, 1 << 20)
    assert det.distance_ is det.index_.distance_ and det.distance_ is not None
    with pytest.raises(SchemaError, match=r"^training table: column 'x' has 1 missing value"):
        ReplicaDetector().fit(_rows((np.nan, 0, "a"), (2, 0, "b")), SCHEMA)


@pytest.mark.parametrize("nan", ["match", "drop"])
def test_missing_training_values_are_matched_under_match_and_drop(nan) -> None:
    """nan='drop' drops scored rows only: the training table's missing values are compared as values."""
    train = _rows((np.nan, 0, "a"), (2, 0, "b"), (5, 1, "a"))
    res = ReplicaDetector(nan=nan).fit(train, SCHEMA).score(_rows((np.nan, 0, "a"), (5, 1, "a")))
    # both scored rows copy a training row; "drop" drops the scored row with a missing value
    assert res.table["exact_copy"].tolist() == ([True, True] if nan == "match" else [True])
    assert res.table["synthetic_row"].tolist() == ([0, 1] if nan == "match" else [1])
