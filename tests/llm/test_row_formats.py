"""LLM row formats (the generator's format strategies), each checked against its definition on a tiny table.

Every registered format must: encode rows as ``[BOS] row [EOS]`` (padding masked out), decode its
own encodings back to the table, write DP pseudo rows inside the public domain, shuffle an epoch
as a permutation, and restore from its state. Then each format's own definition: the digit
format's ids are the REaLTabFormer serializer's and its constraint allows exactly the position
vocabulary; the text format's rows are the GReaT texts, in new column orders every epoch.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.data.serialization.great import GReaTSerializer
from tabmem.data.serialization.realtabformer import BOS_ID, EOS_ID, REaLTabFormerSerializer
from tabmem.errors import TabmemError
from tabmem.generators.llm.formats import ROW_FORMATS, DigitFormat, TextFormat

pytest.importorskip("transformers")

PARAMS = {"numeric_precision": 4, "bpe_vocab_size": 300, "backbone": None}


@pytest.fixture
def table():
    return pd.DataFrame({"age": [23, 35, 41, 58, 62, 35], "sex": ["F", "M", "F", "M", "F", "F"]})


@pytest.fixture
def schema(table):
    return Schema.infer(table, categorical=["sex"], numerical=["age"])


def fitted(name, table, schema):
    return ROW_FORMATS.get(name).from_params(PARAMS).fit(table, schema, seed=0)


def rows_of(ids, mask):
    """Token lists without padding."""
    return [r[: int(m.sum())] for r, m in zip(ids.tolist(), mask)]


def test_registry_names_the_serializer_values():
    assert ROW_FORMATS.names() == ["great", "realtabformer"]
    assert ROW_FORMATS.get("realtabformer") is DigitFormat and ROW_FORMATS.get("great") is TextFormat


@pytest.mark.parametrize("name", ROW_FORMATS.names())
def test_encode_decode_round_trip(name, table, schema):
    fmt = fitted(name, table, schema)
    spec = fmt.model_spec()
    ids, mask = fmt.encode(table, np.random.default_rng(1))
    assert ids.shape[0] == len(table) and ids.dtype == torch.long and set(mask.unique().tolist()) <= {0, 1}
    for row in rows_of(ids, mask):  # [BOS] row [EOS], padding only after EOS
        assert row[0] == spec.bos_id and row[-1] == spec.eos_id == fmt.eos_id and spec.eos_id not in row[1:-1]
        assert len(row) <= fmt.max_length_ <= spec.n_positions
    assert int(ids.max()) < spec.vocab_size
    res = fmt.decode(ids[:, 1:], fmt.prompt({}), {})  # what generate returns: everything after the prompt
    assert res.n_invalid == 0
    pd.testing.assert_frame_equal(res.table, table.astype({"age": float}), check_dtype=False)


@pytest.mark.parametrize("name", ROW_FORMATS.names())
def test_pseudo_rows_stay_in_the_public_domain(name, table, schema):
    fmt = fitted(name, table, schema)
    ids, mask = fmt.pseudo_rows(40, np.random.default_rng(0), TableEncoder(schema).fit(table))
    res = fmt.decode(ids[:, 1:], fmt.prompt({}), {})
    assert res.n_invalid == 0 and len(res.table) == 40 and set(res.table["sex"]) == {"F", "M"}
    if name == "great":  # uniform in the column range
        assert (
            res.table["age"].between(23, 62).all() and res.table["age"].nunique() > 10
        )  # not only the 5 training ages
    else:  # one allowed token per digit position, independently: e.g. 63 and 22 are writable
        for p, allowed in enumerate(fmt.serializer_.allowed_ids_):
            assert set(ids[:, 1 + p].tolist()) == set(allowed)


@pytest.mark.parametrize("name", ROW_FORMATS.names())
def test_epoch_is_a_shuffled_partition(name, table, schema):
    fmt = fitted(name, table, schema)
    g = torch.Generator().manual_seed(0)
    batches = fmt.training_rows(table).epoch(np.random.default_rng(0), g, 4)
    assert [b[0].shape[0] for b in batches] == [4, 2]
    decoded = pd.concat([fmt.decode(ids[:, 1:], fmt.prompt({}), {}).table for ids, _ in batches], ignore_index=True)
    key = ["age", "sex"]
    pd.testing.assert_frame_equal(
        decoded.sort_values(key).reset_index(drop=True),
        table.astype({"age": float}).sort_values(key).reset_index(drop=True),
        check_dtype=False,
    )


@pytest.mark.parametrize("name", ROW_FORMATS.names())
def test_state_round_trip(name, table, schema):
    fmt = fitted(name, table, schema)
    state = fmt.get_state()
    assert set(state) == {"serializer", "tokenizer", "special_tokens", "max_length"}
    buf = io.BytesIO()
    torch.save(state, buf)  # checkpoints are loaded with weights_only=True: plain values only
    buf.seek(0)
    clone = ROW_FORMATS.get(name).from_params(PARAMS).set_state(schema, torch.load(buf, weights_only=True))
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for a, b in zip(fmt.encode(table, rng_a), clone.encode(table, rng_b)):
        assert torch.equal(a, b)
    assert clone.model_spec() == fmt.model_spec() and clone.max_length_ == fmt.max_length_
    cond = {"sex": "M", "age": 35}
    assert torch.equal(clone.prompt(cond).ids, fmt.prompt(cond).ids)


# ------------------------------------------------------------------ digit format (REaLTabFormer)
def test_digit_format_is_the_realtabformer_serializer(table, schema):
    fmt = fitted("realtabformer", table, schema)
    ser = REaLTabFormerSerializer(numeric_precision=4).fit(table, schema)
    ids, mask = fmt.encode(table, None)
    assert mask.all() and (ids[:, 0] == BOS_ID).all() and (ids[:, -1] == EOS_ID).all()
    assert np.array_equal(ids[:, 1:-1].numpy(), ser.encode(table))
    spec = fmt.model_spec()
    assert spec.vocab_size == len(ser.vocab_) and spec.fresh_vocabulary and fmt.max_length_ == ser.n_positions_ + 2


def test_digit_constraints_allow_exactly_the_position_vocabulary(table, schema):
    fmt = fitted("realtabformer", table, schema)
    allowed = fmt.serializer_.allowed_ids_
    model = torch.nn.Module()
    model.get_output_embeddings = lambda: torch.nn.Linear(1, len(fmt.serializer_.vocab_))
    prompt = fmt.prompt({"sex": "M"})
    forced_pos = next(iter(prompt.forced))
    (mask_proc,), none = fmt.constraint("mask", prompt, model)
    no_procs, prefix_fn = fmt.constraint("prefix_fn", prompt, model)
    assert none is None and no_procs == []
    for p in range(len(allowed) + 1):
        ids = torch.zeros((1, 1 + p), dtype=torch.long)
        scores = mask_proc(ids, torch.zeros(1, len(fmt.serializer_.vocab_)))
        finite = torch.isfinite(scores[0]).nonzero().flatten().tolist()
        expected = [EOS_ID] if p == len(allowed) else allowed[p]
        if p == forced_pos:
            expected = [prompt.forced[p]]
        assert finite == sorted(expected) == sorted(prefix_fn(0, ids[0]))
    assert fmt.constraint("none", fmt.prompt({}), model) == ([], None)
    with pytest.raises(TabmemError, match="constraint='mask'"):
        fmt.constraint("none", prompt, model)
    with pytest.raises(TabmemError, match="age"):
        fmt.prompt({"age": 999})  # three digits: not writable with the training vocabulary


def test_digit_decode_counts_malformed_rows(table, schema):
    fmt = fitted("realtabformer", table, schema)
    good = fmt.encode(table.head(2), None)[0][:, 1:].tolist()  # digits + EOS
    swapped = [good[0][1], good[0][0], *good[0][2:]]
    short = [good[0][0], EOS_ID]
    no_eos = good[0][:-1] + [good[0][0]]
    width = max(map(len, [*good, swapped, short, no_eos]))
    gen = torch.tensor([r + [EOS_ID] * (width - len(r)) for r in [good[0], swapped, short, no_eos, good[1]]])
    res = fmt.decode(gen, fmt.prompt({}), {})
    assert res.n_invalid == 3 and res.table["age"].tolist() == [23.0, 35.0]


# ------------------------------------------------------------------ text format (GReaT)
def test_text_format_is_great_text_with_new_orders_each_epoch(table, schema):
    fmt = fitted("great", table, schema)
    tok = fmt.tokenizer_
    ser = GReaTSerializer(permute=True).fit(table, schema)
    ids, mask = fmt.encode(table, np.random.default_rng(5))
    texts = [tok.decode(r[1:-1]) for r in rows_of(ids, mask)]
    assert texts == ser.serialize(table, rng=np.random.default_rng(5))
    spec = fmt.model_spec()
    assert not spec.fresh_vocabulary and spec.vocab_size == len(tok) and spec.n_positions >= fmt.max_length_ + 8
    g = torch.Generator().manual_seed(0)
    rows = fmt.training_rows(table)
    rng = np.random.default_rng(0)
    first = [tok.decode(r) for b in rows.epoch(rng, g, 6) for r in rows_of(*b)]
    second = [tok.decode(r) for b in rows.epoch(rng, g, 6) for r in rows_of(*b)]
    assert first != second  # a fresh column order per row and epoch
    assert fmt.constraint("mask", fmt.prompt({}), None) == ([], None)  # free text: checked when decoding


def test_text_prompt_and_decode_with_conditions(table, schema):
    fmt = fitted("great", table, schema)
    tok = fmt.tokenizer_
    prompt = fmt.prompt({"sex": "F"})
    assert tok.decode(prompt.ids[0, 1:].tolist()) == "sex is F," and prompt.forced == {}
    assert prompt.max_new_tokens == fmt.max_length_ - prompt.ids.shape[1]
    written = [" age is 41", " age is x", " age is 58, sex is M", " age is 23, age is 24", " age is 62"]
    gen = fmt.encode_texts(written)[0][:, 1:]  # continuations after the prompt, each ending in EOS
    res = fmt.decode(gen, prompt, {"sex": "F"})
    assert res.table.to_dict("list") == {"age": [41.0, 62.0], "sex": ["F", "F"]} and res.n_invalid == 3
