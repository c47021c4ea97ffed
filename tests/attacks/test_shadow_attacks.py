"""Shadow-model attacks: LiRA against a direct computation, Groundhog's ridge against scikit-learn, the ShadowSet contract."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from attack_tables import copying_generator, make_table
from sklearn.linear_model import Ridge

from tabmem.attacks import evaluate_membership, get_attack
from tabmem.attacks.groundhog import ridge_dual_scores
from tabmem.attacks.lira import lira_scores
from tabmem.attacks.shadows import ShadowSet, row_keys
from tabmem.data.schema import Schema, validate
from tabmem.errors import ParameterError, TabmemError


def _logpdf(x: float, mu: float, sd: float) -> float:
    return -0.5 * math.log(2 * math.pi * sd * sd) - (x - mu) ** 2 / (2 * sd * sd)


def _direct_lira(x, v, m, mode, variance):
    """LiRA written out target by target with plain Python (Carlini et al. 2022, Algorithm 1)."""
    n_s, n_t = v.shape
    side = {}
    for name, mask in (("in", m), ("out", ~m)):
        means, sq, dof = [], [], 0
        for t in range(n_t):
            vals = [v[s, t] for s in range(n_s) if mask[s, t]]
            mu = sum(vals) / len(vals)
            means.append(mu)
            sq.append(sum((a - mu) ** 2 for a in vals))
            dof += len(vals) - 1
        if variance == "global":
            sds = [math.sqrt(sum(sq) / dof)] * n_t
        else:
            sds = [math.sqrt(sq[t] / (sum(mask[:, t]) - 1)) for t in range(n_t)]
        side[name] = (means, sds)
    out = []
    for t in range(n_t):
        mu_o, sd_o = side["out"][0][t], side["out"][1][t]
        if mode == "offline":
            out.append(-math.log(0.5 * math.erfc((x[t] - mu_o) / (sd_o * math.sqrt(2)))))
        else:
            mu_i, sd_i = side["in"][0][t], side["in"][1][t]
            out.append(_logpdf(x[t], mu_i, sd_i) - _logpdf(x[t], mu_o, sd_o))
    return np.array(out)


@pytest.mark.parametrize("mode", ["online", "offline"])
@pytest.mark.parametrize("variance", ["global", "per_target"])
def test_lira_equals_direct_computation_on_gaussian_statistics(mode, variance):
    rng = np.random.default_rng(0)
    n_s, n_t = 16, 40
    m = np.zeros((n_s, n_t), dtype=bool)
    for s in range(0, n_s, 2):  # complementary pairs, as the experiments layer plans them
        half = rng.permutation(n_t)[: n_t // 2]
        m[s, half] = True
        m[s + 1] = ~m[s]
    mu_in, mu_out = rng.normal(1.0, 0.3, n_t), rng.normal(0.0, 0.3, n_t)
    v = np.where(m, rng.normal(mu_in, 0.5, (n_s, n_t)), rng.normal(mu_out, 0.7, (n_s, n_t)))
    x = rng.normal(0.5, 1.0, n_t)
    got = lira_scores(x, v, m, mode=mode, variance=variance)
    np.testing.assert_allclose(got, _direct_lira(x, v, m, mode, variance), rtol=1e-10, atol=1e-10)


def test_lira_separates_gaussian_members_from_non_members():
    """Released statistic drawn from the 'in' Gaussian for members and the 'out' one for non-members."""
    rng = np.random.default_rng(1)
    n_s, n_t = 32, 400
    m = np.zeros((n_s, n_t), dtype=bool)
    for s in range(0, n_s, 2):
        m[s, rng.permutation(n_t)[: n_t // 2]] = True
        m[s + 1] = ~m[s]
    offset = rng.normal(0, 3, n_t)  # per-target scale that a global threshold cannot see
    v = offset + np.where(m, 1.0, 0.0) + rng.normal(0, 0.5, (n_s, n_t))
    member = np.arange(n_t) < n_t // 2
    x = offset + member + rng.normal(0, 0.5, n_t)
    lira = evaluate_membership(lira_scores(x, v, m), member, n_bootstrap=0).auc
    raw = evaluate_membership(x, member, n_bootstrap=0).auc
    assert lira > 0.8 and raw < 0.65  # calibrating per target is what LiRA adds


def test_lira_errors():
    v, m = np.zeros((4, 3)), np.ones((4, 3), dtype=bool)
    with pytest.raises(ParameterError, match="no 'out' shadow"):
        lira_scores(np.zeros(3), v, m)
    m2 = np.zeros((4, 3), dtype=bool)
    m2[0] = True
    with pytest.raises(ParameterError, match="per_target"):
        lira_scores(np.zeros(3), np.random.default_rng(0).normal(size=(4, 3)), m2, variance="per_target")
    with pytest.raises(ParameterError, match="in no shadow"):
        lira_scores(np.zeros(3), v, np.zeros((4, 3), dtype=bool))
    with pytest.raises(ParameterError, match="mode"):
        lira_scores(np.zeros(3), v, m2, mode="both")


def test_offline_shadow_set_scores_any_targets(tables):
    members, non_members, synthetic, _, schema = tables
    pop = make_table(400, 9)
    shadows = ShadowSet(
        tuple(copying_generator(pop.iloc[i * 50 : i * 50 + 100], 150, i) for i in range(6)),
        np.zeros((6, 240), dtype=bool),
        row_keys(validate(pd.concat([members, non_members], ignore_index=True), schema)),
        "offline",
    )
    leak = pd.concat([members.iloc[:60], synthetic.iloc[:90]], ignore_index=True)
    off = get_attack("lira_offline").fit(leak, schema, shadows=shadows)
    targets = pd.concat([members, non_members], ignore_index=True)
    auc = evaluate_membership(off.score(targets), np.r_[np.ones(120, bool), np.zeros(120, bool)], n_bootstrap=0).auc
    assert auc > 0.7  # half the members are copied
    assert off.score(targets.iloc[:10]).shape == (10,)  # offline: any targets
    with pytest.raises(ParameterError, match="online shadows"):
        get_attack("lira").fit(leak, schema, shadows=shadows)
    with pytest.raises(ParameterError, match="online shadows"):
        get_attack("groundhog").fit(leak, schema, shadows=shadows)


def test_online_shadows_refuse_other_targets(tables, shadows):
    members, non_members, synthetic, _, schema = tables
    lira = get_attack("lira").fit(synthetic, schema, shadows=shadows)
    with pytest.raises(ParameterError, match="not those the shadows were trained for"):
        lira.score(pd.concat([non_members, members], ignore_index=True))


def test_lira_variants_share_statistics(tables, shadows):
    members, non_members, synthetic, _, schema = tables
    targets = pd.concat([members, non_members], ignore_index=True)
    get_attack("lira").fit(synthetic, schema, shadows=shadows).score(targets)
    n_cached = len(shadows.cache)
    get_attack("lira_offline").fit(synthetic, schema, shadows=shadows).score(targets)
    assert len(shadows.cache) == n_cached  # the offline variant reused the DCR statistics


def test_shadow_set_contract():
    keys = np.arange(3, dtype=np.uint64)
    t = pd.DataFrame({"a": [1.0]})
    with pytest.raises(ParameterError, match="boolean"):
        ShadowSet((t,), np.zeros((1, 3)), keys)
    with pytest.raises(ParameterError, match="synthetic tables"):
        ShadowSet((t, t), np.zeros((1, 3), dtype=bool), keys)
    with pytest.raises(ParameterError, match="offline"):
        ShadowSet((t,), np.ones((1, 3), dtype=bool), keys, "offline")
    with pytest.raises(TabmemError, match="ShadowSet"):
        get_attack("lira").fit(t, Schema.infer(t), shadows="not a shadow set")


def test_ridge_dual_equals_scikit_learn_ridge():
    rng = np.random.default_rng(3)
    x, z = rng.normal(size=(12, 50)), rng.normal(size=(1, 50))
    y = (rng.uniform(size=(12, 7)) < 0.5).astype(float)
    got = ridge_dual_scores(x, y, z, alpha=0.7)[0]
    want = [Ridge(alpha=0.7).fit(x, y[:, t]).predict(z)[0] for t in range(7)]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("classifier", ["ridge", "random_forest"])
def test_groundhog_finds_an_outlier_target(classifier):
    """Stadler et al.: summary features reveal outliers. The outlier moves max/mean/std when it is copied."""
    base = make_table(79, 11)
    outlier = base.iloc[:1].assign(x=400.0, y=90_000.0)
    members = pd.concat([outlier, base.iloc[1:60]], ignore_index=True)
    non_members = make_table(60, 12)
    targets = pd.concat([members, non_members], ignore_index=True)
    schema = Schema.infer(members, categorical=["k"])
    n_s, n_t = 16, len(targets)
    m = np.zeros((n_s, n_t), dtype=bool)
    syn = []
    for s in range(n_s):
        perm = np.random.default_rng([5, s // 2]).permutation(n_t)
        rows = perm[: n_t // 2] if s % 2 == 0 else perm[n_t // 2 :]
        m[s, rows] = True
        syn.append(pd.concat([targets.iloc[rows], make_table(30, 100 + s)], ignore_index=True))
    sh = ShadowSet(tuple(syn), m, row_keys(validate(targets, schema)), "online")
    released = pd.concat([members, make_table(30, 99)], ignore_index=True)
    scores = (
        get_attack("groundhog", classifier=classifier, n_estimators=30).fit(released, schema, shadows=sh).score(targets)
    )
    assert scores[0] == scores.max()  # the outlier member is the most member-like target
