"""TVAE's ELBO and CTGAN's WGAN-GP losses, taken from a real ``fit``, against direct references.

A callback captures, during the first training step of a real ``fit``, what the networks saw and the
gradients the optimiser was about to apply; the test then recomputes the loss from a copy of the
networks taken before that step: TVAE's with ``torch.distributions`` (Gaussian and categorical
log-likelihoods, ``kl_divergence`` to the standard normal prior), CTGAN's with the critic applied
to each packed group and a direct ``torch.autograd.grad`` for the gradient penalty. Values (the
epoch's history) and parameter gradients must agree, so a wrong sign or weight of any term fails.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import distributions as D

from tabmem.data.schema import Schema
from tabmem.generators import Callback, get_generator


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _table(n: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
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


def _grads(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: p.grad.detach().clone() for k, p in module.named_parameters() if p.grad is not None}


def _assert_grads_equal(got: dict[str, torch.Tensor], ref_module: torch.nn.Module, what: str) -> None:
    ref = _grads(ref_module)
    assert ref.keys() == got.keys() and len(ref) >= 4, what
    for k in ref:
        torch.testing.assert_close(got[k], ref[k], rtol=2e-4, atol=1e-6, msg=f"{what}: gradient of {k}")


# ---------------------------------------------------------------------------------------- TVAE
class _TVAERecorder(Callback):
    """Copies the networks before training and records the first step's tensors and gradients."""

    def on_fit_start(self, gen) -> None:
        self.encoder = copy.deepcopy(gen.encoder_net_)
        self.decoder = copy.deepcopy(gen.decoder_net_)
        self.seen: dict[str, torch.Tensor] = {}
        self.grads: dict[str, torch.Tensor] = {}

        def enc_hook(module, inputs, output):
            self.seen.setdefault("x", inputs[0].detach().clone())
            self.seen.setdefault("mu", output[0].detach().clone())
            self.seen.setdefault("logvar", output[1].detach().clone())

        def dec_hook(module, inputs, output):
            self.seen.setdefault("z", inputs[0].detach().clone())

        def step_hook(opt, args, kwargs):
            if not self.grads:
                self.grads = {f"enc.{k}": v for k, v in _grads(gen.encoder_net_).items()}
                self.grads.update({f"dec.{k}": v for k, v in _grads(gen.decoder_net_).items()})

        gen.encoder_net_.register_forward_hook(enc_hook)
        gen.decoder_net_.register_forward_hook(dec_hook)
        gen.opt_.register_step_pre_hook(step_hook)


def test_tvae_elbo_through_fit_equals_torch_distributions() -> None:
    df, schema = _table(120)
    rec = _TVAERecorder()
    gen = get_generator(
        "tvae",
        epochs=1,
        batch_size=500,  # one step: the whole table
        embedding_dim=6,
        compress_dims=(16,),
        decompress_dims=(16,),
        loss_factor=2.0,
        random_state=0,
    )
    gen.fit(df, schema, callbacks=[rec])
    x, mu_seen, logvar_seen, z = (rec.seen[k] for k in ("x", "mu", "logvar", "z"))
    assert x.shape[0] == len(df)

    # the reference, from the networks as they were before the step
    mu, logvar = rec.encoder(x)
    torch.testing.assert_close(mu, mu_seen)
    torch.testing.assert_close(logvar, logvar_seen)
    std = torch.exp(0.5 * logvar)
    eps = ((z - mu_seen) / std.detach()).detach()  # the noise the step drew (reparametrisation)
    out = rec.decoder(mu + std * eps)
    sigma = rec.decoder.sigma
    nll = torch.zeros(len(x))
    n_scalars = 0
    for span in gen.normalizer_.spans_:
        if span.kind == "tanh":
            j = span.start
            # Gaussian NLL without its constant log sqrt(2 pi) (TVAE's reconstruction term)
            nll = nll - D.Normal(torch.tanh(out[:, j]), sigma[j]).log_prob(x[:, j]) - 0.5 * math.log(2 * math.pi)
            n_scalars += 1
        else:
            target = x[:, span.start : span.end].argmax(1)
            nll = nll - D.Categorical(logits=out[:, span.start : span.end]).log_prob(target)
    assert n_scalars == 2
    prior = D.Normal(torch.zeros_like(mu), torch.ones_like(mu))
    kl = D.kl_divergence(D.Normal(mu, std), prior).sum(1).mean()
    recon = 2.0 * nll.mean()
    loss = recon + kl  # the negative ELBO (reconstruction weighted by loss_factor)
    assert kl.item() > 0
    hist = gen.history_[0]
    assert hist["kl"] == pytest.approx(kl.item(), rel=1e-5)
    assert hist["recon"] == pytest.approx(recon.item(), rel=1e-5)
    assert hist["loss"] == pytest.approx(loss.item(), rel=1e-5)
    loss.backward()
    ref = torch.nn.ModuleDict({"enc": rec.encoder, "dec": rec.decoder})
    _assert_grads_equal(rec.grads, ref, "TVAE")


# --------------------------------------------------------------------------------------- CTGAN
class _CTGANRecorder(Callback):
    """Turns the critic's dropout off (p = 0), copies the critic, records inputs, outputs and gradients."""

    def on_fit_start(self, gen) -> None:
        for m in gen.critic_.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
        self.critic = copy.deepcopy(gen.critic_)
        self.critic_inputs: list[torch.Tensor] = []
        self.gen_outputs: list[torch.Tensor] = []
        self.grad_wrt_generator_input: list[torch.Tensor] = []
        self.critic_grads: dict[str, torch.Tensor] = {}

        def critic_pre_hook(module, inputs):
            x = inputs[0]
            self.critic_inputs.append(x.detach().clone())
            if len(self.critic_inputs) == 4 and x.requires_grad:  # the generator step's critic call
                x.register_hook(lambda g: self.grad_wrt_generator_input.append(g.detach().clone()))

        def gen_hook(module, inputs, output):
            self.gen_outputs.append(output.detach().clone())

        def critic_step_hook(opt, args, kwargs):
            if not self.critic_grads:
                self.critic_grads = _grads(gen.critic_)

        gen.critic_.register_forward_pre_hook(critic_pre_hook)
        gen.generator_.register_forward_hook(gen_hook)
        gen.opt_d_.register_step_pre_hook(critic_step_hook)


def test_ctgan_critic_and_generator_losses_through_fit_equal_direct_autograd() -> None:
    df, schema = _table(150)
    rec = _CTGANRecorder()
    pac, lam = 5, 10.0
    gen = get_generator(
        "ctgan",
        epochs=1,
        batch_size=100,  # 150 rows // 100 = one step
        pac=pac,
        gp_lambda=lam,
        embedding_dim=8,
        generator_dims=(16,),
        discriminator_dims=(16, 16),
        random_state=0,
    )
    gen.fit(df, schema, callbacks=[rec])
    assert len(rec.critic_inputs) == 4  # fake, real, interpolated (penalty), generator step
    fake_in, real_in, x_hat, gen_in = rec.critic_inputs
    d = gen.normalizer_.output_dim_
    groups = fake_in.shape[0] // pac

    # the real rows are training rows carrying the same condition vector as the fake ones
    train = gen.train_matrix_
    assert all(bool((train == r).all(1).any()) for r in real_in[:, :d])
    torch.testing.assert_close(real_in[:, d:], fake_in[:, d:])

    # the penalty's points: one interpolation weight per packed group of pac rows
    eps = []
    for g in range(groups):
        r, f, h = (t[g * pac : (g + 1) * pac] for t in (real_in, fake_in, x_hat))
        e = float(((h - f) * (r - f)).sum() / ((r - f) ** 2).sum())
        torch.testing.assert_close(h, e * r + (1 - e) * f, rtol=1e-5, atol=1e-5)
        eps.append(e)
    assert min(eps) >= 0 and max(eps) <= 1 and np.std(eps) > 0.05

    # critic loss: E[C(fake)] - E[C(real)] + lambda E[(||grad C(x_hat)|| - 1)^2], with the critic before its step
    critic = rec.critic
    penalty_terms = []
    for g in range(groups):
        h = x_hat[g * pac : (g + 1) * pac].reshape(1, -1).clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(critic.net(h).sum(), h, create_graph=True)
        penalty_terms.append((grad.norm(2) - 1) ** 2)
    penalty = lam * torch.stack(penalty_terms).mean()
    loss_d = critic(fake_in).mean() - critic(real_in).mean() + penalty
    hist = gen.history_[0]
    assert hist["loss_d"] == pytest.approx(loss_d.item(), rel=1e-5, abs=1e-6)
    loss_d.backward()
    _assert_grads_equal(rec.critic_grads, critic, "CTGAN critic")

    # generator loss: -E[C(fake)] (critic after its step) + cross-entropy of the conditioned block
    raw = rec.gen_outputs[1]  # the generator step's raw output
    cat_spans = [s for s in gen.normalizer_.spans_ if s.role == "category"]
    offsets = np.cumsum([0] + [s.width for s in cat_spans])
    ce = []
    for i in range(raw.shape[0]):
        pos = int(gen_in[i, d:].argmax())
        j = int(np.searchsorted(offsets, pos, side="right") - 1)
        span, k = cat_spans[j], pos - offsets[j]
        logits = raw[i, span.start : span.end].double()
        ce.append(float(torch.logsumexp(logits, 0) - logits[k]))
    x = gen_in.clone().requires_grad_(True)
    adv = -gen.critic_(x).mean()
    assert hist["cond_loss"] == pytest.approx(np.mean(ce), rel=1e-5)
    assert hist["loss_g"] == pytest.approx(adv.item() + np.mean(ce), rel=1e-5, abs=1e-6)
    (grad_x,) = torch.autograd.grad(adv, x)
    # the gradient reaching the generator's output through the critic is that of -E[C]
    torch.testing.assert_close(rec.grad_wrt_generator_input[0], grad_x, rtol=1e-4, atol=1e-7)
