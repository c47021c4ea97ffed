"""Replica detection: is a synthetic row a copy of its nearest training row?

A synthetic row x is a *replica* (memorized) when ``r(x) = d(x, NN1) / d(x, NN2) < threshold``
(1/3 in the papers: Yoon et al. 2023, Gu et al. 2023, Fang et al. 2024), with NN1/NN2 its
nearest and second-nearest training rows. ``d1 = d2 = 0`` gives a NaN ratio that is *not* a
replica (faithful to the papers' code; exact duplicates inside the training table can never be
flagged that way).

:class:`ReplicaDetector` is fitted once on the training table (all training-only work is done
there) and then scores any number of synthetic tables, e.g. at every training epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from tabmem._checks import check_n_jobs, check_number, check_positive_int
from tabmem._io import write_frame, write_json
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import NanPolicy, Schema, UnseenPolicy, ValidatedTable, validate
from tabmem.errors import NotFittedError
from tabmem.neighbors.blocked import DEFAULT_MEMORY_BUDGET
from tabmem.neighbors.distances import Distance
from tabmem.neighbors.index import NeighborIndex

TRAPZ10_GRID = np.linspace(0.0, 1.0, 10)
#: resamples and confidence of the bootstrap intervals in :meth:`ReplicaResult.summary`
N_BOOTSTRAP = 2000
CONFIDENCE = 0.95


def memorization_rate(ratio: np.ndarray, threshold: float = 1 / 3) -> float:
    """Fraction of rows with ``ratio < threshold`` (NaN ratios are not replicas)."""
    ratio = np.asarray(ratio, dtype=float)
    if ratio.size == 0:
        return float("nan")
    with np.errstate(invalid="ignore"):
        return float(np.mean(ratio < threshold))


def mem_auc_exact(ratio: np.ndarray) -> float:
    """Exact area under the memorization-rate curve over thresholds in [0, 1]: ``1 - mean(r)``.

    Since ``integral_0^1 [r < t] dt = 1 - r`` for r in [0, 1]; NaN ratios contribute 0.
    """
    ratio = np.asarray(ratio, dtype=float)
    if ratio.size == 0:
        return float("nan")
    return float(np.mean(np.where(np.isnan(ratio), 0.0, 1.0 - np.clip(ratio, 0.0, 1.0))))


def mem_auc_trapz10(ratio: np.ndarray) -> float:
    """The papers' Mem-AUC: trapezoid over ``np.linspace(0, 1, 10)`` of the memorization rate."""
    ratio = np.asarray(ratio, dtype=float)
    if ratio.size == 0:
        return float("nan")
    rates = [memorization_rate(ratio, t) for t in TRAPZ10_GRID]
    return float(np.trapezoid(rates, TRAPZ10_GRID))


def gini(values: np.ndarray) -> float:
    """Gini coefficient of non-negative values (0 = equal, -> 1 = concentrated); NaN if all 0."""
    v = np.sort(np.asarray(values, dtype=float))
    n, total = v.size, v.sum()
    if n == 0 or total == 0:
        return float("nan")
    cum = np.cumsum(v)
    return float((n + 1 - 2 * (cum.sum() / total)) / n)


def rate_bootstrap(
    flags: np.ndarray, n_bootstrap: int = N_BOOTSTRAP, random_state: int | np.random.Generator | None = 0
) -> np.ndarray:
    """``n_bootstrap`` percentile-bootstrap replicates of the mean of the 0/1 ``flags``.

    Resampling n rows with replacement from 0/1 values and taking the mean has exactly the
    distribution Binomial(n, mean(flags)) / n, so the replicates are drawn from it directly
    (O(n_bootstrap), whatever n; tested against the row-resampling loop).
    """
    flags = np.asarray(flags, dtype=bool)
    n = flags.size
    if n == 0:
        return np.full(n_bootstrap, np.nan)
    rng = np.random.default_rng(random_state)
    return rng.binomial(n, flags.mean(), size=n_bootstrap) / n


def percentile_interval(replicates: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The (1 - confidence)/2 and (1 + confidence)/2 quantiles of bootstrap replicates (NaN when empty)."""
    r = np.asarray(replicates, dtype=float)
    if r.size == 0 or np.isnan(r).any():
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(r, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (float(lo), float(hi))


@dataclass
class ReplicaResult:
    """Per-synthetic-row neighbours and ratios, with the aggregates derived from them."""

    table: pd.DataFrame  # synthetic_row, nn1, nn2, d1, d2, ratio, is_replica
    n_train: int
    threshold: float
    distance: str
    holdout: "ReplicaResult | None" = field(default=None, repr=False)

    # ---------------------------------------------------------------- dataset
    @property
    def ratio(self) -> np.ndarray:
        return self.table["ratio"].to_numpy()

    @property
    def n_synthetic(self) -> int:
        return len(self.table)

    @property
    def memorization_rate(self) -> float:
        return memorization_rate(self.ratio, self.threshold)

    @property
    def mem_auc(self) -> float:
        return mem_auc_exact(self.ratio)

    @property
    def mem_auc_trapz10(self) -> float:
        return mem_auc_trapz10(self.ratio)

    # ------------------------------------------------------------- per record
    @property
    def record_counts(self) -> np.ndarray:
        """Replicas attributed to each training record (via NN1), length ``n_train``."""
        t = self.table
        nn1 = t["nn1"].to_numpy()[t["is_replica"].to_numpy()]
        return np.bincount(nn1, minlength=self.n_train).astype(np.int64)

    @property
    def record_mem_auc(self) -> np.ndarray:
        """Each record's share of Mem-AUC: sum of (1 - r)/|G| over synthetic rows whose NN1 it is."""
        t = self.table
        r = t["ratio"].to_numpy()
        w = np.where(np.isnan(r), 0.0, 1.0 - np.clip(r, 0.0, 1.0)) / max(len(t), 1)
        return np.bincount(t["nn1"].to_numpy(), weights=w, minlength=self.n_train)

    def records(self) -> pd.DataFrame:
        """One row per training record: train_row, replica_count, mem_auc."""
        return pd.DataFrame(
            {"train_row": np.arange(self.n_train), "replica_count": self.record_counts, "mem_auc": self.record_mem_auc}
        )

    def heavy_tail(self) -> dict[str, float]:
        """How concentrated replicas are on few records: top-1%/10% shares and Gini."""
        counts = np.sort(self.record_counts)[::-1]
        total = counts.sum()
        out = {"n_records_with_replicas": int((counts > 0).sum())}
        for q in (0.01, 0.10):
            k = max(1, int(np.ceil(q * self.n_train)))
            out[f"top_{int(q * 100)}pct_share"] = float(counts[:k].sum() / total) if total else float("nan")
        out["gini"] = gini(counts)
        return out

    def summary(
        self, *, n_bootstrap: int = N_BOOTSTRAP, confidence: float = CONFIDENCE, random_state: int = 0
    ) -> dict[str, object]:
        """The headline numbers (the keys of ``summary.json``).

        ``*_ci`` keys are percentile-bootstrap intervals (``confidence``, ``n_bootstrap``
        resamples): synthetic and holdout rows are resampled independently, and the excess
        memorization's interval is that of the difference of the two resampled rates. Same
        ``random_state``, same intervals.
        """
        check_positive_int("n_bootstrap", n_bootstrap)
        check_number("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
        flags = self.table["is_replica"].to_numpy(dtype=bool)
        seeds = np.random.SeedSequence(random_state).spawn(2)
        boot = rate_bootstrap(flags, n_bootstrap, np.random.default_rng(seeds[0]))
        s: dict[str, object] = {
            "n_train": self.n_train,
            "n_synthetic": self.n_synthetic,
            "distance": self.distance,
            "threshold": self.threshold,
            "memorization_rate": self.memorization_rate,
            "mem_auc": self.mem_auc,
            "mem_auc_trapz10": self.mem_auc_trapz10,
            "n_replicas": int(self.table["is_replica"].sum()),
            "n_nan_ratio": int(self.table["ratio"].isna().sum()),
            "heavy_tail": self.heavy_tail(),
            "memorization_rate_ci": list(percentile_interval(boot, confidence)),
            "confidence": confidence,
            "n_bootstrap": n_bootstrap,
        }
        if self.holdout is not None:
            hold_flags = self.holdout.table["is_replica"].to_numpy(dtype=bool)
            hold_boot = rate_bootstrap(hold_flags, n_bootstrap, np.random.default_rng(seeds[1]))
            s["n_holdout"] = self.holdout.n_synthetic
            s["holdout_memorization_rate"] = self.holdout.memorization_rate
            s["holdout_mem_auc"] = self.holdout.mem_auc
            s["excess_memorization"] = self.memorization_rate - self.holdout.memorization_rate
            s["holdout_memorization_rate_ci"] = list(percentile_interval(hold_boot, confidence))
            s["excess_memorization_ci"] = list(percentile_interval(boot - hold_boot, confidence))
        return s

    def save(self, out_dir: str | Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write the ``tabmem audit`` layout into ``out_dir``; returns the summary.

        ``summary.json`` (:meth:`summary` plus ``extra``), ``replicas.csv`` (one row per synthetic
        row) and ``records.csv`` (one row per training record): positions and counts, no values.
        """
        out = Path(out_dir)
        summary = self.summary()
        if extra:
            summary.update(extra)
        write_json(out / "summary.json", summary)
        write_frame(out / "replicas.csv", self.table)
        write_frame(out / "records.csv", self.records())
        return summary


class ReplicaDetector:
    """Fit once on the training table, then score synthetic tables for replicas.

    Parameters
    ----------
    distance:
        ``"fang2024"`` (default: reproduces the papers' numbers), ``"gower"`` or ``"l2"``; see
        :mod:`tabmem.neighbors.distances`.
    threshold:
        A synthetic row is a replica when ``d1/d2 < threshold``.
    nan:
        Missing numerical values in the training and scored tables: ``"error"`` (default),
        ``"drop"`` (scored tables only: drop those rows, ids stay file positions) or ``"match"``.
    memory_budget:
        Bytes of working memory for the blocked search (default 1 GiB), whatever the sizes.
    n_jobs:
        Worker threads of the search: ``None`` (default) every CPU this process may use,
        ``k`` workers, ``-1`` all, ``-k`` all but ``k - 1`` (the library's one rule,
        :class:`~tabmem.neighbors.NeighborIndex`).
    """

    def __init__(
        self,
        distance: str = "fang2024",
        threshold: float = 1 / 3,
        *,
        nan: NanPolicy = "error",
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        n_jobs: int | None = None,
    ) -> None:
        self.distance = distance
        self.threshold = threshold
        self.nan = nan
        self.memory_budget = memory_budget
        self.n_jobs = n_jobs

    def fit(self, train: pd.DataFrame | ValidatedTable, schema: Schema | None = None) -> "ReplicaDetector":
        """Learn everything that depends only on the training table (encodings, norms)."""
        check_number("threshold", self.threshold, low=0.0, high=1.0, low_open=True)
        check_n_jobs(self.n_jobs)
        check_positive_int("memory_budget", self.memory_budget)
        if schema is None:
            schema = train.schema if isinstance(train, ValidatedTable) else Schema.infer(train)
        self.schema_ = schema
        fit_nan: NanPolicy = "match" if self.nan in ("match", "drop") else "error"
        checked = validate(train, schema, name="training", nan=fit_nan)
        self.encoder_ = TableEncoder(schema).fit(checked, nan=fit_nan)
        self.index_ = NeighborIndex(
            self.distance, n_jobs=self.n_jobs, memory_budget=self.memory_budget, nan=fit_nan
        ).fit(checked, encoder=self.encoder_, clean=checked.data)
        self.distance_: Distance = self.index_.distance_
        self.n_train_ = len(checked)
        return self

    def score(
        self,
        synthetic: pd.DataFrame | ValidatedTable,
        *,
        holdout: pd.DataFrame | ValidatedTable | None = None,
        nan: NanPolicy | None = None,
        unseen: UnseenPolicy = "error",
        extra: str = "error",
        name: str = "synthetic",
        progress: Callable[[int], None] | None = None,
    ) -> ReplicaResult:
        """Nearest/second-nearest training rows and ratios for every synthetic row.

        ``holdout`` (real rows never trained on) is scored the same way; the result then also
        reports the holdout memorization rate and the excess memorization.
        """
        if not hasattr(self, "distance_"):
            raise NotFittedError("ReplicaDetector is not fitted: call fit(train, schema) first")
        nan = nan or self.nan
        clean = self.index_.validate(synthetic, name=name, nan=nan, unseen=unseen, extra=extra)
        idx, dist = self.index_.kneighbors(clean, k=2, progress=progress)
        d1, d2 = dist[:, 0], dist[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = d1 / d2
        ratio = np.where((d1 == 0) & (d2 == 0), np.nan, ratio)
        if self.n_train_ < 2:
            ratio = np.full(len(d1), np.nan)
        with np.errstate(invalid="ignore"):
            is_replica = ratio < self.threshold
        table = pd.DataFrame(
            {
                "synthetic_row": clean.index.to_numpy(),
                "nn1": idx[:, 0],
                "nn2": idx[:, 1],
                "d1": d1,
                "d2": d2,
                "ratio": ratio,
                "is_replica": is_replica,
            }
        )
        hold = None
        if holdout is not None:
            hold = self.score(holdout, nan=nan, unseen=unseen, extra=extra, name="holdout", progress=progress)
        return ReplicaResult(table, self.n_train_, float(self.threshold), self.distance, hold)
