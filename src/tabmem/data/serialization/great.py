"""GReaT row format: ``col is value, col is value, ...`` with a random column order per row.

Borisov et al., "Language Models are Realistic Tabular Data Generators" (ICLR 2023): every
training example is the row written as ``"{column} is {value}"`` cells joined by ``", "``, in a
fresh random column order each time it is shown to the model, so that the model can be
prompted with any subset of columns. Here the order is drawn from a seeded numpy generator
(``random_state``, or an explicit ``rng`` per call so that each epoch gets new orders).

Numerical values are written with the fewest fixed decimals that represent every training
value (integers without ``.0``, never scientific notation); categories as their canonical
strings. Parsing accepts any column order, and a row is valid only when every column appears
exactly once with a finite number or a category seen when fitting (the rest are counted and
dropped, never raised).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabmem.data.schema import NA_CATEGORY, Schema, validate_table
from tabmem.data.serialization.base import ParseResult, RowSerializer, parse_cell, register_serializer
from tabmem.data.serialization.canonical import decimals_needed, format_fixed
from tabmem.errors import TabmemError


@register_serializer("great")
class GReaTSerializer(RowSerializer):
    """``col is value`` cells joined by ``", "``, column order shuffled per row (GReaT).

    Parameters
    ----------
    permute:
        Shuffle the column order of every row (GReaT training); ``False`` keeps the schema order.
    random_state:
        Seed of the shuffles when :meth:`serialize` gets no ``rng``.
    max_decimals:
        Cap on the learned number of decimals of a numerical column.
    nan_token:
        Written for a missing value.
    """

    separator = ", "
    connector = " is "

    def __init__(
        self, permute: bool = True, random_state: int | None = None, max_decimals: int = 6, nan_token: str = "NaN"
    ) -> None:
        self.permute = permute
        self.random_state = random_state
        self.max_decimals = max_decimals
        self.nan_token = nan_token

    def _fit(self, train_df: pd.DataFrame, schema: Schema) -> None:
        bad = [c for c in schema.columns if self.separator.strip() in c or self.connector in c]
        if bad:
            raise TabmemError(f"great serializer: column names may not contain ',' or ' is ': {bad}")
        clean = validate_table(train_df, schema, name="training", nan="match", extra="ignore")
        self.columns_ = tuple(schema.columns)
        self.decimals_ = {
            c: decimals_needed(clean[c].to_numpy(dtype=np.float64), int(self.max_decimals)) for c in schema.numerical
        }
        self.categories_ = {c: set(clean[c].tolist()) for c in schema.categorical}
        self._compile()

    def get_state(self) -> dict[str, object]:
        """Everything learned, as plain lists/dicts (safe for ``torch.load(weights_only=True)``)."""
        self._check_fitted()
        return {"decimals": dict(self.decimals_), "categories": {c: sorted(v) for c, v in self.categories_.items()}}

    def set_state(self, schema: Schema, state: dict[str, object]) -> GReaTSerializer:
        self.schema_ = schema
        self.columns_ = tuple(schema.columns)
        self.decimals_ = {c: int(d) for c, d in state["decimals"].items()}  # type: ignore[union-attr]
        self.categories_ = {c: set(v) for c, v in state["categories"].items()}  # type: ignore[union-attr]
        self._compile()
        return self

    def _compile(self) -> None:
        names = sorted(self.columns_, key=len, reverse=True)
        self._pattern = re.compile("(?:^|, )(" + "|".join(re.escape(c) for c in names) + ") is ")

    def _cells(self, clean: pd.DataFrame) -> list[np.ndarray]:
        cols = []
        for c in self.columns_:
            if c in self.decimals_:
                vals = format_fixed(clean[c].to_numpy(dtype=np.float64), self.decimals_[c], self.nan_token)
            else:
                vals = np.array([self.nan_token if t == NA_CATEGORY else t for t in clean[c].tolist()], dtype=object)
            cols.append(np.array([f"{c}{self.connector}{v}" for v in vals.tolist()], dtype=object))
        return cols

    def serialize(self, df: pd.DataFrame, *, name: str = "table", rng: np.random.Generator | None = None) -> list[str]:
        """One text per row; the column order is shuffled per row when ``permute`` is set."""
        self._check_fitted()
        if len(df) == 0:
            return []
        clean = validate_table(df, self.schema_, name=name, nan="match", extra="ignore")
        cells = np.stack(self._cells(clean), axis=1)  # (n, k) object
        if self.permute:
            rng = rng if rng is not None else np.random.default_rng(self.random_state)
            order = rng.permuted(np.tile(np.arange(cells.shape[1]), (cells.shape[0], 1)), axis=1)
            cells = np.take_along_axis(cells, order, axis=1)
        return [self.separator.join(row) for row in cells.tolist()]

    def prompt(self, conditions: dict[str, object]) -> str:
        """The text prefix that conditions generation on the given column values (GReaT sampling)."""
        self._check_fitted()
        unknown = [c for c in conditions if c not in self.columns_]
        if unknown:
            raise TabmemError(f"conditions: unknown column(s) {unknown}; columns: {list(self.columns_)}")
        frame = pd.DataFrame({c: [v] for c, v in conditions.items()})
        parts = []
        for c in conditions:
            if c in self.decimals_:
                v = format_fixed(pd.to_numeric(frame[c]).to_numpy(dtype=float), self.decimals_[c], self.nan_token)[0]
            else:
                from tabmem.data.schema import canonical_category

                v = canonical_category(frame[c].iloc[0])
                if v not in self.categories_[c]:
                    raise TabmemError(f"conditions: category {v!r} of column {c!r} was not seen when fitting")
            parts.append(f"{c}{self.connector}{v}")
        return self.separator.join(parts) + self.separator

    def parse(self, texts: Sequence[str]) -> ParseResult:
        """Texts -> table (any column order); rows with a missing/duplicated/unknown/invalid cell are dropped."""
        self._check_fitted()
        return ParseResult.collect(texts, self._parse_row, self.columns_, list(self.decimals_))

    def _parse_row(self, text: str) -> tuple[list | None, str | None]:
        text = text.strip().rstrip(",").strip()
        matches = list(self._pattern.finditer(text))
        if not matches or matches[0].start() != 0:
            return None, "does not start with '<column> is '"
        found: dict[str, str] = {}
        for k, m in enumerate(matches):
            end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
            col, value = m.group(1), text[m.end() : end]
            if col in found:
                return None, f"column {col!r} appears twice"
            found[col] = value
        if len(found) != len(self.columns_):
            return None, f"missing column(s) {[c for c in self.columns_ if c not in found]}"
        row: list[object] = []
        for c in self.columns_:
            value, problem = parse_cell(
                c, found[c].strip(), numerical=c in self.decimals_, nan_token=self.nan_token,
                categories=self.categories_.get(c, frozenset()),
            )  # fmt: skip
            if problem:
                return None, problem
            row.append(value)
        return row, None
