"""The canonical row format: stable, fixed-precision, explicitly delimited strings.

Rules (the "canonical string representation" of Ward et al. 2025, LevAtt, made exact):

* columns in the schema's order (the order of the table the serializer was fitted on);
* a numerical column whose fitted values are all integers renders as an integer (``12``,
  never ``12.0``); any other numerical column renders with a fixed number of decimals, the
  fewest that represent every fitted value exactly (at most ``max_decimals``), in positional
  notation (never ``1e-05``), with ``-0`` normalised to ``0``;
* a categorical value renders as its canonical string (:func:`tabmem.data.canonical_category`:
  ``1``, ``1.0`` and ``"1"`` are the same token);
* a missing value (numerical or categorical) renders as ``nan_token`` (default ``NaN``);
* cells are joined by ``delimiter`` (default ``,``); inside a category token a backslash,
  the delimiter, or a token equal to ``nan_token`` are escaped with a backslash, so parsing
  is unambiguous.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabmem.data.schema import NA_CATEGORY, Schema, validate_table
from tabmem.data.serialization.base import ParseResult, RowSerializer, parse_cell, register_serializer
from tabmem.errors import TabmemError


def escape_token(token: str, delimiter: str, nan_token: str) -> str:
    """Escape a category token so that it never contains a bare delimiter nor equals ``nan_token``."""
    out = token.replace("\\", "\\\\").replace(delimiter, "\\" + delimiter)
    if out == nan_token:
        out = "\\" + out
    return out


def split_escaped(text: str, delimiter: str) -> tuple[list[str], list[bool]]:
    """Split ``text`` on unescaped ``delimiter``; return the unescaped cells and whether each had escapes."""
    if "\\" not in text:
        cells = text.split(delimiter)
        return cells, [False] * len(cells)
    cells: list[str] = []
    escaped: list[bool] = []
    buf: list[str] = []
    had = False
    i, n, k = 0, len(text), len(delimiter)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            if text.startswith(delimiter, i + 1):
                buf.append(delimiter)
                i += 1 + k
            else:
                buf.append(text[i + 1])
                i += 2
            had = True
            continue
        if text.startswith(delimiter, i):
            cells.append("".join(buf))
            escaped.append(had)
            buf, had = [], False
            i += k
            continue
        buf.append(ch)
        i += 1
    cells.append("".join(buf))
    escaped.append(had)
    return cells, escaped


def decimals_needed(values: np.ndarray, max_decimals: int) -> int:
    """Fewest decimals d <= ``max_decimals`` such that rounding every finite value to d decimals is exact."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return 0
    for d in range(max_decimals + 1):
        scaled = v * 10.0**d
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return d
    return max_decimals


def format_fixed(values: np.ndarray, decimals: int, nan_token: str) -> np.ndarray:
    """Fixed-point strings (object array); NaN -> ``nan_token``; ``-0`` -> ``0``.

    Each value is formatted from its exact binary value (``format(x, ".{d}f")``, as Python, CSV
    writers and the LLM generators' own string conversion do: ``1.20625`` -> ``1.2063``), never
    rounded first with ``np.round``, which rounds the *scaled* value half-to-even and can land on
    the other side of a tie (``1.2062``) and so turn an exact copy into a one-edit near miss.
    """
    v = values.astype(np.float64)
    fmt = f".{int(decimals)}f"
    out = np.array([_fixed(x, fmt) for x in v.tolist()], dtype=object)
    nan = np.isnan(v)
    if nan.any():
        out[nan] = nan_token
    return out


def _fixed(x: float, fmt: str) -> str:
    text = format(x, fmt)
    if text.startswith("-") and not text.strip("-0."):  # -0.00 (a tiny negative or -0.0): drop the sign
        return text[1:]
    return text


def join_columns(columns: Sequence[np.ndarray], delimiter: str, n_rows: int) -> list[str]:
    """Join per-column object arrays of strings row-wise with ``delimiter``."""
    if not columns:
        return [""] * n_rows
    if len(columns) == 1:
        return list(columns[0])
    return [delimiter.join(cells) for cells in zip(*(c.tolist() for c in columns))]


@register_serializer("canonical")
class CanonicalSerializer(RowSerializer):
    """Fixed column order, per-column precision learned by :meth:`fit`, stable tokens, explicit NaN token.

    Parameters
    ----------
    delimiter:
        Between cells (non-empty, must not contain a backslash).
    nan_token:
        Written for a missing value; parsed back as NaN / the missing category.
    max_decimals:
        Cap on the learned number of decimals of a non-integer column.
    """

    def __init__(self, delimiter: str = ",", nan_token: str = "NaN", max_decimals: int = 6) -> None:
        self.delimiter = delimiter
        self.nan_token = nan_token
        self.max_decimals = max_decimals

    def _fit(self, train_df: pd.DataFrame, schema: Schema) -> None:
        if not isinstance(self.delimiter, str) or not self.delimiter or "\\" in self.delimiter:
            raise TabmemError(
                f"canonical serializer: delimiter must be a non-empty string without '\\', got {self.delimiter!r}"
            )
        if not isinstance(self.nan_token, str) or not self.nan_token:
            raise TabmemError(f"canonical serializer: nan_token must be a non-empty string, got {self.nan_token!r}")
        if not isinstance(self.max_decimals, (int, np.integer)) or not 0 <= self.max_decimals <= 15:
            raise TabmemError(
                f"canonical serializer: max_decimals must be an integer in [0, 15], got {self.max_decimals!r}"
            )
        clean = validate_table(train_df, schema, name="training", nan="match", extra="ignore")
        self.columns_ = tuple(schema.columns)
        self.decimals_ = {
            c: decimals_needed(clean[c].to_numpy(dtype=np.float64), int(self.max_decimals)) for c in schema.numerical
        }
        self.categories_ = {c: set(clean[c].tolist()) for c in schema.categorical}

    def serialize(self, df: pd.DataFrame, *, name: str = "table") -> list[str]:
        """Canonical strings of the rows of ``df`` (columns beyond the schema are ignored)."""
        self._check_fitted()
        if len(df) == 0:
            return []
        clean = validate_table(df, self.schema_, name=name, nan="match", extra="ignore")
        cols = []
        for c in self.columns_:
            if c in self.decimals_:
                cols.append(format_fixed(clean[c].to_numpy(dtype=np.float64), self.decimals_[c], self.nan_token))
            else:
                tokens = clean[c].to_numpy(dtype=object)
                cols.append(
                    np.array(
                        [
                            self.nan_token if t == NA_CATEGORY else escape_token(t, self.delimiter, self.nan_token)
                            for t in tokens
                        ],
                        dtype=object,
                    )
                )
        return join_columns(cols, self.delimiter, len(clean))

    def parse(self, texts: Sequence[str]) -> ParseResult:
        """Strings -> table (numericals float64, categoricals canonical strings); bad texts are counted, not raised."""
        self._check_fitted()
        return ParseResult.collect(texts, self._parse_row, self.columns_, list(self.decimals_))

    def _parse_row(self, text: str) -> tuple[list | None, str | None]:
        cells, escaped = split_escaped(text.strip(), self.delimiter)
        if len(cells) != len(self.columns_):
            return None, f"expected {len(self.columns_)} cells, got {len(cells)}"
        row: list[object] = []
        for c, cell, esc in zip(self.columns_, cells, escaped):
            value, problem = parse_cell(
                c, cell, numerical=c in self.decimals_, nan_token=self.nan_token,
                categories=self.categories_.get(c, frozenset()), literal=esc,
            )  # fmt: skip
            if problem:
                return None, problem
            row.append(value)
        return row, None
