"""DP-SGD training of :class:`~tabmem.generators.llm.LLMGenerator` through opacus.

The LevAtt paper's DP baseline (Ward et al. 2025) is DP-2Stage (Afonja et al., "DP-2Stage:
Adapting Language Models as Differentially Private Tabular Data Generators"): stage 1 trains
the model without privacy on *pseudo* rows that carry no private information, stage 2 continues
with DP-SGD (per-sample clipping + Gaussian noise, Abadi et al. 2016) on the real rows. Privacy
is accounted by opacus (RDP accountant); ``spent()`` reports ``(epsilon, delta)``.

Pseudo rows (``dp_warmup_epochs > 0``) are drawn from independent *uniform* marginals over the
format's domain: one allowed token per digit position for the REaLTabFormer format, a uniform
value in the column range / a uniform category for GReaT. Like every tabmem generator, the
domain (column ranges, category sets, digit vocabulary) is treated as public metadata; it is
not protected by the DP guarantee. Poisson-sampled batches that come out empty are skipped.

:class:`DPTrainer` is handed the model, its optimizer and the encoded real rows (the generator's
row format makes the pseudo rows), so it knows nothing of the generator.

GPT-2's ``Conv1D`` layers have no opacus grad sampler; :func:`register_conv1d_grad_sampler`
adds one (``y = x W + b``: per-sample ``dW = sum_t x_t^T g_t``, ``db = sum_t g_t``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from tabmem.errors import TabmemError
from tabmem.generators._dp import spent_from_state

Batch = tuple[torch.Tensor, torch.Tensor]

__all__ = ["DPConfig", "DPTrainer", "per_sample_lm_loss", "register_conv1d_grad_sampler", "spent_from_state"]

_REGISTERED = False


def register_conv1d_grad_sampler() -> None:
    """Teach opacus the per-sample gradients of ``transformers.pytorch_utils.Conv1D`` (GPT-2)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from opacus.grad_sample import register_grad_sampler
    from transformers.pytorch_utils import Conv1D

    @register_grad_sampler(Conv1D)
    def _conv1d_grad_sample(layer: Conv1D, activations: list[torch.Tensor], backprops: torch.Tensor):
        a = activations[0].to(backprops.dtype)
        out = {}
        if layer.weight.requires_grad:  # weight is [in, out]
            out[layer.weight] = torch.einsum("n...i,n...j->nij", a, backprops)
        if layer.bias is not None and layer.bias.requires_grad:
            out[layer.bias] = torch.einsum("n...k->nk", backprops)
        return out

    _REGISTERED = True


def per_sample_lm_loss(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of each row's mean next-token loss (so that rows do not weight each other)."""
    # explicit per-row position ids: a broadcast [1, L] tensor would give the position embedding a
    # per-sample gradient of batch size 1 under opacus
    pos = torch.arange(ids.shape[1], device=ids.device).expand(ids.shape[0], -1)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, :-1]
    target = ids[:, 1:]
    tmask = mask[:, 1:].to(logits.dtype)
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="none")
    per_row = (ce.view(target.shape) * tmask).sum(1) / tmask.sum(1).clamp_min(1.0)
    return per_row.mean()


@dataclass(frozen=True)
class DPConfig:
    """DP-SGD settings of one fit (``delta=None``: ``1 / (10 n)``); ``epochs`` counts warm-up epochs too."""

    epsilon: float
    delta: float | None
    max_grad_norm: float
    warmup_epochs: int
    epochs: int
    batch_size: int
    lr: float


class DPTrainer:
    """Owns the opacus objects of one fit (private stage) and the non-private warm-up optimizer.

    Args:
        model: the (unwrapped) language model; opacus wraps it for the private stage.
        optimizer: the model's optimizer; opacus wraps it (per-sample clipping and noise).
        rows: the real training rows as ``(ids, mask)`` padded to one width.
        config: privacy budget and schedule.
        generator: the torch generator that shuffles (the fit's seeded one, so resume is exact).
        device: where batches go.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        rows: Batch,
        config: DPConfig,
        *,
        generator: torch.Generator,
        device: torch.device,
    ) -> None:
        try:
            from opacus import PrivacyEngine
        except ModuleNotFoundError:  # pragma: no cover
            raise TabmemError("DP training needs opacus: pip install 'tabmem[dp]'") from None
        register_conv1d_grad_sampler()
        self.model, self.device = model, device
        n = int(rows[0].shape[0])
        self.delta = float(config.delta) if config.delta is not None else 1.0 / (10.0 * n)
        if not 0 < self.delta < 1:
            raise TabmemError(f"dp_delta must be in (0, 1), got dp_delta={config.delta!r}")
        self.warmup = int(config.warmup_epochs)
        self.private_epochs = int(config.epochs) - self.warmup
        if self.private_epochs < 1:
            raise TabmemError(
                f"dp_warmup_epochs={self.warmup} leaves no private epoch (epochs={config.epochs}); "
                "epochs must exceed dp_warmup_epochs"
            )
        self.warm_optimizer = torch.optim.AdamW(model.parameters(), lr=float(config.lr))
        dataset = torch.utils.data.TensorDataset(*rows)
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=int(config.batch_size), shuffle=True, generator=generator
        )
        self.engine = PrivacyEngine(accountant="rdp")
        model.train()  # opacus refuses eval mode, which is how from_pretrained returns a backbone
        self.module, self.optimizer, self.loader = self.engine.make_private_with_epsilon(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            target_epsilon=float(config.epsilon),
            target_delta=self.delta,
            epochs=self.private_epochs,
            max_grad_norm=float(config.max_grad_norm),
            poisson_sampling=True,
        )
        self.noise_multiplier = float(self.optimizer.noise_multiplier)

    def is_warmup(self, epoch: int) -> bool:
        """Whether ``epoch`` (1-based) belongs to the non-private stage 1."""
        return epoch <= self.warmup

    def warmup_epoch(self, batches: list[Batch]) -> dict[str, float]:
        """Stage 1: plain AdamW steps on pseudo rows (no privacy cost; opacus hooks off)."""
        total, count = 0.0, 0
        self.module.disable_hooks()
        for ids, mask in batches:
            ids, mask = ids.to(self.device), mask.to(self.device)
            loss = per_sample_lm_loss(self.model, ids, mask)
            self.warm_optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.warm_optimizer.step()
            total += float(loss.detach()) * ids.shape[0]
            count += ids.shape[0]
        self.module.enable_hooks()
        self.optimizer.zero_grad(set_to_none=True)
        return {"loss": total / max(count, 1), "dp_epsilon": 0.0, "stage": 1.0}

    def private_epoch(self) -> dict[str, float]:
        """Stage 2: DP-SGD on Poisson-sampled batches of the real rows (empty batches skipped)."""
        total, count = 0.0, 0
        self.module.train()
        for ids, mask in self.loader:
            if ids.shape[0] == 0:
                continue
            ids, mask = ids.to(self.device), mask.to(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            loss = per_sample_lm_loss(self.module, ids, mask)
            loss.backward()
            self.optimizer.step()
            total += float(loss.detach()) * ids.shape[0]
            count += ids.shape[0]
        return {"loss": total / max(count, 1), "dp_epsilon": self.spent()[0], "stage": 2.0}

    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far (opacus RDP accountant)."""
        return float(self.engine.accountant.get_epsilon(self.delta)), self.delta

    def state_dict(self) -> dict[str, Any]:
        hist = [[float(a), float(b), int(c)] for a, b, c in self.engine.accountant.history]
        return {
            "history": hist,
            "delta": self.delta,
            "noise_multiplier": self.noise_multiplier,
            "warm_optimizer": self.warm_optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.engine.accountant.history = [tuple(h) for h in state["history"]]
        self.warm_optimizer.load_state_dict(state["warm_optimizer"])
