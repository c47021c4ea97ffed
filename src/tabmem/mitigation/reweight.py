"""Per-record training weights from a ranking: down-weight the records a warm-up ranks highest.

DynamicCut removes the top ``p`` records of a ranking and retrains; ``DynamicCut(reweight=w)``
keeps every record and retrains with these weights instead (``fit(..., sample_weight=...)``,
:mod:`tabmem.generators._weights`), so that no one's data leaves the table:

* ``step``: weight ``w`` for the ``ceil(p N)`` top records, 1 for the others;
* ``linear``: the top record gets ``w``, and the weight rises linearly with the rank to 1 at the cut
  (record of rank ``r <= k = ceil(p N)``: ``w + (1 - w) (r - 1) / k``), 1 below the cut: a smooth
  function of the ranking, gentler on the records near the cut, whose rank is the least certain.
"""

from __future__ import annotations

import numpy as np

from tabmem._checks import check_choice, check_number
from tabmem.mitigation.ranking import Ranking, n_to_prune

__all__ = ["REWEIGHT_SHAPES", "ranking_weights"]

#: how the weight of the top records depends on their rank
REWEIGHT_SHAPES = ("step", "linear")


def ranking_weights(ranking: Ranking, fraction: float, weight: float, shape: str = "step") -> np.ndarray:
    """One weight per training record (position order): ``weight`` for the top ``fraction`` (module docstring)."""
    w = check_number("reweight", weight, low=0.0, high=1.0, high_open=True)
    check_choice("reweight_shape", shape, REWEIGHT_SHAPES)
    k = n_to_prune(ranking.n_train, fraction)
    rows = ranking.table["train_row"].to_numpy()
    rank = ranking.table["rank"].to_numpy()
    out = np.ones(ranking.n_train, dtype=np.float64)
    top = rank <= k
    if shape == "step":
        out[rows[top]] = w
    else:
        out[rows[top]] = w + (1.0 - w) * (rank[top] - 1) / k
    return out
