"""The ``tabmem attack`` summary as typed records: one :class:`AttackRecord` per attack, the run's
:class:`AttackMeta` and, for runs of :func:`tabmem.runs.attack.attack_to_dir`, the
:class:`PrivacyHeadline`.

``summary.json`` holds the attacks by name next to the ``"_meta"`` and ``"_privacy"`` objects
(:data:`META_KEY`, :data:`PRIVACY_KEY`); :meth:`AttackSummary.to_dict` writes exactly that
layout and :meth:`AttackSummary.from_dict` reads it back, so that no caller has to tell attack
names from the metadata keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tabmem._records import Absent, absent_or, from_dict, nested, optional, to_dict

__all__ = [
    "META_KEY",
    "PRIVACY_KEY",
    "AttackMeta",
    "AttackRecord",
    "AttackSummary",
    "PrivacyHeadline",
    "is_attack_summary",
]

#: keys of the run's metadata and of the privacy headline in ``summary.json``
META_KEY = "_meta"
PRIVACY_KEY = "_privacy"


@dataclass(frozen=True, kw_only=True)
class AttackRecord:
    """One attack's metrics: AUC and TPR at FPR with intervals, then the auditor's numbers (MIDST, ε)."""

    auc: float
    auc_ci: list[float | None]
    tpr_at_fpr: dict[str, float]
    tpr_at_fpr_strict: dict[str, float]
    balanced_accuracy: float
    threshold: float | None
    n_members: int
    n_non_members: int
    tpr_at_fpr_ci: dict[str, list[float | None]]
    min_resolved_fpr: float
    midst_tpr_at_fpr: dict[str, dict[str, Any]] | None = optional()
    conservative_tpr_at_fpr: dict[str, dict[str, Any]] | None = optional()
    min_certified_fpr: float | None = optional()
    epsilon_lower_bound: dict[str, Any] | None = optional()

    def to_dict(self) -> dict[str, Any]:
        """The attack's object in ``summary.json``."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackRecord:
        """An attack's object of ``summary.json`` (without the auditor's numbers when it has none)."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class AttackMeta:
    """The run's metadata (``"_meta"``): target counts, skipped attacks, warnings, config, schema, shadows."""

    n_members: int | None
    n_non_members: int | None
    n_member_rows_also_in_non_members: int
    min_resolved_fpr: float | None
    skipped: dict[str, str]
    warnings: list[str]
    target_row: str
    config: dict[str, Any]
    schema: dict[str, Any] | None = optional()
    shadows: dict[str, Any] | None | Absent = absent_or()

    def to_dict(self) -> dict[str, Any]:
        """The ``"_meta"`` object (``shadows`` only for runs that train shadows or could: ``attack_to_dir``)."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackMeta:
        """The ``"_meta"`` object of ``summary.json``."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class PrivacyHeadline:
    """The best ε lower bound over the attacks (Bonferroni-corrected, ``"_privacy"``), next to a claimed ε."""

    delta: float
    confidence: float
    per_attack_confidence: float
    epsilon_lower_bound: float
    attack: str | None
    claimed_epsilon: float | None
    claimed_delta: float | None
    exceeds_claim: bool | None = optional()

    def to_dict(self) -> dict[str, Any]:
        """The ``"_privacy"`` object (``exceeds_claim`` only with a claimed ε)."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrivacyHeadline:
        """The ``"_privacy"`` object of ``summary.json``."""
        return from_dict(cls, data)


@dataclass(frozen=True, kw_only=True)
class AttackSummary:
    """What ``summary.json`` of ``tabmem attack`` holds: the attacks that ran, the metadata, the privacy headline."""

    attacks: dict[str, AttackRecord]
    meta: AttackMeta = nested(AttackMeta, META_KEY)
    privacy: PrivacyHeadline | None = optional(PrivacyHeadline, PRIVACY_KEY)

    def __getitem__(self, name: str) -> AttackRecord:
        """The record of the attack ``name``."""
        return self.attacks[name]

    @property
    def names(self) -> list[str]:
        """The attacks that ran, in the summary's order."""
        return list(self.attacks)

    def with_run(self, *, shadows: dict[str, Any] | None, privacy: PrivacyHeadline) -> AttackSummary:
        """This summary with the shadows' metadata and the privacy headline (what ``attack_to_dir`` adds)."""
        return replace(self, meta=replace(self.meta, shadows=shadows), privacy=privacy)

    def to_dict(self) -> dict[str, Any]:
        """``{attack: {...}, ..., "_meta": {...}[, "_privacy": {...}]}``: the layout of ``summary.json``."""
        out: dict[str, Any] = {name: r.to_dict() for name, r in self.attacks.items()}
        out[META_KEY] = self.meta.to_dict()
        if self.privacy is not None:
            out[PRIVACY_KEY] = self.privacy.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttackSummary:
        """A ``summary.json`` of ``tabmem attack`` (every key but ``"_meta"``/``"_privacy"`` is an attack)."""
        privacy = data.get(PRIVACY_KEY)
        return cls(
            attacks={k: AttackRecord.from_dict(v) for k, v in data.items() if k not in (META_KEY, PRIVACY_KEY)},
            meta=AttackMeta.from_dict(data[META_KEY]),
            privacy=None if privacy is None else PrivacyHeadline.from_dict(privacy),
        )


def is_attack_summary(data: Any) -> bool:
    """Whether a parsed ``summary.json`` is one of ``tabmem attack`` (it holds the run's metadata)."""
    return isinstance(data, Mapping) and META_KEY in data
