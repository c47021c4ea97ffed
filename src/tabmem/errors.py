"""Exceptions raised by tabmem.

Every error a user can cause with bad input derives from :class:`TabmemError`, so the CLI
can print it as one clear message instead of a traceback.
"""

from __future__ import annotations


class TabmemError(Exception):
    """Base class of all user-facing tabmem errors."""


class SchemaError(TabmemError, ValueError):
    """A table does not match the schema it is checked against.

    ``problems`` lists every problem found (one line each), so a user can fix them all at once.
    """

    def __init__(self, table: str, problems: list[str]):
        self.table = table
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{table} table does not match the training schema:\n{lines}")


class DataUnavailableError(TabmemError, OSError):
    """A dataset is neither in the data directory nor downloadable (for example offline)."""


class ParameterError(TabmemError, ValueError):
    """An argument or option is outside its valid range, or names an unknown component."""


class NotFittedError(TabmemError, RuntimeError):
    """A method that needs a fitted object was called before ``fit``."""
