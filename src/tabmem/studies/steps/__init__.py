"""Pipeline steps of a study cell, one registry (:data:`STEPS`); the interface is in :mod:`.base`.

Built-in steps: ``train`` (:func:`tabmem.runs.train.train_to_dir`), ``sample`` (sampling options
and defences), ``audit`` (replica detection with the holdout baseline), ``attack`` (membership
inference), ``quality`` (fidelity and utility), ``risk`` (the WP29 risks: singling out, linkability,
inference); the mitigation steps ``augment`` and ``dynamiccut``
(placed by a ``[[mitigations]]`` entry, :mod:`.mitigation`).
"""

from __future__ import annotations

from tabmem.studies.steps.base import STEPS, CellInfo, Step, StepContext, register_step
from tabmem.studies.store import metric

__all__ = ["STEPS", "CellInfo", "Step", "StepContext", "metric", "register_step"]
