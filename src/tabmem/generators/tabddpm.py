"""TabDDPM (Kotelnikov et al. 2023) in the setting of the memorization papers.

Faithful to the TabDDPM configuration used by TabCutMix / DynamicCut: Gaussian
diffusion on quantile-normalised numericals (``QuantileTransformer(output_distribution="normal",
n_quantiles=max(min(N // 30, 1000), 10))``), multinomial diffusion on categoricals, the target as
one more categorical column (an unconditional joint model), an MLP denoiser with a sinusoidal
timestep embedding (``proj(x) + emb(t)`` then ``[1024, 2048, 2048, 1024]`` ReLU layers), cosine
schedule with 1,000 timesteps, AdamW with linear learning-rate decay to 0 and no EMA.

Presets: ``paper`` (the configuration above; batch 4096, lr 1.81e-3; 100k steps is about
12,500 epochs on Adult) and ``small`` (a [256, 256] network, dim_t 128, 100 timesteps as in
TabDDPM's own tuned Adult config, batch 256, 30 epochs: a few minutes on Adult on one CPU core).
``small`` also feeds the categorical part of x_t to the denoiser as 0/1 one-hots
(``cat_input="onehot"``) instead of the reference code's log one-hots (0 / -69): the same model
up to an affine reparametrisation of the first layer, but with log one-hots the Gaussian loss
stays at 1.0 (nothing learnt about numericals) for the first ~500 steps on Adult, far beyond a
CPU-minutes budget (measured: Gaussian loss 0.998 vs 0.36 after 470 steps). ``small`` also
clamps the predicted x0 of the numericals to the quantile-normal range +-5.2 at each sampling
step (DDPM's ``clip_denoised``; the reference code does not): with the cosine schedule the first
reverse step multiplies the noise-prediction error by ~30, and a briefly trained model then
samples numericals with 2-4x the data's spread (measured: model-space std 3.5 -> 1.0).

Documented differences from the reference code: one epoch is one shuffled pass over the
training rows (the reference counts optimizer steps); integer training columns are rounded
back (the reference rounds integer-valued columns with <= 32 values to the nearest training
value); the final weights are used (the reference keeps the lowest-batch-loss checkpoint).

Anneal phase (``anneal_from`` = E, ``schedule_epochs`` = S): epochs 1..E follow the linear decay over S
epochs, epochs E+1..``epochs`` fall linearly from the rate at E to 0; set on a model resumed from its
epoch-E checkpoint (``set_params(epochs=E + A, anneal_from=E, schedule_epochs=S)`` then ``fit(...,
resume_from=...)``; both are resume-mutable). :meth:`lr_at` gives the rate of any step.
docs/mitigation.md part 9 measures it after memorization-aware checkpoint choice.

DP-SGD (``dp_epsilon``; :mod:`tabmem.generators._dp`, opacus): every layer of the denoiser is a
``Linear`` (opacus computes their per-sample gradients; there is no normalisation layer to replace),
the diffusion loss is a mean of per-row losses, each row draws its own timestep and noise. Batches are
Poisson samples (rate ``1 / ceil(n / batch_size)``), per-row gradients are clipped to
``dp_max_grad_norm`` and noised for ``(dp_epsilon, dp_delta)`` over ``epochs``; the learning-rate decay
and the optimizer are unchanged. Not with ``sample_weight``. ``privacy_spent_`` is opacus' accountant.

EMA of the weights (``ema_decay`` = d, default None: none, as above): after every optimizer step t the
average ``a_t = d a_{t-1} + (1 - d) w_t`` (``a_0 = 0``) is updated; sampling, and so the tracker and every
saved model's samples, use the bias-corrected average ``a_t / (1 - d^t)``, a weighted mean of the trained
iterates only (TabDDPM's reference code starts the average from the initial weights, which after a few
hundred epochs would still carry much of the weight). The raw weights still train; checkpoints keep both.
docs/mitigation.md part 10 measures it with memorization-aware checkpoint choice.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np
import pandas as pd
import torch
from sklearn.preprocessing import QuantileTransformer

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators._diffusion import MixedDiffusion, MLPDenoiser
from tabmem.generators._dp import PrivateSGD, check_dp_params, privacy_spent
from tabmem.generators.base import TabularGenerator, register_generator

PAPER_LR = 0.001809824563637657


@register_generator("tabddpm")
class TabDDPM(TabularGenerator):
    """Gaussian-multinomial diffusion model for mixed-type tables (TabDDPM)."""

    PRESETS = {
        "paper": {
            "layers": (1024, 2048, 2048, 1024),
            "dim_t": 1024,
            "num_timesteps": 1000,
            "lr": PAPER_LR,
            "weight_decay": 0.0,  # the papers use 5e-4 on Adult, 0 elsewhere
            "batch_size": 4096,
            "epochs": 12_500,
            "cat_input": "log_onehot",
        },
        "small": {
            "layers": (256, 256),
            "dim_t": 128,
            "num_timesteps": 100,
            "lr": 2e-3,
            "weight_decay": 0.0,
            "batch_size": 256,
            "epochs": 30,
            "cat_input": "onehot",
            "clip_denoised": True,
        },
    }
    DATASET_PRESETS = {("paper", "adult"): {"weight_decay": 5e-4}}  # the papers set it for Adult only
    supports_sample_weight = True  # a weighted mean of the per-row losses
    #: a run resumed from an epoch-E checkpoint may be given an anneal phase (train_to_dir's anneal_epochs)
    _RESUME_MUTABLE: ClassVar[frozenset[str]] = TabularGenerator._RESUME_MUTABLE | {"anneal_from", "schedule_epochs"}

    def __init__(
        self,
        *,
        epochs: int = 30,
        batch_size: int = 1024,
        layers: Sequence[int] = (256, 256),
        dim_t: int = 128,
        num_timesteps: int = 100,
        lr: float = 2e-3,
        weight_decay: float = 0.0,
        dropout: float = 0.0,
        cat_input: str = "log_onehot",
        clip_denoised: bool = False,
        dp_epsilon: float | None = None,
        dp_delta: float | None = None,
        dp_max_grad_norm: float = 1.0,
        anneal_from: int | None = None,
        schedule_epochs: int | None = None,
        ema_decay: float | None = None,
        random_state: int | None = None,
        device: str = "auto",
    ):
        self.epochs = epochs
        self.batch_size = batch_size
        self.layers = layers
        self.dim_t = dim_t
        self.num_timesteps = num_timesteps
        self.lr = lr
        self.weight_decay = weight_decay
        self.dropout = dropout
        self.cat_input = cat_input
        self.clip_denoised = clip_denoised
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.dp_max_grad_norm = dp_max_grad_norm
        self.anneal_from = anneal_from
        self.schedule_epochs = schedule_epochs
        self.ema_decay = ema_decay
        self.random_state = random_state
        self.device = device

    # ------------------------------------------------------------------ build
    def _check_params(self) -> None:
        layers = list(self.layers)
        if not layers or any(not isinstance(w, (int, np.integer)) or w < 1 for w in layers):
            raise TabmemError(f"TabDDPM: layers must be a non-empty list of positive integers, got {self.layers!r}")
        for name, lo in (("dim_t", 2), ("num_timesteps", 1)):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < lo:
                raise TabmemError(f"TabDDPM: {name} must be an integer >= {lo}, got {v!r}")
        if self.cat_input not in ("log_onehot", "onehot"):
            raise TabmemError(
                f"TabDDPM: cat_input must be 'log_onehot' (reference code) or 'onehot', got {self.cat_input!r}"
            )
        if not (self.lr > 0):
            raise TabmemError(f"TabDDPM: lr must be positive, got {self.lr!r}")
        if self.weight_decay < 0 or not (0 <= self.dropout < 1):
            raise TabmemError(
                f"TabDDPM: need weight_decay >= 0 and 0 <= dropout < 1, got {self.weight_decay!r}, {self.dropout!r}"
            )
        check_dp_params("TabDDPM", self.dp_epsilon, self.dp_delta, self.dp_max_grad_norm)
        for name in ("anneal_from", "schedule_epochs"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1):
                raise TabmemError(f"TabDDPM: {name} must be a positive integer or None, got {v!r}")
        d = self.ema_decay
        if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float)) or not 0.0 < float(d) < 1.0):
            raise TabmemError(f"TabDDPM: ema_decay must be in (0, 1) or None, got {d!r}")
        if self.anneal_from is not None and self.dp_epsilon is not None:
            raise TabmemError("TabDDPM: anneal_from is not supported with DP training (dp_epsilon)")
        if self.anneal_from is not None and int(self.anneal_from) >= int(self.epochs):
            raise TabmemError(
                f"TabDDPM: anneal_from ({self.anneal_from}) must be below epochs ({self.epochs}): "
                "the anneal phase is epochs anneal_from+1..epochs"
            )

    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()
        enc = self.encoder_
        n = len(train_clean)
        num = enc.numeric(train_clean)
        self.quantile_ = None
        if num.shape[1]:
            qt = QuantileTransformer(
                output_distribution="normal", n_quantiles=max(min(n // 30, 1000), 10), subsample=10**9
            )
            num_q = qt.fit_transform(num)
            self.quantile_ = qt
        else:
            num_q = num
        sizes = [len(enc.categories_[c]) for c in schema.categorical]
        # quantile-normal values lie in +-5.2 (sklearn clips the normal ppf at 1e-7); clip_denoised uses it
        self._x_clip = 5.2
        dev = self.device_
        self._x_num = torch.as_tensor(num_q, dtype=torch.float32, device=dev)
        self._x_codes = torch.as_tensor(enc.codes(train_clean).astype(np.int64), device=dev)
        w = getattr(self, "_fit_weights", None)
        self._weights = None if w is None else torch.as_tensor(w, dtype=torch.float32, device=dev)
        self.diffusion_ = MixedDiffusion(num.shape[1], sizes, int(self.num_timesteps), self.cat_input).to(dev)
        d_in = num.shape[1] + sum(sizes)
        if d_in == 0:
            raise TabmemError("TabDDPM: the table has no columns to model")
        self.model_ = MLPDenoiser(d_in, [int(w) for w in self.layers], int(self.dim_t), float(self.dropout)).to(dev)
        self.optimizer_ = torch.optim.AdamW(
            self.model_.parameters(), lr=float(self.lr), weight_decay=float(self.weight_decay)
        )
        self.steps_per_epoch_ = -(-n // int(self.batch_size))
        self.step_ = 0
        self.ema_ = None  # name -> running average (zero start) of the denoiser's floating tensors
        if self.ema_decay is not None:
            self.ema_ = {k: torch.zeros_like(v) for k, v in self.model_.state_dict().items() if v.is_floating_point()}
            self._ema_model = MLPDenoiser(d_in, [int(w) for w in self.layers], int(self.dim_t), float(self.dropout))
            self._ema_model.to(dev)
        self.dp_ = None
        if self.dp_epsilon is not None and getattr(self, "_train_clean", None) is not None:  # not on load()
            if self._weights is not None:
                raise TabmemError("sample_weight: per-record weights are not supported with DP training (dp_epsilon)")
            self.dp_ = PrivateSGD(
                self.model_, self.optimizer_, n=n, batch_size=int(self.batch_size), epochs=int(self.epochs),
                epsilon=float(self.dp_epsilon), delta=self.dp_delta, max_grad_norm=float(self.dp_max_grad_norm),
                generator=self.torch_generator_,
            )  # fmt: skip

    @property
    def privacy_spent_(self) -> tuple[float, float] | None:
        """``(epsilon, delta)`` spent so far by DP-SGD (``None`` without DP)."""
        return privacy_spent(self)

    def _torch_modules(self) -> list[torch.nn.Module]:
        return [self.model_, self.diffusion_]

    # -------------------------------------------------------------- training
    def _batches(self) -> Any:
        """One epoch's row indices: a shuffled partition, or Poisson samples under DP."""
        if self.dp_ is not None:
            yield from (idx.to(self.device_) for idx in self.dp_.batches())
            return
        n, bs = self._x_num.shape[0], int(self.batch_size)
        perm = torch.randperm(n, generator=self.torch_generator_, device=self.device_)
        for start in range(0, n, bs):
            yield perm[start : start + bs]

    def lr_at(self, step: int) -> float:
        """The learning rate of optimizer step ``step`` (0-based).

        Linear decay from ``lr`` to 0 over ``schedule_epochs`` (default ``epochs``; TabDDPM's
        ``_anneal_lr``). With ``anneal_from`` = E the schedule is cut at epoch E: from there the rate
        falls linearly from its value at E to 0 at the last step of ``epochs`` (the anneal phase of a
        model resumed from its epoch-E checkpoint; epochs 1..E are those of the original schedule).
        """
        spe = self.steps_per_epoch_
        horizon = spe * int(self.schedule_epochs if self.schedule_epochs is not None else self.epochs)
        if self.anneal_from is None:
            return float(self.lr) * max(0.0, 1.0 - step / horizon)
        s0 = spe * int(self.anneal_from)
        base = float(self.lr) * max(0.0, 1.0 - min(step, s0) / horizon)
        if step < s0:
            return base
        return base * max(0.0, 1.0 - (step - s0) / (spe * (int(self.epochs) - int(self.anneal_from))))

    def _train_epoch(self, epoch: int) -> dict[str, float]:
        sums = torch.zeros(2, dtype=torch.float64)
        model, optimizer = (self.model_, self.optimizer_) if self.dp_ is None else (self.dp_.module, self.dp_.optimizer)
        seen = 0
        lr = self.lr_at(self.step_)
        for idx in self._batches():
            lr = self.lr_at(self.step_)
            for group in self.optimizer_.param_groups:
                group["lr"] = lr
            batch = (model, self._x_num[idx], self._x_codes[idx], self.torch_generator_)
            if self._weights is None:
                loss_multi, loss_gauss = self.diffusion_.loss(*batch)
            else:
                loss_multi, loss_gauss = self.diffusion_.loss(*batch, weight=self._weights[idx])
            loss = loss_multi + loss_gauss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            self.step_ += 1
            if self.ema_ is not None:
                self._ema_update()
            sums += torch.tensor([loss_multi.item(), loss_gauss.item()], dtype=torch.float64) * len(idx)
            seen += len(idx)
        mloss, gloss = (sums / max(seen, 1)).tolist()
        logs = {"loss": mloss + gloss, "loss_multinomial": mloss, "loss_gaussian": gloss, "lr": lr}
        if self.dp_ is not None:
            logs["dp_epsilon"] = self.dp_.spent()[0]
        return logs

    @torch.no_grad()
    def _ema_update(self) -> None:
        """``a = d a + (1 - d) w`` for every floating tensor of the denoiser (once per optimizer step)."""
        d = float(self.ema_decay)
        for k, v in self.model_.state_dict().items():
            if k in self.ema_:
                self.ema_[k].mul_(d).add_(v, alpha=1.0 - d)

    def ema_weights(self) -> dict[str, torch.Tensor] | None:
        """The bias-corrected average ``a_t / (1 - d^t)`` as a state dict (None without ``ema_decay``;
        the raw weights before the first step)."""
        if self.ema_ is None:
            return None
        state = self.model_.state_dict()
        if self.step_ == 0:
            return {k: v.clone() for k, v in state.items()}
        corr = 1.0 - float(self.ema_decay) ** int(self.step_)
        return {k: (self.ema_[k] / corr if k in self.ema_ else v.clone()) for k, v in state.items()}

    def _sampling_model(self) -> torch.nn.Module:
        if self.ema_ is None:
            return self.model_
        self._ema_model.load_state_dict(self.ema_weights())
        self._ema_model.eval()
        return self._ema_model

    # --------------------------------------------------------------- sampling
    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        clip = float(self._x_clip) if self.clip_denoised else None
        x, codes = self.diffusion_.sample(self._sampling_model(), n, generator, self.device_, clip=clip)
        data: dict[str, Any] = {}
        if self.schema_.numerical:
            num = x.double().cpu().numpy()
            num = self.quantile_.inverse_transform(num)
            for j, c in enumerate(self.schema_.numerical):
                data[c] = num[:, j]
        codes_np = codes.cpu().numpy()
        for j, c in enumerate(self.schema_.categorical):
            data[c] = codes_np[:, j]
        return pd.DataFrame(data)

    # ---------------------------------------------------------------- state
    def _state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "model": self.model_.state_dict(),
            "optimizer": self.optimizer_.state_dict(),
            "step": self.step_,
        }
        if getattr(self, "dp_", None) is not None:
            state["dp"] = self.dp_.state_dict()
        if getattr(self, "ema_", None) is not None:
            state["ema"] = {k: v.clone() for k, v in self.ema_.items()}
        if self.quantile_ is not None:
            state["quantile"] = {
                "quantiles": torch.as_tensor(self.quantile_.quantiles_),
                "references": torch.as_tensor(self.quantile_.references_),
            }
        return state

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.model_.load_state_dict(state["model"])
        self.optimizer_.load_state_dict(state["optimizer"])
        self.step_ = int(state["step"])
        if self.ema_ is not None:
            for k, v in state["ema"].items():
                self.ema_[k].copy_(v)
        if "dp" in state and self.dp_ is not None:
            self.dp_.load_state_dict(state["dp"])
        elif "dp" in state:
            self.dp_restored_ = dict(state["dp"])
        if self.quantile_ is not None:
            q = state["quantile"]
            self.quantile_.quantiles_ = q["quantiles"].numpy().copy()
            self.quantile_.references_ = q["references"].numpy().copy()
            self.quantile_.n_quantiles_ = len(self.quantile_.references_)

    # ---------------------------------------------------------------- costs
    def flops_per_train_row(self) -> float:
        """Approximate training FLOPs per row (forward + backward = 3 x forward)."""
        return 3.0 * self.model_.flops_per_row(shared_t=False)

    def flops_per_sample_row(self) -> float:
        """Denoiser FLOPs per generated row over all timesteps (time embedding shared per step)."""
        return float(self.model_.flops_per_row(shared_t=True)) * int(self.num_timesteps)
