from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """The machine is shared: keep torch on one thread in these tests."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def small_table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 48
    return pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "income": np.round(rng.normal(50, 15, n), 1),
            "sex": rng.choice(["F", "M"], n),
        }
    )
