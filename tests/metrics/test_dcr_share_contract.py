"""DCR share: strict comparison, tie count, details, options and messages on hand-made tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics import DCRShare
from tabmem.metrics.dcr_share import nearest_l1

SCHEMA = Schema(("a", "c"), ("a",), ("c",))


def _frame(a, c):
    return pd.DataFrame({"a": np.asarray(a, float), "c": c})


def test_share_is_strict_ties_are_counted_and_details_by_hand():
    # training range of a: 8 (exact binary fractions); the holdout's range plays no part
    train = _frame([0.0, 8.0, 4.0], ["x", "y", "x"])
    hold = _frame([2.0, 6.0], ["x", "y"])
    syn = _frame([0.0, 3.0, 7.0, 5.0, 0.0], ["x", "x", "y", "x", "x"])
    # L1 on [a / 8, one-hot]: row 0 -> train 0 / hold 1/4 (closer); row 1 -> 1/8 / 1/8 (tie, not closer);
    # row 2 -> 1/8 / 1/8 (tie); row 3 -> 1/8 / 3/8 (closer); row 4 = row 0
    res = DCRShare().evaluate(train, syn, SCHEMA, holdout=hold)
    np.testing.assert_array_equal(res.breakdown["dcr_train"], [0.0, 0.125, 0.125, 0.125, 0.0])
    np.testing.assert_array_equal(res.breakdown["dcr_holdout"], [0.25, 0.125, 0.125, 0.375, 0.25])
    assert list(res.breakdown.columns) == ["synthetic_row", "dcr_train", "dcr_holdout", "closer_to_train"]
    assert res.breakdown["synthetic_row"].tolist() == [0, 1, 2, 3, 4]
    assert res.breakdown["closer_to_train"].tolist() == [True, False, False, True, True]
    assert res.value == 0.6
    assert res.details == {
        "ideal": 3 / 5,
        "n_train": 3,
        "n_holdout": 2,
        "ties": 2,
        "median_dcr_train": 0.125,
        "median_dcr_holdout": 0.25,
    }


def test_options_are_stored_and_checked():
    assert (DCRShare(n_jobs=3).n_jobs, DCRShare(block_rows=5).block_rows) == (3, 5)
    t = _frame([0.0, 1.0], ["x", "y"])
    with pytest.raises(TabmemError, match=r"^block_rows must be a positive integer or None, got 0$"):
        DCRShare(block_rows=0).evaluate(t, t, SCHEMA, holdout=t)
    with pytest.raises(TabmemError, match=r"^n_jobs must be a non-zero integer or None"):
        DCRShare(n_jobs=0).evaluate(t, t, SCHEMA, holdout=t)
    msg = r"^dcr_share needs a holdout table \(real rows not used for training; same size as the training table\)$"
    with pytest.raises(TabmemError, match=msg):
        DCRShare().evaluate(t, t, SCHEMA)


def test_nearest_l1_with_one_reference_row_and_an_empty_one():
    train = _frame([0.0, 4.0], ["x", "y"])
    enc = TableEncoder(SCHEMA).fit(train)
    clean = enc.validate(train)
    one = clean.iloc[[1]]
    np.testing.assert_allclose(nearest_l1(enc, one, clean), [1.0 + 2.0, 0.0], atol=1e-12)
    with pytest.raises(TabmemError, match=r"^the reference table is empty$"):
        nearest_l1(enc, clean.iloc[:0], clean)
