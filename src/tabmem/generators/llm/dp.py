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

GPT-2's ``Conv1D`` layers have no opacus grad sampler; :func:`register_conv1d_grad_sampler`
adds one (``y = x W + b``: per-sample ``dW = sum_t x_t^T g_t``, ``db = sum_t g_t``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from tabmem.data.serialization.realtabformer import BOS_ID, EOS_ID
from tabmem.errors import TabmemError

if TYPE_CHECKING:  # pragma: no cover
    from tabmem.generators.llm.generator import LLMGenerator

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


class DPTrainer:
    """Owns the opacus objects of one LLMGenerator fit (private stage) and the non-private warm-up."""

    def __init__(self, gen: LLMGenerator, train_clean: pd.DataFrame) -> None:
        try:
            from opacus import PrivacyEngine
        except ModuleNotFoundError:  # pragma: no cover
            raise TabmemError("DP training needs opacus: pip install 'tabmem[dp]'") from None
        register_conv1d_grad_sampler()
        self.gen = gen
        n = len(train_clean)
        self.delta = float(gen.dp_delta) if gen.dp_delta is not None else 1.0 / (10.0 * n)
        if not 0 < self.delta < 1:
            raise TabmemError(f"dp_delta must be in (0, 1), got dp_delta={gen.dp_delta!r}")
        self.warmup = int(gen.dp_warmup_epochs)
        self.private_epochs = int(gen.epochs) - self.warmup
        if self.private_epochs < 1:
            raise TabmemError(
                f"dp_warmup_epochs={self.warmup} leaves no private epoch (epochs={gen.epochs}); "
                "epochs must exceed dp_warmup_epochs"
            )
        self.table = train_clean
        self.warm_optimizer = torch.optim.AdamW(gen.model_.parameters(), lr=float(gen.lr))
        data = self._real_tensors()
        dataset = torch.utils.data.TensorDataset(*data)
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=int(gen.batch_size), shuffle=True, generator=gen.torch_generator_
        )
        self.engine = PrivacyEngine(accountant="rdp")
        self.module, self.optimizer, self.loader = self.engine.make_private_with_epsilon(
            module=gen.model_,
            optimizer=gen.optimizer_,
            data_loader=loader,
            target_epsilon=float(gen.dp_epsilon),
            target_delta=self.delta,
            epochs=self.private_epochs,
            max_grad_norm=float(gen.dp_max_grad_norm),
            poisson_sampling=True,
        )
        self.noise_multiplier = float(self.optimizer.noise_multiplier)

    def _real_tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self.gen
        if gen.serializer == "realtabformer":
            ids = gen._train_ids
            return ids, torch.ones_like(ids)
        texts = gen.serializer_.serialize(self.table, rng=np.random.default_rng([gen.seed_, 9]))
        ids, mask = gen._encode_texts(texts)
        return ids, mask

    def _pseudo_batches(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        gen, n, bs = self.gen, len(self.table), int(self.gen.batch_size)
        rng = gen.rng_
        if gen.serializer == "realtabformer":
            cols = [rng.choice(np.asarray(a), size=n) for a in gen.serializer_.allowed_ids_]
            ids = np.column_stack([np.full(n, BOS_ID), *cols, np.full(n, EOS_ID)])
            ids_t = torch.as_tensor(ids, dtype=torch.long)
            mask_t = torch.ones_like(ids_t)
        else:
            schema, enc = gen.schema_, gen.encoder_
            pseudo = {}
            for j, c in enumerate(schema.numerical):
                pseudo[c] = rng.uniform(enc.min_[j], enc.max_[j], size=n)
            for c in schema.categorical:
                pseudo[c] = rng.choice(enc.categories_[c], size=n)
            frame = pd.DataFrame(pseudo)[list(schema.columns)]
            ids_t, mask_t = gen._encode_texts(gen.serializer_.serialize(frame, rng=rng))
        perm = torch.randperm(n, generator=gen.torch_generator_, device=gen.torch_generator_.device).cpu()
        return [(ids_t[perm[s : s + bs]], mask_t[perm[s : s + bs]]) for s in range(0, n, bs)]

    def train_epoch(self, epoch: int) -> dict[str, float]:
        gen = self.gen
        total, count = 0.0, 0
        if epoch <= self.warmup:  # stage 1: pseudo rows, no privacy cost
            self.module.disable_hooks()
            for ids, mask in self._pseudo_batches():
                ids, mask = ids.to(gen.device_), mask.to(gen.device_)
                loss = per_sample_lm_loss(gen.model_, ids, mask)
                self.warm_optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.warm_optimizer.step()
                total += float(loss.detach()) * ids.shape[0]
                count += ids.shape[0]
            self.module.enable_hooks()
            self.optimizer.zero_grad(set_to_none=True)
            eps = 0.0
        else:  # stage 2: DP-SGD on the real rows
            self.module.train()
            for ids, mask in self.loader:
                if ids.shape[0] == 0:
                    continue
                ids, mask = ids.to(gen.device_), mask.to(gen.device_)
                self.optimizer.zero_grad(set_to_none=True)
                loss = per_sample_lm_loss(self.module, ids, mask)
                loss.backward()
                self.optimizer.step()
                total += float(loss.detach()) * ids.shape[0]
                count += ids.shape[0]
            eps = self.spent()[0]
        return {"loss": total / max(count, 1), "dp_epsilon": eps, "stage": 1.0 if epoch <= self.warmup else 2.0}

    def spent(self) -> tuple[float, float]:
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
