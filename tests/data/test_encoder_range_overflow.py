"""A column whose range exceeds the float64 range (found while testing fang2024 at 1e308)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from tabmem import Schema
from tabmem.data.encoding import TableEncoder


def test_fit_on_a_range_beyond_float64_warns_nothing() -> None:
    table = pd.DataFrame({"x": [-1e308, 1e308, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = TableEncoder(Schema(("x",), ("x",), ())).fit(table)
    assert np.isinf(enc.range_[0])
