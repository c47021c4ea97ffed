"""Reference libraries for comparison tests: skipped locally, required in CI's reference environment."""

from __future__ import annotations

import os

import pytest


def require(module: str, env: str = "TABMEM_REQUIRE_REFERENCE"):
    """Import a reference library; skip without it, except in CI's reference environment.

    ``.ci/run`` runs the ``reference`` tests in their own virtualenv with
    ``TABMEM_REQUIRE_REFERENCE=1``: there a missing library fails the run instead of skipping, so
    every reference comparison runs somewhere in CI. The generators backed by the real packages
    (``extgen`` tests, ``tests/run_extgen.sh``) use ``env="TABMEM_REQUIRE_EXTGEN"`` the same way.
    """
    if os.environ.get(env) == "1":
        import importlib

        return importlib.import_module(module)
    return pytest.importorskip(module)
