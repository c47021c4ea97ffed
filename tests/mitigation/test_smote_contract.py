"""SMOTE's quotas, neighbour draws, library paths and refusals (``tabmem.mitigation.smote`` docstring):
the per-class quota against an exact largest-remainder apportionment, the paper variant's draws
against their distributions, and imbalanced-learn's SMOTE / SMOTEN / SMOTENC as the reference."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tabmem.data.schema import Schema
from tabmem.errors import ParameterError, TabmemError
from tabmem.mitigation import get_augmenter
from tabmem.mitigation.smote import class_quota


def _hamilton(counts: dict[str, int], n: int) -> dict[str, int]:
    """Every class but the (first sorted) largest gets n * shortfall / total shortfall, floors plus one
    for the largest remainders (ties: sorted class order); equal shares when no class falls short."""
    names = sorted(counts)
    top = max(names, key=lambda c: (counts[c], -names.index(c)))
    rest = [c for c in names if c != top]
    if not rest:
        return {}
    w = {c: counts[top] - counts[c] for c in rest}
    if sum(w.values()) == 0:
        w = {c: counts[c] for c in rest}
    exact = {c: Fraction(n * w[c], sum(w.values())) for c in rest}
    floor = {c: int(exact[c]) for c in rest}
    left = n - sum(floor.values())
    by_remainder = sorted(rest, key=lambda c: (-(exact[c] - floor[c]), names.index(c)))
    for c in by_remainder[:left]:
        floor[c] += 1
    return {c: v for c, v in floor.items() if v > 0}


def test_class_quota_not_majority_is_a_largest_remainder_apportionment():
    rng = np.random.default_rng(0)
    for _ in range(120):
        k = int(rng.integers(1, 6))
        names = list(rng.permutation(["e", "b", "a", "d", "c"])[:k])
        counts = {c: int(v) for c, v in zip(names, rng.integers(1, 12, k))}
        n = int(rng.integers(1, 40))
        got = class_quota(pd.Series(counts), n, "not majority")
        assert got == _hamilton(counts, n), (counts, n)
        if got:
            assert sum(got.values()) == n


def test_class_quota_many_classes_with_tied_remainders_round_up_in_class_order():
    rng = np.random.default_rng(1)
    counts = {"a": 100, **{f"r{i:03d}": int(v) for i, v in enumerate(rng.choice([25, 50, 75], 200))}}
    for n in (101, 257, 1000):
        got = class_quota(pd.Series(counts), n, "not majority")
        assert got == _hamilton(counts, n)


def test_class_quota_hand_cases():
    # shortfalls 1 and 2 of 3, n = 2: exact 2/3 and 4/3 -> floors 0, 1; the larger remainder (2/3) gets the last
    assert class_quota(pd.Series({"a": 5, "b": 4, "c": 3}), 2, "not majority") == {"b": 1, "c": 1}
    # no class falls short of the largest: split by size; the first of equal remainders rounds up
    assert class_quota(pd.Series({"c": 50, "b": 50, "a": 50}), 31, "not majority") == {"b": 16, "c": 15}
    # a class whose share rounds to zero is left out
    assert class_quota(pd.Series({"a": 100, "b": 99, "c": 0}), 3, "not majority") == {"c": 3}
    assert class_quota(pd.Series({"a": 9}), 5, "not majority") == {}
    # the only shortfall is 1 (c ties with the majority a): all new rows go to b
    assert class_quota(pd.Series({"a": 5, "b": 4, "c": 5}), 3, "not majority") == {"b": 3}
    # minority: ties go to the first class in sorted order, whatever the order of the counts
    assert class_quota(pd.Series({"b": 10, "a": 10, "c": 30}), 7, "minority") == {"a": 7}


def _two_class_table(n_minority: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(3)
    n = 30 + n_minority
    df = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n), "y": ["a"] * 30 + ["b"] * n_minority})
    return df, Schema.infer(df, target="y")


@pytest.mark.parametrize("variant", ["imblearn", "paper"])
def test_smote_needs_more_rows_than_k_in_the_class(variant):
    df, schema = _two_class_table(4)
    aug = get_augmenter("smote", variant=variant, k_neighbors=4).fit(df, schema)
    msg = r"^smote: class 'b' has 4 row\(s\), needs more than k_neighbors=4$"
    with pytest.raises(TabmemError, match=msg):
        aug.augment(n_new=5, random_state=0)
    ok = get_augmenter("smote", variant=variant, k_neighbors=3).fit(df, schema).augment(n_new=5, random_state=0)
    assert len(ok) == 5 and (ok.y == "b").all()


def test_smote_refusals_name_the_problem():
    df, schema = _two_class_table(6)
    single = df[df.y == "a"].reset_index(drop=True)
    msg = r"^smote: the target column 'y' has a single class \('a'\); SMOTE creates rows of the minority classes"
    for classes in ("minority", "not majority"):
        with pytest.raises(TabmemError, match=msg):
            get_augmenter("smote", classes=classes).fit(single, Schema.infer(single, target="y"))
    holes = df.copy()
    holes.loc[2, "v"] = np.nan
    with pytest.raises(TabmemError, match=r"^smote: numerical column\(s\) \['v'\] have missing values; impute"):
        get_augmenter("smote").fit(holes, schema)
    cats = pd.DataFrame({"c": list("pqrpqrpqrp") * 3, "y": ["a"] * 20 + ["b"] * 10})
    with pytest.raises(TabmemError, match=r"^smote variant='paper' finds neighbours on numerical features; the table"):
        get_augmenter("smote", variant="paper").fit(cats, Schema.infer(cats, target="y"))
    for params, message in [
        ({"variant": "smotenc"}, r"^variant must be one of 'imblearn', 'paper', got 'smotenc'$"),
        ({"k_neighbors": 0}, r"^k_neighbors must be a positive integer, got 0$"),
        ({"classes": "all"}, r"^classes must be one of 'minority', 'not majority', got 'all'$"),
    ]:
        with pytest.raises(ParameterError, match=message):
            get_augmenter("smote", **params).fit(df, schema)


def _seed(random_state: int) -> int:
    """The seed tabmem hands to imbalanced-learn: the first draw of its own generator."""
    return int(np.random.default_rng(random_state).integers(0, 2**31 - 1))


def test_smote_numerical_only_equals_imbalanced_learn_smote_with_k():
    from imblearn.over_sampling import SMOTE as RefSMOTE

    rng = np.random.default_rng(4)
    n = 60
    df = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n), "y": ["a"] * 30 + ["b"] * 18 + ["c"] * 12})
    schema = Schema.infer(df, target="y")
    new = (
        get_augmenter("smote", k_neighbors=3, classes="not majority").fit(df, schema).augment(n_new=20, random_state=7)
    )
    # shortfalls 12 and 18 of 30 -> 8 and 12 new rows
    ref = RefSMOTE(k_neighbors=3, sampling_strategy={"b": 26, "c": 24}, random_state=_seed(7))
    xr, yr = ref.fit_resample(df[["u", "v"]], df["y"].to_numpy(dtype=object))
    np.testing.assert_allclose(new[["u", "v"]].to_numpy(), xr.iloc[n:].to_numpy())
    assert new["y"].tolist() == list(np.asarray(yr)[n:])
    assert (new["y"] == "b").sum() == 8 and (new["y"] == "c").sum() == 12


def test_smote_categorical_only_equals_imbalanced_learn_smoten():
    from imblearn.over_sampling import SMOTEN

    rng = np.random.default_rng(5)
    n = 50
    df = pd.DataFrame(
        {
            "c": rng.choice(["p", "q", "r"], n).astype(object),
            "d": rng.choice(["s", "t"], n).astype(object),
            "y": ["a"] * 38 + ["b"] * 12,
        }
    )
    schema = Schema.infer(df, target="y")
    new = get_augmenter("smote", k_neighbors=3).fit(df, schema).augment(n_new=15, random_state=2)
    ref = SMOTEN(k_neighbors=3, sampling_strategy={"b": 27}, random_state=_seed(2))
    xr, yr = ref.fit_resample(df[["c", "d"]], df["y"].to_numpy(dtype=object))
    assert new[["c", "d"]].to_numpy().tolist() == xr.iloc[n:].to_numpy().tolist()
    assert (new["y"] == "b").all() and list(new.columns) == ["c", "d", "y"]


def test_smote_mixed_with_k_equals_imbalanced_learn_smotenc(table):
    from imblearn.over_sampling import SMOTENC

    df, schema = table
    new = get_augmenter("smote", k_neighbors=2).fit(df, schema).augment(n_new=12, random_state=9)
    x = df[["age", "income", "city", "level"]].astype({"age": float, "level": str})
    counts = df["y"].value_counts()
    ref = SMOTENC(
        categorical_features=[2, 3], k_neighbors=2, sampling_strategy={"yes": counts["yes"] + 12}, random_state=_seed(9)
    )
    xr, _ = ref.fit_resample(x, df["y"].to_numpy(dtype=object))
    expected = xr.iloc[len(df) :].reset_index(drop=True)
    np.testing.assert_allclose(new["income"], expected["income"].astype(float))
    assert new["city"].tolist() == expected["city"].tolist()
    assert new["level"].astype(str).tolist() == expected["level"].tolist()


def test_smote_paper_draws_base_neighbour_and_u_from_their_distributions():
    rng = np.random.default_rng(6)
    n = 34
    df = pd.DataFrame(
        {
            "u": rng.normal(size=n),
            "v": rng.normal(size=n),
            "c": rng.choice(["p", "q"], n).astype(object),
            "y": ["a"] * 22 + ["b"] * 12,
        }
    )
    schema = Schema.infer(df, target="y")
    aug = get_augmenter("smote", variant="paper", k_neighbors=3).fit(df, schema)
    new = aug.augment(n_new=3600, random_state=0)
    prov = aug.provenance_
    rows = np.flatnonzero(df.y == "b")
    x = df[["u", "v"]].to_numpy()[rows]
    d = ((x[:, None] - x[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    knn = rows[np.argsort(d, axis=1)[:, :3]]
    base = np.searchsorted(rows, prov.base.to_numpy())
    assert np.array_equal(rows[base], prov.base.to_numpy())
    counts = np.bincount(base, minlength=len(rows))
    assert counts.min() > 0 and stats.chisquare(counts).pvalue > 1e-3  # base uniform over the class
    slot = np.array([list(knn[b]).index(j) for b, j in zip(base, prov.neighbor)])  # neighbour among the 3 nearest
    assert stats.chisquare(np.bincount(slot, minlength=3)).pvalue > 1e-3  # ... uniformly
    assert stats.kstest(prov.u, "uniform").pvalue > 1e-3
    np.testing.assert_allclose(
        new["u"], df.u.to_numpy()[prov.base] + prov.u * (df.u.to_numpy()[prov.neighbor] - df.u.to_numpy()[prov.base])
    )


def test_smote_paper_not_majority_grows_every_smaller_class():
    rng = np.random.default_rng(8)
    n = 60
    df = pd.DataFrame({"u": rng.normal(size=n), "y": ["a"] * 30 + ["b"] * 18 + ["c"] * 12})
    schema = Schema.infer(df, target="y")
    aug = get_augmenter("smote", variant="paper", classes="not majority").fit(df, schema)
    new = aug.augment(n_new=20, random_state=0)
    assert new["y"].value_counts().to_dict() == {"c": 12, "b": 8}
    # one provenance row per new row, both numbered 0..n-1 (the classes' parts are renumbered)
    pd.testing.assert_index_equal(new.index, pd.RangeIndex(20))
    pd.testing.assert_index_equal(aug.provenance_.index, pd.RangeIndex(20))
    labels = df.y.to_numpy()
    assert (labels[aug.provenance_.base] == new.y.to_numpy()).all()
    assert (labels[aug.provenance_.neighbor] == new.y.to_numpy()).all()


def test_smote_paper_with_many_duplicates_never_pairs_a_row_with_itself():
    # 9 identical minority rows (more than k + 1): the nearest-neighbour search may not list the row itself
    df = pd.DataFrame({"u": [0.0] * 9 + [1.0, 2.0] + list(np.linspace(5, 9, 20)), "y": ["b"] * 11 + ["a"] * 20})
    schema = Schema.infer(df, target="y")
    aug = get_augmenter("smote", variant="paper", k_neighbors=5).fit(df, schema)
    new = aug.augment(n_new=300, random_state=0)
    prov = aug.provenance_
    assert (prov.base != prov.neighbor).all()
    assert (new.u >= 0).all() and (new.u <= 2).all() and (new.y == "b").all()


@pytest.mark.parametrize("variant", ["imblearn", "paper"])
def test_smote_default_grows_only_the_smallest_of_three_classes(variant):
    rng = np.random.default_rng(9)
    n = 60
    df = pd.DataFrame({"u": rng.normal(size=n), "y": ["a"] * 30 + ["b"] * 18 + ["c"] * 12})
    new = get_augmenter("smote", variant=variant).fit(df, Schema.infer(df, target="y")).augment(n_new=20)
    assert (new["y"] == "c").all() and len(new) == 20


def test_smote_without_imbalanced_learn_says_how_to_install_it(monkeypatch):
    import sys

    df, schema = _two_class_table(8)
    aug = get_augmenter("smote").fit(df, schema)
    monkeypatch.setitem(sys.modules, "imblearn.over_sampling", None)  # the import fails as if not installed
    with pytest.raises(TabmemError, match=r"^smote needs imbalanced-learn: pip install 'tabmem\[mitigation\]'$"):
        aug.augment(n_new=3)
