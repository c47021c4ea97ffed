"""Adult split three ways (train / control / fresh) and the two planted truths the risk tests use.

* ``leak``: the training rows with every numerical value jittered by 1% of its column's standard
  deviation (a generator that memorised its training table);
* ``fresh``: real rows the "generator" never saw (no leak: every risk interval should hold 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tabmem.data.datasets import load_dataset
from tabmem.data.schema import Schema


def adult_three_ways(data_dir: Path, n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Schema]:
    """``n`` Adult rows each for train, control and fresh (disjoint, shuffled with ``seed``) and the schema."""
    ds = load_dataset("adult", data_dir=data_dir, download=False)
    full = pd.concat([ds.train, ds.test], ignore_index=True)
    perm = np.random.default_rng(seed).permutation(len(full))
    parts = [full.iloc[perm[i * n : (i + 1) * n]].reset_index(drop=True) for i in range(3)]
    return parts[0], parts[1], parts[2], ds.schema


def jittered_copy(train: pd.DataFrame, schema: Schema, seed: int = 1, scale: float = 0.01) -> pd.DataFrame:
    """``train`` with numerical values moved by ``scale`` standard deviations of noise (a planted leak)."""
    rng = np.random.default_rng(seed)
    out = train.copy()
    for c in schema.numerical:
        out[c] = out[c].astype(float) + rng.normal(0.0, scale * float(out[c].std()), len(out))
    return out
