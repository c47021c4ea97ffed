"""Experiments: runs of the library's components into directories that can be resumed and read back.

* :func:`train_to_dir` / :func:`demo_train` (``training.py``): train a generator with tracking,
  checkpoints and the final audit into a run directory (what ``tabmem train`` and ``tabmem demo`` run).
"""

from __future__ import annotations

from tabmem.experiments.training import demo_train, train_to_dir

__all__ = ["train_to_dir", "demo_train"]
