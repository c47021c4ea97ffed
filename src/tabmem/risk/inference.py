"""Attribute inference (WP29): guessing a secret column from a target's other columns.

The attacker knows every column of a target but the secret and guesses the secret of the
nearest synthetic row (Gower distance on the known columns, exact search by
:class:`tabmem.neighbors.NeighborIndex`). A categorical guess is right when equal; a numerical
one when ``|guess - secret| <= tolerance · |guess|`` (anonymeter's relative rule, tolerance
0.05); a missing secret is guessed right by a missing guess. The naive baseline guesses the
secret of random synthetic rows; the control attack targets real rows never trained on
(Giomi et al., PoPETs 2023).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["correct_guesses"]


def correct_guesses(guesses: pd.Series, secrets: pd.Series, *, numerical: bool, tolerance: float) -> np.ndarray:
    """Which guesses are right (module docstring's rule)."""
    if numerical:
        g = guesses.to_numpy(dtype=np.float64, na_value=np.nan)
        s = secrets.to_numpy(dtype=np.float64, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            ok = np.abs(g - s) <= tolerance * (np.abs(g) + 1e-12)
        return ok | (np.isnan(g) & np.isnan(s))
    g = guesses.astype(object).to_numpy()
    s = secrets.astype(object).to_numpy()
    g_na, s_na = pd.isna(g) | (g == "<NA>"), pd.isna(s) | (s == "<NA>")
    return ((g == s) & ~g_na & ~s_na) | (g_na & s_na)
