"""Mixup for tables: convex combinations of two training rows.

Zhang et al. (2018), "mixup: Beyond Empirical Risk Minimization"; the tabular version of the
TabCutMix authors' ``mixup_tabular``: per new row, ``lambda ~ Beta(alpha, alpha)``
(alpha = 0.4), rows i and j uniform over the whole table (any classes, i = j possible);
numerical columns ``lambda x_i + (1 - lambda) x_j``; categorical columns (the target included)
one-hot encoded, mixed the same way and decoded by arg-max. The arg-max of
``lambda e_a + (1 - lambda) e_b`` is i's category when lambda > 1/2, j's when lambda < 1/2 and the
first of the two in sorted category order on a tie (what ``argmax`` returns). A missing numerical
value stays missing in the mix.

After ``augment``, ``provenance_`` holds ``parent_i``, ``parent_j`` and ``lam``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem._checks import check_number
from tabmem.data.schema import ValidatedTable
from tabmem.mitigation.base import Augmenter, register_augmenter

__all__ = ["Mixup"]


@register_augmenter("mixup")
class Mixup(Augmenter):
    """Mixup of pairs of training rows (module docstring).

    Args:
        alpha: parameter of the symmetric Beta distribution of lambda (0.4).
    """

    def __init__(self, alpha: float = 0.4) -> None:
        self.alpha = alpha

    def _check_params(self) -> None:
        check_number("alpha", self.alpha, low=0.0, low_open=True)

    def _fit(self, table: ValidatedTable) -> None:
        self._clean = table.data

    def _augment(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        lam = rng.beta(self.alpha, self.alpha, n)
        i = rng.integers(0, self.n_train_, n)
        j = rng.integers(0, self.n_train_, n)
        out = {}
        num = set(self.schema_.numerical)
        for c in self.schema_.columns:
            v = self._clean[c].to_numpy()
            if c in num:
                out[c] = lam * v[i].astype(np.float64) + (1.0 - lam) * v[j].astype(np.float64)
            else:
                a, b = v[i], v[j]
                first = np.where(a <= b, a, b)  # sorted order of the two categories (canonical strings)
                out[c] = np.where(lam > 0.5, a, np.where(lam < 0.5, b, first))
        self.provenance_ = pd.DataFrame({"parent_i": i, "parent_j": j, "lam": lam})
        return pd.DataFrame(out, columns=list(self.schema_.columns))
