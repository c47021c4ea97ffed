"""REaLTabFormer digit tokens for a causal LM (Solatorio & Dupriez 2023).

Rows are ``[BOS] tok_1 ... tok_K [EOS]`` with one token per digit position and a
position-specific vocabulary (:class:`~tabmem.data.serialization.realtabformer.REaLTabFormerSerializer`);
the vocabulary is the serializer's, so no tokenizer is trained. Decoding is constrained to the
tokens allowed at each position (:mod:`tabmem.generators.llm.constraints`), which also fixes
conditioned columns: every generated row is well-formed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.data.serialization.base import ParseResult
from tabmem.data.serialization.realtabformer import BOS_ID, EOS_ID, PAD_ID, REaLTabFormerSerializer
from tabmem.errors import TabmemError
from tabmem.generators.llm.constraints import PositionMaskLogitsProcessor, prefix_allowed_tokens_fn
from tabmem.generators.llm.formats.base import Batch, FixedRows, Prompt, RowFormat, register_format
from tabmem.generators.llm.huggingface import ModelSpec


@register_format("realtabformer")
class DigitFormat(RowFormat):
    """Digit-per-position tokens; ``numeric_precision`` = most decimals kept per column."""

    def __init__(self, numeric_precision: int = 4) -> None:
        self.numeric_precision = numeric_precision

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> DigitFormat:
        return cls(numeric_precision=int(params["numeric_precision"]))

    # ------------------------------------------------------------------ training
    def fit(self, table: pd.DataFrame, schema: Schema, *, seed: int) -> DigitFormat:
        self.serializer_ = REaLTabFormerSerializer(numeric_precision=self.numeric_precision).fit(table, schema)
        self.max_length_ = self.serializer_.n_positions_ + 2
        return self

    def model_spec(self) -> ModelSpec:
        return ModelSpec(len(self.serializer_.vocab_), self.max_length_, BOS_ID, EOS_ID, PAD_ID, fresh_vocabulary=True)

    def training_rows(self, table: pd.DataFrame) -> FixedRows:
        return FixedRows(*self._rows(table))

    def encode(self, table: pd.DataFrame, rng: np.random.Generator) -> Batch:
        return self._rows(table)  # deterministic: rng unused

    def _rows(self, table: pd.DataFrame) -> Batch:
        """``[BOS] digits [EOS]`` for every row (fixed width, so the mask is all ones)."""
        ids = self.serializer_.encode(table, name="training")
        n = len(ids)
        seq = np.concatenate([np.full((n, 1), BOS_ID), ids, np.full((n, 1), EOS_ID)], axis=1)
        ids_t = torch.as_tensor(seq, dtype=torch.long)
        return ids_t, torch.ones_like(ids_t)

    def pseudo_rows(self, n: int, rng: np.random.Generator, encoder: TableEncoder) -> Batch:
        """One allowed token per position, uniformly and independently."""
        cols = [rng.choice(np.asarray(a), size=n) for a in self.serializer_.allowed_ids_]
        ids = torch.as_tensor(np.column_stack([np.full(n, BOS_ID), *cols, np.full(n, EOS_ID)]), dtype=torch.long)
        return ids, torch.ones_like(ids)

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        return {
            "serializer": self.serializer_.get_state(),
            "tokenizer": "",
            "special_tokens": {},
            "max_length": int(self.max_length_),
        }

    def set_state(self, schema: Schema, state: dict[str, Any]) -> DigitFormat:
        ser = REaLTabFormerSerializer(numeric_precision=self.numeric_precision)
        self.serializer_ = ser.set_state(schema, state["serializer"])
        self.max_length_ = int(state["max_length"])
        return self

    # ------------------------------------------------------------------ sampling
    @property
    def eos_id(self) -> int:
        return EOS_ID

    def prompt(self, conditions: Mapping[str, Any]) -> Prompt:
        """``[BOS]``; conditions become forced positions (unwritable values raise naming the column)."""
        forced = self.serializer_.encode_values(dict(conditions)) if conditions else {}
        return Prompt(torch.tensor([[BOS_ID]]), forced, self.serializer_.n_positions_ + 1)

    def constraint(
        self, kind: str, prompt: Prompt, model: torch.nn.Module
    ) -> tuple[list[Any], Callable[[int, torch.Tensor], list[int]] | None]:
        allowed, length = self.serializer_.allowed_ids_, prompt.ids.shape[1]
        if kind == "mask":
            vocab = model.get_output_embeddings().out_features
            return [PositionMaskLogitsProcessor(allowed, vocab, EOS_ID, length, prompt.forced)], None
        if kind == "prefix_fn":
            return [], prefix_allowed_tokens_fn(allowed, EOS_ID, length, prompt.forced)
        if prompt.forced:
            raise TabmemError("conditional sampling with the digit format needs constraint='mask' or 'prefix_fn'")
        return [], None

    def decode(self, generated: torch.Tensor, prompt: Prompt, conditions: Mapping[str, Any]) -> ParseResult:
        """Cut each row at ``[EOS]``; rows of the wrong length or with misplaced tokens are counted invalid."""
        seqs = []
        for row in generated.tolist():
            seqs.append(row[: row.index(EOS_ID)] if EOS_ID in row else row)
        return self.serializer_.decode(seqs)
