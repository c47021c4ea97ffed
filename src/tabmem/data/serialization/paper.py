"""The exact row formats of the LevAtt paper's code (Ward et al. 2025).

* ``paper_sft``: every column, cell = ``"value: " + repr(float(v))`` for a number and
  ``"value: " + str(v)`` otherwise, joined by ``","`` (``run_lev_attack_sft.py``);
* ``paper_icl``: the same cells for the numerical columns only (``run_ICL.py``); the paper's
  column order was ``list(set & set & set)`` (arbitrary but shared), here it is the schema order;
* ``paper_tlp``: bare ``repr(float(v))`` / ``str(v)`` cells joined by ``","`` (``defense/tlp/lev_attack.py``).

"A number" follows the paper code, which decides by the pandas dtype: schema-numerical columns
and categorical columns stored with a numeric dtype (codes such as ``SEX`` 1/2) render as
``repr(float(v))`` (``1`` -> ``1.0``, NaN -> ``nan``); other columns as ``str(v)``. Integers
therefore carry ``.0``, tiny/huge values use ``1e-05`` notation: these formats are for
reproducing the paper; use ``canonical`` for new audits. No escaping exists in these formats,
so a category containing ``","`` cannot be parsed back (it is reported as invalid).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabmem.data.schema import NA_CATEGORY, Schema, canonical_category, raw_frame
from tabmem.data.serialization.base import ParseResult, RowSerializer, register_serializer
from tabmem.data.serialization.canonical import join_columns
from tabmem.errors import SchemaError


class _PaperSerializer(RowSerializer):
    prefix: str = "value: "
    numeric_only: bool = False
    delimiter: str = ","

    def _fit(self, train_df: pd.DataFrame, schema: Schema) -> None:
        train_df = raw_frame(train_df)  # the papers' formats are defined on the values as given
        cols = schema.numerical if self.numeric_only else schema.columns
        self.columns_ = tuple(c for c in schema.columns if c in cols)
        missing = [c for c in self.columns_ if c not in train_df.columns]
        if missing:
            raise SchemaError("training", [f"missing column(s): {', '.join(map(repr, missing))}"])
        self.categories_ = {
            c: {canonical_category(v) for v in train_df[c].tolist()} for c in self.columns_ if c in schema.categorical
        }

    def _cells(self, s: pd.Series, column: str) -> np.ndarray:
        numeric = column in self.schema_.numerical or (
            pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
        )
        if numeric:
            values = pd.to_numeric(s, errors="coerce")
            bad = values.isna() & s.notna()
            if bad.any():
                rows = np.flatnonzero(bad.to_numpy())[:5].tolist()
                raise SchemaError(
                    "table", [f"column {column!r} is numerical but holds non-numeric values (first rows: {rows})"]
                )
            return np.array(
                [self.prefix + repr(float(v)) for v in values.to_numpy(dtype=np.float64).tolist()], dtype=object
            )
        return np.array([self.prefix + str(v) for v in s.tolist()], dtype=object)

    def serialize(self, df: pd.DataFrame, *, name: str = "table") -> list[str]:
        self._check_fitted()
        df = raw_frame(df)
        missing = [c for c in self.columns_ if c not in df.columns]
        if missing:
            raise SchemaError(name, [f"missing column(s): {', '.join(map(repr, missing))}"])
        if len(df) == 0:
            return []
        return join_columns([self._cells(df[c], c) for c in self.columns_], self.delimiter, len(df))

    def parse(self, texts: Sequence[str]) -> ParseResult:
        """Strings -> table of the written columns (``paper_icl``: numerical columns only)."""
        self._check_fitted()
        return ParseResult.collect(texts, self._parse_row, self.columns_, self.schema_.numerical)

    def _parse_row(self, text: str) -> tuple[list | None, str | None]:
        cells = text.strip().split(self.delimiter)
        if len(cells) != len(self.columns_):
            return None, f"expected {len(self.columns_)} cells, got {len(cells)}"
        row: list[object] = []
        for c, cell in zip(self.columns_, cells):
            if not cell.startswith(self.prefix):
                return None, f"column {c!r}: cell {cell[:40]!r} does not start with {self.prefix!r}"
            value = cell[len(self.prefix) :]
            if c in self.schema_.numerical:
                try:
                    row.append(float(value))
                except ValueError:
                    return None, f"column {c!r}: {value[:40]!r} is not a number"
            else:
                token = NA_CATEGORY if value == "nan" else canonical_category(_maybe_number(value))
                if token not in self.categories_[c]:
                    return None, f"column {c!r}: category {value[:40]!r} was not seen when fitting"
                row.append(token)
        return row, None


def _maybe_number(value: str) -> object:
    """``"1.0"`` written for a numeric-coded category parses back to the category ``1``."""
    try:
        return float(value)
    except ValueError:
        return value


@register_serializer("paper_sft")
class PaperSFTSerializer(_PaperSerializer):
    """All columns, ``"value: " + repr(float(v))`` cells joined by ``","`` (the paper's SFT attack)."""


@register_serializer("paper_icl")
class PaperICLSerializer(_PaperSerializer):
    """Numerical columns only, ``"value: " + repr(float(v))`` cells joined by ``","`` (the paper's ICL attack)."""

    numeric_only = True


@register_serializer("paper_tlp")
class PaperTLPSerializer(_PaperSerializer):
    """All columns, bare ``repr(float(v))`` / ``str(v)`` cells joined by ``","`` (the paper's TLP/DM experiments)."""

    prefix = ""
