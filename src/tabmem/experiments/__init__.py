"""Experiments: runs of the library's components into directories that can be resumed and read back.

* :func:`train_to_dir` / :func:`demo_train` (``training.py``): train a generator with tracking,
  checkpoints and the final audit into a run directory (what ``tabmem train`` and ``tabmem demo`` run).
* :func:`attack_to_dir` (``attack.py``): membership inference into a directory, with shadow
  generators (``shadows.py``: planned, trained in parallel, cached, resumable) for the
  shadow-model attacks (what ``tabmem attack`` runs).
"""

from __future__ import annotations

from tabmem.experiments.attack import attack_to_dir
from tabmem.experiments.shadows import load_shadows, train_shadows
from tabmem.experiments.training import demo_train, train_to_dir

__all__ = ["attack_to_dir", "demo_train", "load_shadows", "train_shadows", "train_to_dir"]
