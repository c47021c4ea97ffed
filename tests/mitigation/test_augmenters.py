"""Each augmenter against its definition (TabCutMix paper §4 and the authors' code), on small tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import mixed_table
from scipy import stats

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.mitigation import get_augmenter


def _features(schema: Schema) -> list[str]:
    return [c for c in schema.columns if c != schema.target]


def _rows_equal(a: pd.Series, b: pd.Series, cols: list[str]) -> np.ndarray:
    return np.array([a[c] == b[c] for c in cols])


# --------------------------------------------------------------------------- TabCutMix
@pytest.mark.parametrize("mode", ["code", "paper"])
def test_tabcutmix_cells_come_from_two_rows_of_the_same_class(table, mode):
    df, schema = table
    aug = get_augmenter("tabcutmix", mode=mode).fit(df, schema)
    new = aug.augment(n_new=200, random_state=1)
    prov, mask = aug.provenance_, aug.partner_mask_
    feats = _features(schema)
    for i in range(len(new)):
        a, b = df.iloc[prov.parent_a[i]], df.iloc[prov.parent_b[i]]
        assert a["y"] == b["y"] == new["y"].iloc[i]  # same class; the label is A's
        for j, c in enumerate(feats):
            assert new[c].iloc[i] == (b[c] if mask[i, j] else a[c])
    if mode == "code":  # exactly int(lambda * F) distinct columns from the partner
        np.testing.assert_array_equal(mask.sum(axis=1), np.floor(prov.lam.to_numpy() * len(feats)).astype(int))
    else:  # Bernoulli(lambda) per column: E[#from partner | lambda] = lambda F
        resid = mask.sum(axis=1) - prov.lam.to_numpy() * len(feats)
        assert abs(resid.mean()) < 4 * math.sqrt(len(feats) / 4 / len(resid))
        assert stats.pearsonr(prov.lam, mask.sum(axis=1)).statistic > 0.6


def test_tabcutmix_rows_explained_by_a_same_label_pair_brute_force():
    """Without the provenance: every new row is covered cell by cell by some pair of same-label training rows."""
    df, schema = mixed_table(n=25, seed=4)
    new = get_augmenter("tabcutmix").fit(df, schema).augment(n_new=40, random_state=0)
    feats = _features(schema)
    values = df[feats].to_numpy(dtype=object)
    for i in range(len(new)):
        row = new[feats].iloc[i].to_numpy(dtype=object)
        same = np.flatnonzero(df["y"].to_numpy() == new["y"].iloc[i])
        match = values[same] == row  # (candidates, F)
        covered = any((match[p] | match[q]).all() for p in range(len(same)) for q in range(len(same)))
        assert covered, f"new row {i} is not made of two same-label training rows"


def test_tabcutmix_partner_is_uniform_within_class_and_a_follows_the_prior(table):
    df, schema = table
    aug = get_augmenter("tabcutmix").fit(df, schema)
    aug.augment(n_new=6000, random_state=3)
    prov = aug.provenance_
    y = df["y"].to_numpy()
    share_yes = (y[prov.parent_a] == "yes").mean()
    p = (y == "yes").mean()
    assert abs(share_yes - p) < 4 * math.sqrt(p * (1 - p) / len(prov))
    # B uniform among A's class (B may be A): chi-square over the minority rows
    yes_rows = np.flatnonzero(y == "yes")
    b = prov.parent_b[np.isin(prov.parent_a, yes_rows)]
    counts = np.bincount(np.searchsorted(yes_rows, b), minlength=len(yes_rows))
    assert stats.chisquare(counts).pvalue > 1e-3
    assert (prov.parent_a == prov.parent_b).any()  # no exclusion of A itself


# ----------------------------------------------------------------------- TabCutMixPlus
def test_tabcutmix_plus_swaps_whole_clusters():
    rng = np.random.default_rng(0)
    n = 300
    base = rng.normal(size=n)
    df = pd.DataFrame(
        {
            "a": base + 0.01 * rng.normal(size=n),
            "b": 2 * base + 0.01 * rng.normal(size=n),  # a, b: one cluster (|r| ~ 1)
            "c": rng.normal(size=n),
            "d": rng.choice(["p", "q", "r"], n).astype(object),
            "y": rng.choice(["neg", "pos"], n).astype(object),
        }
    )
    schema = Schema.infer(df, target="y")
    aug = get_augmenter("tabcutmix-plus").fit(df, schema)
    assert ["a", "b"] in aug.clusters_
    new = aug.augment(n_new=300, random_state=2)
    feats = _features(schema)
    mask = aug.partner_mask_
    pos = {c: j for j, c in enumerate(feats)}
    for cl in aug.clusters_:
        cols = [pos[c] for c in cl if c in pos]
        if len(cols) > 1:  # every cluster is taken whole or not at all
            assert (mask[:, cols].all(axis=1) | ~mask[:, cols].any(axis=1)).all()
    k = len(aug.clusters_)
    np.testing.assert_array_equal(aug.provenance_.n_from_partner, np.floor(aug.provenance_.lam * k).astype(int))
    prov = aug.provenance_
    for i in range(0, 300, 7):
        a, b = df.iloc[prov.parent_a[i]], df.iloc[prov.parent_b[i]]
        for c in feats:
            assert new[c].iloc[i] == (b[c] if mask[i, pos[c]] else a[c])


def test_tabcutmix_plus_dtype_typing_treats_integer_codes_as_numbers(table):
    df, schema = table
    by_schema = get_augmenter("tabcutmix-plus").fit(df, schema)
    by_dtype = get_augmenter("tabcutmix-plus", typing="dtype").fit(df, schema)
    assert by_schema.kinds_["level"] == "categorical"
    assert by_dtype.kinds_["level"] == "numerical"  # int64 dtype, as the authors' code types it
    assert by_dtype.kinds_["city"] == "categorical"


# ------------------------------------------------------------------------------ SMOTE
def test_smote_default_is_imbalanced_learn_smotenc(table):
    from imblearn.over_sampling import SMOTENC

    df, schema = table
    new = get_augmenter("smote").fit(df, schema).augment(n_new=30, random_state=5)
    seed = int(np.random.default_rng(5).integers(0, 2**31 - 1))
    feats = ["age", "income", "city", "level"]
    x = df[feats].copy()
    x["level"] = x["level"].astype(str)
    x["age"] = x["age"].astype(float)  # tabmem interpolates in float and rounds to the int dtype at the end
    counts = df["y"].value_counts()
    ref = SMOTENC(
        categorical_features=[2, 3], k_neighbors=5, sampling_strategy={"yes": counts["yes"] + 30}, random_state=seed
    )
    xr, yr = ref.fit_resample(x, df["y"].to_numpy(dtype=object))
    expected = xr.iloc[len(df) :].reset_index(drop=True)
    assert (new["y"] == "yes").all() and (np.asarray(yr)[len(df) :] == "yes").all()
    np.testing.assert_allclose(new["income"], expected["income"].astype(float))
    np.testing.assert_array_equal(new["age"], np.rint(expected["age"].astype(float)).astype(int))  # int dtype kept
    assert (new["city"].to_numpy() == expected["city"].to_numpy()).all()
    assert (new["level"].astype(str).to_numpy() == expected["level"].to_numpy()).all()


def test_smote_rows_lie_on_segments_between_same_class_neighbours():
    """Numerical table: each new row = x_i + u (x_j - x_i), j among i's k nearest same-class rows (brute force)."""
    rng = np.random.default_rng(1)
    n = 90
    df = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n) * 3, "y": ["a"] * 70 + ["b"] * 20})
    schema = Schema.infer(df, target="y")
    x = df[df.y == "b"][["u", "v"]].to_numpy()
    d = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    knn = np.argsort(d, axis=1)[:, :5]
    for variant in ("imblearn", "paper"):
        new = get_augmenter("smote", variant=variant).fit(df, schema).augment(n_new=60, random_state=0)
        assert (new.y == "b").all()
        for p in new[["u", "v"]].to_numpy():
            found = False
            for i in range(len(x)):
                for j in knn[i]:
                    seg = x[j] - x[i]
                    u = np.dot(p - x[i], seg) / np.dot(seg, seg)
                    if -1e-9 <= u <= 1 + 1e-9 and np.allclose(x[i] + u * seg, p, atol=1e-8):
                        found = True
                        break
                if found:
                    break
            assert found, f"{variant}: a new row is not on a segment between same-class neighbours"


def test_smote_paper_variant_categoricals_from_base_or_neighbour(table):
    df, schema = table
    aug = get_augmenter("smote", variant="paper").fit(df, schema)
    new = aug.augment(n_new=400, random_state=2)
    prov = aug.provenance_
    from_neighbour = []
    for i in range(len(new)):
        a, b = df.iloc[prov.base[i]], df.iloc[prov.neighbor[i]]
        assert a["y"] == b["y"] == new["y"].iloc[i] == "yes"
        for c in ("city", "level"):
            assert new[c].iloc[i] in (a[c], b[c])
            if a[c] != b[c]:
                from_neighbour.append(new[c].iloc[i] == b[c])
        u = prov.u[i]
        assert new["income"].iloc[i] == pytest.approx(a["income"] + u * (b["income"] - a["income"]))
    assert abs(np.mean(from_neighbour) - 0.5) < 4 * math.sqrt(0.25 / len(from_neighbour))


def test_smote_not_majority_splits_by_shortfall():
    from tabmem.mitigation.smote import class_quota

    counts = pd.Series({"a": 100, "b": 40, "c": 10})
    q = class_quota(counts, 30, "not majority")
    assert q == {"b": 12, "c": 18}  # shortfalls 60 and 90 -> 12 and 18
    assert class_quota(counts, 30, "minority") == {"c": 30}


# ------------------------------------------------------------------------------ Mixup
def test_mixup_is_a_convex_combination_decoded_by_argmax(table):
    df, schema = table
    aug = get_augmenter("mixup").fit(df, schema)
    new = aug.augment(n_new=300, random_state=4)
    prov = aug.provenance_
    levels = {c: sorted(df[c].astype(str).unique()) for c in ("city", "level", "y")}
    for k in range(len(new)):
        i, j, lam = prov.parent_i[k], prov.parent_j[k], prov.lam[k]
        a, b = df.iloc[i], df.iloc[j]
        assert new["income"].iloc[k] == pytest.approx(lam * a["income"] + (1 - lam) * b["income"])
        assert new["age"].iloc[k] == round(lam * a["age"] + (1 - lam) * b["age"])  # int column rounded
        for c, lv in levels.items():  # explicit one-hot mix, arg-max
            vec = lam * (np.array(lv) == str(a[c])) + (1 - lam) * (np.array(lv) == str(b[c]))
            assert str(new[c].iloc[k]) == lv[int(np.argmax(vec))]
    assert stats.kstest(prov.lam, stats.beta(0.4, 0.4).cdf).pvalue > 1e-3


# -------------------------------------------------------------------------------- IJF
def test_ijf_draws_independent_marginals():
    rng = np.random.default_rng(0)
    n = 400
    x = rng.normal(5, 2, n)
    df = pd.DataFrame({"x": x, "z": x * 3 + rng.normal(0, 0.1, n), "c": rng.choice(["u", "v"], n, p=[0.8, 0.2])})
    schema = Schema.infer(df)
    new = get_augmenter("ijf").fit(df, schema).augment(n_new=20000, random_state=0)
    assert new["x"].mean() == pytest.approx(x.mean(), abs=0.06)
    assert new["x"].std() == pytest.approx(x.std(ddof=1), rel=0.03)
    assert (new["c"] == "u").mean() == pytest.approx((df.c == "u").mean(), abs=0.015)
    assert abs(np.corrcoef(new["x"], new["z"])[0, 1]) < 0.03  # the training correlation (~1) is gone
    assert stats.kstest((new["x"] - x.mean()) / x.std(ddof=1), "norm").pvalue > 1e-3


# ------------------------------------------------------------------- no target
@pytest.mark.parametrize("name", ["tabcutmix", "tabcutmix-plus", "smote"])
def test_label_conditioned_methods_need_a_target(name):
    df, _ = mixed_table()
    schema = Schema.infer(df)  # no target
    with pytest.raises(TabmemError, match=f"{name} is label-conditioned"):
        get_augmenter(name).fit(df, schema)


@pytest.mark.parametrize("name", ["mixup", "ijf"])
def test_unconditional_methods_work_without_a_target(name):
    df, _ = mixed_table()
    new = get_augmenter(name).fit(df, Schema.infer(df)).augment(ratio=0.5, random_state=0)
    assert len(new) == 60


def test_regression_target_is_refused_by_label_conditioned_methods():
    df, _ = mixed_table()
    schema = Schema.infer(df, target="income")
    with pytest.raises(TabmemError, match="numerical"):
        get_augmenter("tabcutmix").fit(df, schema)
