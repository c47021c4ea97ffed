"""Singling out (WP29): predicates built from the synthetic table that isolate exactly one training row.

The attacker writes queries that match exactly one row of the (deduplicated) synthetic table and
wins an attack when the query also matches exactly one (deduplicated) training row; the same
queries on the control table measure how often that happens by chance for real rows never
trained on. As in anonymeter (Giomi et al., PoPETs 2023):

* univariate queries: per column, ``is null`` when one value is missing, ``<= min`` and
  ``>= max`` for numerical columns and ``== v`` for every value held by one row; shuffled, the
  first ``n_attacks`` distinct ones that single out a synthetic row are kept;
* multivariate queries: a random synthetic row and ``n_cols`` random columns; a categorical
  value gives ``==``, a numerical one ``>=`` above the column's median and ``<=`` otherwise
  (more extreme values single out more often), a missing one ``is null``; drawn in batches
  until ``n_attacks`` distinct singling-out queries are found or ``max_attempts`` are spent;
* the baseline attacker draws ``n_attacks`` random queries on as many random columns, each a
  random synthetic value with a random operator (``==``/``!=`` for categoricals, any comparison
  for numericals), without checking them against the synthetic table;
* rates are over the requested ``n_attacks``; when the control and training tables differ in
  size the control count is scaled by ``m(n_train) / m(n_control)``, ``m`` the singling-out
  model ``norm · P(n, w_eff)`` fitted to the successes on control subsamples
  (Cohen & Nissim's ``P(n, w) = ∫ n w (1 - w)^(n-1)``).

Queries are evaluated without a query engine: every column is sorted once (numerical values)
or grouped by code (categorical values), so a term's matching rows are a slice found by
``searchsorted``; a conjunction is checked only on the rows of its most selective term.
A missing value matches no comparison, only ``is null``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema

__all__ = ["Coded", "Term", "count_queries", "multivariate_queries", "random_queries", "univariate_queries"]

#: a query term: (column position, operator, value); operators eq ne lt le gt ge null notnull
Term = tuple[int, str, float]
Query = tuple[Term, ...]

_NUM_OPS = ("eq", "ne", "gt", "lt", "ge", "le")
_CAT_OPS = ("eq", "ne")


class Coded:
    """A table as numbers: float64 numericals (NaN missing), int categorical codes (-1 missing).

    Categorical codes come from a vocabulary shared by the tables compared, so a query written
    on one table reads the same on another. Sort orders and group boundaries are built once.
    """

    def __init__(self, frame: pd.DataFrame, schema: Schema, vocab: dict[str, dict[str, int]]) -> None:
        self.columns = list(schema.columns)
        self.numeric = [c in schema.numerical for c in self.columns]
        self.n = len(frame)
        self.values: list[np.ndarray] = []
        self.order: list[np.ndarray] = []
        self.sorted: list[np.ndarray] = []  # numerical: sorted non-missing values; categorical: group starts
        self.n_valid: list[int] = []
        for col, is_num in zip(self.columns, self.numeric):
            if is_num:
                v = frame[col].to_numpy(dtype=np.float64, na_value=np.nan)
                order = np.argsort(v, kind="stable")  # NaN last
                n_valid = int(self.n - np.isnan(v).sum())
                self.sorted.append(v[order[:n_valid]])
            else:
                mapping = vocab[col]
                s = frame[col].astype(object)
                missing = s.isna().to_numpy() | (s == "<NA>").to_numpy()
                v = s.map(mapping).fillna(-1).to_numpy(dtype=np.int64, copy=True)
                v[missing] = -1
                order = np.argsort(v, kind="stable")  # missing (-1) first
                starts = np.zeros(len(mapping) + 2, dtype=np.int64)
                np.cumsum(np.bincount(v + 1, minlength=len(mapping) + 1), out=starts[1:])
                self.sorted.append(starts)
                n_valid = int(self.n - missing.sum())
            self.values.append(v)
            self.order.append(order)
            self.n_valid.append(n_valid)

    # --------------------------------------------------------------- one term
    def _span(self, term: Term) -> tuple[int, int, int, int]:
        """Matching rows of ``term`` as up to two slices ``[a, b) + [c, d)`` of the column's order."""
        j, op, value = term
        if self.numeric[j]:
            s, nv = self.sorted[j], self.n_valid[j]
            if op == "null":
                return nv, self.n, 0, 0
            if op == "notnull":
                return 0, nv, 0, 0
            lo = int(np.searchsorted(s, value, "left"))
            hi = int(np.searchsorted(s, value, "right"))
            return {
                "eq": (lo, hi, 0, 0),
                "ne": (0, lo, hi, nv),
                "lt": (0, lo, 0, 0),
                "le": (0, hi, 0, 0),
                "gt": (hi, nv, 0, 0),
                "ge": (lo, nv, 0, 0),
            }[op]
        starts = self.sorted[j]
        missing_end = int(starts[1])
        if op == "null":
            return 0, missing_end, 0, 0
        if op == "notnull":
            return missing_end, self.n, 0, 0
        code = int(value)
        if code < 0:  # a value this table's vocabulary lacks: eq matches nothing
            return (0, 0, 0, 0) if op == "eq" else (missing_end, self.n, 0, 0)
        lo, hi = int(starts[code + 1]), int(starts[code + 2])
        return (lo, hi, 0, 0) if op == "eq" else (missing_end, lo, hi, self.n)

    def _holds(self, term: Term, rows: np.ndarray) -> np.ndarray:
        """Whether ``term`` holds on ``rows``."""
        j, op, value = term
        v = self.values[j][rows]
        if self.numeric[j]:
            if op == "null":
                return np.isnan(v)
            if op == "notnull":
                return ~np.isnan(v)
            if op == "ne":
                return ~np.isnan(v) & (v != value)
            return {"eq": np.equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}[op](
                v, value
            )
        if op == "null":
            return v < 0
        if op == "notnull":
            return v >= 0
        if op == "eq":
            return v == int(value)
        return (v >= 0) & (v != int(value))

    def rows(self, query: Query) -> np.ndarray:
        """Positions of the rows matching every term of ``query`` (sorted)."""
        spans = [self._span(t) for t in query]
        sizes = [(b - a) + (d - c) for a, b, c, d in spans]
        best = int(np.argmin(sizes))
        a, b, c, d = spans[best]
        order = self.order[query[best][0]]
        cand = order[a:b] if c == d else np.concatenate([order[a:b], order[c:d]])
        for i, t in enumerate(query):
            if i != best and len(cand):
                cand = cand[self._holds(t, cand)]
        return np.sort(cand)

    def count(self, query: Query) -> int:
        """Number of rows matching ``query``."""
        if len(query) == 1:
            a, b, c, d = self._span(query[0])
            return (b - a) + (d - c)
        spans = [self._span(t) for t in query]
        sizes = [(b - a) + (d - c) for a, b, c, d in spans]
        if min(sizes) == 0:
            return 0
        return len(self.rows(query))


def count_queries(table: Coded, queries: list[Query]) -> np.ndarray:
    """How many rows of ``table`` each query matches."""
    return np.fromiter((table.count(q) for q in queries), dtype=np.int64, count=len(queries))


def vocabulary(frames: list[pd.DataFrame], schema: Schema) -> dict[str, dict[str, int]]:
    """One code per categorical value over all ``frames`` (sorted values: codes do not depend on row order)."""
    vocab: dict[str, dict[str, int]] = {}
    for col in schema.categorical:
        values: set[str] = set()
        for f in frames:
            values.update(v for v in f[col].dropna().astype(str).unique() if v != "<NA>")
        vocab[col] = {v: i for i, v in enumerate(sorted(values))}
    return vocab


def _singling_out(table: Coded, candidates: list[Query], n_queries: int, seen: set[Query], out: list[Query]) -> None:
    """Append to ``out`` the candidates that match exactly one row of ``table`` and are new, up to ``n_queries``."""
    for q in candidates:
        if len(out) >= n_queries:
            return
        key = tuple(sorted(q))
        if key in seen or table.count(q) != 1:
            continue
        seen.add(key)
        out.append(q)


def univariate_queries(syn: Coded, n_queries: int, rng: np.random.Generator) -> list[Query]:
    """Queries on one rare attribute that single out a synthetic row (module docstring)."""
    candidates: list[Query] = []
    for j, is_num in enumerate(syn.numeric):
        v = syn.values[j]
        n_missing = syn.n - syn.n_valid[j]
        if n_missing == 1:
            candidates.append(((j, "null", 0.0),))
        if is_num:
            s = syn.sorted[j]
            if len(s):
                candidates.append(((j, "le", float(s[0])),))
                candidates.append(((j, "ge", float(s[-1])),))
                uniq, counts = np.unique(s, return_counts=True)
                candidates.extend(((j, "eq", float(x)),) for x in uniq[counts == 1])
        else:
            counts = np.bincount(v[v >= 0], minlength=len(syn.sorted[j]) - 2)
            candidates.extend(((j, "eq", float(c)),) for c in np.flatnonzero(counts == 1))
    order = rng.permutation(len(candidates))
    out: list[Query] = []
    _singling_out(syn, [candidates[i] for i in order], n_queries, set(), out)
    return out


def multivariate_queries(
    syn: Coded, n_queries: int, n_cols: int, rng: np.random.Generator, *, max_attempts: int, batch_size: int = 1000
) -> tuple[list[Query], int]:
    """Queries on ``n_cols`` attributes of random synthetic rows that single out one (module docstring).

    Returns the queries and the number of attempts spent.
    """
    n_cols = min(n_cols, len(syn.columns))
    medians = [float(np.median(s)) if is_num and len(s) else np.nan for s, is_num in zip(syn.sorted, syn.numeric)]
    out: list[Query] = []
    seen: set[Query] = set()
    attempts = 0
    n_columns = len(syn.columns)
    while len(out) < n_queries and attempts < max_attempts and syn.n > 0:
        size = min(batch_size, max_attempts - attempts)
        rows = rng.integers(0, syn.n, size=size)
        cols = np.argsort(rng.random((size, n_columns)), axis=1)[:, :n_cols]
        batch: list[Query] = []
        for r, cs in zip(rows.tolist(), np.sort(cols, axis=1).tolist()):
            terms = []
            for j in cs:
                v = syn.values[j][r]
                if syn.numeric[j]:
                    if np.isnan(v):
                        terms.append((j, "null", 0.0))
                    else:
                        terms.append((j, "ge" if v > medians[j] else "le", float(v)))
                elif v < 0:
                    terms.append((j, "null", 0.0))
                else:
                    terms.append((j, "eq", float(v)))
            batch.append(tuple(terms))
        _singling_out(syn, batch, n_queries, seen, out)
        attempts += size
    return out, attempts


def random_queries(syn: Coded, n_queries: int, n_cols: int, rng: np.random.Generator) -> list[Query]:
    """The baseline attacker's queries: random columns, random synthetic values, random operators."""
    n_cols = min(n_cols, len(syn.columns))
    uniques = []
    for j, is_num in enumerate(syn.numeric):
        v = syn.values[j]
        u = np.unique(v[~np.isnan(v)]) if is_num else np.unique(v[v >= 0]).astype(np.float64)
        has_missing = syn.n_valid[j] < syn.n
        uniques.append((u, has_missing))
    out: list[Query] = []
    n_columns = len(syn.columns)
    for _ in range(n_queries):
        cols = np.sort(rng.choice(n_columns, size=n_cols, replace=False))
        terms = []
        for j in cols.tolist():
            u, has_missing = uniques[j]
            k = int(rng.integers(0, len(u) + int(has_missing)))
            ops = _NUM_OPS if syn.numeric[j] else _CAT_OPS
            op = ops[int(rng.integers(0, len(ops)))]
            if k == len(u):  # the missing value: eq -> is null, anything else -> is not null
                terms.append((j, "null" if op == "eq" else "notnull", 0.0))
            else:
                terms.append((j, op, float(u[k])))
        out.append(tuple(terms))
    return out


def _p_integral(n: np.ndarray | float, w: float) -> np.ndarray | float:
    """``∫_0^w n x (1 - x)^(n-1) dx``: the chance that a query of weight up to ``w`` singles out among ``n`` rows."""
    return (1.0 - (n * w + 1.0) * (1.0 - w) ** n) / (n + 1.0)


def control_correction(
    control: Coded,
    queries: list[Query],
    n_train: int,
    rng: np.random.Generator,
    *,
    n_sizes: int = 10,
    n_repeat: int = 5,
) -> float:
    """``m(n_train) / m(n_control)``: how many more (or fewer) queries would single out a control of the training size.

    ``m(n) = norm · P(n, w_eff)`` is fitted (least squares) to the singling-out counts on random
    subsamples of the control table (``n_sizes`` sizes from ``min(1000, n/2)`` to ``n``, ``n_repeat``
    each; anonymeter starts at ``min(1000, n)``, which leaves a control of up to 1,000 rows a single
    size to fit); a failed fit gives 1.
    """
    from scipy.optimize import curve_fit

    n = control.n
    if n == 0 or not queries:
        return 1.0
    sizes_l: list[int] = []
    successes: list[int] = []
    matched = [control.rows(q) for q in queries]
    qid = np.repeat(np.arange(len(queries)), [len(m) for m in matched])
    rows = np.concatenate(matched) if matched else np.zeros(0, np.int64)
    for size in np.linspace(max(min(1000, n // 2), 1), n, n_sizes).astype(int).tolist():
        for _ in range(n_repeat):
            keep = np.zeros(n, dtype=np.float64)
            keep[rng.choice(n, size=size, replace=False)] = 1.0
            counts = np.bincount(qid, weights=keep[rows], minlength=len(queries))
            sizes_l.append(size)
            successes.append(int((counts == 1).sum()))
    x = np.asarray(sizes_l, dtype=np.float64)
    y = np.asarray(successes, dtype=np.float64)

    def model(size, w_eff, scale):
        return scale * _p_integral(size, w_eff)

    w0 = 1.0 / x.max()
    p0 = (w0, 1.0 / _p_integral(x.max(), w0))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            popt, _ = curve_fit(model, x, y, p0=p0, bounds=(0, (1, np.inf)))
        num, den = model(float(n_train), *popt), model(float(n), *popt)
        if not np.isfinite(num / den) or den <= 0:
            return 1.0
        return float(num / den)
    except (RuntimeError, ValueError):
        return 1.0
