"""Where the benchmarks find the real datasets: ``$TABMEM_DATA_DIR``, else ``../shared/datasets``
next to the checkout (the directory layout ``load_dataset`` reads), else ``None`` (the dataset
cache, downloading what is missing)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def default_data_dir() -> str | None:
    """``$TABMEM_DATA_DIR``, else ``<checkout>/../shared/datasets`` when it exists, else ``None``."""
    env = os.environ.get("TABMEM_DATA_DIR")
    if env:
        return env
    sibling = REPO.parent / "shared" / "datasets"
    return str(sibling) if sibling.is_dir() else None


def require_data_dir(value: str | None) -> Path:
    """``value`` as a directory, or exit with a message naming the two ways to give one."""
    if value is None:
        raise SystemExit("no dataset directory: set $TABMEM_DATA_DIR or pass --data-dir")
    return Path(value)
