"""The association matrix of TabCutMixPlus against scipy / pandas references and naive loops."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import bergsma_cramers_v
from scipy.stats.contingency import association as scipy_association

from tabmem.errors import ParameterError
from tabmem.mitigation import association_matrix, correlation_ratio, cramers_v, feature_clusters
from tabmem.mitigation.association import pearson_abs


def _cats(seed: int, n: int = 300):
    rng = np.random.default_rng(seed)
    a = rng.choice(["p", "q", "r", "s"], n)
    b = np.where(rng.random(n) < 0.6, a, rng.choice(["p", "q", "r", "s", "t"], n))  # associated with a
    return a, b


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cramers_v_uncorrected_equals_scipy(seed):
    a, b = _cats(seed)
    table = pd.crosstab(a, b).to_numpy()
    assert cramers_v(a, b, bias_correction=False) == pytest.approx(scipy_association(table, method="cramer"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cramers_v_bias_corrected_equals_bergsma_from_scipy_chi2(seed):
    a, b = _cats(seed, n=80)
    assert cramers_v(a, b) == pytest.approx(bergsma_cramers_v(a, b))


def test_cramers_v_edge_cases():
    assert cramers_v(np.array(["a"] * 10), np.array(list("ababababab"))) == 0.0  # one level: no association
    a = np.array(list("ab" * 50))
    assert cramers_v(a, a, bias_correction=False) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    assert cramers_v(rng.choice(list("abc"), 5000), rng.choice(list("xyz"), 5000)) < 0.03  # independent: ~0


def test_correlation_ratio_equals_naive_groupby():
    rng = np.random.default_rng(1)
    cat = rng.choice(["a", "b", "c"], 200)
    y = rng.normal(size=200) + (cat == "b") * 1.5
    y[[3, 17]] = np.nan  # rows without a value are ignored
    ok = ~np.isnan(y)
    s = pd.Series(y[ok])
    g = s.groupby(cat[ok])
    between = sum(len(v) * (v.mean() - s.mean()) ** 2 for _, v in g)
    total = ((s - s.mean()) ** 2).sum()
    assert correlation_ratio(cat, y) == pytest.approx(np.sqrt(between / total))
    assert correlation_ratio(cat, np.ones(200)) == 0.0  # constant: undefined -> 0


def test_pearson_equals_pandas_pairwise_complete():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"x": rng.normal(size=100), "z": rng.normal(size=100)})
    df["w"] = -0.7 * df.x + rng.normal(size=100) * 0.5
    df.loc[[1, 5, 9], "w"] = np.nan
    assert pearson_abs(df.x.to_numpy(), df.w.to_numpy()) == pytest.approx(abs(df.x.corr(df.w)))
    assert pearson_abs(df.x.to_numpy(), np.ones(100)) == 0.0


def test_association_matrix_dispatches_by_kind_and_is_symmetric():
    rng = np.random.default_rng(3)
    n = 200
    a, b = _cats(4, n)
    df = pd.DataFrame({"x": rng.normal(size=n), "a": a, "b": b})
    df["z"] = df.x * 2 + rng.normal(size=n)
    kinds = {"x": "numerical", "z": "numerical", "a": "categorical", "b": "categorical"}
    m = association_matrix(df, kinds)
    assert list(m.columns) == ["x", "a", "b", "z"]
    np.testing.assert_allclose(m.to_numpy(), m.to_numpy().T)
    np.testing.assert_allclose(np.diag(m), 1.0)
    assert m.loc["x", "z"] == pytest.approx(abs(df.x.corr(df.z)))
    assert m.loc["a", "b"] == pytest.approx(cramers_v(a, b))
    assert m.loc["x", "a"] == pytest.approx(correlation_ratio(a, df.x.to_numpy()))
    with pytest.raises(ParameterError, match="'b'"):
        association_matrix(df, {"x": "numerical", "z": "numerical", "a": "categorical"})


def test_feature_clusters_cut_average_linkage_at_threshold():
    cols = ["a", "b", "c", "d"]
    assoc = pd.DataFrame(np.eye(4), index=cols, columns=cols)
    assoc.loc["a", "b"] = assoc.loc["b", "a"] = 0.95  # distance 0.05: merged
    assoc.loc["c", "d"] = assoc.loc["d", "c"] = 0.6  # distance 0.4 > 0.3: apart
    assert feature_clusters(assoc, 0.3) == [["a", "b"], ["c"], ["d"]]
    assert feature_clusters(assoc, 0.5) == [["a", "b"], ["c", "d"]]
    # average linkage: {a,b} joins c only when the mean distance to a and b is below the cut
    assoc.loc["a", "c"] = assoc.loc["c", "a"] = 0.9
    assoc.loc["b", "c"] = assoc.loc["c", "b"] = 0.4  # mean distance (0.1 + 0.6) / 2 = 0.35
    assert feature_clusters(assoc, 0.3) == [["a", "b"], ["c"], ["d"]]
    assert feature_clusters(assoc, 0.36)[0] == ["a", "b", "c"]
