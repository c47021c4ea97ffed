"""CTGAN and TVAE: formulas against independent references, the generator interface, and a quick Adult fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import SchemaError, TabmemError
from tabmem.generators import Callback, get_generator, load_generator
from tabmem.generators.ctgan import CTGAN, gumbel_softmax
from tabmem.generators.tvae import TVAE

MODELS = ["ctgan", "tvae"]
TINY = {
    "ctgan": {"embedding_dim": 16, "generator_dims": (32, 32), "discriminator_dims": (32, 32), "batch_size": 100},
    "tvae": {"embedding_dim": 8, "compress_dims": (32, 32), "decompress_dims": (32, 32), "batch_size": 100},
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One torch thread: the machine is shared, and small nets are faster single-threaded."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def table() -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    n = 600
    left = rng.random(n) < 0.3
    df = pd.DataFrame(
        {
            "x": np.where(left, rng.normal(-10, 1, n), rng.normal(20, 2, n)),
            "age": rng.integers(18, 80, n),
            "colour": rng.choice(["red", "green", "blue"], n, p=[0.6, 0.3, 0.1]),
            "code": rng.choice([1, 2], n),
        }
    )
    return df, Schema(("x", "age", "colour", "code"), ("x", "age"), ("colour", "code"))


def _tiny(name: str, **kw):
    return get_generator(name, **{**TINY[name], "epochs": 3, "random_state": 0, **kw})


def _weights(gen) -> dict[str, torch.Tensor]:
    state = gen._state_dict()
    out = {}
    for key, value in state.items():
        if isinstance(value, dict) and all(isinstance(v, torch.Tensor) for v in value.values()):
            out.update({f"{key}.{k}": v.clone() for k, v in value.items()})
    return out


def _assert_same_weights(a, b) -> None:
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys() and len(wa) > 4
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


# ------------------------------------------------------------------------------------ formulas
def test_gumbel_softmax_argmax_is_a_softmax_draw() -> None:
    logits = torch.log(torch.tensor([[0.6, 0.3, 0.1]])).expand(60_000, 3).contiguous()
    y = gumbel_softmax(logits, 0.2, torch.Generator().manual_seed(0))
    np.testing.assert_allclose(y.sum(1).numpy(), 1.0, atol=1e-5)
    freq = np.bincount(y.argmax(1).numpy(), minlength=3) / len(y)
    np.testing.assert_allclose(freq, [0.6, 0.3, 0.1], atol=0.01)
    # low temperature: nearly one-hot
    assert float(y.max(1).values.median()) > 0.95


def test_batched_span_ops_match_the_per_span_reference() -> None:
    from tabmem.generators._conditional import ConditionalSampler, conditional_loss
    from tabmem.generators._transformer import Span
    from tabmem.generators.ctgan import SpanOps

    spans = [
        Span(0, 1, "tanh", "x", "scalar"),
        Span(1, 4, "softmax", "x", "mode"),
        Span(4, 6, "softmax", "a", "category"),
        Span(6, 11, "softmax", "b", "category"),
    ]
    ops = SpanOps(spans, torch.device("cpu"))
    probs = [torch.tensor([0.2, 0.5, 0.3]), torch.tensor([0.9, 0.1]), torch.tensor([0.1, 0.2, 0.3, 0.25, 0.15])]
    row = torch.cat([torch.tensor([0.7]), *[p.log() for p in probs]])
    raw = row.expand(40_000, 11).contiguous()
    out = ops.activate(raw, 0.2, torch.Generator().manual_seed(0))
    torch.testing.assert_close(out[:, 0], torch.tanh(raw[:, 0]))
    for s, p in zip(spans[1:], probs):
        block = out[:, s.start : s.end]
        torch.testing.assert_close(block.sum(1), torch.ones(len(block)))
        freq = torch.bincount(block.argmax(1), minlength=s.width).double() / len(block)
        np.testing.assert_allclose(freq.numpy(), p.numpy(), atol=0.012)
    # the batched conditional cross-entropy equals the per-column reference exactly
    rng = np.random.default_rng(0)
    sampler = ConditionalSampler([rng.integers(0, 2, 50), rng.integers(0, 5, 50)], [2, 5])
    cond = sampler.sample_condition(64, np.random.default_rng(1))
    logits = torch.randn(64, 11, generator=torch.Generator().manual_seed(2))
    ref = conditional_loss(logits, cond, [(4, 6), (6, 11)])
    got = ops.conditional_loss(logits, torch.from_numpy(cond.column), torch.from_numpy(cond.category))
    torch.testing.assert_close(got, ref)


def test_gradient_penalty_matches_per_group_reference() -> None:
    gen = CTGAN(embedding_dim=4, discriminator_dims=(8,), pac=5)
    gen.pac, gen.gp_lambda = 5, 10.0
    torch.manual_seed(0)
    from tabmem.generators.ctgan import _Critic

    gen.critic_ = _Critic(6, (8,), 5)
    gen.critic_.eval()  # no dropout: the reference recomputes the critic
    gen.torch_generator_ = torch.Generator().manual_seed(3)
    real, fake = torch.randn(20, 6, dtype=torch.float32), torch.randn(20, 6, dtype=torch.float32)
    got = gen._gradient_penalty(real, fake).item()
    eps = torch.rand(4, 1, 1, generator=torch.Generator().manual_seed(3))
    terms = []
    for g in range(4):
        r, f = real[5 * g : 5 * g + 5], fake[5 * g : 5 * g + 5]
        x = (eps[g, 0, 0] * r + (1 - eps[g, 0, 0]) * f).clone().requires_grad_(True)
        out = gen.critic_.net(x.reshape(1, -1))
        (grad,) = torch.autograd.grad(out.sum(), x)
        terms.append((grad.norm() - 1) ** 2)
    assert got == pytest.approx(10.0 * float(torch.stack(terms).mean()), rel=1e-5)


def test_tvae_reconstruction_nll_matches_scipy(table) -> None:
    from scipy import stats

    df, schema = table
    gen = _tiny("tvae", epochs=1).fit(df, schema)
    x = gen.train_matrix_[:16]
    out = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
    got = gen.reconstruction_nll(x, out).detach().numpy()
    sigma = gen.decoder_net_.sigma.detach().numpy().astype(np.float64)
    xn, on = x.numpy().astype(np.float64), out.numpy().astype(np.float64)
    ref = np.zeros(16)
    for span in gen.normalizer_.spans_:
        if span.kind == "tanh":
            j = span.start
            # Gaussian NLL up to the constant log(sqrt(2 pi))
            ref -= stats.norm.logpdf(xn[:, j], np.tanh(on[:, j]), sigma[j]) - np.log(1 / np.sqrt(2 * np.pi))
        else:
            block = on[:, span.start : span.end]
            target = xn[:, span.start : span.end].argmax(1)
            ref -= block[np.arange(16), target] - np.log(np.exp(block).sum(1))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    # the KL term and the whole ELBO, taken from a real fit: test_gan_vae_references.py


# ------------------------------------------------------------------------------------ interface
@pytest.mark.parametrize("name", MODELS)
def test_training_reduces_loss(name, table) -> None:
    df, schema = table
    extra = {"generator_lr": 2e-3, "discriminator_lr": 2e-3} if name == "ctgan" else {}
    gen = _tiny(name, epochs=15, **extra).fit(df, schema)
    hist = pd.DataFrame(gen.history_)
    key = "cond_loss" if name == "ctgan" else "loss"  # the adversarial terms of a GAN are not monotone
    assert hist[key].iloc[-3:].mean() < 0.7 * hist[key].iloc[:2].mean(), hist[key].tolist()
    assert np.isfinite(hist[["loss"]].to_numpy()).all()


@pytest.mark.parametrize("name", MODELS)
def test_samples_follow_schema_and_seed(name, table) -> None:
    df, schema = table
    gen = _tiny(name).fit(df, schema)
    a = gen.sample(300, random_state=1)
    assert list(a.columns) == list(df.columns)
    assert (a.dtypes == df.dtypes).all()
    assert set(a["colour"]) <= set(df["colour"]) and set(a["code"]) <= {1, 2}
    assert a["x"].between(df["x"].min(), df["x"].max()).all()
    pd.testing.assert_frame_equal(a, gen.sample(300, random_state=1))
    assert not a.equals(gen.sample(300, random_state=2))
    # chunked sampling (bounded memory) is seeded too
    pd.testing.assert_frame_equal(
        gen.sample(300, random_state=1, batch_size=70), gen.sample(300, random_state=1, batch_size=70)
    )
    # same training seed, same model and samples; no global RNG side effect
    before = torch.get_rng_state().clone()
    np_before = np.random.get_state()[1].copy()  # noqa: NPY002 - checking the legacy global state is untouched
    again = _tiny(name).fit(df, schema)
    assert torch.equal(before, torch.get_rng_state())
    assert np.array_equal(np_before, np.random.get_state()[1])  # noqa: NPY002
    _assert_same_weights(gen, again)
    pd.testing.assert_frame_equal(a, again.sample(300, random_state=1))


@pytest.mark.parametrize("name", MODELS)
def test_resume_equals_uninterrupted_run(name, table, tmp_path) -> None:
    df, schema = table
    full = _tiny(name, epochs=4).fit(df, schema)
    ckpt = tmp_path / "ckpt.pt"
    _tiny(name, epochs=2).fit(df, schema, checkpoint_every=2, checkpoint_path=ckpt)
    resumed = _tiny(name, epochs=4).fit(df, schema, resume_from=ckpt)
    assert resumed.epoch_ == 4 and len(resumed.history_) == 4
    _assert_same_weights(full, resumed)
    pd.testing.assert_frame_equal(full.sample(200, random_state=5), resumed.sample(200, random_state=5))


@pytest.mark.parametrize("name", MODELS)
def test_save_load_round_trip(name, table, tmp_path) -> None:
    df, schema = table
    gen = _tiny(name).fit(df, schema)
    path = gen.save(tmp_path / "model.pt")
    before = torch.get_rng_state().clone()
    loaded = load_generator(path)
    assert torch.equal(before, torch.get_rng_state())  # building modules on load keeps the global RNG
    assert type(loaded) is type(gen) and loaded.get_params() == gen.get_params()
    pd.testing.assert_frame_equal(gen.sample(250, random_state=9), loaded.sample(250, random_state=9))
    _assert_same_weights(gen, loaded)


class _SamplingCallback(Callback):
    """Samples every epoch, as the memorization tracker does."""

    def __init__(self) -> None:
        self.epochs: list[int] = []
        self.sizes: list[int] = []

    def on_epoch_end(self, gen, epoch, logs):
        self.epochs.append(epoch)
        self.sizes.append(len(gen.sample(123, random_state=epoch)))


@pytest.mark.parametrize("name", MODELS)
def test_callbacks_see_every_epoch_without_changing_training(name, table) -> None:
    df, schema = table
    cb = _SamplingCallback()
    watched = _tiny(name).fit(df, schema, callbacks=[cb])
    assert cb.epochs == [1, 2, 3] and cb.sizes == [123] * 3
    plain = _tiny(name).fit(df, schema)
    _assert_same_weights(watched, plain)


@pytest.mark.parametrize("name", MODELS)
def test_memorization_tracker_runs_on_the_model(name, table) -> None:
    from tabmem.memorization.tracker import MemorizationTracker

    df, schema = table
    tracker = MemorizationTracker(every=1)
    watched = _tiny(name).fit(df, schema, callbacks=[tracker])
    plain = _tiny(name).fit(df, schema)
    _assert_same_weights(watched, plain)
    assert all("mem_rate" in h for h in watched.history_)


def test_bad_parameters_and_input(table) -> None:
    df, schema = table
    with pytest.raises(TabmemError, match="multiple of pac"):
        CTGAN(batch_size=105, pac=10, epochs=1).fit(df, schema)
    with pytest.raises(TabmemError, match="generator_dims"):
        CTGAN(generator_dims=(0, 4), epochs=1).fit(df, schema)
    with pytest.raises(TabmemError, match="discrete_sampling"):
        TVAE(discrete_sampling="mean", epochs=1).fit(df, schema)
    with pytest.raises(TabmemError, match="epochs"):
        TVAE(epochs=0).fit(df, schema)
    bad = df.copy()
    bad.loc[4, "age"] = np.nan
    with pytest.raises(SchemaError, match="'age'"):
        _tiny("tvae").fit(bad, schema)
    with pytest.raises(TabmemError, match="not fitted"):
        TVAE().sample(5)


def test_tvae_discrete_sampling_modes(table) -> None:
    df, schema = table
    a = _tiny("tvae", discrete_sampling="sample", epochs=2).fit(df, schema)
    s = a.sample(400, random_state=0)
    assert set(s["colour"]) <= set(df["colour"])
    pd.testing.assert_frame_equal(s, a.sample(400, random_state=0))


# ------------------------------------------------------------------------------------ real data
def _adult_slice(shared_data_dir, n: int) -> tuple[pd.DataFrame, Schema]:
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=shared_data_dir)
    return ds.train.sample(n=n, random_state=0).reset_index(drop=True), ds.schema


def _max_marginal_gap(real: pd.DataFrame, synth: pd.DataFrame, columns) -> float:
    gaps = []
    for c in columns:
        p = real[c].value_counts(normalize=True)
        q = synth[c].value_counts(normalize=True).reindex(p.index, fill_value=0.0)
        gaps.append(0.5 * float((p - q).abs().sum()))  # total variation distance per column
    return max(gaps)


@pytest.mark.parametrize("name", MODELS)
def test_quick_fit_on_adult_slice_gets_marginals_right(name, shared_data_dir) -> None:
    train, schema = _adult_slice(shared_data_dir, 2000)
    if name == "ctgan":
        gen = get_generator("ctgan", preset="small", epochs=25, batch_size=200, random_state=0)
    else:
        # an under-trained VAE decoded by arg-max collapses onto majority categories; drawing from the
        # softmax (the paper's decoder) shows the marginals it has learned after a few epochs
        gen = get_generator(
            "tvae", preset="small", epochs=40, batch_size=50, discrete_sampling="sample", random_state=0
        )
    gen.fit(train, schema)
    synth = gen.sample(len(train), random_state=1)
    assert (synth.dtypes == train.dtypes).all()
    for c in schema.categorical:
        assert set(synth[c]) <= set(train[c])
    cats = [c for c in schema.categorical if c != "native.country"]
    gap = _max_marginal_gap(train, synth, cats)
    assert gap < 0.2, gap
    # numericals in range and of the right scale
    for c in schema.numerical:
        assert synth[c].between(train[c].min(), train[c].max()).all()
    assert abs(synth["age"].median() - train["age"].median()) < 8


@pytest.mark.slow
def test_ctgan_reference_defaults_on_adult(shared_data_dir) -> None:
    """The paper's CTGAN (all defaults) on 5,000 Adult rows for 20 epochs: marginals within 10 % TVD."""
    train, schema = _adult_slice(shared_data_dir, 5000)
    gen = get_generator("ctgan", epochs=20, random_state=0).fit(train, schema)
    synth = gen.sample(len(train), random_state=1)
    gap = _max_marginal_gap(train, synth, [c for c in schema.categorical if c != "native.country"])
    assert gap < 0.1, gap


@pytest.mark.slow
def test_tvae_reference_defaults_on_adult(shared_data_dir) -> None:
    """The reference TVAE on 5,000 Adult rows for 100 epochs (1,000 steps).

    Measured: decoded by arg-max (reference code) the worst categorical marginal is still ~0.3 TVD off
    after 1,000 steps (majority categories of weakly predictable columns such as ``workclass`` win every
    arg-max) but improves with training; decoded by drawing from the softmax (the paper) it is within ~0.1.
    """
    train, schema = _adult_slice(shared_data_dir, 5000)
    cats = [c for c in schema.categorical if c != "native.country"]
    gaps: dict[int, float] = {}

    def measure(gen, epoch, logs):
        if epoch in (20, 100):
            gaps[epoch] = _max_marginal_gap(train, gen.sample(len(train), random_state=1), cats)

    from tabmem.generators import LambdaCallback

    gen = get_generator("tvae", epochs=100, random_state=0).fit(train, schema, callbacks=[LambdaCallback(measure)])
    assert gaps[100] < gaps[20] and gaps[100] < 0.4, gaps
    gen.set_params(discrete_sampling="sample")
    assert _max_marginal_gap(train, gen.sample(len(train), random_state=1), cats) < 0.15


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("kind", ["numerical_only", "categorical_only"])
def test_single_kind_tables(name, kind) -> None:
    rng = np.random.default_rng(1)
    if kind == "numerical_only":
        df = pd.DataFrame({"a": rng.normal(size=200), "b": rng.exponential(size=200)})
        schema = Schema(("a", "b"), ("a", "b"), ())
    else:
        df = pd.DataFrame({"a": rng.choice(["x", "y"], 200), "b": rng.choice([True, False], 200)})
        schema = Schema(("a", "b"), (), ("a", "b"))
    gen = _tiny(name, epochs=2).fit(df, schema)
    out = gen.sample(50, random_state=0)
    assert list(out.columns) == ["a", "b"] and (out.dtypes == df.dtypes).all()
    assert np.isfinite(pd.DataFrame(gen.history_)["loss"]).all()
