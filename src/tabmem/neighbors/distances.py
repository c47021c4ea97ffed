"""Mixed-type distances between table rows, with exact blocked evaluation.

Each distance is fitted on a *reference* table (the training table for replica detection,
the synthetic table for attacks) and then evaluates blocks of query rows against **all**
reference rows. A block is first evaluated fast (BLAS products and element-wise passes,
float32 where that is safe) to a *key* that orders reference rows like the distance, with a
per-row bound on its error; :mod:`tabmem.neighbors.blocked` then recomputes the few candidates
exactly in float64, so the result equals a float64 brute force (see ``tests/memorization``).

Registered distances (``get_distance(name)``):

``fang2024``
    Bit-faithful to the memorization papers' ``custom_distance`` (TabCutMix/DynamicCut code):
    ``e_j = ||x_num - t_j,num||_2`` on **raw** values, min-max normalised over all reference rows
    *for this query* (``ê = (e - min e)/(max e - min e)``, 0 when max = min as scikit-learn's
    MinMaxScaler does), plus the number of mismatching categorical values (the target counts
    as categorical in classification tasks), divided by the number of columns ``M``.
``gower``
    ``(sum_num min(|a - b|, 1) + sum_cat [x != t]) / M`` on range-scaled values
    ``a = (x - min)/range`` with the reference table's minima and ranges (a constant column
    contributes 0); the SDMetrics / SynthEval convention.
``l2``
    Euclidean distance on standardised numericals (reference mean/std; std 0 -> 1) and
    one-hot categoricals scaled by 1/sqrt(2) (a mismatch then adds exactly 1 to d^2).

Missing numerical values (only with ``nan="match"``): ``gower`` follows SDMetrics (NaN vs NaN
= 0, NaN vs a value = 1); ``fang2024`` and ``l2`` impute the reference mean and add a
"missing" indicator that counts as one categorical mismatch when exactly one side is NaN.
Missing categorical values are the category ``"<NA>"`` (NaN matches NaN). A category unseen
in the reference table mismatches every reference row.

Value domain and exactness
--------------------------
Every table reaches a distance through :func:`tabmem.data.schema.validate`, which refuses
numerical values outside the value domain: 0 or ``1e-100 <= |x| <= 1e15``
(``docs/neighbors.md``). Inside it no scaled value, difference, square or sum of squares
computed here (nor the encoder's means, standard deviations and ranges) overflows or leaves the
normal float64 range: a nonzero difference of two values is at least about ``1e-116``, a
scaled value at most about ``1e136``. The exact values are therefore the float64 formulas above
as written (``fang2024``: the papers' ``((t - x) ** 2).sum(axis=1)`` column by column, bit for
bit), and the blocked search returns exactly what a float64 brute force of them returns. The
fast passes stay float32 with rigorous per-row bounds; a query row whose scaled values leave
the range those bounds cover (``2^40``, far outside the reference's spread but inside the
domain) is evaluated exactly against every reference row (``Queries.tame``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

import numpy as np
import pandas as pd
from scipy.linalg.blas import sgemm

from tabmem._registry import Registry
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, ValidatedTable, validate

__all__ = [
    "DEFAULT_DISTANCE",
    "DISTANCES",
    "Distance",
    "Queries",
    "Block",
    "PrunedBlock",
    "register_distance",
    "get_distance",
    "Fang2024Distance",
    "GowerDistance",
    "L2Distance",
    "EPS32",
    "EPS64",
    "norm_rows",
]

#: the default distance of every replica audit (audit, tracking, DynamicCut, studies, the demo):
#: scaled by the training table's ranges. ``"fang2024"``, the papers' distance, min-max scales each
#: query's distances, so that its nearest row is at 0: it cannot discriminate on all-numerical
#: tables (docs/neighbors.md); pass it explicitly to reproduce the papers' numbers.
DEFAULT_DISTANCE = "gower"

EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)
_TILE_BYTES = 1 << 20  # float64 working tile of the element-wise passes (stays in L2 cache)
_EIGH_MAX_COLS = 256  # fang2024's principal axis: eigh of the k x k Gram matrix up to here, power iteration above
_L2_TAME = 2.0**40  # l2 feature magnitude beyond which a query row takes the exact fallback
_MATCH_BLOCK_BYTES = 16 << 20  # match-count blocks above this are summed in column tiles ...
_MATCH_TILE_BYTES = 256 << 10  # ... of about this size (in cache), at least _MATCH_TILE_COLS columns wide
_MATCH_TILE_COLS = 4096
_PROJECTED_SEEDS = 4  # fang2024: reference rows next to a query row in the projection order, evaluated first
_PROJECTED_MAX_SHARE = 1 / 16  # above this share of reference rows left, a row's e extremes take the full pass
_PROJECTED_PAIRS = 1 << 18  # pairs evaluated at a time for the e extremes (~100 bytes each)


def get_distance(name: str) -> "Distance":
    """A new, unfitted distance by registry name (unknown names list the known ones)."""
    return DISTANCES.create(name)


def norm_rows(diff: np.ndarray, *, columns_in_order: bool = False) -> np.ndarray:
    """``||diff_i||_2`` per row: ``sqrt`` of the sum of squares, as written (exact inside the value domain).

    ``columns_in_order`` sums the squares column after column, left to right (the order of the
    papers' pandas ``((t - x) ** 2).sum(axis=1)``); otherwise ``einsum`` sums them.
    """
    n, k = diff.shape
    if k == 0:
        return np.zeros(n)
    if columns_in_order:
        total = diff[:, 0] * diff[:, 0]
        for c in range(1, k):
            total += diff[:, c] * diff[:, c]
        return np.sqrt(total)
    return np.sqrt(np.einsum("ij,ij->i", diff, diff))


def _power_axis(w: np.ndarray, iterations: int = 30) -> np.ndarray:
    """An approximation of the top right singular vector of ``w`` by power iteration, from a fixed
    start (deterministic), without the ``k x k`` Gram matrix; any unit axis keeps fang2024 exact."""
    axis = np.full(w.shape[1], 1.0 / np.sqrt(w.shape[1]))
    for _ in range(iterations):
        nxt = w.T @ (w @ axis)
        size = float(np.linalg.norm(nxt))
        if not np.isfinite(size) or size == 0.0:
            break
        axis = nxt / size
    return axis


@dataclass(init=False)
class Queries:
    """Query rows prepared for one fitted distance (all arrays row-aligned).

    ``onehot`` (float32, ``(n, c)``: the categorical columns' one-hots, then the missing-value
    indicators' two states) is given, or built from ``codes`` and ``widths`` when first read and
    then kept: the lookup-table search reads only the codes, so a search that never falls back to
    a one-hot product never builds it (416 bytes a row on Adult). :meth:`onehot_rows` gives the
    one-hot of a few rows without building the whole.
    """

    num: np.ndarray  # float64 (n, k) exact numeric representation used by ``exact``
    miss: np.ndarray  # bool (n, k) missing numerical values
    codes: np.ndarray  # int32 (n, n_cat_total) category codes (+ indicators), -1 unseen
    aug: np.ndarray | None = None  # distance-specific fast-pass operand
    tame: np.ndarray | None = None  # bool (n,): rows the fast pass can bound (None: all)
    feats: np.ndarray | None = None  # l2: float64 features
    sq: np.ndarray | None = None  # l2: squared feature norms
    unorm: np.ndarray | None = None  # fang2024: norm of the centred row
    #: one-hot width of each categorical code column (the encoder's categories); the code columns
    #: after them are missing-value indicators (codes 0/1, two one-hot columns each)
    widths: tuple[int, ...] | None = None

    def __init__(
        self,
        num: np.ndarray,
        miss: np.ndarray,
        onehot: np.ndarray | None = None,
        codes: np.ndarray | None = None,
        aug: np.ndarray | None = None,
        tame: np.ndarray | None = None,
        feats: np.ndarray | None = None,
        sq: np.ndarray | None = None,
        unorm: np.ndarray | None = None,
        widths: tuple[int, ...] | None = None,
    ) -> None:
        if codes is None:
            raise ValueError("Queries needs the category codes")
        if onehot is None and widths is None:
            raise ValueError("Queries needs the one-hot or the one-hot widths of the codes")
        self.num, self.miss, self.codes, self.aug, self.tame = num, miss, codes, aug, tame
        self.feats, self.sq, self.unorm, self.widths = feats, sq, unorm, widths
        self._onehot = onehot

    def __len__(self) -> int:
        return self.num.shape[0]

    @property
    def onehot(self) -> np.ndarray:
        """The whole one-hot, built from the codes on first use and kept."""
        if self._onehot is None:
            self._onehot = self._one_hot(self.codes)
        return self._onehot

    @property
    def n_onehot(self) -> int:
        """Columns of the one-hot (without building it)."""
        if self._onehot is not None or self.widths is None:
            return self.onehot.shape[1]
        return int(sum(self.widths)) + 2 * (self.codes.shape[1] - len(self.widths))

    def onehot_rows(self, rows: slice) -> np.ndarray:
        """The one-hot of ``rows``: a view of the whole when it is kept, else built for these rows only."""
        if self._onehot is not None:
            return self._onehot[rows]
        return self._one_hot(self.codes[rows])

    def _one_hot(self, codes: np.ndarray) -> np.ndarray:
        """float32 one-hot of ``codes`` (unseen, -1: all 0), then ``[ind, ~ind]`` of the indicator columns."""
        widths = self.widths or ()
        n, n_ind = codes.shape[0], codes.shape[1] - len(widths)
        offsets = np.concatenate([[0], np.cumsum(widths, dtype=np.int64)])
        out = np.zeros((n, int(offsets[-1]) + 2 * n_ind), dtype=np.float32)
        rows = np.arange(n)
        for j in range(len(widths)):
            ok = codes[:, j] >= 0
            out[rows[ok], offsets[j] + codes[ok, j]] = 1.0
        if n_ind:
            ind = codes[:, len(widths) :] == 1
            out[:, offsets[-1] : offsets[-1] + n_ind] = ind
            out[:, offsets[-1] + n_ind :] = ~ind
        return out

    def rows(self, rows: slice) -> "Queries":
        """These rows (views), with the one-hot only where it is kept."""
        sliced = {f.name: _rows_of(getattr(self, f.name), rows) for f in fields(self)}
        return Queries(**sliced, onehot=_rows_of(self._onehot, rows))


def _rows_of(value: object, rows: slice) -> object:
    return value[rows] if isinstance(value, np.ndarray) else value


@dataclass
class Block:
    """Fast evaluation of a query block: ``key`` orders reference rows like the distance.

    ``key - margin[i]`` is a lower bound of the exact key for row i (the search needs nothing
    else: a key may overestimate by at most ``margin`` and underestimate by any amount, at the
    cost of more exact evaluations; ``inf``: the row's keys carry no information, every
    reference row must be evaluated exactly); ``exact(rows, refs)`` returns exact float64
    distances for pairs (block-local row index, reference index). Keys are lowered below the
    exact key only for reference rows outside their encoder's range (an encoder fitted on another
    table); with the reference's own encoder ``|key - exact key| <= margin`` holds both ways, which
    the Monte Carlo attack's counting (``attacks.montecarlo``, its own encoder) relies on.
    """

    key: np.ndarray
    margin: np.ndarray
    exact: Callable[[np.ndarray, np.ndarray], np.ndarray]
    key_to_distance: Callable[[np.ndarray, np.ndarray], np.ndarray]
    distance_to_key: Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class PrunedBlock:
    """Exact evaluation of a query block for the categorical-pruning search.

    ``matches[i, j]`` is the exact number of categorical columns (and missing-value indicators)
    on which query row i and reference row j agree (a float32 GEMM of 0/1 one-hots: small
    integers, exact); the distance guarantees ``d(i, j) >= (n_cat - matches[i, j]) / n_columns``.
    ``exact(rows, refs, h)`` returns exact float64 distances of pairs given their mismatch
    counts ``h`` (float64 integers).
    """

    matches: np.ndarray
    exact: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class SymmetricPairs:
    """Pairs of reference rows ``(i, j)`` evaluated for both rows at once (:mod:`tabmem.neighbors.symmetric`).

    ``exact(i, j, h)`` returns the exact float64 distances ``(d(i, j), d(j, i))`` given the pairs'
    mismatch counts ``h``, each bit for bit what the k-nearest search computes for that query row;
    ``prepare(rows)``, when given, must first run once for every block of rows (per-row state, e.g.
    ``fang2024``'s spreads; blocks may run on threads), costing ``prepare_share`` of the whole search.
    """

    exact: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    prepare: Callable[[slice], None] | None = None
    prepare_share: float = 0.0


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
        num = list(self.schema_.numerical)
        self._nan_cols = clean[num].isna().any().to_numpy(dtype=bool) if num else np.zeros(0, dtype=bool)
        self.ref_ = self.prepare(clean, fitting=True)
        self._fit_extra()
        self._groups = None
        if type(self).pruned_block is not Distance.pruned_block:  # only distances that prune count matches
            self._lookup_setup()
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
        if indicators:
            ind = self._indicator_cols(miss)
            if ind.shape[1]:
                # two-state one-hot per nullable column (Queries.onehot): matches iff both missing or both present
                codes = np.concatenate([codes, ind.astype(np.int32)], axis=1)
        widths = tuple(len(enc.categories_[c]) for c in self.schema_.categorical)
        return Queries(num=num, miss=miss, codes=codes, widths=widths)  # the one-hot: built where it is read

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

    def pruned_block(self, q: Queries, rows: slice) -> PrunedBlock | None:
        """A :class:`PrunedBlock` for ``rows``, or ``None`` where the distance has no categorical bound."""
        return None

    def symmetric_pairs(self) -> "SymmetricPairs | None":
        """The reference table's pairs evaluated from both sides at once (:mod:`tabmem.neighbors.symmetric`);
        ``None`` where the distance does not offer it."""
        return None

    def _lookup_setup(self) -> None:
        """Match-count lookup tables: categorical columns packed in groups, one uint8 row per joint value.

        For a group of columns ``G`` and a joint query value ``v = (v_c)``, ``table_G[v, j] = sum_c
        [t_jc == v_c]`` (an unseen query category is its own value that matches nothing), so the
        match counts of a block are a sum of a few row gathers of uint8 tables: exact, and about
        twice as fast as the one-hot GEMM, whose float32 output is also four times larger. Groups
        are packed while the product of their cardinalities stays <= 1024 and the tables within
        128 MB; otherwise (or with more than 255 columns) the GEMM counts the matches.
        """
        self._groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        codes = self.ref_.codes
        n, n_cols = codes.shape
        if n_cols == 0 or n_cols > 255 or n == 0:
            return
        widths = [len(self.encoder_.categories_[c]) for c in self.schema_.categorical]
        widths += [2] * (n_cols - len(widths))  # missing-value indicators: codes 0/1
        card = np.maximum(codes.max(axis=0).astype(np.int64) + 1, widths)
        self._unseen_slot = card  # the joint value of a query category the reference never has
        slots = card + 1
        for limit in (1024, 256, 64, 16, 1):
            groups, cur, prod = [], [], 1
            for c in np.argsort(slots, kind="stable"):
                if cur and prod * slots[c] > limit:
                    groups.append(cur)
                    cur, prod = [], 1
                cur.append(int(c))
                prod *= int(slots[c])
            groups.append(cur)
            rows = sum(int(np.prod(slots[g])) for g in groups)
            if rows * n <= (128 << 20):
                break
        else:
            return
        built = []
        for g in groups:
            cols = np.array(g, dtype=np.int64)
            strides = np.cumprod(np.concatenate([[1], slots[cols][:-1]])).astype(np.int64)
            table = np.zeros((int(np.prod(slots[cols])), n), dtype=np.uint8)
            joint = np.arange(table.shape[0])
            for c, stride in zip(cols, strides):
                value = (joint // stride) % slots[c]  # the query's value in column c (card = unseen)
                table += (value[:, None] == codes[:, c][None, :]).astype(np.uint8)
            built.append((cols, strides, table))
        self._groups = built

    def _block_matches(self, q: Queries, rows: slice, start: int = 0) -> np.ndarray:
        """:meth:`_matches` of ``q``'s ``rows``: from their codes where the lookup tables are, else from
        their one-hot (built for these rows only unless ``q`` keeps it)."""
        if self._groups is not None:
            return self._matches(None, q.codes[rows], start)
        return self._matches(q.onehot_rows(rows), None, start)

    def _matches(self, onehot: np.ndarray | None, codes: np.ndarray | None = None, start: int = 0) -> np.ndarray:
        """Exact categorical match counts of query rows against every reference row from ``start`` on.

        uint8 from the lookup tables (:meth:`_lookup_setup`) given the rows' ``codes``; else the
        float32 GEMM of 0/1 one-hots (small integers, exact).
        """
        if self._groups is not None and codes is not None:
            n_rows, n = codes.shape[0], self.n_ref - start
            out = np.empty((n_rows, n), dtype=np.uint8)
            joints = []
            for cols, strides, _ in self._groups:
                sub = codes[:, cols]
                joints.append((np.where(sub >= 0, sub, self._unseen_slot[cols]) * strides).sum(axis=1))
            # a block larger than the cache is summed in column tiles that stay in it: each table row
            # is then read once, instead of every group's gather and sum streaming the whole block
            width = (
                n if n_rows * n <= _MATCH_BLOCK_BYTES else max(_MATCH_TILE_COLS, _MATCH_TILE_BYTES // max(n_rows, 1))
            )
            if width >= n and start == 0:  # whole, from the contiguous tables
                buf = np.empty_like(out) if len(self._groups) > 1 else out
                for g, ((_, _, table), joint) in enumerate(zip(self._groups, joints)):
                    np.take(table, joint, axis=0, out=out if g == 0 else buf)
                    if g:
                        np.add(out, buf, out=out)
                return out
            for j0 in range(0, n, width):
                j1 = min(j0 + width, n)
                part = out[:, j0:j1]
                for g, ((_, _, table), joint) in enumerate(zip(self._groups, joints)):
                    # fancy indexing reads the rows' segments; np.take would first copy the whole
                    # (non-contiguous) column slice of the table, up to 1024 rows of it
                    sub = table[joint, start + j0 : start + j1]
                    if g:
                        np.add(part, sub, out=part)
                    else:
                        part[...] = sub
            return out
        if onehot is None:
            raise ValueError("_matches: the one-hot is needed without lookup tables")
        out = np.empty((onehot.shape[0], self.n_ref - start), dtype=np.float32)
        sgemm(1.0, self.ref_.onehot[start:].T, onehot.T, beta=0.0, c=out.T, trans_a=1, trans_b=0, overwrite_c=1)
        return out

    def _subtract_matches(self, key: np.ndarray, onehot: np.ndarray) -> None:
        """``key -= onehot @ ref_onehot.T`` in place (one float32 GEMM with beta = 1)."""
        if onehot.shape[1]:
            sgemm(-1.0, self.ref_.onehot.T, onehot.T, beta=1.0, c=key.T, trans_a=1, trans_b=0, overwrite_c=1)

    @property
    def n_cat_total(self) -> int:
        return self.ref_.codes.shape[1]


#: name -> distance class; filled by :func:`register_distance`.
DISTANCES: Registry[type[Distance]] = Registry("distance", base=Distance)
register_distance = DISTANCES.register


@register_distance("fang2024")
class Fang2024Distance(Distance):
    """The memorization papers' distance (see module docstring).

    Fast pass, per query row ``i`` (``c`` is the reference mean; inside the value domain nothing
    below overflows or underflows, module docstring):

    1. ``ū = x - c`` and ``v̄ = t - c`` rounded to float64 (``|error| <= eps/2 |ū|`` per
       column); the float64 GEMM
       ``S̄ = |ū|^2 + |v̄|^2 - 2 ū.v̄`` has ``|S̄ - |ū - v̄|^2| <= E_i := (2k+3) eps (|ū_i| + V)^2``
       (``k + 2`` products, ``V = max_j |v̄_j|``; the precomputed squared norms add ``k eps``
       each; ``eps`` here is float64's machine epsilon, twice the unit roundoff, so the
       constants carry a factor 2 of slack);
    2. ``ē = sqrt(max(S̄, 0))``: from ``|ē^2 - y^2| <= E`` with ``y = |ū - v̄|`` follows
       ``|ē - y| <= min(sqrt(E), E / ē)``; the centring adds ``A_i = eps (|ū_i| + V)``, the
       float64 exact formula's own rounding is ``<= (k + 4) eps e`` and the float32 rounding of
       ``ē`` is ``<= eps32/2 ē`` (+ ``2^-149`` if subnormal). So every float32 ``e32`` is within
       ``D(e32) = min(sqrt(E), E/x_lo) + A + ((k+4) eps + eps32/2) x_hi + 2^-140`` of the exact
       value (``x_lo``/``x_hi`` bound ``ē`` from ``e32``; the absolute ``2^-140`` covers a
       float32 subnormal). ``x - D(x)`` and
       ``x + D(x)`` increase with ``x``, so the row minimum is certain as soon as the runner-up
       ``r`` satisfies ``r - D(r) > e32_min + D(e32_min)`` (likewise the maximum); otherwise
       every row in that band is evaluated exactly. The per-element bound keeps this band
       tight near the minimum, where ``e`` is small and the float32 rounding is tiny;
    3. ``key = e32 - sp32 * matches`` by one float32 GEMM with beta = 1 (``sp`` = exact max -
       min of the row, ``sp32`` its float32 rounding); at most ``n_cat`` products are nonzero,
       so the GEMM adds ``<= (n_cat + 2) eps32 (e_max + n_cat sp)`` and the rounding of ``sp32``
       ``<= n_cat eps32/2 sp``. ``margin`` is the sum of these bounds plus ``16 eps (e_max +
       (n_cat + 1) sp)`` for the float64 mapping between keys and distances.

    Inside the value domain ``|ū| <= 2e15``, so ``ē`` fits float32 and every query row is
    bounded by the fast pass (no exact fallback).
    """

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        raw = enc.numeric(clean)
        q = self._base_prepare(clean, raw, indicators=True)
        q.num = np.where(q.miss, enc.mean_, raw)  # raw values, NaN -> reference mean
        if fitting:
            self._k = q.num.shape[1]
            self._centre = np.asarray(enc.mean_, dtype=np.float64).copy()
        u = q.num - self._centre
        sq = np.einsum("ij,ij->i", u, u)
        q.unorm = np.sqrt(sq)
        if fitting:
            q.aug = np.column_stack([u, np.ones(len(u)), sq])
        else:
            q.aug = np.column_stack([-2.0 * u, sq, np.ones(len(u))])
        return q

    def _fit_extra(self) -> None:
        ref = self.ref_
        self._vmax = float(ref.unorm.max()) if len(ref) else 0.0  # type: ignore[union-attr]
        self._ref_aug_t = np.ascontiguousarray(ref.aug.T)  # type: ignore[union-attr]
        self._projection_setup()

    def _projection_setup(self) -> None:
        """The principal axis of the centred reference values, the reference rows ordered by their
        projection on it, and their largest distance from it (:meth:`_projected_extremes`; any unit
        axis keeps the search exact, the principal one makes it selective)."""
        v = self.ref_.num - self._centre
        axis = np.zeros(self._k)
        top = float(np.abs(v).max()) if v.size else 0.0
        if top > 0:
            w = v / top  # one scale for every column: the same axis, a Gram matrix far from overflow
            # a wide table (thousands of numerical columns) must not pay a k x k matrix and its O(k^3) eigh
            axis = np.linalg.eigh(w.T @ w)[1][:, -1] if self._k <= _EIGH_MAX_COLS else _power_axis(w)
            axis = axis / np.linalg.norm(axis)
        if not np.isfinite(axis).all() or not axis.any():
            axis = np.eye(1, self._k).ravel()
        s = v @ axis
        order = np.argsort(s, kind="stable")
        self._axis = axis
        self._proj_sorted = s[order]
        self._proj_cols = np.ascontiguousarray(self.ref_.num[order].T)  # (k, n): each column in that order
        self._perp_max = float(norm_rows(v - s[:, None] * axis[None, :]).max()) if len(v) else 0.0

    # ------------------------------------------------------------- exact values
    def _exact_e(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        """Exact ``e`` of pairs: the papers' norm of raw differences, summed column by column."""
        if self._k == 0:
            return np.zeros(len(q_idx))
        return norm_rows(q.num[q_idx] - self.ref_.num[r_idx], columns_in_order=True)

    def _bound(self, x: np.ndarray, big_e: np.ndarray, a: np.ndarray) -> np.ndarray:
        """``D(x)``: bound on ``|e32 - e_exact|`` for a float32 value ``x`` (class docstring)."""
        x_hi = x * (1 + EPS32) + 2.0**-149
        x_lo = np.maximum(x * (1 - EPS32) - 2.0**-149, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            near = np.minimum(np.sqrt(big_e), np.where(x_lo > 0, big_e / x_lo, np.inf))
        return near + a + ((self._k + 4) * EPS64 + 0.5 * EPS32) * x_hi + 2.0**-140

    def _numeric_e(self, b: np.ndarray, out: np.ndarray) -> None:
        """``out = float32(sqrt(max(S̄, 0)))`` in column tiles that stay in cache."""
        n_rows, n = out.shape
        width = max(256, _TILE_BYTES // (8 * max(n_rows, 1)))
        ref_t = self._ref_aug_t
        for j0 in range(0, n, width):
            j1 = min(j0 + width, n)
            s = b @ ref_t[:, j0:j1]
            np.maximum(s, 0.0, out=s)
            np.sqrt(s, out=s)
            out[:, j0:j1] = s

    def _bound64(self, x: np.ndarray, big_e: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Bound on ``|ē - e_exact|`` for a float64 ``ē = sqrt(max(S̄, 0))`` (no float32 rounding)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            near = np.minimum(np.sqrt(big_e), np.where(x > 0, big_e / x, np.inf))
        return near + a + (self._k + 4) * EPS64 * 1.01 * x + 2.0**-1000

    def _extremes(self, q: Queries, qi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact min and max over all reference rows of ``e`` per query row (``qi``: the rows' indices in ``q``).

        Bounded by the projection on the reference's principal axis (:meth:`_projected_extremes`);
        the rows it cannot bound cheaply take the full pass (:meth:`_dense_extremes`). Both give
        exactly ``min_j`` and ``max_j`` of :meth:`_exact_e`.
        """
        n_rows = len(qi)
        emin, emax = np.zeros(n_rows), np.zeros(n_rows)
        if not self._k or not n_rows:
            return emin, emax
        emin, emax, dense = self._projected_extremes(q, qi)
        if dense.any():
            emin[dense], emax[dense] = self._dense_extremes(q, qi[dense])
        return emin, emax

    def _projected_extremes(self, q: Queries, qi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact ``e`` extremes of the rows ``qi`` from few reference rows; ``dense``: the rows left to the full pass.

        With ``p`` the reference's principal axis (unit length up to rounding), ``s = p.(x - c)``
        and ``r = |(x - c) - s p|`` per row (``c`` the centre) and ``R`` the largest ``r`` of a
        reference row, every pair satisfies ``|s_x - s_t| <= e <= |s_x - s_t| + r_x + R`` (Cauchy-
        Schwarz and the triangle inequality). The exact ``e`` of a few reference rows near ``s_x``
        (and at both ends of the order by ``s``) give a minimum ``lo`` and maximum ``hi`` that are
        attained; then every row with ``e <= lo`` lies in the window ``|s_t - s_x| <= lo`` and
        every row with ``e >= hi`` in the tails ``|s_t - s_x| >= hi - r_x - R``, all contiguous in
        that order, and exactly those are evaluated. Each quantity computed here (``s``, ``r``,
        ``R``, the exact ``e``) is within ``4 (k + 4) eps (|u| + V + e)`` of its real value (``V``
        the largest ``|v|``), so widening the window and tails by ``64 (k + 4) eps (|u| + V + e)``
        keeps the proof; on tables whose numerical part is spread along one axis (Adult: the
        weights) a few dozen reference rows per query row remain. A row with more than
        ``_PROJECTED_MAX_SHARE`` of the reference rows left is marked ``dense``.
        """
        n, n_rows = self.n_ref, len(qi)
        ss = self._proj_sorted
        u = q.num[qi] - self._centre
        s = u @ self._axis
        r = norm_rows(u - s[:, None] * self._axis[None, :])
        scale = 1.01 * (q.unorm[qi] + self._vmax)  # type: ignore[index]
        rows = np.arange(n_rows)
        # attained extremes of a few rows: the neighbours of s_x in the order, and both ends of it
        w = min(_PROJECTED_SEEDS, n)
        near = np.clip(np.searchsorted(ss, s)[:, None] + np.arange(-(w // 2), w - w // 2)[None, :], 0, n - 1)
        x = q.num[qi]
        lo = self._sorted_e(x, w, near.ravel()).reshape(n_rows, w).min(axis=1)
        ends = np.concatenate([np.arange(w // 2 + 1), np.arange(n - w // 2 - 1, n)])
        hi = self._sorted_e(x, len(ends), np.tile(ends, n_rows)).reshape(n_rows, -1).max(axis=1)
        tol = 64 * (self._k + 4) * EPS64
        half = lo + tol * (scale + lo)
        win = (np.searchsorted(ss, s - half, side="left"), np.searchsorted(ss, s + half, side="right"))
        gap = hi - r - self._perp_max - tol * (scale + hi)
        some = gap > 0
        tail_lo = np.where(some, np.searchsorted(ss, s - gap, side="right"), n)  # [0, tail_lo): s_t <= s_x - gap
        tail_hi = np.where(some, np.searchsorted(ss, s + gap, side="left"), n)  # [tail_hi, n): s_t >= s_x + gap
        left = (win[1] - win[0]) + tail_lo + (n - tail_hi)
        dense = left > _PROJECTED_MAX_SHARE * n
        keep = rows[~dense]
        zero = np.zeros(len(keep), dtype=np.int64)
        lo[keep] = np.minimum(lo[keep], self._range_extreme(q, qi[keep], win[0][keep], win[1][keep], True))
        for a, b in ((zero, tail_lo[keep]), (tail_hi[keep], zero + n)):
            hi[keep] = np.maximum(hi[keep], self._range_extreme(q, qi[keep], a, b, False))
        return lo, hi, dense

    def _range_extreme(
        self, q: Queries, qi: np.ndarray, start: np.ndarray, stop: np.ndarray, smallest: bool
    ) -> np.ndarray:
        """Per row, the min (or max) exact ``e`` over the reference rows at positions ``[start, stop)``
        of the projection order (``inf`` / ``-inf`` where empty), at most ``_PROJECTED_PAIRS`` pairs at a time."""
        out = np.full(len(qi), np.inf if smallest else -np.inf)
        count = np.maximum(stop - start, 0)
        ends = np.cumsum(count)
        reduce = np.minimum if smallest else np.maximum
        a = 0
        while a < len(qi):
            base = int(ends[a - 1]) if a else 0
            b = max(a + 1, int(np.searchsorted(ends, base + _PROJECTED_PAIRS, side="right")))
            c = count[a:b]
            first = ends[a:b] - c - base  # each row's first pair in this chunk
            if ends[b - 1] > base:
                pos = np.arange(ends[b - 1] - base) + np.repeat(start[a:b] - first, c)
                some = np.flatnonzero(c)  # the rows' pairs are contiguous: one reduceat over the non-empty ones
                out[a + some] = reduce.reduceat(self._sorted_e(q.num[qi[a:b]], c, pos), first[some])
            a = b
        return out

    def _sorted_e(self, x: np.ndarray, count: np.ndarray | int, pos: np.ndarray) -> np.ndarray:
        """Exact ``e`` of the query rows ``x`` (raw values, each repeated ``count`` times) against the reference
        rows at positions ``pos`` of the projection order: :meth:`_exact_e`'s operations on the same values,
        column after column (the same bits), from the columns sorted by projection (read in order)."""
        total = np.empty(len(pos))
        for c in range(self._k):
            diff = np.repeat(x[:, c], count) - self._proj_cols[c, pos]
            if c:
                np.multiply(diff, diff, out=diff)
                total += diff
            else:
                np.multiply(diff, diff, out=total)
        return np.sqrt(total, out=total)

    def _dense_extremes(self, q: Queries, qi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact min and max of ``e`` over all reference rows for the rows ``qi``, by a full pass.

        One pass of float64 GEMM tiles (kept in cache) takes each tile's min and max per row; the
        best tile of each row is evaluated again for the arg-extreme and the runner-up inside it
        (the best of the other tiles is the runner-up outside). The extreme is certain when the
        runner-up is separated by the bound (class docstring, without the float32 terms),
        otherwise that row's band is evaluated exactly.
        """
        n = self.n_ref
        b = q.aug[qi]  # type: ignore[index]
        n_rows = b.shape[0]
        emin, emax = np.zeros(n_rows), np.zeros(n_rows)
        if self._k:
            # pass 1: each tile's min and max per row; best tile and the best of the other tiles
            lo1, lo2 = np.full(n_rows, np.inf), np.full(n_rows, np.inf)
            hi1, hi2 = np.full(n_rows, -np.inf), np.full(n_rows, -np.inf)
            lo_tile, hi_tile = np.zeros(n_rows, np.int64), np.zeros(n_rows, np.int64)
            width = max(256, _TILE_BYTES // (8 * max(n_rows, 1)))
            ref_t = self._ref_aug_t
            for t, j0 in enumerate(range(0, n, width)):
                s = b @ ref_t[:, j0 : j0 + width]
                v, w = s.min(axis=1), s.max(axis=1)
                better = v < lo1
                lo2 = np.minimum(lo2, np.where(better, lo1, v))
                lo_tile, lo1 = np.where(better, t, lo_tile), np.where(better, v, lo1)
                better = w > hi1
                hi2 = np.maximum(hi2, np.where(better, hi1, w))
                hi_tile, hi1 = np.where(better, t, hi_tile), np.where(better, w, hi1)
            # pass 2: only each row's best tile again, for the arg-extreme and the in-tile runner-up
            # (any evaluation of S̄ is within the bound, so mixing evaluations keeps the proof)
            lo_arg, hi_arg = np.zeros(n_rows, np.int64), np.zeros(n_rows, np.int64)
            for t in np.union1d(lo_tile, hi_tile):
                j0 = int(t) * width
                for smallest, tiles in ((True, lo_tile), (False, hi_tile)):
                    sel = np.flatnonzero(tiles == t)
                    if not sel.size:
                        continue
                    s = b[sel] @ ref_t[:, j0 : j0 + width]
                    rs = np.arange(sel.size)
                    arg = s.argmin(axis=1) if smallest else s.argmax(axis=1)
                    best = s[rs, arg]
                    s[rs, arg] = np.inf if smallest else -np.inf
                    if smallest:
                        lo_arg[sel], lo1[sel] = arg + j0, best
                        lo2[sel] = np.minimum(lo2[sel], s.min(axis=1))
                    else:
                        hi_arg[sel], hi1[sel] = arg + j0, best
                        hi2[sel] = np.maximum(hi2[sel], s.max(axis=1))
            un = q.unorm[qi]  # type: ignore[index]
            big_e = (2 * self._k + 3) * EPS64 * (un + self._vmax) ** 2 * 1.01
            a = EPS64 * (un + self._vmax)
            emin = self._exact_e(q, qi, lo_arg)
            emax = self._exact_e(q, qi, hi_arg)
            with np.errstate(invalid="ignore"):
                e = [np.sqrt(np.maximum(x, 0.0)) for x in (lo1, lo2, hi1, hi2)]
                unsure_lo = e[1] - self._bound64(e[1], big_e, a) <= e[0] + self._bound64(e[0], big_e, a)
                unsure_hi = e[3] + self._bound64(e[3], big_e, a) >= e[2] - self._bound64(e[2], big_e, a)
            unsure_lo &= np.isfinite(lo2)
            unsure_hi &= np.isfinite(hi2)
            for i in np.flatnonzero(unsure_lo | unsure_hi):
                row = np.sqrt(np.maximum(b[i] @ ref_t, 0.0))
                d_row = self._bound64(row, big_e[i], a[i])
                for smallest, unsure, best in ((True, unsure_lo, e[0]), (False, unsure_hi, e[2])):
                    if not unsure[i]:
                        continue
                    d_best = self._bound64(best[i : i + 1], big_e[i], a[i])[0]
                    if smallest:
                        band = np.flatnonzero(row - d_row <= best[i] + d_best)
                    else:
                        band = np.flatnonzero(row + d_row >= best[i] - d_best)
                    vals = self._exact_e(q, np.full(len(band), qi[i]), band)
                    if smallest:
                        emin[i] = vals.min()
                    else:
                        emax[i] = vals.max()
        return emin, emax

    def symmetric_pairs(self) -> SymmetricPairs | None:
        """Each row's distances are normalised by its own ``e`` extremes over all reference rows:
        ``prepare`` finds them (the same pass as the search's), then a pair's ``e`` is computed once
        (``(a - b)^2 = (b - a)^2``, columns summed in one order) and normalised for each side."""
        ref = self.ref_
        u = ref.aug[:, : self._k]  # type: ignore[index]
        sq = ref.aug[:, self._k + 1]  # type: ignore[index]
        q = ref.rows(slice(None))  # views of the reference's arrays (its one-hot only if it is kept)
        q.aug = np.column_stack([-2.0 * u, sq, np.ones(len(u))])  # the query layout of prepare()
        n = len(ref)
        emin, emax = np.zeros(n), np.zeros(n)
        m = float(self.n_columns_)

        def prepare(rows: slice) -> None:
            emin[rows], emax[rows] = self._extremes(q, np.arange(rows.start, rows.stop))

        def exact(i: np.ndarray, j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            e = self._exact_e(q, i, j)
            out = []
            for a in (i, j):
                spread = emax[a] - emin[a]
                out.append(((e - emin[a]) / np.where(spread > 0, spread, 1.0) + h) / m)
            return out[0], out[1]

        return SymmetricPairs(exact=exact, prepare=prepare, prepare_share=0.13)  # measured at 32k (Adult)

    def pruned_block(self, q: Queries, rows: slice) -> PrunedBlock | None:
        if q.n_onehot == 0:
            return None
        n_rows = q.codes[rows].shape[0]
        qi = np.arange(rows.start, rows.start + n_rows)
        emin, emax = self._extremes(q, qi)
        spread = emax - emin
        sp = np.where(spread > 0, spread, 1.0)
        m = float(self.n_columns_)

        def exact(local_rows: np.ndarray, refs: np.ndarray, h: np.ndarray) -> np.ndarray:
            e_ex = self._exact_e(q, qi[local_rows], refs)
            return ((e_ex - emin[local_rows]) / sp[local_rows] + h) / m

        return PrunedBlock(matches=self._block_matches(q, rows), exact=exact)

    def block(self, q: Queries, rows: slice) -> Block:
        n = self.n_ref
        b = q.aug[rows]  # type: ignore[index]
        n_rows = b.shape[0]
        qi = np.arange(rows.start, rows.start + n_rows)
        r = np.arange(n_rows)
        key = np.empty((n_rows, n), dtype=np.float32)
        if self._k:
            self._numeric_e(b, key)
            un = q.unorm[rows]  # type: ignore[index]
            big_e = (2 * self._k + 3) * EPS64 * (un + self._vmax) ** 2 * 1.01
            a = EPS64 * (un + self._vmax)
            jmin = key.argmin(axis=1)
            jmax = key.argmax(axis=1)
            emax32 = key[r, jmax].astype(np.float64)
            x_hi = emax32 * (1 + EPS32) + 2.0**-149
            delta = np.sqrt(big_e) + a + ((self._k + 4) * EPS64 + 0.5 * EPS32) * x_hi + 2.0**-140
            emin = self._exact_extreme(q, qi, key, big_e, a, smallest=True, arg=jmin)
            emax = self._exact_extreme(q, qi, key, big_e, a, smallest=False, arg=jmax)
        else:
            key.fill(0.0)
            emin, emax, delta = np.zeros(n_rows), np.zeros(n_rows), np.zeros(n_rows)
        spread = emax - emin
        sp = np.where(spread > 0, spread, 1.0)
        # key = e - spread * (categorical matches): the query row's d*M times spread, shifted,
        # so one fused GEMM (beta = 1) adds the categorical part; a zero spread counts as 1
        if q.n_onehot:
            self._subtract_matches(key, q.onehot_rows(rows) * sp.astype(np.float32)[:, None])
        n_cat = float(self.n_cat_total)
        margin = (
            delta
            + (n_cat + 2.0) * EPS32 * (emax + n_cat * sp) * 1.01
            + n_cat * EPS32 * sp
            + 16 * EPS64 * (np.abs(emax) + (n_cat + 1.0) * sp)
        )
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
        big_e: np.ndarray,
        a: np.ndarray,
        *,
        smallest: bool,
        arg: np.ndarray,
    ) -> np.ndarray:
        """Exact min (or max) over all reference rows of the numerical distance, per query row.

        The approximate arg-extreme is recomputed exactly; only rows whose runner-up cannot be
        separated from it by the per-element bound (class docstring) are checked against every
        row in that band.
        """
        r = np.arange(e.shape[0])
        best = e[r, arg].astype(np.float64)
        saved = e[r, arg].copy()
        e[r, arg] = np.inf if smallest else -np.inf
        runner = (e.min(axis=1) if smallest else e.max(axis=1)).astype(np.float64)
        e[r, arg] = saved
        out = self._exact_e(q, qi, arg)
        d_best = self._bound(best, big_e, a)
        with np.errstate(invalid="ignore"):
            if smallest:
                unsure = runner - self._bound(runner, big_e, a) <= best + d_best
            else:
                unsure = runner + self._bound(runner, big_e, a) >= best - d_best
        unsure &= np.isfinite(runner)
        for i in np.flatnonzero(unsure):
            row = e[i].astype(np.float64)
            d_row = self._bound(row, big_e[i], a[i])
            if smallest:
                band = np.flatnonzero(row - d_row <= best[i] + d_best[i])
            else:
                band = np.flatnonzero(row + d_row >= best[i] - d_best[i])
            vals = self._exact_e(q, np.full(len(band), qi[i]), band)
            out[i] = vals.min() if smallest else vals.max()
        return out

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError("fang2024 normalises per query over all reference rows; use the brute-force helper")


@register_distance("gower")
class GowerDistance(Distance):
    """Range-scaled L1 on numericals (clipped at 1) plus categorical mismatches, over M columns.

    The fast pass sums ``min(|a - b|, 1)`` column by column in float32 on cache-sized tiles of
    reference rows (each term is at most 1, so the float32 sum of ``k`` terms and the GEMM that
    subtracts the ``n_cat`` matches are within ``(4k + 4) eps32 (k + n_cat)`` of the exact key).
    Values are range-scaled in float64 first, so a query far outside the reference range is
    simply clipped at 1.
    """

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        raw = enc.numeric(clean)
        if fitting:
            self._range = np.where(enc.range_ > 0, enc.range_, np.inf)  # constant column: contributes 0
        scaled = (raw - enc.min_) / self._range
        q = self._base_prepare(clean, scaled, indicators=False)
        # the fast pass sees values clamped to [-1, 2]: |a - b| clipped at 1 is unchanged when one side
        # lies in [0, 1] and only shrinks otherwise (keys stay lower bounds), and no float32 overflow
        q.aug = np.clip(np.where(q.miss, 0.0, scaled), -1.0, 2.0).astype(np.float32)
        return q

    def _fit_extra(self) -> None:
        self._ref_aug_t = np.ascontiguousarray(self.ref_.aug.T)  # type: ignore[union-attr]
        self._ref_miss_t = np.ascontiguousarray(self.ref_.miss.T)
        self._ref_has_nan = self.ref_.miss.any(axis=0)
        # an encoder fitted on another table can put reference values outside [0, 1]: clip those columns too
        aug = self.ref_.aug  # type: ignore[union-attr]
        self._ref_outside = (aug.min(axis=0) < 0) | (aug.max(axis=0) > 1) if len(aug) else np.zeros(aug.shape[1], bool)

    def block(self, q: Queries, rows: slice) -> Block:
        ref_t = self._ref_aug_t
        b = q.aug[rows]  # type: ignore[index]
        n_rows, k = b.shape
        n = self.n_ref
        key = np.empty((n_rows, n), dtype=np.float32)
        qmiss = q.miss[rows]
        clip = [bool(self._ref_outside[c] or (b[:, c].min() < 0) or (b[:, c].max() > 1)) for c in range(k)]
        nan_cols = [bool(qmiss[:, c].any() or self._ref_has_nan[c]) for c in range(k)]
        cols = [np.ascontiguousarray(b[:, c : c + 1]) for c in range(k)]
        width = max(256, (_TILE_BYTES // 2) // (4 * max(n_rows, 1)))
        tmp_full = np.empty((n_rows, min(width, n)), dtype=np.float32)
        onehot = q.onehot_rows(rows)
        for j0 in range(0, n, width):
            j1 = min(j0 + width, n)
            kt = np.zeros((n_rows, j1 - j0), dtype=np.float32)
            if onehot.shape[1]:  # kt = -(categorical matches), one GEMM per tile
                sgemm(-1.0, self.ref_.onehot[j0:j1].T, onehot.T, beta=0.0, c=kt.T, trans_a=1, overwrite_c=1)
            tt = tmp_full[:, : j1 - j0]
            for c in range(k):
                np.subtract(cols[c], ref_t[c, j0:j1], out=tt)
                np.abs(tt, out=tt)
                if clip[c]:
                    np.minimum(tt, 1.0, out=tt)
                if nan_cols[c]:
                    rm = self._ref_miss_t[c, j0:j1]
                    xor = qmiss[:, c][:, None] != rm[None, :]
                    either = qmiss[:, c][:, None] | rm[None, :]
                    tt[either] = xor[either]
                kt += tt
            key[:, j0:j1] = kt
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

    def pruned_block(self, q: Queries, rows: slice) -> PrunedBlock | None:
        if q.n_onehot == 0:
            return None
        start = rows.start

        def exact(local_rows: np.ndarray, refs: np.ndarray, h: np.ndarray) -> np.ndarray:
            return self._exact_given(q, local_rows + start, refs, h)

        return PrunedBlock(matches=self._block_matches(q, rows), exact=exact)

    def symmetric_pairs(self) -> "SymmetricPairs | None":
        # |a - t| = |t - a| and the missing-value rule are symmetric, the columns summed in one order:
        # d(i, j) = d(j, i) bit for bit, evaluated once
        def exact(i: np.ndarray, j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            d = self._exact_given(self.ref_, i, j, h)
            return d, d

        return SymmetricPairs(exact=exact)

    def _exact_given(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray, h: np.ndarray) -> np.ndarray:
        a, t = q.num[q_idx], self.ref_.num[r_idx]
        with np.errstate(invalid="ignore"):
            part = np.minimum(np.abs(a - t), 1.0)
        am, tm = np.isnan(a), np.isnan(t)
        part = np.where(am | tm, (am != tm).astype(np.float64), part)
        return (part.sum(axis=1) + h) / self.n_columns_

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        return self._exact_given(q, q_idx, r_idx, self._mismatches(q, q_idx, r_idx))


@register_distance("l2")
class L2Distance(Distance):
    """Euclidean distance on standardised numericals + one-hot categoricals / sqrt(2).

    Query rows with a feature beyond ``2^40`` in magnitude (values far outside the reference's
    spread, which the value domain allows: up to about ``1e136``) would overflow or swamp the
    float32 product: they are evaluated exactly against
    every reference row instead (``Queries.tame``).
    """

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        std = np.where(enc.std_ > 0, enc.std_, 1.0)
        raw = enc.numeric(clean)
        z = (raw - enc.mean_) / std
        q = self._base_prepare(clean, z, indicators=True)
        q.num = np.where(q.miss, 0.0, z)
        feats = np.concatenate([q.num, q.onehot.astype(np.float64) / np.sqrt(2.0)], axis=1)
        absmax = np.abs(feats).max(axis=1) if feats.shape[1] else np.zeros(len(feats))
        q.tame = absmax <= _L2_TAME
        fast = np.where(q.tame[:, None], feats, 0.0)
        sq = np.einsum("ij,ij->i", fast, fast)
        q.feats = feats
        if fitting:
            q.aug = np.column_stack([fast, np.ones(len(feats)), sq]).astype(np.float32)
        else:
            q.aug = np.column_stack([-2.0 * fast, sq, np.ones(len(feats))]).astype(np.float32)
        q.sq = sq
        return q

    def _fit_extra(self) -> None:
        ref = self.ref_
        self._ref_sq_max = float(ref.sq.max()) if len(ref) else 0.0  # type: ignore[union-attr]
        self._dim = ref.aug.shape[1]  # type: ignore[union-attr]
        # reference rows too far out for the fast pass (possible with an encoder fitted on another
        # table): their keys become the lower bound (|r|_inf - |q|_inf)^2 for tame queries
        self._wild_refs = np.flatnonzero(~ref.tame)  # type: ignore[operator]
        feats = ref.feats[self._wild_refs]  # type: ignore[index]
        self._wild_abs = np.abs(feats).max(axis=1) if feats.shape[1] else np.zeros(0)

    def block(self, q: Queries, rows: slice) -> Block:
        key = q.aug[rows] @ self.ref_.aug.T  # type: ignore[index,union-attr]  # squared distances (float32)
        err = (2 * self._dim + 8) * EPS32 * (q.sq[rows] + self._ref_sq_max + 1.0)  # type: ignore[index]
        if q.tame is not None:
            wild = ~q.tame[rows]
            if wild.any():
                err = np.where(wild, np.inf, err)
                key[wild] = 0.0
        if len(self._wild_refs):
            feats = q.feats[rows]  # type: ignore[index]
            q_abs = np.abs(feats).max(axis=1) if feats.shape[1] else np.zeros(len(feats))
            gap = np.maximum(self._wild_abs[None, :] - q_abs[:, None], 0.0)
            key[:, self._wild_refs] = np.minimum(gap * gap * (1 - 1e-6), 1e38)  # below float32's max
        qi = np.arange(rows.start, rows.start + key.shape[0])

        def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
            return self.pair_distances(q, qi[local_rows], refs)

        def key_to_distance(local_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
            return np.sqrt(np.maximum(keys.astype(np.float64), 0.0))

        def distance_to_key(local_rows: np.ndarray, d: np.ndarray) -> np.ndarray:
            return d * d

        return Block(key=key, margin=err, exact=exact, key_to_distance=key_to_distance, distance_to_key=distance_to_key)

    def pair_distances(self, q: Queries, q_idx: np.ndarray, r_idx: np.ndarray) -> np.ndarray:
        a, t = q.feats[q_idx], self.ref_.feats[r_idx]  # type: ignore[index]
        return norm_rows(a - t)
