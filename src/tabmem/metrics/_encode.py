"""Numeric matrices of validated tables, always with statistics of the real (training) table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.data.encoding import TableEncoder


def features(
    encoder: TableEncoder, table: pd.DataFrame, numeric: str = "standardized", one_hot_scale: float = 1.0
) -> np.ndarray:
    """``[numerical part, one-hot categoricals]`` as float64.

    ``numeric``: ``"standardized"`` ((x - mean) / std), ``"range"`` ((x - min) / range), or
    ``"raw"``; training statistics throughout (a column with no spread is only centred).
    """
    if numeric == "standardized":
        num = encoder.standardized(table)
    elif numeric == "range":
        num = encoder.range_scaled(table)
    elif numeric == "raw":
        num = encoder.numeric(table)
    else:  # pragma: no cover - internal
        raise ValueError(numeric)
    parts = [num]
    if encoder.schema.categorical:
        parts.append(encoder.one_hot(table, scale=one_hot_scale))
    return np.ascontiguousarray(np.hstack(parts), dtype=np.float64)


def block_rows(n_ref: int, budget_bytes: int = 64 * 2**20, itemsize: int = 8) -> int:
    """Rows per query block so that one (block x n_ref) matrix stays within ``budget_bytes``."""
    return int(max(1, min(65536, budget_bytes // max(1, n_ref * itemsize))))
