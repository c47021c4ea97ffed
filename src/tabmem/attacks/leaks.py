"""Constructed leaks with a known answer, for validating attacks (evidence runs, tests, benchmarks).

:func:`one_digit_leak` is the LevAtt paper's motivating case (Ward et al. 2025): synthetic rows
that are training rows with a single digit of a single numerical cell changed. Feature-space
distances see a perturbed row (a leading digit changes the value a lot) while the row string
stays at edit distance 1 from its training record.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema, validate_table
from tabmem.data.serialization.canonical import decimals_needed, format_fixed
from tabmem.errors import TabmemError


def one_digit_leak(
    members: pd.DataFrame, schema: Schema, *, random_state: int | np.random.Generator | None = 0, max_decimals: int = 6
) -> pd.DataFrame:
    """Copy of ``members`` where, in every row, one digit of one numerical cell is replaced by another digit.

    The cell is written in fixed-point with the column's precision (as the ``canonical``
    serializer does), a uniformly chosen digit position gets a uniformly chosen *different*
    digit, and the string is parsed back. Deterministic for a given ``random_state``.
    """
    if not schema.numerical:
        raise TabmemError("one_digit_leak needs at least one numerical column")
    rng = np.random.default_rng(random_state)
    clean = validate_table(members, schema, name="members", nan="error", extra="ignore")
    out = clean.copy()
    cols = list(schema.numerical)
    which = rng.integers(len(cols), size=len(clean))
    for j, col in enumerate(cols):
        rows = np.flatnonzero(which == j)
        if rows.size == 0:
            continue
        values = clean[col].to_numpy(dtype=np.float64)
        d = decimals_needed(values, max_decimals)
        texts = format_fixed(values[rows], d, "nan")
        new = np.empty(rows.size, dtype=np.float64)
        for k, text in enumerate(texts.tolist()):
            digits = [i for i, ch in enumerate(text) if ch.isdigit()]
            pos = digits[int(rng.integers(len(digits)))]
            old = int(text[pos])
            repl = (old + 1 + int(rng.integers(9))) % 10
            new[k] = float(text[:pos] + str(repl) + text[pos + 1 :])
        col_values = out[col].to_numpy(dtype=np.float64).copy()
        col_values[rows] = new
        out[col] = col_values
    return out
