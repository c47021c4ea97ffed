"""The risk evaluation's typed records: one :class:`RiskEstimate` per attack, the :class:`RiskSummary`.

``RiskSummary.to_dict`` is the layout of ``summary.json``: the record's fields in order, with
``"inference"`` written as ``{"per_column": {column: estimate}, "worst": {"column": ..., **estimate}}``
(the worst column is the one with the highest risk, ties to the first in ``secrets``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tabmem._records import from_dict, nested, optional, to_dict
from tabmem.risk.rates import residual, wilson

__all__ = ["RiskEstimate", "RiskSummary", "estimate"]


@dataclass(frozen=True, kw_only=True)
class RiskEstimate:
    """One attack's success on training, control and naive-baseline targets, and the residual risk.

    Rates are Wilson-score centres with their intervals, clipped to [0, 1] (:mod:`tabmem.risk.rates`);
    ``risk = (attack - control) / (1 - control)``. ``n_attacks`` is the number of training targets
    (the rates' denominator); ``n_control_attacks`` / ``n_baseline_attacks`` are written where they
    differ from it; ``control_correction`` is the factor singling out applies to the control count
    when the control table's size differs from the training table's.
    """

    risk: float
    risk_ci: list[float]
    attack_rate: float
    attack_rate_ci: list[float]
    control_rate: float
    control_rate_ci: list[float]
    baseline_rate: float
    baseline_rate_ci: list[float]
    n_attacks: int
    n_success: int
    n_control_success: int
    n_baseline_success: int
    n_control_attacks: int | None = optional()
    n_baseline_attacks: int | None = optional()
    control_correction: float | None = optional()

    def to_dict(self) -> dict[str, Any]:
        """The estimate's JSON object."""
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RiskEstimate:
        """An estimate from its JSON object (extra keys, e.g. ``"column"``, are ignored)."""
        return from_dict(cls, data)


def estimate(
    *,
    n_attacks: int,
    n_success: int,
    n_control_attacks: int,
    n_control_success: int,
    n_baseline_attacks: int,
    n_baseline_success: int,
    confidence: float,
    control_correction: float | None = None,
) -> RiskEstimate:
    """The :class:`RiskEstimate` of the three success counts (the control count scaled by ``control_correction``)."""
    attack = wilson(n_attacks, n_success, confidence)
    control_count = n_control_success * (control_correction if control_correction is not None else 1.0)
    control = wilson(n_control_attacks, control_count, confidence)
    baseline = wilson(n_baseline_attacks, n_baseline_success, confidence)
    risk, risk_ci = residual(attack, control).clipped()
    a, a_ci = attack.clipped()
    c, c_ci = control.clipped()
    b, b_ci = baseline.clipped()
    return RiskEstimate(
        risk=risk,
        risk_ci=risk_ci,
        attack_rate=a,
        attack_rate_ci=a_ci,
        control_rate=c,
        control_rate_ci=c_ci,
        baseline_rate=b,
        baseline_rate_ci=b_ci,
        n_attacks=int(n_attacks),
        n_success=int(n_success),
        n_control_success=int(n_control_success),
        n_baseline_success=int(n_baseline_success),
        n_control_attacks=None if n_control_attacks == n_attacks else int(n_control_attacks),
        n_baseline_attacks=None if n_baseline_attacks == n_attacks else int(n_baseline_attacks),
        control_correction=control_correction,
    )


@dataclass(frozen=True, kw_only=True)
class RiskSummary:
    """The three WP29 risks of one synthetic table (``summary.json`` of a risk run)."""

    singling_out_univariate: RiskEstimate = nested(RiskEstimate)
    singling_out_multivariate: RiskEstimate = nested(RiskEstimate)
    linkability: RiskEstimate = nested(RiskEstimate)
    inference: dict[str, RiskEstimate]
    secrets: list[str]
    aux: list[list[str]]
    chosen: dict[str, str]
    n_train: int
    n_synthetic: int
    n_control: int
    n_attacks: int
    confidence: float
    seed: int
    warnings: list[str]
    seconds: float | None

    @property
    def worst_inference(self) -> tuple[str, RiskEstimate] | None:
        """The secret column with the highest inference risk (first in ``secrets`` on ties)."""
        if not self.inference:
            return None
        col = max(self.inference, key=lambda c: (self.inference[c].risk, -self.secrets.index(c)))
        return col, self.inference[col]

    def with_seconds(self, seconds: float | None) -> RiskSummary:
        """This summary with its wall time."""
        return replace(self, seconds=seconds)

    def to_dict(self) -> dict[str, Any]:
        """``summary.json``: the fields in order, ``"inference"`` as per-column estimates and the worst."""
        out = to_dict(self)
        worst = self.worst_inference
        out["inference"] = {
            "per_column": {c: e.to_dict() for c, e in self.inference.items()},
            "worst": None if worst is None else {"column": worst[0], **worst[1].to_dict()},
        }
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RiskSummary:
        """A summary from ``summary.json`` (:meth:`to_dict`'s layout)."""
        inference = data["inference"]
        per_column = inference.get("per_column", inference) if isinstance(inference, Mapping) else {}
        fixed = dict(data)
        fixed["inference"] = {c: RiskEstimate.from_dict(e) for c, e in per_column.items()}
        return from_dict(cls, fixed)
