"""What a shadow-model attack is given: the synthetic tables of S shadow generators and which targets each saw.

Shadow-model attacks (``lira``, ``groundhog``) compare the released synthetic table with tables
that generators trained *with* and *without* each target produced. Training those generators is
the experiments layer's job (:mod:`tabmem.runs.shadows`: random halves of a population,
any registered generator, cached and resumable); the attacks only see a :class:`ShadowSet`, so
this layer stays pure statistics and never imports a generator.

``membership[s, t]`` is True when target ``t`` was in the training table of shadow ``s``. The
*online* design places every target in about half of the shadows; the *offline* design trains
shadows on population rows only (``membership`` all False), for when targets cannot be placed
in shadows. Targets are identified by the hashes of their validated rows (:func:`row_keys`), so
an attack can check that it scores the targets the shadows were planned for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema, ValidatedTable, validate
from tabmem.errors import ParameterError

__all__ = ["ShadowSet", "row_keys"]

Table = pd.DataFrame | ValidatedTable


def row_keys(table: Table) -> np.ndarray:
    """64-bit hash of every row (of the clean frame for a validated table); used to match rows, never shown."""
    frame = table.data if isinstance(table, ValidatedTable) else table
    return pd.util.hash_pandas_object(frame.reset_index(drop=True), index=False).to_numpy(np.uint64)


@dataclass(frozen=True, eq=False)
class ShadowSet:
    """Synthetic tables of ``S`` shadow generators and the targets each was trained on.

    Parameters
    ----------
    synthetic:
        One synthetic table per shadow (same schema as the released table).
    membership:
        ``(S, n_targets)`` booleans: target ``t`` was in shadow ``s``'s training table.
    target_keys:
        :func:`row_keys` of the targets (members followed by non-members), in the order of
        ``membership``'s columns.
    design:
        ``"online"`` (targets in about half of the shadows) or ``"offline"`` (in none).
    meta:
        How the shadows were made (generator, preset, seeds...), for the report.
    """

    synthetic: tuple[Table, ...]
    membership: np.ndarray
    target_keys: np.ndarray
    design: str = "online"
    meta: dict[str, Any] = field(default_factory=dict)
    #: statistics computed by the attacks on these shadows (key -> arrays), so variants share them
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        m = np.asarray(self.membership)
        if m.ndim != 2 or m.dtype != bool:
            raise ParameterError(f"ShadowSet: membership must be a 2-d boolean array, got {m.dtype} {m.shape}")
        if m.shape[0] != len(self.synthetic):
            raise ParameterError(f"ShadowSet: {len(self.synthetic)} synthetic tables for {m.shape[0]} membership rows")
        if m.shape[1] != len(self.target_keys):
            raise ParameterError(f"ShadowSet: membership has {m.shape[1]} columns for {len(self.target_keys)} targets")
        if self.design not in ("online", "offline"):
            raise ParameterError(f"ShadowSet: design must be 'online' or 'offline', got {self.design!r}")
        if self.design == "offline" and m.any():
            raise ParameterError("ShadowSet: an offline shadow set cannot hold targets in its shadows")

    @property
    def n_shadows(self) -> int:
        return len(self.synthetic)

    @property
    def n_targets(self) -> int:
        return len(self.target_keys)

    def validated(self, schema: Schema) -> tuple[ValidatedTable, ...]:
        """The shadows' synthetic tables validated against ``schema``, once (cached): every attack on
        this set reuses them."""
        key = "validated:" + schema.to_json()
        if key not in self.cache:
            self.cache[key] = tuple(
                validate(t, schema, name=f"shadow {i}", nan="match", extra="ignore")
                for i, t in enumerate(self.synthetic)
            )
        return self.cache[key]

    def in_counts(self) -> np.ndarray:
        """Number of shadows trained with each target."""
        return self.membership.sum(axis=0)

    def check_targets(self, targets: Table, schema: Schema, attack: str) -> None:
        """Raise unless ``targets`` are the rows (and the order) the shadows were planned for.

        Rows are compared after validation against ``schema`` (column order and dtypes do not matter).
        """
        keys = row_keys(validate(targets, schema, name="targets", nan="match", extra="ignore"))
        if keys.shape != self.target_keys.shape or not np.array_equal(keys, self.target_keys):
            raise ParameterError(
                f"{attack}: the targets are not those the shadows were trained for ({len(keys)} rows given, "
                f"{self.n_targets} planned); score the members followed by the non-members the shadows were made with"
            )
