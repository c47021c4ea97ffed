"""Small mixed-type tables for attack tests (fast, no data files needed)."""

from __future__ import annotations

import pytest
from attack_tables import make_shadows, make_table

from tabmem.data.schema import Schema


@pytest.fixture
def tables():
    members = make_table(120, 0)
    non_members = make_table(120, 1)
    synthetic_heldout = make_table(150, 2)
    reference = make_table(150, 3)
    schema = Schema.infer(members, categorical=["k"])
    return members, non_members, synthetic_heldout, reference, schema


@pytest.fixture
def shadows(tables):
    members, non_members, _, _, schema = tables
    return make_shadows(members, non_members, schema)
