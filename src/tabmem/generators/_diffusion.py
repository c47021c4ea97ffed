"""Gaussian + multinomial diffusion for mixed-type tables (the TabDDPM process).

Written for tabmem from the papers: DDPM (Ho et al. 2020) with the cosine schedule of Nichol &
Dhariwal (2021) for numerical features (epsilon-parametrised, MSE loss), multinomial diffusion
(Hoogeboom et al. 2021) for categorical features (x0-parametrised, stochastic variational
bound), combined as in TabDDPM (Kotelnikov et al. 2023), in the configuration used by TabCutMix and
DynamicCut (:mod:`tabmem.generators.tabddpm`).

Categorical features are held as ONE flat vector of concatenated one-hots (width K = sum of the
cardinalities); per-feature normalisations use segment operations (a scatter max plus a matmul
with a K x F membership matrix), so every step is a handful of vectorised tensor ops whatever
the number of features.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from tabmem.errors import ParameterError
from tabmem.generators._weights import weighted_mean

LOG_EPS = 1e-30  # log(one-hot) clamp, as in multinomial diffusion
LOG_ONEHOT_ZERO = -math.log(LOG_EPS)  # log one-hot = (z - 1) * this


def cosine_betas(num_timesteps: int, max_beta: float = 0.999, s: float = 0.008) -> torch.Tensor:
    """Cosine schedule: beta_i = min(1 - abar((i+1)/T)/abar(i/T), max_beta), abar(u)=cos((u+s)/(1+s)*pi/2)^2."""

    def abar(u: float) -> float:
        return math.cos((u + s) / (1 + s) * math.pi / 2) ** 2

    betas = [min(1 - abar((i + 1) / num_timesteps) / abar(i / num_timesteps), max_beta) for i in range(num_timesteps)]
    return torch.tensor(betas, dtype=torch.float64)


class SinusoidalTimeEmbedding(nn.Module):
    """Sinusoidal timestep features (Vaswani et al. 2017) then Linear-SiLU-Linear, as in TabDDPM's MLPDiffusion."""

    def __init__(self, dim: int, max_period: float = 10_000.0):
        super().__init__()
        self.dim = dim
        half = dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
        self.register_buffer("freqs", freqs, persistent=False)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        args = t.float()[:, None] * self.freqs[None]
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=1)
        if self.dim % 2:
            emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=1)
        return self.mlp(emb)


class MLPDenoiser(nn.Module):
    """TabDDPM's denoiser: ``proj(x) + time_emb(t)`` then an MLP (Linear-ReLU[-Dropout] blocks) back to ``d_in``."""

    def __init__(self, d_in: int, layers: Sequence[int], dim_t: int, dropout: float = 0.0):
        super().__init__()
        self.proj = nn.Linear(d_in, dim_t)
        self.time_embed = SinusoidalTimeEmbedding(dim_t)
        blocks: list[nn.Module] = []
        d = dim_t
        for width in layers:
            blocks += [nn.Linear(d, int(width)), nn.ReLU(inplace=True)]
            if dropout > 0:
                blocks.append(nn.Dropout(dropout))
            d = int(width)
        self.mlp = nn.Sequential(*blocks)
        self.head = nn.Linear(d, d_in)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``t`` has shape (B,) or (1,) (one timestep for the whole batch: embedded once)."""
        return self.head(self.mlp(self.proj(x) + self.time_embed(t)))

    def flops_per_row(self, shared_t: bool) -> int:
        """Forward FLOPs (2 per multiply-add) of one row; ``shared_t``: time embedding computed once per batch."""
        total = 0
        for m in self.modules():
            if isinstance(m, nn.Linear):
                if shared_t and any(m is mm for mm in self.time_embed.modules()):
                    continue
                total += 2 * m.in_features * m.out_features
        return total


class MixedDiffusion(nn.Module):
    """Schedules and the two diffusion processes for ``n_num`` Gaussian and categorical features of sizes ``cat_sizes``."""

    def __init__(self, n_num: int, cat_sizes: Sequence[int], num_timesteps: int, cat_input: str = "log_onehot"):
        super().__init__()
        if cat_input not in ("log_onehot", "onehot"):
            raise ParameterError(f"cat_input must be 'log_onehot' or 'onehot', got {cat_input!r}")
        # what the denoiser sees of x_t's categorical part: the reference code feeds log one-hots
        # (0 / log 1e-30 = -69); "onehot" feeds 0/1, an affine reparametrisation of the same input
        # (W log_onehot = 69 W (z - 1)) that trains much faster at small step counts.
        self.cat_input = cat_input
        self.n_num = int(n_num)
        self.cat_sizes = [int(k) for k in cat_sizes]
        self.n_cat = len(self.cat_sizes)
        self.T = int(num_timesteps)
        K = sum(self.cat_sizes)
        self.K = K
        seg = (
            torch.repeat_interleave(torch.arange(self.n_cat), torch.tensor(self.cat_sizes, dtype=torch.long))
            if K
            else torch.zeros(0, dtype=torch.long)
        )
        member = torch.zeros(K, max(self.n_cat, 1))
        if K:
            member[torch.arange(K), seg] = 1.0
        offsets = (
            torch.tensor([0, *torch.cumsum(torch.tensor(self.cat_sizes), 0).tolist()[:-1]], dtype=torch.long)
            if self.n_cat
            else torch.zeros(0, dtype=torch.long)
        )
        log_k = torch.log(torch.tensor(self.cat_sizes, dtype=torch.float32))[seg] if K else torch.zeros(0)
        self.register_buffer("seg", seg, persistent=False)
        self.register_buffer("member", member, persistent=False)
        self.register_buffer("offsets", offsets, persistent=False)
        self.register_buffer("log_k", log_k, persistent=False)

        betas = cosine_betas(self.T)
        alphas = 1.0 - betas
        abar = torch.cumprod(alphas, 0)
        abar_prev = torch.cat([torch.ones(1, dtype=torch.float64), abar[:-1]])
        post_var = betas * (1 - abar_prev) / (1 - abar)
        # sampling variance: beta_t, with the (non-zero) posterior variance at t=1 in slot 0 (TabDDPM)
        model_var = torch.cat([post_var[1:2], betas[1:]]) if self.T > 1 else post_var.clamp_min(1e-20)
        log_alpha = torch.log(alphas)
        log_cum = torch.cumsum(log_alpha, 0)
        f32 = {
            "betas": betas,
            "sqrt_abar": abar.sqrt(),
            "sqrt_1m_abar": (1 - abar).sqrt(),
            "sqrt_recip_abar": (1 / abar).sqrt(),
            "sqrt_recipm1_abar": (1 / abar - 1).sqrt(),
            "post_c1": betas * abar_prev.sqrt() / (1 - abar),
            "post_c2": (1 - abar_prev) * alphas.sqrt() / (1 - abar),
            "model_sigma": model_var.sqrt(),
            "log_alpha": log_alpha,
            "log_1m_alpha": _log_1_min_exp(log_alpha),
            "log_cum_alpha": log_cum,
            "log_1m_cum_alpha": _log_1_min_exp(log_cum),
        }
        for k, v in f32.items():
            self.register_buffer(k, v.float(), persistent=False)
        f32["alpha"] = alphas
        f32["abar_prev"] = abar_prev
        # python floats for the sampling loop (no gathers per step)
        self._host = {k: v.tolist() for k, v in f32.items()}
        self.register_buffer("inv_k", torch.exp(-log_k), persistent=False)

    # ---------------------------------------------------------- segment ops
    def seg_logsumexp(self, x: torch.Tensor) -> torch.Tensor:
        """Per-feature logsumexp of a flat (B, K) tensor, broadcast back to (B, K).

        A loop over the F contiguous feature slices: measured 5-7x faster on CPU than scatter or
        padded-gather formulations (benchmarks/bench_generators.py)."""
        parts = [torch.logsumexp(s, 1, keepdim=True).expand(-1, s.shape[1]) for s in torch.split(x, self.cat_sizes, 1)]
        return torch.cat(parts, 1)

    def seg_log_softmax(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.log_softmax(s, 1) for s in torch.split(x, self.cat_sizes, 1)], 1)

    def seg_sample_codes(self, log_probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One category per feature from (unnormalised) log-probabilities, by inverse CDF: (B, F) codes.

        One uniform per feature and row (not one per category as Gumbel-max would need)."""
        b = log_probs.shape[0]
        u = torch.rand((b, self.n_cat), generator=generator, device=log_probs.device, dtype=log_probs.dtype)
        codes = []
        for j, s in enumerate(torch.split(log_probs, self.cat_sizes, 1)):
            c = torch.cumsum(torch.exp(s - s.amax(1, keepdim=True)), 1)
            k = (c < u[:, j : j + 1] * c[:, -1:]).sum(1)
            codes.append(k.clamp_(max=s.shape[1] - 1))
        return torch.stack(codes, 1)

    def seg_sample(self, log_probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Draw one category per feature; returns the flat one-hot (B, K) float."""
        return self.onehot(self.seg_sample_codes(log_probs, generator))

    def onehot(self, codes: torch.Tensor) -> torch.Tensor:
        """(B, F) integer codes -> flat one-hot (B, K)."""
        out = torch.zeros(codes.shape[0], self.K, device=codes.device)
        return out.scatter_(1, codes + self.offsets, 1.0)

    def codes(self, onehot: torch.Tensor) -> torch.Tensor:
        return torch.stack([s.argmax(1) for s in torch.split(onehot, self.cat_sizes, dim=1)], dim=1)

    @staticmethod
    def log_onehot(onehot: torch.Tensor) -> torch.Tensor:
        return torch.log(onehot.clamp(min=LOG_EPS))

    # ---------------------------------------------------- multinomial process
    def q_pred(self, log_x0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """log q(x_t | x_0) = log(abar_t x0 + (1 - abar_t)/K)."""
        a = self.log_cum_alpha[t][:, None]
        b = self.log_1m_cum_alpha[t][:, None]
        return torch.logaddexp(log_x0 + a, b - self.log_k)

    def q_pred_one_step(self, log_xt: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """log q(x_t | x_{t-1}) as a function of x_{t-1}: log(alpha_t x_t + (1 - alpha_t)/K)."""
        return torch.logaddexp(log_xt + self.log_alpha[t][:, None], self.log_1m_alpha[t][:, None] - self.log_k)

    def q_posterior(self, log_x0: torch.Tensor, log_xt: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """log q(x_{t-1} | x_t, x_0) (x_0 itself at t = 0)."""
        prev = self.q_pred(log_x0, (t - 1).clamp(min=0))
        prev = torch.where((t == 0)[:, None], log_x0, prev)
        unnorm = prev + self.q_pred_one_step(log_xt, t)
        return unnorm - self.seg_logsumexp(unnorm)

    # --------------------------------------------------------------- training
    def loss(
        self,
        model: nn.Module,
        x_num: torch.Tensor,
        x_codes: torch.Tensor,
        generator: torch.Generator,
        weight: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(multinomial loss, Gaussian loss) of one batch, TabDDPM's ``mixed_loss`` objective.

        Gaussian: mean squared error of the predicted noise. Multinomial: T * L_t (the KL between the
        true and the model posterior; the decoder NLL at t = 0) + KL(q(x_T|x_0) || uniform), divided
        by the number of categorical features. ``weight`` (one per row): both are the weighted mean
        of the per-row losses instead of the plain mean (:mod:`tabmem.generators._weights`).
        """
        b, dev = x_num.shape[0], x_num.device
        t = torch.randint(0, self.T, (b,), generator=generator, device=dev)
        parts = []
        if self.n_num:
            noise = torch.randn(x_num.shape, generator=generator, device=dev)
            parts.append(self.sqrt_abar[t][:, None] * x_num + self.sqrt_1m_abar[t][:, None] * noise)
        if self.n_cat:
            log_x0 = self.log_onehot(self.onehot(x_codes))
            z_t = self.seg_sample(self.q_pred(log_x0, t), generator)
            log_xt = self.log_onehot(z_t)
            parts.append(log_xt if self.cat_input == "log_onehot" else z_t)
        out = model(torch.cat(parts, dim=1), t)
        zero = out.new_zeros(())
        if weight is None:
            reduce = torch.mean
        else:

            def reduce(per_row: torch.Tensor) -> torch.Tensor:
                return weighted_mean(per_row.reshape(b, -1).mean(1), weight)

        loss_gauss = reduce((out[:, : self.n_num] - noise) ** 2) if self.n_num else zero
        if self.n_cat:
            log_model = self.q_posterior(self.seg_log_softmax(out[:, self.n_num :]), log_xt, t)
            log_true = self.q_posterior(log_x0, log_xt, t)
            kl = (log_true.exp() * (log_true - log_model)).sum(1)
            nll = -(log_x0.exp() * log_model).sum(1)
            lt = torch.where(t == 0, nll, kl)
            log_qT = self.q_pred(log_x0, torch.full_like(t, self.T - 1))
            prior = (log_qT.exp() * (log_qT + self.log_k)).sum(1)
            loss_multi = reduce(lt * self.T + prior) / self.n_cat
        else:
            loss_multi = zero
        return loss_multi, loss_gauss

    # --------------------------------------------------------------- sampling
    def posterior_probs(self, logits: torch.Tensor, z: torch.Tensor, i: int) -> torch.Tensor:
        """Unnormalised p(x_{t-1} | x_t = z) for one timestep ``i``, in probability space.

        Equals ``exp(q_posterior(log_softmax(logits), log z, i))`` up to a per-feature factor
        (tested), without the log-space work that training needs for stable KL terms:
        ``(alpha_t z + (1 - alpha_t)/K) * (abar_{t-1} p0 + (1 - abar_{t-1})/K)``."""
        h = self._host
        a, ab = h["alpha"][i], h["abar_prev"][i]
        p0 = torch.cat([torch.softmax(s, 1) for s in torch.split(logits, self.cat_sizes, 1)], 1)
        return (a * z + (1 - a) * self.inv_k) * (ab * p0 + (1 - ab) * self.inv_k)

    def sample_posterior_codes(
        self, logits: torch.Tensor, z: torch.Tensor, i: int, generator: torch.Generator
    ) -> torch.Tensor:
        probs = self.posterior_probs(logits, z, i)
        b = probs.shape[0]
        u = torch.rand((b, self.n_cat), generator=generator, device=probs.device, dtype=probs.dtype)
        codes = []
        for j, s in enumerate(torch.split(probs, self.cat_sizes, 1)):
            c = torch.cumsum(s, 1)
            codes.append((c < u[:, j : j + 1] * c[:, -1:]).sum(1).clamp_(max=s.shape[1] - 1))
        return torch.stack(codes, 1)

    @torch.inference_mode()
    def sample(
        self, model: nn.Module, n: int, generator: torch.Generator, device: torch.device, clip: float | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Ancestral sampling of ``n`` rows: (numerical in model space, categorical codes).

        ``clip``: clamp the predicted x0 of the numericals to [-clip, clip] at every step (DDPM's
        ``clip_denoised``); ``None`` = no clamping, as the TabDDPM reference code."""
        h = self._host
        x = torch.randn((n, self.n_num), generator=generator, device=device)
        z = self.seg_sample(torch.zeros((n, self.K), device=device), generator) if self.n_cat else None
        codes = None
        t_vec = torch.zeros(1, dtype=torch.long, device=device)
        for i in reversed(range(self.T)):
            t_vec.fill_(i)
            if self.n_cat:
                inp = torch.cat([x, (z - 1.0) * LOG_ONEHOT_ZERO if self.cat_input == "log_onehot" else z], dim=1)
            else:
                inp = x
            out = model(inp, t_vec)
            if self.n_num:
                eps = out[:, : self.n_num]
                x0 = h["sqrt_recip_abar"][i] * x - h["sqrt_recipm1_abar"][i] * eps
                if clip is not None:
                    x0 = x0.clamp(-clip, clip)
                x = h["post_c1"][i] * x0 + h["post_c2"][i] * x
                if i > 0:
                    x = x + h["model_sigma"][i] * torch.randn(x.shape, generator=generator, device=device)
            if self.n_cat:
                codes = self.sample_posterior_codes(out[:, self.n_num :], z, i, generator)
                z = self.onehot(codes)
        if not self.n_cat:
            codes = torch.zeros((n, 0), dtype=torch.long, device=device)
        return x, codes


def _log_1_min_exp(a: torch.Tensor) -> torch.Tensor:
    """log(1 - exp(a)) for a <= 0, stable (a = 0 gives log(1e-40))."""
    return torch.log(-torch.expm1(a) + 1e-40)
