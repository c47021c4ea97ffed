"""The random draws and options of TabCutMix(Plus), Mixup and IJF against their definitions
(TabCutMix paper §4 and the authors' code): lambda ~ U(0, 1) or Beta(alpha, alpha), parents
uniform over the table, every option reaching the result, and the messages that name a bad value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import mixed_table
from scipy import stats
from scipy.stats.contingency import association as scipy_association

from tabmem.data.schema import Schema
from tabmem.errors import ParameterError, TabmemError
from tabmem.mitigation import get_augmenter


def _uniform_counts_ok(values: np.ndarray, n_cells: int) -> bool:
    """Chi-square goodness of fit of integer draws to the uniform distribution on 0..n_cells-1."""
    counts = np.bincount(values, minlength=n_cells)
    return len(counts) == n_cells and counts.min() > 0 and stats.chisquare(counts).pvalue > 1e-3


# ------------------------------------------------------------------ TabCutMix
@pytest.mark.parametrize("mode", ["code", "paper"])
def test_tabcutmix_lambda_uniform_and_row_a_uniform_over_the_table(mode):
    df, schema = mixed_table(n=30, seed=2)
    aug = get_augmenter("tabcutmix", mode=mode).fit(df, schema)
    aug.augment(n_new=3000, random_state=0)
    prov = aug.provenance_
    assert stats.kstest(prov.lam, "uniform").pvalue > 1e-3
    assert _uniform_counts_ok(prov.parent_a.to_numpy(), 30)  # every row, the first and last included
    np.testing.assert_array_equal(prov.n_from_partner, aug.partner_mask_.sum(axis=1))  # per new row
    y = df["y"].to_numpy()
    for cls in ("no", "yes"):  # B uniform over A's class, its first row included
        rows = np.flatnonzero(y == cls)
        b = prov.parent_b[np.isin(prov.parent_a, rows)].to_numpy()
        assert _uniform_counts_ok(np.searchsorted(rows, b), len(rows)), cls


def test_tabcutmix_mode_is_checked_with_one_line_naming_it():
    df, schema = mixed_table(n=30)
    with pytest.raises(ParameterError, match=r"^mode must be one of 'code', 'paper', got 'bernoulli'$"):
        get_augmenter("tabcutmix", mode="bernoulli").fit(df, schema)


# ------------------------------------------------------------------ TabCutMixPlus
def _chain_table(n: int = 400) -> tuple[pd.DataFrame, Schema]:
    """|r(a,b)| ~ 0.89, |r(b,c)| ~ 0.45, |r(a,c)| ~ 0, y independent."""
    rng = np.random.default_rng(11)
    a, c = rng.normal(size=n), rng.normal(size=n)
    df = pd.DataFrame(
        {"a": a, "b": a + 0.5 * c, "c": c, "y": rng.choice(["neg", "pos"], n).astype(object)},
    )
    return df, Schema.infer(df, target="y")


def test_tabcutmix_plus_threshold_and_linkage_reach_the_clusters():
    df, schema = _chain_table()
    m = get_augmenter("tabcutmix-plus").fit(df, schema).association_
    assert m.loc["a", "b"] > 0.8 and 0.35 < m.loc["b", "c"] < 0.55 and m.loc["a", "c"] < 0.15  # the design
    default = get_augmenter("tabcutmix-plus").fit(df, schema)
    assert default.clusters_ == [["a", "b"], ["c"], ["y"]]
    # at 0.7, {a,b} joins c by single linkage (distance 1 - 0.45 = 0.55) but not by the others (>= 0.76)
    single = get_augmenter("tabcutmix-plus", threshold=0.7, linkage="single").fit(df, schema)
    assert single.clusters_ == [["a", "b", "c"], ["y"]]
    for method in ("average", "complete", "weighted"):
        aug = get_augmenter("tabcutmix-plus", threshold=0.7, linkage=method).fit(df, schema)
        assert aug.clusters_ == [["a", "b"], ["c"], ["y"]], method
    assert get_augmenter("tabcutmix-plus", threshold=1.0, linkage="single").fit(df, schema).clusters_ == [
        ["a", "b", "c", "y"]
    ]
    assert get_augmenter("tabcutmix-plus", threshold=0.0).fit(df, schema).clusters_ == [["a"], ["b"], ["c"], ["y"]]


def test_tabcutmix_plus_single_linkage_swaps_the_joined_cluster_whole():
    df, schema = _chain_table()
    aug = get_augmenter("tabcutmix-plus", threshold=0.7, linkage="single").fit(df, schema)
    aug.augment(n_new=400, random_state=1)
    mask = aug.partner_mask_  # features a, b, c: one cluster, the label its own
    assert (mask.all(axis=1) | ~mask.any(axis=1)).all()
    k = len(aug.clusters_)  # 2: lambda * 2 clusters
    np.testing.assert_array_equal(aug.provenance_.n_from_partner, np.floor(aug.provenance_.lam * k).astype(int))
    # one of the two clusters is taken when lambda >= 1/2, uniformly: the features' cluster half of the time
    lam = aug.provenance_.lam.to_numpy()
    assert not mask[lam < 0.5].any()
    taken = mask[lam >= 0.5].all(axis=1)
    assert abs(taken.mean() - 0.5) < 4 * np.sqrt(0.25 / len(taken))


def test_tabcutmix_plus_include_target_bias_correction_and_typing():
    df, schema = mixed_table(n=150, seed=3)
    df["flag"] = df["city"] == "north"  # bool: categorical under both typings
    schema = Schema.infer(df, categorical=["level"], target="y")
    without = get_augmenter("tabcutmix-plus", include_target=False).fit(df, schema)
    assert "y" not in without.association_.columns and all("y" not in cl for cl in without.clusters_)
    assert sorted(c for cl in without.clusters_ for c in cl) == sorted(["age", "income", "city", "level", "flag"])
    with_target = get_augmenter("tabcutmix-plus").fit(df, schema)
    assert "y" in with_target.association_.columns
    plain = get_augmenter("tabcutmix-plus", bias_correction=False).fit(df, schema)
    ref = scipy_association(pd.crosstab(df.city, df.y).to_numpy(), method="cramer")
    assert plain.association_.loc["city", "y"] == pytest.approx(ref)
    assert with_target.association_.loc["city", "y"] < ref  # Bergsma's correction shrinks it
    by_dtype = get_augmenter("tabcutmix-plus", typing="dtype").fit(df, schema)
    assert by_dtype.kinds_ == {
        "age": "numerical",
        "income": "numerical",
        "city": "categorical",
        "level": "numerical",
        "flag": "categorical",
        "y": "categorical",
    }
    # integer codes typed as numbers: the correlation ratio of level on city, not Cramér's V
    codes = df.level.to_numpy(dtype=float)
    s = pd.Series(codes)
    between = sum(len(v) * (v.mean() - s.mean()) ** 2 for _, v in s.groupby(df.city.to_numpy()))
    eta = np.sqrt(between / ((s - s.mean()) ** 2).sum())
    assert by_dtype.association_.loc["level", "city"] == pytest.approx(eta)
    assert with_target.kinds_["level"] == "categorical"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"threshold": 1.5}, r"^threshold must be in \[0, 1\], got 1\.5$"),
        ({"threshold": -0.1}, r"^threshold must be in \[0, 1\], got -0\.1$"),
        ({"linkage": "ward"}, r"^linkage must be one of 'average', 'single', 'complete', 'weighted', got 'ward'$"),
        ({"typing": "pandas"}, r"^typing must be one of 'schema', 'dtype', got 'pandas'$"),
    ],
)
def test_tabcutmix_plus_bad_values_are_named(params, message):
    df, schema = mixed_table(n=30)
    with pytest.raises(ParameterError, match=message):
        get_augmenter("tabcutmix-plus", **params).fit(df, schema)


# ------------------------------------------------------------------ Mixup
def test_mixup_parents_uniform_over_the_table():
    df, schema = mixed_table(n=20, seed=6)
    aug = get_augmenter("mixup").fit(df, schema)
    aug.augment(n_new=4000, random_state=0)
    assert _uniform_counts_ok(aug.provenance_.parent_i.to_numpy(), 20)
    assert _uniform_counts_ok(aug.provenance_.parent_j.to_numpy(), 20)
    assert stats.kstest(aug.provenance_.lam, stats.beta(0.4, 0.4).cdf).pvalue > 1e-3
    aug5 = get_augmenter("mixup", alpha=5.0).fit(df, schema)
    aug5.augment(n_new=2000, random_state=0)
    assert stats.kstest(aug5.provenance_.lam, stats.beta(5.0, 5.0).cdf).pvalue > 1e-3


class _FixedDraws:
    """A stand-in generator: lambda and the two parents are given (lambda = 1/2 has probability 0)."""

    def __init__(self, lam, i, j):
        self._lam, self._ij = np.asarray(lam, dtype=float), [np.asarray(i), np.asarray(j)]

    def beta(self, a, b, n):
        return self._lam

    def integers(self, low, high, n):
        return self._ij.pop(0)


def test_mixup_categorical_tie_goes_to_the_first_category_in_sorted_order():
    df = pd.DataFrame({"x": [1.0, 3.0], "c": ["zeta", "alpha"]})
    aug = get_augmenter("mixup").fit(df, Schema.infer(df))
    out = aug._augment(4, _FixedDraws([0.5, 0.5, 0.7, 0.3], [0, 1, 0, 0], [1, 0, 1, 1]))
    assert out["c"].tolist() == ["alpha", "alpha", "zeta", "alpha"]  # ties: "alpha" < "zeta"; else the heavier
    np.testing.assert_allclose(out["x"], [2.0, 2.0, 0.7 * 1 + 0.3 * 3, 0.3 * 1 + 0.7 * 3])


def test_mixup_keeps_missing_numbers_missing_and_refuses_alpha_zero():
    df = pd.DataFrame({"x": [1.0, np.nan, 2.0, 4.0], "c": ["a", "b", "a", "b"]})
    schema = Schema.infer(df)
    aug = get_augmenter("mixup").fit(df, schema)
    new = aug.augment(n_new=200, random_state=0)
    prov = aug.provenance_
    touches_nan = (prov.parent_i == 1) | (prov.parent_j == 1)
    assert touches_nan.any() and (~touches_nan).any()
    assert new["x"][touches_nan].isna().all() and new["x"][~touches_nan].notna().all()
    with pytest.raises(ParameterError, match=r"^alpha must be in \(0, inf\), got 0\.0$"):
        get_augmenter("mixup", alpha=0.0).fit(df, schema)


# ------------------------------------------------------------------ IJF
def test_ijf_learns_nan_aware_moments_and_frequencies():
    df = pd.DataFrame(
        {
            "x": [1.0, 2.0, np.nan, 4.0, 8.0],
            "c": ["b", "a", "b", "c", "b"],
        }
    )
    schema = Schema.infer(df)
    aug = get_augmenter("ijf").fit(df, schema)
    assert aug.mean_["x"] == pytest.approx(15 / 4)
    assert aug.std_["x"] == pytest.approx(df.x.std())  # pandas: ddof=1, NaN skipped
    freq = aug.frequencies_["c"]
    assert dict(freq) == pytest.approx({"a": 0.2, "b": 0.6, "c": 0.2})
    zero = get_augmenter("ijf", ddof=0).fit(df, schema)
    assert zero.std_["x"] == pytest.approx(np.std([1.0, 2.0, 4.0, 8.0]))
    new = zero.augment(n_new=20000, random_state=0)
    assert new["x"].std() == pytest.approx(zero.std_["x"], rel=0.03)
    counts = new["c"].value_counts().reindex(["a", "b", "c"]).to_numpy()
    assert stats.chisquare(counts, 20000 * np.array([0.2, 0.6, 0.2])).pvalue > 1e-3


def test_ijf_needs_more_values_than_ddof():
    df = pd.DataFrame({"x": [np.nan, 5.0, np.nan], "z": [1.0, 2.0, 3.0]})
    schema = Schema.infer(df)
    msg = r"^ijf: numerical column 'x' has 1 value\(s\), too few for a standard deviation$"
    with pytest.raises(TabmemError, match=msg):
        get_augmenter("ijf").fit(df, schema)
    assert get_augmenter("ijf", ddof=0).fit(df, schema).std_["x"] == 0.0  # one value, ddof 0: defined
    two = pd.DataFrame({"x": [np.nan, 5.0, 7.0], "z": [1.0, 2.0, 3.0]})
    assert get_augmenter("ijf").fit(two, Schema.infer(two)).std_["x"] == pytest.approx(np.sqrt(2.0))
    with pytest.raises(TabmemError, match=r"^ijf: numerical column 'x' has 2 value\(s\)"):
        get_augmenter("ijf", ddof=2).fit(two, Schema.infer(two))
    with pytest.raises(ParameterError, match=r"^ddof must be in \[0, inf\], got -1$"):
        get_augmenter("ijf", ddof=-1).fit(two, Schema.infer(two))


def test_tabcutmix_plus_dtype_typing_takes_nullable_integers_with_missing_values():
    rng = np.random.default_rng(0)
    n = 60
    a = rng.integers(0, 50, n).astype(float)
    df = pd.DataFrame(
        {
            "a": pd.array([int(v) for v in a[:-3]] + [None] * 3, dtype="Int64"),
            "b": a * 0.1 + rng.normal(size=n) * 0.1,
            "y": rng.choice(["p", "q"], n).astype(object),
        }
    )
    aug = get_augmenter("tabcutmix-plus", typing="dtype").fit(df, Schema.infer(df, target="y"))
    assert aug.kinds_["a"] == "numerical"
    ref = abs(np.corrcoef(a[:-3], df.b.to_numpy()[:-3])[0, 1])  # <NA> rows left out
    assert aug.association_.loc["a", "b"] == pytest.approx(ref)
