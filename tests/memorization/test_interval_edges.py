"""An interval that one row cannot support is null, with a warning saying why (never ``[x, x]``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.report.verdict import memorization_finding


def _tables():
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"x": rng.normal(size=40), "c": rng.choice(["p", "q"], 40)})
    fresh = pd.DataFrame({"x": rng.normal(size=4), "c": rng.choice(["p", "q"], 4)})
    return train, fresh, Schema.infer(train)


def test_one_synthetic_and_one_holdout_row_give_null_intervals_and_warnings() -> None:
    train, fresh, schema = _tables()
    detector = ReplicaDetector("fang2024").fit(train, schema)
    summary = detector.score(fresh.iloc[[0]], holdout=fresh.iloc[[1]]).summary().to_dict()
    for key in ("memorization_rate_ci", "holdout_memorization_rate_ci", "excess_memorization_ci"):
        assert all(v is None or np.isnan(v) for v in summary[key]), (key, summary[key])  # null in summary.json
        assert any(
            w.startswith(f"{key} is null: a bootstrap interval needs at least 2 rows") for w in summary["warnings"]
        )
    assert summary["memorization_rate"] is not None  # the point stays
    finding = memorization_finding(summary)
    assert "1 synthetic row and 1 holdout row cannot be resampled" in finding.text
    assert "re-run" not in finding.text


def test_two_rows_give_intervals_and_no_interval_warning() -> None:
    train, fresh, schema = _tables()
    summary = ReplicaDetector("fang2024").fit(train, schema).score(fresh.iloc[:2], holdout=fresh.iloc[2:]).summary()
    assert not [w for w in summary.warnings if "bootstrap interval" in w]
    assert all(v is not None and np.isfinite(v) for v in summary.memorization_rate_ci)


def test_no_bootstrap_requested_gives_null_intervals_without_the_warning() -> None:
    train, fresh, schema = _tables()
    summary = ReplicaDetector("fang2024").fit(train, schema).score(fresh.iloc[[0]]).summary(n_bootstrap=0)
    assert not [w for w in summary.warnings if "bootstrap interval" in w]
