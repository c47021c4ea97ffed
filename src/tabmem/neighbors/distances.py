"""Mixed-type distances between table rows, with exact blocked evaluation.

Each distance is fitted on a *reference* table (the training table for replica detection,
the synthetic table for attacks) and then evaluates blocks of query rows against **all**
reference rows. A block is first evaluated fast (one BLAS product, float32 where that is
safe) to a *key* that orders reference rows like the distance, with a per-row bound on the
rounding error; :mod:`tabmem.neighbors.blocked` then recomputes the few candidates exactly in
float64, so the result equals a float64 brute force (see ``tests/memorization``).

Registered distances (``get_distance(name)``):

``fang2024``
    Bit-faithful to the memorization papers' ``custom_distance`` (TabCutMix/DynamicCut code):
    ``e_j = ||x_num - t_j,num||_2`` on **raw** values, min-max normalised over all reference rows
    *for this query* (``ê = (e - min e)/(max e - min e)``, 0 when max = min as scikit-learn's
    MinMaxScaler does), plus the number of mismatching categorical values (the target counts
    as categorical in classification tasks), divided by the number of columns ``M``.
``gower``
    ``(sum_num min(|x - t|/range, 1) + sum_cat [x != t]) / M`` with ranges of the reference
    table (a constant column contributes 0); the SDMetrics / SynthEval convention.
``l2``
    Euclidean distance on standardised numericals (reference mean/std; std 0 -> 1) and
    one-hot categoricals scaled by 1/sqrt(2) (a mismatch then adds exactly 1 to d^2).

Missing numerical values (only with ``nan="match"``): ``gower`` follows SDMetrics (NaN vs NaN
= 0, NaN vs a value = 1); ``fang2024`` and ``l2`` impute the reference mean and add a
"missing" indicator that counts as one categorical mismatch when exactly one side is NaN.
Missing categorical values are the category ``"<NA>"`` (NaN matches NaN). A category unseen
in the reference table mismatches every reference row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy.linalg.blas import sgemm

from tabmem._registry import Registry
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, ValidatedTable, validate

__all__ = [
    "DISTANCES",
    "Distance",
    "Queries",
    "Block",
    "register_distance",
    "get_distance",
    "Fang2024Distance",
    "GowerDistance",
    "L2Distance",
    "EPS32",
    "EPS64",
]

EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)


def get_distance(name: str) -> "Distance":
    """A new, unfitted distance by registry name (unknown names list the known ones)."""
    return DISTANCES.create(name)


@dataclass
class Queries:
    """Query rows prepared for one fitted distance (all arrays row-aligned)."""

    num: np.ndarray  # float64 (n, k) exact numeric representation used by ``exact``
    miss: np.ndarray  # bool (n, k) missing numerical values
    onehot: np.ndarray  # float32 (n, c) one-hot of categoricals (+ missing indicators)
    codes: np.ndarray  # int32 (n, n_cat_total) category codes (+ indicators), -1 unseen
    aug: np.ndarray | None = None  # distance-specific GEMM operand

    def __len__(self) -> int:
        return self.num.shape[0]


@dataclass
class Block:
    """Fast evaluation of a query block: ``key`` orders reference rows like the distance.

    ``margin[i]`` bounds ``|key - exact key|`` for row i; ``exact(rows, refs)`` returns exact
    float64 distances for pairs (block-local row index, reference index).
    """

    key: np.ndarray
    margin: np.ndarray
    exact: Callable[[np.ndarray, np.ndarray], np.ndarray]
    key_to_distance: Callable[[np.ndarray, np.ndarray], np.ndarray]
    distance_to_key: Callable[[np.ndarray, np.ndarray], np.ndarray]


class Distance:
    """Base class: fit on a reference table, then evaluate query blocks."""

    name = "base"

    def fit(
        self,
        reference: pd.DataFrame | ValidatedTable | None = None,
        schema: Schema | None = None,
        *,
        encoder: TableEncoder | None = None,
        clean: pd.DataFrame | None = None,
    ) -> "Distance":
        """Fit on the reference table (or reuse a fitted ``encoder`` and validated ``clean`` frame)."""
        if encoder is None:
            if reference is None or schema is None:
                raise ValueError("fit needs (reference, schema) or (encoder, clean)")
            checked = validate(reference, schema, name="reference", nan="match")
            encoder = TableEncoder(schema).fit(checked, nan="match")
            clean = checked.data
        if clean is None:
            clean = encoder.validate(reference, name="reference", nan="match")
        self.encoder_ = encoder
        self.schema_ = encoder.schema
        self.n_columns_ = encoder.schema.n_columns
        self._nan_cols = np.array([bool(clean[c].isna().any()) for c in self.schema_.numerical], dtype=bool)
        self.ref_ = self.prepare(clean, fitting=True)
        self._fit_extra()
        return self

    @property
    def n_ref(self) -> int:
        return len(self.ref_)

    # ------------------------------------------------------------------ helpers
    def _fit_extra(self) -> None:
        pass

    def _indicator_cols(self, miss: np.ndarray) -> np.ndarray:
        return miss[:, self._nan_cols] if self._nan_cols.any() else np.zeros((miss.shape[0], 0), dtype=bool)

    def _base_prepare(self, clean: pd.DataFrame, num: np.ndarray, *, indicators: bool) -> Queries:
        enc = self.encoder_
        miss = np.isnan(num)
        codes = enc.codes(clean)
        onehot = enc.one_hot(clean, dtype=np.float32)
        if indicators:
            ind = self._indicator_cols(miss)
            if ind.shape[1]:
                # two-state one-hot per nullable column: matches iff both missing or both present
                two = np.concatenate([ind, ~ind], axis=1).astype(np.float32)
                onehot = np.concatenate([onehot, two], axis=1)
                codes = np.concatenate([codes, ind.astype(np.int32)], axis=1)
        return Queries(num=num, miss=miss, onehot=onehot, codes=codes)

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        raise NotImplementedError

    def block(self, q: Queries, rows: slice) -> Block:
        raise NotImplementedError

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        """Exact distances of arbitrary (query, reference) pairs (used by tests and refinement)."""
        raise NotImplementedError

    def _mismatches(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        if q.codes.shape[1] == 0:
            return np.zeros(len(q_idx))
        qc, rc = q.codes[q_idx], self.ref_.codes[r_idx]
        return ((qc != rc) | (qc < 0)).sum(axis=1).astype(np.float64)

    @property
    def n_cat_total(self) -> int:
        return self.ref_.codes.shape[1]


#: name -> distance class; filled by :func:`register_distance`.
DISTANCES: Registry[type[Distance]] = Registry("distance", base=Distance)
register_distance = DISTANCES.register


@register_distance("fang2024")
class Fang2024Distance(Distance):
    """The memorization papers' distance (see module docstring)."""

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        raw = enc.numeric(clean)
        # centring at the reference mean does not change distances and reduces cancellation
        centred = raw - enc.mean_
        q = self._base_prepare(clean, centred, indicators=True)
        q.num = np.where(q.miss, 0.0, centred)  # NaN -> reference mean
        sq = np.einsum("ij,ij->i", q.num, q.num)
        if fitting:
            q.aug = np.column_stack([q.num, np.ones(len(q.num)), sq])
        else:
            q.aug = np.column_stack([-2.0 * q.num, sq, np.ones(len(q.num))])
        return q

    def _fit_extra(self) -> None:
        ref = self.ref_
        self._ref_sq = ref.aug[:, -1]
        self._ref_sq_max = float(self._ref_sq.max()) if len(ref) else 0.0
        self._k = ref.num.shape[1]

    def block(self, q: Queries, rows: slice) -> Block:
        ref = self.ref_
        b = q.aug[rows]
        n_rows = b.shape[0]
        qi = np.arange(rows.start, rows.start + n_rows)
        if self._k:
            # squared distances in float64 (raw units: a float32 product would cancel badly), then
            # rounded to float32 for the element-wise passes (their rounding is inside ``delta``)
            key = (b @ ref.aug.T).astype(np.float32)
            np.maximum(key, 0.0, out=key)
            np.sqrt(key, out=key)
            # |e_approx - e_exact| <= delta: float64 dot-product error + float32 rounding of e
            # (e <= emax, and the float32 rounding of the arg-max itself is within 2 eps)
            dot_err = np.sqrt((4 * self._k + 8) * EPS64 * (q.aug[rows, -2] + self._ref_sq_max))
            jmax = key.argmax(axis=1)
            emax_approx = key[np.arange(n_rows), jmax].astype(np.float64)
            delta = dot_err + 4 * EPS32 * (emax_approx + dot_err)
            emin = self._exact_extreme(q, qi, key, delta, smallest=True)
            emax = self._exact_extreme(q, qi, key, delta, smallest=False, arg=jmax)
        else:
            key = np.zeros((n_rows, self.n_ref), dtype=np.float32)
            emin = emax = delta = np.zeros(n_rows)
        spread = emax - emin
        # key = e - spread * (categorical matches): the query row's d*M times spread, shifted,
        # so one fused GEMM (beta = 1) adds the categorical part; a zero spread counts as 1
        sp = np.where(spread > 0, spread, 1.0)
        if q.onehot.shape[1]:
            weighted = (q.onehot[rows] * sp[:, None].astype(np.float32)).astype(np.float32)
            sgemm(-1.0, ref.onehot.T, weighted.T, beta=1.0, c=key.T, trans_a=1, trans_b=0, overwrite_c=1)
        n_cat = float(self.n_cat_total)
        margin = 4.0 * delta + 8 * EPS32 * (n_cat + 2.0) * sp + 8 * EPS32 * emax + 1e-300
        m = float(self.n_columns_)

        def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
            glob = qi[local_rows]
            e_ex = self._exact_e(q, glob, refs)
            ehat = (e_ex - emin[local_rows]) / sp[local_rows]
            return (ehat + self._mismatches(q, glob, refs)) / m

        def key_to_distance(local_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
            return ((keys - emin[local_rows]) / sp[local_rows] + n_cat) / m

        def distance_to_key(local_rows: np.ndarray, d: np.ndarray) -> np.ndarray:
            return (d * m - n_cat) * sp[local_rows] + emin[local_rows]

        return Block(
            key=key, margin=margin, exact=exact, key_to_distance=key_to_distance, distance_to_key=distance_to_key
        )

    def _exact_extreme(
        self,
        q: Queries,
        qi: np.ndarray,
        e: np.ndarray,
        delta: np.ndarray,
        *,
        smallest: bool,
        arg: np.ndarray | None = None,
    ) -> np.ndarray:
        """Exact min (or max) over all reference rows of the numerical distance, per query row.

        The approximate arg-extreme is recomputed exactly; only rows whose runner-up lies within
        ``2 * delta`` (a near-tie the approximation cannot order) are checked against every
        candidate in that band.
        """
        r = np.arange(e.shape[0])
        if arg is None:
            arg = e.argmin(axis=1) if smallest else e.argmax(axis=1)
        best = e[r, arg].astype(np.float64)
        saved = e[r, arg].copy()
        e[r, arg] = np.inf if smallest else -np.inf
        runner = (e.min(axis=1) if smallest else e.max(axis=1)).astype(np.float64)
        e[r, arg] = saved
        out = self._exact_e(q, qi, arg)
        unsure = np.abs(runner - best) <= 2 * delta
        for i in np.flatnonzero(unsure):
            band = np.flatnonzero(np.abs(e[i].astype(np.float64) - best[i]) <= 2 * delta[i])
            vals = self._exact_e(q, np.full(len(band), qi[i]), band)
            out[i] = vals.min() if smallest else vals.max()
        return out

    def _exact_e(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        if self._k == 0:
            return np.zeros(len(q_idx))
        diff = q.num[q_idx] - self.ref_.num[r_idx]
        return np.sqrt(np.einsum("ij,ij->i", diff, diff))

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError("fang2024 normalises per query over all reference rows; use the brute-force helper")


@register_distance("gower")
class GowerDistance(Distance):
    """Range-scaled L1 on numericals (clipped at 1) plus categorical mismatches, over M columns."""

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        rng = np.where(enc.range_ > 0, enc.range_, np.inf)  # constant column: contributes 0
        scaled = (enc.numeric(clean) - enc.min_) / rng
        scaled = np.where(np.isfinite(rng), scaled, 0.0)
        raw_nan = np.isnan(enc.numeric(clean))
        q = self._base_prepare(clean, scaled, indicators=False)
        q.miss = raw_nan
        q.num = np.where(raw_nan, np.nan, scaled)
        q.aug = np.asarray(np.where(raw_nan, 0.0, scaled), dtype=np.float32)
        return q

    def block(self, q: Queries, rows: slice) -> Block:
        ref = self.ref_
        b = q.aug[rows]
        n_rows, k = b.shape
        key = np.zeros((n_rows, self.n_ref), dtype=np.float32)
        tmp = np.empty_like(key)
        qmiss = q.miss[rows]
        for c in range(k):
            np.subtract.outer(b[:, c], ref.aug[:, c], out=tmp)
            np.abs(tmp, out=tmp)
            if (b[:, c].min() < 0) or (b[:, c].max() > 1):
                np.minimum(tmp, 1.0, out=tmp)
            if qmiss[:, c].any() or ref.miss[:, c].any():
                xor = qmiss[:, c][:, None] != ref.miss[:, c][None, :]
                either = qmiss[:, c][:, None] | ref.miss[:, c][None, :]
                tmp[either] = xor[either]
            key += tmp
        if q.onehot.shape[1]:  # key -= categorical matches, fused into the GEMM (beta = 1)
            sgemm(-1.0, self.ref_.onehot.T, q.onehot[rows].T, beta=1.0, c=key.T, trans_a=1, trans_b=0, overwrite_c=1)
        margin = np.full(n_rows, (4 * k + 4) * EPS32 * (k + self.n_cat_total) + 1e-12)
        qi = np.arange(rows.start, rows.start + n_rows)
        m = float(self.n_columns_)
        n_cat = float(self.n_cat_total)

        def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
            return self.pair_distances(q, qi[local_rows], refs)

        def key_to_distance(local_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
            return (keys.astype(np.float64) + n_cat) / m

        def distance_to_key(local_rows: np.ndarray, d: np.ndarray) -> np.ndarray:
            return d * m - n_cat

        return Block(
            key=key, margin=margin, exact=exact, key_to_distance=key_to_distance, distance_to_key=distance_to_key
        )

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        a, t = q.num[q_idx], self.ref_.num[r_idx]
        part = np.minimum(np.abs(a - t), 1.0)
        am, tm = np.isnan(a), np.isnan(t)
        part = np.where(am | tm, (am != tm).astype(np.float64), part)
        return (part.sum(axis=1) + self._mismatches(q, q_idx, r_idx)) / self.n_columns_


@register_distance("l2")
class L2Distance(Distance):
    """Euclidean distance on standardised numericals + one-hot categoricals / sqrt(2)."""

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        std = np.where(enc.std_ > 0, enc.std_, 1.0)
        z = (enc.numeric(clean) - enc.mean_) / std
        q = self._base_prepare(clean, z, indicators=True)
        q.num = np.where(q.miss, 0.0, z)
        feats = np.concatenate([q.num, q.onehot.astype(np.float64) / np.sqrt(2.0)], axis=1)
        sq = np.einsum("ij,ij->i", feats, feats)
        q.feats = feats  # type: ignore[attr-defined]
        if fitting:
            q.aug = np.column_stack([feats, np.ones(len(feats)), sq]).astype(np.float32)
        else:
            q.aug = np.column_stack([-2.0 * feats, sq, np.ones(len(feats))]).astype(np.float32)
        q.sq = sq  # type: ignore[attr-defined]
        return q

    def _fit_extra(self) -> None:
        self._ref_sq_max = float(self.ref_.sq.max()) if len(self.ref_) else 0.0  # type: ignore[attr-defined]
        self._dim = self.ref_.aug.shape[1]

    def block(self, q: Queries, rows: slice) -> Block:
        key = q.aug[rows] @ self.ref_.aug.T  # squared distances (float32)
        err = (2 * self._dim + 8) * EPS32 * (q.sq[rows] + self._ref_sq_max + 1.0)  # type: ignore[attr-defined]
        qi = np.arange(rows.start, rows.start + key.shape[0])

        def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
            return self.pair_distances(q, qi[local_rows], refs)

        def key_to_distance(local_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
            return np.sqrt(np.maximum(keys.astype(np.float64), 0.0))

        def distance_to_key(local_rows: np.ndarray, d: np.ndarray) -> np.ndarray:
            return d * d

        return Block(key=key, margin=err, exact=exact, key_to_distance=key_to_distance, distance_to_key=distance_to_key)

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        diff = q.feats[q_idx] - self.ref_.feats[r_idx]  # type: ignore[attr-defined]
        return np.sqrt(np.einsum("ij,ij->i", diff, diff))
