"""Shared test fixtures (kept minimal: area-specific fixtures live in each test folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _candidate_data_dirs() -> list[Path]:
    candidates = [Path("/work/shared/datasets")]
    env = os.environ.get("TABMEM_DATA_DIR")
    if env:
        candidates.append(Path(env))
    candidates.append(_REPO_ROOT.parent / "shared" / "datasets")
    return candidates


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """Directory laid out like ``../shared/datasets`` (real datasets); skips the test when none exists."""
    for candidate in _candidate_data_dirs():
        if candidate.is_dir():
            return candidate
    pytest.skip("no dataset directory found (/work/shared/datasets, $TABMEM_DATA_DIR or ../shared/datasets)")
