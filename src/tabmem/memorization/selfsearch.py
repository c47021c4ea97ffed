"""The training table's search against itself, computed once per table and reused.

Authenticity (:mod:`tabmem.memorization.authenticity`) needs, for every training row, the distance
to its nearest *other* training row: a second full search, training table against itself, as
expensive as the audit's own search. It depends only on the training table and the distance
settings, so :func:`nearest_other_distances` computes it once and keeps it

* in memory, for the rest of the process (several synthetic tables against one training table, the
  final audit of a tracked run, shadows, a study's cells in one worker), and
* on disk (``<cache>/self-search/<key>.npy``, ``cache`` = ``$TABMEM_CACHE_DIR`` or
  ``~/.cache/tabmem``), for separate processes (one ``tabmem audit`` per synthetic table, ``tabmem
  train`` runs, a study's cells on other workers). The files hold one float64 distance per training
  row: no value of any row. ``TABMEM_SELF_SEARCH_CACHE=off`` turns the disk cache off (the
  in-memory one stays).

The key (:func:`self_search_key`) is a SHA-256 of everything the result depends on: the validated
training table's fingerprint (:func:`tabmem.data.fingerprint.table_fingerprint`: values, column
names, row order), its schema (column roles), the distance name, the index's missing-value policy,
the tabmem version and the source of the modules that compute it (encoding, distances, the search):
change any of them and the old entry is simply never read again. The search is exact and does not
depend on threads or memory budget, so a cached result is bit for bit the computed one (tested).
A custom :class:`~tabmem.neighbors.distances.Distance` instance (not a registered name) is never
cached: its parameters are not part of the key.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from tabmem._io import atomic_write
from tabmem.data.datasets.files import resolve_cache_dir
from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import ValidatedTable
from tabmem.errors import TabmemError
from tabmem.memorization.authenticity import nearest_other_distance
from tabmem.neighbors import NeighborIndex

__all__ = ["nearest_other_distances", "self_search_key", "self_search_cache_dir", "clear_memory_cache"]

FORMAT = 1  # bump when the stored layout or meaning changes
_MEMORY_ENTRIES = 8  # training tables kept in memory (8 bytes per row each)
_memory: OrderedDict[str, np.ndarray] = OrderedDict()
_lock = threading.Lock()  # study cells may share a process
_source_hash: list[str] = []
_DEPENDS_ON = (
    "tabmem.data.schema",
    "tabmem.data.encoding",
    "tabmem.data.fingerprint",
    "tabmem.neighbors.distances",
    "tabmem.neighbors.blocked",
    "tabmem.neighbors.symmetric",
    "tabmem.neighbors.index",
    "tabmem.memorization.authenticity",
    "tabmem.memorization.replicas",  # fits the index the audit searches with
    "tabmem.memorization.selfsearch",
)


def self_search_cache_dir() -> Path | None:
    """``<cache>/self-search`` (``$TABMEM_CACHE_DIR`` or ``~/.cache/tabmem``); ``None`` when
    ``$TABMEM_SELF_SEARCH_CACHE`` is ``off``."""
    if os.environ.get("TABMEM_SELF_SEARCH_CACHE", "").strip().lower() in ("off", "0", "no", "false"):
        return None
    return resolve_cache_dir() / "self-search"


def clear_memory_cache() -> None:
    """Forget every in-memory entry (the disk cache is left as it is)."""
    with _lock:
        _memory.clear()


def self_search_key(index: NeighborIndex, reference: pd.DataFrame | ValidatedTable) -> str | None:
    """The cache key of ``index``'s search of ``reference`` (the rows it was fitted on) against itself;
    ``None`` when the distance is a custom instance (never cached)."""
    if not isinstance(index.distance, str):
        return None
    parts = {
        "format": FORMAT,
        "tabmem": _version(),
        "source": _sources(),
        "table": table_fingerprint(reference),
        "schema": index.schema_.to_dict(),
        "distance": index.distance,
        "nan": index.nan,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def nearest_other_distances(
    index: NeighborIndex,
    reference: pd.DataFrame | ValidatedTable,
    *,
    cache_dir: Path | None | bool = True,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """:func:`~tabmem.memorization.authenticity.nearest_other_distance` of ``reference`` (the rows a fitted
    ``index`` was built on), from the cache when this table was searched before (module docstring).

    ``cache_dir``: ``True`` = :func:`self_search_cache_dir`, a path, or ``False``/``None`` = memory only.
    ``progress(n_rows)`` follows the search (called once with every row on a cache hit). A disk cache
    that cannot be read or written is skipped (the result is computed), never an error.
    """
    key = self_search_key(index, reference)
    if key is None:
        return nearest_other_distance(index, reference, progress=progress)
    folder = self_search_cache_dir() if cache_dir is True else (Path(cache_dir) if cache_dir else None)
    n = len(reference)
    with _lock:
        found = _memory.get(key)
    if found is None and folder is not None:
        found = _load(folder / f"{key}.npy", n)
    if found is not None:
        _remember(key, found)
        if progress:
            progress(n)
        return found.copy()
    loo = np.ascontiguousarray(nearest_other_distance(index, reference, progress=progress), dtype=np.float64)
    _remember(key, loo.copy())
    if folder is not None:
        _store(folder / f"{key}.npy", loo)
    return loo


def _remember(key: str, value: np.ndarray) -> None:
    with _lock:
        _memory[key] = value
        _memory.move_to_end(key)
        while len(_memory) > _MEMORY_ENTRIES:
            _memory.popitem(last=False)


def _load(path: Path, n: int) -> np.ndarray | None:
    """The stored array when it is a float64 vector of ``n`` values, else ``None`` (missing, damaged)."""
    try:
        with open(path, "rb") as fh:
            value = np.load(fh, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if value.dtype != np.float64 or value.shape != (n,):
        return None
    return value


def _store(path: Path, value: np.ndarray) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.save(fh, value, allow_pickle=False)

    try:
        atomic_write(path, write)
    except TabmemError:
        pass  # a read-only or full cache directory costs the reuse, not the audit


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tabmem")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without an install
        return "unknown"


def _sources() -> str:
    """SHA-256 of the source files the result depends on (computed once per process)."""
    if not _source_hash:
        import importlib

        h = hashlib.sha256()
        for name in _DEPENDS_ON:
            module = importlib.import_module(name)
            h.update(name.encode())
            h.update(Path(module.__file__ or "").read_bytes())
        _source_hash.append(h.hexdigest())
    return _source_hash[0]
