"""Quality metrics at extreme magnitudes: exact where defined, a stated reason where not (issue 12, item 1)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.stats import pearsonr

from tabmem import Schema
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


def test_every_null_has_a_reason_at_1e308() -> None:
    rng = np.random.default_rng(1)
    real = pd.DataFrame({"a": rng.normal(50, 10, 120), "b": rng.normal(size=120), "k": rng.choice(list("xy"), 120)})
    syn = real.sample(120, replace=True, random_state=2).reset_index(drop=True)
    syn.loc[3, "a"] = 1e308
    schema = Schema(("a", "b", "k"), ("a", "b"), ("k",))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report = quality_report(real, syn, schema, metrics=["shape", "trend", "mmd", "wasserstein"])
    s = report.summary()
    assert s["mmd"] is None and "column 'a' of the synthetic table" in s["skipped"]["mmd"]
    assert s["shape"] is not None and s["trend"] is not None
    assert s["wasserstein"] > 1e290  # documented: unbounded, in units of the real range
    assert s["schema"]["numerical"] == ["a", "b"]
