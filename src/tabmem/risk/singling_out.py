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

Queries are evaluated in batches without a query engine: every column (numerical values,
categorical codes) is sorted once, so a term's matching rows are one or two slices of the sort
order found by ``searchsorted``; a conjunction is checked only on the rows of its most selective
term, and "matches exactly one row" first on that term's first 64 rows (two matches there
settle it). A missing value matches no comparison, only ``is null``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema

__all__ = [
    "Coded",
    "Term",
    "control_correction",
    "count_queries",
    "count_singling_out",
    "multivariate_queries",
    "random_queries",
    "univariate_queries",
    "vocabulary",
]

#: a query term: (column position, operator, value); operators eq ne lt le gt ge null notnull
Term = tuple[int, str, float]
Query = tuple[Term, ...]

_NUM_OPS = ("eq", "ne", "gt", "lt", "ge", "le")
_CAT_OPS = ("eq", "ne")


_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "null", "notnull")
_OP_CODE = {op: i for i, op in enumerate(_OPS)}
#: candidate rows checked per chunk of queries (bounds the memory of a batch evaluation)
_CHUNK_ROWS = 4_000_000


class Coded:
    """A table as one float64 matrix: numerical values, categorical codes; NaN for a missing value.

    Categorical codes come from a vocabulary shared by the tables compared, so a query written
    on one table reads the same on another. Each column is sorted once (missing values last):
    every operator's matching rows are then one or two slices of the column's sort order.
    """

    def __init__(self, frame: pd.DataFrame, schema: Schema, vocab: dict[str, dict[str, int]]) -> None:
        self.columns = list(schema.columns)
        self.numeric = [c in schema.numerical for c in self.columns]
        self.n = len(frame)
        m = len(self.columns)
        self.values = np.empty((self.n, m), dtype=np.float64)
        for j, (col, is_num) in enumerate(zip(self.columns, self.numeric)):
            if is_num:
                self.values[:, j] = frame[col].to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                # a missing value ("<NA>" after validation, or NaN) is in no vocabulary: NaN
                self.values[:, j] = (
                    frame[col].astype(object).map(vocab[col]).to_numpy(dtype=np.float64, na_value=np.nan)
                )
        self.order = np.argsort(self.values, axis=0, kind="stable").T.copy()  # (m, n), NaN last
        self.sorted = np.take_along_axis(self.values, self.order.T, axis=0).T.copy()
        self.n_valid = (~np.isnan(self.values)).sum(axis=0).astype(np.int64)

    def column_values(self, j: int) -> np.ndarray:
        """Column ``j``'s values in row order."""
        return self.values[:, j]

    # ---------------------------------------------------------------- batches
    def _spans(self, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, ...]:
        """Matching rows of each term as two slices ``[a, b) + [c, d)`` of its column's sort order."""
        lo = np.zeros(len(cols), dtype=np.int64)
        hi = np.zeros(len(cols), dtype=np.int64)
        for j in np.unique(cols).tolist():
            sel = cols == j
            s = self.sorted[j, : self.n_valid[j]]
            lo[sel] = np.searchsorted(s, vals[sel], "left")
            hi[sel] = np.searchsorted(s, vals[sel], "right")
        nv = self.n_valid[cols]
        zero = np.zeros_like(lo)
        full = np.full_like(lo, self.n)
        table = {
            "eq": (lo, hi, zero, zero),
            "ne": (zero, lo, hi, nv),
            "lt": (zero, lo, zero, zero),
            "le": (zero, hi, zero, zero),
            "gt": (hi, nv, zero, zero),
            "ge": (lo, nv, zero, zero),
            "null": (nv, full, zero, zero),
            "notnull": (zero, nv, zero, zero),
        }
        out = [np.zeros_like(lo) for _ in range(4)]
        for op, parts in table.items():
            sel = ops == _OP_CODE[op]
            if sel.any():
                for o, p in zip(out, parts):
                    o[sel] = p[sel]
        return tuple(out)

    @staticmethod
    def _holds(v: np.ndarray, ops: np.ndarray, vals: np.ndarray) -> np.ndarray:
        """Whether each value ``v`` satisfies its operator and value (a missing value matches only ``null``)."""
        out = np.zeros(len(v), dtype=bool)
        with np.errstate(invalid="ignore"):
            for op, fn in (
                ("eq", np.equal),
                ("lt", np.less),
                ("le", np.less_equal),
                ("gt", np.greater),
                ("ge", np.greater_equal),
            ):
                sel = ops == _OP_CODE[op]
                if sel.any():
                    out[sel] = fn(v[sel], vals[sel])
            for op, fn in (("ne", lambda x, y: ~np.isnan(x) & (x != y)), ("null", lambda x, y: np.isnan(x))):
                sel = ops == _OP_CODE[op]
                if sel.any():
                    out[sel] = fn(v[sel], vals[sel])
            sel = ops == _OP_CODE["notnull"]
            if sel.any():
                out[sel] = ~np.isnan(v[sel])
        return out

    def _arrays(self, queries: list[Query]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        width = len(queries[0])
        cols = np.array([[t[0] for t in q] for q in queries], dtype=np.int64).reshape(-1, width)
        ops = np.array([[_OP_CODE[t[1]] for t in q] for q in queries], dtype=np.int64).reshape(-1, width)
        vals = np.array([[t[2] for t in q] for q in queries], dtype=np.float64).reshape(-1, width)
        return cols, ops, vals

    def matches(self, queries: list[Query], *, prefix: int | None = None):
        """Yield ``(query_positions, rows)``: every (query, matching row) pair, in chunks of bounded size.

        Queries must all have the same number of terms. A query's candidates are the rows of
        its most selective term; the other terms are checked on those rows only (on the first
        ``prefix`` of them when given: a quick look that finds most queries matching many rows).
        """
        if not queries:
            return
        yield from self._matches_arrays(*self._arrays(queries), prefix=prefix)

    def _matches_arrays(self, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray, *, prefix: int | None = None):
        """:meth:`matches` on ``(n_queries, width)`` arrays of columns, operator codes and values."""
        q, width = cols.shape
        a, b, c, d = (x.reshape(q, width) for x in self._spans(cols.ravel(), ops.ravel(), vals.ravel()))
        sizes = (b - a) + (d - c)
        best = np.argmin(sizes, axis=1)
        pick = np.arange(q)
        a, b, c, d, size = a[pick, best], b[pick, best], c[pick, best], d[pick, best], sizes[pick, best]
        if prefix is not None:
            b = np.minimum(b, a + prefix)
            d = np.minimum(d, c + np.maximum(prefix - (b - a), 0))
            size = (b - a) + (d - c)
        col_best = cols[pick, best]
        flat_order = self.order.ravel()
        start = 0
        while start < q:
            stop = start + max(1, int(np.searchsorted(np.cumsum(size[start:]), _CHUNK_ROWS, "right")))
            stop = min(stop, q)
            sl = slice(start, stop)
            qid_parts, pos_parts = [], []
            for lo_, hi_ in ((a[sl], b[sl]), (c[sl], d[sl])):
                length = hi_ - lo_
                total = int(length.sum())
                if total == 0:
                    continue
                qid = np.repeat(np.arange(start, stop), length)
                offset = np.repeat(np.cumsum(length) - length, length)
                base = np.repeat(col_best[sl] * self.n + lo_, length)
                pos_parts.append(base + (np.arange(total) - offset))
                qid_parts.append(qid)
            if qid_parts:
                qid = np.concatenate(qid_parts)
                rows = flat_order[np.concatenate(pos_parts)]
                keep = np.ones(len(qid), dtype=bool)
                for t in range(width):
                    other = best[qid] != t
                    if not other.any():
                        continue
                    qi, ri = qid[other], rows[other]
                    ok = self._holds(self.values[ri, cols[qi, t]], ops[qi, t], vals[qi, t])
                    keep[np.flatnonzero(other)[~ok]] = False
                yield qid[keep], rows[keep]
            start = stop

    def counts(self, queries: list[Query]) -> np.ndarray:
        """How many rows each query matches (queries of any widths)."""
        out = np.zeros(len(queries), dtype=np.int64)
        by_width: dict[int, list[int]] = {}
        for i, qu in enumerate(queries):
            by_width.setdefault(len(qu), []).append(i)
        for positions in by_width.values():
            sub = [queries[i] for i in positions]
            pos = np.asarray(positions)
            if len(sub[0]) == 1:  # one term: the span's size
                cols, ops, vals = self._arrays(sub)
                a, b, c, d = self._spans(cols[:, 0], ops[:, 0], vals[:, 0])
                out[pos] = (b - a) + (d - c)
                continue
            for qid, _ in self.matches(sub):
                out[pos] += np.bincount(qid, minlength=len(sub))
        return out

    def singles(self, queries: list[Query], *, prefixes: tuple[int, ...] = (64, 2048)) -> np.ndarray:
        """Whether each query matches exactly one row (queries of one width).

        The first ``prefixes[0]`` candidates of every query are checked first: two matches there
        settle it (most queries built from a random row match many); the undecided ones go on
        to the next prefix, and only the rest are evaluated in full.
        """
        if not queries:
            return np.zeros(0, dtype=bool)
        if len(queries[0]) == 1:
            return self.counts(queries) == 1
        return self.singles_arrays(*self._arrays(queries), prefixes=prefixes)

    def singles_arrays(
        self, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray, *, prefixes: tuple[int, ...] = (64, 2048)
    ) -> np.ndarray:
        """:meth:`singles` on ``(n_queries, width)`` arrays of columns, operator codes and values."""
        q = len(cols)
        out = np.zeros(q, dtype=bool)
        a, b, c, d = (x.reshape(cols.shape) for x in self._spans(cols.ravel(), ops.ravel(), vals.ravel()))
        size = ((b - a) + (d - c)).min(axis=1)
        todo = np.flatnonzero(size > 0)
        for prefix in (*prefixes, None):
            if not len(todo):
                break
            seen = np.zeros(len(todo), dtype=np.int64)
            for qid, _ in self._matches_arrays(cols[todo], ops[todo], vals[todo], prefix=prefix):
                seen += np.bincount(qid, minlength=len(todo))
            complete = np.ones(len(todo), dtype=bool) if prefix is None else size[todo] <= prefix
            decided = (seen >= 2) | complete
            out[todo[decided]] = seen[decided] == 1
            todo = todo[~decided]
        return out

    def rows(self, query: Query) -> np.ndarray:
        """Positions of the rows matching every term of ``query`` (sorted)."""
        parts = [r for _, r in self.matches([query])]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def count(self, query: Query) -> int:
        """Number of rows matching ``query``."""
        return int(self.counts([query])[0])


def count_queries(table: Coded, queries: list[Query]) -> np.ndarray:
    """How many rows of ``table`` each query matches."""
    return table.counts(queries)


def count_singling_out(table: Coded, queries: list[Query]) -> int:
    """How many of ``queries`` match exactly one row of ``table``."""
    return int(table.singles(queries).sum()) if queries else 0


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
    if len(out) >= n_queries or not candidates:
        return
    for i in np.flatnonzero(table.singles(candidates)).tolist():
        key = tuple(sorted(candidates[i]))
        if key in seen:
            continue
        seen.add(key)
        out.append(candidates[i])
        if len(out) >= n_queries:
            return


def univariate_queries(syn: Coded, n_queries: int, rng: np.random.Generator) -> list[Query]:
    """Queries on one rare attribute that single out a synthetic row (module docstring)."""
    candidates: list[Query] = []
    for j, is_num in enumerate(syn.numeric):
        s = syn.sorted[j, : syn.n_valid[j]]
        if syn.n - syn.n_valid[j] == 1:
            candidates.append(((j, "null", 0.0),))
        if is_num and len(s):
            candidates.append(((j, "le", float(s[0])),))
            candidates.append(((j, "ge", float(s[-1])),))
        uniq, counts = np.unique(s, return_counts=True)
        candidates.extend(((j, "eq", float(x)),) for x in uniq[counts == 1].tolist())
    order = rng.permutation(len(candidates))
    out: list[Query] = []
    _singling_out(syn, [candidates[i] for i in order.tolist()], n_queries, set(), out)
    return out


def multivariate_queries(
    syn: Coded, n_queries: int, n_cols: int, rng: np.random.Generator, *, max_attempts: int, batch_size: int = 1000
) -> tuple[list[Query], int]:
    """Queries on ``n_cols`` attributes of random synthetic rows that single out one (module docstring).

    Returns the queries and the number of attempts spent.
    """
    n_columns = len(syn.columns)
    n_cols = min(n_cols, n_columns)
    medians = np.array(
        [
            float(np.median(syn.sorted[j, : syn.n_valid[j]])) if is_num and syn.n_valid[j] else np.nan
            for j, is_num in enumerate(syn.numeric)
        ]
    )
    numeric = np.asarray(syn.numeric, dtype=bool)
    op_codes = np.array([_OP_CODE[o] for o in ("eq", "ge", "le", "null")], dtype=np.int64)
    out: list[Query] = []
    seen: set[Query] = set()
    attempts = 0
    while len(out) < n_queries and attempts < max_attempts and syn.n > 0:
        size = min(batch_size, max_attempts - attempts)
        rows = rng.integers(0, syn.n, size=size)
        cols = np.sort(np.argsort(rng.random((size, n_columns)), axis=1)[:, :n_cols], axis=1)
        v = syn.values[rows[:, None], cols]
        kind = np.where(numeric[cols], np.where(v > medians[cols], 1, 2), 0)  # eq for categoricals
        kind[np.isnan(v)] = 3
        v = np.where(np.isnan(v), 0.0, v)
        ops = op_codes[kind]
        for i in np.flatnonzero(syn.singles_arrays(cols, ops, v)).tolist():
            query = tuple((int(j), _OPS[o], float(x)) for j, o, x in zip(cols[i], ops[i], v[i]))
            if query in seen:  # terms are in column order already: the query is its own key
                continue
            seen.add(query)
            out.append(query)
            if len(out) >= n_queries:
                break
        attempts += size
    return out, attempts


def random_queries(syn: Coded, n_queries: int, n_cols: int, rng: np.random.Generator) -> list[Query]:
    """The baseline attacker's queries: random columns, random synthetic values, random operators."""
    n_columns = len(syn.columns)
    n_cols = min(n_cols, n_columns)
    uniques = [np.unique(syn.sorted[j, : syn.n_valid[j]]) for j in range(n_columns)]
    out: list[Query] = []
    for _ in range(n_queries):
        cols = np.sort(rng.choice(n_columns, size=n_cols, replace=False))
        terms = []
        for j in cols.tolist():
            u, has_missing = uniques[j], syn.n_valid[j] < syn.n
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
    pairs = [(q, r) for q, r in control.matches(queries)] if len({len(q) for q in queries}) == 1 else []
    if not pairs:  # mixed widths (never from one attack): one query at a time
        pairs = [(np.full(len(r), i), r) for i, r in enumerate(control.rows(q) for q in queries)]
    qid = np.concatenate([p[0] for p in pairs]).astype(np.int64)
    rows = np.concatenate([p[1] for p in pairs]).astype(np.int64)
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
