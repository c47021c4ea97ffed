"""TVAE (Xu et al. 2019, "Modeling Tabular data using Conditional GAN", section 4.5), written for tabmem.

A variational auto-encoder on the mode-specific normalised table (:mod:`tabmem.generators._transformer`):

* encoder ``r -> (mu, log sigma^2)`` through ``ReLU(FC)`` layers (``compress_dims``, reference (128, 128));
* decoder ``z -> out`` through ``ReLU(FC)`` layers (``decompress_dims``, reference (128, 128)); for each
  numerical scalar ``alpha ~ N(tanh(out), delta^2)`` with a learned per-column ``delta``; mode and category
  blocks ``~ softmax(out)``;
* loss per row = ``loss_factor`` x reconstruction NLL (cross-entropy of every one-hot block plus the
  Gaussian NLL ``(alpha - tanh(out))^2 / (2 delta^2) + log delta`` of every scalar) + ``KL(q(z|r) || N(0, I))``;
  Adam ``lr = 1e-3``, weight decay ``1e-5``, batch 500, 300 epochs, embedding 128, ``loss_factor = 2``
  (reference code's defaults; the paper's text gives only the architecture and the ELBO).
* ``delta`` is clamped to ``[0.01, 1]`` after every step (reference code) so the NLL cannot collapse.

Sampling: ``z ~ N(0, I)``, decode; scalars get ``N(0, delta^2)`` noise as the decoder's distribution says,
mode and category blocks are decoded by arg-max (``discrete_sampling="argmax"``, the reference code's
choice behind the published figures) or drawn from the softmax (``"sample"``, the paper's text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from tabmem.errors import TabmemError
from tabmem.generators._transformer import NUMERICAL_DECODINGS, NormalizedSpaceMixin
from tabmem.generators._weights import weighted_mean
from tabmem.generators.base import TabularGenerator, register_generator
from tabmem.generators.ctgan import _check_dims, _check_positive

__all__ = ["TVAE"]


def _relu_layers(d_in: int, dims: Sequence[int]) -> tuple[list[nn.Module], int]:
    """``ReLU(FC)`` layers of widths ``dims`` from ``d_in``, and the width they end at."""
    layers: list[nn.Module] = []
    d = d_in
    for h in dims:
        layers += [nn.Linear(d, h), nn.ReLU()]
        d = h
    return layers, d


class _Encoder(nn.Module):
    def __init__(self, d_in: int, dims: Sequence[int], d_z: int) -> None:
        super().__init__()
        layers, d = _relu_layers(d_in, dims)
        self.body = nn.Sequential(*layers)
        self.mu = nn.Linear(d, d_z)
        self.logvar = nn.Linear(d, d_z)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(x)
        return self.mu(h), self.logvar(h)


class _Decoder(nn.Module):
    def __init__(self, d_z: int, dims: Sequence[int], d_out: int) -> None:
        super().__init__()
        layers, d = _relu_layers(d_z, dims)
        layers.append(nn.Linear(d, d_out))
        self.net = nn.Sequential(*layers)
        self.sigma = nn.Parameter(torch.full((d_out,), 0.1))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


@register_generator("tvae")
class TVAE(NormalizedSpaceMixin, TabularGenerator):
    """Tabular variational auto-encoder (Xu et al. 2019) owning its training loop.

    One epoch is one pass over a random permutation of the training rows in batches of ``batch_size``
    (the last batch may be smaller). History per epoch: ``loss`` (mean of reconstruction + KL per batch),
    ``recon`` and ``kl``.

    Parameters
    ----------
    epochs, batch_size, embedding_dim:
        300, 500 and 128 (reference setting).
    compress_dims, decompress_dims:
        Hidden sizes of the encoder and the decoder, (128, 128) each.
    lr, weight_decay, loss_factor:
        Adam learning rate (1e-3), weight decay (1e-5) and the weight of the reconstruction term (2).
    discrete_sampling:
        ``"argmax"`` (reference code) or ``"sample"`` (paper) decoding of mode and category blocks.
    numerical_decoding:
        ``"clip_round"``: generated numericals clipped to the training range, integer columns rounded;
        ``"truncate"``: no clipping, integer columns truncated toward zero (the reference code's output).
    max_modes, weight_threshold:
        Mode-specific normalisation: at most 10 modes per numerical column, modes under 0.005 dropped.
    random_state, device:
        Seed (same seed, same model and samples on CPU); ``"auto"`` = CUDA when present, else CPU.

    Examples
    --------
    >>> gen = TVAE(epochs=300, random_state=0).fit(train, schema)      # doctest: +SKIP
    >>> synthetic = gen.sample(len(train), random_state=1)              # doctest: +SKIP
    """

    _RESUME_MUTABLE: ClassVar[frozenset[str]] = TabularGenerator._RESUME_MUTABLE | {
        "discrete_sampling",
        "numerical_decoding",
    }

    _STATE_MODULES: ClassVar[dict[str, str]] = {"encoder": "encoder_net_", "decoder": "decoder_net_", "opt": "opt_"}

    supports_sample_weight = True  # weighted means of the per-record reconstruction and KL terms
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        # the reference code's output: unclipped numericals, integers truncated (docs/ctgan_tvae.md)
        "paper": {"numerical_decoding": "truncate"},
        "small": {"epochs": 30, "embedding_dim": 64, "compress_dims": (64, 64), "decompress_dims": (64, 64)},
    }

    def __init__(
        self,
        *,
        epochs: int = 300,
        batch_size: int = 500,
        embedding_dim: int = 128,
        compress_dims: Sequence[int] = (128, 128),
        decompress_dims: Sequence[int] = (128, 128),
        lr: float = 1e-3,
        weight_decay: float = 1e-5,
        loss_factor: float = 2.0,
        discrete_sampling: str = "argmax",
        numerical_decoding: str = "clip_round",
        max_modes: int = 10,
        weight_threshold: float = 0.005,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.epochs = epochs
        self.batch_size = batch_size
        self.embedding_dim = embedding_dim
        self.compress_dims = compress_dims
        self.decompress_dims = decompress_dims
        self.lr = lr
        self.weight_decay = weight_decay
        self.loss_factor = loss_factor
        self.discrete_sampling = discrete_sampling
        self.numerical_decoding = numerical_decoding
        self.max_modes = max_modes
        self.weight_threshold = weight_threshold
        self.random_state = random_state
        self.device = device

    # ------------------------------------------------------------------ build
    def _check_params(self) -> None:
        _check_positive("embedding_dim", self.embedding_dim, integer=True)
        _check_dims("compress_dims", self.compress_dims)
        _check_dims("decompress_dims", self.decompress_dims)
        _check_positive("lr", self.lr)
        _check_positive("loss_factor", self.loss_factor)
        _check_positive("weight_decay", self.weight_decay, allow_zero=True)
        if self.discrete_sampling not in ("argmax", "sample"):
            raise TabmemError(f"discrete_sampling must be 'argmax' or 'sample', got {self.discrete_sampling!r}")
        if self.numerical_decoding not in NUMERICAL_DECODINGS:
            raise TabmemError(
                f"numerical_decoding must be one of {NUMERICAL_DECODINGS}, got {self.numerical_decoding!r}"
            )

    def _make_modules(self) -> None:
        norm = self.normalizer_
        assert norm is not None
        d = norm.output_dim_
        self.encoder_net_ = _Encoder(d, self.compress_dims, self.embedding_dim).to(self.device_)
        self.decoder_net_ = _Decoder(self.embedding_dim, self.decompress_dims, d).to(self.device_)
        params = list(self.encoder_net_.parameters()) + list(self.decoder_net_.parameters())
        self.opt_ = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        spans = norm.spans_
        self._scalar_idx = torch.tensor([s.start for s in spans if s.kind == "tanh"], dtype=torch.long)
        self._blocks = [(s.start, s.end) for s in spans if s.kind == "softmax"]

    # ------------------------------------------------------------------ train
    def reconstruction_nll(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Per-row reconstruction NLL: Gaussian on the scalars (learned sigma), cross-entropy on one-hot blocks."""
        sigma = self.decoder_net_.sigma
        idx = self._scalar_idx.to(x.device)
        nll = x.new_zeros(x.shape[0])
        if len(idx):
            s = sigma[idx]
            diff = x[:, idx] - torch.tanh(out[:, idx])
            nll = nll + (diff.pow(2) / (2 * s.pow(2)) + torch.log(s)).sum(dim=1)
        for start, end in self._blocks:
            target = x[:, start:end].argmax(dim=1)
            nll = nll + F.cross_entropy(out[:, start:end], target, reduction="none")
        return nll

    def _train_epoch(self, epoch: int) -> dict[str, float]:
        data = self.train_matrix_
        gen = self.torch_generator_
        n = data.shape[0]
        perm = torch.randperm(n, generator=gen, device=gen.device).to(data.device)
        bs = int(self.batch_size)
        sums = np.zeros(3)
        steps = 0
        weights = getattr(self, "_weights", None)
        for i in range(0, n, bs):
            x = data[perm[i : i + bs]]
            mu, logvar = self.encoder_net_(x)
            std = torch.exp(0.5 * logvar)
            z = mu + std * torch.randn(mu.shape, generator=gen, device=mu.device)
            out = self.decoder_net_(z)
            recon_rows = self.reconstruction_nll(x, out)
            kl_rows = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1)
            if weights is None:
                recon, kl = self.loss_factor * recon_rows.mean(), kl_rows.mean()
            else:  # weighted means of the per-record terms (tabmem.generators._weights)
                w = weights[perm[i : i + bs]]
                recon, kl = self.loss_factor * weighted_mean(recon_rows, w), weighted_mean(kl_rows, w)
            loss = recon + kl
            self.opt_.zero_grad(set_to_none=True)
            loss.backward()
            self.opt_.step()
            with torch.no_grad():
                self.decoder_net_.sigma.clamp_(0.01, 1.0)
            sums += (float(loss.detach()), float(recon.detach()), float(kl.detach()))
            steps += 1
        mean = sums / steps
        return {"loss": mean[0], "recon": mean[1], "kl": mean[2]}

    # ----------------------------------------------------------------- sample
    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        norm = self.normalizer_
        assert norm is not None
        z = torch.randn(n, self.embedding_dim, generator=generator, device=self.device_)
        out = self.decoder_net_(z)
        act = out.clone()
        idx = self._scalar_idx.to(out.device)
        act[:, idx] = torch.tanh(out[:, idx])
        if self.discrete_sampling == "sample":
            for start, end in self._blocks:
                pick = torch.multinomial(torch.softmax(out[:, start:end], dim=1), 1, generator=generator).squeeze(1)
                block = torch.zeros_like(out[:, start:end])
                block[torch.arange(n, device=out.device), pick] = 1.0
                act[:, start:end] = block
        sigmas = self.decoder_net_.sigma.detach().cpu().numpy().astype(np.float64)
        seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device).item())
        return self._decode_sample(act.cpu().numpy(), sigmas, seed)

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {"transformer": self.normalizer_.get_state(), **self._module_states()}  # type: ignore[union-attr]

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self._restore_modules(state)
        self._load_module_states(state)
