"""Fixtures for the quality-metric tests (the tables themselves are in ``metric_tables.py``)."""

from __future__ import annotations

import pytest
from metric_tables import load_adult, load_shoppers


@pytest.fixture(scope="session")
def adult(shared_data_dir):
    return load_adult(shared_data_dir)


@pytest.fixture(scope="session")
def shoppers(shared_data_dir):
    return load_shoppers(shared_data_dir)
