"""Per-epoch control over a package's own ``transformers.Trainer.train()`` (realtabformer, be_great).

The package's one ``Trainer.train()`` call runs in a worker thread (:mod:`tabmem.generators._worker`,
shared with the ``ctgan`` generators) with one extra :class:`Handoff` callback, which hands control
back to tabmem at each epoch boundary (``on_epoch_begin`` of the next epoch, after the epoch's log;
``on_train_end`` after the last) and waits. :class:`HandoffTraining` is the generator side, under
the generator's private copy of the global torch RNG (base class) and of Python's and numpy's
global RNGs (packages shuffle with ``random``, and the trainer's ``set_seed`` reseeds both).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import transformers
from transformers import LogitsProcessorList, TrainerCallback

from tabmem.defenses.tlp import TendencyLogitsProcessor
from tabmem.errors import TabmemError
from tabmem.generators._worker import EpochPause, PrivatePyNp, Stop, WorkerTraining, python_numpy_rng, silenced
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


class Handoff(EpochPause, TrainerCallback):
    """The trainer callback that pauses the worker at each epoch boundary (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.loss = float("nan")
        self._begun = 0

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if logs and "loss" in logs:
            self.loss = float(logs["loss"])

    def on_epoch_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self._begun += 1
        if self._begun > 1:  # the previous epoch (and its log) is complete: hand over, wait
            self.pause(self.loss)

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.end(self.loss)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The packages print (progress, sampling efficiency), draw tqdm bars and transformers logs
    notices (``loss_type=None``): silenced, transformers' verbosity restored afterwards."""
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        with silenced():
            yield
    finally:
        transformers.logging.set_verbosity(verbosity)


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


class HandoffTraining(WorkerTraining):
    """:class:`~tabmem.generators._worker.WorkerTraining` with the :class:`Handoff` trainer callback:
    ``_train_call`` receives the callback and adds it to the package's trainer."""

    _new_pause = Handoff

    def _quiet(self) -> contextlib.AbstractContextManager[None]:
        return quiet()
