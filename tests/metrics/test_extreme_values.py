"""Quality metrics at extreme magnitudes: exact where defined, a stated reason where not."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr

from tabmem import Schema
from tabmem.errors import SchemaError
from tabmem.metrics.report import quality_report
from tabmem.metrics.shape import ks_complement
from tabmem.metrics.trend import _correlations


def test_correlations_keep_their_bits_and_survive_1e308() -> None:
    rng = np.random.default_rng(0)
    num = rng.normal(size=(200, 3)) * [1.0, 1e5, 3e-3]
    xm = num - num.mean(axis=0)
    norms = np.sqrt(np.einsum("ij,ij->j", xm, xm))
    plain = np.clip((xm.T @ xm) / np.outer(norms, norms), -1, 1)  # the formula without rescaling
    assert np.array_equal(_correlations(num), plain)  # power-of-two scaling changes no bit
    big = num.copy()
    big[:, 1] *= 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        corr = _correlations(big)
    assert np.isclose(corr[0, 1], pearsonr(num[:, 0], num[:, 1])[0], rtol=1e-12)


def test_ks_rounding_leaves_huge_values_alone() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert ks_complement(np.array([1.0, 2.0, 1e308]), np.array([1.0, 2.0, 1e308])) == 1.0
        assert ks_complement(np.array([0.1 + 0.2]), np.array([0.3])) == 1.0  # 14-decimal rounding still applies


def _quality_tables(big: float) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    rng = np.random.default_rng(1)
    real = pd.DataFrame({"a": rng.normal(50, 10, 120), "b": rng.normal(size=120), "k": rng.choice(list("xy"), 120)})
    syn = real.sample(120, replace=True, random_state=2).reset_index(drop=True)
    syn.loc[3, "a"] = big
    return real, syn, Schema(("a", "b", "k"), ("a", "b"), ("k",))


def test_every_metric_has_a_value_at_the_domain_bound() -> None:
    real, syn, schema = _quality_tables(1e15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report = quality_report(real, syn, schema, metrics=["shape", "trend", "mmd", "wasserstein"])
    s = report.summary().to_dict()
    assert all(s[m] is not None for m in ("shape", "trend", "mmd", "wasserstein")) and not s.get("skipped")
    assert s["wasserstein"] > 1e10  # documented: unbounded, in units of the real range
    assert s["schema"]["numerical"] == ["a", "b"]


def test_a_value_beyond_the_domain_is_refused_before_any_metric() -> None:
    real, syn, schema = _quality_tables(1e308)
    with pytest.raises(SchemaError, match=r"^synthetic table: column 'a' row 3 holds a value of magnitude 1e308, "):
        quality_report(real, syn, schema, metrics=["shape", "trend", "mmd", "wasserstein"])


def test_dcr_l1_and_alpha_beta_exact_with_a_far_synthetic_row() -> None:
    """A synthetic row far outside the real range takes the exact float64 path (brute-force L1 here)."""
    from tabmem.data.encoding import TableEncoder
    from tabmem.data.schema import validate
    from tabmem.metrics.dcr_share import nearest_l1

    rng = np.random.default_rng(5)
    schema = Schema(("a", "b", "k"), ("a", "b"), ("k",))
    real = pd.DataFrame({"a": rng.normal(0, 1, 50), "b": rng.normal(0, 1, 50), "k": rng.choice(list("xy"), 50)})
    syn = pd.DataFrame({"a": rng.normal(0, 1, 20), "b": rng.normal(0, 1, 20), "k": rng.choice(list("xy"), 20)})
    syn.loc[4, "a"] = 1e15  # the value domain's bound
    r, s = validate(real, schema, name="training").data, validate(syn, schema).data
    enc = TableEncoder(schema).fit(r)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = nearest_l1(enc, r, s)
    rng_ = (r[["a", "b"]].max() - r[["a", "b"]].min()).to_numpy()
    brute = [
        min(
            float(np.abs((s.iloc[i][["a", "b"]].to_numpy(float) - r.iloc[j][["a", "b"]].to_numpy(float)) / rng_).sum())
            + 2.0 * (s.iloc[i]["k"] != r.iloc[j]["k"])
            for j in range(len(r))
        )
        for i in range(len(s))
    ]
    assert np.allclose(got, brute, rtol=1e-12) and got[4] > 1e14
