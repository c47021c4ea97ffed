"""Two audit figures that need no distance: exact copies and rare-value leakage.

* **Exact copies** (:class:`ExactCopies`): a synthetic row identical to some training row in
  every column (validated values: numericals as float64, ``-0.0 == 0.0``, a missing value equal
  to a missing value; categories as canonical strings). The papers' ratio rule cannot see a copy
  of a training row that is itself duplicated in the training table (``d1 = d2 = 0``, an
  undefined ratio that the rule counts as *not* memorized) nor any copy when the training table
  has one row (``d2 = inf``); this figure counts them all.
* **Rare-value leakage** (:class:`RareValues`): the training values that occur in fewer than
  ``k`` training rows (``k = 2``: values that occur once), per column, categorical or numerical
  (exact float equality; missing values are not values). A synthetic row *leaks* when it holds
  at least one of them. One-off values (an outlier income, a unique job title) identify people
  even when the row as a whole is not a replica; a generator repeating them has memorized them.
  As every figure, it is measured against real rows never trained on (the holdout): a holdout
  row holds a rare training value by chance alone, which is the baseline.

Both are fitted once on the validated training table and then score any number of tables;
hashing makes them linear in the table sizes, and every hash match is verified on the values, so
the figures are exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tabmem._checks import check_int
from tabmem.data.schema import NA_CATEGORY, Schema

__all__ = ["ExactCopies", "RareValues", "RareValueCounts"]


def _normalised(clean: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Clean values with one bit pattern per value (``-0.0 -> 0.0``, one NaN), in schema order."""
    num, cat = _blocks(clean, schema)
    frame = pd.concat(
        [
            pd.DataFrame(num, columns=list(schema.numerical), index=clean.index),
            pd.DataFrame(cat, columns=list(schema.categorical), index=clean.index, dtype=object),
        ],
        axis=1,
    )
    return frame if list(frame.columns) == list(schema.columns) else frame[list(schema.columns)]


def _blocks(clean: pd.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """The numerical (float64, normalised bit patterns) and categorical (object) values as two
    2-D blocks in schema order: one pass per kind, not one pandas pass per column."""
    n = len(clean)
    if schema.numerical:
        num = clean[list(schema.numerical)].to_numpy(dtype=np.float64) + 0.0
        num = np.where(np.isnan(num), np.nan, num)
    else:
        num = np.zeros((n, 0), dtype=np.float64)
    if schema.categorical:
        cat = clean[list(schema.categorical)].to_numpy(dtype=object)
    else:
        cat = np.empty((n, 0), dtype=object)
    return num, cat


def _hash_rows(frame: pd.DataFrame) -> np.ndarray:
    """One uint64 per row of a :func:`_normalised` frame, equal for rows with equal values.

    Each cell is hashed in one vectorised pass per kind and the row hash is a position-weighted
    sum (wrapping uint64 arithmetic): linear in the cells, with no per-column pandas pass. Equal
    hashes are always verified on the values, so a collision costs time, never a wrong count.
    """
    n, p = frame.shape
    if p == 0:
        return np.zeros(n, dtype=np.uint64)
    weights = pd.util.hash_array(np.arange(p, dtype=np.int64)) | np.uint64(1)  # odd: no column vanishes
    total = np.zeros(n, dtype=np.uint64)
    kinds = frame.dtypes.map(lambda d: d.kind == "f").to_numpy(dtype=bool)
    for numeric in (True, False):
        pos = np.flatnonzero(kinds == numeric)
        if pos.size == 0:
            continue
        block = frame.iloc[:, pos].to_numpy(dtype=np.float64 if numeric else object)
        cells = pd.util.hash_array(block.ravel(), categorize=False).reshape(n, pos.size)
        total += (cells * weights[pos]).sum(axis=1, dtype=np.uint64)
    return total


class ExactCopies:
    """Which rows of a table are identical, in every column, to some training row."""

    def fit(self, train_clean: pd.DataFrame, schema: Schema) -> ExactCopies:
        self.schema_ = schema
        self.train_ = _normalised(train_clean, schema).reset_index(drop=True)
        hashes = _hash_rows(self.train_)
        self.order_ = np.argsort(hashes, kind="stable")
        self.sorted_ = hashes[self.order_]
        return self

    def match(self, clean: pd.DataFrame) -> np.ndarray:
        """One bool per row of ``clean``: identical to some training row."""
        query = _normalised(clean, self.schema_).reset_index(drop=True)
        out = np.zeros(len(query), dtype=bool)
        if len(query) == 0 or len(self.sorted_) == 0:
            return out
        h = _hash_rows(query)
        lo = np.searchsorted(self.sorted_, h, side="left")
        hi = np.searchsorted(self.sorted_, h, side="right")
        candidates = np.flatnonzero(hi > lo)
        if candidates.size == 0:
            return out
        # verify the first training row with the same hash on the values (exact, not probabilistic)
        first = self.order_[lo[candidates]]
        same = self._equal(query.iloc[candidates], self.train_.iloc[first])
        out[candidates[same]] = True
        for i in candidates[~same]:  # a hash collision: try every training row with that hash
            for j in self.order_[lo[i] : hi[i]]:
                if self._equal(query.iloc[[i]], self.train_.iloc[[j]])[0]:
                    out[i] = True
                    break
        return out

    def _equal(self, a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
        an, ac = _blocks(a, self.schema_)
        bn, bc = _blocks(b, self.schema_)
        eq = ((an == bn) | (np.isnan(an) & np.isnan(bn))).all(axis=1)
        if ac.shape[1]:
            eq &= (ac == bc).all(axis=1)
        return eq


@dataclass(frozen=True)
class RareValueCounts:
    """Rare-value leakage of one scored table: per row and per column (counts and positions only)."""

    rows: np.ndarray  # bool per scored row: holds at least one rare training value
    per_column: pd.DataFrame  # column, kind, n_rare, n_leaked, rows
    k: int
    n_rare_values: int

    @property
    def rate(self) -> float:
        return float(self.rows.mean()) if self.rows.size else float("nan")

    @property
    def n_leaked(self) -> int:
        """Distinct rare training values found in the scored table."""
        return int(self.per_column["n_leaked"].sum())


class RareValues:
    """The training values that occur in fewer than ``k`` training rows, per column (module docstring)."""

    def __init__(self, k: int = 2) -> None:
        self.k = k

    def fit(self, train_clean: pd.DataFrame, schema: Schema) -> RareValues:
        self.k_ = check_int("rare_k", self.k, low=2)
        self.schema_ = schema
        num, cat = _blocks(train_clean, schema)
        self.rare_: dict[str, np.ndarray] = {}
        for j, c in enumerate(schema.numerical):
            col = num[:, j]
            values, counts = np.unique(col[~np.isnan(col)], return_counts=True)
            self.rare_[c] = values[counts < self.k_]
        for j, c in enumerate(schema.categorical):
            col = cat[:, j]
            values, counts = np.unique(col[col != NA_CATEGORY], return_counts=True)
            self.rare_[c] = values[counts < self.k_]
        return self

    @property
    def n_rare_values_(self) -> int:
        return int(sum(len(v) for v in self.rare_.values()))

    def score(self, clean: pd.DataFrame) -> RareValueCounts:
        """Which rows of ``clean`` hold a rare training value, and how many distinct ones per column."""
        num, cat = _blocks(clean, self.schema_)
        blocks = {c: (num, j) for j, c in enumerate(self.schema_.numerical)}
        blocks.update({c: (cat, j) for j, c in enumerate(self.schema_.categorical)})
        rows = np.zeros(len(clean), dtype=bool)
        records = []
        for c in self.schema_.columns:
            rare = self.rare_[c]
            block, j = blocks[c]
            n_leaked, n_rows = 0, 0
            if len(rare):
                values = block[:, j]
                hit = np.isin(values, rare)
                if hit.any():
                    rows |= hit
                    n_leaked, n_rows = int(pd.unique(values[hit]).size), int(hit.sum())
            records.append(
                {
                    "column": c,
                    "kind": "numerical" if block is num else "categorical",
                    "n_rare": len(rare),
                    "n_leaked": n_leaked,
                    "rows": n_rows,
                }
            )
        table = pd.DataFrame(records, columns=["column", "kind", "n_rare", "n_leaked", "rows"])
        return RareValueCounts(rows, table, self.k_, self.n_rare_values_)
