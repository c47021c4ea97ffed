"""Fixtures of the study tests: a small mixed-type table on disk and a study-file writer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from study_fixtures import BASE


def make_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c = rng.choice(["red", "green", "blue"], size=n)
    a = rng.normal(size=n).round(3) + (c == "red") * 2.0
    b = rng.integers(0, 50, size=n)
    y = ((a + rng.normal(scale=0.5, size=n)) > 0.5).astype(int)
    return pd.DataFrame({"a": a, "b": b, "c": c, "y": y})


@pytest.fixture()
def table_files(tmp_path: Path) -> Path:
    """``tmp_path/data/{train,test}.csv``: 80 training and 40 test rows (a, b numerical; c, y categorical)."""
    data = tmp_path / "data"
    data.mkdir()
    make_table(80, 0).to_csv(data / "train.csv", index=False)
    make_table(40, 1).to_csv(data / "test.csv", index=False)
    return data


@pytest.fixture()
def write_study(tmp_path: Path, table_files: Path):
    """``write_study(text=BASE, name="study.toml")`` writes a study file next to ``data/`` and returns its path."""

    def write(text: str = BASE, name: str = "study.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write
