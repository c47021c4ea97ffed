"""SMOTE for mixed-type tables: new minority-class rows between a row and one of its neighbours.

Chawla et al. (2002), "SMOTE: Synthetic Minority Over-sampling Technique". Two variants:

* ``variant="imblearn"`` (default): imbalanced-learn's ``SMOTENC`` (numerical and categorical
  features), ``SMOTE`` (numerical only) or ``SMOTEN`` (categorical only), with ``k_neighbors``
  neighbours within the class. SMOTENC interpolates numerical features on the segment between a
  row and a same-class neighbour and gives each categorical feature its most frequent value among
  the neighbours (imbalanced-learn's rule).
* ``variant="paper"`` (the TabCutMix authors' ``smote_tabular``): base row i uniform
  over the class, neighbour j uniform over its ``k_neighbors`` nearest same-class rows by Euclidean
  distance on the raw numerical features; numerical features ``x_i + u (x_j - x_i)``, u ~ U(0, 1);
  each categorical feature from i or j with probability 1/2.

Which classes grow (``classes``): ``"minority"`` (the authors: all new rows go to the smallest
class; ties go to the first class in sorted order) or ``"not majority"`` (every class but the
largest, new rows split in proportion to each class's shortfall from the largest, largest
remainders rounded up). The label of a new row is its class.

After ``augment``, ``provenance_`` (paper variant only) holds ``base``, ``neighbor`` (training row
positions) and ``u``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_positive_int
from tabmem.data.schema import ValidatedTable
from tabmem.errors import TabmemError
from tabmem.mitigation.base import Augmenter, register_augmenter

__all__ = ["SMOTE", "class_quota"]


def class_quota(counts: pd.Series, n: int, classes: str) -> dict[str, int]:
    """New rows per class (module docstring: ``"minority"`` or ``"not majority"``)."""
    counts = counts.sort_index()
    if classes == "minority":
        return {str(counts.idxmin()): int(n)}
    majority = counts.idxmax()
    rest = counts.drop(index=majority)
    if rest.empty:
        return {}
    deficit = (counts.max() - rest).astype(float)
    weights = deficit if deficit.sum() > 0 else rest.astype(float)
    exact = weights / weights.sum() * n
    base = np.floor(exact).astype(int)
    left = n - int(base.sum())
    order = np.argsort(-(exact - base).to_numpy(), kind="stable")[:left]
    base.iloc[order] += 1
    return {str(c): int(v) for c, v in base.items() if v > 0}


@register_augmenter("smote")
class SMOTE(Augmenter):
    """Minority over-sampling for mixed tables (module docstring).

    Args:
        variant: ``"imblearn"`` (SMOTENC/SMOTE/SMOTEN of imbalanced-learn) or ``"paper"``.
        k_neighbors: neighbours within the class (5).
        classes: ``"minority"`` or ``"not majority"``.
    """

    needs_target = True

    def __init__(self, variant: str = "imblearn", k_neighbors: int = 5, classes: str = "minority") -> None:
        self.variant = variant
        self.k_neighbors = k_neighbors
        self.classes = classes

    def _check_params(self) -> None:
        check_choice("variant", self.variant, ("imblearn", "paper"))
        check_positive_int("k_neighbors", self.k_neighbors)
        check_choice("classes", self.classes, ("minority", "not majority"))

    def _fit(self, table: ValidatedTable) -> None:
        target = self.schema_.target
        clean = table.data
        self._clean = clean
        self.num_features_ = [c for c in self.schema_.numerical if c != target]
        self.cat_features_ = [c for c in self.schema_.categorical if c != target]
        bad = [c for c in self.num_features_ if clean[c].isna().any()]
        if bad:
            raise TabmemError(f"smote: numerical column(s) {bad} have missing values; impute or drop those rows first")
        if self.variant == "paper" and not self.num_features_:
            raise TabmemError("smote variant='paper' finds neighbours on numerical features; the table has none")
        self.class_counts_ = clean[target].value_counts()
        if len(self.class_counts_) < 2:
            only = ", ".join(repr(str(v)) for v in self.class_counts_.index) or "none"
            raise TabmemError(
                f"smote: the target column {target!r} has a single class ({only}); SMOTE creates rows of the "
                "minority classes and needs at least two classes"
            )

    def _augment(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        quota = class_quota(self.class_counts_, n, self.classes)
        if not quota:
            raise TabmemError(
                f"smote: the target has a single class ({list(self.class_counts_.index)}); nothing to over-sample"
            )
        for cls, q in quota.items():
            size = int(self.class_counts_[cls])
            if q and size <= self.k_neighbors:
                raise TabmemError(
                    f"smote: class {cls!r} has {size} row(s), needs more than k_neighbors={self.k_neighbors}"
                )
        if self.variant == "imblearn":
            return self._imblearn(quota, rng)
        return self._paper(quota, rng)

    def _imblearn(self, quota: dict[str, int], rng: np.random.Generator) -> pd.DataFrame:
        try:
            from imblearn.over_sampling import SMOTE as _SMOTE
            from imblearn.over_sampling import SMOTEN, SMOTENC
        except ModuleNotFoundError:  # pragma: no cover - the mitigation extra
            raise TabmemError("smote needs imbalanced-learn: pip install 'tabmem[mitigation]'") from None
        target = self.schema_.target
        features = self.num_features_ + self.cat_features_
        x = self._clean[features]
        y = self._clean[target].to_numpy(dtype=object)
        strategy = {c: int(self.class_counts_[c]) + q for c, q in quota.items() if q}
        seed = int(rng.integers(0, 2**31 - 1))
        k = int(self.k_neighbors)
        if self.num_features_ and self.cat_features_:
            cat_idx = list(range(len(self.num_features_), len(features)))
            sampler = SMOTENC(
                categorical_features=cat_idx, k_neighbors=k, sampling_strategy=strategy, random_state=seed
            )
        elif self.num_features_:
            sampler = _SMOTE(k_neighbors=k, sampling_strategy=strategy, random_state=seed)
        else:
            sampler = SMOTEN(k_neighbors=k, sampling_strategy=strategy, random_state=seed)
        x_res, y_res = sampler.fit_resample(x, y)
        new = pd.DataFrame(x_res).iloc[len(x) :].reset_index(drop=True)
        new.columns = features
        new[target] = np.asarray(y_res, dtype=object)[len(x) :]
        for c in self.num_features_:
            new[c] = new[c].astype(np.float64)
        for c in self.cat_features_:
            new[c] = new[c].astype(object)
        return new[list(self.schema_.columns)]

    def _paper(self, quota: dict[str, int], rng: np.random.Generator) -> pd.DataFrame:
        from sklearn.neighbors import NearestNeighbors

        target = self.schema_.target
        clean = self._clean
        labels = clean[target].to_numpy(dtype=object)
        parts, prov = [], []
        for cls, q in quota.items():
            if not q:
                continue
            rows = np.flatnonzero(labels == cls)
            x = clean[self.num_features_].to_numpy(dtype=np.float64)[rows]
            nn = NearestNeighbors(n_neighbors=self.k_neighbors + 1, algorithm="brute").fit(x)
            _, idx = nn.kneighbors(x)
            neigh = _drop_self(idx, self.k_neighbors)  # positions within `rows`
            base = rng.integers(0, len(rows), q)
            pick = neigh[base, rng.integers(0, self.k_neighbors, q)]
            u = rng.uniform(0.0, 1.0, q)
            i, j = rows[base], rows[pick]
            out = {}
            for c in self.num_features_:
                v = clean[c].to_numpy(dtype=np.float64)
                out[c] = v[i] + u * (v[j] - v[i])
            coin = rng.random((q, len(self.cat_features_))) < 0.5
            for t, c in enumerate(self.cat_features_):
                v = clean[c].to_numpy(dtype=object)
                out[c] = np.where(coin[:, t], v[j], v[i])
            out[target] = np.full(q, cls, dtype=object)
            parts.append(pd.DataFrame(out))
            prov.append(pd.DataFrame({"base": i, "neighbor": j, "u": u}))
        self.provenance_ = (
            pd.concat(prov, ignore_index=True) if prov else pd.DataFrame(columns=["base", "neighbor", "u"])
        )
        return pd.concat(parts, ignore_index=True)[list(self.schema_.columns)]


def _drop_self(idx: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` neighbours without the row itself (exact duplicates may list another copy first)."""
    n = idx.shape[0]
    own = idx == np.arange(n)[:, None]
    keep = ~own
    # rows where the point itself was not returned (more than k+1 duplicates): drop the last neighbour
    missing = ~own.any(axis=1)
    keep[missing, -1] = False
    return idx[keep].reshape(n, k)
