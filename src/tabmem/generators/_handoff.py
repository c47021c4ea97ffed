"""Per-epoch control over a package's own ``transformers.Trainer.train()`` (the generators backed by real packages).

A package that trains with one ``Trainer.train()`` call for all epochs (realtabformer, be_great)
runs that call in a worker thread with one extra :class:`Handoff` callback, which hands control
back to tabmem at each epoch boundary (``on_epoch_begin`` of the next epoch, after the epoch's log;
``on_train_end`` after the last) and waits. :class:`HandoffTraining` is the generator side:
``_train_epoch`` releases the worker for one epoch and waits for it, so only one thread runs at
any time and the worker runs only inside ``_train_epoch``, under the generator's private copy of
the global torch RNG (base class) and of Python's and numpy's global RNGs (:class:`PrivatePyNp`;
packages shuffle with ``random``, and the trainer's ``set_seed`` reseeds both). While the worker
waits, tabmem's callbacks (tracker, checkpoints) run: measuring does not change the trajectory.
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
import transformers
from transformers import LogitsProcessorList, TrainerCallback

from tabmem.defenses.tlp import TendencyLogitsProcessor
from tabmem.errors import TabmemError
from tabmem.generators.llm.options import SamplingOptions

__all__ = [
    "Handoff",
    "HandoffTraining",
    "PrivatePyNp",
    "Stop",
    "check_transformers",
    "generate_options",
    "python_numpy_rng",
    "quiet",
]


class Stop(Exception):
    """Raised inside the worker's trainer to end ``train()`` at an epoch boundary."""


class Handoff(TrainerCallback):
    """The trainer callback that pauses the worker at each epoch boundary (module docstring)."""

    def __init__(self) -> None:
        self.to_main: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.to_worker: queue.Queue[str] = queue.Queue()
        self.loss = float("nan")
        self._begun = 0

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if logs and "loss" in logs:
            self.loss = float(logs["loss"])

    def on_epoch_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self._begun += 1
        if self._begun > 1:  # the previous epoch (and its log) is complete: hand over, wait
            self.to_main.put(("epoch", self.loss))
            if self.to_worker.get() == "stop":
                raise Stop

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.to_main.put(("end", self.loss))


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The packages print (progress, sampling efficiency), draw tqdm bars and transformers logs
    notices (``loss_type=None``): silenced, transformers' verbosity restored afterwards."""
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
    finally:
        transformers.logging.set_verbosity(verbosity)


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


def generate_options(
    *,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    tendency: float | None = None,
    logits_processor: list[Any] | None = None,
) -> dict[str, Any]:
    """Keyword arguments of a Hugging Face ``generate`` for the options that are set (None: the package's
    default), checked as tabmem's own LLM sampling checks them (:class:`SamplingOptions`): the user's
    processors, then TLP."""
    opts = SamplingOptions(
        temperature=1.0 if temperature is None else temperature,
        top_k=top_k,
        top_p=1.0 if top_p is None else top_p,
        tendency=tendency,
        logits_processor=list(logits_processor or []),
    )
    kwargs: dict[str, Any] = {}
    if temperature is not None:
        kwargs["temperature"] = opts.temperature
    if top_k is not None:
        kwargs["top_k"] = opts.top_k
    if top_p is not None:
        kwargs["top_p"] = opts.top_p
    processors = list(opts.logits_processor)
    if opts.tendency is not None:
        processors.append(TendencyLogitsProcessor(opts.tendency))
    if processors:
        kwargs["logits_processor"] = LogitsProcessorList(processors)
    return kwargs


def check_transformers(package: str, extra: str) -> None:
    """The packages pin transformers<5: a clear error where a newer one is installed."""
    major = int(transformers.__version__.split(".")[0])
    if major >= 5:
        raise TabmemError(
            f"{package} needs transformers<5 (found {transformers.__version__}): install "
            f"'tabmem[{extra}]' in its own virtualenv (tests/run_extgen.sh; docs/generators.md)"
        )


class HandoffTraining:
    """Mixin of a :class:`~tabmem.generators.base.TabularGenerator` whose package owns the training loop.

    The generator calls :meth:`_init_handoff` in ``_build`` and sets ``_train_call`` (a function of
    the :class:`Handoff` callback that runs the package's whole training, adding the callback to its
    trainer); ``_train_epoch`` and :meth:`_stop_worker` (called when ``fit`` ends) do the rest.
    """

    _package_name = "package"

    def _init_handoff(self, seed: int) -> None:
        self._worker: threading.Thread | None = None
        self._handoff: Handoff | None = None
        self._train_call: Callable[[Handoff], Any] | None = None
        self._pyrng = PrivatePyNp(seed)

    def _start_worker(self) -> None:
        handoff = self._handoff = Handoff()
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
        with quiet(), self._pyrng.window():  # the worker runs only inside this block
            if self._worker is None:
                self._start_worker()
            else:
                self._handoff.to_worker.put("go")
            kind, value = self._handoff.to_main.get()
            if kind in ("error", "end", "stopped"):
                self._worker.join()  # nothing of train() runs outside _train_epoch
                self._worker = None
        if kind == "error":
            raise TabmemError(
                f"{self._package_name}: training failed at epoch {epoch} ({type(value).__name__}: {value})"
            )
        if kind != "epoch" and epoch != int(self.epochs):
            raise TabmemError(f"{self._package_name}: the package's trainer ended after epoch {epoch} of {self.epochs}")
        return {"loss": float(value) if value is not None else math.nan}

    def _stop_worker(self) -> None:
        worker = getattr(self, "_worker", None)
        if worker is None:
            return
        with self._private_global_rng(), quiet(), self._pyrng.window():
            self._handoff.to_worker.put("stop")
            worker.join()
        self._worker = None
