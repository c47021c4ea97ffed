"""Fixtures of the mitigation tests (tables in ``mitigation_tables.py``)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from mitigation_tables import mixed_table

from tabmem.data.schema import Schema


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models: one thread is faster and does not fight other test processes for cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def table() -> tuple[pd.DataFrame, Schema]:
    return mixed_table()
