"""TabDDPM ``ema_decay``: the average against a hand loop, sampling from it, default path, resume, save."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import Callback, CheckpointCallback, get_generator, load_generator
from tabmem.generators.tabddpm import TabDDPM

TINY = dict(layers=(32, 32), dim_t=16, num_timesteps=10, lr=3e-3)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def mixed():
    rng = np.random.default_rng(0)
    n = 200
    y = rng.random(n) < 0.3
    df = pd.DataFrame({"x": np.where(y, rng.normal(3, 0.5, n), rng.normal(-3, 0.5, n)),
                       "c": np.where(rng.random(n) < 0.8, "a", "b"), "y": y})  # fmt: skip
    return df, Schema.infer(df, target="y")


class _Weights(Callback):
    """The raw weights after every epoch (one optimizer step per epoch with batch_size = n)."""

    def __init__(self):
        self.states = []

    def on_epoch_end(self, gen, epoch, logs):
        self.states.append({k: v.detach().clone().double() for k, v in gen.model_.state_dict().items()})


def test_ema_against_hand_loop_and_training_unchanged(mixed):
    df, schema = mixed
    d, steps = 0.8, 6
    spy = _Weights()
    raw = TabDDPM(epochs=steps, batch_size=len(df), random_state=1, **TINY).fit(df, schema, callbacks=[spy])
    ema = TabDDPM(epochs=steps, batch_size=len(df), random_state=1, ema_decay=d, **TINY).fit(df, schema)
    assert raw.step_ == ema.step_ == steps
    # the average does not change training: the raw weights are the same bit for bit
    assert all(torch.equal(a, b) for a, b in zip(raw.model_.state_dict().values(), ema.model_.state_dict().values()))
    # hand loop: a_t = d a_{t-1} + (1 - d) w_t from a_0 = 0, reported as a_t / (1 - d^t)
    avg = {k: torch.zeros_like(v) for k, v in spy.states[0].items()}
    for w in spy.states:
        avg = {k: d * avg[k] + (1 - d) * w[k] for k in avg}
    got = ema.ema_weights()
    for k, v in avg.items():
        torch.testing.assert_close(got[k].double(), v / (1 - d**steps), rtol=1e-5, atol=1e-6)
    # a weighted mean of the iterates: weights (1-d) d^(t-i) / (1 - d^t) sum to 1
    weights = [(1 - d) * d ** (steps - 1 - i) / (1 - d**steps) for i in range(steps)]
    k0 = next(iter(avg))
    mean = sum(wt * s[k0] for wt, s in zip(weights, spy.states))
    torch.testing.assert_close(got[k0].double(), mean, rtol=1e-5, atol=1e-6)


def test_sampling_uses_the_average_and_default_path_is_unchanged(mixed, tmp_path):
    df, schema = mixed
    ema = TabDDPM(epochs=3, batch_size=64, random_state=2, ema_decay=0.9, **TINY).fit(df, schema)
    raw = TabDDPM(epochs=3, batch_size=64, random_state=2, **TINY).fit(df, schema)
    assert raw.ema_ is None and raw.ema_weights() is None and "ema" not in raw._state_dict()
    assert raw._sampling_model() is raw.model_
    # a default model given the EMA's averaged weights samples exactly what the EMA model samples
    raw.model_.load_state_dict(ema.ema_weights())
    pd.testing.assert_frame_equal(ema.sample(150, random_state=4), raw.sample(150, random_state=4))
    # and differs from the EMA model's own raw weights
    ema.ema_ = None
    assert not ema.sample(150, random_state=4).equals(raw.sample(150, random_state=4))


def test_resume_and_save_load_are_exact(mixed, tmp_path):
    df, schema = mixed
    params = dict(epochs=5, batch_size=64, ema_decay=0.95, **TINY)
    full = TabDDPM(random_state=3, **params).fit(df, schema)

    class Stop(Callback):
        order = 200  # after the checkpoint of that epoch

        def on_epoch_end(self, gen, epoch, logs):
            return epoch == 2

    TabDDPM(random_state=3, **params).fit(df, schema, callbacks=[CheckpointCallback(1, tmp_path / "ck.pt"), Stop()])
    resumed = TabDDPM(**params).fit(df, schema, resume_from=tmp_path / "ck.pt")
    assert resumed.step_ == full.step_
    for k in full.ema_:
        assert torch.equal(full.ema_[k], resumed.ema_[k])
    pd.testing.assert_frame_equal(full.sample(100, random_state=2), resumed.sample(100, random_state=2))
    full.save(tmp_path / "m.pt")
    loaded = load_generator(tmp_path / "m.pt")
    assert loaded.ema_decay == 0.95
    pd.testing.assert_frame_equal(full.sample(100, random_state=2), loaded.sample(100, random_state=2))
    # a run resumed with another decay is refused like any other changed setting
    with pytest.raises(TabmemError):
        TabDDPM(**{**params, "ema_decay": 0.9}).fit(df, schema, resume_from=tmp_path / "ck.pt")


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, True, "0.9"])
def test_bad_ema_decay(mixed, bad):
    df, schema = mixed
    with pytest.raises(TabmemError, match="ema_decay"):
        get_generator("tabddpm", epochs=1, ema_decay=bad, **TINY).fit(df, schema)
