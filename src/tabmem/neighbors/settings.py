"""Run-wide settings of the searches that a workflow does not pass down: working memory and progress.

Like the sharding (:mod:`tabmem.neighbors.shards`) and the thread limit, they are contexts: a
workflow or a command (``tabmem attack --memory-gb``) opens them around the work it owns, and the
attacks below (LevAtt's edit-distance search, the density attacks' KDE) read them, so that neither
their parameters nor the files that record them change.

* :func:`working_memory`: the bytes a search's blocks may hold at once, all workers together
  (``None``: each search's own default);
* :func:`search_progress`: ``factory(rows, reference_rows)`` opens a progress display of a search of
  ``rows`` query rows against ``reference_rows`` rows and yields its per-rows callback (or ``None``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar

from tabmem._checks import check_positive_int

__all__ = ["ProgressFactory", "current_memory", "progress_of", "search_progress", "working_memory"]

#: ``factory(rows, reference_rows)`` -> a context yielding the per-rows callback (or ``None``: no display)
ProgressFactory = Callable[[int, int], AbstractContextManager[Callable[[int], None] | None]]

_MEMORY: ContextVar[int | None] = ContextVar("tabmem_working_memory", default=None)
_PROGRESS: ContextVar[ProgressFactory | None] = ContextVar("tabmem_search_progress", default=None)


@contextlib.contextmanager
def working_memory(budget: int | None) -> Iterator[None]:
    """Searches in this block keep their blocks within ``budget`` bytes (``None``: their defaults)."""
    check_positive_int("working memory (bytes)", budget, allow_none=True)
    token = _MEMORY.set(budget)
    try:
        yield
    finally:
        _MEMORY.reset(token)


def current_memory() -> int | None:
    """The working-memory budget in effect here (bytes), if any."""
    return _MEMORY.get()


@contextlib.contextmanager
def search_progress(factory: ProgressFactory | None) -> Iterator[None]:
    """Searches in this block report their progress through ``factory`` (``None``: no display)."""
    token = _PROGRESS.set(factory)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


@contextlib.contextmanager
def progress_of(rows: int, reference_rows: int) -> Iterator[Callable[[int], None] | None]:
    """The per-rows callback of the progress display in effect for this search (``None``: none)."""
    factory = _PROGRESS.get()
    if factory is None:
        yield None
        return
    with factory(rows, reference_rows) as advance:
        yield advance
