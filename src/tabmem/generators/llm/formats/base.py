"""The row-format strategy of :class:`~tabmem.generators.llm.LLMGenerator`: rows to token ids and back.

A :class:`RowFormat` owns a fitted row serializer (:mod:`tabmem.data.serialization`) and the
tokenizer its format needs, and answers everything the generator would otherwise branch on:
the model's vocabulary and special ids, training batches, DP pseudo rows, the sampling prompt,
the decoding constraint and the decoding of generations. One subclass per format, registered
under the name users pass as ``LLMGenerator(serializer=...)``; the generator picks one at fit
and delegates to it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
import pandas as pd
import torch

from tabmem._registry import Registry
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.data.serialization.base import ParseResult
from tabmem.generators.llm.huggingface import ModelSpec

Batch = tuple[torch.Tensor, torch.Tensor]  # (input ids, attention mask), both [rows, tokens]


@dataclass(frozen=True)
class Prompt:
    """Where generation starts: ``ids`` ``[1, L]``, the positions forced by conditions, the length budget."""

    ids: torch.Tensor
    forced: dict[int, int]
    max_new_tokens: int


class TrainingRows(Protocol):
    """The training table as the model sees it, one shuffled epoch at a time."""

    def epoch(
        self, rng: np.random.Generator, generator: torch.Generator, batch_size: int, rows: list | None = None
    ) -> list[Batch]:
        """One epoch's batches; ``rows`` (a list) receives each batch's training-row positions (weighted fits)."""
        ...


def shuffled_batches(
    ids: torch.Tensor, mask: torch.Tensor, generator: torch.Generator, batch_size: int, rows: list | None = None
) -> list[Batch]:
    """Rows in the order of one ``randperm`` drawn from ``generator``, cut into batches (CPU tensors);
    ``rows`` (a list) receives each batch's row positions."""
    perm = torch.randperm(ids.shape[0], generator=generator, device=generator.device).cpu()
    if rows is not None:
        rows.extend(perm[s : s + batch_size] for s in range(0, ids.shape[0], batch_size))
    return [(ids[perm[s : s + batch_size]], mask[perm[s : s + batch_size]]) for s in range(0, ids.shape[0], batch_size)]


@dataclass(frozen=True)
class FixedRows:
    """Rows encoded once (the same tokens every epoch); an epoch only reshuffles them."""

    ids: torch.Tensor
    mask: torch.Tensor

    def epoch(
        self, rng: np.random.Generator, generator: torch.Generator, batch_size: int, rows: list | None = None
    ) -> list[Batch]:
        return shuffled_batches(self.ids, self.mask, generator, batch_size, rows)


class RowFormat(ABC):
    """One row format for a causal LM; fitted on the training table, restored from its state."""

    name: ClassVar[str]
    max_length_: int

    @classmethod
    @abstractmethod
    def from_params(cls, params: Mapping[str, Any]) -> RowFormat:
        """The format configured from the generator's parameters (it picks the ones it uses)."""

    # ------------------------------------------------------------------ training
    @abstractmethod
    def fit(self, table: pd.DataFrame, schema: Schema, *, seed: int) -> RowFormat:
        """Fit the serializer and tokenizer on the clean training table; sets ``max_length_``."""

    @abstractmethod
    def model_spec(self) -> ModelSpec:
        """Vocabulary, positions and special ids the model must have."""

    @abstractmethod
    def training_rows(self, table: pd.DataFrame) -> TrainingRows:
        """The training table as epochs of batches."""

    @abstractmethod
    def encode(self, table: pd.DataFrame, rng: np.random.Generator) -> Batch:
        """Every row of ``table`` as ids and mask padded to one width (``rng``: the format's own randomness)."""

    @abstractmethod
    def pseudo_rows(self, n: int, rng: np.random.Generator, encoder: TableEncoder) -> Batch:
        """``n`` encoded rows from independent uniform marginals over the public domain (DP warm-up)."""

    # ------------------------------------------------------------------ state
    @abstractmethod
    def get_state(self) -> dict[str, Any]:
        """Everything fitted, as plain values (keys ``serializer``, ``tokenizer``, ``special_tokens``, ``max_length``)."""

    @abstractmethod
    def set_state(self, schema: Schema, state: dict[str, Any]) -> RowFormat:
        """Inverse of :meth:`get_state`."""

    # ------------------------------------------------------------------ sampling
    @property
    @abstractmethod
    def eos_id(self) -> int:
        """The token that ends a row."""

    @abstractmethod
    def prompt(self, conditions: Mapping[str, Any]) -> Prompt:
        """The prompt that conditions every row on ``conditions`` (empty mapping: no condition)."""

    @abstractmethod
    def constraint(
        self, kind: str, prompt: Prompt, model: torch.nn.Module
    ) -> tuple[list[Any], Callable[[int, torch.Tensor], list[int]] | None]:
        """Logits processors and/or a ``prefix_allowed_tokens_fn`` enforcing the format while decoding."""

    @abstractmethod
    def decode(self, generated: torch.Tensor, prompt: Prompt, conditions: Mapping[str, Any]) -> ParseResult:
        """Generated ids (after the prompt) -> rows; malformed ones are counted, never raised."""


#: name (``LLMGenerator(serializer=...)``) -> format class
ROW_FORMATS: Registry[type[RowFormat]] = Registry(
    "LLM row format",
    base=RowFormat,
    modules=("tabmem.generators.llm.formats.digits", "tabmem.generators.llm.formats.text"),
)
register_format = ROW_FORMATS.register
