"""Common shape of every quality metric: a goal, bounds, a value and an optional breakdown.

Every metric is a small configured object (scikit-learn style: ``__init__`` stores keyword
arguments only) with

* ``name`` (the registry key used by configs, the CLI and ``summary.json``),
* ``goal`` (``"maximize"`` or ``"minimize"``) and ``bounds`` (``(low, high)``, ``inf`` allowed),
* ``needs`` (extra tables it requires: ``"test"`` for MLE, ``"holdout"`` for the DCR share),
* ``ideal`` when the best value is not a bound (the DCR share's 0.5),
* :meth:`Metric.evaluate` returning an immutable :class:`MetricResult` (value + per-column or
  per-pair breakdown), and :meth:`Metric.compute` returning the value alone.

Metrics are registered by name with :func:`register_metric` (an explicit registry, so the
conformance tests iterate over all of them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
import pandas as pd

from tabmem._io import jsonable
from tabmem._registry import Registry
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, validate_table
from tabmem.errors import SchemaError, TabmemError

Goal = Literal["maximize", "minimize"]


@dataclass(frozen=True)
class MetricResult:
    """Result of one metric: ``value`` (``None`` when it could not be computed), its goal and bounds.

    ``breakdown`` holds one row per column or column pair where the metric has one;
    ``details`` holds secondary numbers (e.g. the number of pairs scored, the MLE of the
    real-data reference model).
    """

    name: str
    value: float | None
    goal: Goal
    bounds: tuple[float, float]
    breakdown: pd.DataFrame | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (without the breakdown table)."""
        return {
            "name": self.name,
            "value": _json_number(self.value),
            "goal": self.goal,
            "bounds": [_json_number(b) for b in self.bounds],
            "details": jsonable(self.details),
        }


class Metric:
    """Base class: subclasses set ``name``, ``goal``, ``bounds`` and implement :meth:`evaluate`."""

    name: ClassVar[str] = ""
    goal: ClassVar[Goal] = "maximize"
    bounds: ClassVar[tuple[float, float]] = (0.0, 1.0)
    needs: ClassVar[tuple[str, ...]] = ()
    ideal: ClassVar[float | None] = None  # the best value when it is not a bound (DCR share: 0.5)

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        raise NotImplementedError

    def compute(self, real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, **tables: Any) -> float | None:
        """The metric's value alone."""
        return self.evaluate(real, synthetic, schema, **tables).value

    def compute_breakdown(
        self, real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, **tables: Any
    ) -> pd.DataFrame | None:
        """Per-column or per-pair table (``None`` for metrics without one)."""
        return self.evaluate(real, synthetic, schema, **tables).breakdown

    def get_params(self) -> dict[str, Any]:
        return dict(vars(self))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def _result(self, value: float | None, breakdown: pd.DataFrame | None = None, **details: Any) -> MetricResult:
        v = None if value is None or not np.isfinite(value) else float(value)
        return MetricResult(self.name, v, self.goal, self.bounds, breakdown, details)


#: name -> metric class; importing :mod:`tabmem.metrics` registers the built-in ones.
METRICS: Registry[type[Metric]] = Registry("metric", base=Metric, modules=("tabmem.metrics",))
M = TypeVar("M", bound=type[Metric])


def register_metric(cls: M) -> M:
    """Class decorator adding a metric to :data:`METRICS` under ``cls.name``."""
    if not cls.name:
        raise TabmemError(f"{cls.__name__} has no name")
    METRICS.add(cls.name, cls)
    return cls


def get_metric(name: str, **params: Any) -> Metric:
    """Instantiate the registered metric ``name`` with ``params``."""
    return METRICS.create(name, **params)


def list_metrics() -> list[str]:
    return METRICS.names()


# ------------------------------------------------------------------ shared data preparation
_CACHE: ContextVar[dict | None] = ContextVar("tabmem_metrics_preparation", default=None)


@contextmanager
def shared_preparation() -> Iterator[None]:
    """Within this block, each table is validated (and the encoder fitted) once for all metrics.

    Used by :func:`~tabmem.metrics.report.quality_report`; validation of large tables costs more
    than most metrics, so sharing it is what keeps a full report fast.
    """
    token = _CACHE.set({})
    try:
        yield
    finally:
        _CACHE.reset(token)


def _cached(key: tuple, table: object, make: Callable[[], object]) -> object:
    cache = _CACHE.get()
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = (table, make())  # holding ``table`` keeps its id() valid for the cache's life
    return cache[key][1]


def _validated(table: pd.DataFrame, schema: Schema, name: str) -> pd.DataFrame:
    return _cached(
        ("table", id(table), schema, name), table, lambda: validate_table(table, schema, name=name, nan="match")
    )  # type: ignore[return-value]


def _check_complete(clean: pd.DataFrame, schema: Schema, name: str) -> None:
    problems = []
    num = list(schema.numerical)
    if not num:
        return
    missing = np.isnan(clean[num].to_numpy(np.float64))  # one block: a per-column pass is slow on wide tables
    for j in np.flatnonzero(missing.any(axis=0)):
        c, rows = num[j], np.flatnonzero(missing[:, j])
        if rows.size:
            head = ", ".join(str(int(r)) for r in rows[:5]) + (", ..." if rows.size > 5 else "")
            problems.append(
                f"column {c!r} has {rows.size} missing value(s) (first rows: {head}); this metric needs complete rows"
            )
    if problems:
        raise SchemaError(name, problems)


@dataclass
class PreparedTables:
    """Validated real/synthetic tables; ``encoder`` (fitted on the real table) is built on first use."""

    real: pd.DataFrame
    synthetic: pd.DataFrame
    schema: Schema
    _raw_real: pd.DataFrame
    _encoder: TableEncoder | None = field(default=None, init=False, repr=False)

    @property
    def encoder(self) -> TableEncoder:
        if self._encoder is None:
            self._encoder = _cached(  # type: ignore[assignment]
                ("encoder", id(self._raw_real), self.schema),
                self._raw_real,
                lambda: TableEncoder(self.schema).fit(self.real, nan="match"),
            )
        return self._encoder  # type: ignore[return-value]


def prepare_tables(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    *,
    nan: Literal["error", "match"] = "error",
    extra_tables: dict[str, pd.DataFrame | None] | None = None,
) -> tuple[PreparedTables, dict[str, pd.DataFrame | None]]:
    """Validate ``real`` and ``synthetic`` (and optional extra tables) against ``schema``.

    Numerical NaN: ``nan="error"`` raises a :class:`~tabmem.errors.SchemaError` naming the
    column (metrics that need complete rows), ``"match"`` keeps NaN (metrics with a documented
    NaN rule). Categories unseen in the real table are kept (they are a fidelity defect the
    metrics must see, not an input error): they are simply values the real table lacks.
    """
    if nan not in ("error", "match"):
        raise TabmemError(f"nan must be 'error' or 'match', got {nan!r}")
    tables = {"real": real, "synthetic": synthetic, **(extra_tables or {})}
    clean: dict[str, pd.DataFrame | None] = {}
    for name, table in tables.items():
        if table is None:
            clean[name] = None
            continue
        clean[name] = _validated(table, schema, name)
        if nan == "error":
            _check_complete(clean[name], schema, name)  # type: ignore[arg-type]
    prep = PreparedTables(clean.pop("real"), clean.pop("synthetic"), schema, real)  # type: ignore[arg-type]
    return prep, clean


def _json_number(x: Any) -> Any:
    """A metric value or bound for JSON: infinite bounds are written as the strings "inf"/"-inf"."""
    if isinstance(x, (float, np.floating)) and np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return jsonable(x)
