"""Attacks on degenerate and extreme inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import gaussian_kde
from sklearn.metrics import roc_auc_score

from tabmem import Schema
from tabmem.attacks.density import GaussianKDE
from tabmem.attacks.evaluation import MIN_TARGETS, degenerate_warnings, evaluate_membership
from tabmem.attacks.runner import run_attacks
from tabmem.errors import SchemaError


def test_infinite_scores_are_ranked_like_any_monotone_stand_in() -> None:
    rng = np.random.default_rng(0)
    s = rng.normal(size=60)
    y = rng.random(60) < 0.5
    s[:5] = -np.inf
    s[5:7] = np.inf
    ranked = np.where(s == -np.inf, -1e6, np.where(s == np.inf, 1e6, s))  # any order-preserving stand-in
    a = evaluate_membership(s, y, n_bootstrap=50, random_state=1)
    b = evaluate_membership(ranked, y, n_bootstrap=50, random_state=1)
    assert a.auc == b.auc == roc_auc_score(y, ranked)
    assert a.tpr_at_fpr == b.tpr_at_fpr and a.auc_ci == b.auc_ci
    with pytest.raises(Exception, match="NaN"):
        evaluate_membership(np.r_[np.nan, s[1:]], y)


def test_resolution_and_degenerate_counts() -> None:
    res = evaluate_membership([0.9, 0.1], [True, False], n_bootstrap=20)
    assert res.min_resolved_fpr == 1.0 and res.to_dict()["min_resolved_fpr"] == 1.0
    assert np.isnan(res.auc_ci[0]) and res.to_dict()["auc_ci"] == [None, None]  # one of each: no interval
    assert degenerate_warnings(MIN_TARGETS, MIN_TARGETS) == []
    (w,) = degenerate_warnings(1, 1)
    assert "only 1 member(s) and 1 non-member(s)" in w and "resolve is 1" in w
    res = evaluate_membership(np.arange(250.0), np.arange(250) < 50, n_bootstrap=0)
    assert res.min_resolved_fpr == 1 / 200


def test_kde_equals_scipy_and_survives_extreme_magnitudes() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(80, 3))
    q = rng.normal(size=(10, 3))
    ours = GaussianKDE("scott").fit(x).logpdf(q)
    assert np.allclose(ours, gaussian_kde(x.T).logpdf(q.T), rtol=1e-10)
    far = np.vstack([q, [[1e300, 0.0, 0.0]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = GaussianKDE("scott").fit(x).logpdf(far)
    assert np.isneginf(out[-1]) and np.allclose(out[:-1], ours)


def _tables(big: float | None = None):
    rng = np.random.default_rng(4)

    def draw(n):
        return pd.DataFrame({"a": rng.normal(50, 10, n), "b": rng.normal(0, 1, n), "k": rng.choice(list("xyz"), n)})

    members, non_members = draw(60), draw(60)
    synthetic = pd.concat([members.iloc[:30], draw(30)], ignore_index=True)
    if big is not None:
        synthetic.loc[40, "a"] = big
    return members, non_members, synthetic, Schema(("a", "b", "k"), ("a", "b"), ("k",))


def test_density_attack_on_a_synthetic_table_holding_1e15() -> None:
    """This used to raise a LinAlgError deep in the KDE; the outlier (at the value domain's bound) is one far point."""
    members, non_members, synthetic, schema = _tables(1e15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report = run_attacks(members, non_members, synthetic, schema, attacks=["density"], n_bootstrap=10)
    auc = report.results["density"].auc
    assert 0.0 <= auc <= 1.0 and report.skipped == {}
    assert report.summary().meta.schema["numerical"] == ["a", "b"]


def test_attacks_refuse_a_synthetic_value_beyond_the_value_domain() -> None:
    members, non_members, synthetic, schema = _tables(1e308)
    with pytest.raises(SchemaError, match=r"^synthetic table: column 'a' row 40 holds a value of magnitude 1e308, "):
        run_attacks(members, non_members, synthetic, schema, attacks=["density"], n_bootstrap=10)


def test_few_targets_warn() -> None:
    members, non_members, synthetic, schema = _tables()
    report = run_attacks(members.iloc[:5], non_members.iloc[:5], synthetic, schema, attacks=["dcr"], n_bootstrap=10)
    assert report.warnings and "5 member(s)" in report.warnings[0]
    assert report.summary().meta.warnings == report.warnings
