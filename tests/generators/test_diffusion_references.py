"""TabDDPM's mixed diffusion loss (from a real ``fit``) and the time embedding against naive references.

The loss reference is a per-row, per-feature loop in float64 written from the papers: the Gaussian
part is the mean squared error of the predicted noise (Ho et al. 2020); the multinomial part is, for
each categorical feature, ``T * KL(q(x_{t-1} | x_t, x_0) || p(x_{t-1} | x_t))`` (the decoder NLL at
``t = 0``) plus the prior ``KL(q(x_T | x_0) || uniform)``, averaged over rows and divided by the
number of categorical features (Hoogeboom et al. 2021; Kotelnikov et al. 2023). Posteriors come
from Bayes' rule on explicit transition probabilities ``alpha x + (1 - alpha) / K``; the schedule is
the cosine formula of Nichol & Dhariwal (2021).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.generators import Callback, get_generator
from tabmem.generators._diffusion import SinusoidalTimeEmbedding


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def cosine_alphas(T: int, s: float = 0.008) -> tuple[np.ndarray, np.ndarray]:
    """alpha_t and alpha-bar_t (t = 0..T-1) of the cosine schedule, betas clipped at 0.999."""
    f = [math.cos((i / T + s) / (1 + s) * math.pi / 2) ** 2 for i in range(T + 1)]
    alphas = np.array([1.0 - min(1.0 - f[i + 1] / f[i], 0.999) for i in range(T)])
    return alphas, np.cumprod(alphas)


def naive_losses(x0_num, noise, out, codes, xt_codes, t, sizes, T) -> tuple[float, float]:
    """(multinomial loss, Gaussian loss) by loops over rows and features (module docstring)."""
    alphas, abar = cosine_alphas(T)
    n = len(t)
    gauss = float(((out[:, : x0_num.shape[1]] - noise) ** 2).mean()) if x0_num.shape[1] else 0.0
    total = 0.0
    for i in range(n):
        ti = int(t[i])
        start = x0_num.shape[1]
        for f, K in enumerate(sizes):
            k0, kt = int(codes[i, f]), int(xt_codes[i, f])
            logits = out[i, start : start + K]
            start += K
            p0 = np.exp(logits - logits.max())
            p0 /= p0.sum()
            x0 = np.eye(K)[k0]
            like = np.array([alphas[ti] * (kt == k) + (1 - alphas[ti]) / K for k in range(K)])  # q(x_t | x_{t-1}=k)
            if ti == 0:
                prev_true, prev_model = x0, p0
            else:
                prev_true = abar[ti - 1] * x0 + (1 - abar[ti - 1]) / K
                prev_model = abar[ti - 1] * p0 + (1 - abar[ti - 1]) / K
            post_true = prev_true * like / (prev_true * like).sum()
            post_model = prev_model * like / (prev_model * like).sum()
            if ti == 0:
                term = -math.log(post_model[k0])  # decoder negative log-likelihood
            else:
                term = sum(q * math.log(q / p) for q, p in zip(post_true, post_model) if q > 0)
            qT = abar[T - 1] * x0 + (1 - abar[T - 1]) / K
            prior = sum(q * math.log(q * K) for q in qT)
            total += T * term + prior
    return total / n / len(sizes), gauss


class _LossRecorder(Callback):
    """Records the first training step's batch, RNG state, model input/output and the gradients."""

    def on_fit_start(self, gen) -> None:
        self.model = copy.deepcopy(gen.model_)
        self.calls: list[dict] = []
        self.grads: dict[str, torch.Tensor] = {}
        diffusion = gen.diffusion_
        original = diffusion.loss

        def loss(model, x_num, x_codes, generator):
            self.calls.append({"x_num": x_num.clone(), "codes": x_codes.clone(), "rng": generator.get_state()})
            return original(model, x_num, x_codes, generator)

        diffusion.loss = loss  # an instance attribute shadows the method for this fit only

        def model_hook(module, inputs, output):
            if len(self.calls) == 1 and "inp" not in self.calls[0]:
                self.calls[0].update(inp=inputs[0].detach().clone(), t=inputs[1].clone(), out=output.detach().clone())

        def step_hook(opt, args, kwargs):
            if not self.grads:
                self.grads = {k: p.grad.detach().clone() for k, p in gen.model_.named_parameters()}

        gen.model_.register_forward_hook(model_hook)
        gen.optimizer_.register_step_pre_hook(step_hook)


def _mixed_table(n: int = 120) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "a": rng.normal(0, 1, n),
            "b": rng.exponential(2.0, n),
            "c": rng.choice(["x", "y", "z"], n, p=[0.5, 0.3, 0.2]),
            "d": rng.choice(["p", "q"], n),
        }
    )
    return df, Schema(("a", "b", "c", "d"), ("a", "b"), ("c", "d"))


@pytest.mark.parametrize("cat_input", ["log_onehot", "onehot"])
def test_mixed_loss_through_fit_equals_naive_per_row_computation(cat_input: str) -> None:
    df, schema = _mixed_table()
    T = 10
    rec = _LossRecorder()
    gen = get_generator(
        "tabddpm",
        epochs=1,
        batch_size=len(df),  # one step
        layers=(16, 16),
        dim_t=8,
        num_timesteps=T,
        cat_input=cat_input,
        random_state=0,
    )
    gen.fit(df, schema, callbacks=[rec])
    assert len(rec.calls) == 1
    call = rec.calls[0]
    x_num, codes, t, inp, out = (call[k] for k in ("x_num", "codes", "t", "inp", "out"))
    sizes = [3, 2]
    # replay the step's draws from its RNG state: t, then the Gaussian noise
    g = torch.Generator().set_state(call["rng"])
    t_replay = torch.randint(0, T, (len(t),), generator=g)
    noise = torch.randn(x_num.shape, generator=g)
    assert torch.equal(t_replay, t) and {0, T - 1} <= set(t.tolist())  # both ends of the chain are used
    # the forward process: x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps
    _, abar = cosine_alphas(T)
    ab = torch.tensor(abar[t.numpy()], dtype=torch.float64)[:, None]
    expected_xt = ab.sqrt() * x_num.double() + (1 - ab).sqrt() * noise.double()
    torch.testing.assert_close(inp[:, :2].double(), expected_xt, rtol=1e-5, atol=1e-5)
    # the categorical part of x_t, read back from the model input (one-hot or log one-hot blocks)
    cat = inp[:, 2:]
    blocks = torch.split(cat, sizes, dim=1)
    xt_codes = torch.stack([b.argmax(1) for b in blocks], 1)
    for b in blocks:  # a proper (log) one-hot
        hot = (b == b.max(1, keepdim=True).values).sum(1)
        assert (hot == 1).all()
    multi, gauss = naive_losses(
        x_num.double().numpy(), noise.double().numpy(), out.double().numpy(), codes.numpy(), xt_codes.numpy(),
        t.numpy(), sizes, T,
    )  # fmt: skip
    hist = gen.history_[0]
    assert hist["loss_gaussian"] == pytest.approx(gauss, rel=1e-5)
    assert hist["loss_multinomial"] == pytest.approx(multi, rel=1e-4)
    assert hist["loss"] == pytest.approx(multi + gauss, rel=1e-4)


def test_loss_gradients_through_fit_equal_autograd_of_the_naive_loss() -> None:
    """The same step's parameter gradients equal those of the per-row loss written in torch (float64)."""
    df, schema = _mixed_table(60)
    T = 6
    rec = _LossRecorder()
    gen = get_generator(
        "tabddpm", epochs=1, batch_size=len(df), layers=(8,), dim_t=4, num_timesteps=T, cat_input="onehot",
        random_state=2,
    )  # fmt: skip
    gen.fit(df, schema, callbacks=[rec])
    call = rec.calls[0]
    x_num, codes, t, inp = (call[k] for k in ("x_num", "codes", "t", "inp"))
    g = torch.Generator().set_state(call["rng"])
    torch.randint(0, T, (len(t),), generator=g)
    noise = torch.randn(x_num.shape, generator=g).double()
    model = rec.model.double()
    out = model(inp.double(), t)
    alphas, abar = (torch.tensor(v) for v in cosine_alphas(T))
    sizes = [3, 2]
    xt_codes = torch.stack([b.argmax(1) for b in torch.split(inp[:, 2:], sizes, dim=1)], 1)
    terms = []
    for i in range(len(t)):
        ti, start, row = int(t[i]), 2, []
        for f, K in enumerate(sizes):
            p0 = torch.softmax(out[i, start : start + K], 0)
            start += K
            x0 = torch.nn.functional.one_hot(codes[i, f], K).double()
            like = alphas[ti] * torch.nn.functional.one_hot(xt_codes[i, f], K).double() + (1 - alphas[ti]) / K
            prev_t = x0 if ti == 0 else abar[ti - 1] * x0 + (1 - abar[ti - 1]) / K
            prev_m = p0 if ti == 0 else abar[ti - 1] * p0 + (1 - abar[ti - 1]) / K
            post_t = prev_t * like / (prev_t * like).sum()
            post_m = prev_m * like / (prev_m * like).sum()
            if ti == 0:
                lt = -torch.log(post_m[codes[i, f]])
            else:
                lt = (post_t * (torch.log(post_t) - torch.log(post_m))).sum()
            row.append(T * lt)  # the prior term has no parameters: no gradient
        terms.append(torch.stack(row).sum())
    loss = torch.stack(terms).mean() / len(sizes) + ((out[:, :2] - noise) ** 2).mean()
    loss.backward()
    for k, p in model.named_parameters():
        torch.testing.assert_close(rec.grads[k].double(), p.grad, rtol=1e-3, atol=1e-6, msg=k)


@pytest.mark.parametrize("dim", [8, 9])
def test_sinusoidal_time_embedding_equals_its_formula(dim: int) -> None:
    """Before its MLP: [cos(t w_i), sin(t w_i)] with w_i = 10000^(-i/half), i < half = dim // 2 (zero-padded if odd)."""
    emb = SinusoidalTimeEmbedding(dim)
    seen = []
    emb.mlp.register_forward_pre_hook(lambda m, inputs: seen.append(inputs[0].detach().clone()))
    t = torch.tensor([0, 1, 7, 250, 999])
    emb(t)
    half = dim // 2
    expected = np.zeros((len(t), dim))
    for r, tv in enumerate(t.tolist()):
        for i in range(half):
            w = 10000.0 ** (-i / half)
            expected[r, i] = math.cos(tv * w)
            expected[r, half + i] = math.sin(tv * w)
    np.testing.assert_allclose(seen[0].numpy(), expected, atol=2e-4)  # float32 arguments up to ~1000 rad
    assert seen[0].shape == (len(t), dim)
