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

#: rows hashed at a time (their cells' hashes are temporaries)
HASH_ROWS = 1 << 16


def _numbers(clean: pd.DataFrame, schema: Schema) -> np.ndarray:
    """The numerical values as one float64 block in schema order, one bit pattern per value
    (``-0.0 -> 0.0``, one NaN)."""
    if not schema.numerical:
        return np.zeros((len(clean), 0), dtype=np.float64)
    num = clean[list(schema.numerical)].to_numpy(dtype=np.float64) + 0.0
    return np.where(np.isnan(num), np.nan, num)


def _codes(clean: pd.DataFrame, schema: Schema, uniques: list[pd.Index]) -> np.ndarray:
    """The categorical values as int32 positions in the training table's ``uniques`` (-1: a value it lacks).

    Codes instead of the values: one Python string per cell (about 60 bytes) would be held for
    the whole audit; equal codes are equal values."""
    out = np.empty((len(clean), len(uniques)), dtype=np.int32)
    for j, (c, u) in enumerate(zip(schema.categorical, uniques, strict=True)):
        out[:, j] = u.get_indexer(pd.Index(clean[c]))
    return out


def _hash_rows(num: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """One uint64 per row of the :func:`_numbers` and :func:`_codes` blocks, equal for rows with equal values.

    Each cell is hashed in one vectorised pass per block and the row hash is a position-weighted
    sum (wrapping uint64 arithmetic): linear in the cells, with no per-column pandas pass. Equal
    hashes are always verified on the values, so a collision costs time, never a wrong count.
    Rows are hashed :data:`HASH_ROWS` at a time: the cells' hashes are temporaries of 8 bytes a cell.
    """
    n = len(num)
    total = np.zeros(n, dtype=np.uint64)
    p = num.shape[1] + codes.shape[1]
    if p == 0:
        return total
    weights = pd.util.hash_array(np.arange(p, dtype=np.int64)) | np.uint64(1)  # odd: no column vanishes
    for start in range(0, n, HASH_ROWS):
        rows = slice(start, start + HASH_ROWS)
        for block, w in ((num[rows], weights[: num.shape[1]]), (codes[rows].astype(np.int64), weights[num.shape[1] :])):
            if block.shape[1]:
                cells = pd.util.hash_array(block.ravel(), categorize=False).reshape(len(block), block.shape[1])
                total[rows] += (cells * w).sum(axis=1, dtype=np.uint64)
    return total


class ExactCopies:
    """Which rows of a table are identical, in every column, to some training row."""

    def fit(self, train_clean: pd.DataFrame, schema: Schema) -> ExactCopies:
        self.schema_ = schema
        self.uniques_ = [pd.Index(pd.unique(train_clean[c])) for c in schema.categorical]
        self.num_ = _numbers(train_clean, schema)
        self.codes_ = _codes(train_clean, schema, self.uniques_)
        hashes = _hash_rows(self.num_, self.codes_)
        self.order_ = np.argsort(hashes, kind="stable")
        self.sorted_ = hashes[self.order_]
        return self

    def match(self, clean: pd.DataFrame) -> np.ndarray:
        """One bool per row of ``clean``: identical to some training row."""
        num, codes = _numbers(clean, self.schema_), _codes(clean, self.schema_, self.uniques_)
        out = np.zeros(len(clean), dtype=bool)
        if len(clean) == 0 or len(self.sorted_) == 0:
            return out
        h = _hash_rows(num, codes)
        lo = np.searchsorted(self.sorted_, h, side="left")
        hi = np.searchsorted(self.sorted_, h, side="right")
        candidates = np.flatnonzero(hi > lo)
        if candidates.size == 0:
            return out
        # verify the first training row with the same hash on the values (exact, not probabilistic)
        first = self.order_[lo[candidates]]
        same = self._equal(num[candidates], codes[candidates], first)
        out[candidates[same]] = True
        for i in candidates[~same]:  # a hash collision: try every training row with that hash
            for j in self.order_[lo[i] : hi[i]]:
                if self._equal(num[[i]], codes[[i]], np.array([j]))[0]:
                    out[i] = True
                    break
        return out

    def _equal(self, num: np.ndarray, codes: np.ndarray, train_rows: np.ndarray) -> np.ndarray:
        """Rows (their blocks) equal to these training rows, value for value (a missing value equals a missing value)."""
        tn, tc = self.num_[train_rows], self.codes_[train_rows]
        eq = ((num == tn) | (np.isnan(num) & np.isnan(tn))).all(axis=1)
        if codes.shape[1]:
            eq &= ((codes == tc) & (codes >= 0)).all(axis=1)
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
        num = _numbers(train_clean, schema)
        self.rare_: dict[str, np.ndarray] = {}
        for j, c in enumerate(schema.numerical):
            col = num[:, j]
            values, counts = np.unique(col[~np.isnan(col)], return_counts=True)
            self.rare_[c] = values[counts < self.k_]
        for c in schema.categorical:  # counted by pandas on the column as it is held (no string per cell)
            counts = train_clean[c].value_counts(sort=False)
            counts = counts[(counts < self.k_) & (counts.index != NA_CATEGORY)]
            self.rare_[c] = np.sort(counts.index.to_numpy(dtype=object))
        return self

    @property
    def n_rare_values_(self) -> int:
        return int(sum(len(v) for v in self.rare_.values()))

    def score(self, clean: pd.DataFrame) -> RareValueCounts:
        """Which rows of ``clean`` hold a rare training value, and how many distinct ones per column."""
        num = _numbers(clean, self.schema_)
        numerical = {c: j for j, c in enumerate(self.schema_.numerical)}
        rows = np.zeros(len(clean), dtype=bool)
        records = []
        for c in self.schema_.columns:
            rare = self.rare_[c]
            n_leaked, n_rows = 0, 0
            if len(rare):
                values = num[:, numerical[c]] if c in numerical else clean[c]
                hit = np.isin(values, rare) if c in numerical else values.isin(rare).to_numpy(dtype=bool)
                if hit.any():
                    rows |= hit
                    n_leaked, n_rows = int(pd.unique(values[hit]).size), int(hit.sum())
            records.append(
                {
                    "column": c,
                    "kind": "numerical" if c in numerical else "categorical",
                    "n_rare": len(rare),
                    "n_leaked": n_leaked,
                    "rows": n_rows,
                }
            )
        table = pd.DataFrame(records, columns=["column", "kind", "n_rare", "n_leaked", "rows"])
        return RareValueCounts(rows, table, self.k_, self.n_rare_values_)
