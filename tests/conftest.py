"""Shared test fixtures (kept minimal: area-specific fixtures live in each test folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _candidate_data_dirs() -> list[Path]:
    """``$TABMEM_DATA_DIR``, then ``../shared/datasets`` next to the checkout."""
    candidates = []
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
    pytest.skip("no dataset directory found ($TABMEM_DATA_DIR or ../shared/datasets next to the checkout)")


# Skips that depend on the machine, not on the code: allowed even in CI's strict mode.
ALLOWED_SKIP_REASONS = ("needs CUDA", "files not on this machine", "is write-only")


def pytest_sessionfinish(session, exitstatus) -> None:
    """With ``TABMEM_STRICT_SKIPS=1`` (set by ``.ci/run``) any other skip fails the run.

    A reference library, an optional extra or the shared datasets missing in CI would otherwise turn
    comparisons into silent skips; the reason must be one of :data:`ALLOWED_SKIP_REASONS`.
    """
    if os.environ.get("TABMEM_STRICT_SKIPS") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    bad = [r for r in skipped if not any(reason in str(r.longrepr) for reason in ALLOWED_SKIP_REASONS)]
    if bad:
        for r in bad:
            reporter.write_line(f"TABMEM_STRICT_SKIPS: skipped in CI: {r.nodeid}: {r.longrepr}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def counted(monkeypatch):
    """Counts table validations by table name (``synthetic``, ``holdout``...): each table is validated once."""
    from collections import Counter

    import tabmem.data.schema as schema_module

    calls: Counter[str] = Counter()
    raw = schema_module._validate_raw

    def counting(table, schema, *, name="synthetic", **kw):
        calls[name] += 1
        return raw(table, schema, name=name, **kw)

    monkeypatch.setattr(schema_module, "_validate_raw", counting)
    return calls


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    """The suite's on-disk caches (the training self-search) go to a fresh folder, never the user's ~/.cache:
    a run neither reads what an earlier run left nor leaves files behind. Subprocesses inherit it."""
    old = os.environ.get("TABMEM_CACHE_DIR")
    os.environ["TABMEM_CACHE_DIR"] = str(tmp_path_factory.mktemp("tabmem-cache"))
    yield
    if old is None:
        os.environ.pop("TABMEM_CACHE_DIR", None)
    else:
        os.environ["TABMEM_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance (2 CPUs) per test module, its workers importing this checkout's src: the pools
    inside the tests join it and leave it running; shut down after the module."""
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(_REPO_ROOT / "src")}},
    )
    yield ray
    ray.shutdown()
