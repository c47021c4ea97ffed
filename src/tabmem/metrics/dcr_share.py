"""DCR share: how often a synthetic row is closer to the training table than to a holdout.

TabSyn's ``eval_dcr.py`` protocol (paper brief §4.2; amazon-science/tabsyn#18): numericals divided
by the training range, categoricals one-hot, **L1** distance; for each synthetic row ``s``,
``DCR_train(s) = min_t ||s - t||_1`` and ``DCR_holdout(s) = min_h ||s - h||_1``; the score is the
share of synthetic rows with ``DCR_train < DCR_holdout`` (strict). With a holdout as large as
the training table a generator that does not copy scores 50% (the ideal; higher means the
synthetic rows sit closer to the training rows). With other sizes the no-copy value is
``n_train / (n_train + n_holdout)``, reported as ``ideal``.

Exact and blocked: the numeric L1 part is a sum of ``|q - r|`` per column on a (block x n)
slab, the categorical part ``ones_q + ones_r - 2 * (onehot_q @ onehot_r.T)`` (one BLAS product:
one-hot L1 counts 2 per mismatching column, 1 when the synthetic category is unseen). Memory is
O(block x n) whatever the table sizes; the reference tables are never subsampled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.data.encoding import TableEncoder
from tabmem.errors import TabmemError
from tabmem.metrics._encode import block_rows
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric


def _encode(encoder: TableEncoder, table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    rng = np.where(encoder.range_ > 0, encoder.range_, 1.0)
    num = encoder.numeric(table) / rng
    oh = encoder.one_hot(table, dtype=np.float64) if encoder.schema.categorical else np.zeros((len(table), 0))
    return np.ascontiguousarray(num), np.ascontiguousarray(oh)


def min_l1_distance(
    q_num: np.ndarray, q_oh: np.ndarray, r_num: np.ndarray, r_oh: np.ndarray, block: int | None = None
) -> np.ndarray:
    """Exact ``min_r ||[q_num, q_oh] - [r_num, r_oh]||_1`` for every query row, in row blocks."""
    n_ref = len(r_num)
    if n_ref == 0:
        raise TabmemError("the reference table is empty")
    step = block or block_rows(n_ref)
    r_ones = r_oh.sum(axis=1)
    q_ones = q_oh.sum(axis=1)
    out = np.empty(len(q_num))
    for start in range(0, len(q_num), step):
        stop = min(start + step, len(q_num))
        if r_oh.shape[1]:
            d = (q_ones[start:stop, None] + r_ones[None, :]) - 2.0 * (q_oh[start:stop] @ r_oh.T)
        else:
            d = np.zeros((stop - start, n_ref))
        for j in range(q_num.shape[1]):
            d += np.abs(q_num[start:stop, j, None] - r_num[None, :, j])
        out[start:stop] = d.min(axis=1)
    return out


@register_metric
class DCRShare(Metric):
    """Share of synthetic rows closer (L1, TabSyn encoding) to train than to the holdout; 0.5 ideal."""

    name = "dcr_share"
    goal = "minimize"  # toward the ideal from above; values below the ideal are not better privacy
    bounds = (0.0, 1.0)
    needs = ("holdout",)

    def __init__(self, block_size: int | None = None) -> None:
        self.block_size = block_size

    def evaluate(self, real, synthetic, schema, *, test=None, holdout=None) -> MetricResult:
        if holdout is None:
            raise TabmemError(
                "dcr_share needs a holdout table (real rows not used for training; same size as the training table)"
            )
        prep, extra = prepare_tables(real, synthetic, schema, nan="error", extra_tables={"holdout": holdout})
        hold = extra["holdout"]
        enc = prep.encoder
        s_num, s_oh = _encode(enc, prep.synthetic)
        t_num, t_oh = _encode(enc, prep.real)
        h_num, h_oh = _encode(enc, hold)
        d_train = min_l1_distance(s_num, s_oh, t_num, t_oh, self.block_size)
        d_hold = min_l1_distance(s_num, s_oh, h_num, h_oh, self.block_size)
        closer = d_train < d_hold
        table = pd.DataFrame(
            {
                "synthetic_row": np.arange(len(d_train)),
                "dcr_train": d_train,
                "dcr_holdout": d_hold,
                "closer_to_train": closer,
            }
        )
        n_t, n_h = len(prep.real), len(hold)
        return self._result(
            float(closer.mean()),
            table,
            ideal=n_t / (n_t + n_h),
            n_train=n_t,
            n_holdout=n_h,
            ties=int((d_train == d_hold).sum()),
            median_dcr_train=float(np.median(d_train)),
            median_dcr_holdout=float(np.median(d_hold)),
        )
