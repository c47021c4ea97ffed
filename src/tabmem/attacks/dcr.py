"""DCR: distance to the closest synthetic record (GAN-Leaks, Chen et al. CCS 2020; TAPAS ``ClosestDistanceMIA``).

``score(x) = -min_{s in S} d(x, s)`` with any distance of the core registry
(:mod:`tabmem.neighbors.distances`), fitted on the synthetic table. The default ``l2`` is the
LevAtt paper's baseline: Euclidean distance after standardising numericals with the synthetic
table's mean and (population) standard deviation, i.e. scikit-learn's ``StandardScaler`` fitted
on the synthetic data; categoricals are one-hot / sqrt(2) (a mismatch adds 1 to d^2) where the
paper used ordinal codes. The search is the core's exact blocked search.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.attacks._features import fit_encoder, validate_targets
from tabmem.attacks.base import Attack, register_attack
from tabmem.data.schema import Schema
from tabmem.neighbors.blocked import kneighbors
from tabmem.neighbors.distances import get_distance


def fit_distance(name: str, synthetic: pd.DataFrame, schema: Schema, nan: str):
    """A core distance fitted on the synthetic table, with the encoder used to validate targets."""
    dist = get_distance(name)
    enc, clean = fit_encoder(synthetic, schema, nan)
    dist.fit(encoder=enc, clean=clean)
    return enc, dist


@register_attack("dcr")
class DCR(Attack):
    """Minus the distance to the closest synthetic row (exact, blocked)."""

    def __init__(self, distance: str = "l2", nan: str = "error", n_jobs: int | None = 2) -> None:
        self.distance = distance
        self.nan = nan
        self.n_jobs = n_jobs

    def _fit(self, synthetic: pd.DataFrame, schema: Schema, reference: pd.DataFrame | None) -> None:
        self.encoder_, self.distance_ = fit_distance(self.distance, synthetic, schema, self.nan)

    def nearest(self, targets: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(index, distance) of the closest synthetic row of every target."""
        clean = validate_targets(self.encoder_, targets, self.nan)
        idx, dist = kneighbors(self.distance_, self.distance_.prepare(clean), k=1, n_jobs=self.n_jobs)
        return idx[:, 0], dist[:, 0]

    def _score(self, targets: pd.DataFrame) -> np.ndarray:
        return -self.nearest(targets)[1]
