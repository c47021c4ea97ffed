"""LevAtt: string-level membership inference (Ward et al. 2025, "When Tables Leak").

``score(x) = -min_{s in S} Lev(str(x), str(s))`` with ``str`` a row serializer fitted on the
synthetic table (the attacker's only data) and ``Lev`` the uniform-weight, integer Levenshtein
distance. The serialization is part of the attack's definition: ``serializer="canonical"``
(default: fixed per-column precision, stable tokens) or the paper's exact formats
(``paper_sft``, ``paper_icl``, ``paper_tlp``); see :mod:`tabmem.data.serialization`.
The minimum is exact (:mod:`tabmem.neighbors.levenshtein`).

Very long rows: the search cost grows with the row length (bit-parallel, ``ceil(len/64)``
machine words per character); rows longer than ``max_length`` characters raise a
:class:`~tabmem.errors.TabmemError` naming the table and row (``max_length=None`` disables it).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pandas as pd

from tabmem.attacks.base import Attack, register_attack
from tabmem.data.schema import Schema
from tabmem.data.serialization import RowSerializer, get_serializer
from tabmem.errors import TabmemError
from tabmem.neighbors.levenshtein import LevenshteinIndex, LevenshteinResult
from tabmem.neighbors.settings import progress_of


@register_attack("levatt")
class LevAtt(Attack):
    """Minus the smallest edit distance between the target's row string and any synthetic row string.

    Parameters
    ----------
    serializer:
        Registered format name (or a :class:`RowSerializer` instance, fitted here on the synthetic table).
    serializer_kwargs:
        Options of the format (e.g. ``{"delimiter": "|"}``).
    n_jobs:
        Worker processes of the exact search (the library's one ``n_jobs`` rule, :mod:`tabmem._checks`).
    max_length:
        Longest row string accepted (characters).
    """

    display_name = "LevAtt"
    short_name = "LevAtt"
    distance_description = "edit distance to the closest synthetic row string"
    run_options = ("serializer", "n_jobs")
    cost_unit = "edit_distance"

    def __init__(
        self,
        serializer: str | RowSerializer = "canonical",
        serializer_kwargs: dict[str, Any] | None = None,
        n_jobs: int | None = 2,
        max_length: int | None = 20_000,
    ) -> None:
        self.serializer = serializer
        self.serializer_kwargs = serializer_kwargs
        self.n_jobs = n_jobs
        self.max_length = max_length

    def _fit(self, synthetic: pd.DataFrame, schema: Schema, reference: pd.DataFrame | None) -> None:
        if isinstance(self.serializer, RowSerializer):
            ser = self.serializer
        else:
            ser = get_serializer(str(self.serializer), **(self.serializer_kwargs or {}))
        self.serializer_ = ser.fit(synthetic, schema)
        strings = self._serialize(synthetic, "synthetic")
        self.index_ = LevenshteinIndex(n_jobs=self.n_jobs).fit(strings)

    def _serialize(self, table: pd.DataFrame, name: str) -> list[str]:
        if "name" in inspect.signature(self.serializer_.serialize).parameters:
            strings = self.serializer_.serialize(table, name=name)  # type: ignore[call-arg]
        else:
            strings = self.serializer_.serialize(table)
        if self.max_length is not None:
            lengths = np.fromiter((len(s) for s in strings), dtype=np.int64, count=len(strings))
            long = np.flatnonzero(lengths > self.max_length)
            if long.size:
                raise TabmemError(
                    f"levatt: {long.size} {name} row(s) serialise to more than max_length={self.max_length} characters "
                    f"(first rows: {long[:5].tolist()}, longest {int(lengths.max())}); raise max_length or use a shorter format"
                )
        return strings

    def distances(self, targets: pd.DataFrame) -> LevenshteinResult:
        """Exact minimum edit distance of every target row string and the synthetic row reaching it."""
        if not hasattr(self, "index_"):
            raise TabmemError("LevAtt is not fitted: call fit(synthetic, schema) first")
        strings = self._serialize(targets, "targets")
        with progress_of(len(strings), len(self.index_.strings_)) as advance:
            return self.index_.query(strings, progress=advance)

    def _score(self, targets: pd.DataFrame) -> np.ndarray:
        return -self.distances(targets).distance.astype(np.float64)
