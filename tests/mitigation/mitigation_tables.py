"""Small mixed tables for the mitigation tests (imported by name: tests/ directories are not packages)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import chi2_contingency

from tabmem.data.schema import Schema


def mixed_table(n: int = 120, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """Numerical float and int columns, two categoricals (one integer-coded), an imbalanced binary target."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": np.round(rng.lognormal(10, 0.5, n), 2),
            "city": rng.choice(["north", "south", "east"], n).astype(object),
            "level": rng.integers(0, 4, n),  # integer-coded categorical
            "y": rng.choice(["no", "yes"], n, p=[0.75, 0.25]).astype(object),
        }
    )
    schema = Schema.infer(df, categorical=["level"], target="y")
    return df, schema


TINY_DDPM = {"layers": [16], "dim_t": 8, "num_timesteps": 5, "batch_size": 32, "lr": 3e-3}


def bergsma_cramers_v(a, b) -> float:
    """Bias-corrected Cramér's V computed from scipy's chi-square (Bergsma 2013): the reference."""
    table = pd.crosstab(a, b).to_numpy()
    chi2 = chi2_contingency(table, correction=False).statistic
    n = table.sum()
    r, k = table.shape
    phi2 = max(0.0, chi2 / n - (k - 1) * (r - 1) / (n - 1))
    rc, kc = r - (r - 1) ** 2 / (n - 1), k - (k - 1) ** 2 / (n - 1)
    return float(np.sqrt(phi2 / min(kc - 1, rc - 1)))
