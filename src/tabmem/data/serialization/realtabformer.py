"""REaLTabFormer row format: fixed-width rows, one token per digit position, position-specific vocabulary.

Solatorio & Dupriez, "REaLTabFormer: Generating Realistic Relational and Tabular Data using
Transformers" (2023), ``data_utils.process_numeric_data``: each numerical column is written as a
fixed-width zero-padded digit string (the width of the largest training magnitude, plus the
column's decimals, at most ``numeric_precision``), and each digit *position* is its own token
(``"3_age_1_7"`` = column 3, ``age``, position 1, digit 7); a categorical value is one token.
A row is ``[BOS] tok_1 ... tok_K [EOS]`` with the same K for every row, and the vocabulary of
position ``k`` holds only the tokens seen at that position in the training data, so a model
restricted to it (constrained decoding with ``prefix_allowed_tokens_fn``) can only write
well-formed rows. Negative columns get a sign position (``+``/``-``); a column with missing
values gets an ``@`` token at every position (all-``@`` = NaN).

Besides :meth:`serialize`/:meth:`parse` (space-separated tokens), the fitted serializer gives the
integer view used by :class:`tabmem.generators.llm.LLMGenerator`: :meth:`encode` (rows -> ids),
:meth:`decode` (ids -> validated table) and ``allowed_ids_`` (ids allowed at each position).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tabmem.data.schema import NA_CATEGORY, Schema, canonical_category, validate_table
from tabmem.data.serialization.base import ParseResult, RowSerializer, register_serializer
from tabmem.data.serialization.canonical import decimals_needed
from tabmem.errors import SchemaError, TabmemError

SPECIAL_TOKENS = ("[PAD]", "[BOS]", "[EOS]")
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2


def _token_text(s: str) -> str:
    return s.replace(" ", "\u2581")


def _magnitudes(values: np.ndarray, decimals: int) -> list[int]:
    """``|x| * 10**decimals`` as integers, rounded as Python prints ``x`` (``format(x, ".{d}f")``).

    The digits are those of the value written with ``decimals`` decimals (``1.20625`` at 4 ->
    ``12063``), not of ``np.round`` of the scaled value, which rounds half-to-even on the scaled
    binary product (``12062``).
    """
    fmt = f".{int(decimals)}f"
    return [int(format(abs(x), fmt).replace(".", "")) for x in values.tolist()]


@register_serializer("realtabformer")
class REaLTabFormerSerializer(RowSerializer):
    """Digit-per-position tokens with a position-specific vocabulary (REaLTabFormer).

    Parameters
    ----------
    numeric_precision:
        Most decimals kept for a numerical column (REaLTabFormer: 4); values are rounded to it.
    max_digits:
        Largest width of a numerical column (digits); wider training values raise a clear error.
    """

    def __init__(self, numeric_precision: int = 4, max_digits: int = 18) -> None:
        self.numeric_precision = numeric_precision
        self.max_digits = max_digits

    # ------------------------------------------------------------------ fit
    def _fit(self, train_df: pd.DataFrame, schema: Schema) -> None:
        if not isinstance(self.numeric_precision, (int, np.integer)) or not 0 <= self.numeric_precision <= 10:
            raise TabmemError(
                f"realtabformer: numeric_precision must be an integer in [0, 10], got {self.numeric_precision!r}"
            )
        clean = validate_table(train_df, schema, name="training", nan="match", extra="ignore")
        specs: list[dict[str, Any]] = []
        for c in schema.columns:
            if c in schema.numerical:
                v = clean[c].to_numpy(dtype=np.float64)
                fin = v[np.isfinite(v)]
                dec = decimals_needed(fin, int(self.numeric_precision))
                top = max(_magnitudes(fin, dec), default=0)
                width = max(1, len(str(top)))
                if width > self.max_digits:
                    raise TabmemError(
                        f"realtabformer: column {c!r} needs {width} digits (> max_digits={self.max_digits}); "
                        "lower numeric_precision or rescale the column"
                    )
                specs.append(
                    {
                        "column": c,
                        "kind": "numerical",
                        "decimals": dec,
                        "width": width,
                        "signed": bool((fin < 0).any()),
                        "nan": bool(np.isnan(v).any()),
                    }
                )
            else:
                specs.append({"column": c, "kind": "categorical", "categories": sorted(set(clean[c].tolist()))})
        self.specs_ = specs
        self._build_vocab(clean)

    def _positions(self, spec: dict[str, Any]) -> list[str]:
        if spec["kind"] == "categorical":
            return ["cat"]
        return (["sign"] if spec["signed"] else []) + [str(k) for k in range(spec["width"])]

    def _token_matrix(self, clean: pd.DataFrame) -> list[np.ndarray]:
        """Per position, the token text of every row (object arrays); raises when a value does not fit."""
        out: list[np.ndarray] = []
        for j, spec in enumerate(self.specs_):
            out.extend(self._column_tokens(j, spec, clean[spec["column"]]))
        return out

    def _column_tokens(self, j: int, spec: dict[str, Any], series: pd.Series) -> list[np.ndarray]:
        c = spec["column"]
        if spec["kind"] == "categorical":
            return [np.array([_token_text(f"{j}_{c}__{t}") for t in series.tolist()], dtype=object)]
        out = []
        v = series.to_numpy(dtype=np.float64)
        nan = np.isnan(v)
        if nan.any() and not spec["nan"]:
            raise SchemaError("table", [f"column {c!r}: {int(nan.sum())} missing value(s), none in training"])
        if (~nan & (v < 0)).any() and not spec["signed"]:
            raise SchemaError("table", [f"column {c!r}: negative values, training had none"])
        mag = _magnitudes(np.where(nan, 0.0, v), spec["decimals"])
        n_too_big = sum(x >= 10 ** spec["width"] for x in mag)
        if n_too_big:
            raise SchemaError(
                "table",
                [f"column {c!r}: {n_too_big} value(s) wider than the {spec['width']} digits of training"],
            )
        m = np.array(mag, dtype=np.int64)
        prefix = f"{j}_{_token_text(c)}_"
        if spec["signed"]:
            sign = np.where(nan, "@", np.where(v < 0, "-", "+"))
            out.append(np.array([f"{prefix}sign_{s}" for s in sign.tolist()], dtype=object))
        for k in range(spec["width"]):
            d = (m // 10 ** (spec["width"] - 1 - k)) % 10
            digits = np.where(nan, "@", d.astype(str))
            out.append(np.array([f"{prefix}{k}_{s}" for s in digits.tolist()], dtype=object))
        return out

    def encode_values(self, values: dict[str, Any]) -> dict[int, int]:
        """``{column: value}`` -> ``{position: token id}`` (for conditional sampling); unseen tokens raise."""
        self._check_fitted()
        out: dict[int, int] = {}
        for j, spec in enumerate(self.specs_):
            c = spec["column"]
            if c not in values:
                continue
            v = values[c]
            if spec["kind"] == "categorical":
                series = pd.Series([canonical_category(v)], dtype=object)
            else:
                try:
                    series = pd.Series([float(v)], dtype=np.float64)
                except (TypeError, ValueError):
                    raise TabmemError(f"conditions: column {c!r} is numerical, got {v!r}") from None
            for p, toks in zip(self.column_positions(c), self._column_tokens(j, spec, series)):
                tid = self.token_to_id_.get(toks[0], -1)
                if tid not in self.allowed_ids_[p]:
                    raise TabmemError(
                        f"conditions: value {v!r} of column {c!r} cannot be written with the training vocabulary "
                        f"(token {toks[0]!r} never seen in training)"
                    )
                out[p] = tid
        unknown = [c for c in values if c not in {s["column"] for s in self.specs_}]
        if unknown:
            raise TabmemError(f"conditions: unknown column(s) {unknown}")
        return out

    def _build_vocab(self, clean: pd.DataFrame) -> None:
        cols = self._token_matrix(clean)
        vocab = list(SPECIAL_TOKENS)
        allowed: list[list[int]] = []
        for toks in cols:
            ids = []
            for t in sorted(set(toks.tolist())):
                ids.append(len(vocab))
                vocab.append(t)
            allowed.append(ids)
        if len(set(vocab)) != len(vocab):
            raise TabmemError("realtabformer: two categories map to the same token; rename them")
        self.vocab_ = vocab
        self.token_to_id_ = {t: i for i, t in enumerate(vocab)}
        self.allowed_ids_ = allowed
        self.n_positions_ = len(allowed)
        # decoding tables: for each position, id -> value piece (digit 0-9, sign +-1, category, or NaN)
        self._decode_tables()

    def _decode_tables(self) -> None:
        """Per position: allowed id -> piece (a digit, ``+``/``-``, ``@``, or the category value)."""
        self._pos_lookup = []
        p = 0
        for j, spec in enumerate(self.specs_):
            if spec["kind"] == "categorical":
                by_text = {_token_text(f"{j}_{spec['column']}__{t}"): t for t in spec["categories"]}
                self._pos_lookup.append({i: by_text[self.vocab_[i]] for i in self.allowed_ids_[p]})
                p += 1
                continue
            for _ in self._positions(spec):
                self._pos_lookup.append({i: self.vocab_[i].rsplit("_", 1)[-1] for i in self.allowed_ids_[p]})
                p += 1

    # --------------------------------------------------------- state (save/load)
    def get_state(self) -> dict[str, Any]:
        """Everything learned, as plain lists/dicts (safe for ``torch.load(weights_only=True)``)."""
        self._check_fitted()
        return {"specs": self.specs_, "vocab": list(self.vocab_), "allowed": [list(a) for a in self.allowed_ids_]}

    def set_state(self, schema: Schema, state: dict[str, Any]) -> REaLTabFormerSerializer:
        self.schema_ = schema
        self.specs_ = [dict(s) for s in state["specs"]]
        self.vocab_ = list(state["vocab"])
        self.token_to_id_ = {t: i for i, t in enumerate(self.vocab_)}
        self.allowed_ids_ = [list(a) for a in state["allowed"]]
        self.n_positions_ = len(self.allowed_ids_)
        self._decode_tables()
        return self

    # ------------------------------------------------------------ ids view
    def encode(self, df: pd.DataFrame, *, name: str = "table") -> np.ndarray:
        """Rows -> token ids ``(n, n_positions_)`` (no BOS/EOS); unseen tokens raise naming the column."""
        self._check_fitted()
        clean = validate_table(df, self.schema_, name=name, nan="match", extra="ignore")
        cols = self._token_matrix(clean)
        out = np.empty((len(clean), len(cols)), dtype=np.int64)
        for p, toks in enumerate(cols):
            ids = [self.token_to_id_.get(t, -1) for t in toks.tolist()]
            arr = np.asarray(ids, dtype=np.int64)
            if (arr < 0).any() or not np.isin(arr, self.allowed_ids_[p]).all():
                bad = toks[np.flatnonzero((arr < 0) | ~np.isin(arr, self.allowed_ids_[p]))[0]]
                raise SchemaError(name, [f"token {bad!r} (position {p}) was never seen in training"])
            out[:, p] = arr
        return out

    def position_column(self, position: int) -> str:
        """Name of the column that position ``position`` belongs to."""
        k = 0
        for spec in self.specs_:
            n = len(self._positions(spec))
            if position < k + n:
                return spec["column"]
            k += n
        raise IndexError(position)

    def column_positions(self, column: str) -> range:
        k = 0
        for spec in self.specs_:
            n = len(self._positions(spec))
            if spec["column"] == column:
                return range(k, k + n)
            k += n
        raise TabmemError(f"unknown column {column!r}; columns: {[s['column'] for s in self.specs_]}")

    def decode(self, ids: np.ndarray | Sequence[Sequence[int]]) -> ParseResult:
        """Token ids ``(n, n_positions_)`` -> validated table; rows with a token not allowed at its position are dropped."""
        self._check_fitted()
        rows, index, reasons = [], [], []
        for i, seq in enumerate(ids):
            seq = [int(t) for t in seq]
            if len(seq) != self.n_positions_:
                reasons.append(f"row {i}: expected {self.n_positions_} tokens, got {len(seq)}")
                continue
            row, problem, p = [], None, 0
            for spec in self.specs_:
                n = len(self._positions(spec))
                pieces = []
                for q in range(p, p + n):
                    piece = self._pos_lookup[q].get(seq[q])
                    if piece is None:
                        problem = f"position {q} ({spec['column']!r}): token id {seq[q]} not allowed there"
                        break
                    pieces.append(piece)
                p += n
                if problem:
                    break
                if spec["kind"] == "categorical":
                    row.append(pieces[0])
                    continue
                if "@" in pieces:
                    if any(x != "@" for x in pieces):
                        problem = f"column {spec['column']!r}: partial missing value"
                        break
                    row.append(np.nan)
                    continue
                sign = 1.0
                if spec["signed"]:
                    sign = -1.0 if pieces[0] == "-" else 1.0
                    pieces = pieces[1:]
                row.append(sign * int("".join(pieces)) / 10.0 ** spec["decimals"])
            if problem:
                reasons.append(f"row {i}: {problem}")
                continue
            rows.append(row)
            index.append(i)
        cols = [s["column"] for s in self.specs_]
        table = pd.DataFrame(rows, columns=cols, index=pd.Index(index, dtype=np.int64))
        for s in self.specs_:
            table[s["column"]] = table[s["column"]].astype(np.float64 if s["kind"] == "numerical" else object)
        return ParseResult(table=table, n_invalid=len(reasons), invalid_reasons=reasons)

    # ------------------------------------------------------------ text view
    def serialize(self, df: pd.DataFrame, *, name: str = "table") -> list[str]:
        """Space-separated token texts, one string per row."""
        ids = self.encode(df, name=name)
        return [" ".join(self.vocab_[t] for t in row) for row in ids.tolist()]

    def parse(self, texts: Sequence[str]) -> ParseResult:
        """Token texts -> table; unknown tokens, wrong lengths or misplaced tokens make the row invalid."""
        self._check_fitted()
        seqs, pos, reasons = [], [], []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                reasons.append(f"text {i}: not a string ({type(text).__name__})")
                continue
            toks = [t for t in text.split() if t not in SPECIAL_TOKENS]
            ids = [self.token_to_id_.get(t, -1) for t in toks]
            if any(x < 0 for x in ids):
                reasons.append(f"text {i}: unknown token {toks[ids.index(-1)][:40]!r}")
                continue
            seqs.append(ids)
            pos.append(i)
        res = self.decode(seqs)
        extra = [f"text {pos[int(r.split()[1].rstrip(':'))]}: {r.split(': ', 1)[1]}" for r in res.invalid_reasons]
        table = res.table.copy()
        table.index = pd.Index([pos[k] for k in res.table.index], dtype=np.int64)
        return ParseResult(table=table, n_invalid=len(reasons) + len(extra), invalid_reasons=reasons + extra)


def category_value(spec_categories: Sequence[str], value: object) -> str:
    """Canonical category of ``value`` checked against the fitted categories."""
    tok = canonical_category(value)
    if tok not in spec_categories and tok != NA_CATEGORY:
        raise TabmemError(f"category {tok!r} was not seen when fitting")
    return tok
