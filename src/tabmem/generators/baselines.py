"""Reference "generators" that are not generative models: known leakage, to check an evaluation sees it.

:class:`NoisyResample` (``noisy_resample``) draws training rows with replacement, keeps a share of
them as exact copies and jitters the numerical values of the others. It memorizes by
construction, so it is a *positive control*: an audit or an attack that does not flag it is
blind. ``tabmem demo`` runs it next to TabDDPM. Its saved model is the training table itself
(there is nothing else to save); treat ``model.pt`` like the training data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_number
from tabmem.data.schema import Schema
from tabmem.generators.base import TabularGenerator, register_generator

try:
    import torch
except ModuleNotFoundError:  # pragma: no cover - the base class reports the missing extra
    torch = None  # type: ignore[assignment]

__all__ = ["NoisyResample"]


@register_generator("noisy_resample")
class NoisyResample(TabularGenerator):
    """Resample training rows: a share ``copy_fraction`` are exact copies, the others are jittered.

    A jittered row keeps its categorical values and adds Gaussian noise of ``noise`` training
    standard deviations to each numerical value (integer columns are rounded back to integers
    by the base class). "Training" is one epoch that stores the table; there is no loss.
    Not a generative model: a positive control for audits and attacks (module docstring).
    """

    def __init__(
        self,
        *,
        copy_fraction: float = 0.3,
        noise: float = 0.25,
        epochs: int = 1,
        random_state: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.copy_fraction = copy_fraction
        self.noise = noise
        self.epochs = epochs
        self.random_state = random_state
        self.device = device

    def _check_params(self) -> None:
        check_number("NoisyResample: copy_fraction", self.copy_fraction, low=0.0, high=1.0)
        check_number("NoisyResample: noise", self.noise, low=0.0)

    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()
        enc = self.encoder_
        self.numbers_ = torch.as_tensor(enc.numeric(train_clean), dtype=torch.float64)
        self.codes_ = torch.as_tensor(enc.codes(train_clean).astype(np.int64))
        self.scale_ = torch.as_tensor(enc.std_ * float(self.noise), dtype=torch.float64)

    def _train_epoch(self, epoch: int) -> dict[str, float]:
        return {}  # the table stored by _build is the whole model

    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        rows = torch.randint(0, self.numbers_.shape[0], (n,), generator=generator)
        jitter = torch.rand(n, generator=generator, dtype=torch.float64) >= float(self.copy_fraction)
        noise = torch.randn((n, self.numbers_.shape[1]), generator=generator, dtype=torch.float64) * self.scale_
        numbers = self.numbers_[rows] + noise * jitter[:, None]
        codes = self.codes_[rows]
        out: dict[str, Any] = {}
        for j, c in enumerate(self.schema_.numerical):
            out[c] = numbers[:, j].numpy()
        for j, c in enumerate(self.schema_.categorical):
            out[c] = codes[:, j].numpy()
        return pd.DataFrame(out)[list(self.schema_.columns)]

    def _state_dict(self) -> dict[str, Any]:
        return {"numbers": self.numbers_, "codes": self.codes_, "scale": self.scale_}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.numbers_, self.codes_, self.scale_ = state["numbers"], state["codes"], state["scale"]
