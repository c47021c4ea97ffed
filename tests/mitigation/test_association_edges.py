"""Edge cases of the association measures and the clustering (module docstring of
``tabmem.mitigation.association``): the smallest defined inputs, the [0, 1] range under float
rounding, missing categories, singleton groups, asymmetric input and every linkage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import bergsma_cramers_v
from scipy.stats.contingency import association as scipy_association

from tabmem.errors import ParameterError
from tabmem.mitigation import association_matrix, correlation_ratio, cramers_v, feature_clusters
from tabmem.mitigation.association import pearson_abs


# ------------------------------------------------------------------ Pearson
def test_pearson_two_rows_is_defined_one_row_is_not():
    assert pearson_abs(np.array([0.0, 1.0]), np.array([5.0, 3.0])) == pytest.approx(1.0)  # two points: a line
    assert pearson_abs(np.array([2.0]), np.array([1.0])) == 0.0
    # rows with a missing value on either side are dropped: only two complete rows remain
    x = np.array([0.0, np.nan, 1.0, 7.0])
    y = np.array([1.0, 2.0, 3.0, np.nan])
    assert pearson_abs(x, y) == pytest.approx(1.0)
    assert pearson_abs(np.array([np.nan, 1.0, 2.0]), np.array([4.0, np.nan, 1.0])) == 0.0  # one complete row


def test_pearson_stays_in_unit_interval_under_rounding():
    # the raw ratio of this exact linear pair is 1.0000000000000002 in float64
    x = np.array([0.2, 1.2, 2.2])
    assert pearson_abs(x, 3 * x) == 1.0
    assert pearson_abs(x, -3 * x) == 1.0


# ------------------------------------------------------------------ Cramér's V
def test_cramers_v_two_rows():
    a, b = np.array(["p", "q"]), np.array(["x", "y"])
    assert cramers_v(a, b, bias_correction=False) == pytest.approx(1.0)  # a 2x2 diagonal table
    # bias-corrected: kc = rc = 2 - 1/(n-1) = 1, so min(kc-1, rc-1) = 0: undefined -> 0
    assert cramers_v(a, b) == 0.0


def test_cramers_v_counts_missing_values_as_a_category():
    a = np.array(["p", None, "q", None, "p", "q", None, "p", "q", "p"], dtype=object)
    b = np.array(["x", "z", "y", "z", "x", "y", "x", "y", "y", "x"], dtype=object)
    filled = pd.Series(a).fillna("<missing>").to_numpy()
    table = pd.crosstab(filled, b).to_numpy()
    assert cramers_v(a, b, bias_correction=False) == pytest.approx(scipy_association(table, method="cramer"))
    nan_a = np.where(pd.isna(a), np.nan, a).astype(object)
    assert cramers_v(nan_a, b, bias_correction=False) == pytest.approx(scipy_association(table, method="cramer"))


# ------------------------------------------------------------------ correlation ratio
def test_correlation_ratio_two_rows_and_singleton_groups():
    assert correlation_ratio(np.array(["a", "b"]), np.array([0.0, 1.0])) == pytest.approx(1.0)
    assert correlation_ratio(np.array(["a"]), np.array([3.0])) == 0.0
    # a category seen once: its mean is its single value (naive groupby reference)
    cat = np.array(["a", "a", "a", "b", "c", "c"])
    y = np.array([1.0, 2.0, 6.0, 10.0, 3.0, 4.0])
    s = pd.Series(y)
    between = sum(len(v) * (v.mean() - s.mean()) ** 2 for _, v in s.groupby(cat))
    total = ((s - s.mean()) ** 2).sum()
    assert correlation_ratio(cat, y) == pytest.approx(np.sqrt(between / total))


def test_correlation_ratio_stays_in_unit_interval_under_rounding():
    # the raw ratio of this perfectly determined column is 1.0000000000000002 in float64
    assert correlation_ratio(np.array(["a", "b", "b", "b"]), np.array([1.5, 2.7, 2.7, 2.7])) == 1.0


# ------------------------------------------------------------------ plain Python input
def test_lists_with_none_and_mixed_type_categories():
    """Numbers may come as lists with ``None`` for missing; categories may be any hashable values
    (``1`` and ``"1"`` are two categories)."""
    x, y = [0.0, None, 1.0, 2.0, 3.0], [1.0, 5.0, 3.0, 2.0, None]
    ref = abs(np.corrcoef([0.0, 1.0, 2.0], [1.0, 3.0, 2.0])[0, 1])  # the three complete rows
    assert pearson_abs(x, y) == pytest.approx(ref)
    assert pearson_abs(y, x) == pytest.approx(ref)
    cats = ["a", "a", "b", "b", "b"]
    values = [1.0, None, 2.0, 4.0, 3.0]
    s = pd.Series([1.0, 2.0, 4.0, 3.0])
    g = s.groupby(["a", "b", "b", "b"])
    between = sum(len(v) * (v.mean() - s.mean()) ** 2 for _, v in g)
    assert correlation_ratio(cats, values) == pytest.approx(np.sqrt(between / ((s - s.mean()) ** 2).sum()))
    mixed = [1, "1", 1, "1", 1, "1"]
    assert correlation_ratio(mixed, [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]) == pytest.approx(1.0)
    other = ["x", "y", "x", "y", "x", "y"]
    assert cramers_v(mixed, other, bias_correction=False) == pytest.approx(1.0)
    assert cramers_v(other, mixed, bias_correction=False) == pytest.approx(1.0)


def test_cramers_v_of_a_determined_column_is_one_not_more():
    # b determines a (a 2 x 6 table with one non-zero per column): V = 1, although the float sum of
    # n_ij^2 / (n_i n_j) over this table rounds to 1.0000000000000002 before the clip
    b = np.repeat(["c0", "c1", "c2", "c3", "c4", "c5"], [19, 15, 10, 28, 4, 29])
    a = np.where(b == "c0", "r0", "r1")
    assert cramers_v(a, b, bias_correction=False) == 1.0
    assert cramers_v(b, a, bias_correction=False) == 1.0


@pytest.mark.parametrize("n", [12, 40])
def test_cramers_v_bias_correction_in_both_orders(n):
    """The corrected number of levels of either side can be the smaller one."""
    rng = np.random.default_rng(n)
    a = rng.choice(["p", "q", "r", "s"], n)
    b = np.where(rng.random(n) < 0.7, np.where(np.isin(a, ["p", "q"]), "u", "v"), rng.choice(["u", "v"], n))
    assert len(set(a)) == 4 and len(set(b)) == 2
    assert cramers_v(a, b) == pytest.approx(bergsma_cramers_v(a, b))
    assert cramers_v(b, a) == pytest.approx(bergsma_cramers_v(b, a))
    assert cramers_v(a, b) == pytest.approx(cramers_v(b, a))


# ------------------------------------------------------------------ the matrix
def test_association_matrix_both_mixed_orders_and_unknown_kinds():
    rng = np.random.default_rng(0)
    n = 80
    cat = rng.choice(["u", "v", "w"], n).astype(object)
    df = pd.DataFrame({"c": cat, "x": rng.normal(size=n) + (cat == "v") * 2.0, "d": cat.copy()})
    kinds = {"c": "categorical", "x": "numerical", "d": "categorical"}
    m = association_matrix(df, kinds)
    naive = pd.Series(df.x).groupby(cat)
    between = sum(len(v) * (v.mean() - df.x.mean()) ** 2 for _, v in naive)
    eta = np.sqrt(between / ((df.x - df.x.mean()) ** 2).sum())
    assert m.loc["c", "x"] == pytest.approx(eta) and m.loc["x", "d"] == pytest.approx(eta)  # cat-num and num-cat
    assert m.loc["c", "d"] == pytest.approx(1.0)
    e = rng.choice(["p", "q"], n).astype(object)
    df2 = pd.DataFrame({"c": cat, "e": e})
    ref = scipy_association(pd.crosstab(cat, e).to_numpy(), method="cramer")
    plain = association_matrix(df2, {"c": "categorical", "e": "categorical"}, bias_correction=False)
    assert plain.loc["c", "e"] == pytest.approx(ref)
    corrected = association_matrix(df2, {"c": "categorical", "e": "categorical"})
    assert corrected.loc["c", "e"] == pytest.approx(cramers_v(cat, e)) and corrected.loc["c", "e"] < ref
    with pytest.raises(
        ParameterError, match=r"^association_matrix: no kind \(numerical/categorical\) for column\(s\) \['x'\]$"
    ):
        association_matrix(df, {"c": "categorical", "x": "ordinal", "d": "categorical"})


def test_association_matrix_nullable_numbers_and_a_constant_diagonal():
    """pandas' nullable Float64 / Int64 columns count <NA> as missing; the diagonal is 1 even for a
    constant column, which is associated with nothing else (0)."""
    df = pd.DataFrame(
        {
            "x": pd.array([1.0, None, 2.0, 4.0, 3.0, 0.5], dtype="Float64"),
            "z": pd.array([2, 5, None, 7, 7, 1], dtype="Int64"),
            "c": ["a", "b", "a", "b", "b", "a"],
            "k": [3.0] * 6,
            "one": ["u"] * 6,
        }
    )
    kinds = {"x": "numerical", "z": "numerical", "c": "categorical", "k": "numerical", "one": "categorical"}
    m = association_matrix(df, kinds)
    np.testing.assert_array_equal(np.diag(m), 1.0)
    both = [0, 3, 4, 5]  # rows where x and z are both present
    ref = abs(np.corrcoef([1.0, 4.0, 3.0, 0.5], [2.0, 7.0, 7.0, 1.0])[0, 1])
    assert m.loc["x", "z"] == pytest.approx(ref) and len(both) == 4
    s = pd.Series([1.0, 2.0, 4.0, 3.0, 0.5])
    g = s.groupby(["a", "a", "b", "b", "a"])
    eta = np.sqrt(sum(len(v) * (v.mean() - s.mean()) ** 2 for _, v in g) / ((s - s.mean()) ** 2).sum())
    assert m.loc["x", "c"] == pytest.approx(eta)
    off = m.drop(index=["k", "one"])[["k", "one"]].to_numpy()
    assert (off == 0.0).all() and m.loc["k", "one"] == 0.0


# ------------------------------------------------------------------ clustering
def test_feature_clusters_default_cut_is_the_authors_0_3():
    cols = ["a", "b", "c"]
    assoc = pd.DataFrame(np.eye(3), index=cols, columns=cols)
    assoc.loc["a", "b"] = assoc.loc["b", "a"] = 0.75  # distance 0.25: merged at 0.3
    assoc.loc["b", "c"] = assoc.loc["c", "b"] = 0.65  # distance 0.35: not
    assoc.loc["a", "c"] = assoc.loc["c", "a"] = 0.65
    assert feature_clusters(assoc) == [["a", "b"], ["c"]]


def test_feature_clusters_single_column():
    assoc = pd.DataFrame([[1.0]], index=["only"], columns=["only"])
    assert feature_clusters(assoc) == [["only"]]


def test_feature_clusters_symmetrise_an_asymmetric_matrix():
    cols = ["a", "b", "c"]
    assoc = pd.DataFrame(np.eye(3), index=cols, columns=cols)
    assoc.loc["a", "b"] = 0.1  # distance 0.9 above the diagonal
    assoc.loc["b", "a"] = 0.9  # distance 0.1 below: the pair's distance is their mean, 0.5
    assert feature_clusters(assoc, 0.45) == [["a"], ["b"], ["c"]]
    assert feature_clusters(assoc, 0.55) == [["a", "b"], ["c"]]


def test_feature_clusters_every_linkage_against_hand_computed_merges():
    # d(a,b) = 0.1, d(b,c) = 0.4, d(a,c) = 0.9; d to e = 1 (unassociated)
    cols = ["a", "b", "c", "e"]
    assoc = pd.DataFrame(np.eye(4), index=cols, columns=cols)
    for (p, q), v in {("a", "b"): 0.9, ("b", "c"): 0.6, ("a", "c"): 0.1}.items():
        assoc.loc[p, q] = assoc.loc[q, p] = v
    # {a,b} then c at: single min(0.9, 0.4) = 0.4; complete max = 0.9; average / weighted mean = 0.65
    assert feature_clusters(assoc, 0.5, "single") == [["a", "b", "c"], ["e"]]
    for method in ("complete", "average", "weighted"):
        assert feature_clusters(assoc, 0.5, method) == [["a", "b"], ["c"], ["e"]], method
    assert feature_clusters(assoc, 0.7, "average") == [["a", "b", "c"], ["e"]]
    assert feature_clusters(assoc, 0.7, "weighted") == [["a", "b", "c"], ["e"]]
    assert feature_clusters(assoc, 0.7, "complete") == [["a", "b"], ["c"], ["e"]]
