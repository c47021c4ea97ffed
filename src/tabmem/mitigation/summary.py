"""The mitigation summaries as typed records: :class:`MitigationReport` (what
:func:`~tabmem.mitigation.evaluation.mitigation_report` measures) and :class:`DynamicCutSummary`
(``summary.json`` of ``tabmem dynamiccut``: the report plus the run's settings and stages).

The fields are the keys of the JSON object in its order; ``to_dict()`` writes it and
``from_dict()`` reads it back. Holdout-only keys (``n_holdout``, ``holdout_mem_auc``) and the
quality block (``quality=False``) are ``None`` fields left out of the file; the other
holdout figures are written as null without a holdout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from tabmem._records import Absent, absent_or, from_dict, nested, optional, to_dict
from tabmem.memorization.summary import EXCESS_MEMORIZATION

__all__ = ["SUMMARY_KEYS", "DynamicCutSummary", "MitigationReport", "QualityScores"]

#: keys the ``summary.json`` of a DynamicCut run always has
SUMMARY_KEYS = (
    "memorization_rate",
    "memorization_rate_vs_pruned",
    "holdout_memorization_rate",
    EXCESS_MEMORIZATION,
    "mem_auc",
    "n_train",
    "n_pruned",
    "prune",
    "prune_by",
    "top_k",
    "warmup_epochs",
    "ranking_source",
    "mix",
    "quality",
)


@dataclass(frozen=True, kw_only=True)
class QualityScores:
    """Shape, Trend and MLE of a mitigated model's synthetic table (MLE's real-data score next to it)."""

    shape: float | None
    trend: float | None
    mle: float | None
    mle_real: float | None | Absent = absent_or()
    skipped: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """The ``quality`` object of the summary (``mle_real`` only when MLE ran)."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QualityScores:
        """The ``quality`` object of a summary."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class MitigationReport:
    """Memorization of a mitigated model's output vs the original and the pruned table, the holdout baseline, quality."""

    distance: str
    n_train: int
    n_synthetic: int
    memorization_rate: float
    mem_auc: float
    n_replicas: int
    holdout_memorization_rate: float | None
    excess_memorization: float | None
    excess_memorization_ci: list[float] | None
    n_holdout: int | None = optional()
    holdout_mem_auc: float | None = optional()
    n_pruned: int
    replicas_of_pruned_records: int
    memorization_rate_vs_pruned: float
    holdout_memorization_rate_vs_pruned: float | None
    excess_memorization_vs_pruned: float | None
    quality: QualityScores | None = optional(QualityScores)
    #: what a reader must know, e.g. a distance that cannot discriminate on the data (older files: absent)
    warnings: list[str] | None = optional()

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON object."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MitigationReport:
        """A report from its JSON object (other keys, e.g. a DynamicCut run's settings, are ignored)."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class DynamicCutSummary(MitigationReport):
    """``summary.json`` of a DynamicCut run: the retrained model's report, the run's settings and stage numbers."""

    model: str
    preset: str | None
    epochs: int
    seed: int
    n_retrain: int
    n_new: int
    prune: float
    prune_by: str
    top_k: int | None
    warmup_epochs: int | None
    track_every: int | None
    ranking_source: str
    mix: str | None
    mix_ratio: float | None
    warmup: dict[str, Any] | None  # the warm-up run's numbers (epochs, rates, seconds)
    baseline: MitigationReport | None = nested(MitigationReport)  # the unpruned model (--baseline), or null
    timings_s: dict[str, float]
    reweight: float | None = optional()  # the top records' training weight (kept, not pruned); absent if pruned
    reweight_shape: str | None = optional()

    @classmethod
    def of(cls, report: MitigationReport, **run: Any) -> DynamicCutSummary:
        """``report`` with the run's fields (``run`` may override ``n_train`` and ``n_pruned``)."""
        return cls(**{**{f.name: getattr(report, f.name) for f in fields(MitigationReport)}, **run})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DynamicCutSummary:
        """The ``summary.json`` of a DynamicCut run."""
        return from_dict(cls, data)
