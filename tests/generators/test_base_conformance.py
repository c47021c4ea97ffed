"""Conformance battery run over every registered generator (tabddpm, tvae, ctgan, ...).

Each generator must: fit -> self; sample the training columns with their dtypes and training
categories; give the same samples for the same seed; resume bit-exactly from a checkpoint;
not change its training when sampled mid-training; save/load; leave the global RNGs alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.generators import Callback, CheckpointCallback, available_generators, get_generator, load_generator


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models: one thread is faster and does not fight the other test processes for cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


NAMES = [n for n in available_generators() if not n.startswith("_")]
SMALLER = {  # keep each generator tiny so the battery stays fast
    "tabddpm": {"layers": (16,), "dim_t": 8, "num_timesteps": 4, "batch_size": 32},
    "tvae": {"batch_size": 30, "max_modes": 3},
    "ctgan": {
        "batch_size": 30,
        "max_modes": 3,
        "embedding_dim": 16,
        "generator_dims": (32,),
        "discriminator_dims": (32,),
    },
    "llm": {"n_layer": 1, "n_head": 2, "n_embd": 16, "batch_size": 16},
}


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(1)
    n = 60
    df = pd.DataFrame(
        {
            "num": rng.normal(10, 3, n),
            "count": rng.integers(0, 500, n),
            "cat": rng.choice(["a", "b", "c"], n),
            "code": rng.integers(1, 4, n),
            "y": rng.random(n) < 0.4,
        }
    )
    return df, Schema.infer(df, categorical=["code"], numerical=["count"], target="y")


def make(name, epochs=2, **kw):
    params = {k: v for k, v in SMALLER.get(name, {}).items()}
    cls_params = set(get_generator(name)._param_names())
    params = {k: v for k, v in params.items() if k in cls_params}
    return get_generator(
        name, preset="small" if "small" in get_generator(name).PRESETS else None, epochs=epochs, **params, **kw
    )


def weights(gen):
    return [p.detach().clone() for m in gen._torch_modules() for p in m.parameters()]


@pytest.mark.parametrize("name", NAMES)
def test_conformance(name, table, tmp_path):
    df, schema = table
    torch.manual_seed(0)
    global_state = torch.get_rng_state()
    gen = make(name, random_state=0)
    assert gen.fit(df, schema) is gen
    assert torch.equal(torch.get_rng_state(), global_state), "fit touched the global torch RNG"
    out = gen.sample(40, random_state=1)
    assert list(out.columns) == list(df.columns) and len(out) == 40
    assert out["count"].dtype == np.int64 and out["num"].dtype == np.float64 and out["y"].dtype == bool
    assert set(out["cat"]) <= {"a", "b", "c"} and set(out["code"]) <= {1, 2, 3}
    pd.testing.assert_frame_equal(out, gen.sample(40, random_state=1))
    # same seed, same model
    twin = make(name, random_state=0).fit(df, schema)
    assert all(torch.equal(a, b) for a, b in zip(weights(gen), weights(twin)))
    # save / load
    loaded = load_generator(gen.save(tmp_path / "m.pt"))
    pd.testing.assert_frame_equal(out, loaded.sample(40, random_state=1))


@pytest.mark.parametrize("name", NAMES)
def test_resume_and_measurement_invariance(name, table, tmp_path):
    df, schema = table
    full = make(name, epochs=3, random_state=4).fit(df, schema)

    class SampleAndStop(Callback):
        order = 200

        def on_epoch_end(self, gen, epoch, logs):
            gen.sample(25, random_state=epoch)
            return epoch == 2

    make(name, epochs=3, random_state=4).fit(
        df, schema, callbacks=[CheckpointCallback(1, tmp_path / "ck.pt"), SampleAndStop()]
    )
    resumed = make(name, epochs=3).fit(df, schema, resume_from=tmp_path / "ck.pt")
    assert resumed.epoch_ == 3
    assert all(torch.equal(a, b) for a, b in zip(weights(full), weights(resumed))), (
        f"{name}: resume (with mid-training sampling) differs"
    )


@pytest.mark.parametrize("name", NAMES)
def test_training_table_is_validated_once(name, table, monkeypatch):
    """fit validates a DataFrame once (not again in the encoder or the model's own transformer); a
    ValidatedTable is not validated again and trains exactly the same model."""
    import tabmem.data.schema as schema_module

    df, schema = table
    calls = []
    real = schema_module._validate_raw

    def counting(frame, sch, **kw):
        calls.append(kw.get("name"))
        return real(frame, sch, **kw)

    monkeypatch.setattr(schema_module, "_validate_raw", counting)
    from_frame = make(name, random_state=3).fit(df, schema)
    assert calls == ["training"], f"{name}: the training table was validated {len(calls)} times: {calls}"
    vt = schema_module.validate(df, schema, name="training", nan="error")
    calls.clear()
    from_validated = make(name, random_state=3).fit(vt)
    assert calls == [], f"{name}: a ValidatedTable was validated again: {calls}"
    assert all(torch.equal(a, b) for a, b in zip(weights(from_frame), weights(from_validated)))
    pd.testing.assert_frame_equal(from_frame.sample(30, random_state=2), from_validated.sample(30, random_state=2))


@pytest.mark.parametrize("name", NAMES)
def test_samples_come_back_in_the_training_dtypes(name, tmp_path):
    """pandas 3 ``str``, nullable ``Int64``/``boolean``, ``category`` (levels and order), object and
    missing categories: every sampled column has its training column's dtype, also after save/load."""
    rng = np.random.default_rng(5)
    n = 60
    df = pd.DataFrame(
        {
            "num": rng.normal(0, 1, n),
            "count": pd.array(rng.integers(0, 50, n), dtype="Int64"),
            "city": pd.Series(rng.choice(["Oslo", "Rome", None], n), dtype="str"),
            "label": pd.Series(rng.choice(["u", "v"], n), dtype=object),
            "grade": pd.Series(pd.Categorical(rng.choice([3, 1, 2], n), categories=[3, 2, 1, 0], ordered=True)),
            "code": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(1, 3, n)), dtype="Int64"),
            "flag": pd.array(np.where(rng.random(n) < 0.2, None, rng.random(n) < 0.5), dtype="boolean"),
        }
    )
    schema = Schema.infer(df, categorical=["code"], numerical=["count"])
    gen = make(name, epochs=1, random_state=0).fit(df, schema)
    for out in (gen.sample(40, random_state=1), load_generator(gen.save(tmp_path / "m.pt")).sample(40, random_state=1)):
        assert dict(out.dtypes.astype(str)) == dict(df.dtypes.astype(str))
        assert out["grade"].cat.categories.tolist() == [3, 2, 1, 0] and out["grade"].cat.ordered
        for col in ("city", "label", "grade", "code", "flag"):
            assert set(out[col].dropna()) <= set(df[col].dropna())
