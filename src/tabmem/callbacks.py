"""Training callbacks: the protocol between a training loop and what watches it.

Generators (:class:`~tabmem.generators.base.TabularGenerator`) call these hooks; trackers
(:class:`~tabmem.memorization.tracker.MemorizationTracker`), checkpoints and progress bars
implement them. This module sits below both, so neither imports the other.

A callback is any object with (some of) these three methods; :class:`Callback` gives no-op
defaults, so subclass it and override what you need::

    on_fit_start(gen)                     # after the model is built (and restored on resume)
    on_epoch_end(gen, epoch, logs) -> bool | None   # epoch is 1-based; return True to stop
    on_fit_end(gen)                       # after the last epoch (also after an early stop)

``logs`` is a mutable dict of this epoch's numbers (losses, ``"epoch_time"``); a callback may
add entries (the :class:`~tabmem.memorization.tracker.MemorizationTracker` adds
``"mem_rate"``), and later callbacks in the list see them. Callbacks run in list order, except
that callbacks with a larger ``order`` attribute run later (checkpoints use ``order = 100`` so
a checkpoint is written after every other callback has recorded that epoch: a crash followed
by a resume then never loses or duplicates a tracked epoch).

A callback that samples from the model mid-training must call ``gen.sample(n, random_state=...)``:
sampling runs in eval mode under a private RNG and restores train modes and every RNG state, so
measuring never changes what is measured (STYLE.md principle 4).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tabmem._checks import check_positive_int
from tabmem.errors import TabmemError

__all__ = [
    "Callback",
    "CallbackProtocol",
    "CheckpointCallback",
    "EarlyStopping",
    "LambdaCallback",
    "History",
    "StopAtEpoch",
    "TrainingRun",
]


@runtime_checkable
class TrainingRun(Protocol):
    """What a callback may use of the model under training (a ``TabularGenerator`` satisfies it)."""

    name: str
    epoch_: int
    n_train_: int
    fingerprint_: str

    @property
    def training_table_(self) -> Any: ...

    def sample(self, n: int, *, random_state: int | None = None) -> Any: ...

    def save_checkpoint(self, path: str | Path) -> Path: ...


# callbacks are typed against the protocol; the name keeps the signatures readable
TabularGenerator = TrainingRun


@runtime_checkable
class CallbackProtocol(Protocol):
    """Structural type of a training callback (see module docstring)."""

    def on_fit_start(self, gen: TabularGenerator) -> None: ...

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None: ...

    def on_fit_end(self, gen: TabularGenerator) -> None: ...


class Callback:
    """Base class with no-op hooks; ``order`` sorts callbacks (stable; larger runs later)."""

    order: int = 0

    def on_fit_start(self, gen: TabularGenerator) -> None:
        """Called once per ``fit`` after the model is built or restored (``gen.epoch_`` = start epoch)."""

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        """Called after epoch ``epoch`` (1-based). Return ``True`` to stop training."""
        return None

    def on_fit_end(self, gen: TabularGenerator) -> None:
        """Called once when training ends (normally or by an early stop)."""


class CheckpointCallback(Callback):
    """Write a resumable checkpoint every ``every`` epochs (and after the last one).

    ``path`` is a file (``.pt``) or a directory (the file is ``checkpoint.pt`` inside it). The
    write is atomic (temporary file then rename), so a crash mid-write leaves the previous
    checkpoint intact. Resume with ``gen.fit(train, schema, resume_from=path)``.
    """

    order = 100

    def __init__(self, every: int, path: str | Path):
        self.every = check_positive_int("CheckpointCallback: every", every)
        p = Path(path)
        self.path = p / "checkpoint.pt" if p.suffix == "" else p
        self.last_epoch_: int | None = None

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        if epoch % self.every == 0:
            gen.save_checkpoint(self.path)
            self.last_epoch_ = epoch
        return None

    def on_fit_end(self, gen: TabularGenerator) -> None:
        if self.last_epoch_ != gen.epoch_:
            gen.save_checkpoint(self.path)
            self.last_epoch_ = gen.epoch_


class EarlyStopping(Callback):
    """Stop when ``monitor`` (a key of ``logs``) has not improved by ``min_delta`` for ``patience`` epochs."""

    def __init__(self, monitor: str = "loss", patience: int = 10, min_delta: float = 0.0, mode: str = "min"):
        if mode not in ("min", "max"):
            raise TabmemError(f"EarlyStopping: mode must be 'min' or 'max', got {mode!r}")
        if patience < 1:
            raise TabmemError(f"EarlyStopping: patience must be >= 1, got {patience!r}")
        self.monitor, self.patience, self.min_delta, self.mode = monitor, patience, min_delta, mode
        self.best_: float | None = None
        self.wait_ = 0

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        if self.monitor not in logs:
            raise TabmemError(f"EarlyStopping: logs have no {self.monitor!r} (available: {sorted(logs)})")
        value = float(logs[self.monitor])
        sign = 1.0 if self.mode == "min" else -1.0
        if self.best_ is None or sign * (self.best_ - value) > self.min_delta:
            self.best_, self.wait_ = value, 0
            return False
        self.wait_ += 1
        return self.wait_ >= self.patience


class StopAtEpoch(Callback):
    """Stop training after epoch ``epoch`` of a longer schedule (a warm-up: the first epochs of the full run).

    Unlike training with ``epochs=epoch``, everything that depends on the full schedule (a learning
    rate decaying over all epochs) stays that of the full run. Runs after the other callbacks
    (``order = 90``), before checkpoints (100), so the stopping epoch is tracked and checkpointed.
    A fit resumed from a checkpoint at or past ``epoch`` trains no further epoch (the loop's end is
    held at the checkpoint's epoch while the fit runs, and restored in ``on_fit_end``).
    """

    order = 90

    def __init__(self, epoch: int):
        self.epoch = check_positive_int("StopAtEpoch: epoch", epoch)
        self._held: Any = None

    def on_fit_start(self, gen: TabularGenerator) -> None:
        if int(gen.epoch_) >= self.epoch:
            self._held = gen.epochs
            gen.epochs = gen.epoch_  # type: ignore[misc]

    def on_fit_end(self, gen: TabularGenerator) -> None:
        if self._held is not None:
            gen.epochs, self._held = self._held, None  # type: ignore[misc]

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        return epoch >= self.epoch


class LambdaCallback(Callback):
    """Wrap a plain function ``f(gen, epoch, logs)`` as an ``on_epoch_end`` callback."""

    def __init__(self, on_epoch_end: Callable[[Any, int, dict[str, Any]], bool | None], order: int = 0):
        self._f = on_epoch_end
        self.order = order

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        return self._f(gen, epoch, logs)


class History(Callback):
    """Keep the per-epoch logs in memory (``gen.history_`` already does; this is for custom loops)."""

    def __init__(self) -> None:
        self.logs_: list[dict[str, Any]] = []
        self._t0 = time.perf_counter()

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        self.logs_.append({"epoch": epoch, **logs})
        return None
