"""Row formats of :class:`~tabmem.generators.llm.LLMGenerator` (one strategy class per format)."""

from __future__ import annotations

from tabmem.generators.llm.formats.base import (
    ROW_FORMATS,
    Batch,
    FixedRows,
    Prompt,
    RowFormat,
    TrainingRows,
    register_format,
    shuffled_batches,
)
from tabmem.generators.llm.formats.digits import DigitFormat
from tabmem.generators.llm.formats.text import TextFormat

__all__ = [
    "ROW_FORMATS",
    "Batch",
    "DigitFormat",
    "FixedRows",
    "Prompt",
    "RowFormat",
    "TextFormat",
    "TrainingRows",
    "register_format",
    "shuffled_batches",
]
