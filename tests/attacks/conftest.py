"""Small mixed-type tables for attack tests (fast, no data files needed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.schema import Schema


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


@pytest.fixture
def tables():
    members = make_table(120, 0)
    non_members = make_table(120, 1)
    synthetic_heldout = make_table(150, 2)
    reference = make_table(150, 3)
    schema = Schema.infer(members, categorical=["k"])
    return members, non_members, synthetic_heldout, reference, schema
