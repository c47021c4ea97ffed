"""IJF: new rows drawn from independent per-column marginals (the TabCutMix paper's baseline).

The TabCutMix authors' ``baseline_augmentation``: every column is drawn on its own,
numerical columns from a normal distribution with the column's mean and standard deviation
(``ddof=1``, pandas' default; missing values ignored), categorical columns (the target included)
from their empirical frequencies. Column dependencies are destroyed on purpose: the rows are
plausible per column and copy no training row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem._checks import check_int
from tabmem.data.schema import ValidatedTable
from tabmem.errors import TabmemError
from tabmem.mitigation.base import Augmenter, register_augmenter

__all__ = ["IndependentMarginals"]


@register_augmenter("ijf")
class IndependentMarginals(Augmenter):
    """Independent-marginal rows (module docstring).

    Args:
        ddof: delta degrees of freedom of the standard deviation (1, as pandas).

    Learned: ``mean_``, ``std_`` (numerical columns), ``frequencies_`` (categorical columns:
    category -> share).
    """

    def __init__(self, ddof: int = 1) -> None:
        self.ddof = ddof

    def _check_params(self) -> None:
        check_int("ddof", self.ddof, low=0)

    def _fit(self, table: ValidatedTable) -> None:
        clean = table.data
        self.mean_, self.std_, self.frequencies_ = {}, {}, {}
        for c in self.schema_.numerical:
            v = clean[c].to_numpy(dtype=np.float64)
            v = v[~np.isnan(v)]
            if len(v) <= self.ddof:
                raise TabmemError(
                    f"ijf: numerical column {c!r} has {len(v)} value(s), too few for a standard deviation"
                )
            self.mean_[c] = float(v.mean())
            self.std_[c] = float(v.std(ddof=int(self.ddof)))
        for c in self.schema_.categorical:
            freq = clean[c].value_counts(normalize=True, sort=False).sort_index()
            self.frequencies_[c] = freq

    def _augment(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        out = {}
        for c in self.schema_.columns:
            if c in self.mean_:
                out[c] = rng.normal(self.mean_[c], self.std_[c], n)
            else:
                freq = self.frequencies_[c]
                out[c] = freq.index.to_numpy(dtype=object)[rng.choice(len(freq), size=n, p=freq.to_numpy())]
        return pd.DataFrame(out, columns=list(self.schema_.columns))
