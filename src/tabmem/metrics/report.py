"""Run every quality metric in one call and write ``summary.json`` plus breakdown CSVs.

``quality_report(real, synthetic, schema, test=..., holdout=...)`` validates the tables once
(structural problems raise a :class:`~tabmem.errors.SchemaError` naming the columns), then runs
shape, trend, mle, mmd, wasserstein, alpha_precision / beta_recall (one pass), c2st and
dcr_share. A metric that cannot run (no test table, no holdout, missing values where the metric
needs complete rows, ...) gets ``null`` in the summary and its reason in ``skipped``; it never
stops the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import jsonable, write_frame, write_json
from tabmem._records import from_dict, to_dict
from tabmem.data.schema import Schema
from tabmem.errors import SchemaError, TabmemError
from tabmem.metrics.alpha_beta import AlphaPrecision
from tabmem.metrics.base import MetricResult, prepare_tables, shared_preparation
from tabmem.metrics.dcr_share import DCRShare
from tabmem.metrics.detection import LogisticDetection
from tabmem.metrics.mle import MLE
from tabmem.metrics.mmd import MMD
from tabmem.metrics.shape import Shape
from tabmem.metrics.trend import MAX_PAIRS, Trend
from tabmem.metrics.wasserstein import Wasserstein

#: the metrics, in the order of ``summary.json`` (the first fields of :class:`QualitySummary`)
SUMMARY_KEYS = ("shape", "trend", "mle", "mmd", "wasserstein", "alpha_precision", "beta_recall", "c2st", "dcr_share")


@dataclass(frozen=True, kw_only=True)
class QualitySummary:
    """What ``summary.json`` of ``tabmem quality`` holds: one value (or None) per metric, then skipped/details/timings."""

    shape: float | None
    trend: float | None
    mle: float | None
    mmd: float | None
    wasserstein: float | None
    alpha_precision: float | None
    beta_recall: float | None
    c2st: float | None
    dcr_share: float | None
    skipped: dict[str, str]
    goals: dict[str, str]
    details: dict[str, dict[str, Any]]
    timings_s: dict[str, float]
    n_real: int
    n_synthetic: int
    config: dict[str, Any]
    schema: dict[str, Any] | None

    def value(self, metric: str) -> float | None:
        """The value of ``metric`` (one of :data:`SUMMARY_KEYS`), None when it did not run."""
        if metric not in SUMMARY_KEYS:
            raise KeyError(f"unknown metric {metric!r}; choose from {', '.join(SUMMARY_KEYS)}")
        return getattr(self, metric)

    @property
    def values(self) -> dict[str, float | None]:
        """``{metric: value}`` for every metric of :data:`SUMMARY_KEYS`."""
        return {k: getattr(self, k) for k in SUMMARY_KEYS}

    def to_dict(self) -> dict[str, Any]:
        """The object of ``summary.json``."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QualitySummary:
        """A ``summary.json`` of ``tabmem quality``."""
        return from_dict(cls, data)


@dataclass
class QualityReport:
    """Results of :func:`quality_report`: one :class:`MetricResult` per metric that ran."""

    results: dict[str, MetricResult]
    skipped: dict[str, str]
    timings: dict[str, float]
    n_real: int
    n_synthetic: int
    config: dict[str, Any] = field(default_factory=dict)
    schema: Schema | None = None

    def summary(self) -> QualitySummary:
        """The :class:`QualitySummary` (``.to_dict()``: ``summary.json``): one number (or None) per metric, then
        skipped/details/timings, as JSON values."""
        out: dict[str, Any] = {k: (self.results[k].value if k in self.results else None) for k in SUMMARY_KEYS}
        out["skipped"] = dict(self.skipped)
        out["goals"] = {k: r.goal for k, r in self.results.items()}
        out["details"] = {k: r.details for k, r in self.results.items()}
        out["timings_s"] = {k: round(v, 4) for k, v in self.timings.items()}
        out["n_real"], out["n_synthetic"] = self.n_real, self.n_synthetic
        out["config"] = self.config
        out["schema"] = self.schema.to_dict() if self.schema is not None else None
        return QualitySummary.from_dict(jsonable(out))

    def to_frame(self) -> pd.DataFrame:
        """One row per summary key: metric, value, goal, note (pairs scored, MLE reference, skip reason).

        Aggregates only, safe to print (used by ``tabmem quality`` and ``tabmem demo``).
        """
        rows = []
        for key in SUMMARY_KEYS:
            res = self.results.get(key)
            note = self.skipped.get(key, "")
            d = res.details if res is not None else {}
            if key == "trend" and d:
                note = f"{d['n_pairs_scored']}/{d['n_pairs_total']} pairs scored ({d['pair_filter']})"
            elif key == "mle" and d.get("real"):
                note = f"{d['score']}; trained on real: {d['real'][d['score']]:.4f}"
            elif key == "dcr_share" and d:
                note = f"ideal {d['ideal']:.3f}"
            elif key == "mmd" and d:
                note = f"{d['mode']}, {d['estimator']}"
            rows.append(
                {
                    "metric": key,
                    "value": None if res is None else res.value,
                    "goal": "" if res is None else res.goal,
                    "note": note,
                }
            )
        return pd.DataFrame(rows, columns=["metric", "value", "goal", "note"])

    def breakdowns(self) -> dict[str, pd.DataFrame]:
        return {k: r.breakdown for k, r in self.results.items() if r.breakdown is not None}

    def save(self, out_dir: str | Path) -> Path:
        """Write ``summary.json`` and ``<metric>_breakdown.csv`` files into ``out_dir``."""
        out = Path(out_dir)
        for name, table in self.breakdowns().items():
            write_frame(out / f"{name}_breakdown.csv", table)
        return write_json(out / "summary.json", self.summary().to_dict())


def quality_report(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    *,
    test: pd.DataFrame | None = None,
    holdout: pd.DataFrame | None = None,
    metrics: Sequence[str] | None = None,
    pair_filter: str = "all",
    trend_max_pairs: int | None = MAX_PAIRS,
    mle_grid: str | dict = "tabsyn",
    mmd_max_samples: int | None = 5000,
    random_state: int = 0,
    n_jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> QualityReport:
    """Compute the quality metrics of ``synthetic`` against the real training table ``real``.

    ``test`` (real rows never used for training) enables MLE; ``holdout`` (real rows not used
    for training, ideally as many as ``real``) enables the DCR share. ``metrics`` restricts the
    run to some of :data:`SUMMARY_KEYS`. ``trend_max_pairs`` is Trend's ``max_pairs`` (a table
    with more column pairs gets trend skipped, with the reason; ``None``: no cap). Same inputs and
    ``random_state`` give the same report.
    """
    wanted = list(SUMMARY_KEYS if metrics is None else metrics)
    unknown = [m for m in wanted if m not in SUMMARY_KEYS]
    if unknown:
        raise TabmemError(f"unknown metric(s) {unknown}; choose from {', '.join(SUMMARY_KEYS)}")

    runners: dict[str, Callable[[], MetricResult]] = {
        "shape": lambda: Shape().evaluate(real, synthetic, schema),
        "trend": lambda: Trend(pair_filter=pair_filter, max_pairs=trend_max_pairs).evaluate(  # type: ignore[arg-type]
            real, synthetic, schema
        ),
        "mle": lambda: MLE(grid=mle_grid, random_state=random_state, n_jobs=n_jobs).evaluate(
            real, synthetic, schema, test=test
        ),  # type: ignore[arg-type]
        "mmd": lambda: MMD(max_samples=mmd_max_samples, random_state=random_state).evaluate(real, synthetic, schema),
        "wasserstein": lambda: Wasserstein(random_state=random_state).evaluate(real, synthetic, schema),
        "alpha_precision": lambda: AlphaPrecision(n_jobs=n_jobs).evaluate(real, synthetic, schema),
        "c2st": lambda: LogisticDetection(random_state=random_state).evaluate(real, synthetic, schema),
        "dcr_share": lambda: DCRShare(n_jobs=n_jobs).evaluate(real, synthetic, schema, holdout=holdout),
    }
    results: dict[str, MetricResult] = {}
    skipped: dict[str, str] = {}
    timings: dict[str, float] = {}
    with shared_preparation():
        # structural checks once, up front (missing/extra columns, non-numeric values): these are fatal
        start = time.perf_counter()
        prepare_tables(real, synthetic, schema, nan="match", extra_tables={"test": test, "holdout": holdout})
        timings["validation"] = time.perf_counter() - start
        _run_all(wanted, runners, results, skipped, timings, real, synthetic, schema, test, holdout, n_jobs, progress)
    config = {
        "pair_filter": pair_filter,
        "mle_grid": mle_grid if isinstance(mle_grid, str) else "custom",
        "random_state": random_state,
    }
    return QualityReport(results, skipped, timings, len(real), len(synthetic), config, schema)


def _run_all(  # noqa: PLR0913
    wanted: list[str],
    runners: dict[str, Callable[[], MetricResult]],
    results: dict[str, MetricResult],
    skipped: dict[str, str],
    timings: dict[str, float],
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    test: pd.DataFrame | None,
    holdout: pd.DataFrame | None,
    n_jobs: int,
    progress: Callable[[str], None] | None,
) -> None:
    for name in SUMMARY_KEYS:
        if name not in wanted:
            continue
        if name == "beta_recall":
            if "alpha_precision" in results:
                ap = results["alpha_precision"]
                results["beta_recall"] = MetricResult(
                    "beta_recall",
                    ap.details["beta_recall"],
                    "maximize",
                    (0.0, 1.0),
                    ap.breakdown,
                    {"alpha_precision": ap.value},
                )
                timings["beta_recall"] = 0.0
                continue
            if "alpha_precision" in skipped:
                skipped["beta_recall"] = skipped["alpha_precision"]
                continue
            runner = lambda: _beta_only(real, synthetic, schema, n_jobs)  # noqa: E731
        elif name == "mle" and test is None:
            skipped[name] = "no real test table given (--test)"
            continue
        elif name == "mle" and schema.target is None:
            skipped[name] = "no target column given (--target)"
            continue
        elif name == "dcr_share" and holdout is None:
            skipped[name] = "no holdout table given (--holdout)"
            continue
        else:
            runner = runners[name]
        if progress:
            progress(name)
        start = time.perf_counter()
        try:
            result = runner()
            if result.value is None or not np.isfinite(result.value):
                raise TabmemError(f"{name} is not a finite number on these tables ({result.value})")
            results[name] = result
        except SchemaError as exc:
            skipped[name] = " ".join(str(exc).split())
        except TabmemError as exc:
            skipped[name] = str(exc)
        except (ValueError, np.linalg.LinAlgError) as exc:
            skipped[name] = f"{type(exc).__name__}: {exc}"
        timings[name] = time.perf_counter() - start


def _beta_only(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_jobs: int) -> MetricResult:
    from tabmem.metrics.alpha_beta import BetaRecall

    return BetaRecall(n_jobs=n_jobs).evaluate(real, synthetic, schema)
