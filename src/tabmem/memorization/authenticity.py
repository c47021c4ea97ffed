"""Closeness to the training rows, each next to the same figure for real holdout rows.

* **Authenticity** (Alaa, van Breugel, Saveliev, van der Schaar, ICML 2022, "How faithful is
  your synthetic data?"): a synthetic row ``s`` with nearest training row ``x*`` is *unauthentic*
  when it lies closer to ``x*`` than ``x*`` lies to its own nearest other training row:
  ``d(s, x*) < min_{x != x*} d(x*, x)``. ``closer_share`` is the share of such rows and
  ``authenticity = 1 - closer_share``. Real rows that were never trained on give the share that
  chance alone produces (``holdout_closer_share``).
* **Identical matches** (as mostlyai-qa reports them): the share of rows equal to some training
  row in every column (after validation: numbers as float64, categories as canonical strings).
* **NNDR**: ``d1 / d2``, the distance to the nearest training row over the distance to the
  second nearest (the replica detector's ratio), summarised by quantiles; ``d1 = 0`` gives 0
  (a copy, whatever ``d2``). ``curve`` holds the quantiles at 0, 0.05, ..., 1 as well: the
  distribution that ``tabmem report`` draws next to the holdout's.

Distances are the audit's distance on the exact search (:class:`~tabmem.neighbors.NeighborIndex`);
the nearest-other-row distances of the training table are one more query of the training index
with the table itself (``k = 2``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from tabmem.data.schema import ValidatedTable
from tabmem.neighbors import NeighborIndex, device
from tabmem.neighbors.shards import active_sharding
from tabmem.neighbors.symmetric import nearest_other

__all__ = ["authenticity", "nearest_other_distance", "nndr_summary"]

NNDR_QUANTILES: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5)
NNDR_CURVE: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))


def nearest_other_distance(
    index: NeighborIndex,
    reference: pd.DataFrame | ValidatedTable,
    *,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """For every row of the table a fitted ``index`` was built on (``reference``, the same rows in the
    same order), the distance to its nearest *other* row (0 when it has an exact duplicate).
    ``progress(n_rows)`` follows the search. :func:`tabmem.memorization.selfsearch.nearest_other_distances`
    computes it once per training table."""
    if len(reference) == index.n_reference_ and active_sharding() is None and device.current() is None:
        found = nearest_other(
            index.distance_, n_jobs=index.n_jobs, memory_budget=index.memory_budget, progress=progress
        )
        if found is not None:  # each pair searched once (tabmem.neighbors.symmetric): the same distances
            return found
    idx, dist = index.kneighbors(reference, k=2, progress=progress)
    own = idx[:, 0] == np.arange(len(reference))
    return np.where(own, dist[:, 1], dist[:, 0])


def authenticity(d1: np.ndarray, nn1: np.ndarray, loo: np.ndarray) -> dict[str, float]:
    """``closer_share`` (rows with ``d1 < loo[nn1]``) and ``authenticity = 1 - closer_share``."""
    d1, nn1 = np.asarray(d1, dtype=np.float64), np.asarray(nn1, dtype=np.int64)
    if d1.size == 0:
        return {"closer_share": float("nan"), "authenticity": float("nan")}
    share = float(np.mean(d1 < np.asarray(loo)[nn1]))
    return {"closer_share": share, "authenticity": 1.0 - share}


def nndr_summary(d1: np.ndarray, d2: np.ndarray, quantiles: Sequence[float] = NNDR_QUANTILES) -> dict[str, Any]:
    """Quantiles, mean and the quantile ``curve`` (at :data:`NNDR_CURVE`) of ``d1 / d2`` (0 where ``d1 = 0``)."""
    d1, d2 = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
    if d1.size == 0:
        return {"quantiles": {}, "mean": float("nan"), "curve": {}}
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(d1 == 0, 0.0, d1 / d2)
    qs, curve = np.quantile(r, quantiles), np.quantile(r, NNDR_CURVE)
    return {
        "quantiles": {repr(float(q)): float(v) for q, v in zip(quantiles, qs)},
        "mean": float(r.mean()),
        "curve": {repr(float(q)): float(v) for q, v in zip(NNDR_CURVE, curve)},
    }
