"""Attack base class and registry (no-box membership inference on synthetic tables).

Every attack is a small estimator: ``fit(synthetic, schema, reference=None)`` learns from the
synthetic table (and, for DOMIAS, a reference table of real non-member rows), then
``score(targets)`` returns one float per target row, **higher = more likely a member**.
Constructor arguments are configuration only; learned state ends in ``_``.
"""

from __future__ import annotations

from typing import Callable, ClassVar, TypeVar

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError


class Attack:
    """Base class of membership-inference attacks (see module docstring)."""

    name: ClassVar[str] = "base"
    needs_reference: ClassVar[bool] = False

    def fit(self, synthetic: pd.DataFrame, schema: Schema, reference: pd.DataFrame | None = None) -> "Attack":
        if not isinstance(schema, Schema):
            raise TabmemError(f"{type(self).__name__}.fit: schema must be a tabmem Schema, got {type(schema).__name__}")
        if not isinstance(synthetic, pd.DataFrame):
            raise TabmemError(
                f"{type(self).__name__}.fit: synthetic must be a pandas DataFrame, got {type(synthetic).__name__}"
            )
        if len(synthetic) == 0:
            raise TabmemError(f"{self.name}: the synthetic table is empty (0 rows)")
        if self.needs_reference and reference is None:
            raise TabmemError(f"{self.name} needs a reference table of real non-member rows (--reference)")
        if reference is not None and len(reference) == 0:
            raise TabmemError(f"{self.name}: the reference table is empty (0 rows)")
        self.schema_ = schema
        self._fit(synthetic, schema, reference)
        return self

    def _fit(self, synthetic: pd.DataFrame, schema: Schema, reference: pd.DataFrame | None) -> None:
        raise NotImplementedError

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """One membership score per row of ``targets`` (higher = more likely a member)."""
        if not hasattr(self, "schema_"):
            raise TabmemError(f"{type(self).__name__} is not fitted: call fit(synthetic, schema) first")
        if not isinstance(targets, pd.DataFrame):
            raise TabmemError(f"{self.name}.score: targets must be a pandas DataFrame, got {type(targets).__name__}")
        if len(targets) == 0:
            return np.zeros(0, dtype=np.float64)
        out = np.asarray(self._score(targets), dtype=np.float64)
        return out

    def _score(self, targets: pd.DataFrame) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_") and not k.startswith("_"))
        return f"{type(self).__name__}({params})"


A = TypeVar("A", bound=type[Attack])

#: name -> attack class; filled by :func:`register_attack`.
ATTACKS: dict[str, type[Attack]] = {}


def register_attack(name: str) -> Callable[[A], A]:
    """Class decorator adding an :class:`Attack` subclass to :data:`ATTACKS` under ``name``."""

    def decorate(cls: A) -> A:
        if not (isinstance(cls, type) and issubclass(cls, Attack)):
            raise TypeError(f"register_attack({name!r}): {cls!r} is not an Attack subclass")
        existing = ATTACKS.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise ValueError(f"attack name {name!r} is already registered by {existing.__qualname__}")
        cls.name = name
        ATTACKS[name] = cls
        return cls

    return decorate


def get_attack(name: str, **kwargs: object) -> Attack:
    """A new, unfitted attack by registry name; unknown names list the known ones."""
    try:
        cls = ATTACKS[name]
    except KeyError:
        raise TabmemError(f"unknown attack {name!r}; available: {', '.join(sorted(ATTACKS))}") from None
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise TabmemError(f"attack {name!r}: bad argument ({exc})") from None
