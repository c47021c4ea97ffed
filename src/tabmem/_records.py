"""Frozen result records that write themselves as JSON objects, key for key.

A summary record is a frozen dataclass whose fields are the keys of the ``summary.json`` it
stands for, in the file's order. :func:`to_dict` writes the fields in declaration order;
fields made with :func:`optional` are left out when they are ``None`` (a key the file does not
hold, as opposed to a JSON ``null``), and any field whose value is :data:`ABSENT` is left out
(for keys that may hold ``null`` or be missing); a field whose value has ``to_dict`` is written
through it.
:func:`from_dict` is the inverse for readers: absent optional keys become ``None``, nested
records (``nested=`` of :func:`optional` / :func:`nested`) are read by their own ``from_dict``
(a value that already is such a record is kept),
and keys the record does not know are ignored (an older or newer writer's extras).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, field, fields
from enum import Enum
from typing import Any, TypeVar

__all__ = ["ABSENT", "Absent", "absent_or", "from_dict", "nested", "optional", "to_dict"]

T = TypeVar("T")


class Absent(Enum):
    """The type of :data:`ABSENT`."""

    ABSENT = "absent"


#: a key the JSON object does not hold (distinct from ``None``, a JSON null)
ABSENT = Absent.ABSENT


def optional(nested: type | None = None, key: str | None = None) -> Any:
    """A field that is absent from the JSON when ``None`` (``nested``: a record class read by its ``from_dict``)."""
    return field(default=None, metadata={"omit_none": True, "nested": nested, "key": key})


def absent_or(nested: type | None = None) -> Any:
    """A field that may be missing (default :data:`ABSENT`) or hold any value, ``None`` included."""
    return field(default=ABSENT, metadata={"nested": nested})


def nested(cls: type, key: str | None = None) -> Any:
    """A required field holding a record of ``cls`` (written by its ``to_dict``, read by its ``from_dict``)."""
    return field(metadata={"nested": cls, "key": key})


def _key(f: Field) -> str:
    return f.metadata.get("key") or f.name


def to_dict(record: Any) -> dict[str, Any]:
    """The record's fields as a JSON object, in declaration order (module docstring)."""
    out: dict[str, Any] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if value is ABSENT or (value is None and f.metadata.get("omit_none")):
            continue
        out[_key(f)] = value.to_dict() if hasattr(value, "to_dict") and not isinstance(value, Mapping) else value
    return out


def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """A record of ``cls`` from its JSON object (module docstring); a missing required key raises KeyError."""
    kwargs: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        key = _key(f)
        if key not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise KeyError(f"{cls.__name__}: the summary has no {key!r}")
            continue
        value = data[key]
        sub = f.metadata.get("nested")
        if sub is not None and value is not None and not isinstance(value, sub):
            value = sub.from_dict(value)
        kwargs[f.name] = value
    return cls(**kwargs)
