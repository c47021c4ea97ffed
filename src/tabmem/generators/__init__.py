"""Tabular generators with one interface: owned training loops, callbacks, checkpoints, resume.

* :class:`TabularGenerator` (``base.py``): the interface and the loop; its module docstring says
  exactly what a new generator implements.
* Registry: ``@register_generator(name)``, :func:`get_generator` (``"tabddpm"``, ``"tvae"``,
  ``"ctgan"``, ``"llm"`` are imported lazily), :data:`GENERATORS`, :func:`load_generator`.
* Callbacks live in :mod:`tabmem.callbacks` (re-exported here): :class:`Callback`,
  :class:`CheckpointCallback`, :class:`EarlyStopping`, :class:`LambdaCallback`; the per-record
  memorization tracker is :class:`tabmem.memorization.tracker.MemorizationTracker`.
* Training into a run directory (``tabmem train``) is :func:`tabmem.runs.train.train_to_dir`.
"""

from __future__ import annotations

from tabmem.callbacks import (
    Callback,
    CallbackProtocol,
    CheckpointCallback,
    EarlyStopping,
    History,
    LambdaCallback,
)
from tabmem.generators.base import (
    DEFAULT_PRESET,
    GENERATORS,
    TabularGenerator,
    available_generators,
    get_generator,
    load_generator,
    register_generator,
    resolve_device,
    resolve_preset,
)

__all__ = [
    "DEFAULT_PRESET",
    "GENERATORS",
    "TabularGenerator",
    "available_generators",
    "get_generator",
    "load_generator",
    "register_generator",
    "resolve_device",
    "resolve_preset",
    "Callback",
    "CallbackProtocol",
    "CheckpointCallback",
    "EarlyStopping",
    "History",
    "LambdaCallback",
]
