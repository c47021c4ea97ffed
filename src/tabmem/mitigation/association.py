"""Pairwise association of mixed-type columns and the feature clusters of TabCutMixPlus.

TabCutMixPlus (Fang et al., arXiv 2412.11044, §4 and the authors' ``feature_clustering_mixed``)
groups features whose association is high and swaps whole groups. Association, in [0, 1]:

* numerical-numerical: ``|Pearson r|`` (rows where both values are present);
* categorical-categorical: Cramér's V with Bergsma's (2013) bias correction (default):
  ``phi2 = chi2 / n``, ``phi2c = max(0, phi2 - (k-1)(r-1)/(n-1))``, ``kc = k - (k-1)^2/(n-1)``,
  ``rc = r - (r-1)^2/(n-1)``, ``V = sqrt(phi2c / min(kc-1, rc-1))``; chi2 without Yates' correction;
* numerical-categorical: the correlation ratio ``eta = sqrt(sum_c n_c (mean_c - mean)^2 / sum (y - mean)^2)``
  (the authors' ``sqrt(eta^2)``).

An association that is undefined (a constant column, fewer than two rows) is 0: such a column is
associated with nothing. Clustering: distance ``1 - association``, hierarchical clustering with
average linkage (scipy), cut at distance ``threshold`` (0.3 in the authors' code: clusters whose
members are on average associated above 0.7).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from tabmem.errors import ParameterError

__all__ = ["association_matrix", "correlation_ratio", "cramers_v", "feature_clusters", "pearson_abs"]


def pearson_abs(x: np.ndarray, y: np.ndarray) -> float:
    """``|Pearson r|`` over the rows where both are present (0 when undefined)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    if len(x) < 2:
        return 0.0
    dx, dy = x - x.mean(), y - y.mean()
    den = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return float(min(1.0, abs((dx * dy).sum()) / den)) if den > 0 else 0.0


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    return codes.astype(np.int64), len(uniques)


def cramers_v(a: np.ndarray, b: np.ndarray, *, bias_correction: bool = True) -> float:
    """Cramér's V of two categorical columns (bias-corrected by default; module docstring)."""
    ca, ka = _codes(np.asarray(a, dtype=object))
    cb, kb = _codes(np.asarray(b, dtype=object))
    n = len(ca)
    if n < 2 or ka < 2 or kb < 2:
        return 0.0
    observed = np.bincount(ca * kb + cb, minlength=ka * kb).reshape(ka, kb).astype(np.float64)
    rows, cols = observed.sum(axis=1), observed.sum(axis=0)
    chi2 = n * ((observed**2 / np.outer(rows, cols)).sum() - 1.0)
    phi2 = max(0.0, chi2 / n)
    r, k = float(ka), float(kb)
    if bias_correction:
        phi2 = max(0.0, phi2 - (k - 1) * (r - 1) / (n - 1))
        r, k = r - (r - 1) ** 2 / (n - 1), k - (k - 1) ** 2 / (n - 1)
    den = min(k - 1, r - 1)
    return float(min(1.0, np.sqrt(phi2 / den))) if den > 0 else 0.0


def correlation_ratio(categories: np.ndarray, values: np.ndarray) -> float:
    """Correlation ratio eta of a numerical column on a categorical one (rows with a value; module docstring)."""
    y = np.asarray(values, dtype=np.float64)
    ok = ~np.isnan(y)
    codes, k = _codes(np.asarray(categories, dtype=object)[ok])
    y = y[ok]
    if len(y) < 2:
        return 0.0
    total = ((y - y.mean()) ** 2).sum()
    if total <= 0:
        return 0.0
    n_c = np.bincount(codes, minlength=k)
    mean_c = np.bincount(codes, weights=y, minlength=k) / np.maximum(n_c, 1)
    between = (n_c * (mean_c - y.mean()) ** 2).sum()
    return float(min(1.0, np.sqrt(between / total)))


def association_matrix(table: pd.DataFrame, kinds: Mapping[str, str], *, bias_correction: bool = True) -> pd.DataFrame:
    """Symmetric (columns x columns) association matrix with 1 on the diagonal (module docstring).

    ``kinds`` maps every column of ``table`` to ``"numerical"`` or ``"categorical"``; numerical
    columns must hold numbers (NaN allowed), categorical ones anything hashable.
    """
    cols = [str(c) for c in table.columns]
    missing = [c for c in cols if kinds.get(c) not in ("numerical", "categorical")]
    if missing:
        raise ParameterError(f"association_matrix: no kind (numerical/categorical) for column(s) {missing}")
    values = {
        c: table[c].to_numpy(dtype=np.float64) if kinds[c] == "numerical" else table[c].to_numpy(dtype=object)
        for c in cols
    }
    m = np.eye(len(cols))
    for i, a in enumerate(cols):
        for j in range(i + 1, len(cols)):
            b = cols[j]
            ka, kb = kinds[a], kinds[b]
            if ka == kb == "numerical":
                v = pearson_abs(values[a], values[b])
            elif ka == kb == "categorical":
                v = cramers_v(values[a], values[b], bias_correction=bias_correction)
            elif ka == "categorical":
                v = correlation_ratio(values[a], values[b])
            else:
                v = correlation_ratio(values[b], values[a])
            m[i, j] = m[j, i] = v
    return pd.DataFrame(m, index=cols, columns=cols)


def feature_clusters(association: pd.DataFrame, threshold: float = 0.3, method: str = "average") -> list[list[str]]:
    """Clusters of columns: hierarchical clustering of ``1 - association`` cut at distance ``threshold``.

    Clusters are listed in the order of their first column in the table, columns in table order.
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    cols = list(association.columns)
    if len(cols) == 1:
        return [cols]
    dist = 1.0 - association.to_numpy(dtype=np.float64)
    np.fill_diagonal(dist, 0.0)
    dist = np.clip((dist + dist.T) / 2, 0.0, 1.0)
    labels = fcluster(linkage(squareform(dist, checks=False), method=method), t=threshold, criterion="distance")
    clusters: dict[int, list[str]] = {}
    for c, lab in zip(cols, labels):
        clusters.setdefault(int(lab), []).append(c)
    return list(clusters.values())
