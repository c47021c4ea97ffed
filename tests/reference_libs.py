"""Reference libraries for comparison tests: skipped locally, required in CI's reference environment."""

from __future__ import annotations

import os

import pytest


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
