"""TabCutMix and TabCutMixPlus: new rows made of cells of two training rows of the same class.

Fang et al., "Understanding and Mitigating Memorization in Diffusion Models for Tabular Data"
(arXiv 2412.11044, ICML 2025), §4 and App. C; the authors' ``cutmix_intra.py``. Per new
row: ``lambda ~ U(0, 1)``; row A uniform over the training rows (so classes follow their prior);
partner B uniform over the rows with A's label (B may be A); the new row is A with some non-label
cells replaced by B's; its label is A's.

* ``TabCutMix(mode="code")`` (default, the authors' code): exactly ``int(lambda * F)`` distinct
  non-label columns, chosen uniformly, come from B (F = number of non-label columns).
* ``TabCutMix(mode="paper")`` (the paper's Eq. and Algorithm 1): each non-label column comes from B
  with probability lambda (a Bernoulli mask).
* ``TabCutMixPlus``: the same on clusters of associated columns
  (:mod:`tabmem.mitigation.association`, computed once on the training table): exactly
  ``int(lambda * K)`` of the K clusters are copied whole from B. As in the authors' code the label
  takes part in the clustering (``include_target=True``) and is reset to A's afterwards (a no-op, B
  has A's label); column kinds come from the schema (``typing="schema"``) or, as the authors' code
  does, from pandas dtypes (``typing="dtype"``: numeric dtypes numerical, everything else
  categorical, so integer-coded categories count as numbers).

After ``augment``, ``provenance_`` holds one row per new row: ``parent_a``, ``parent_b`` (training
row positions), ``lam`` and ``n_from_partner`` (columns, or clusters for Plus, taken from B), and
``partner_mask_`` the (new rows x non-label columns) mask of cells taken from B.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_number
from tabmem.data.schema import ValidatedTable, canonical_categories, raw_frame
from tabmem.mitigation.association import association_matrix, feature_clusters
from tabmem.mitigation.base import Augmenter, class_groups, random_subset_mask, register_augmenter

__all__ = ["TabCutMix", "TabCutMixPlus"]


class _SameClassMix(Augmenter):
    """Shared part: draw (lambda, A, B-in-A's-class) and copy the masked cells of B into A."""

    needs_target = True

    def _fit_pairs(self, table: ValidatedTable) -> None:
        target = self.schema_.target
        self._clean = table.data
        self.features_ = [c for c in self.schema_.columns if c != target]
        self._codes, self._order, self._start, self._count = class_groups(table.data[target].to_numpy(dtype=object))

    def _draw_pairs(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lam = rng.uniform(0.0, 1.0, n)
        a = rng.integers(0, self.n_train_, n)
        cls = self._codes[a]
        b = self._order[self._start[cls] + rng.integers(0, self._count[cls])]
        return lam, a, b

    def _mix(
        self, a: np.ndarray, b: np.ndarray, lam: np.ndarray, mask: np.ndarray, n_units: np.ndarray
    ) -> pd.DataFrame:
        clean = self._clean
        out = {}
        feature_pos = {c: j for j, c in enumerate(self.features_)}
        for c in self.schema_.columns:
            col = clean[c].to_numpy()
            out[c] = np.where(mask[:, feature_pos[c]], col[b], col[a]) if c in feature_pos else col[a]
        self.provenance_ = pd.DataFrame({"parent_a": a, "parent_b": b, "lam": lam, "n_from_partner": n_units})
        self.partner_mask_ = mask
        return pd.DataFrame(out, columns=list(self.schema_.columns))


@register_augmenter("tabcutmix")
class TabCutMix(_SameClassMix):
    """Same-class CutMix for tables (module docstring).

    Args:
        mode: ``"code"`` (exactly ``int(lambda F)`` columns from the partner; the authors' code) or
            ``"paper"`` (each column from the partner with probability lambda).

    Examples:
        >>> aug = TabCutMix().fit(train, schema)            # doctest: +SKIP
        >>> new_rows = aug.augment(ratio=0.3, random_state=0)  # doctest: +SKIP
    """

    def __init__(self, mode: str = "code") -> None:
        self.mode = mode

    def _check_params(self) -> None:
        check_choice("mode", self.mode, ("code", "paper"))

    def _fit(self, table: ValidatedTable) -> None:
        self._fit_pairs(table)

    def _augment(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        lam, a, b = self._draw_pairs(n, rng)
        f = len(self.features_)
        if self.mode == "code":
            k = (lam * f).astype(np.int64)
            mask = random_subset_mask(k, f, rng)
        else:
            mask = rng.random((n, f)) < lam[:, None]
        return self._mix(a, b, lam, mask, mask.sum(axis=1))


@register_augmenter("tabcutmix-plus")
class TabCutMixPlus(_SameClassMix):
    """Same-class CutMix that swaps whole clusters of associated columns (module docstring).

    Args:
        threshold: distance ``1 - association`` at which the average-linkage tree is cut (0.3).
        linkage: scipy linkage method (``"average"`` in the authors' code).
        typing: column kinds for the association: ``"schema"`` or ``"dtype"`` (the authors' code).
        include_target: let the label take part in the clustering (the authors' code).
        bias_correction: bias-corrected Cramér's V (the authors' code) or the plain one.

    Learned: ``association_`` (DataFrame), ``clusters_`` (lists of column names, the label included
    when ``include_target``), ``kinds_`` (the kind used for each column).
    """

    def __init__(
        self,
        threshold: float = 0.3,
        linkage: str = "average",
        typing: str = "schema",
        include_target: bool = True,
        bias_correction: bool = True,
    ) -> None:
        self.threshold = threshold
        self.linkage = linkage
        self.typing = typing
        self.include_target = include_target
        self.bias_correction = bias_correction

    def _check_params(self) -> None:
        check_number("threshold", self.threshold, low=0.0, high=1.0)
        check_choice("linkage", self.linkage, ("average", "single", "complete", "weighted"))
        check_choice("typing", self.typing, ("schema", "dtype"))

    def _fit(self, table: ValidatedTable) -> None:
        self._fit_pairs(table)
        cols = list(self.schema_.columns) if self.include_target else list(self.features_)
        frame, kinds = self._typed(table, cols)
        self.kinds_ = kinds
        self.association_ = association_matrix(frame, kinds, bias_correction=self.bias_correction)
        self.clusters_ = feature_clusters(self.association_, self.threshold, self.linkage)
        pos = {c: j for j, c in enumerate(self.features_)}
        # cluster -> feature positions it covers (the label, when clustered, is never copied)
        self._cluster_cols = [[pos[c] for c in cl if c in pos] for cl in self.clusters_]

    def _typed(self, table: ValidatedTable, cols: list[str]) -> tuple[pd.DataFrame, dict[str, str]]:
        clean = table.data
        if self.typing == "schema":
            return clean[cols], {c: self.schema_.kind(c) for c in cols}
        raw = raw_frame(table).rename(columns=str)
        frame, kinds = {}, {}
        for c in cols:
            dt = raw[c].dtype
            if pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt):
                kinds[c] = "numerical"
                frame[c] = pd.to_numeric(raw[c], errors="coerce").to_numpy(dtype=np.float64)
            else:
                kinds[c] = "categorical"
                frame[c] = canonical_categories(raw[c])
        return pd.DataFrame(frame, columns=cols), kinds

    def _augment(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        lam, a, b = self._draw_pairs(n, rng)
        k_clusters = len(self._cluster_cols)
        k = (lam * k_clusters).astype(np.int64)
        chosen = random_subset_mask(k, k_clusters, rng)
        mask = np.zeros((n, len(self.features_)), dtype=bool)
        for j, cols in enumerate(self._cluster_cols):
            if cols:
                mask[:, cols] |= chosen[:, [j]]
        return self._mix(a, b, lam, mask, k)
