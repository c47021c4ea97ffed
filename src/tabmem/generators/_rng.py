"""The randomness of a generator: one seed, independent streams per purpose, the user's global RNG untouched.

From the run's seed :func:`derive_seed` derives (SeedSequence) one stream per purpose: purpose 1
the training ``torch.Generator``, 2 the training numpy ``Generator``, 3 the private copy of the
global torch RNG, 11 and 12 the global and explicit streams of a sampling call, 21 and 22 the
CTGAN/TVAE normaliser. Adding a purpose never changes the streams of the others.

:class:`TrainingRNG` holds the training streams. Modules that draw from the *global* torch RNG
(``nn.init``, ``nn.Dropout``) run inside :meth:`TrainingRNG.private_global`: the global streams are
forked, set to the run's private copy, and the copy is taken back afterwards, so the user's global
RNG is never touched and a checkpoint can hold the copy (bit-exact resume).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

try:
    import torch
except ModuleNotFoundError:  # pragma: no cover - base.py reports the missing extra
    torch = None  # type: ignore[assignment]

__all__ = ["TrainingRNG", "derive_seed", "fork_devices", "fresh_seed", "sampling_rng"]


def derive_seed(*entropy: int) -> int:
    """A 63-bit seed derived from integers (SeedSequence: independent streams per purpose)."""
    return int(
        np.random.SeedSequence([int(e) % (2**63) for e in entropy]).generate_state(2, np.uint32).view(np.uint64)[0] >> 1
    )


def fresh_seed() -> int:
    """A seed from OS entropy (``random_state=None``); recorded by the caller so that the run can be reproduced."""
    return int(np.random.SeedSequence().generate_state(1, np.uint32)[0])


def fork_devices(device: torch.device) -> list[int]:
    """The CUDA devices whose RNG ``torch.random.fork_rng`` must save for work on ``device``."""
    if device.type == "cuda":
        return [device.index if device.index is not None else torch.cuda.current_device()]
    return []


@contextlib.contextmanager
def sampling_rng(seed: int, device: torch.device) -> Iterator[torch.Generator]:
    """A fresh ``torch.Generator`` for one sampling call, with the global torch RNG forked and seeded
    from ``seed`` inside the block (restored afterwards)."""
    with torch.random.fork_rng(devices=fork_devices(device)):
        torch.manual_seed(derive_seed(seed, 11))
        gen = torch.Generator(device=device)
        gen.manual_seed(derive_seed(seed, 12))
        yield gen


class TrainingRNG:
    """The random streams of one training run, derived from ``seed`` (module docstring).

    ``torch`` (a ``torch.Generator`` on ``device``) and ``numpy`` (a numpy ``Generator``) are the
    streams training code draws from; the private copy of the global torch RNG is used through
    :meth:`private_global`. :meth:`state_dict` / :meth:`load_state_dict` save and restore all of
    them (tensors and plain values only).
    """

    def __init__(self, seed: int, device: torch.device) -> None:
        self.seed = int(seed)
        self.device = device
        self.torch = torch.Generator(device=device)
        self.torch.manual_seed(derive_seed(seed, 1))
        self.numpy = np.random.default_rng(np.random.SeedSequence([seed, 2]))
        with torch.random.fork_rng(devices=fork_devices(device)):
            torch.manual_seed(derive_seed(seed, 3))
            self._global_cpu = torch.get_rng_state()
            self._global_cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None

    @contextlib.contextmanager
    def private_global(self) -> Iterator[None]:
        """Run a block under this run's own copy of the global torch RNG streams."""
        with torch.random.fork_rng(devices=fork_devices(self.device)):
            torch.set_rng_state(self._global_cpu)
            if self.device.type == "cuda" and self._global_cuda is not None:
                torch.cuda.set_rng_state(self._global_cuda, self.device)
            try:
                yield
            finally:
                self._global_cpu = torch.get_rng_state()
                if self.device.type == "cuda":
                    self._global_cuda = torch.cuda.get_rng_state(self.device)

    def state_dict(self) -> dict[str, Any]:
        return {
            "torch_generator": self.torch.get_state(),
            "numpy": self.numpy.bit_generator.state,
            "global_cpu": self._global_cpu,
            "global_cuda": self._global_cuda,
            "device_type": self.device.type,
        }

    def load_state_dict(self, state: dict[str, Any], *, epoch: int) -> None:
        """Restore :meth:`state_dict`; ``epoch`` reseeds the torch stream when the run moved between cpu and cuda."""
        if state["device_type"] == self.device.type:
            self.torch.set_state(state["torch_generator"])
            self._global_cuda = state["global_cuda"]
        else:  # moved between cpu and cuda: the run continues, but is no longer bit-identical
            self.torch.manual_seed(derive_seed(self.seed, 1, epoch))
        self.numpy.bit_generator.state = state["numpy"]
        self._global_cpu = state["global_cpu"]
