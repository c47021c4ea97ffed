"""Tabular generators with one interface: owned training loops, callbacks, checkpoints, resume.

* :class:`TabularGenerator` (``base.py``): the interface and the loop; its module docstring says
  exactly what a new generator implements.
* Registry: ``@register_generator(name)``, :func:`get_generator` (``"tabddpm"``, ``"tvae"``,
  ``"ctgan"``, ``"llm"`` are imported lazily), :data:`GENERATORS`, :func:`load_generator`.
* Callbacks (``callbacks.py``): :class:`Callback`, :class:`CheckpointCallback`,
  :class:`EarlyStopping`, :class:`LambdaCallback`; the per-record memorization tracker is
  :class:`tabmem.memorization.tracker.MemorizationTracker`.
"""

from __future__ import annotations

from tabmem.generators.base import (
    GENERATORS,
    TabularGenerator,
    available_generators,
    get_generator,
    load_generator,
    register_generator,
    resolve_device,
)
from tabmem.generators.callbacks import (
    Callback,
    CallbackProtocol,
    CheckpointCallback,
    EarlyStopping,
    History,
    LambdaCallback,
)

__all__ = [
    "GENERATORS",
    "TabularGenerator",
    "available_generators",
    "get_generator",
    "load_generator",
    "register_generator",
    "resolve_device",
    "Callback",
    "CallbackProtocol",
    "CheckpointCallback",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "demo_train",
    "train_to_dir",
]


def __getattr__(name: str):  # lazy: demo_train pulls in the tracker and TabDDPM
    if name in ("demo_train", "train_to_dir"):
        from tabmem.generators import _run

        return getattr(_run, name)
    raise AttributeError(name)
