"""TabDDPM: diffusion maths against independent references, sampler correctness, presets, resume, learning."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import Callback, CheckpointCallback, get_generator, load_generator
from tabmem.generators._diffusion import MixedDiffusion, MLPDenoiser, cosine_betas
from tabmem.generators.tabddpm import PAPER_LR, TabDDPM


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models: one thread is faster and does not fight the other test processes for cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


TINY = dict(layers=(32, 32), dim_t=16, num_timesteps=10, batch_size=64, lr=3e-3)


def test_cosine_schedule_matches_formula():
    T = 50
    betas = cosine_betas(T).numpy()
    f = lambda u: math.cos((u + 0.008) / 1.008 * math.pi / 2) ** 2  # noqa: E731
    abar = np.cumprod(1 - betas)
    expected = np.array([f((i + 1) / T) / f(0) for i in range(T)])
    ok = betas < 0.999  # clipped steps deviate by construction
    np.testing.assert_allclose(abar[ok], expected[ok], rtol=1e-10)
    assert betas.max() <= 0.999 and betas.min() > 0


def transition(K, a):
    return a * np.eye(K) + (1 - a) / K * np.ones((K, K))


@pytest.mark.parametrize("t", [0, 1, 4, 9])
def test_multinomial_posterior_against_bayes_rule(t):
    """q(x_{t-1} | x_t, x_0) from explicit transition matrices (Hoogeboom et al. 2021) vs the log-space code."""
    sizes = [3, 4]
    d = MixedDiffusion(0, sizes, 10)
    alphas = 1 - cosine_betas(10).numpy()
    rng = np.random.default_rng(t)
    x0 = [rng.dirichlet(np.ones(k)) for k in sizes]  # a soft x0 (as the model's prediction)
    xt = [np.eye(k)[rng.integers(k)] for k in sizes]
    expected = []
    for p0, z, K in zip(x0, xt, sizes):
        if t == 0:
            prev = p0
        else:
            prev = p0 @ np.linalg.multi_dot([transition(K, a) for a in alphas[:t]] + [np.eye(K)])  # q(x_{t-1}|x0)
        like = transition(K, alphas[t]) @ z  # q(x_t = z | x_{t-1}) for each x_{t-1}
        post = prev * like
        expected.append(post / post.sum())
    log_x0 = torch.tensor(np.log(np.concatenate(x0)), dtype=torch.float32)[None]
    log_xt = d.log_onehot(torch.tensor(np.concatenate(xt), dtype=torch.float32)[None])
    got = d.q_posterior(log_x0, log_xt, torch.tensor([t])).exp()[0].numpy()
    np.testing.assert_allclose(got, np.concatenate(expected), atol=1e-5)
    # the fast probability-space sampler uses the same posterior (up to per-feature normalisation)
    probs = d.posterior_probs(log_x0, torch.tensor(np.concatenate(xt), dtype=torch.float32)[None], t)[0].numpy()
    split = np.split(probs, np.cumsum(sizes)[:-1])
    np.testing.assert_allclose(np.concatenate([p / p.sum() for p in split]), np.concatenate(expected), atol=1e-5)


def test_q_pred_against_matrix_power():
    d = MixedDiffusion(0, [5], 10)
    alphas = 1 - cosine_betas(10).numpy()
    x0 = np.eye(5)[2]
    for t in (0, 3, 9):
        expected = x0 @ np.linalg.multi_dot([transition(5, a) for a in alphas[: t + 1]] + [np.eye(5)])
        got = d.q_pred(d.log_onehot(torch.tensor(x0, dtype=torch.float32)[None]), torch.tensor([t])).exp()[0].numpy()
        np.testing.assert_allclose(got, expected, atol=1e-6)


def test_sampler_with_oracle_denoiser_reproduces_the_data_distribution():
    """With the Bayes-optimal denoiser for N(0,1) numericals and known categorical marginals, samples follow them."""
    T, n = 30, 8000
    d = MixedDiffusion(2, [3, 2], T)
    p = [torch.tensor([0.7, 0.2, 0.1]), torch.tensor([0.25, 0.75])]

    class Oracle(torch.nn.Module):
        def forward(self, x, t):
            b = x.shape[0]
            ti = t.expand(b)
            eps = d.sqrt_1m_abar[ti][:, None] * x[:, :2]  # E[eps | x_t] for x0 ~ N(0, 1)
            return torch.cat([eps, *[pp.log().expand(b, -1) for pp in p]], 1)

    x, codes = d.sample(Oracle(), n, torch.Generator().manual_seed(0), torch.device("cpu"))
    np.testing.assert_allclose(x.mean(0).numpy(), 0, atol=0.04)
    np.testing.assert_allclose(x.std(0).numpy(), 1, atol=0.04)
    np.testing.assert_allclose((torch.bincount(codes[:, 0], minlength=3) / n).numpy(), p[0].numpy(), atol=0.02)
    np.testing.assert_allclose((torch.bincount(codes[:, 1], minlength=2) / n).numpy(), p[1].numpy(), atol=0.02)


def test_denoiser_shapes_and_flops():
    m = MLPDenoiser(10, [1024, 2048, 2048, 1024], 1024)
    out = m(torch.randn(4, 10), torch.tensor([0, 5, 10, 999]))
    assert out.shape == (4, 10)
    assert m(torch.randn(3, 10), torch.tensor([7])).shape == (3, 10)  # one shared timestep
    linear = 10 * 1024 + 1024 * 1024 + 1024 * 2048 + 2048 * 2048 + 2048 * 1024 + 1024 * 10
    assert m.flops_per_row(shared_t=True) == 2 * linear  # time embedding computed once per batch
    assert m.flops_per_row(shared_t=False) - m.flops_per_row(shared_t=True) == 2 * 2 * 1024 * 1024


def test_presets_are_the_papers():
    p = TabDDPM.PRESETS["paper"]
    assert tuple(p["layers"]) == (1024, 2048, 2048, 1024) and p["dim_t"] == 1024 and p["num_timesteps"] == 1000
    assert p["lr"] == PAPER_LR == pytest.approx(1.81e-3, rel=1e-3) and p["batch_size"] == 4096
    gen = get_generator("tabddpm", preset="paper", epochs=2)
    assert gen.epochs == 2 and gen.dim_t == 1024


@pytest.fixture
def mixed():
    rng = np.random.default_rng(0)
    n = 400
    y = rng.random(n) < 0.2
    df = pd.DataFrame(
        {
            "x": np.where(y, rng.normal(5, 0.5, n), rng.normal(-5, 0.5, n)),
            "k": rng.integers(0, 100, n),
            "c": np.where(rng.random(n) < 0.9, "common", "rare"),
            "y": y,
        }
    )
    return df, Schema.infer(df, numerical=["k"], target="y")


def test_learns_marginals_and_dependence(mixed):
    df, schema = mixed
    gen = TabDDPM(
        epochs=60, random_state=0, cat_input="onehot", clip_denoised=True, **{**TINY, "num_timesteps": 20}
    ).fit(df, schema)
    s = gen.sample(2000, random_state=0)
    assert s["y"].dtype == bool and s["k"].dtype == np.int64 and s["x"].dtype == np.float64
    assert abs(s["c"].eq("common").mean() - 0.9) < 0.08
    assert abs(s["y"].mean() - 0.2) < 0.08
    # the bimodal column's modes follow the label, as in the data
    assert s.loc[s["y"], "x"].mean() > 2 and s.loc[~s["y"], "x"].mean() < -2
    assert s["k"].between(df["k"].min(), df["k"].max()).all()  # inverse quantile stays in range


def test_resume_and_save_load(mixed, tmp_path):
    df, schema = mixed
    full = TabDDPM(epochs=4, random_state=3, **TINY).fit(df, schema)

    class Stop(Callback):
        order = 200  # after the checkpoint of that epoch

        def on_epoch_end(self, gen, epoch, logs):
            return epoch == 2  # stop as if interrupted (the lr schedule still targets 4 epochs)

    TabDDPM(epochs=4, random_state=3, **TINY).fit(
        df, schema, callbacks=[CheckpointCallback(1, tmp_path / "ck.pt"), Stop()]
    )
    resumed = TabDDPM(epochs=4, **TINY).fit(df, schema, resume_from=tmp_path / "ck.pt")
    assert resumed.step_ == full.step_
    for a, b in zip(full.model_.parameters(), resumed.model_.parameters()):
        assert torch.equal(a, b)
    full.save(tmp_path / "m.pt")
    loaded = load_generator(tmp_path / "m.pt")
    pd.testing.assert_frame_equal(full.sample(100, random_state=2), loaded.sample(100, random_state=2))
    pd.testing.assert_frame_equal(
        full.sample(100, random_state=2, batch_size=7), full.sample(100, random_state=2, batch_size=7)
    )


def test_numerical_only_and_categorical_only_tables():
    rng = np.random.default_rng(1)
    num = pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50)})
    cat = pd.DataFrame({"a": rng.choice(list("xyz"), 50), "b": rng.choice(list("uv"), 50)})
    for df in (num, cat):
        out = TabDDPM(epochs=1, random_state=0, **TINY).fit(df).sample(20, random_state=0)
        assert list(out.columns) == ["a", "b"] and len(out) == 20


def test_bad_parameters(mixed):
    df, schema = mixed
    for kw, msg in [
        ({"layers": ()}, "layers"),
        ({"dim_t": 1}, "dim_t"),
        ({"lr": 0}, "lr"),
        ({"dropout": 1.5}, "dropout"),
        ({"batch_size": 0}, "batch_size"),
        ({"cat_input": "x"}, "cat_input"),
    ]:
        with pytest.raises(TabmemError, match=msg):
            TabDDPM(epochs=1, **{**TINY, **kw}).fit(df, schema)


@pytest.mark.slow
def test_small_preset_on_adult_matches_marginals(shared_data_dir):
    """Minutes on one core: TabDDPM small (10 epochs) reproduces Adult's marginals closely."""
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=shared_data_dir, download=False)
    gen = get_generator("tabddpm", preset="small", epochs=10, random_state=0).fit(ds.train, ds.schema)
    s = gen.sample(10_000, random_state=0)
    for c in ("age", "education.num", "hours.per.week"):
        assert abs(s[c].mean() - ds.train[c].mean()) < 0.1 * ds.train[c].std(), c
        assert 0.8 < s[c].std() / ds.train[c].std() < 1.25, c
    assert abs((s["income"] == ">50K").mean() - (ds.train["income"] == ">50K").mean()) < 0.05


# ------------------------------------------------------------------ the anneal phase (anneal_from)
class _Lrs(Callback):
    """Every optimizer step's learning rate, read from the optimizer as it steps."""

    def on_fit_start(self, gen):
        self.lrs, step = [], gen.optimizer_.step

        def spy(*a, **k):
            self.lrs.append(gen.optimizer_.param_groups[0]["lr"])
            return step(*a, **k)

        gen.optimizer_.step = spy


def test_anneal_phase_learning_rate_step_by_step(mixed, tmp_path):
    """Epochs 1..E follow the full schedule's decay; E+1..E+A fall linearly from lr(E) to 0."""
    df, schema = mixed  # 400 rows, batch 64: 7 steps per epoch
    spy = _Lrs()
    TabDDPM(epochs=10, random_state=3, **TINY).fit(df, schema, callbacks=[spy])
    lr, spe = TINY["lr"], 7
    assert spy.lrs == pytest.approx([lr * (1 - s / (spe * 10)) for s in range(spe * 10)], rel=1e-12, abs=0)

    class StopAt(Callback):
        order = 200

        def on_epoch_end(self, gen, epoch, logs):
            return epoch == 4

    class StopAt5(Callback):
        order = 200

        def on_epoch_end(self, gen, epoch, logs):
            return epoch == 5

    TabDDPM(epochs=10, random_state=3, **TINY).fit(
        df, schema, callbacks=[CheckpointCallback(1, tmp_path / "e4.pt"), StopAt()]
    )
    spy = _Lrs()
    annealed = TabDDPM(epochs=7, anneal_from=4, schedule_epochs=10, **TINY)
    annealed.fit(df, schema, callbacks=[spy], resume_from=tmp_path / "e4.pt")
    lr_e = lr * (1 - 4 / 10)  # the rate at the start of epoch 5 of the 10-epoch schedule
    assert spy.lrs == pytest.approx([lr_e * (1 - j / (spe * 3)) for j in range(spe * 3)], rel=1e-12, abs=0)
    assert annealed.epoch_ == 7 and annealed.step_ == 7 * spe
    # the formula over the whole run, epochs 1-4 included (the checkpoint's steps)
    expected = [
        lr * (1 - s / (10 * spe)) if s < 4 * spe else lr_e * (1 - (s - 4 * spe) / (3 * spe)) for s in range(7 * spe)
    ]
    assert [annealed.lr_at(s) for s in range(7 * spe)] == pytest.approx(expected, rel=1e-12, abs=0)
    # deterministic: the same anneal from the same checkpoint gives the same weights
    again = TabDDPM(epochs=7, anneal_from=4, schedule_epochs=10, **TINY).fit(df, schema, resume_from=tmp_path / "e4.pt")
    assert all(torch.equal(a, b) for a, b in zip(annealed.model_.parameters(), again.model_.parameters()))
    # interrupted inside the anneal phase (after epoch 5's checkpoint) and resumed: the same weights
    TabDDPM(epochs=7, anneal_from=4, schedule_epochs=10, **TINY).fit(
        df, schema, resume_from=tmp_path / "e4.pt", callbacks=[CheckpointCallback(1, tmp_path / "a5.pt"), StopAt5()]
    )
    resumed = TabDDPM(epochs=7, anneal_from=4, schedule_epochs=10, **TINY).fit(
        df, schema, resume_from=tmp_path / "a5.pt"
    )
    assert resumed.step_ == annealed.step_
    assert all(torch.equal(a, b) for a, b in zip(annealed.model_.parameters(), resumed.model_.parameters()))
    # without anneal_from, schedule_epochs alone is the plain decay over that horizon (StopAtEpoch's warm-up)
    plain = TabDDPM(epochs=10, **TINY)
    plain.steps_per_epoch_ = 2
    assert [plain.lr_at(s) for s in range(20)] == pytest.approx([lr * (1 - s / 20) for s in range(20)], abs=0)


def test_anneal_parameters_are_checked(mixed):
    df, schema = mixed
    for kw, msg in [
        ({"anneal_from": 0}, "anneal_from must be a positive integer"),
        ({"anneal_from": 2.5}, "anneal_from must be a positive integer"),
        ({"schedule_epochs": 0}, "schedule_epochs must be a positive integer"),
        ({"anneal_from": 3}, r"anneal_from \(3\) must be below epochs \(3\)"),
        ({"anneal_from": 1, "dp_epsilon": 1.0}, "not supported with DP"),
    ]:
        with pytest.raises(TabmemError, match=msg):
            TabDDPM(epochs=3, **{**TINY, **kw}).fit(df, schema)
