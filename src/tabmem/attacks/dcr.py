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

from tabmem.attacks._features import fit_encoder
from tabmem.attacks.base import Attack, Table, register_attack
from tabmem.data.schema import Schema, ValidatedTable
from tabmem.neighbors.index import NeighborIndex


def fit_index(name: str, synthetic: Table, schema: Schema, nan: str, n_jobs: int | None) -> NeighborIndex:
    """A :class:`NeighborIndex` of the synthetic table (the attacker's knowledge), validated once."""
    index = NeighborIndex(name, n_jobs=n_jobs)
    index._check_params()  # bad distance / n_jobs fail before the table is validated
    enc, clean = fit_encoder(synthetic, schema, nan)
    return index.fit(None, encoder=enc, clean=clean)


def validate_targets(index: NeighborIndex, targets: Table, nan: str) -> ValidatedTable:
    """Targets checked against the synthetic schema; categories absent from it mismatch everything."""
    return index.validate(targets, name="targets", nan=nan, unseen="mismatch", extra="ignore")  # type: ignore[arg-type]


@register_attack("dcr")
class DCR(Attack):
    """Minus the distance to the closest synthetic row (exact, blocked)."""

    display_name = "DCR"
    short_name = "DCR"
    distance_description = "distance to the closest synthetic row"
    run_options = ("distance", "n_jobs")

    def __init__(self, distance: str = "l2", nan: str = "error", n_jobs: int | None = 2) -> None:
        self.distance = distance
        self.nan = nan
        self.n_jobs = n_jobs

    def _fit(self, synthetic: Table, schema: Schema, reference: pd.DataFrame | None) -> None:
        self.index_ = fit_index(self.distance, synthetic, schema, self.nan, self.n_jobs)
        self.encoder_, self.distance_ = self.index_.encoder_, self.index_.distance_

    def nearest(self, targets: Table) -> tuple[np.ndarray, np.ndarray]:
        """(index, distance) of the closest synthetic row of every target."""
        idx, dist = self.index_.kneighbors(validate_targets(self.index_, targets, self.nan), k=1)
        return idx[:, 0], dist[:, 0]

    def _score(self, targets: Table) -> np.ndarray:
        return -self.nearest(targets)[1]
