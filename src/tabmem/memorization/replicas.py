"""Replica detection: is a synthetic row a copy of its nearest training row?

A synthetic row x is a *replica* (memorized) when ``r(x) = d(x, NN1) / d(x, NN2) < threshold``
(1/3 in the papers: Yoon et al. 2023, Gu et al. 2023, Fang et al. 2024), with NN1/NN2 its
nearest and second-nearest training rows.

Undefined ratios. ``d1 = d2 = 0`` (a copy of a row that is duplicated in the training table)
and a one-row training table (``d2`` does not exist) leave the ratio undefined. The papers'
rule (``duplicates="papers"``, the default, for reproduction) gives them a NaN ratio that is
*not* a replica: a table of 100% exact copies of duplicated rows scores 0%. Every result
therefore also reports ``exact_copy_rate`` (rows identical to a training row, whatever the
ratio; :mod:`tabmem.memorization.copies`) with its holdout baseline, and the number of undefined
ratios with a warning; ``duplicates="replica"`` counts a row identical to a training row as a
replica (its ratio is taken as 0, the limit of a copy). Rare-value leakage (training values that
occur in fewer than ``rare_k`` rows, found in the synthetic table) is reported next to them.

:class:`ReplicaDetector` is fitted once on the training table (all training-only work is done
there) and then scores any number of synthetic tables, e.g. at every training epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_int, check_n_jobs, check_number, check_positive_int
from tabmem._io import write_frame, write_json
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import (
    NanPolicy,
    Schema,
    UnseenPolicy,
    ValidatedTable,
    key_columns_warning,
    key_like_columns,
    raw_frame,
    validate,
)
from tabmem.errors import NotFittedError, suggest
from tabmem.memorization.copies import ExactCopies, RareValueCounts, RareValues
from tabmem.memorization.summary import (
    NO_DISCRIMINATION,
    AuditSummary,
    DistanceEvidence,
    HeavyTail,
    RareValuesSummary,
)
from tabmem.memorization.uncertainty import interval_note, proportion_ci, proportion_difference_ci
from tabmem.neighbors.blocked import DEFAULT_MEMORY_BUDGET
from tabmem.neighbors.distances import DEFAULT_DISTANCE, Distance
from tabmem.neighbors.index import NeighborIndex

TRAPZ10_GRID = np.linspace(0.0, 1.0, 10)
DUPLICATES = ("papers", "replica")
#: resamples and confidence of the bootstrap intervals in :meth:`ReplicaResult.summary`
N_BOOTSTRAP = 2000
CONFIDENCE = 0.95
#: a distance cannot discriminate when more than this share of real unseen rows are replicas, or
#: (without a holdout: of synthetic rows) sit at ``d1 = 0`` without being exact copies
DEGENERATE_SHARE = 0.5


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


def _not_copies(t: pd.DataFrame) -> np.ndarray:
    """Rows that are not exact copies of a training row (all rows when the table does not say)."""
    return ~t["exact_copy"].to_numpy(bool) if "exact_copy" in t else np.ones(len(t), dtype=bool)


def zero_d1_share(result: "ReplicaResult") -> float:
    """Share of scored rows at distance 0 from their nearest training row without being an exact copy of it."""
    t = result.table
    if len(t) == 0:
        return float("nan")
    return float(((t["d1"].to_numpy() == 0) & _not_copies(t)).mean())


def non_copy_replica_share(result: "ReplicaResult") -> float:
    """Share of scored rows that are replicas without being exact copies of a training row."""
    t = result.table
    if len(t) == 0:
        return float("nan")
    return float((t["is_replica"].to_numpy(bool) & _not_copies(t)).mean())


def discrimination_warning(result: "ReplicaResult", holdout: "ReplicaResult | None" = None) -> str | None:
    """The warning that ``result.distance`` cannot tell copies from real unseen rows on this data, or ``None``.

    With a ``holdout`` (real rows never trained on, scored the same way): more than
    :data:`DEGENERATE_SHARE` of its rows are replicas, or at ``d1 = 0``, without being exact
    copies of a training row. Without one, the same share of the synthetic rows at ``d1 = 0``.
    Exact copies never count (a holdout row may equal a training row; a planted leak still reads
    as a leak).
    """
    scored = holdout if holdout is not None else result
    if scored.n_synthetic == 0:
        return None
    zero = zero_d1_share(scored)
    who = "real unseen (holdout) rows" if holdout is not None else "synthetic rows"
    replicas = non_copy_replica_share(holdout) if holdout is not None else 0.0
    if replicas > DEGENERATE_SHARE:
        figure = f"{100 * replicas:.1f}% of real rows never trained on are replicas without being copies"
        if zero > DEGENERATE_SHARE:
            figure += f" ({100 * zero:.1f}% at d1 = 0)"
    elif zero > DEGENERATE_SHARE:
        figure = f"{100 * zero:.1f}% of the {who} are at d1 = 0 from a training row without being copies of it"
    else:
        return None
    if result.distance == "gower":
        advice = "; compare the exact-copy rate and the distance evidence instead"
    else:
        flag = suggest('distance="gower"', "--distance", "gower")
        advice = f"; pass {flag} (scaled by the training table's ranges)" if flag else ""
    return (
        f"the {result.distance} distance {NO_DISCRIMINATION} on this data: {figure}, so its memorization rate "
        f"says nothing about copying{advice}"
    )


def gini(values: np.ndarray) -> float:
    """Gini coefficient of non-negative values (0 = equal, -> 1 = concentrated); NaN if all 0."""
    v = np.sort(np.asarray(values, dtype=float))
    n, total = v.size, v.sum()
    if n == 0 or total == 0:
        return float("nan")
    cum = np.cumsum(v)
    return float((n + 1 - 2 * (cum.sum() / total)) / n)


@dataclass
class ReplicaResult:
    """Per-synthetic-row neighbours and ratios, with the aggregates derived from them."""

    table: pd.DataFrame  # synthetic_row, nn1, nn2, d1, d2, ratio, is_replica, exact_copy, rare_value
    n_train: int
    threshold: float
    distance: str
    holdout: "ReplicaResult | None" = field(default=None, repr=False)
    duplicates: str = "papers"
    n_undefined_ratio: int = 0  # ratios d1/d2 that are undefined (before the duplicates rule)
    rare: RareValueCounts | None = field(default=None, repr=False)
    input_warnings: list[str] = field(default_factory=list)  # about the inputs (identifier columns)

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

    @property
    def exact_copy_rate(self) -> float:
        """Share of rows identical, in every column, to some training row (any ratio)."""
        if "exact_copy" not in self.table or len(self.table) == 0:
            return float("nan")
        return float(self.table["exact_copy"].mean())

    def discriminates(self) -> bool:
        """Whether the distance can tell copies from real unseen rows here (:func:`discrimination_warning`)."""
        return discrimination_warning(self, self.holdout) is None

    def warnings(self) -> list[str]:
        """What a reader of the numbers must know: identifier columns in the inputs, a distance that cannot
        discriminate, undefined ratios and how they were counted."""
        degenerate = discrimination_warning(self, self.holdout)
        return [*self.input_warnings, *([degenerate] if degenerate else []), *self._undefined_warnings()]

    def _undefined_warnings(self) -> list[str]:
        """Undefined ratios and how they were counted."""
        n = self.n_undefined_ratio
        if not n:
            return []
        why = (
            "the training table has one row, so there is no second neighbour"
            if self.n_train < 2
            else "d1 = d2 = 0: copies of rows that are duplicated in the training table"
        )
        if self.duplicates == "replica":
            counted = n - int(self.table["ratio"].isna().sum())
            return [
                f"{n} synthetic row(s) have an undefined ratio d1/d2 ({why}); {counted} of them are exact copies "
                "of training rows and are counted as replicas (the papers' rule would not count them)"
            ]
        flag = suggest("duplicates='replica'", "--duplicates", "replica")
        advice = f"; pass {flag} to count exact copies as replicas" if flag else ""
        return [
            f"{n} synthetic row(s) have an undefined ratio d1/d2 ({why}); the papers' rule counts them as not "
            f"memorized, while the exact-copy rate is {100 * self.exact_copy_rate:.2f}%{advice}"
        ]

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
    ) -> AuditSummary:
        """The headline numbers: an :class:`~tabmem.memorization.summary.AuditSummary` (``.to_dict()``: ``summary.json``).

        ``*_ci`` fields are percentile-bootstrap intervals (``confidence``, ``n_bootstrap``
        resamples; :mod:`tabmem.memorization.uncertainty`): synthetic and holdout rows are
        resampled independently, and the excess memorization's interval is that of the
        difference of the two resampled rates. Same ``random_state``, same intervals;
        ``n_bootstrap=0`` gives no interval (null). The holdout fields are ``None`` without a
        holdout, the rare-value fields without rare-value counts.
        """
        boot = {"n_bootstrap": n_bootstrap, "confidence": confidence, "random_state": random_state}
        k, n = int(self.table["is_replica"].sum()), self.n_synthetic
        notes = [interval_note("memorization_rate_ci", {"synthetic": n})] if n_bootstrap else []
        s: dict[str, Any] = {}  # the fields that only exist with rare-value counts or with a holdout
        if self.rare is not None:
            s.update(rare_value_leakage=self.rare.rate)
            rare = {"k": self.rare.k, "n_rare_values": self.rare.n_rare_values, "n_leaked": self.rare.n_leaked}
        if self.holdout is not None:
            h = self.holdout
            kh, nh = int(h.table["is_replica"].sum()), h.n_synthetic
            if n_bootstrap:
                notes.append(interval_note("holdout_memorization_rate_ci", {"holdout": nh}))
                notes.append(interval_note("excess_memorization_ci", {"synthetic": n, "holdout": nh}))
            s.update(
                n_holdout=nh,
                holdout_memorization_rate=h.memorization_rate,
                holdout_mem_auc=h.mem_auc,
                excess_memorization=self.memorization_rate - h.memorization_rate,
                holdout_memorization_rate_ci=list(proportion_ci(kh, nh, **boot)),
                excess_memorization_ci=list(proportion_difference_ci(k, n, kh, nh, **boot)),
                holdout_exact_copy_rate=h.exact_copy_rate,
                excess_exact_copy_rate=self.exact_copy_rate - h.exact_copy_rate,
            )
            if self.rare is not None and h.rare is not None:
                s.update(
                    holdout_rare_value_leakage=h.rare.rate,
                    excess_rare_value_leakage=self.rare.rate - h.rare.rate,
                )
                rare["n_in_holdout"] = h.rare.n_leaked
        return AuditSummary(
            n_train=self.n_train,
            n_synthetic=self.n_synthetic,
            distance=self.distance,
            threshold=self.threshold,
            memorization_rate=self.memorization_rate,
            mem_auc=self.mem_auc,
            mem_auc_trapz10=self.mem_auc_trapz10,
            n_replicas=int(self.table["is_replica"].sum()),
            n_nan_ratio=int(self.table["ratio"].isna().sum()),
            n_undefined_ratio=int(self.n_undefined_ratio),
            duplicates=self.duplicates,
            exact_copy_rate=self.exact_copy_rate,
            n_exact_copies=int(self.table["exact_copy"].sum()) if "exact_copy" in self.table else None,
            heavy_tail=HeavyTail.from_dict(self.heavy_tail()),
            memorization_rate_ci=list(proportion_ci(k, n, **boot)),
            confidence=confidence,
            n_bootstrap=n_bootstrap,
            rare_values=RareValuesSummary.from_dict(rare) if self.rare is not None else None,
            distance_discriminates=self.discriminates(),
            warnings=self.warnings() + [note for note in notes if note],
            **s,
        )

    def rare_values(self) -> pd.DataFrame:
        """Per column: rare training values, how many distinct ones the synthetic (and holdout) rows hold, in how many rows.

        Counts only, never the values themselves.
        """
        if self.rare is None:
            return pd.DataFrame(columns=["column", "kind", "n_rare", "n_leaked", "rows"])
        table = self.rare.per_column.copy()
        if self.holdout is not None and self.holdout.rare is not None:
            h = self.holdout.rare.per_column
            table["holdout_n_leaked"] = h["n_leaked"].to_numpy()
            table["holdout_rows"] = h["rows"].to_numpy()
        return table

    def save(
        self,
        out_dir: str | Path,
        *,
        seconds: float | None = None,
        schema: dict[str, Any] | None = None,
        evidence: DistanceEvidence | None = None,
        **summary_options: Any,
    ) -> AuditSummary:
        """Write the ``tabmem audit`` layout into ``out_dir``; returns the summary.

        ``summary.json`` (:meth:`summary` with ``summary_options`` — ``n_bootstrap``,
        ``confidence``, ``random_state`` — plus the run's ``seconds``, the ``schema`` and the
        distance ``evidence``: :meth:`AuditSummary.with_extra`), ``replicas.csv`` (one row per
        synthetic row), ``records.csv`` (one row per training record) and ``rare_values.csv`` (per
        column): positions and counts, no values.
        """
        out = Path(out_dir)
        summary = self.summary(**summary_options).with_extra(seconds=seconds, schema=schema, evidence=evidence)
        write_json(out / "summary.json", summary.to_dict())
        write_frame(out / "replicas.csv", self.table)
        write_frame(out / "records.csv", self.records())
        write_frame(out / "rare_values.csv", self.rare_values())
        return summary


class ReplicaDetector:
    """Fit once on the training table, then score synthetic tables for replicas.

    Parameters
    ----------
    distance:
        ``"gower"`` (default), ``"fang2024"`` (the papers' distance: pass it to reproduce their
        numbers; it cannot discriminate on all-numerical tables, docs/neighbors.md) or ``"l2"``;
        see :mod:`tabmem.neighbors.distances`.
    threshold:
        A synthetic row is a replica when ``d1/d2 < threshold``.
    nan:
        Missing numerical values in the training and scored tables: ``"error"`` (default),
        ``"drop"`` (scored tables only: drop those rows, ids stay file positions) or ``"match"``.
    memory_budget:
        Bytes of working memory for the blocked search (default 1 GiB), whatever the sizes.
    duplicates:
        Rows whose ratio is undefined (module docstring): ``"papers"`` (default) counts them as not
        memorized; ``"replica"`` counts a row identical to a training row as a replica.
    rare_k:
        Rare-value leakage counts training values that occur in fewer than ``rare_k`` rows
        (default 2: values that occur once).
    n_jobs:
        Worker threads of the search: ``None`` (default) every CPU this process may use,
        ``k`` workers, ``-1`` all, ``-k`` all but ``k - 1`` (the library's one rule,
        :class:`~tabmem.neighbors.NeighborIndex`).
    """

    def __init__(
        self,
        distance: str = DEFAULT_DISTANCE,
        threshold: float = 1 / 3,
        *,
        nan: NanPolicy = "error",
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        n_jobs: int | None = None,
        duplicates: str = "papers",
        rare_k: int = 2,
    ) -> None:
        self.distance = distance
        self.threshold = threshold
        self.nan = nan
        self.memory_budget = memory_budget
        self.n_jobs = n_jobs
        self.duplicates = duplicates
        self.rare_k = rare_k

    def fit(self, train: pd.DataFrame | ValidatedTable, schema: Schema | None = None) -> "ReplicaDetector":
        """Learn everything that depends only on the training table (encodings, norms)."""
        check_number("threshold", self.threshold, low=0.0, high=1.0, low_open=True)
        check_n_jobs(self.n_jobs)
        check_positive_int("memory_budget", self.memory_budget)
        check_choice("duplicates", self.duplicates, DUPLICATES)
        check_int("rare_k", self.rare_k, low=2)
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
        self.copies_ = ExactCopies().fit(checked.data, schema)
        self.rare_ = RareValues(self.rare_k).fit(checked.data, schema)
        self.training_table_ = checked  # the validated training table, for analyses that need its rows
        self.key_columns_ = key_like_columns(raw_frame(train), schema)  # identifiers: warned about, never dropped
        return self

    def validate(
        self,
        table: pd.DataFrame | ValidatedTable,
        *,
        name: str = "synthetic",
        nan: NanPolicy | None = None,
        unseen: UnseenPolicy = "error",
        extra: str = "error",
    ) -> ValidatedTable:
        """``table`` validated as :meth:`score` validates it (training schema and categories), once:
        pass the result to :meth:`score` and to other analyses so that it is not validated again."""
        if not hasattr(self, "index_"):
            raise NotFittedError("ReplicaDetector is not fitted: call fit(train, schema) first")
        return self.index_.validate(table, name=name, nan=nan or self.nan, unseen=unseen, extra=extra)  # type: ignore[arg-type]

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
        exact = self.copies_.match(clean.data)
        undefined = int(np.isnan(ratio).sum())
        if self.duplicates == "replica":
            ratio = np.where(np.isnan(ratio) & exact, 0.0, ratio)  # a copy: the limit d1/d2 -> 0
        with np.errstate(invalid="ignore"):
            is_replica = ratio < self.threshold
        rare = self.rare_.score(clean.data)
        table = pd.DataFrame(
            {
                "synthetic_row": clean.index.to_numpy(),
                "nn1": idx[:, 0],
                "nn2": idx[:, 1],
                "d1": d1,
                "d2": d2,
                "ratio": ratio,
                "is_replica": is_replica,
                "exact_copy": exact,
                "rare_value": rare.rows,
            }
        )
        hold = None
        if holdout is not None:
            hold = self.score(holdout, nan=nan, unseen=unseen, extra=extra, name="holdout", progress=progress)
        keys = getattr(self, "key_columns_", [])
        return ReplicaResult(
            table,
            self.n_train_,
            float(self.threshold),
            self.distance,
            hold,
            self.duplicates,
            undefined,
            rare,
            input_warnings=[key_columns_warning(keys)] if keys and name != "holdout" else [],
        )
