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


def require(module: str):
    """Import a reference library; skip without it, except in CI's reference environment.

    ``.ci/run`` runs the ``reference`` tests in their own virtualenv with
    ``TABMEM_REQUIRE_REFERENCE=1``: there a missing library fails the run instead of skipping, so
    every reference comparison runs somewhere in CI.
    """
    if os.environ.get("TABMEM_REQUIRE_REFERENCE") == "1":
        import importlib

        return importlib.import_module(module)
    return pytest.importorskip(module)
