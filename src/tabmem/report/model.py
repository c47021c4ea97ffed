"""The in-memory report model: what every input kind is read into, and what the report renders.

One :class:`ReportData` holds one :class:`Cell` per synthetic table (a generator run, a study
cell, or a single audit/attack/quality/risk output). A cell holds up to five parts, each the content
of one command's output directory as written by that command (no number is recomputed here):

* :class:`Audit`: ``tabmem audit`` or the audit of ``tabmem train`` (``summary.json``, the
  per-record replica counts of ``records.csv``);
* :class:`Attacks`: ``tabmem attack`` (``summary.json``, ``roc.csv``, and the per-target
  distances of the distance attacks from ``scores.csv``: membership scores, not records);
* :class:`Quality`: ``tabmem quality`` (``summary.json``, the per-column Shape breakdown);
* :class:`Training`: ``tabmem train`` (``config.json``, tracked epochs, Top vs Non-top dynamics);
* :class:`DynamicCutRun`: ``tabmem dynamiccut`` (its ``summary.json``: the retrained model against
  the original table, the warm-up's and the baseline's numbers, the run's settings).
* :class:`Risk`: ``tabmem risk`` (``summary.json``: the WP29 risks, their rates and intervals).

Only positions and counts of training records are ever held here, never their values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabmem.attacks.summary import META_KEY, PRIVACY_KEY

__all__ = ["Audit", "Attacks", "Quality", "Training", "DynamicCutRun", "Risk", "Cell", "ReportData"]


@dataclass
class Audit:
    """A replica audit: ``summary`` is its ``summary.json``; ``record_counts`` the replicas per training record."""

    summary: dict[str, Any]
    record_counts: np.ndarray | None = None
    path: str = ""

    def get(self, key: str, default: Any = None) -> Any:
        return self.summary.get(key, default)


@dataclass
class Attacks:
    """Membership-inference results: per-attack metrics, ROC corners and member/non-member distances."""

    summary: dict[str, Any]
    roc: pd.DataFrame | None = None  # attack, fpr, tpr
    distances: dict[str, pd.DataFrame] = field(default_factory=dict)  # attack -> distance, is_member
    path: str = ""

    @property
    def results(self) -> dict[str, dict[str, Any]]:
        """``{attack: metrics}`` (the summary without the run's metadata and privacy headline)."""
        return {k: v for k, v in self.summary.items() if k not in (META_KEY, PRIVACY_KEY) and isinstance(v, dict)}

    @property
    def meta(self) -> dict[str, Any]:
        """The run's metadata (:class:`~tabmem.attacks.summary.AttackMeta` as written)."""
        return self.summary.get(META_KEY, {}) or {}

    @property
    def privacy(self) -> dict[str, Any]:
        """The privacy headline (:class:`~tabmem.attacks.summary.PrivacyHeadline` as written; empty without one)."""
        return self.summary.get(PRIVACY_KEY) or {}


@dataclass
class Quality:
    """Fidelity and utility metrics (``tabmem quality``'s ``summary.json``) and the Shape breakdown."""

    summary: dict[str, Any]
    shape_breakdown: pd.DataFrame | None = None
    path: str = ""

    def value(self, key: str) -> float | None:
        v = self.summary.get(key)
        return None if v is None else float(v)


@dataclass
class Training:
    """A ``tabmem train`` run: its config, per-epoch memorization, loss history, Top vs Non-top dynamics."""

    config: dict[str, Any]
    epochs: pd.DataFrame | None = None  # tracked epochs: epoch, memorization_rate, mem_auc, ...
    history: pd.DataFrame | None = None  # per epoch: loss, ...
    trajectories: pd.DataFrame | None = None  # per tracked epoch, Top vs Non-top
    dynamics: dict[str, Any] | None = None  # dynamics.json
    path: str = ""


@dataclass
class DynamicCutRun:
    """A ``tabmem dynamiccut`` run: ``summary`` is its ``summary.json`` (``DynamicCutSummary`` as written)."""

    summary: dict[str, Any]
    path: str = ""

    def get(self, key: str, default: Any = None) -> Any:
        return self.summary.get(key, default)


@dataclass
class Risk:
    """The WP29 anonymisation risks (``tabmem risk``'s ``summary.json``: singling out, linkability, inference)."""

    summary: dict[str, Any]
    path: str = ""

    def estimate(self, key: str) -> dict[str, Any] | None:
        """One risk's estimate (``singling_out_univariate``, ``singling_out_multivariate``, ``linkability``)."""
        v = self.summary.get(key)
        return v if isinstance(v, dict) else None

    @property
    def inference(self) -> dict[str, dict[str, Any]]:
        """``{secret column: estimate}``, as written."""
        per_column = (self.summary.get("inference") or {}).get("per_column") or {}
        return {str(k): v for k, v in per_column.items() if isinstance(v, dict)}


@dataclass
class Cell:
    """One synthetic table and everything measured about it."""

    name: str
    path: str
    axes: dict[str, Any] = field(default_factory=dict)  # e.g. dataset, generator, mitigation, seed
    config: dict[str, Any] = field(default_factory=dict)
    audit: Audit | None = None  # the primary audit (the first distance)
    audits: dict[str, Audit] = field(default_factory=dict)  # every audit, by distance
    attacks: Attacks | None = None
    quality: Quality | None = None
    training: Training | None = None
    dynamiccut: DynamicCutRun | None = None
    kind: str = ""  # the run type read: train, audit, attack, quality, dynamiccut, or cell (parts of one table)
    risk: Risk | None = None
    status: str = "done"
    error: str | None = None

    @property
    def has_results(self) -> bool:
        return any(
            p is not None for p in (self.audit, self.attacks, self.quality, self.training, self.dynamiccut, self.risk)
        )


@dataclass
class ReportData:
    """Everything one report shows."""

    title: str
    source: str
    kind: str  # study | train | audit | attack | quality | dynamiccut | risk | cell | collection
    cells: list[Cell]
    versions: dict[str, str] = field(default_factory=dict)  # of the runs, where recorded
    notes: list[str] = field(default_factory=list)  # what the readers could not find
    study: dict[str, Any] = field(default_factory=dict)  # a study's manifest (minus cells)
