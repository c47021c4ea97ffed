"""Fit once, query many: the exact k-nearest-neighbour index every feature-space component uses.

:class:`NeighborIndex` is built from a *reference* table (the training table for replica
detection, the synthetic table for DCR/MC, a holdout for DCR share, ...) and answers
``kneighbors(queries, k)`` exactly: the result equals a float64 brute force of the distance,
ties broken by the lowest reference index, never an approximation and never a subsample of the
reference side (:mod:`tabmem.neighbors.blocked` proves each answer). What is learned from the
reference (encoder statistics, encoded rows, norms, the fast-pass operands) is computed once in
:meth:`NeighborIndex.fit`.

``n_jobs`` follows the library's one rule (:mod:`tabmem._checks`): ``None`` = every CPU this
process may use (CPU affinity and cgroup quota honoured), a positive ``k`` = ``k`` worker threads,
``-1`` = all available CPUs, ``-k`` = all but ``k - 1`` (at least one); 0 and non-integers are
errors. Results do not depend on ``n_jobs`` or ``memory_budget`` (bit for bit).

Examples:

    >>> import pandas as pd
    >>> from tabmem.data.schema import Schema
    >>> ref = pd.DataFrame({"x": [0.0, 3.0, 10.0], "c": ["a", "b", "a"]})
    >>> index = NeighborIndex("gower").fit(ref, Schema(("x", "c"), ("x",), ("c",)))
    >>> idx, dist = index.kneighbors(pd.DataFrame({"x": [2.0], "c": ["b"]}), k=2)
    >>> idx.tolist(), dist.round(3).tolist()
    ([[1, 0]], [[0.05, 0.6]])
"""

from __future__ import annotations

import copy
from typing import Callable

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_n_jobs, check_positive_int
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import NanPolicy, Schema, UnseenPolicy, ValidatedTable, validate
from tabmem.errors import NotFittedError, ParameterError
from tabmem.neighbors.blocked import DEFAULT_MEMORY_BUDGET, kneighbors
from tabmem.neighbors.distances import DEFAULT_DISTANCE, DISTANCES, Distance, Queries, get_distance
from tabmem.neighbors.shards import sharded_kneighbors

__all__ = ["NeighborIndex"]

Table = pd.DataFrame | ValidatedTable


class NeighborIndex:
    """Exact k nearest reference rows under a mixed-type distance (module docstring).

    Parameters
    ----------
    distance:
        A registered distance name (``"gower"``, the default, ``"fang2024"``, ``"l2"``; see
        :mod:`tabmem.neighbors.distances`) or a :class:`Distance` instance (copied, then fitted;
        the instance passed is left untouched).
    n_jobs:
        Worker threads of the search (module docstring); validated in :meth:`fit`.
    memory_budget:
        Bytes of working memory of the search for all workers together (default 1 GiB),
        whatever the table sizes.
    nan:
        Missing numerical values in the reference and in query tables: ``"match"`` (default;
        the distance's documented rule) or ``"error"``.

    Attributes (after :meth:`fit`)
    ------------------------------
    distance_ : Distance
        The fitted distance (exposes ``block`` for exact range counts, see
        :mod:`tabmem.attacks.montecarlo`).
    encoder_ : TableEncoder
        Statistics of the reference table (categories, means, ranges) used to encode queries.
    schema_ : Schema
    n_reference_ : int
    """

    def __init__(
        self,
        distance: str | Distance = DEFAULT_DISTANCE,
        *,
        n_jobs: int | None = None,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        nan: NanPolicy = "match",
    ) -> None:
        self.distance = distance
        self.n_jobs = n_jobs
        self.memory_budget = memory_budget
        self.nan = nan

    # ------------------------------------------------------------------- fit
    def fit(
        self,
        reference: Table | None,
        schema: Schema | None = None,
        *,
        encoder: TableEncoder | None = None,
        clean: pd.DataFrame | None = None,
    ) -> "NeighborIndex":
        """Index ``reference`` (a DataFrame, or a :class:`ValidatedTable` that is not validated again).

        ``schema`` defaults to the validated table's schema, else it is inferred. A fitted
        ``encoder`` (statistics of another table, e.g. the training table) may be given with the
        validated ``clean`` reference frame, as :meth:`Distance.fit` accepts.
        """
        self._check_params()
        if encoder is not None:
            if clean is None:
                if reference is None:
                    raise ParameterError("NeighborIndex.fit: give the reference table (or clean=) with encoder=")
                clean = encoder.validate(reference, name="reference", nan=self.nan)
            self.encoder_ = encoder
            self.schema_ = encoder.schema
        else:
            if reference is None:
                raise ParameterError("NeighborIndex.fit: reference table is required")
            if schema is None:
                schema = reference.schema if isinstance(reference, ValidatedTable) else Schema.infer(reference)
            checked = validate(reference, schema, name="reference", nan=self.nan)
            self.encoder_ = TableEncoder(schema).fit(checked, nan=self.nan)
            self.schema_ = schema
            clean = checked.data
        dist = get_distance(self.distance) if isinstance(self.distance, str) else copy.copy(self.distance)
        self.distance_: Distance = dist.fit(encoder=self.encoder_, clean=clean)
        self.n_reference_ = self.distance_.n_ref
        return self

    def _check_params(self) -> None:
        if isinstance(self.distance, str):
            DISTANCES.get(self.distance)  # unknown names raise, listing the known ones
        elif not isinstance(self.distance, Distance):
            raise ParameterError(
                f"distance must be a registered name ({', '.join(DISTANCES.names())}) or a Distance, "
                f"got {self.distance!r}"
            )
        check_n_jobs(self.n_jobs)
        check_positive_int("memory_budget", self.memory_budget)
        check_choice("nan", self.nan, ("match", "error"))

    def _check_fitted(self) -> None:
        if not hasattr(self, "distance_"):
            raise NotFittedError("NeighborIndex is not fitted: call fit(reference) first")

    # ----------------------------------------------------------------- query
    def validate(
        self,
        queries: Table,
        *,
        name: str = "queries",
        nan: NanPolicy | None = None,
        unseen: UnseenPolicy = "mismatch",
        extra: str = "ignore",
    ) -> ValidatedTable:
        """``queries`` checked against the reference's schema and categories (once).

        A category absent from the reference mismatches every reference row by default
        (``unseen="mismatch"``); ``nan`` defaults to the index's policy.
        """
        self._check_fitted()
        enc = self.encoder_
        return validate(
            queries,
            enc.schema,
            name=name,
            categories=enc.category_sets(),
            nan=nan or self.nan,
            unseen=unseen,
            extra=extra,  # type: ignore[arg-type]
        )

    def prepare(self, queries: Table | Queries) -> Queries:
        """Query rows encoded for the fitted distance (validating a DataFrame first)."""
        self._check_fitted()
        if isinstance(queries, Queries):
            return queries
        if isinstance(queries, ValidatedTable) and queries.schema == self.schema_:
            data = queries.data  # validated already, under its own policies: never again
        else:
            data = self.validate(queries).data
        return self.distance_.prepare(data)

    def kneighbors(
        self,
        queries: Table | Queries,
        k: int = 2,
        *,
        progress: Callable[[int], None] | None = None,
        block_rows: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``k`` nearest reference rows of every query row.

        Returns ``(indices, distances)``, both ``(n_queries, k)``, sorted by distance with ties
        broken by the lower reference index; with fewer than ``k`` reference rows the missing
        columns hold index -1 and distance ``inf``. ``progress(n_rows_done)`` is called after
        each block of query rows. ``block_rows`` overrides the block size that ``memory_budget``
        gives (for tests and tuning; the result does not depend on it). Inside
        :func:`tabmem.neighbors.shards.sharding` the query rows are searched in shards on its
        executor (the same result).
        """
        check_positive_int("block_rows", block_rows, allow_none=True)
        q = self.prepare(queries)
        found = sharded_kneighbors(self, q, k, block_rows=block_rows, progress=progress)  # under sharding()
        if found is not None:
            return found
        return kneighbors(
            self.distance_,
            q,
            k,
            block_rows=block_rows,
            n_jobs=self.n_jobs,
            memory_budget=self.memory_budget,
            progress=progress,
        )

    def __repr__(self) -> str:
        fitted = f", n_reference_={self.n_reference_}" if hasattr(self, "n_reference_") else ""
        return f"NeighborIndex(distance={self.distance!r}, n_jobs={self.n_jobs!r}, nan={self.nan!r}{fitted})"
