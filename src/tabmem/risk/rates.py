"""Success rates, their Wilson-score intervals and the residual risk, as anonymeter defines them.

An attack's success rate is the Wilson-score centre ``(k + z²/2) / (n + z²)`` with the symmetric
half-width ``z / (n + z²) · sqrt(k (n - k) / n + z² / 4)`` (``z`` the normal quantile of
``(1 + confidence) / 2``), so ``centre ± half-width`` is exactly the Wilson interval. The risk is
the training attack's success beyond the control attack's, normalised by the control's margin,
``(attack - control) / (1 - control)``, with the half-width propagated to first order from both
rates. Every value and interval end is then clipped to [0, 1] (Giomi et al., PoPETs 2023), so
that numbers are comparable with anonymeter's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import norm

__all__ = ["Rate", "residual", "wilson"]


@dataclass(frozen=True)
class Rate:
    """A point estimate and its symmetric half-width (before clipping)."""

    value: float
    error: float

    def clipped(self) -> tuple[float, list[float]]:
        """``(value, [low, high])`` clipped to [0, 1]."""

        def clip(x: float) -> float:
            return min(max(x, 0.0), 1.0)

        return clip(self.value), [clip(self.value - self.error), clip(self.value + self.error)]


def wilson(n_total: int, n_success: float, confidence: float) -> Rate:
    """Wilson-score centre and half-width of ``n_success`` successes in ``n_total`` trials."""
    if n_total <= 0:
        return Rate(0.0, 1.0)
    z = float(norm.ppf(0.5 * (1.0 + confidence)))
    z2 = z * z
    denominator = n_total + z2
    centre = (n_success + 0.5 * z2) / denominator
    variance = max(n_success * (n_total - n_success) / n_total, 0.0)
    return Rate(centre, z / denominator * math.sqrt(variance + 0.25 * z2))


def residual(attack: Rate, control: Rate) -> Rate:
    """``(attack - control) / (1 - control)`` with first-order error propagation from both rates."""
    margin = 1.0 - control.value
    value = (attack.value - control.value) / margin
    d_attack = 1.0 / abs(margin)
    d_control = (attack.value - 1.0) / margin**2
    return Rate(value, math.hypot(attack.error * d_attack, control.error * d_control))
