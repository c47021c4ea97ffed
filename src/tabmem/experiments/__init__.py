"""Experiments: runs of the library's components into directories that can be resumed and read back.

* :func:`train_to_dir` / :func:`demo_train` (``training.py``): train a generator with tracking,
  checkpoints and the final audit into a run directory (what ``tabmem train`` runs).
* :func:`attack_to_dir` (``attack.py``): membership inference into a directory, with shadow
  generators (``shadows.py``: planned, trained in parallel, cached, resumable) for the
  shadow-model attacks (what ``tabmem attack`` runs).
* :func:`dynamiccut_to_dir` (``dynamiccut.py``): DynamicCut's warm-up, ranking, pruning, retraining
  and evaluation into a resumable directory (``tabmem dynamiccut``); :func:`evaluate_run_dir` judges
  any run directory's model against an original table and the holdout baseline.
* Studies (``tabmem run``): :func:`load_study` reads a TOML study file (``study.py``: axes, grid,
  cell hashes), :func:`run_study` runs its cells (``runner.py``) on an executor
  (``executors.py``: local processes or Ray) through registered pipeline steps (``steps/``: the
  step interface is in ``steps/base.py``), and :func:`load_results` reads the tidy result table
  (``store.py`` documents its schema).
* :func:`run_demo` (``demo.py``): the demo study on diabetes (a leaky positive control, TabDDPM
  with tracking, TabDDPM after DynamicCut), its run and its report (what ``tabmem demo`` runs).
* :func:`write_report` (``report/``): one self-contained HTML report from a study, a train run or
  audit/attack/quality outputs (what ``tabmem report`` runs).

Names are imported on first use, so that reading results (the report) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "train_to_dir": "tabmem.experiments.training",
    "demo_train": "tabmem.experiments.training",
    "run_demo": "tabmem.experiments.demo",
    "write_report": "tabmem.experiments.report",
    "dynamiccut_to_dir": "tabmem.experiments.dynamiccut",
    "evaluate_run_dir": "tabmem.experiments.dynamiccut",
    "attack_to_dir": "tabmem.experiments.attack",
    "train_shadows": "tabmem.experiments.shadows",
    "load_shadows": "tabmem.experiments.shadows",
    "load_results": "tabmem.experiments.store",
    "load_published": "tabmem.experiments.store",
    "load_study": "tabmem.experiments.study",
    "run_study": "tabmem.experiments.runner",
    "plan_study": "tabmem.experiments.runner",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tabmem.experiments' has no attribute {name!r}")
