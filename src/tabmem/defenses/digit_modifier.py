"""Digit Modifier (DM), the post-processing defence of the LevAtt paper.

Ward et al., "When Tables Leak" (arXiv 2512.08875), authors' ``digitModifier.py``: for every
numerical cell ``v`` of the *synthetic* table,

    g(v) = p_min + (p_max - p_min) * a(v)
    a(v) = |v| / max_w |w|                      scale="magnitude" (paper default)
         = log(|v| + 1) / max_w log(|w| + 1)    scale="log"
         = rank(|v|) / (|V| - 1)                scale="rank"

where ``w`` runs over all non-NaN numerical cells pooled over columns (``scope="pooled"``, the
paper) or over the cell's own column (``scope="per_column"``). ``|v|`` is written as
``str(abs(v))`` (scientific notation expanded to at most 10 decimals) and every digit character
independently becomes ``(d + 1) mod 10`` with probability ``g(v)``; the sign, the decimal point
and the column dtype are kept. ``rank`` is the number of strictly smaller values (ties share the
lowest rank).

Extension (not in the paper): ``in_range=True`` with :meth:`DigitModifier.fit` on the training
table keeps every value inside the training ``[min, max]`` of its column: a modified value outside
it is replaced by the unmodified value, clipped to the range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.defenses.registry import register_defense
from tabmem.errors import TabmemError

Scale = Literal["magnitude", "log", "rank"]
Scope = Literal["pooled", "per_column"]
_MAX_CHARS = 40


def _abs_strings(values: np.ndarray, integer: bool) -> list[str]:
    """``str(abs(v))`` as the paper writes it, with scientific notation expanded (<= 10 decimals)."""
    out = []
    for v in values.tolist():
        s = str(abs(int(v))) if integer else str(abs(float(v)))
        if "e" in s or "E" in s:
            s = f"{abs(float(v)):.10f}".rstrip("0")
            s = s + "0" if s.endswith(".") else s
        out.append(s)
    return out


def flip_digits(strings: Sequence[str], prob: np.ndarray, rng: np.random.Generator) -> list[str]:
    """Replace each digit ``d`` of each string by ``(d + 1) mod 10`` with probability ``prob[i]``.

    Vectorised over a padded byte matrix: one uniform draw per character position.
    """
    n = len(strings)
    if n == 0:
        return []
    width = max(1, max(len(s) for s in strings))
    buf = np.array([s.encode("ascii") for s in strings], dtype=f"S{width}").view(np.uint8).reshape(n, width)
    is_digit = (buf >= ord("0")) & (buf <= ord("9"))
    draw = rng.random((n, width)) < np.asarray(prob, dtype=float)[:, None]
    flip = is_digit & draw
    buf = np.where(flip, np.where(buf == ord("9"), ord("0"), buf + 1), buf).astype(np.uint8)
    return [b.decode("ascii") for b in buf.view(f"S{width}").ravel()]


@register_defense("digit_modifier")
class DigitModifier:
    """Flip digits of synthetic numerical cells with a magnitude-dependent probability (LevAtt paper, DM).

    Args:
        p_min, p_max: flip probability for the smallest / largest magnitude, ``0 <= p_min <= p_max <= 1``.
        scale: how magnitude maps to ``[0, 1]``: ``"magnitude"`` (paper default), ``"log"``, ``"rank"``.
        scope: ``"pooled"`` (paper: one maximum over all numerical cells) or ``"per_column"``.
        in_range: keep values inside the training range seen by :meth:`fit` (extension).
        columns: numerical columns to modify; default: the schema's numerical columns given to
            :meth:`fit`, else every numeric (non-bool) column of the table.
        random_state: seed; the same seed and table give the same output.
    """

    stage = "postprocess"

    def __init__(
        self,
        p_min: float = 0.05,
        p_max: float = 0.1,
        scale: Scale = "magnitude",
        scope: Scope = "pooled",
        in_range: bool = False,
        columns: Sequence[str] | None = None,
        random_state: int | None = None,
    ) -> None:
        self.p_min = p_min
        self.p_max = p_max
        self.scale = scale
        self.scope = scope
        self.in_range = in_range
        self.columns = columns
        self.random_state = random_state

    def _check_params(self) -> None:
        for name in ("p_min", "p_max"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.0 <= float(v) <= 1.0):
                raise TabmemError(f"{name} must be a probability in [0, 1], got {name}={v!r}")
        if self.p_min > self.p_max:
            raise TabmemError(f"p_min must be <= p_max, got p_min={self.p_min!r}, p_max={self.p_max!r}")
        if self.scale not in ("magnitude", "log", "rank"):
            raise TabmemError(f"scale must be 'magnitude', 'log' or 'rank', got scale={self.scale!r}")
        if self.scope not in ("pooled", "per_column"):
            raise TabmemError(f"scope must be 'pooled' or 'per_column', got scope={self.scope!r}")

    def fit(self, train: pd.DataFrame, schema: Schema | None = None) -> DigitModifier:
        """Store the numerical columns and their training ranges (needed only for ``in_range``)."""
        self._check_params()
        cols = self._resolve_columns(train, schema)
        self.columns_ = cols
        self.min_ = {c: float(np.nanmin(pd.to_numeric(train[c], errors="coerce"))) for c in cols}
        self.max_ = {c: float(np.nanmax(pd.to_numeric(train[c], errors="coerce"))) for c in cols}
        return self

    def _resolve_columns(self, df: pd.DataFrame, schema: Schema | None) -> list[str]:
        if self.columns is not None:
            cols = list(self.columns)
        elif schema is not None:
            cols = list(schema.numerical)
        else:
            cols = [
                c
                for c in df.columns
                if pd.api.types.is_numeric_dtype(df[c].dtype) and not pd.api.types.is_bool_dtype(df[c].dtype)
            ]
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise TabmemError(f"DigitModifier: column(s) {missing} not in the table (columns: {list(df.columns)})")
        bad = [c for c in cols if not pd.api.types.is_numeric_dtype(df[c].dtype) or pd.api.types.is_bool_dtype(df[c])]
        if bad:
            raise TabmemError(
                f"DigitModifier: column(s) {bad} are not numerical (dtypes: {[str(df[c].dtype) for c in bad]})"
            )
        return cols

    def _amount(self, absvals: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """a(v) in [0, 1] for the values ``absvals`` given the pooled magnitudes ``pool``."""
        if pool.size == 0:
            return np.zeros_like(absvals)
        if self.scale == "magnitude":
            top = pool.max()
            return absvals / top if top > 0 else np.zeros_like(absvals)
        if self.scale == "log":
            top = np.log1p(pool).max()
            return np.log1p(absvals) / top if top > 0 else np.zeros_like(absvals)
        if pool.size == 1:
            return np.zeros_like(absvals)
        ranks = np.searchsorted(np.sort(pool), absvals, side="left")
        return ranks / (pool.size - 1)

    def _arrays(self, synthetic: pd.DataFrame) -> tuple[list[str], dict[str, np.ndarray]]:
        self._check_params()
        cols = self.columns_ if hasattr(self, "columns_") else self._resolve_columns(synthetic, None)
        missing = [c for c in cols if c not in synthetic.columns]
        if missing:
            raise TabmemError(f"DigitModifier: column(s) {missing} not in the synthetic table")
        arrays = {c: pd.to_numeric(synthetic[c], errors="coerce").to_numpy(dtype=float) for c in cols}
        bad = [c for c, a in arrays.items() if np.isinf(a).any()]
        if bad:
            raise TabmemError(f"DigitModifier: column(s) {bad} contain infinite values")
        return cols, arrays

    def flip_probabilities(self, synthetic: pd.DataFrame) -> pd.DataFrame:
        """g(v) for every modified cell (NaN where the cell is NaN): the per-digit flip probability."""
        cols, arrays = self._arrays(synthetic)
        probs = self._probs(cols, arrays)
        return pd.DataFrame(probs, index=synthetic.index, columns=cols)

    def _probs(self, cols: list[str], arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        pooled = np.abs(np.concatenate([a[~np.isnan(a)] for a in arrays.values()])) if cols else np.array([])
        out = {}
        for c in cols:
            vals = arrays[c]
            ok = ~np.isnan(vals)
            absvals = np.abs(vals[ok])
            pool = pooled if self.scope == "pooled" else absvals
            g = np.full(len(vals), np.nan)
            g[ok] = self.p_min + (self.p_max - self.p_min) * self._amount(absvals, pool)
            out[c] = g
        return out

    def transform(self, synthetic: pd.DataFrame) -> pd.DataFrame:
        """Return a modified copy of ``synthetic`` (the input is not changed)."""
        if self.in_range and not hasattr(self, "min_"):
            raise TabmemError("DigitModifier(in_range=True) needs fit(train) first to know the training ranges")
        cols, arrays = self._arrays(synthetic)
        probs = self._probs(cols, arrays)
        rng = np.random.default_rng(self.random_state)
        out = synthetic.copy()
        for c in cols:
            vals = arrays[c]
            ok = ~np.isnan(vals)
            prob = probs[c][ok]
            integer = pd.api.types.is_integer_dtype(synthetic[c].dtype)
            flipped = flip_digits(_abs_strings(vals[ok], integer), prob, rng)
            new = np.array([float(s) for s in flipped], dtype=float) * np.where(np.signbit(vals[ok]), -1.0, 1.0)
            if self.in_range:
                lo, hi = self.min_[c], self.max_[c]
                outside = (new < lo) | (new > hi)
                new[outside] = np.clip(vals[ok][outside], lo, hi)
            col = vals.copy()
            col[ok] = new
            nullable = pd.api.types.is_extension_array_dtype(synthetic[c].dtype)  # Int64 etc. hold missing values
            if integer and not np.isnan(col).any():
                out[c] = col.astype(synthetic[c].dtype)
            else:
                keep = not integer or nullable  # a NumPy integer column with NaN can only become float64
                out[c] = pd.Series(col, index=synthetic.index).astype(synthetic[c].dtype if keep else "float64")
        return out

    def fit_transform(self, train: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema | None = None) -> pd.DataFrame:
        return self.fit(train, schema).transform(synthetic)
