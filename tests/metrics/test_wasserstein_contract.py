"""Wasserstein and sliced Wasserstein: breakdown, options and the sliced value against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wasserstein_distance

from tabmem.data.schema import Schema
from tabmem.errors import SchemaError, TabmemError
from tabmem.metrics import SlicedWasserstein, Wasserstein
from tabmem.metrics.wasserstein import wasserstein_1d

SCHEMA = Schema(("n", "m", "c"), ("n", "m"), ("c",))


def _tables():
    rng = np.random.default_rng(0)
    real = pd.DataFrame({"n": rng.normal(size=40), "m": rng.uniform(0, 10, 40), "c": rng.choice(["a", "b"], 40)})
    syn = pd.DataFrame({"n": rng.normal(0.5, 1, 30), "m": rng.uniform(2, 12, 30), "c": rng.choice(["a", "b", "z"], 30)})
    return real, syn


def _features(df: pd.DataFrame, real: pd.DataFrame) -> np.ndarray:
    """[(x - min) / range with the real table's min and range, one-hot of the real categories]."""
    cols = [((df[c] - real[c].min()) / (real[c].max() - real[c].min())).to_numpy(float) for c in ("n", "m")]
    cols += [(df["c"] == level).to_numpy(float) for level in sorted(real["c"].unique())]
    return np.column_stack(cols)


def _sliced_by_hand(x: np.ndarray, y: np.ndarray, n_projections: int, seed: int) -> float:
    dirs = np.random.default_rng(seed).standard_normal((x.shape[1], n_projections))
    values = []
    for k in range(n_projections):
        d = dirs[:, k] / np.sqrt((dirs[:, k] ** 2).sum())
        values.append(wasserstein_distance(x @ d, y @ d))
    return float(np.mean(values))


def test_wasserstein_1d_accepts_object_arrays_and_is_nan_for_an_empty_side():
    assert wasserstein_1d(np.array([0.0, 1.0], dtype=object), np.array([3.0], dtype=object)) == 2.5
    assert np.isnan(wasserstein_1d(np.array([]), np.array([1.0])))
    assert np.isnan(wasserstein_1d(np.array([1.0]), np.array([])))


def test_breakdown_kinds_and_defaults_of_the_sliced_value():
    real, syn = _tables()
    res = Wasserstein().evaluate(real, syn, SCHEMA)
    assert list(res.breakdown.columns) == ["column", "kind", "wasserstein"]
    assert res.breakdown["kind"].tolist() == ["numerical", "numerical", "categorical"]
    # default: 64 directions drawn from default_rng(0)
    x, y = _features(real, real), _features(syn, real)
    assert res.details["sliced"] == pytest.approx(_sliced_by_hand(x, y, 64, 0), rel=1e-12)
    assert res.details["n_projections"] == 64
    assert Wasserstein(random_state=7).random_state == 7
    again = Wasserstein(n_projections=5, random_state=3).evaluate(real, syn, SCHEMA)
    assert again.details["sliced"] == pytest.approx(_sliced_by_hand(x, y, 5, 3), rel=1e-12)
    assert again.details["n_projections"] == 5


def test_sliced_wasserstein_metric_reports_the_sliced_value():
    real, syn = _tables()
    per_column = Wasserstein(n_projections=9, random_state=4).evaluate(real, syn, SCHEMA)
    res = SlicedWasserstein(n_projections=9, random_state=4).evaluate(real, syn, SCHEMA)
    x, y = _features(real, real), _features(syn, real)
    assert res.value == pytest.approx(_sliced_by_hand(x, y, 9, 4), rel=1e-12)
    assert res.name == "sliced_wasserstein" and res.goal == "minimize"
    assert res.details == {"per_column_mean": per_column.value, "n_projections": 9}
    pd.testing.assert_frame_equal(res.breakdown, per_column.breakdown)
    assert res.value != per_column.value


def test_wasserstein_rejects_bad_options_missing_values_and_empty_schemas():
    real, syn = _tables()
    with pytest.raises(TabmemError, match=r"^n_projections must be a positive integer, got 0$"):
        Wasserstein(n_projections=0).evaluate(real, syn, SCHEMA)
    bad = syn.copy()
    bad.loc[2, "m"] = np.nan
    with pytest.raises(SchemaError, match="'m'"):
        Wasserstein().evaluate(real, bad, SCHEMA)
    empty = pd.DataFrame(index=range(3))
    with pytest.raises(TabmemError, match=r"^Wasserstein needs at least one column$"):
        Wasserstein().evaluate(empty, empty, Schema((), (), ()))
