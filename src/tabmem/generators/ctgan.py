"""CTGAN (Xu et al. 2019, "Modeling Tabular data using Conditional GAN"), written for tabmem from the paper.

* Input space: mode-specific normalisation (:mod:`tabmem.generators._transformer`).
* Conditional generator with training-by-sampling (:mod:`tabmem.generators._conditional`): the generator
  loss adds the cross-entropy between the condition and the generated block of the conditioned column.
* Generator (paper section 4.4): ``h0 = z (+) cond``; ``h_{l+1} = h_l (+) ReLU(BN(FC(h_l)))`` for each
  hidden size; scalars through ``tanh``, mode and category blocks through Gumbel-softmax (``tau = 0.2``).
* Critic: PacGAN with ``pac`` samples packed together (paper: 10); each hidden layer
  ``Dropout(LeakyReLU_0.2(FC(.)))`` with dropout 0.5; a linear output.
* Objective: WGAN-GP (Gulrajani et al. 2017), gradient penalty ``lambda = 10`` on points interpolated
  between packed real and fake groups; Adam ``lr = 2e-4``.

Reference defaults (the paper and its reference code, also the figures behind the published
memorization rates): 300 epochs, batch 500, embedding 128, (256, 256) layers, Adam betas (0.5, 0.9),
weight decay 1e-6, one critic step per generator step. Choices that differ from the paper's text
are listed in ``docs/ctgan_tvae.md``.

Two settings: the class defaults generate with the data's category frequencies and BatchNorm's running
averages (closer marginals, higher Shape/Trend); ``preset="paper"`` generates as the reference code does
(training-by-sampling conditions, BatchNorm with each generated batch's statistics, critic real rows in
shuffled order, unclipped numericals), which is what reproduces the published memorization rates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import nn

from tabmem.errors import TabmemError
from tabmem.generators._conditional import ConditionalSampler
from tabmem.generators._transformer import NUMERICAL_DECODINGS, NormalizedSpaceMixin, Span
from tabmem.generators.base import TabularGenerator, register_generator

__all__ = ["CTGAN"]


class _Residual(nn.Module):
    """``x (+) ReLU(BN(FC(x)))``: the generator's residual block (concatenation, as in the paper)."""

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.bn = nn.BatchNorm1d(d_out)

    def forward(self, x: torch.Tensor, batch_stats: bool = False) -> torch.Tensor:
        h = self.fc(x)
        if batch_stats:  # normalise with this batch's statistics; the running averages are left untouched
            h = nn.functional.batch_norm(h, None, None, self.bn.weight, self.bn.bias, training=True, eps=self.bn.eps)
        else:
            h = self.bn(h)
        return torch.cat([x, torch.relu(h)], dim=1)


class _Generator(nn.Module):
    def __init__(self, d_in: int, dims: Sequence[int], d_out: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        d = d_in
        for h in dims:
            layers.append(_Residual(d, h))
            d += h
        layers.append(nn.Linear(d, d_out))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, batch_stats: bool = False) -> torch.Tensor:
        """``batch_stats``: BatchNorm uses the batch's own statistics even in eval mode."""
        for layer in self.net:
            x = layer(x, batch_stats) if isinstance(layer, _Residual) else layer(x)
        return x


class _Critic(nn.Module):
    """PacGAN critic: ``pac`` consecutive rows are concatenated into one input."""

    def __init__(self, d_in: int, dims: Sequence[int], pac: int) -> None:
        super().__init__()
        self.pac = pac
        layers: list[nn.Module] = []
        d = d_in * pac
        for h in dims:
            layers += [nn.Linear(d, h), nn.LeakyReLU(0.2), nn.Dropout(0.5)]
            d = h
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.reshape(-1, x.shape[1] * self.pac))


def gumbel_softmax(logits: torch.Tensor, tau: float, generator: torch.Generator) -> torch.Tensor:
    """``softmax((logits + g) / tau)`` with Gumbel noise ``g = -log(-log U)`` drawn from ``generator``.

    Jang et al. 2017; written out here so the noise comes from the generator's own seeded stream.
    """
    u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
    e = -torch.log(u.clamp_min(1e-20))  # Exp(1) noise, > 0
    g = -torch.log(e.clamp_min(1e-20))
    return torch.softmax((logits + g) / tau, dim=1)


def apply_activations(raw: torch.Tensor, spans: list[Span], tau: float, generator: torch.Generator) -> torch.Tensor:
    """``tanh`` on scalar spans, Gumbel-softmax on one-hot spans (the generator's output layer).

    Reference form, one span at a time; training and sampling use the batched :class:`SpanOps`.
    """
    parts = []
    for s in spans:
        block = raw[:, s.start : s.end]
        parts.append(torch.tanh(block) if s.kind == "tanh" else gumbel_softmax(block, tau, generator))
    return torch.cat(parts, dim=1)


class SpanOps:
    """Batched per-span operations: every one-hot block handled in one padded tensor op.

    A ``(n_blocks, max_width)`` index matrix gathers all blocks side by side (padding masked with
    ``-inf``), so the output layer and the conditional cross-entropy cost a handful of tensor ops
    whatever the number of columns (a Python loop over ~20 spans dominated small-batch steps).
    """

    def __init__(self, spans: list[Span], device: torch.device) -> None:
        self.d = max((s.end for s in spans), default=0)
        self.tanh_idx = torch.tensor([s.start for s in spans if s.kind == "tanh"], dtype=torch.long, device=device)
        self.soft = self._pad([s for s in spans if s.kind == "softmax"], device)
        self.cat = self._pad([s for s in spans if s.role == "category"], device)

    @staticmethod
    def _pad(blocks: list[Span], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        width = max((b.width for b in blocks), default=1)
        offs = torch.arange(width)
        idx = torch.stack([b.start + offs.clamp(max=b.width - 1) for b in blocks]) if blocks else torch.zeros(0, width)
        mask = torch.stack([offs < b.width for b in blocks]) if blocks else torch.zeros(0, width, dtype=torch.bool)
        return idx.long().to(device), mask.to(device)

    def activate(self, raw: torch.Tensor, tau: float, generator: torch.Generator) -> torch.Tensor:
        """Same as :func:`apply_activations` (same distribution; the Gumbel noise is drawn in one call)."""
        out = raw.new_empty(raw.shape)
        if len(self.tanh_idx):
            out[:, self.tanh_idx] = torch.tanh(raw[:, self.tanh_idx])
        idx, mask = self.soft
        if len(idx):
            block = raw[:, idx]  # (b, n_blocks, width)
            u = torch.rand(block.shape, generator=generator, device=raw.device, dtype=raw.dtype)
            g = -torch.log((-torch.log(u.clamp_min(1e-20))).clamp_min(1e-20))
            soft = torch.softmax(((block + g) / tau).masked_fill(~mask, float("-inf")), dim=2)
            out[:, idx[mask]] = soft[:, mask]
        return out

    def conditional_loss(self, raw: torch.Tensor, column: torch.Tensor, category: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of each row's conditioned block (same value as ``_conditional.conditional_loss``)."""
        idx, mask = self.cat
        if len(idx) == 0:
            return raw.new_zeros(())
        logits = raw.gather(1, idx[column]).masked_fill(~mask[column], float("-inf"))  # (b, width)
        picked = logits.gather(1, category[:, None]).squeeze(1)
        return (torch.logsumexp(logits, dim=1) - picked).mean()


def _check_dims(name: str, dims: Any) -> None:
    ok = isinstance(dims, (list, tuple)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in dims
    )
    if not ok:
        raise TabmemError(f"{name} must be a sequence of positive integers, got {dims!r}")


def _check_positive(name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> None:
    types = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, types) or not np.isfinite(value):
        raise TabmemError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise TabmemError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")


@register_generator("ctgan")
class CTGAN(NormalizedSpaceMixin, TabularGenerator):
    """Conditional tabular GAN (Xu et al. 2019) with WGAN-GP and PacGAN, owning its training loop.

    Parameters follow the paper's reference setting; ``preset="paper"`` adds the reference code's
    generation and critic choices (``critic_pairing``, ``sample_conditions``, ``sample_batch_norm``,
    ``numerical_decoding``); ``batch_size`` must be a multiple of ``pac``.
    One epoch is ``max(n_train // batch_size, 1)`` steps of ``batch_size`` rows drawn by
    training-by-sampling (the paper's epoch), each step one or more critic updates and one generator
    update. History per epoch: ``loss_d`` (critic loss with penalty), ``loss_g`` (generator loss with
    the conditional term), ``cond_loss`` and ``loss`` (= ``loss_g``).

    Parameters
    ----------
    epochs, batch_size, embedding_dim:
        300, 500 and 128 (reference setting); ``batch_size`` must be a multiple of ``pac``.
    generator_dims, discriminator_dims:
        Hidden sizes of the residual generator and of the critic, (256, 256) each.
    generator_lr, discriminator_lr, generator_decay, discriminator_decay, betas:
        Adam settings of the two networks: 2e-4, 2e-4, 1e-6, 1e-6, (0.5, 0.9).
    pac, discriminator_steps, gp_lambda, tau:
        PacGAN group size (10), critic updates per generator update (1), WGAN-GP weight (10) and
        Gumbel-softmax temperature (0.2).
    log_frequency:
        Training-by-sampling with log-frequencies (``False``: raw frequencies).
    critic_pairing:
        ``"paired"``: the critic's real row ``i`` carries the condition of fake row ``i``, so each packed
        real group has the same conditions as the fake group it is interpolated with; ``"shuffled"``:
        the real rows (with their conditions) come in a random order, as in the reference code.
    sample_conditions:
        Condition drawn for each generated row: ``"frequency"`` (column uniform, category with its
        empirical frequency) or ``"training"`` (the training-by-sampling distribution, log-frequency
        when ``log_frequency``: what the reference code does).
    sample_batch_norm:
        Generator BatchNorm when sampling: ``"running"`` (eval mode, running averages; any chunk size
        gives the same rows) or ``"batch"`` (statistics of each generated batch of ``batch_size`` rows,
        as the reference code, which never switches to eval mode).
    numerical_decoding:
        ``"clip_round"``: generated numericals clipped to the training range, integer columns rounded;
        ``"truncate"``: no clipping, integer columns truncated toward zero (the reference code's output).
    max_modes, weight_threshold:
        Mode-specific normalisation: at most 10 modes per numerical column, modes under 0.005 dropped.
    random_state, device:
        Seed (same seed, same model and samples on CPU); ``"auto"`` = CUDA when present, else CPU.

    Examples
    --------
    >>> gen = CTGAN(epochs=300, random_state=0).fit(train, schema)      # doctest: +SKIP
    >>> synthetic = gen.sample(len(train), random_state=1)               # doctest: +SKIP
    """

    _RESUME_MUTABLE: ClassVar[frozenset[str]] = TabularGenerator._RESUME_MUTABLE | {
        "sample_conditions",
        "sample_batch_norm",
        "numerical_decoding",
    }

    _STATE_MODULES: ClassVar[dict[str, str]] = {
        "generator": "generator_",
        "critic": "critic_",
        "opt_g": "opt_g_",
        "opt_d": "opt_d_",
    }

    supports_sample_weight = True  # real rows drawn in proportion to their weight (ConditionalSampler)
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        # the reference code's behaviour, behind the published memorization figures (docs/ctgan_tvae.md)
        "paper": {
            "critic_pairing": "shuffled",
            "sample_conditions": "training",
            "sample_batch_norm": "batch",
            "numerical_decoding": "truncate",
        },
        # small networks for tests and demos; same algorithm
        "small": {
            "epochs": 30,
            "embedding_dim": 64,
            "generator_dims": (128, 128),
            "discriminator_dims": (128, 128),
        },
    }

    def __init__(
        self,
        *,
        epochs: int = 300,
        batch_size: int = 500,
        embedding_dim: int = 128,
        generator_dims: Sequence[int] = (256, 256),
        discriminator_dims: Sequence[int] = (256, 256),
        generator_lr: float = 2e-4,
        discriminator_lr: float = 2e-4,
        generator_decay: float = 1e-6,
        discriminator_decay: float = 1e-6,
        betas: tuple[float, float] = (0.5, 0.9),
        pac: int = 10,
        discriminator_steps: int = 1,
        gp_lambda: float = 10.0,
        tau: float = 0.2,
        log_frequency: bool = True,
        critic_pairing: str = "paired",
        sample_conditions: str = "frequency",
        sample_batch_norm: str = "running",
        numerical_decoding: str = "clip_round",
        max_modes: int = 10,
        weight_threshold: float = 0.005,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.epochs = epochs
        self.batch_size = batch_size
        self.embedding_dim = embedding_dim
        self.generator_dims = generator_dims
        self.discriminator_dims = discriminator_dims
        self.generator_lr = generator_lr
        self.discriminator_lr = discriminator_lr
        self.generator_decay = generator_decay
        self.discriminator_decay = discriminator_decay
        self.betas = betas
        self.pac = pac
        self.discriminator_steps = discriminator_steps
        self.gp_lambda = gp_lambda
        self.tau = tau
        self.log_frequency = log_frequency
        self.critic_pairing = critic_pairing
        self.sample_conditions = sample_conditions
        self.sample_batch_norm = sample_batch_norm
        self.numerical_decoding = numerical_decoding
        self.max_modes = max_modes
        self.weight_threshold = weight_threshold
        self.random_state = random_state
        self.device = device

    # ------------------------------------------------------------------ build
    def _check_params(self) -> None:
        _check_positive("embedding_dim", self.embedding_dim, integer=True)
        _check_dims("generator_dims", self.generator_dims)
        _check_dims("discriminator_dims", self.discriminator_dims)
        for name in ("generator_lr", "discriminator_lr", "tau"):
            _check_positive(name, getattr(self, name))
        for name in ("generator_decay", "discriminator_decay", "gp_lambda"):
            _check_positive(name, getattr(self, name), allow_zero=True)
        _check_positive("pac", self.pac, integer=True)
        _check_positive("discriminator_steps", self.discriminator_steps, integer=True)
        if not (isinstance(self.betas, (list, tuple)) and len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas)):
            raise TabmemError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        for name, allowed in (
            ("critic_pairing", ("paired", "shuffled")),
            ("sample_conditions", ("frequency", "training")),
            ("sample_batch_norm", ("running", "batch")),
            ("numerical_decoding", NUMERICAL_DECODINGS),
        ):
            if getattr(self, name) not in allowed:
                raise TabmemError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.batch_size % self.pac != 0:
            raise TabmemError(f"batch_size ({self.batch_size}) must be a multiple of pac ({self.pac})")

    def _make_modules(self) -> None:
        norm = self.normalizer_
        assert norm is not None
        self._cat_spans = [s for s in norm.spans_ if s.role == "category"]
        self._cat_bounds = [(s.start, s.end) for s in self._cat_spans]
        self._ops = SpanOps(norm.spans_, self.device_)
        self.cond_dim_ = sum(s.width for s in self._cat_spans)
        d = norm.output_dim_
        self.generator_ = _Generator(self.embedding_dim + self.cond_dim_, self.generator_dims, d).to(self.device_)
        self.critic_ = _Critic(d + self.cond_dim_, self.discriminator_dims, self.pac).to(self.device_)
        self.opt_g_ = torch.optim.Adam(
            self.generator_.parameters(),
            lr=self.generator_lr,
            betas=tuple(self.betas),
            weight_decay=self.generator_decay,
        )
        self.opt_d_ = torch.optim.Adam(
            self.critic_.parameters(),
            lr=self.discriminator_lr,
            betas=tuple(self.betas),
            weight_decay=self.discriminator_decay,
        )
        self._make_sampler(norm)

    def _make_sampler(self, norm: Any) -> None:
        n_cats = [s.width for s in norm.spans_ if s.role == "category"]
        codes = getattr(self, "_category_codes", None)
        if codes is None:  # loaded model: only generation-time conditions are needed; counts come from state
            codes = [np.zeros(1, dtype=np.int64) for _ in n_cats]
        n_rows = len(codes[0]) if codes else self.n_train_
        weights = getattr(self, "_fit_weights", None) if getattr(self, "_category_codes", None) is not None else None
        self.sampler_ = ConditionalSampler(
            codes, n_cats, log_frequency=self.log_frequency, n_rows=n_rows, weights=weights
        )

    # ------------------------------------------------------------------ train
    def _gradient_penalty(self, real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
        """WGAN-GP penalty ``lambda * E[(||grad C(x_hat)||_2 - 1)^2]``, one interpolation weight per packed group."""
        groups = real.shape[0] // self.pac
        eps = torch.rand(groups, 1, 1, generator=self.torch_generator_, device=real.device)
        eps = eps.expand(groups, self.pac, real.shape[1]).reshape(real.shape)
        x_hat = (eps * real + (1 - eps) * fake).requires_grad_(True)
        out = self.critic_(x_hat)
        (grad,) = torch.autograd.grad(out.sum(), x_hat, create_graph=True)
        norms = grad.reshape(groups, -1).norm(2, dim=1)
        return self.gp_lambda * ((norms - 1) ** 2).mean()

    def _fake(
        self, n: int, generator: torch.Generator, training: bool, batch_stats: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """Raw generator output, its condition tensor and the condition batch."""
        if training:
            cond = self.sampler_.sample_condition(n, self.rng_, training=True)
        else:  # generation-time conditions (see ``sample_conditions``), from the sampling stream
            seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device).item())
            cond = self.sampler_.sample_condition(
                n, np.random.default_rng(seed), training=self.sample_conditions == "training"
            )
        c = torch.from_numpy(cond.cond).to(self.device_)
        z = torch.randn(n, self.embedding_dim, generator=generator, device=self.device_)
        raw = self.generator_(torch.cat([z, c], dim=1), batch_stats=batch_stats)
        return raw, c, cond

    def _train_epoch(self, epoch: int) -> dict[str, float]:
        norm = self.normalizer_
        assert norm is not None
        data = self.train_matrix_
        bs = int(self.batch_size)
        steps = max(self.n_train_ // bs, 1)
        gen = self.torch_generator_
        sum_d = sum_g = sum_c = 0.0
        for _ in range(steps):
            for _ in range(int(self.discriminator_steps)):
                with torch.no_grad():  # the critic step needs no generator gradients (BatchNorm still updates)
                    raw, c, cond = self._fake(bs, gen, training=True)
                    fake = self._ops.activate(raw, self.tau, gen)
                rows = torch.from_numpy(self.sampler_.sample_rows(cond, self.rng_)).to(self.device_)
                real = data[rows]
                real_in = torch.cat([real, c], dim=1)
                if self.critic_pairing == "shuffled":  # real packs no longer mirror the fake packs' conditions
                    real_in = real_in[torch.from_numpy(self.rng_.permutation(bs)).to(self.device_)]
                fake_in = torch.cat([fake, c], dim=1)
                loss_d = self.critic_(fake_in).mean() - self.critic_(real_in).mean()
                penalty = self._gradient_penalty(real_in, fake_in)
                self.opt_d_.zero_grad(set_to_none=True)
                (loss_d + penalty).backward()
                self.opt_d_.step()
            raw, c, cond = self._fake(bs, gen, training=True)
            fake = self._ops.activate(raw, self.tau, gen)
            adv = -self.critic_(torch.cat([fake, c], dim=1)).mean()
            cond_term = self._ops.conditional_loss(
                raw, torch.from_numpy(cond.column).to(raw.device), torch.from_numpy(cond.category).to(raw.device)
            )
            loss_g = adv + cond_term
            self.opt_g_.zero_grad(set_to_none=True)
            loss_g.backward()
            self.opt_g_.step()
            sum_d += float((loss_d + penalty).detach())
            sum_g += float(loss_g.detach())
            sum_c += float(cond_term.detach())
        return {"loss": sum_g / steps, "loss_g": sum_g / steps, "loss_d": sum_d / steps, "cond_loss": sum_c / steps}

    # ----------------------------------------------------------------- sample
    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        norm = self.normalizer_
        assert norm is not None
        # Gumbel-max decoding: the arg-max of a Gumbel-softmax block is a draw from its softmax
        if self.sample_batch_norm == "running":
            # BatchNorm in eval mode uses running statistics, so any chunk size gives the same rows
            raw, _, _ = self._fake(n, generator, training=False)
            out = self._ops.activate(raw, self.tau, generator)
        else:  # whole batches of batch_size rows, each normalised with its own statistics, the surplus dropped
            bs = int(self.batch_size)
            chunks = []
            for _ in range(-(-n // bs)):
                raw, _, _ = self._fake(bs, generator, training=False, batch_stats=True)
                chunks.append(self._ops.activate(raw, self.tau, generator))
            out = torch.cat(chunks)[:n]
        return self._decode_sample(out.cpu().numpy(), None, 0)

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "transformer": self.normalizer_.get_state(),  # type: ignore[union-attr]
            "counts": [torch.as_tensor(c) for c in self.sampler_.counts_],
            **self._module_states(),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        if self._restore_modules(state):
            if getattr(self, "_category_codes", None) is None:
                # loaded model: generation conditions need the category frequencies only
                codes = [np.repeat(np.arange(len(c)), c.numpy().astype(np.int64)) for c in state["counts"]]
                n_cats = [len(c) for c in state["counts"]]
                self.sampler_ = ConditionalSampler(
                    codes, n_cats, log_frequency=self.log_frequency, n_rows=self.n_train_
                )
        else:
            self._make_sampler(self.normalizer_)
        self._load_module_states(state)
