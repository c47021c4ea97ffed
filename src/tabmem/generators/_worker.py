"""Per-epoch control over a package whose own call trains every epoch (the generators backed by real packages).

A package that trains all epochs in one call (``transformers.Trainer.train()`` in realtabformer and
be_great, ``CTGAN.fit`` / ``TVAE.fit`` in ``ctgan``) runs that call in a worker thread. A hook that
the package calls at each epoch boundary (a trainer callback, :mod:`tabmem.generators._handoff`; an
attribute the package sets once per epoch, :mod:`tabmem.generators.ext_sdv`) calls
:meth:`EpochPause.pause`, which hands control back to tabmem and waits. :class:`WorkerTraining` is
the generator side: ``_train_epoch`` releases the worker for one epoch and waits for it, so only
one thread runs at any time and the worker runs only inside ``_train_epoch``, under the
generator's private copy of the global torch RNG (base class) and of Python's and numpy's global
RNGs (:class:`PrivatePyNp`). While the worker waits, tabmem's callbacks (tracker, checkpoints)
run: measuring does not change the trajectory. Nothing here imports a package.
"""

from __future__ import annotations

import contextlib
import io
import math
import queue
import random
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tabmem.errors import TabmemError

__all__ = ["EpochPause", "PrivatePyNp", "Stop", "WorkerTraining", "python_numpy_rng", "silenced"]


class Stop(Exception):
    """Raised inside the worker (by :meth:`EpochPause.pause`) to end the package's training at an epoch boundary."""


class EpochPause:
    """Both ends of the handoff: the worker calls :meth:`pause` at each epoch boundary and :meth:`end`
    when its training call returns; the generator reads ``to_main`` and answers on ``to_worker``."""

    def __init__(self) -> None:
        self.to_main: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.to_worker: queue.Queue[str] = queue.Queue()

    def pause(self, loss: float | dict[str, float]) -> None:
        """(worker) An epoch is complete: hand over and wait; raises :class:`Stop` when told to stop."""
        self.to_main.put(("epoch", loss))
        if self.to_worker.get() == "stop":
            raise Stop

    def end(self, loss: float) -> None:
        """(worker) The package's training call is over."""
        self.to_main.put(("end", loss))


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """The packages print progress and warn: their stdout, stderr and warnings are dropped."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield


@contextlib.contextmanager
def python_numpy_rng(seed: int | None = None) -> Iterator[None]:
    """Python's and numpy's global RNGs (seeded from ``seed`` when given), restored afterwards."""
    py, npy = random.getstate(), np.random.get_state()  # noqa: NPY002 - the legacy global is what is guarded
    try:
        if seed is not None:
            random.seed(seed)
            np.random.seed(seed % 2**32)  # noqa: NPY002
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)  # noqa: NPY002


class PrivatePyNp:
    """A private copy of Python's and numpy's global RNG streams, swapped in by :meth:`window`."""

    def __init__(self, seed: int) -> None:
        with python_numpy_rng(seed):
            self._py, self._np = random.getstate(), np.random.get_state()  # noqa: NPY002

    @contextlib.contextmanager
    def window(self) -> Iterator[None]:
        user_py, user_np = random.getstate(), np.random.get_state()  # noqa: NPY002
        random.setstate(self._py)
        np.random.set_state(self._np)  # noqa: NPY002
        try:
            yield
        finally:
            self._py, self._np = random.getstate(), np.random.get_state()  # noqa: NPY002
            random.setstate(user_py)
            np.random.set_state(user_np)  # noqa: NPY002


class WorkerTraining:
    """Mixin of a :class:`~tabmem.generators.base.TabularGenerator` whose package owns the training loop.

    The generator calls :meth:`_init_handoff` in ``_build`` and sets ``_train_call`` (a function of
    the :class:`EpochPause` that runs the package's whole training and makes the package's hook
    call it); ``_train_epoch`` and :meth:`_stop_worker` (called when ``fit`` ends) do the rest.
    ``_new_pause`` makes the pause object (a subclass may be the package's callback) and
    ``_quiet`` silences the package while its worker runs.
    """

    _package_name = "package"
    _new_pause: Callable[[], EpochPause] = EpochPause

    def _quiet(self) -> contextlib.AbstractContextManager[None]:
        return silenced()

    def _init_handoff(self, seed: int) -> None:
        self._worker: threading.Thread | None = None
        self._handoff: EpochPause | None = None
        self._train_call: Callable[[EpochPause], Any] | None = None
        self._pyrng = PrivatePyNp(seed)

    def _start_worker(self) -> None:
        handoff = self._handoff = type(self)._new_pause()
        call = self._train_call

        def run() -> None:
            try:
                call(handoff)
            except Stop:
                handoff.to_main.put(("stopped", None))
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
                handoff.to_main.put(("error", exc))

        self._worker = threading.Thread(target=run, name=f"tabmem-{self._package_name}-trainer", daemon=True)
        self._worker.start()

    def _train_epoch(self, epoch: int) -> dict[str, float]:
        with self._quiet(), self._pyrng.window():  # the worker runs only inside this block
            if self._worker is None:
                self._start_worker()
            else:
                self._handoff.to_worker.put("go")
            kind, value = self._handoff.to_main.get()
            if kind in ("error", "end", "stopped"):
                self._worker.join()  # nothing of the package's training runs outside _train_epoch
                self._worker = None
        if kind == "error":
            raise TabmemError(
                f"{self._package_name}: training failed at epoch {epoch} ({type(value).__name__}: {value})"
            )
        if kind != "epoch" and epoch != int(self.epochs):
            raise TabmemError(f"{self._package_name}: the package's trainer ended after epoch {epoch} of {self.epochs}")
        if isinstance(value, dict):  # several losses (the GAN's generator and discriminator)
            return {k: float(v) for k, v in value.items()}
        return {"loss": float(value) if value is not None else math.nan}

    def _resume_refusal(self) -> str | None:
        """Why a checkpoint cannot continue this package's training (``None``: resume is not refused here)."""
        return None

    def _release_fit_state(self) -> None:
        """Drop what only the fit needed (the package's trainer, the training table) when ``fit`` returns."""

    def fit(self, train: Any, schema: Any = None, **kwargs: Any) -> Any:
        """:meth:`TabularGenerator.fit`; stops the worker and drops the fit's state when it returns."""
        why = self._resume_refusal()
        if why is not None and kwargs.get("resume_from") is not None:
            raise TabmemError(
                f"{self.name}: resume is not supported ({why}): train again from the start; the same seed "
                "gives the same model"
            )
        try:
            return super().fit(train, schema, **kwargs)  # type: ignore[misc]
        finally:
            self._stop_worker()
            self._release_fit_state()

    def _stop_worker(self) -> None:
        worker = getattr(self, "_worker", None)
        if worker is None:
            return
        with self._private_global_rng(), self._quiet(), self._pyrng.window():
            self._handoff.to_worker.put("stop")
            worker.join()
        self._worker = None
