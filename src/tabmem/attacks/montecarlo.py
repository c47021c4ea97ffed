"""Monte Carlo membership attack (Hilprecht, Härterich & Bernau, PoPETs 2019).

``score(x) = |{s in S : d(x, s) < eps}| / |S|``: the fraction of synthetic rows within ``eps``
of the target. ``eps`` by

* ``"median"`` (the median heuristic, Eq. 4 of Hilprecht et al.; as in the LevAtt paper's and
  DOMIAS' code): ``eps^2`` = median over the scored targets of their squared distance to the
  closest synthetic row (so ``eps`` depends on the target set, as in the paper);
* ``"percentile"``: the ``percentile``-th percentile (in %, linear interpolation as
  ``np.percentile``) of all target x synthetic distances (Hilprecht's percentile heuristic);
* a number: a fixed radius.

Counting is exact: a BLAS block gives approximate keys with an error bound from the core
distance (:mod:`tabmem.neighbors.distances`); only pairs within that bound of ``eps`` are
recomputed exactly. Memory is bounded by the block size.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.attacks.base import Attack, Table, register_attack
from tabmem.attacks.dcr import fit_index, validate_targets
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.neighbors.blocked import block_rows_for
from tabmem.neighbors.distances import Distance, Queries


@register_attack("mc")
class MonteCarlo(Attack):
    """Fraction of synthetic rows within ``epsilon`` of the target (see module docstring)."""

    display_name = "Monte Carlo"
    short_name = "Monte Carlo"
    run_options = ("distance", "n_jobs")

    def __init__(
        self,
        distance: str = "l2",
        epsilon: str | float = "median",
        percentile: float = 1.0,
        nan: str = "error",
        n_jobs: int | None = 2,
    ) -> None:
        self.distance = distance
        self.epsilon = epsilon
        self.percentile = percentile
        self.nan = nan
        self.n_jobs = n_jobs

    def _fit(self, synthetic: pd.DataFrame, schema: Schema, reference: pd.DataFrame | None) -> None:
        if isinstance(self.epsilon, str):
            if self.epsilon not in ("median", "percentile"):
                raise TabmemError(
                    f"mc: epsilon must be 'median', 'percentile' or a positive number, got {self.epsilon!r}"
                )
        elif not (isinstance(self.epsilon, (int, float)) and np.isfinite(self.epsilon) and self.epsilon > 0):
            raise TabmemError(f"mc: epsilon must be 'median', 'percentile' or a positive number, got {self.epsilon!r}")
        if not 0 < float(self.percentile) <= 100:
            raise TabmemError(f"mc: percentile must be in (0, 100], got {self.percentile!r}")
        self.index_ = fit_index(self.distance, synthetic, schema, self.nan, self.n_jobs)
        self.encoder_, self.distance_ = self.index_.encoder_, self.index_.distance_

    def _queries(self, targets: Table) -> Queries:
        return self.index_.prepare(validate_targets(self.index_, targets, self.nan))

    def resolve_epsilon(self, targets: Table) -> float:
        """The radius used for ``targets`` (see module docstring)."""
        return self._epsilon(self._queries(targets))

    def _epsilon(self, q: Queries) -> float:
        if self.epsilon == "median":
            _, d = self.index_.kneighbors(q, k=1)
            return _root_median_square(d[:, 0])
        if self.epsilon == "percentile":
            return smallest_percentile(self.distance_, q, float(self.percentile))
        return float(self.epsilon)  # type: ignore[arg-type]

    def _score(self, targets: Table) -> np.ndarray:
        q = self._queries(targets)
        eps = self._epsilon(q)
        self.epsilon_ = eps
        return count_within(self.distance_, q, eps) / self.distance_.n_ref


def _root_median_square(d: np.ndarray) -> float:
    """``sqrt(median(d**2))`` (finite inside the value domain: distances are at most ~1e137)."""
    return float(np.sqrt(np.median(d**2)))


def count_within(distance: Distance, q: Queries, eps: float) -> np.ndarray:
    """Exact ``|{s : d(x, s) < eps}|`` for every query row, blocked."""
    n_q = len(q)
    out = np.zeros(n_q, dtype=np.int64)
    step = block_rows_for(distance.n_ref, 1)
    for start in range(0, n_q, step):
        rows = slice(start, min(start + step, n_q))
        blk = distance.block(q, rows)
        n_rows = blk.key.shape[0]
        local = np.arange(n_rows)
        eps_key = np.asarray(blk.distance_to_key(local, np.full(n_rows, eps)), dtype=np.float64)
        key = blk.key.astype(np.float64, copy=False)
        margin = np.broadcast_to(np.asarray(blk.margin, dtype=np.float64), (n_rows,))
        sure = key < (eps_key - margin)[:, None]
        out[rows] = sure.sum(axis=1)
        amb_r, amb_c = np.nonzero(np.abs(key - eps_key[:, None]) <= margin[:, None])
        if amb_r.size:
            exact = blk.exact(amb_r, amb_c)
            np.add.at(out, start + amb_r, (exact < eps).astype(np.int64))
    return out


def smallest_percentile(distance: Distance, q: Queries, percentile: float) -> float:
    """Exact ``np.percentile`` (linear) of all query x reference distances, keeping only the smallest ones."""
    n_q, n_ref = len(q), distance.n_ref
    total = n_q * n_ref
    h = (total - 1) * percentile / 100.0
    need = int(np.floor(h)) + 2  # order statistics floor(h) and floor(h) + 1
    if need > 20_000_000:
        raise TabmemError(
            f"mc: the {percentile}% percentile of {total} distances needs too many order statistics; use a lower percentile"
        )
    pool = np.zeros(0, dtype=np.float64)
    step = block_rows_for(n_ref, 1)
    for start in range(0, n_q, step):
        rows = slice(start, min(start + step, n_q))
        blk = distance.block(q, rows)
        key = blk.key.astype(np.float64, copy=False)
        n_rows, n_cols = key.shape
        margin = np.broadcast_to(np.asarray(blk.margin, dtype=np.float64), (n_rows,))[:, None]
        rows_flat = np.repeat(np.arange(n_rows), n_cols)
        upper = np.asarray(blk.key_to_distance(rows_flat, (key + margin).ravel()), dtype=np.float64)
        k = min(need, upper.size)
        t = np.partition(upper, k - 1)[k - 1]
        del upper
        # a distance is never negative; clamp the distance, not the key (fang2024/gower keys go below 0)
        lower = np.maximum(np.asarray(blk.key_to_distance(rows_flat, (key - margin).ravel()), dtype=np.float64), 0.0)
        # k pairs have exact <= upper <= t; a pair left out has exact >= lower > t
        keep = np.flatnonzero(lower <= t)
        del lower
        d = np.asarray(blk.exact(keep // n_cols, keep % n_cols), dtype=np.float64)
        pool = np.concatenate([pool, d])
        if pool.size > need:
            pool = np.partition(pool, need - 1)[:need]
        del key
    pool = np.sort(pool)
    lo = int(np.floor(h))
    frac = h - lo
    if lo + 1 < pool.size:
        return float(pool[lo] + (pool[lo + 1] - pool[lo]) * frac)
    return float(pool[min(lo, pool.size - 1)])
