"""The data-copying three-sample test (Meehan, Chaudhuri, Dasgupta, AISTATS 2020).

Do synthetic rows ``Q`` (m rows) lie closer to the training table ``T`` than fresh real rows ``P``
(a holdout, n rows) do? The instance space is cut into cells by k-means on the training table;
in cell ``π`` the distances of its synthetic and holdout rows to their nearest training row of
the same cell, ``L(Q_π)`` and ``L(P_π)``, are compared by the Mann–Whitney statistic

    U_π = sum_{q, p} ( 1[L(q) > L(p)] + 1/2 · 1[L(q) = L(p)] )
    Z_π = (U_π - m_π n_π / 2) / sqrt(m_π n_π (m_π + n_π + 1) / 12)

``Z_π << 0``: the generator copies training rows in that cell; ``Z_π >> 0``: it underfits there.
The paper's statistic is the holdout-weighted mean over the cells ``Π_τ`` that hold more than a
fraction ``τ`` of the synthetic rows:

    C_T = sum_{π in Π_τ} P_n(π) Z_π / sum_{π in Π_τ} P_n(π)

(``P_n(π)`` = share of holdout rows in ``π``). Under the null (``Q`` and ``P`` from the same
distribution) the ``Z_π`` are independent and approximately standard normal, so
``z = sum w_π Z_π / sqrt(sum w_π^2)`` (``w = P_n``) is standard normal and ``p_value = Φ(z)`` is
the one-sided p-value of data copying. A cell is flagged when its own one-sided p-value
``Φ(Z_π)`` is below ``alpha / |Π_τ|`` (Bonferroni over the cells used).

As in the paper, no tie correction is applied to the variance (with many ties, e.g. exact copies
at distance 0, this makes ``|Z|`` smaller, i.e. conservative). The reference code subtracts a
continuity correction of 0.5 from the null mean; ``continuity_correction=True`` reproduces it.

Memory is linear in the rows with a small constant: k-means is fitted on at most
:data:`FIT_ROWS` training rows (all of them up to that size; above it a sample drawn with the
seed), every row is then assigned to its nearest centre in chunks of :data:`CHUNK_ROWS` rows, and
one cell's index is held at a time. Any partition fitted on the training table alone keeps the
test valid (its null distribution does not depend on how the cells were found); a sample of 50,000
rows places 10 centres about as well as the whole table, at a fraction of the time and memory.

Distances: any registered distance (``distance=``; the audit's), evaluated exactly
(:class:`~tabmem.neighbors.NeighborIndex`) against the training rows of the cell
(``neighbors="cell"``, the paper) or of the whole table (``neighbors="global"``). Cells come
from scikit-learn's ``KMeans`` (seeded) on the standardised numericals and one-hot categoricals
(scaled by 1/sqrt(2)) of the training table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm, rankdata

from tabmem._checks import check_choice, check_fraction, check_positive_int, check_random_state
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, ValidatedTable, validate
from tabmem.errors import NotFittedError, ParameterError
from tabmem.neighbors import NeighborIndex
from tabmem.neighbors.distances import get_distance

__all__ = ["CopyingResult", "DataCopyingTest", "mann_whitney_z"]

FIT_ROWS = 50_000  # k-means is fitted on at most this many training rows (a seeded sample; module docstring)
CHUNK_ROWS = 1 << 16  # rows embedded at a time to assign cells

Table = pd.DataFrame | ValidatedTable


def mann_whitney_z(q: np.ndarray, p: np.ndarray, *, continuity_correction: bool = False) -> tuple[float, float]:
    """``(U, Z)`` of the module docstring for distances ``q`` (synthetic) and ``p`` (holdout)."""
    q = np.asarray(q, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    m, n = q.size, p.size
    ranks = rankdata(np.concatenate([q, p]))
    u = float(ranks[:m].sum() - m * (m + 1) / 2.0)
    mean = m * n / 2.0 - (0.5 if continuity_correction else 0.0)
    return u, float((u - mean) / np.sqrt(m * n * (m + n + 1) / 12.0))


@dataclass(frozen=True)
class CopyingResult:
    """Per-cell statistics (``cells``) and the aggregate test."""

    cells: pd.DataFrame  # cell, n_train, n_holdout, n_synthetic, holdout_share, synthetic_share, z, used, flagged
    c_t: float
    z: float
    p_value: float
    tau: float
    alpha: float

    def summary(self) -> dict[str, Any]:
        used = self.cells[self.cells["used"]]
        return {
            "c_t": self.c_t,
            "z": self.z,
            "p_value": self.p_value,
            "n_cells": int(len(self.cells)),
            "n_cells_used": int(len(used)),
            "cells_flagged": self.cells.loc[self.cells["flagged"], "cell"].astype(int).tolist(),
            "tau": self.tau,
            "alpha": self.alpha,
            "per_cell": [
                {
                    "cell": int(r.cell),
                    "n_train": int(r.n_train),
                    "n_holdout": int(r.n_holdout),
                    "n_synthetic": int(r.n_synthetic),
                    "z": None if not np.isfinite(r.z) else float(r.z),
                    "used": bool(r.used),
                    "flagged": bool(r.flagged),
                }
                for r in self.cells.itertuples()
            ],
        }


class DataCopyingTest:
    """Fit cells on the training table once, then test synthetic tables against a holdout (module docstring).

    Parameters
    ----------
    n_cells:
        k of k-means.
    distance:
        Registered distance of the nearest-training-row search.
    neighbors:
        ``"cell"`` (training rows of the same cell, the paper) or ``"global"``.
    tau:
        Cells holding a share of synthetic rows ``<= tau`` are left out (``None``: ``20 / m``, i.e.
        cells with more than 20 synthetic rows).
    alpha:
        Level of the per-cell flags (Bonferroni over the cells used).
    """

    def __init__(
        self,
        n_cells: int = 10,
        *,
        distance: str = "l2",
        neighbors: str = "cell",
        tau: float | None = None,
        alpha: float = 0.05,
        continuity_correction: bool = False,
        random_state: int | None = 0,
        n_jobs: int | None = 1,
    ) -> None:
        self.n_cells = n_cells
        self.distance = distance
        self.neighbors = neighbors
        self.tau = tau
        self.alpha = alpha
        self.continuity_correction = continuity_correction
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, train: Table, schema: Schema | None = None) -> "DataCopyingTest":
        from sklearn.cluster import KMeans

        k = check_positive_int("n_cells", self.n_cells) or 1
        check_choice("neighbors", self.neighbors, ("cell", "global"))
        if self.tau is not None:
            check_fraction("tau", self.tau, allow_zero=True)
        check_fraction("alpha", self.alpha)
        seed = check_random_state(self.random_state)
        if schema is None:
            schema = train.schema if isinstance(train, ValidatedTable) else Schema.infer(train)
        checked = validate(train, schema, name="training", nan="error")
        if k > len(checked):
            raise ParameterError(f"n_cells={k} exceeds the {len(checked)} training rows")
        self.encoder_ = TableEncoder(schema).fit(checked, nan="error")
        self.schema_ = schema
        self.train_ = checked.data.reset_index(drop=True)
        n = len(self.train_)
        fit_rows = None if n <= FIT_ROWS else np.sort(np.random.default_rng(seed).choice(n, FIT_ROWS, replace=False))
        sample = self.train_ if fit_rows is None else self.train_.iloc[fit_rows]
        self.kmeans_ = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(self._embed(sample))
        self.train_cells_ = self.kmeans_.labels_.astype(np.int64) if fit_rows is None else self._cells(self.train_)
        get_distance(self.distance)  # unknown names fail here, listing the known ones
        return self

    def _embed(self, clean: pd.DataFrame) -> np.ndarray:
        enc = self.encoder_
        return np.concatenate([enc.standardized(clean), enc.one_hot(clean, scale=1.0 / np.sqrt(2.0))], axis=1)

    def _cells(self, clean: pd.DataFrame) -> np.ndarray:
        """The k-means cell of every row, embedded :data:`CHUNK_ROWS` rows at a time (bounded memory;
        a multiple of scikit-learn's 256-row chunks: the same labels as one call)."""
        out = np.empty(len(clean), dtype=np.int64)
        for s in range(0, len(clean), CHUNK_ROWS):
            out[s : s + CHUNK_ROWS] = self.kmeans_.predict(self._embed(clean.iloc[s : s + CHUNK_ROWS]))
        return out

    def _index(self, cell: int) -> NeighborIndex:
        """The exact index of the training rows of ``cell`` (-1: the whole table), with the whole
        table's encoder statistics."""
        rows = self.train_ if cell < 0 else self.train_.iloc[np.flatnonzero(self.train_cells_ == cell)]
        return NeighborIndex(self.distance, n_jobs=self.n_jobs, nan="error").fit(
            None, encoder=self.encoder_, clean=rows
        )

    def _distances(self, tables: list[tuple[pd.DataFrame, np.ndarray]]) -> list[np.ndarray]:
        """Each table's rows' distances to their nearest training row of their cell (or of the table);
        one cell's index at a time, for every table (bounded memory)."""
        outs = [np.empty(len(clean)) for clean, _ in tables]
        cells = [-1] if self.neighbors == "global" else np.unique(np.concatenate([c for _, c in tables])).tolist()
        for c in cells:
            picks = [np.arange(len(clean)) if c < 0 else np.flatnonzero(of == c) for clean, of in tables]
            if not any(p.size for p in picks):
                continue
            index = self._index(int(c))
            for (clean, _), rows, out in zip(tables, picks, outs):
                if rows.size:
                    _, d = index.kneighbors(index.distance_.prepare(clean.iloc[rows]), k=1)
                    out[rows] = d[:, 0]
            del index
        return outs

    def test(self, synthetic: Table, holdout: Table) -> CopyingResult:
        """Per-cell Z and the aggregate test of ``synthetic`` against ``holdout`` (module docstring)."""
        if not hasattr(self, "kmeans_"):
            raise NotFittedError("DataCopyingTest is not fitted: call fit(train, schema) first")
        q = self.encoder_.validate(synthetic, name="synthetic", nan="error", unseen="mismatch", extra="ignore")
        p = self.encoder_.validate(holdout, name="holdout", nan="error", unseen="mismatch", extra="ignore")
        if len(q) == 0 or len(p) == 0:
            raise ParameterError("the data-copying test needs synthetic and holdout rows (one of them is empty)")
        q, p = q.reset_index(drop=True), p.reset_index(drop=True)
        q_cells, p_cells = self._cells(q), self._cells(p)
        lq, lp = self._distances([(q, q_cells), (p, p_cells)])
        m, n, k = len(q), len(p), int(self.n_cells)
        tau = float(self.tau) if self.tau is not None else min(20.0 / m, 1.0)
        rows = []
        for c in range(k):
            in_q, in_p = lq[q_cells == c], lp[p_cells == c]
            z = (
                mann_whitney_z(in_q, in_p, continuity_correction=self.continuity_correction)[1]
                if in_q.size and in_p.size
                else np.nan
            )
            rows.append(
                {
                    "cell": c,
                    "n_train": int((self.train_cells_ == c).sum()),
                    "n_holdout": int(in_p.size),
                    "n_synthetic": int(in_q.size),
                    "holdout_share": in_p.size / n,
                    "synthetic_share": in_q.size / m,
                    "z": z,
                }
            )
        cells = pd.DataFrame(rows)
        used = (cells["synthetic_share"] > tau) & (cells["n_holdout"] > 0)
        cells["used"] = used
        w, zc = cells.loc[used, "holdout_share"].to_numpy(), cells.loc[used, "z"].to_numpy()
        if used.any():
            c_t = float(w @ zc / w.sum())
            z_all = float(w @ zc / np.sqrt((w**2).sum()))
            p_value = float(norm.cdf(z_all))
            cut = norm.ppf(self.alpha / int(used.sum()))
        else:
            c_t = z_all = p_value = float("nan")
            cut = -np.inf
        cells["flagged"] = used & (cells["z"] < cut)
        return CopyingResult(cells, c_t, z_all, p_value, tau, float(self.alpha))
