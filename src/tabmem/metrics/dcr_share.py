"""DCR share: how often a synthetic row is closer to the training table than to a holdout.

TabSyn's ``eval_dcr.py`` protocol (as TabCutMix uses it; amazon-science/tabsyn#18): numericals divided
by the training range, categoricals one-hot, **L1** distance; for each synthetic row ``s``,
``DCR_train(s) = min_t ||s - t||_1`` and ``DCR_holdout(s) = min_h ||s - h||_1``; the score is the
share of synthetic rows with ``DCR_train < DCR_holdout`` (strict). With a holdout as large as
the training table a generator that does not copy scores 50% (the ideal; higher means the
synthetic rows sit closer to the training rows). With other sizes the no-copy value is
``n_train / (n_train + n_holdout)``, reported as ``ideal``.

Exact and blocked, on the project's exact neighbour search (:mod:`tabmem.neighbors.blocked`):
:class:`TabSynL1Distance` evaluates a query block against all reference rows in float32 (the
numeric L1 part column by column, the categorical part ``ones_q + ones_r - 2 onehot_q @
onehot_r.T`` in one BLAS product, so a mismatching column counts 2 and an unseen synthetic
category 1, exactly as one-hot L1 does), with a rounding bound; the search then recomputes the
candidates in float64, so the distances equal a float64 brute force. The project's ``gower``
distance is *not* reused because it weighs a categorical mismatch 1 (not 2) and clips
numerical differences at 1, which would change TabSyn's number. Memory is bounded whatever the
sizes and the reference tables are never subsampled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.linalg.blas import sgemm

from tabmem._checks import check_n_jobs, check_positive_int
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric
from tabmem.neighbors.distances import EPS32, Block, Distance, Queries
from tabmem.neighbors.index import NeighborIndex

_TAME = 2.0**40  # magnitude (in training ranges) beyond which a query row is evaluated exactly


class TabSynL1Distance(Distance):
    """L1 distance on ``[x_num / range_train, one-hot]`` (TabSyn DCR); not in the replica registry."""

    name = "tabsyn_l1"

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        self._rng = rng = np.where(enc.range_ > 0, enc.range_, 1.0)
        num = enc.numeric(clean) / rng  # at most ~1e131 inside the value domain: finite
        onehot = (
            enc.one_hot(clean, dtype=np.float32) if enc.schema.categorical else np.zeros((len(clean), 0), np.float32)
        )
        q = Queries(num=num, miss=np.isnan(num), onehot=onehot, codes=enc.codes(clean))
        # rows far outside the training range (a synthetic 1e12 against ranges near 1) cannot be bounded in float32:
        # they take the exact float64 path against every reference row (as L2Distance's)
        absmax = np.abs(num).max(axis=1) if num.shape[1] else np.zeros(len(num))
        q.tame = absmax <= _TAME
        fast = num if q.tame.all() else np.where(q.tame[:, None], num, 0.0)
        q.aug = fast.astype(np.float32)
        q.ones = onehot.sum(axis=1).astype(np.float32)  # type: ignore[attr-defined]
        q.abs_sum = np.abs(fast).sum(axis=1)  # type: ignore[attr-defined]
        return q

    def _fit_extra(self) -> None:
        ref = self.ref_
        self._ref_abs_max = float(ref.abs_sum.max()) if len(ref) else 0.0  # type: ignore[attr-defined]
        # reference rows too far out for the float32 pass (a holdout outlier beyond 2^40 ranges): their
        # keys become the lower bound |r|_inf - |q|_inf of the L1 distance (the one-hot part is >= 0)
        self._wild_refs = np.flatnonzero(~ref.tame)  # type: ignore[operator]
        num = ref.num[self._wild_refs]
        self._wild_abs = np.abs(num).max(axis=1) if num.shape[1] else np.zeros(len(num))

    def block(self, q: Queries, rows: slice) -> Block:
        ref = self.ref_
        b = q.aug[rows]
        n_rows, k = b.shape
        key = np.empty((n_rows, self.n_ref), dtype=np.float32)
        np.add.outer(q.ones[rows], ref.ones, out=key)  # type: ignore[attr-defined]
        if q.onehot.shape[1]:  # key -= 2 * matches, fused into the GEMM (beta = 1)
            sgemm(-2.0, ref.onehot.T, q.onehot[rows].T, beta=1.0, c=key.T, trans_a=1, trans_b=0, overwrite_c=1)
        # numeric L1 in cache-sized column tiles: all k passes run on a tile that stays in cache
        tile = max(256, (1 << 19) // max(n_rows, 1))
        tmp = np.empty((n_rows, min(tile, self.n_ref)), dtype=np.float32)
        for j0 in range(0, self.n_ref, tile):
            j1 = min(j0 + tile, self.n_ref)
            kt, tt = key[:, j0:j1], tmp[:, : j1 - j0]
            for c in range(k):
                np.subtract.outer(b[:, c], ref.aug[j0:j1, c], out=tt)
                np.abs(tt, out=tt)
                kt += tt
        n_terms = k + 2
        scale = q.abs_sum[rows] + self._ref_abs_max + q.ones[rows] + 2.0 * self.n_cat_total + 1.0  # type: ignore[attr-defined]
        margin = (4.0 * n_terms + 8.0) * EPS32 * scale
        if q.tame is not None and not q.tame[rows].all():
            wild = ~q.tame[rows]
            margin = np.where(wild, np.inf, margin)
            key[wild] = 0.0
        if len(self._wild_refs):
            num = q.num[rows]
            q_abs = np.abs(num).max(axis=1) if num.shape[1] else np.zeros(n_rows)
            low = np.minimum(np.maximum(self._wild_abs[None, :] - q_abs[:, None], 0.0) * (1 - 1e-6), 1e38)
            key[:, self._wild_refs] = low  # below float32's max: finite lower bounds
        qi = np.arange(rows.start, rows.start + n_rows)

        def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
            return self.pair_distances(q, qi[local_rows], refs)

        def identity(local_rows: np.ndarray, values: np.ndarray) -> np.ndarray:
            return np.asarray(values, dtype=np.float64)

        return Block(key=key, margin=margin, exact=exact, key_to_distance=identity, distance_to_key=identity)

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        num = np.abs(q.num[q_idx] - self.ref_.num[r_idx]).sum(axis=1)
        qo, ro = q.onehot[q_idx].astype(np.float64), self.ref_.onehot[r_idx].astype(np.float64)
        return num + np.abs(qo - ro).sum(axis=1)


def nearest_l1(
    encoder, reference: pd.DataFrame, queries: pd.DataFrame, *, n_jobs: int | None = 1, block_rows: int | None = None
) -> np.ndarray:
    """Exact ``min_r ||q - r||_1`` (TabSyn encoding, ``encoder``'s training ranges) per query row.

    ``reference`` and ``queries`` are clean (validated) frames; they are not validated again.
    """
    if len(reference) == 0:
        raise TabmemError("the reference table is empty")
    index = NeighborIndex(TabSynL1Distance(), n_jobs=n_jobs).fit(None, encoder=encoder, clean=reference)
    _, d = index.kneighbors(index.distance_.prepare(queries), k=1, block_rows=block_rows)
    return d[:, 0]


@register_metric
class DCRShare(Metric):
    """Share of synthetic rows closer (L1, TabSyn encoding) to train than to the holdout; 0.5 ideal."""

    name = "dcr_share"
    goal = "minimize"  # toward the ideal from above; values below the ideal are not better privacy
    bounds = (0.0, 1.0)
    needs = ("holdout",)
    ideal = 0.5

    def __init__(self, n_jobs: int | None = 1, block_rows: int | None = None) -> None:
        self.n_jobs = n_jobs
        self.block_rows = block_rows

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        if holdout is None:
            raise TabmemError(
                "dcr_share needs a holdout table (real rows not used for training; same size as the training table)"
            )
        check_n_jobs(self.n_jobs)
        check_positive_int("block_rows", self.block_rows, allow_none=True)
        prep, extra = prepare_tables(real, synthetic, schema, nan="error", extra_tables={"holdout": holdout})
        hold = extra["holdout"]
        enc = prep.encoder
        d_train = nearest_l1(enc, prep.real, prep.synthetic, n_jobs=self.n_jobs, block_rows=self.block_rows)
        d_hold = nearest_l1(enc, hold, prep.synthetic, n_jobs=self.n_jobs, block_rows=self.block_rows)
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
