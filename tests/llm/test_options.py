"""SamplingOptions: validated once in the constructor (messages name the argument and value), frozen."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tabmem.errors import ParameterError
from tabmem.generators.llm.options import CONSTRAINTS, SamplingOptions


def test_defaults_and_normalisation():
    opts = SamplingOptions()
    assert (opts.temperature, opts.top_k, opts.top_p, opts.tendency, opts.constraint) == (1.0, None, 1.0, None, "mask")
    assert dict(opts.conditions) == {} and opts.logits_processor == ()
    procs = [lambda ids, scores: scores]
    opts = SamplingOptions(
        temperature=2, top_k=5, top_p=1, tendency=3, conditions=[("sex", "F")], logits_processor=procs
    )
    assert isinstance(opts.temperature, float) and isinstance(opts.tendency, float) and opts.tendency == 3.0
    assert dict(opts.conditions) == {"sex": "F"} and opts.logits_processor == tuple(procs)
    assert {c: SamplingOptions(constraint=c).constraint for c in CONSTRAINTS} == {c: c for c in CONSTRAINTS}


def test_frozen_and_read_only():
    cond = {"age": 40, "sex": "M"}
    opts = SamplingOptions(conditions=cond)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.tendency = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        opts.conditions["age"] = 1  # type: ignore[index]
    cond["age"] = 1  # the caller's dict is copied, not shared
    assert list(opts.conditions.items()) == [("age", 40), ("sex", "M")]  # order kept (GReaT prompts follow it)


@pytest.mark.parametrize(
    "field,value",
    [
        ("temperature", 0),
        ("temperature", -1.0),
        ("temperature", math.inf),
        ("temperature", "1"),
        ("temperature", True),
        ("top_k", 0),
        ("top_k", 2.5),
        ("top_k", True),
        ("top_p", 0.0),
        ("top_p", 1.5),
        ("top_p", None),
        ("tendency", 0.5),
        ("tendency", math.nan),
        ("tendency", "9"),
        ("constraint", "regex"),
        ("conditions", 5),
        ("logits_processor", [1]),
        ("logits_processor", "tlp"),
    ],
)
def test_bad_values_name_argument_and_value(field, value):
    with pytest.raises(ParameterError) as err:
        SamplingOptions(**{field: value})
    msg = str(err.value)
    assert msg.startswith(field) and repr(value) in msg, msg


def test_generator_validates_once_and_keeps_no_hidden_state(small_table, monkeypatch):
    """sample() builds one SamplingOptions and one processor list, however many chunks and rounds it needs."""
    from tabmem.data.schema import Schema
    from tabmem.defenses import TendencyLogitsProcessor
    from tabmem.generators.llm import LLMGenerator, decoding

    schema = Schema.infer(small_table, categorical=["sex"], numerical=["age", "income"])
    gen = LLMGenerator(epochs=1, n_layer=1, n_head=2, n_embd=16, random_state=0).fit(small_table, schema)
    built = {"options": 0, "tlp": 0}

    class CountingTLP(TendencyLogitsProcessor):
        def __init__(self, *args, **kwargs):
            built["tlp"] += 1
            super().__init__(*args, **kwargs)

    init = SamplingOptions.__post_init__

    def counting_post_init(self):
        built["options"] += 1
        init(self)

    monkeypatch.setattr(decoding, "TendencyLogitsProcessor", CountingTLP)
    monkeypatch.setattr(SamplingOptions, "__post_init__", counting_post_init)
    out = gen.sample(12, random_state=0, batch_size=5, tendency=2.0)  # 3 chunks
    assert len(out) == 12 and built == {"options": 1, "tlp": 1}
    assert gen.last_sample_stats_["rounds"] == 3
    assert not any(k.startswith("_sample") for k in vars(gen))
    with pytest.raises(ParameterError, match="top_p"):
        LLMGenerator(epochs=1, top_p=2.0).fit(small_table, schema)
