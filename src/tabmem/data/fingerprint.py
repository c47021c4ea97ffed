"""The identity of a training table: a SHA-256 of its validated values (column names and cells).

Generators record it with every checkpoint and model (a resume on another table is refused), the
memorization tracker writes it next to its records, and rankings of training records carry it, so
that a ranking computed on one table cannot silently be applied to another. Two tables have the
same fingerprint exactly when their clean forms (:class:`~tabmem.data.schema.ValidatedTable`
``data``: numerical float64, categorical canonical strings, schema column order) are equal.
"""

from __future__ import annotations

import hashlib

import pandas as pd

from tabmem.data.schema import ValidatedTable

__all__ = ["table_fingerprint"]


def table_fingerprint(table: pd.DataFrame | ValidatedTable) -> str:
    """Hex SHA-256 of a validated table's clean values (a DataFrame is taken to be clean already)."""
    clean = table.data if isinstance(table, ValidatedTable) else table
    h = hashlib.sha256()
    h.update(",".join(map(str, clean.columns)).encode())
    h.update(pd.util.hash_pandas_object(clean, index=False).to_numpy().tobytes())
    return h.hexdigest()
