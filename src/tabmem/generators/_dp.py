"""DP-SGD glue shared by the generators: opacus does the clipping, the noise and the accounting.

DP-SGD (Abadi et al. 2016): every step draws a Poisson sample of the training rows (each row with
probability ``q = 1 / steps_per_epoch``), clips each row's gradient to L2 norm ``max_grad_norm``, adds
Gaussian noise of standard deviation ``noise_multiplier * max_grad_norm`` to their sum and divides by
the expected batch size. The noise multiplier is the smallest one opacus finds for ``(epsilon, delta)``
over the planned number of epochs (``make_private_with_epsilon``); the budget spent is opacus' RDP
accountant's. Nothing here computes privacy itself.

``delta`` defaults to ``1 / (10 n)`` (n training rows): below ``1 / n``, the usual upper limit.
"""

from __future__ import annotations

from typing import Any

import torch

from tabmem.errors import TabmemError


def require_opacus() -> None:
    try:
        import opacus  # noqa: F401
    except ModuleNotFoundError:  # pragma: no cover
        raise TabmemError("DP training needs opacus: pip install 'tabmem[dp]'") from None


def default_delta(n: int) -> float:
    """``1 / (10 n)``: the delta used when ``dp_delta`` is not given."""
    return 1.0 / (10.0 * int(n))


def check_dp_params(owner: str, epsilon: Any, delta: Any, max_grad_norm: Any) -> None:
    """One-line errors for ``dp_epsilon`` / ``dp_delta`` / ``dp_max_grad_norm`` (``epsilon=None``: DP off)."""
    if epsilon is None:
        return
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon > 0:
        raise TabmemError(f"{owner}: dp_epsilon must be > 0, got dp_epsilon={epsilon!r}")
    if delta is not None and (isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1):
        raise TabmemError(f"{owner}: dp_delta must be in (0, 1), got dp_delta={delta!r}")
    if isinstance(max_grad_norm, bool) or not isinstance(max_grad_norm, (int, float)) or not max_grad_norm > 0:
        raise TabmemError(f"{owner}: dp_max_grad_norm must be > 0, got dp_max_grad_norm={max_grad_norm!r}")


class PrivateSGD:
    """Opacus' private module, optimizer and Poisson loader over the row indices ``0..n-1`` of one fit.

    Args:
        module: the model; opacus hooks its layers (per-sample gradients), the module itself is kept.
        optimizer: the model's optimizer; the returned :attr:`optimizer` clips and adds noise before it steps.
        n: number of training rows (the loader yields index tensors).
        batch_size: expected batch size (``q = 1 / ceil(n / batch_size)``).
        epochs: planned epochs (the noise multiplier is chosen for them).
        epsilon, delta, max_grad_norm: the target budget and the clipping norm (``delta=None``: 1/(10n)).
        generator: the fit's torch generator: Poisson sampling and noise draw from it (same seed, same bytes;
            its state is checkpointed, so resume is exact).
    """

    def __init__(
        self,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        n: int,
        batch_size: int,
        epochs: int,
        epsilon: float,
        delta: float | None,
        max_grad_norm: float,
        generator: torch.Generator,
    ) -> None:
        require_opacus()
        from opacus import PrivacyEngine

        self.delta = float(delta) if delta is not None else default_delta(n)
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.arange(int(n))), batch_size=int(batch_size), generator=generator
        )
        self.engine = PrivacyEngine(accountant="rdp")
        module.train()
        for m in module.modules():  # opacus' backward hooks forbid in-place activations (same values)
            if getattr(m, "inplace", False):
                m.inplace = False
        self.module, self.optimizer, self.loader = self.engine.make_private_with_epsilon(
            module=module,
            optimizer=optimizer,
            data_loader=loader,
            target_epsilon=float(epsilon),
            target_delta=self.delta,
            epochs=int(epochs),
            max_grad_norm=float(max_grad_norm),
            poisson_sampling=True,
            noise_generator=generator,
        )
        self.noise_multiplier = float(self.optimizer.noise_multiplier)
        self.sample_rate = 1.0 / len(loader)

    def batches(self):
        """The index tensors of one epoch (Poisson sampled; empty ones are left out: no step, no cost)."""
        for (idx,) in self.loader:
            if idx.numel():
                yield idx

    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far (opacus RDP accountant)."""
        if not self.engine.accountant.history:
            return 0.0, self.delta
        return float(self.engine.accountant.get_epsilon(self.delta)), self.delta

    def state_dict(self) -> dict[str, Any]:
        hist = [[float(a), float(b), int(c)] for a, b, c in self.engine.accountant.history]
        return {"history": hist, "delta": self.delta, "noise_multiplier": self.noise_multiplier}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.engine.accountant.history = [tuple(h) for h in state["history"]]


def privacy_spent(generator: Any) -> tuple[float, float] | None:
    """``(epsilon, delta)`` a generator's DP-SGD has spent: its live accountant while fitting, else the
    state its checkpoint restored (``dp_`` / ``dp_restored_``); ``None`` without DP."""
    dp = getattr(generator, "dp_", None)
    if dp is not None:
        return dp.spent()
    restored = getattr(generator, "dp_restored_", None)
    return None if restored is None else spent_from_state(restored)


def spent_from_state(state: dict[str, Any]) -> tuple[float, float]:
    """``(epsilon, delta)`` of a saved accountant state (``history`` + ``delta``; a loaded model has no engine)."""
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    acc.history = [tuple(h) for h in state["history"]]
    eps = float(acc.get_epsilon(state["delta"])) if acc.history else 0.0
    return eps, float(state["delta"])
