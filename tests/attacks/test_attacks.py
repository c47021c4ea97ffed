"""Attacks against brute-force / independent references, a conformance battery over the registry, leaks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rapidfuzz.distance import Levenshtein
from scipy.spatial.distance import cdist
from scipy.stats import gaussian_kde
from sklearn.preprocessing import StandardScaler

from tabmem.attacks import ATTACKS, evaluate_membership, get_attack
from tabmem.attacks.leaks import one_digit_leak
from tabmem.data.serialization import get_serializer
from tabmem.errors import SchemaError, TabmemError


def _fit(name, synthetic, schema, reference=None, shadows=None, **kw):
    """Fit any registered attack; shadow-model attacks get the toy shadow set (conftest.make_shadows)."""
    return get_attack(name, **kw).fit(
        synthetic, schema, reference=reference, shadows=shadows if ATTACKS[name].needs_shadows else None
    )


# ----------------------------------------------------------------- conformance battery
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_conformance(name, tables, shadows):
    members, non_members, synthetic, reference, schema = tables
    attack = get_attack(name)
    assert _fit(name, synthetic, schema, reference, shadows) is not None
    assert attack.fit(synthetic, schema, reference=reference, shadows=shadows) is attack
    targets = pd.concat([members, non_members], ignore_index=True)
    s1 = attack.score(targets)
    assert s1.shape == (len(targets),) and s1.dtype == np.float64 and np.isfinite(s1).all()
    s2 = _fit(name, synthetic, schema, reference, shadows).score(targets)
    np.testing.assert_array_equal(s1, s2)  # deterministic
    assert attack.score(targets.iloc[:0]).shape == (0,)
    # column order of the targets does not matter
    np.testing.assert_allclose(attack.score(targets[targets.columns[::-1]]), s1)
    with pytest.raises(TabmemError, match="not fitted"):
        get_attack(name).score(targets)
    with pytest.raises(TabmemError, match="empty"):
        _fit(name, synthetic.iloc[:0], schema, reference, shadows)
    with pytest.raises(SchemaError, match="missing column"):
        attack.score(targets.drop(columns=["x"]))
    # copies of members in the synthetic data must look like members (Groundhog's whole-table features
    # barely move with one ordinary row: it is tested on outliers, in test_shadow_attacks.py)
    leak = pd.concat([members, synthetic.iloc[:30]], ignore_index=True)
    s = _fit(name, leak, schema, reference, shadows).score(targets)
    if name != "groundhog":
        assert evaluate_membership(s, np.r_[np.ones(120, bool), np.zeros(120, bool)], n_bootstrap=0).auc > 0.6
    if ATTACKS[name].needs_shadows:
        with pytest.raises(TabmemError, match="shadow"):
            get_attack(name).fit(synthetic, schema, reference=reference)


def test_unknown_attack_and_bad_params(tables):
    _, _, synthetic, _, schema = tables
    with pytest.raises(TabmemError, match="unknown attack 'nope'"):
        get_attack("nope")
    with pytest.raises(TabmemError, match="bad argument"):
        get_attack("dcr", nope=1)
    with pytest.raises(TabmemError, match="epsilon"):
        _fit("mc", synthetic, schema, epsilon="big")
    with pytest.raises(TabmemError, match="bandwidth"):
        _fit("density", synthetic, schema, bandwidth=-1.0)
    with pytest.raises(TabmemError, match="unknown distance"):
        _fit("dcr", synthetic, schema, distance="cosine")
    with pytest.raises(TabmemError, match="reference"):
        _fit("domias", synthetic, schema)


# ----------------------------------------------------------------------- references
@pytest.mark.parametrize("fmt", ["canonical", "paper_sft", "paper_tlp"])
def test_levatt_equals_brute_force(tables, fmt):
    members, non_members, synthetic, _, schema = tables
    targets = pd.concat([members, non_members], ignore_index=True)
    s = _fit("levatt", synthetic, schema, serializer=fmt).score(targets)
    ser = get_serializer(fmt).fit(synthetic, schema)
    syn, tgt = ser.serialize(synthetic), ser.serialize(targets)
    ref = np.array([-min(Levenshtein.distance(t, x) for x in syn) for t in tgt], dtype=float)
    np.testing.assert_array_equal(s, ref)


def test_levatt_long_strings_rejected(tables):
    members, _, synthetic, _, schema = tables
    with pytest.raises(TabmemError, match="max_length=10"):
        _fit("levatt", synthetic, schema, max_length=10)
    a = _fit("levatt", synthetic, schema, max_length=None)
    assert a.score(members).shape == (120,)


def _features(table, synthetic, schema):
    """Brute-force DCR features: StandardScaler fitted on synthetic numericals, one-hot / sqrt(2)."""
    num = list(schema.numerical)
    sc = StandardScaler().fit(synthetic[num].to_numpy(float))
    cats = sorted(synthetic["k"].astype(str).unique())
    onehot = np.stack([(table["k"].astype(str) == c).to_numpy(float) for c in cats], axis=1) / np.sqrt(2)
    return np.hstack([sc.transform(table[num].to_numpy(float)), onehot])


def test_dcr_l2_equals_brute_force(tables):
    members, non_members, synthetic, _, schema = tables
    targets = pd.concat([members, non_members], ignore_index=True)
    s = _fit("dcr", synthetic, schema).score(targets)
    d = cdist(_features(targets, synthetic, schema), _features(synthetic, synthetic, schema))
    np.testing.assert_allclose(s, -d.min(axis=1), rtol=1e-9, atol=1e-9)


def test_dcr_gower_equals_brute_force(tables):
    members, _, synthetic, _, schema = tables
    s = _fit("dcr", synthetic, schema, distance="gower").score(members)
    num = list(schema.numerical)
    rng_ = synthetic[num].max() - synthetic[num].min()
    a, b = members[num].to_numpy(float), synthetic[num].to_numpy(float)
    part = np.minimum(np.abs(a[:, None, :] - b[None, :, :]) / rng_.to_numpy(), 1).sum(axis=2)
    part += members["k"].to_numpy()[:, None] != synthetic["k"].to_numpy()[None, :]
    np.testing.assert_allclose(s, -(part / 4).min(axis=1), rtol=1e-9, atol=1e-12)


def test_mc_median_and_percentile_equal_brute_force(tables):
    members, non_members, synthetic, _, schema = tables
    targets = pd.concat([members, non_members], ignore_index=True)
    d = cdist(_features(targets, synthetic, schema), _features(synthetic, synthetic, schema))
    # median heuristic on squared distances (Hilprecht Eq. 4, DOMIAS' code)
    eps2 = np.median(d.min(axis=1) ** 2)
    ref = (d**2 < eps2).sum(axis=1) / d.shape[1]
    mc = _fit("mc", synthetic, schema)
    np.testing.assert_allclose(mc.score(targets), ref)
    assert mc.epsilon_ == pytest.approx(np.sqrt(eps2))
    for p in (0.5, 5.0):
        eps = np.percentile(d, p)
        mcp = _fit("mc", synthetic, schema, epsilon="percentile", percentile=p)
        np.testing.assert_allclose(mcp.score(targets), (d < eps).sum(axis=1) / d.shape[1])
        assert mcp.epsilon_ == pytest.approx(eps, rel=1e-9)
    fixed = _fit("mc", synthetic, schema, epsilon=1.0).score(targets)
    np.testing.assert_allclose(fixed, (d < 1.0).sum(axis=1) / d.shape[1])


def _kde_features(table, synthetic, schema):
    num = list(schema.numerical) + ["k"]
    x = synthetic[num].to_numpy(float)
    return (table[num].to_numpy(float) - x.mean(0)) / x.std(0)


@pytest.mark.parametrize("bw", ["silverman", "scott", 0.3])
def test_density_equals_scipy_gaussian_kde(tables, bw):
    members, non_members, synthetic, _, schema = tables
    targets = pd.concat([members, non_members], ignore_index=True)
    s = _fit("density", synthetic, schema, bandwidth=bw).score(targets)
    kde = gaussian_kde(_kde_features(synthetic, synthetic, schema).T, bw_method=bw)
    np.testing.assert_allclose(s, kde.logpdf(_kde_features(targets, synthetic, schema).T), rtol=1e-9, atol=1e-9)


def test_domias_equals_scipy_ratio(tables):
    members, non_members, synthetic, reference, schema = tables
    targets = pd.concat([members, non_members], ignore_index=True)
    s = _fit("domias", synthetic, schema, reference=reference).score(targets)
    f = lambda t: _kde_features(t, synthetic, schema).T  # noqa: E731
    p_s = gaussian_kde(f(synthetic)).pdf(f(targets))
    p_r = gaussian_kde(f(reference)).pdf(f(targets))
    np.testing.assert_allclose(np.exp(s), p_s / p_r, rtol=1e-8)


def test_density_pca_and_degenerate_features(tables):
    members, _, synthetic, _, schema = tables
    s = _fit("density", synthetic, schema, preprocess="pca", n_components=2).score(members)
    z = _kde_features(synthetic, synthetic, schema)
    _, _, vt = np.linalg.svd(z, full_matrices=False)
    ref = gaussian_kde((z @ vt[:2].T).T, bw_method="silverman").logpdf(
        (_kde_features(members, synthetic, schema) @ vt[:2].T).T
    )
    np.testing.assert_allclose(s, ref, rtol=1e-9, atol=1e-9)
    # a constant column makes scipy's covariance singular; here that direction is projected out
    const = synthetic.assign(z=1.0)
    out = _fit("density", const, schema).score(members.assign(z=1.0))
    assert np.isfinite(out).all()


# -------------------------------------------------------------------- evidence (small)
def test_one_digit_leak_levatt_near_one(tables):
    members, non_members, _, _, schema = tables
    synthetic = one_digit_leak(members, schema, random_state=0)
    ser = get_serializer("canonical").fit(members, schema)
    # exactly one character differs per row, and the value really changed
    for a, b in zip(ser.serialize(members), ser.serialize(synthetic)):
        assert Levenshtein.distance(a, b) == 1
    targets = pd.concat([members, non_members], ignore_index=True)
    y = np.r_[np.ones(120, bool), np.zeros(120, bool)]
    auc = evaluate_membership(_fit("levatt", synthetic, schema).score(targets), y, n_bootstrap=0).auc
    assert auc > 0.97
    np.testing.assert_array_equal(one_digit_leak(members, schema, random_state=0), synthetic)  # seeded


def test_heldout_as_synthetic_near_chance(tables, shadows):
    members, non_members, synthetic, reference, schema = tables
    targets = pd.concat([members, non_members], ignore_index=True)
    y = np.r_[np.ones(120, bool), np.zeros(120, bool)]
    for name in sorted(ATTACKS):
        auc = evaluate_membership(
            _fit(name, synthetic, schema, reference=reference, shadows=shadows).score(targets), y, n_bootstrap=0
        ).auc
        assert 0.35 < auc < 0.65, name
