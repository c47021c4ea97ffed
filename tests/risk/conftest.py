"""Fixtures of the risk tests: Adult split three ways (small, so each test takes seconds)."""

from __future__ import annotations

import pytest
from risk_tables import adult_three_ways, jittered_copy


@pytest.fixture(scope="session")
def adult3(shared_data_dir):
    """(train, control, fresh, schema): 2,000 disjoint Adult rows each."""
    if not (shared_data_dir / "adult").is_dir():
        pytest.skip("adult files not on this machine")
    return adult_three_ways(shared_data_dir, 2000)


@pytest.fixture(scope="session")
def adult_leak(adult3):
    """(train, control, leak, schema): the synthetic table is the training rows, jittered."""
    train, control, _, schema = adult3
    return train, control, jittered_copy(train, schema), schema
