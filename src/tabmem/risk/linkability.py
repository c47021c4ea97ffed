"""Linkability (WP29): joining two halves of a real record through the synthetic table.

The attacker holds two tables that share individuals but no columns (``aux``'s two column
sets) and links a target's two halves when their ``n_neighbors`` nearest synthetic rows
(Gower distance on each half's columns) have a row in common. The naive baseline picks
``n_neighbors`` random synthetic rows for each half; the control attack links halves of real
rows never trained on (anonymeter's definitions, Giomi et al., PoPETs 2023). The searches are
exact (:class:`tabmem.neighbors.NeighborIndex`, ties to the lowest synthetic row).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.neighbors import NeighborIndex

__all__ = ["SyntheticIndex", "count_links", "fit_index", "nearest", "query", "random_links", "sub_schema"]


def sub_schema(schema: Schema, columns: Sequence[str]) -> Schema:
    """``schema`` restricted to ``columns`` (in the schema's order, no target)."""
    keep = [c for c in schema.columns if c in set(columns)]
    return Schema(
        tuple(keep), tuple(c for c in schema.numerical if c in keep), tuple(c for c in schema.categorical if c in keep)
    )


class SyntheticIndex:
    """An exact Gower index of the synthetic rows on some columns, fitted once, queried for train and control.

    For ``k == 1`` rows repeated on these columns are indexed once (their first occurrence): a
    repeat is at the same distance as its first occurrence and loses the tie to it, so the
    answer is the same row, found among fewer (and far fewer tied) rows.
    """

    def __init__(self, synthetic: pd.DataFrame, schema: Schema, columns: Sequence[str], k: int, n_jobs: int | None):
        sub = sub_schema(schema, columns)
        self.columns = list(sub.columns)
        self.k = min(k, len(synthetic))
        table = synthetic[self.columns]
        if self.k == 1:
            first = ~table.duplicated().to_numpy()
            self.positions: np.ndarray | None = np.flatnonzero(first)
            table = table.iloc[self.positions]
        else:
            self.positions = None
        self.index = NeighborIndex("gower", n_jobs=n_jobs).fit(table, sub)

    def query(self, targets: pd.DataFrame) -> np.ndarray:
        """The ``k`` nearest synthetic rows of every target (``(n_targets, k)`` positions in the synthetic table)."""
        idx, _ = self.index.kneighbors(targets[self.columns], k=self.k)
        return idx if self.positions is None else self.positions[idx]


def fit_index(
    synthetic: pd.DataFrame, schema: Schema, columns: Sequence[str], n_jobs: int | None, k: int = 1
) -> SyntheticIndex:
    """:class:`SyntheticIndex` of ``synthetic`` on ``columns`` for ``k`` neighbours."""
    return SyntheticIndex(synthetic, schema, columns, k, n_jobs)


def query(index: SyntheticIndex, targets: pd.DataFrame) -> np.ndarray:
    """The indexed synthetic rows nearest to every target (``(n_targets, k)``)."""
    return index.query(targets)


def nearest(
    synthetic: pd.DataFrame, targets: pd.DataFrame, schema: Schema, columns: Sequence[str], k: int, n_jobs: int | None
) -> np.ndarray:
    """The ``k`` nearest synthetic rows of every target on ``columns`` (Gower; ``(n_targets, k)`` positions)."""
    return query(fit_index(synthetic, schema, columns, n_jobs, k), targets)


def count_links(idx_0: np.ndarray, idx_1: np.ndarray) -> int:
    """Targets whose two neighbour lists share a synthetic row."""
    if len(idx_0) == 0:
        return 0
    return int((idx_0[:, :, None] == idx_1[:, None, :]).any(axis=(1, 2)).sum())


def random_links(n_synthetic: int, n_attacks: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct random synthetic rows per attack (the baseline's neighbours)."""
    k = min(k, n_synthetic)
    if k == 1:
        return rng.integers(0, n_synthetic, size=(n_attacks, 1))
    return np.array([rng.choice(n_synthetic, size=k, replace=False) for _ in range(n_attacks)], dtype=np.int64).reshape(
        n_attacks, k
    )
