"""LLMGenerator: training, sampling, constraints, conditions, TLP, checkpoints, backbones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import CheckpointCallback, LambdaCallback, get_generator, load_generator
from tabmem.generators.llm import LLMGenerator

TINY = {"n_layer": 1, "n_head": 2, "n_embd": 32, "batch_size": 16, "lr": 3e-3}


def schema_of(df):
    return Schema.infer(df, categorical=["sex"], numerical=["age", "income"])


@pytest.fixture
def fitted(small_table):
    return LLMGenerator(epochs=3, random_state=0, **TINY).fit(small_table, schema_of(small_table))


def test_registry_and_interface(fitted, small_table):
    assert isinstance(get_generator("llm", epochs=1), LLMGenerator)
    assert len(fitted.history_) == 3 and fitted.history_[0]["loss"] > fitted.history_[-1]["loss"]
    out = fitted.sample(30, random_state=1)
    assert list(out.columns) == list(small_table.columns) and len(out) == 30
    assert out["age"].dtype == small_table["age"].dtype
    assert set(out["sex"]) <= {"F", "M"}
    ser = fitted.serializer_
    w = {s["column"]: s.get("width") for s in ser.specs_}
    assert (out["age"] < 10 ** w["age"]).all() and (out["income"].abs() < 10 ** (w["income"] - 1)).all()
    assert fitted.last_sample_stats_["invalid"] == 0  # constrained decoding never writes malformed rows


def test_seeds_and_global_rng(fitted):
    torch.manual_seed(5)
    np.random.seed(5)  # noqa: NPY002
    before = (torch.get_rng_state().clone(), np.random.get_state()[1].copy())  # noqa: NPY002
    a = fitted.sample(25, random_state=3)
    assert torch.equal(before[0], torch.get_rng_state()) and np.array_equal(before[1], np.random.get_state()[1])  # noqa: NPY002
    pd.testing.assert_frame_equal(a, fitted.sample(25, random_state=3))
    assert not a.equals(fitted.sample(25, random_state=4))


def test_mask_and_prefix_fn_constraints_identical(fitted):
    a = fitted.sample(20, random_state=7, constraint="mask")
    b = fitted.sample(20, random_state=7, constraint="prefix_fn")
    pd.testing.assert_frame_equal(a, b)


def test_unconstrained_malformed_rows_are_dropped(fitted, small_table):
    """Malformed generations (built by hand) are counted and resampled; only valid rows come out."""
    import itertools

    from tabmem.data.serialization.realtabformer import EOS_ID

    good = fitted.format_.encode(small_table.head(2), None)[0][:, 1:].tolist()  # digits + [EOS]
    swapped = [good[0][1], good[0][0], *good[0][2:]]  # tokens at the wrong positions
    short = [good[0][0], EOS_ID] + [EOS_ID] * (len(good[0]) - 2)  # ends early
    unknown = [10**6, *good[0][1:]]  # not in the vocabulary
    cycle = itertools.cycle([good[0], swapped, short, good[1], unknown])
    calls = []

    def fake_generate(input_ids, **kwargs):
        calls.append(input_ids.shape[0])
        rows = torch.tensor([next(cycle) for _ in range(input_ids.shape[0])])
        return torch.cat([input_ids, rows], dim=1)

    fitted.model_.generate = fake_generate
    out = fitted.sample(10, random_state=0, constraint="none")
    # round 1: 10 asked, 4 valid; round 2 sized to the 40% valid rate seen: ceil(6 / 0.4 * 1.1) = 17
    assert calls == [10, 17]
    assert fitted.last_sample_stats_ == {"generated": 27, "invalid": 27 - 4 - 7, "rounds": 2}
    expected = small_table.head(2).iloc[[0, 1] * 5].reset_index(drop=True)
    pd.testing.assert_frame_equal(out[["age", "sex"]], expected[["age", "sex"]])
    cycle = itertools.cycle([swapped, short])  # never valid: a clear error after max_resample_rounds
    with pytest.raises(TabmemError, match="only 0 valid rows of 10 after 20 generation rounds"):
        fitted.sample(10, random_state=0, constraint="none")


def test_conditional_and_tlp(fitted):
    out = fitted.sample(20, random_state=0, conditions={"sex": "F", "age": 33})
    assert (out["sex"] == "F").all() and (out["age"] == 33).all()
    with pytest.raises(TabmemError, match="age"):
        fitted.sample(5, conditions={"age": 12345})
    with pytest.raises(TabmemError, match="unknown column"):
        fitted.sample(5, conditions={"nope": 1})
    plain = fitted.sample(200, random_state=0)
    tlp = fitted.sample(200, random_state=0, tendency=20.0)
    assert not plain.equals(tlp)
    # TLP flattens the next-token distribution: more distinct values
    assert tlp["income"].nunique() >= plain["income"].nunique()
    with pytest.raises(TabmemError, match="tendency"):
        fitted.sample(5, tendency=0.5)


def test_save_load_and_resume(tmp_path, small_table):
    schema = schema_of(small_table)
    full = LLMGenerator(epochs=4, random_state=1, **TINY).fit(small_table, schema)
    part = LLMGenerator(epochs=2, random_state=1, **TINY)
    part.fit(small_table, schema, callbacks=[CheckpointCallback(1, tmp_path / "ck")])
    resumed = LLMGenerator(epochs=4, random_state=1, **TINY).fit(
        small_table, schema, resume_from=tmp_path / "ck" / "checkpoint.pt"
    )
    for (k, a), b in zip(full.model_.state_dict().items(), resumed.model_.state_dict().values()):
        assert torch.equal(a, b), k
    full.save(tmp_path / "m.pt")
    loaded = load_generator(tmp_path / "m.pt")
    pd.testing.assert_frame_equal(full.sample(15, random_state=2), loaded.sample(15, random_state=2))


def test_callbacks_can_sample_mid_training(small_table):
    seen = []
    cb = LambdaCallback(lambda gen, epoch, logs: seen.append(len(gen.sample(5, random_state=epoch))))
    a = LLMGenerator(epochs=2, random_state=3, **TINY).fit(small_table, schema_of(small_table), callbacks=[cb])
    b = LLMGenerator(epochs=2, random_state=3, **TINY).fit(small_table, schema_of(small_table))
    assert seen == [5, 5]
    for x, y in zip(a.model_.parameters(), b.model_.parameters()):
        assert torch.equal(x, y)  # sampling in a callback does not change training


def test_great_from_scratch(small_table):
    df = small_table[["sex", "age"]].head(24)
    sch = Schema.infer(df, categorical=["sex"], numerical=["age"])
    gen = LLMGenerator(serializer="great", epochs=80, random_state=0, bpe_vocab_size=300, **{**TINY, "lr": 5e-3})
    gen.fit(df, sch)
    out = gen.sample(10, random_state=0)
    assert len(out) == 10 and set(out["sex"]) <= {"F", "M"} and np.isfinite(out["age"]).all()
    cond = gen.sample(5, random_state=0, conditions={"sex": "M"})
    assert (cond["sex"] == "M").all()


@pytest.fixture
def saved_backbone(tmp_path):
    """A tiny GPT-2 with a small BPE tokenizer written with save_pretrained (no download)."""
    transformers = pytest.importorskip("transformers")
    from tabmem.generators.llm.huggingface import train_bpe as _train_bpe

    texts = [f"age is {a}, sex is {s}" for a in range(20, 70) for s in "FM"]
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=_train_bpe(texts, 200), pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]"
    )
    cfg = transformers.GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=32, n_layer=3, n_head=2)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg)
    path = tmp_path / "backbone"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path, model


def test_first_k_layers_with_fresh_vocabulary(saved_backbone, small_table):
    path, original = saved_backbone
    gen = LLMGenerator(backbone=str(path), n_pretrained_layers=2, epochs=1, random_state=0, lr=0.0)
    gen.fit(small_table, schema_of(small_table))
    m = gen.model_
    assert m.config.n_layer == 2 and m.get_input_embeddings().num_embeddings == len(gen.serializer_.vocab_)
    # the kept blocks are the pretrained ones (lr = 0: no update)
    for k, v in original.transformer.h[1].state_dict().items():
        assert torch.equal(m.transformer.h[1].state_dict()[k], v), k
    assert len(gen.sample(5, random_state=0)) == 5
    with pytest.raises(TabmemError, match="n_pretrained_layers"):
        LLMGenerator(backbone=str(path), n_pretrained_layers=9, epochs=1).fit(small_table, schema_of(small_table))


def test_great_with_pretrained_tokenizer(saved_backbone, small_table):
    path, _ = saved_backbone
    df = small_table[["age", "sex"]]
    gen = LLMGenerator(serializer="great", backbone=str(path), epochs=1, random_state=0, **TINY)
    gen.fit(df, Schema.infer(df, categorical=["sex"], numerical=["age"]))
    import transformers

    assert gen.tokenizer_.get_vocab() == transformers.AutoTokenizer.from_pretrained(path).get_vocab()
    assert gen.model_.config.n_layer == 3


def test_bad_params(small_table, tmp_path):
    with pytest.raises(TabmemError, match="serializer"):
        LLMGenerator(serializer="xml", epochs=1).fit(small_table)
    with pytest.raises(TabmemError, match="n_embd"):
        LLMGenerator(n_embd=30, n_head=4, epochs=1).fit(small_table)
    with pytest.raises(TabmemError, match="cannot load backbone"):
        LLMGenerator(backbone=str(tmp_path / "missing"), epochs=1).fit(small_table)


def test_memorization_tracker_runs_on_llm(small_table):
    from tabmem.memorization.tracker import MemorizationTracker

    schema = schema_of(small_table)
    tracker = MemorizationTracker(every=1, n_samples=20, random_state=0)
    a = LLMGenerator(epochs=2, random_state=4, **TINY).fit(small_table, schema, callbacks=[tracker])
    b = LLMGenerator(epochs=2, random_state=4, **TINY).fit(small_table, schema)
    assert [h["epoch"] for h in a.history_] == [1, 2] and all("mem_rate" in h for h in a.history_)
    assert all(0.0 <= h["mem_rate"] <= 1.0 for h in a.history_)
    for x, y in zip(a.model_.parameters(), b.model_.parameters()):
        assert torch.equal(x, y)  # tracking does not change the training trajectory
