"""Groundhog: a per-target classifier on summary features of whole synthetic tables (Stadler et al., USENIX Security 2022).

The attacker trains shadow generators with and without the target, describes each shadow's
synthetic table by a feature vector, and learns per target a classifier "was the target in the
training data of the generator that produced this table?"; the released table's features give
the score. The shadows and which targets each saw come from a
:class:`~tabmem.attacks.shadows.ShadowSet` (online design: every target is in about half).

Feature sets (``features=``; the paper's three):

* ``"naive"``: per numerical column mean, median, standard deviation, minimum, maximum; per
  categorical column the share of each category;
* ``"correlations"``: Pearson correlations of every pair of encoded columns (numericals and
  category indicators), constant columns giving 0;
* ``"histogram"``: per numerical column the shares of 10 equal-width bins over the range of
  the reference (or of all synthetic tables when there is none); categorical shares as above.

Categories and bin ranges are taken from the union of the released and shadow tables (the
attacker's data) and the reference. Features are standardised with their mean and standard
deviation over the shadows (features constant over the shadows are dropped) and divided by
``sqrt(F)`` (``F`` features), so that the Gram matrix has unit scale and ``alpha`` means the same
whatever the number of features.

Classifiers (``classifier=``):

* ``"ridge"`` (default): ridge regression of the 0/1 membership on the features, ``score =`` the
  prediction for the released table (scikit-learn's ``Ridge(alpha)``, intercept fitted). All
  targets share the feature matrix, so every target's model is one solve of the ``S x S`` dual
  system: thousands of targets cost about as much as one. The default ``alpha=100`` shrinks hard
  (with unit-scale features): with a few shadows and many features the prediction is then close
  to "mean similarity of the released table's features to the 'in' shadows minus that to the
  'out' ones", which ranked a planted outlier first in every toy trial where ``alpha=1`` did not;
* ``"random_forest"``: the paper's choice (``RandomForestClassifier(n_estimators=100)``, seeded),
  one forest per target; score = the forest's probability of "in". Slow for many targets.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_number, check_random_state
from tabmem.attacks.base import Attack, Table, register_attack
from tabmem.attacks.shadows import ShadowSet
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, concat_validated, validate
from tabmem.errors import ParameterError

__all__ = ["Groundhog", "ridge_dual_scores", "table_features"]

FEATURE_SETS = ("naive", "correlations", "histogram")
N_BINS = 10


def table_features(
    enc: TableEncoder, clean: pd.DataFrame, features: Sequence[str], bins: list[np.ndarray]
) -> np.ndarray:
    """The feature vector of one (validated, clean) synthetic table (module docstring)."""
    num = enc.numeric(clean)
    onehot = enc.one_hot(clean)
    parts: list[np.ndarray] = []
    if "naive" in features:
        if num.shape[1]:
            parts += [num.mean(0), np.median(num, 0), num.std(0), num.min(0), num.max(0)]
        parts.append(onehot.mean(0))
    if "histogram" in features:
        for j, edges in enumerate(bins):
            counts, _ = np.histogram(np.clip(num[:, j], edges[0], edges[-1]), bins=edges)
            parts.append(counts / max(len(num), 1))
        if "naive" not in features:
            parts.append(onehot.mean(0))
    if "correlations" in features:
        x = np.concatenate([num, onehot], axis=1)
        xc = x - x.mean(0)
        norm = np.sqrt((xc**2).sum(0))
        with np.errstate(invalid="ignore", divide="ignore"):
            c = (xc.T @ xc) / np.outer(norm, norm)
        iu = np.triu_indices(x.shape[1], k=1)
        parts.append(np.nan_to_num(c[iu], nan=0.0))
    return np.concatenate(parts) if parts else np.zeros(0)


def ridge_dual_scores(x: np.ndarray, y: np.ndarray, z: np.ndarray, alpha: float) -> np.ndarray:
    """Ridge predictions at ``z`` for every label column of ``y`` (``x``: ``S x F``, ``y``: ``S x T``).

    Equals scikit-learn's ``Ridge(alpha).fit(x, y[:, t]).predict(z)`` for each ``t``: centre ``x``
    and ``y`` (the intercept), ``w = x_c^T (x_c x_c^T + alpha I)^-1 y_c`` (the dual form, ``S x S``),
    prediction ``mean(y) + (z - mean(x)) w``.
    """
    xm, ym = x.mean(0), y.mean(0)
    xc, yc = x - xm, y - ym
    gram = xc @ xc.T + alpha * np.eye(xc.shape[0])
    dual = np.linalg.solve(gram, yc)
    return ym + ((z - xm) @ xc.T) @ dual


@register_attack("groundhog")
class Groundhog(Attack):
    """Per-target classifier on features of shadow synthetic tables (module docstring)."""

    display_name = "Groundhog"

    needs_shadows: ClassVar[bool] = True
    shadow_designs: ClassVar[tuple[str, ...]] = ("online",)
    supports_nan: ClassVar[bool] = False

    def __init__(
        self,
        features: Sequence[str] = ("naive", "correlations"),
        classifier: str = "ridge",
        alpha: float = 100.0,
        n_estimators: int = 100,
        random_state: int | None = 0,
    ) -> None:
        self.features = features
        self.classifier = classifier
        self.alpha = alpha
        self.n_estimators = n_estimators
        self.random_state = random_state

    def _fit_shadows(self, synthetic: Table, schema: Schema, reference: Table | None, shadows: ShadowSet) -> None:
        feats = [self.features] if isinstance(self.features, str) else list(self.features)
        for f in feats:
            check_choice("features", f, FEATURE_SETS)
        if not feats:
            raise ParameterError("groundhog: features must name at least one feature set")
        check_choice("classifier", self.classifier, ("ridge", "random_forest"))
        check_number("alpha", self.alpha, low=0.0, low_open=True)
        check_random_state(self.random_state)
        if shadows.design != "online":
            raise ParameterError("groundhog needs online shadows (targets in about half of them); got offline shadows")
        tables = [validate(t, schema, name=t.name, extra="ignore") for t in shadows.validated(schema)]
        released = validate(synthetic, schema, name="synthetic", extra="ignore")
        pool = [released, *tables]
        if reference is not None:
            pool.append(validate(reference, schema, name="reference", extra="ignore"))
        everything = concat_validated(pool, name="groundhog tables")  # clean values: not validated again
        enc = TableEncoder(schema).fit(everything, nan="error")
        num = enc.numeric((pool[-1] if reference is not None else everything).data)
        bins = [
            np.linspace(np.nanmin(num[:, j]), np.nanmax(num[:, j]) + 1e-12, N_BINS + 1) for j in range(num.shape[1])
        ]
        x = np.stack([table_features(enc, t.data, feats, bins) for t in tables])
        z = table_features(enc, released.data, feats, bins)
        mean, std = x.mean(0), x.std(0)
        keep = std > 0
        scale = std[keep] * np.sqrt(max(int(keep.sum()), 1))
        self.features_ = (x[:, keep] - mean[keep]) / scale
        self.released_features_ = (z[keep] - mean[keep]) / scale
        self.shadows_ = shadows

    def _score(self, targets: Table) -> np.ndarray:
        sh = self.shadows_
        sh.check_targets(targets, self.schema_, self.name)
        y = sh.membership.astype(np.float64)
        x, z = self.features_, self.released_features_
        if x.shape[1] == 0:
            return np.zeros(y.shape[1])  # every feature constant over the shadows: no signal
        if self.classifier == "ridge":
            return ridge_dual_scores(x, y, z[None, :], float(self.alpha))[0]
        from sklearn.ensemble import RandomForestClassifier

        out = np.empty(y.shape[1])
        for t in range(y.shape[1]):
            rf = RandomForestClassifier(n_estimators=int(self.n_estimators), random_state=self.random_state, n_jobs=1)
            rf.fit(x, y[:, t].astype(int))
            out[t] = rf.predict_proba(z[None, :])[0, list(rf.classes_).index(1)]
        return out
