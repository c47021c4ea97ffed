"""Typed keys of study files: each :class:`Field` checks one value and says what is wrong with it.

Study tables (``[study]``, ``[audit]``, ``[[generators]]``, ...) declare their keys as
``{name: Field(...)}``; :func:`check_table` rejects unknown keys (listing the allowed ones), fills
defaults and checks every value, raising :class:`~tabmem.errors.ParameterError` with one line
that names the key (the caller adds the file and the table).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tabmem.errors import ParameterError

__all__ = [
    "REQUIRED",
    "Field",
    "boolean",
    "check_table",
    "choice",
    "integer",
    "number",
    "string",
    "string_list",
    "table",
]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: default of a key that must be given
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Field:
    """One key: its default (``REQUIRED``: must be given) and a check ``(key, value) -> value``."""

    default: Any
    check: Callable[[str, Any], Any]
    help: str = ""


def check_table(values: Mapping[str, Any], fields: Mapping[str, Field], *, where: str = "") -> dict[str, Any]:
    """``values`` checked against ``fields``: unknown keys rejected, defaults filled, each value checked."""
    if not isinstance(values, Mapping):
        raise ParameterError(f"{where or 'value'} must be a table, got {values!r}")
    unknown = sorted(set(values) - set(fields))
    if unknown:
        allowed = ", ".join(sorted(fields)) or "none"
        raise ParameterError(f"{where}unknown key {unknown[0]!r} (allowed: {allowed})")
    out: dict[str, Any] = {}
    for key, field in fields.items():
        if key in values:
            try:
                out[key] = field.check(key, values[key])
            except ParameterError as exc:
                raise ParameterError(f"{where}{exc}") from None
        elif field.default is REQUIRED:
            raise ParameterError(f"{where}missing required key {key!r}")
        else:
            out[key] = field.default
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def integer(low: int | None = None, high: int | None = None, *, none: bool = False) -> Callable[[str, Any], Any]:
    """An integer in ``[low, high]`` (``none``: the string ``"none"`` or a missing value allowed)."""

    def check(key: str, v: Any) -> Any:
        if none and (v is None or v == "none"):
            return None
        if not _is_int(v) or (low is not None and v < low) or (high is not None and v > high):
            lo = "-inf" if low is None else low
            hi = "inf" if high is None else high
            raise ParameterError(f"{key} must be an integer in [{lo}, {hi}], got {v!r}")
        return int(v)

    return check


def number(low: float | None = None, high: float | None = None, *, low_open: bool = False) -> Callable[[str, Any], Any]:
    """A finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""

    def check(key: str, v: Any) -> Any:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if ok and low is not None:
            ok = v > low if low_open else v >= low
        if ok and high is not None:
            ok = v <= high
        if not ok:
            left = "(" if low_open or low is None else "["
            raise ParameterError(
                f"{key} must be a number in {left}{'-inf' if low is None else low}, {'inf' if high is None else high}], "
                f"got {v!r}"
            )
        return float(v) if isinstance(v, float) else v

    return check


def string(*, empty: bool = False) -> Callable[[str, Any], Any]:
    """A string (non-empty unless ``empty``)."""

    def check(key: str, v: Any) -> Any:
        if not isinstance(v, str) or (not empty and not v.strip()):
            raise ParameterError(f"{key} must be a {'' if empty else 'non-empty '}string, got {v!r}")
        return v

    return check


def choice(options: Sequence[str] | Callable[[], Sequence[str]]) -> Callable[[str, Any], Any]:
    """One of ``options`` (a list, or a function returning it: registries are read lazily)."""

    def check(key: str, v: Any) -> Any:
        opts = list(options() if callable(options) else options)
        if v not in opts:
            raise ParameterError(f"{key}: unknown value {v!r} (choose from {', '.join(map(str, opts))})")
        return v

    return check


def string_list(
    options: Sequence[str] | Callable[[], Sequence[str]] | None = None, *, empty: bool = False
) -> Callable[[str, Any], Any]:
    """A list of strings (a single string is a one-item list), each one of ``options`` when given."""

    def check(key: str, v: Any) -> Any:
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list) or not all(isinstance(x, str) and x for x in items):
            raise ParameterError(f"{key} must be a list of strings, got {v!r}")
        if not items and not empty:
            raise ParameterError(f"{key} must name at least one item")
        if options is not None:
            opts = list(options() if callable(options) else options)
            bad = [x for x in items if x not in opts]
            if bad:
                raise ParameterError(f"{key}: unknown value {bad[0]!r} (choose from {', '.join(map(str, opts))})")
        if len(set(items)) != len(items):
            raise ParameterError(f"{key} lists {next(x for x in items if items.count(x) > 1)!r} twice")
        return list(items)

    return check


def boolean(key: str, v: Any) -> bool:
    """``true`` or ``false``."""
    if not isinstance(v, bool):
        raise ParameterError(f"{key} must be true or false, got {v!r}")
    return v


def table(key: str, v: Any) -> dict[str, Any]:
    """A TOML table (keys and values passed on as they are; the component checks them)."""
    if not isinstance(v, Mapping):
        raise ParameterError(f"{key} must be a table ({{ key = value, ... }}), got {v!r}")
    return dict(v)
