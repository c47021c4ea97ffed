"""The ``tabmem audit`` summary as typed records: :class:`AuditSummary` and its parts.

:meth:`ReplicaResult.summary <tabmem.memorization.replicas.ReplicaResult.summary>` builds an
:class:`AuditSummary` (replica rates, Mem-AUC, exact copies, rare-value leakage, the holdout
baseline and the excess over it, bootstrap intervals); ``tabmem audit`` and the study's audit
step add the run's seconds, the schema and the :class:`DistanceEvidence` of
:func:`~tabmem.memorization.evidence.distance_evidence`. The fields are the keys of
``summary.json`` in its order: :meth:`AuditSummary.to_dict` writes the file's object and
:meth:`AuditSummary.from_dict` reads it back. Keys that only exist with a holdout (or with
rare-value counts) are ``None`` fields left out of the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tabmem._records import Absent, absent_or, from_dict, nested, optional, to_dict

__all__ = [
    "AuditSummary",
    "DistanceEvidence",
    "EXCESS_MEMORIZATION",
    "EXCESS_MEMORIZATION_CI",
    "HeavyTail",
    "NO_DISCRIMINATION",
    "RareValuesSummary",
]

#: the headline key of every memorization summary (audit, training run, DynamicCut)
EXCESS_MEMORIZATION = "excess_memorization"
#: its bootstrap interval
EXCESS_MEMORIZATION_CI = "excess_memorization_ci"
#: the words of the warning that a distance cannot tell copies from real unseen rows on the data
NO_DISCRIMINATION = "cannot discriminate"


@dataclass(frozen=True, kw_only=True)
class HeavyTail:
    """How concentrated replicas are on few training records: records with one, top-1%/10% shares, Gini."""

    n_records_with_replicas: int
    top_1pct_share: float | None
    top_10pct_share: float | None
    gini: float | None

    def to_dict(self) -> dict[str, Any]:
        """The ``heavy_tail`` object of ``summary.json``."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HeavyTail:
        """The ``heavy_tail`` object of ``summary.json``."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class RareValuesSummary:
    """Rare training values (in fewer than ``k`` rows): how many, how many the synthetic (and holdout) rows hold."""

    k: int
    n_rare_values: int
    n_leaked: int
    n_in_holdout: int | None = optional()

    def to_dict(self) -> dict[str, Any]:
        """The ``rare_values`` object of ``summary.json``."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RareValuesSummary:
        """The ``rare_values`` object of ``summary.json``."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class DistanceEvidence:
    """Distance evidence with its own null: authenticity, identical matches, NNDR, the data-copying test (or None)."""

    authenticity: dict[str, Any]
    identical_matches: dict[str, Any]
    nndr: dict[str, Any]
    data_copying: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """The four ``summary.json`` keys, in the file's order."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DistanceEvidence:
        """The evidence keys of a ``summary.json``."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class AuditSummary:
    """The headline numbers of a replica audit: the keys of ``summary.json``, in its order."""

    n_train: int
    n_synthetic: int
    distance: str
    threshold: float
    memorization_rate: float
    mem_auc: float
    mem_auc_trapz10: float
    n_replicas: int
    n_nan_ratio: int
    n_undefined_ratio: int
    duplicates: str
    exact_copy_rate: float
    n_exact_copies: int | None
    heavy_tail: HeavyTail = nested(HeavyTail)
    memorization_rate_ci: list[float | None]
    confidence: float
    n_bootstrap: int
    rare_value_leakage: float | None = optional()
    rare_values: RareValuesSummary | None = optional(RareValuesSummary)
    n_holdout: int | None = optional()
    holdout_memorization_rate: float | None = optional()
    holdout_mem_auc: float | None = optional()
    excess_memorization: float | None = optional()
    holdout_memorization_rate_ci: list[float | None] | None = optional()
    excess_memorization_ci: list[float | None] | None = optional()
    holdout_exact_copy_rate: float | None = optional()
    excess_exact_copy_rate: float | None = optional()
    holdout_rare_value_leakage: float | None = optional()
    excess_rare_value_leakage: float | None = optional()
    #: False when the distance cannot tell copies from real unseen rows here (a warning says why); None: not checked
    distance_discriminates: bool | None = optional()
    warnings: list[str]
    seconds: float | None = optional()
    schema: dict[str, Any] | None = optional()
    authenticity: dict[str, Any] | None = optional()
    identical_matches: dict[str, Any] | None = optional()
    nndr: dict[str, Any] | None = optional()
    data_copying: dict[str, Any] | None | Absent = absent_or()

    @property
    def has_holdout(self) -> bool:
        """Whether a holdout was scored (the baseline and excess keys are there)."""
        return self.n_holdout is not None

    @property
    def evidence(self) -> DistanceEvidence | None:
        """The distance evidence, when the audit computed it."""
        if self.authenticity is None or self.identical_matches is None or self.nndr is None:
            return None
        copying = None if isinstance(self.data_copying, Absent) else self.data_copying
        return DistanceEvidence(
            authenticity=self.authenticity,
            identical_matches=self.identical_matches,
            nndr=self.nndr,
            data_copying=copying,
        )

    def with_extra(
        self,
        *,
        seconds: float | None = None,
        schema: dict[str, Any] | None = None,
        evidence: DistanceEvidence | None = None,
    ) -> AuditSummary:
        """This summary with what ``tabmem audit`` adds: the run's seconds, the schema, the distance evidence."""
        ev: dict[str, Any] = evidence.to_dict() if evidence is not None else {}
        return replace(self, seconds=seconds, schema=schema, **ev)

    def to_dict(self) -> dict[str, Any]:
        """The object of ``summary.json``."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditSummary:
        """A ``summary.json`` of ``tabmem audit`` (other keys, e.g. a training run's, are ignored)."""
        return from_dict(cls, data)
