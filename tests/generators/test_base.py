"""Conformance of the generator interface: seeds, resume, checkpoints, dtypes, callbacks, save/load.

Uses a tiny toy generator (independent Gaussian/categorical marginals learned by SGD with a
dropout layer, so the private global-RNG handling is exercised too).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.io import EXACT_FLOATS
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import (
    GENERATORS,
    Callback,
    CheckpointCallback,
    EarlyStopping,
    TabularGenerator,
    get_generator,
    load_generator,
    register_generator,
)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models: one thread is faster and does not fight the other test processes for cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@register_generator("_toy")
class ToyGenerator(TabularGenerator):
    """Learns per-column marginals with a dropout MLP on noise (just enough to have weights and RNG use)."""

    def __init__(self, *, epochs: int = 3, batch_size: int = 16, lr: float = 0.05, random_state=None, device="cpu"):
        self.epochs, self.batch_size, self.lr = epochs, batch_size, lr
        self.random_state, self.device = random_state, device

    def _build(self, train_clean, schema):
        enc = self.encoder_
        self._num = torch.tensor((enc.standardized(train_clean)), dtype=torch.float32)
        self._codes = torch.tensor(enc.codes(train_clean), dtype=torch.long)
        self._sizes = [len(enc.categories_[c]) for c in schema.categorical]
        d_out = self._num.shape[1] + sum(self._sizes)
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, d_out))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=self.lr)

    def _split(self, out):
        k = self._num.shape[1]
        return out[:, :k], torch.split(out[:, k:], self._sizes, dim=1)

    def _train_epoch(self, epoch):
        perm = torch.randperm(len(self._num), generator=self.torch_generator_)
        total = 0.0
        for i in range(0, len(perm), self.batch_size):
            idx = perm[i : i + self.batch_size]
            z = torch.randn(len(idx), 4, generator=self.torch_generator_)
            num, logits = self._split(self.net(z))
            loss = ((num - self._num[idx]) ** 2).mean()
            for j, lg in enumerate(logits):
                loss = loss + torch.nn.functional.cross_entropy(lg, self._codes[idx, j])
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total += loss.item()
        return {"loss": total}

    def _sample_clean(self, n, generator):
        z = torch.randn(n, 4, generator=generator)
        num, logits = self._split(self.net(z))
        num = num + torch.randn(num.shape, generator=generator)
        std = np.where(self.encoder_.std_ > 0, self.encoder_.std_, 1.0)
        data = {c: num[:, j].numpy() * std[j] + self.encoder_.mean_[j] for j, c in enumerate(self.schema_.numerical)}
        for j, c in enumerate(self.schema_.categorical):
            data[c] = torch.multinomial(torch.softmax(logits[j], 1), 1, generator=generator).squeeze(1).numpy()
        return pd.DataFrame(data)

    def _state_dict(self):
        return {"net": self.net.state_dict(), "opt": self.opt.state_dict()}

    def _load_state_dict(self, state):
        self.net.load_state_dict(state["net"])
        self.opt.load_state_dict(state["opt"])


@pytest.fixture
def toy_table():
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "income": rng.normal(50_000, 10_000, n),
            "sex": rng.choice(["F", "M"], n),
            "grade": rng.integers(1, 4, n),  # integer categorical
            "flag": rng.random(n) < 0.3,
        }
    )
    schema = Schema.infer(df, categorical=["grade"], numerical=["age"], target="flag")
    return df, schema


def weights(gen):
    return [p.detach().clone() for p in gen.net.parameters()]


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_registry_and_errors():
    assert GENERATORS["_toy"] is ToyGenerator
    assert isinstance(get_generator("_toy", epochs=2), ToyGenerator)
    with pytest.raises(TabmemError, match="unknown generator 'nope'"):
        get_generator("nope")
    with pytest.raises(TabmemError, match="unknown preset"):
        get_generator("_toy", preset="huge")
    with pytest.raises(ValueError, match="already registered"):
        register_generator("_toy")(type("Other", (ToyGenerator,), {}))


def test_fit_returns_self_and_sample_dtypes(toy_table):
    df, schema = toy_table
    gen = ToyGenerator(random_state=1)
    assert gen.fit(df, schema) is gen
    assert gen.epoch_ == 3 and len(gen.history_) == 3 and "loss" in gen.history_[0]
    out = gen.sample(25, random_state=0)
    assert list(out.columns) == list(df.columns)
    assert out["age"].dtype == np.int64  # integer numerical rounded back
    assert out["income"].dtype == np.float64
    assert out["grade"].dtype == np.int64 and set(out["grade"]) <= set(df["grade"])
    assert out["sex"].dtype == df["sex"].dtype and set(out["sex"]) <= {"F", "M"}  # object (pandas 2) or str (pandas 3)
    assert out["flag"].dtype == bool
    # batched sampling = bounded memory; row count exact
    assert len(gen.sample(101, random_state=0, batch_size=7)) == 101


def test_same_seed_same_result_and_no_global_rng_side_effects(toy_table):
    df, schema = toy_table
    torch.manual_seed(123)
    np.random.seed(7)  # noqa: NPY002 - checking that the legacy global RNG is untouched
    before_t, before_np = torch.get_rng_state(), np.random.get_state()[1].copy()  # noqa: NPY002
    a = ToyGenerator(random_state=5).fit(df, schema)
    sa = a.sample(30, random_state=3)
    assert torch.equal(torch.get_rng_state(), before_t)
    assert np.array_equal(np.random.get_state()[1], before_np)  # noqa: NPY002
    b = ToyGenerator().fit(df, schema, random_state=5)  # fit's random_state = constructor's
    assert same(weights(a), weights(b))
    pd.testing.assert_frame_equal(sa, b.sample(30, random_state=3))
    assert not sa.equals(a.sample(30, random_state=4))
    c = ToyGenerator(random_state=6).fit(df, schema)
    assert not same(weights(a), weights(c))


def test_sampling_does_not_disturb_training(toy_table):
    df, schema = toy_table

    class Sampler(Callback):
        def on_epoch_end(self, gen, epoch, logs):
            gen.sample(40, random_state=epoch)
            assert all(m.training for m in gen._torch_modules())  # modes restored

    plain = ToyGenerator(epochs=4, random_state=2).fit(df, schema)
    watched = ToyGenerator(epochs=4, random_state=2).fit(df, schema, callbacks=[Sampler()])
    assert same(weights(plain), weights(watched))


@pytest.mark.parametrize("stop_at", [1, 2, 3])
def test_resume_equals_uninterrupted(toy_table, tmp_path, stop_at):
    df, schema = toy_table
    full = ToyGenerator(epochs=4, random_state=9).fit(df, schema)

    class Crash(Callback):
        order = 200  # after the checkpoint

        def on_epoch_end(self, gen, epoch, logs):
            if epoch == stop_at:
                raise KeyboardInterrupt

    ckpt = tmp_path / "ck.pt"
    with pytest.raises(KeyboardInterrupt):
        ToyGenerator(epochs=4, random_state=9).fit(df, schema, callbacks=[Crash(), CheckpointCallback(1, ckpt)])
    resumed = ToyGenerator(epochs=4).fit(df, schema, resume_from=ckpt)
    assert resumed.epoch_ == 4 and resumed.seed_ == 9
    assert same(weights(full), weights(resumed))
    assert [h["epoch"] for h in resumed.history_] == [1, 2, 3, 4]
    pd.testing.assert_frame_equal(full.sample(20, random_state=1), resumed.sample(20, random_state=1))


def test_resume_checks(toy_table, tmp_path):
    df, schema = toy_table
    ck = tmp_path / "c"
    ToyGenerator(epochs=2, random_state=1).fit(df, schema, checkpoint_every=1, checkpoint_path=ck)
    assert (ck / "checkpoint.pt").is_file()
    with pytest.raises(TabmemError, match="different training table"):
        ToyGenerator(epochs=3).fit(df.iloc[:-1], schema, resume_from=ck)
    with pytest.raises(TabmemError, match="lr: checkpoint 0.05 vs now 0.1"):
        ToyGenerator(epochs=3, lr=0.1).fit(df, schema, resume_from=ck)
    with pytest.raises(TabmemError, match="no saved generator"):
        ToyGenerator().fit(df, schema, resume_from=tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(TabmemError, match="not a readable"):
        load_generator(tmp_path / "junk.pt")


def test_resume_reads_a_parameter_the_checkpoint_predates_at_its_default(toy_table, tmp_path):
    """A checkpoint written before a parameter existed resumes when the parameter is at its default
    (the behaviour of the version that wrote it) and is refused, naming it, when it is not."""
    df, schema = toy_table
    ck = tmp_path / "c"
    ToyGenerator(epochs=2, random_state=1).fit(df, schema, checkpoint_every=1, checkpoint_path=ck)
    old = torch.load(ck / "checkpoint.pt", weights_only=False)
    del old["params"]["lr"]  # as if written by a version without ``lr``
    torch.save(old, ck / "checkpoint.pt")
    resumed = ToyGenerator(epochs=3).fit(df, schema, resume_from=ck)
    assert resumed.epoch_ == 3 and resumed.seed_ == 1
    with pytest.raises(TabmemError, match="lr: checkpoint 0.05 vs now 0.1"):
        ToyGenerator(epochs=3, lr=0.1).fit(df, schema, resume_from=ck)


def test_save_load_roundtrip(toy_table, tmp_path):
    df, schema = toy_table
    gen = ToyGenerator(random_state=4).fit(df, schema)
    path = gen.save(tmp_path / "model.pt")
    loaded = load_generator(path)
    assert isinstance(loaded, ToyGenerator) and loaded.epoch_ == 3 and loaded.get_params() == gen.get_params()
    pd.testing.assert_frame_equal(gen.sample(50, random_state=8), loaded.sample(50, random_state=8))
    assert TabularGenerator.load(tmp_path).epoch_ == 3  # a directory holding model.pt
    with pytest.raises(TabmemError, match="not fitted"):
        ToyGenerator().save(tmp_path / "x.pt")
    with pytest.raises(TabmemError, match="not fitted"):
        ToyGenerator().sample(3)


DATA = Path(__file__).parent / "data"


def test_format1_file_loads_and_fit_is_unchanged(toy_table, tmp_path):
    """``data/toy_format1.pt`` and its sample were written by tabmem before format 2 (encoder statistics
    as tensors, no category levels): it still loads and samples the same rows, a fit with the same seed
    today gives the same rows, and saving it again writes format 2."""
    assert torch.load(DATA / "toy_format1.pt", weights_only=True)["version"] == 1
    expected = pd.read_csv(DATA / "toy_format1_sample.csv", **EXACT_FLOATS)
    old = load_generator(DATA / "toy_format1.pt")
    # the stored rows were drawn on another CPU: torch's float32 kernels differ in the last bits between CPUs
    # (AVX2 / AVX-512), so the file is matched to 1e-6; rows drawn here are compared bit for bit below
    pd.testing.assert_frame_equal(
        old.sample(50, random_state=8), expected, check_exact=False, rtol=1e-6, atol=0, check_dtype=False
    )
    df, schema = toy_table
    fresh = ToyGenerator(random_state=4).fit(df, schema)  # trained here: equal to the file's to float32 rounding
    assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(weights(old), weights(fresh)))
    pd.testing.assert_frame_equal(
        fresh.sample(50, random_state=8), old.sample(50, random_state=8), check_exact=False, rtol=1e-5, atol=0
    )
    resaved = old.save(tmp_path / "m.pt")
    assert torch.load(resaved, weights_only=True)["version"] == 2
    pd.testing.assert_frame_equal(load_generator(resaved).sample(50, random_state=8), old.sample(50, random_state=8))


def test_bad_arguments(toy_table):
    df, schema = toy_table
    with pytest.raises(TabmemError, match="epochs must be a positive integer"):
        ToyGenerator(epochs=0).fit(df, schema)
    with pytest.raises(TabmemError, match="random_state"):
        ToyGenerator(random_state=-1).fit(df, schema)
    with pytest.raises(TabmemError, match="missing column"):
        ToyGenerator().fit(df.drop(columns="sex"), schema)
    with pytest.raises(TabmemError, match="not a callback"):
        ToyGenerator().fit(df, schema, callbacks=[object()])
    gen = ToyGenerator(random_state=0).fit(df, schema)
    with pytest.raises(TabmemError, match="n must be a positive integer"):
        gen.sample(0)
    if not torch.cuda.is_available():
        with pytest.raises(TabmemError, match="CUDA is not available"):
            ToyGenerator(device="cuda").fit(df, schema)
    with pytest.raises(TabmemError, match="cannot parse"):
        ToyGenerator(device="gpu!").fit(df, schema)


def test_callbacks_order_stop_and_logs(toy_table):
    df, schema = toy_table
    seen = []

    class Adds(Callback):
        def on_epoch_end(self, gen, epoch, logs):
            logs["extra"] = 1.0
            seen.append(("adds", epoch))

    class Reads(Callback):
        def on_fit_start(self, gen):
            seen.append(("start", gen.epoch_))

        def on_epoch_end(self, gen, epoch, logs):
            assert logs["extra"] == 1.0
            seen.append(("reads", epoch))
            return epoch == 2

        def on_fit_end(self, gen):
            seen.append(("end", gen.epoch_))

    gen = ToyGenerator(epochs=5, random_state=0).fit(df, schema, callbacks=[Adds(), Reads()])
    assert gen.epoch_ == 2 and gen.stopped_early_
    assert seen == [("start", 0), ("adds", 1), ("reads", 1), ("adds", 2), ("reads", 2), ("end", 2)]
    assert gen.history_[-1]["extra"] == 1.0


def test_early_stopping_logic():
    es = EarlyStopping(monitor="loss", patience=2)
    results = [es.on_epoch_end(None, e, {"loss": v}) for e, v in enumerate([3.0, 2.0, 2.5, 2.1, 1.0], 1)]
    assert results == [False, False, False, True, False]
    with pytest.raises(TabmemError, match="no 'nope'"):
        EarlyStopping(monitor="nope").on_epoch_end(None, 1, {"loss": 1.0})
