"""Toy tables and a toy memorizing generator for the attack tests (importable by the test modules)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.attacks.shadows import ShadowSet, row_keys
from tabmem.data.schema import Schema, validate


def make_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": np.round(rng.normal(50, 10, n), 3),
            "y": np.round(rng.exponential(1000, n), 2),
            "z": np.round(rng.uniform(0, 1, n), 4),
            "k": rng.integers(0, 4, n),
        }
    )


def copying_generator(train: pd.DataFrame, n_out: int, seed: int) -> pd.DataFrame:
    """A toy generator that memorizes: half of its rows copy random training rows, half are fresh rows."""
    rng = np.random.default_rng(seed)
    copies = train.iloc[rng.choice(len(train), size=n_out // 2, replace=False)]
    fresh = make_table(n_out - len(copies), 1000 + seed)
    return pd.concat([copies, fresh], ignore_index=True)


def make_shadows(members: pd.DataFrame, non_members: pd.DataFrame, schema: Schema, n_shadows: int = 16):
    """An online ShadowSet of the toy copying generator (complementary halves of the targets)."""
    targets = pd.concat([members, non_members], ignore_index=True)
    n = len(targets)
    membership = np.zeros((n_shadows, n), dtype=bool)
    synthetic = []
    for s in range(n_shadows):
        perm = np.random.default_rng([7, s // 2]).permutation(n)
        rows = perm[: n // 2] if s % 2 == 0 else perm[n // 2 :]
        membership[s, rows] = True
        synthetic.append(copying_generator(targets.iloc[rows], 150, s))
    keys = row_keys(validate(targets, schema, name="targets"))
    return ShadowSet(tuple(synthetic), membership, keys, "online", {"toy": True})
