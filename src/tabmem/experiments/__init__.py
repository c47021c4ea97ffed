"""Experiments: runs of the library's components into directories that can be resumed and read back.

* :func:`train_to_dir` / :func:`demo_train` (``training.py``): train a generator with tracking,
  checkpoints and the final audit into a run directory (what ``tabmem train`` and ``tabmem demo`` run).
* :func:`dynamiccut_to_dir` (``dynamiccut.py``): DynamicCut's warm-up, ranking, pruning, retraining
  and evaluation into a resumable directory (``tabmem dynamiccut``); :func:`evaluate_run_dir` judges
  any run directory's model against an original table and the holdout baseline.
"""

from __future__ import annotations

from tabmem.experiments.dynamiccut import dynamiccut_to_dir, evaluate_run_dir
from tabmem.experiments.training import demo_train, train_to_dir

__all__ = ["train_to_dir", "demo_train", "dynamiccut_to_dir", "evaluate_run_dir"]
