"""Row <-> text formats: the base class and the registry.

A :class:`RowSerializer` turns table rows into strings (for LLM generators and for the
string-level LevAtt attack) and, where the format allows it, parses strings back into a
table. The format is part of an attack's definition (Ward et al. 2025, "When Tables Leak",
LevAtt): the same fitted serializer must be used for every table that is compared.

Formats register themselves by name with :func:`register_serializer`; configs and the CLI
use the names (``get_serializer("canonical")``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

import numpy as np
import pandas as pd

from tabmem._registry import Registry
from tabmem.data.schema import NA_CATEGORY, Schema, ValidatedTable
from tabmem.errors import TabmemError


@dataclass(frozen=True)
class ParseResult:
    """Result of :meth:`RowSerializer.parse`.

    ``table`` holds the rows that parsed (index = position of the text in the input);
    ``n_invalid`` counts the others and ``invalid_reasons`` says why, one line per invalid
    text (``"text 3: expected 10 cells, got 9"``).
    """

    table: pd.DataFrame
    n_invalid: int
    invalid_reasons: list[str] = field(default_factory=list)

    @classmethod
    def from_rows(
        cls, rows: list[list], index: list[int], reasons: list[str], columns: Sequence[str], numerical: Sequence[str]
    ) -> ParseResult:
        """Assemble the parsed rows (numerical columns float64, the others object) and the failures."""
        table = pd.DataFrame(rows, columns=list(columns), index=pd.Index(index, dtype=np.int64))
        num = set(numerical)
        for c in table.columns:
            table[c] = table[c].astype(np.float64 if c in num else object)
        return cls(table=table, n_invalid=len(reasons), invalid_reasons=reasons)

    @classmethod
    def collect(
        cls,
        texts: Sequence[object],
        parse_row: Callable[[str], tuple[list | None, str | None]],
        columns: Sequence[str],
        numerical: Sequence[str],
    ) -> ParseResult:
        """Parse each text with ``parse_row`` (``(row, None)`` or ``(None, reason)``); non-strings are invalid."""
        rows: list[list] = []
        index: list[int] = []
        reasons: list[str] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                reasons.append(f"text {i}: not a string ({type(text).__name__})")
                continue
            row, problem = parse_row(text)
            if problem:
                reasons.append(f"text {i}: {problem}")
                continue
            rows.append(row)  # type: ignore[arg-type]
            index.append(i)
        return cls.from_rows(rows, index, reasons, columns, numerical)


def parse_cell(
    column: str,
    cell: str,
    *,
    numerical: bool,
    nan_token: str,
    categories: set[str] | frozenset[str],
    literal: bool = False,
) -> tuple[object, str | None]:
    """One written cell back to a value: ``(value, None)``, or ``(None, reason)`` when it is invalid.

    Numerical cells must be finite numbers (``nan_token`` is a missing value); categorical cells
    must be categories seen when fitting (``nan_token`` is ``"<NA>"`` unless ``literal``, i.e.
    escaped in the text).
    """
    if numerical:
        if cell == nan_token:
            return np.nan, None
        try:
            value = float(cell)
        except ValueError:
            return None, f"column {column!r}: {cell[:40]!r} is not a number"
        if not np.isfinite(value):
            return None, f"column {column!r}: {cell[:40]!r} is not finite"
        return value, None
    token = NA_CATEGORY if (cell == nan_token and not literal) else cell
    if token not in categories:
        return None, f"column {column!r}: category {cell[:40]!r} was not seen when fitting"
    return token, None


class RowSerializer:
    """Base class: ``fit(train_df, schema)`` then ``serialize(df)`` / ``parse(texts)``.

    Subclasses set ``name`` (via :func:`register_serializer`) and implement
    :meth:`_fit` and :meth:`serialize`; :meth:`parse` raises ``NotImplementedError`` for
    write-only formats. Constructor arguments are configuration only (scikit-learn style).
    """

    name: ClassVar[str] = "base"

    def fit(self, train_df: pd.DataFrame, schema: Schema) -> RowSerializer:
        """Learn what the format needs from the table it is fitted on (column order, precision...)."""
        if not isinstance(schema, Schema):
            raise TabmemError(f"{type(self).__name__}.fit: schema must be a tabmem Schema, got {type(schema).__name__}")
        if not isinstance(train_df, (pd.DataFrame, ValidatedTable)):
            raise TabmemError(f"{type(self).__name__}.fit: expected a pandas DataFrame, got {type(train_df).__name__}")
        self.schema_ = schema
        self._fit(train_df, schema)
        return self

    def _fit(self, train_df: pd.DataFrame, schema: Schema) -> None:  # pragma: no cover - trivial default
        pass

    def _check_fitted(self) -> None:
        if not hasattr(self, "schema_"):
            raise TabmemError(f"{type(self).__name__} ({self.name!r}) is not fitted: call fit(train_df, schema) first")

    def serialize(self, df: pd.DataFrame) -> list[str]:
        """One string per row of ``df``, in row order."""
        raise NotImplementedError

    def parse(self, texts: Sequence[str]) -> ParseResult:
        """Parse strings back into a table; write-only formats raise ``NotImplementedError``."""
        raise NotImplementedError(f"the {self.name!r} format is write-only: it cannot be parsed back into a table")

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_") and not k.startswith("_"))
        return f"{type(self).__name__}({params})"


S = TypeVar("S", bound=type[RowSerializer])

#: name -> serializer class; filled by :func:`register_serializer`.
#: name -> row format; importing :mod:`tabmem.data.serialization` registers the built-in ones.
SERIALIZERS: Registry[type[RowSerializer]] = Registry(
    "serializer", base=RowSerializer, modules=("tabmem.data.serialization",)
)
register_serializer = SERIALIZERS.register


def get_serializer(name: str, **kwargs: object) -> RowSerializer:
    """A new (unfitted) serializer registered under ``name``; unknown names list the known ones."""
    return SERIALIZERS.create(name, **kwargs)
