"""GReaT text for a causal LM (Borisov et al. 2023): ``col is value, ...`` in a fresh column order.

Each epoch serialises the training rows again with new column orders (from the generator's
numpy stream), so the model learns every order and can be prompted with any subset of columns.
The tokenizer is a byte-level BPE trained on the rows (``backbone=None``) or the backbone's own.
Decoding is unconstrained: malformed texts and rows that contradict the conditions are counted
invalid and dropped by the generator's resampling loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, canonical_category
from tabmem.data.serialization.base import ParseResult
from tabmem.data.serialization.great import GReaTSerializer
from tabmem.generators.llm.formats.base import Batch, Prompt, RowFormat, register_format
from tabmem.generators.llm.huggingface import SPECIAL_TOKENS, ModelSpec, load_tokenizer, train_bpe, wrap_tokenizer


@register_format("great")
class TextFormat(RowFormat):
    """``col is value`` texts; ``backbone`` supplies the tokenizer, else a BPE of ``bpe_vocab_size``."""

    def __init__(self, bpe_vocab_size: int = 512, backbone: str | None = None) -> None:
        self.bpe_vocab_size = bpe_vocab_size
        self.backbone = backbone

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TextFormat:
        return cls(bpe_vocab_size=int(params["bpe_vocab_size"]), backbone=params["backbone"])

    # ------------------------------------------------------------------ training
    def fit(self, table: pd.DataFrame, schema: Schema, *, seed: int) -> TextFormat:
        """Tokenizer and length budget from two seeded serialisations of the rows (two column orders each)."""
        self.schema_ = schema
        self.serializer_ = GReaTSerializer(permute=True).fit(table, schema)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
        texts = self.serializer_.serialize(table, rng=rng) + self.serializer_.serialize(table, rng=rng)
        if self.backbone is None:
            self.tokenizer_json_ = train_bpe(texts, self.bpe_vocab_size).to_str()
            self.special_tokens_ = dict(SPECIAL_TOKENS)
            self.tokenizer_ = wrap_tokenizer(self.tokenizer_json_, self.special_tokens_)
        else:
            self.tokenizer_ = load_tokenizer(self.backbone)
            self.tokenizer_json_ = self.tokenizer_.backend_tokenizer.to_str()
            self.special_tokens_ = {
                k: getattr(self.tokenizer_, k) for k in SPECIAL_TOKENS if getattr(self.tokenizer_, k, None) is not None
            }
        lengths = [len(self.tokenizer_(t)["input_ids"]) for t in texts]
        self.max_length_ = int(math.ceil(max(lengths) * 1.25)) + 2
        return self

    def model_spec(self) -> ModelSpec:
        tok = self.tokenizer_
        n_positions = max(64, self.max_length_ + 8)
        return ModelSpec(len(tok), n_positions, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, False)

    def training_rows(self, table: pd.DataFrame) -> TextRows:
        return TextRows(self, table)

    def encode(self, table: pd.DataFrame, rng: np.random.Generator) -> Batch:
        return self.encode_texts(self.serializer_.serialize(table, rng=rng))

    def encode_texts(self, texts: list[str]) -> Batch:
        """``[BOS] text [EOS]`` per text, right-padded with ``[PAD]`` to the longest (mask 0 there)."""
        tok = self.tokenizer_
        rows = [[tok.bos_token_id, *tok(t, add_special_tokens=False)["input_ids"], tok.eos_token_id] for t in texts]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return ids, mask

    def pseudo_rows(self, n: int, rng: np.random.Generator, encoder: TableEncoder) -> Batch:
        """Uniform values in each column's training range, uniform categories; texts in random orders."""
        schema, pseudo = self.schema_, {}
        for j, c in enumerate(schema.numerical):
            pseudo[c] = rng.uniform(encoder.min_[j], encoder.max_[j], size=n)
        for c in schema.categorical:
            pseudo[c] = rng.choice(encoder.categories_[c], size=n)
        frame = pd.DataFrame(pseudo)[list(schema.columns)]
        return self.encode(frame, rng)

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        return {
            "serializer": self.serializer_.get_state(),
            "tokenizer": self.tokenizer_json_,
            "special_tokens": dict(self.special_tokens_),
            "max_length": int(self.max_length_),
        }

    def set_state(self, schema: Schema, state: dict[str, Any]) -> TextFormat:
        self.schema_ = schema
        self.serializer_ = GReaTSerializer(permute=True).set_state(schema, state["serializer"])
        self.tokenizer_json_ = state["tokenizer"]
        self.special_tokens_ = dict(state["special_tokens"])
        self.tokenizer_ = wrap_tokenizer(self.tokenizer_json_, self.special_tokens_)
        self.max_length_ = int(state["max_length"])
        return self

    # ------------------------------------------------------------------ sampling
    @property
    def eos_id(self) -> int:
        return self.tokenizer_.eos_token_id

    def prompt(self, conditions: Mapping[str, Any]) -> Prompt:
        """``[BOS]`` then the condition cells (``sex is F, age is 40,``); the model writes the rest."""
        text = self.serializer_.prompt(dict(conditions)).rstrip() if conditions else ""
        ids = torch.tensor(
            [[self.tokenizer_.bos_token_id, *self.tokenizer_(text, add_special_tokens=False)["input_ids"]]]
        )
        return Prompt(ids, {}, max(1, self.max_length_ - ids.shape[1]))

    def constraint(
        self, kind: str, prompt: Prompt, model: torch.nn.Module
    ) -> tuple[list[Any], Callable[[int, torch.Tensor], list[int]] | None]:
        return [], None  # free text: validity is checked when decoding

    def decode(self, generated: torch.Tensor, prompt: Prompt, conditions: Mapping[str, Any]) -> ParseResult:
        """Prompt text + generated text, parsed; rows whose conditioned cells changed are counted invalid."""
        tok = self.tokenizer_
        prefix = tok.decode(prompt.ids[0, 1:].tolist()) if prompt.ids.shape[1] > 1 else ""
        texts = []
        for row in generated.tolist():
            if tok.eos_token_id in row:
                row = row[: row.index(tok.eos_token_id)]
            texts.append(prefix + tok.decode(row, skip_special_tokens=True))
        res = self.serializer_.parse(texts)
        if not conditions or not len(res.table):
            return res
        keep = np.ones(len(res.table), dtype=bool)
        for c, v in conditions.items():
            if c in self.schema_.numerical:
                keep &= np.isclose(res.table[c].to_numpy(dtype=float), float(v))
            else:
                keep &= res.table[c].to_numpy() == canonical_category(v)
        return ParseResult(res.table[keep], res.n_invalid + int((~keep).sum()), res.invalid_reasons)


@dataclass(frozen=True)
class TextRows:
    """The training table, serialised afresh (new column orders) every epoch."""

    format: TextFormat
    table: pd.DataFrame

    def epoch(
        self, rng: np.random.Generator, generator: torch.Generator, batch_size: int, rows: list | None = None
    ) -> list[Batch]:
        """Texts from ``rng``, shuffled by ``generator``, each batch padded to its own longest row;
        ``rows`` (a list) receives each batch's row positions."""
        texts = self.format.serializer_.serialize(self.table, rng=rng)
        perm = torch.randperm(len(texts), generator=generator, device=generator.device).cpu()
        if rows is not None:
            rows.extend(perm[s : s + batch_size] for s in range(0, len(texts), batch_size))
        return [
            self.format.encode_texts([texts[i] for i in perm[s : s + batch_size].tolist()])
            for s in range(0, len(texts), batch_size)
        ]
