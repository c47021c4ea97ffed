"""tabmem._records: frozen records written key for key, optional and absent keys, nested records."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from typing import Any

import pytest

from tabmem._records import ABSENT, Absent, absent_or, from_dict, nested, optional, to_dict


@dataclass(frozen=True, kw_only=True)
class Inner:
    """A nested record."""

    a: int
    b: int | None = optional()

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Inner:
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class Outer:
    """A record with every kind of field."""

    first: str
    inner: Inner = nested(Inner, key="_inner")
    maybe: Inner | None = optional(Inner)
    nullable: int | None | Absent = absent_or()
    last: list[int]


def test_to_dict_writes_fields_in_order_and_leaves_absent_keys_out():
    r = Outer(first="x", inner=Inner(a=1), last=[1, 2])
    assert list(to_dict(r)) == ["first", "_inner", "last"]
    assert to_dict(r)["_inner"] == {"a": 1}
    full = Outer(first="x", inner=Inner(a=1, b=2), maybe=Inner(a=3), nullable=None, last=[])
    assert to_dict(full) == {"first": "x", "_inner": {"a": 1, "b": 2}, "maybe": {"a": 3}, "nullable": None, "last": []}
    assert list(to_dict(full)) == ["first", "_inner", "maybe", "nullable", "last"]


def test_from_dict_round_trips_and_ignores_unknown_keys():
    for r in (
        Outer(first="x", inner=Inner(a=1), last=[1]),
        Outer(first="y", inner=Inner(a=1, b=0), maybe=Inner(a=2), nullable=None, last=[]),
        Outer(first="z", inner=Inner(a=1), nullable=5, last=[]),
    ):
        assert from_dict(Outer, to_dict(r)) == r
        assert from_dict(Outer, {**to_dict(r), "extra": 1}) == r
    assert from_dict(Outer, {"first": "x", "_inner": {"a": 1}, "last": []}).nullable is ABSENT
    kept = Inner(a=4)
    assert from_dict(Outer, {"first": "x", "_inner": kept, "last": []}).inner is kept  # already a record


def test_a_missing_required_key_and_mutation_fail():
    with pytest.raises(KeyError, match="last"):
        from_dict(Outer, {"first": "x", "_inner": {"a": 1}})
    with pytest.raises(FrozenInstanceError):
        Inner(a=1).a = 2  # type: ignore[misc]
