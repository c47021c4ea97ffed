"""Exceptions raised by tabmem.

Every error a user can cause with bad input derives from :class:`TabmemError`, so the CLI
can print it as one clear message instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar


class TabmemError(Exception):
    """Base class of all user-facing tabmem errors."""


class SchemaError(TabmemError, ValueError):
    """A table does not match the schema it is checked against.

    ``problems`` lists every problem found (one line each), so a user can fix them all at once.
    """

    def __init__(self, table: str, problems: list[str]):
        self.table = table
        self.problems = list(problems)
        if len(self.problems) == 1:
            super().__init__(f"{table} table: {self.problems[0]}")
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            super().__init__(f"{table} table does not match the training schema:\n{lines}")


class DataUnavailableError(TabmemError, OSError):
    """A dataset is neither in the data directory nor downloadable (for example offline)."""


class ParameterError(TabmemError, ValueError):
    """An argument or option is outside its valid range, or names an unknown component."""


class NotFittedError(TabmemError, RuntimeError):
    """A method that needs a fitted object was called before ``fit``."""


class TabmemWarning(UserWarning):
    """A result that is valid but needs the user's attention (undefined ratios, few targets, ...)."""


# --------------------------------------------------------------------------- advice
#: set by the command line while a command runs: does this command have option FLAG (taking VALUE)?
_OPTION_LOOKUP: ContextVar[Callable[[str, str | None], bool] | None] = ContextVar("tabmem_option_lookup", default=None)


def suggest(parameter: str, flag: str, value: str | None = None) -> str | None:
    """How to ask for a setting in an error message, or ``None`` when the current command lacks it.

    Library code names its own parameter (``suggest("nan='drop'", "--nan", "drop")`` gives
    ``"nan='drop'"``); under the command line the flag is named instead (``"--nan drop"``), and
    only when the running command has that option and accepts that value, so that no message
    recommends a flag that does not exist. The caller words a fallback for ``None``.
    """
    lookup = _OPTION_LOOKUP.get()
    if lookup is None:
        return parameter
    if not lookup(flag, value):
        return None
    return flag if value is None else f"{flag} {value}"


def name_setting(parameter: str, flag: str, value: str | None = None) -> str:
    """:func:`suggest`, falling back to ``parameter`` where the running command lacks ``flag``.

    For messages that must name the setting either way (``f"needs a test table ({name_setting('test', '--test')})"``
    reads ``(test)`` in the library and ``(--test)`` under a command that has ``--test``).
    """
    return suggest(parameter, flag, value) or parameter


def set_option_lookup(lookup: Callable[[str, str | None], bool] | None) -> None:
    """Install (or remove) the command line's option lookup used by :func:`suggest`."""
    _OPTION_LOOKUP.set(lookup)
