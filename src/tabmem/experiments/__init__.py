"""Experiments: runs of the library's components into directories that can be resumed and read back.

* :func:`train_to_dir` / :func:`demo_train` (``training.py``): train a generator with tracking,
  checkpoints and the final audit into a run directory (what ``tabmem train`` and ``tabmem demo`` run).
* Studies (``tabmem run``): :func:`load_study` reads a TOML study file (``study.py``: axes, grid,
  cell hashes), :func:`run_study` runs its cells (``runner.py``) on an executor
  (``executors.py``: local processes or Ray) through registered pipeline steps (``steps/``: the
  step interface is in ``steps/base.py``), and :func:`load_results` reads the tidy result table
  (``store.py`` documents its schema).
"""

from __future__ import annotations

from typing import Any

from tabmem.experiments.training import demo_train, train_to_dir

__all__ = [
    "demo_train",
    "load_published",
    "load_results",
    "load_study",
    "plan_study",
    "run_study",
    "train_to_dir",
]


def __getattr__(name: str) -> Any:  # studies load lazily: `import tabmem.experiments` stays light
    if name in ("load_results", "load_published"):
        from tabmem.experiments import store

        return getattr(store, name)
    if name == "load_study":
        from tabmem.experiments.study import load_study

        return load_study
    if name in ("run_study", "plan_study"):
        from tabmem.experiments import runner

        return getattr(runner, name)
    raise AttributeError(name)
