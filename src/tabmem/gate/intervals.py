"""The intervals the rules need beyond those the commands write.

* :func:`wilson_interval` and :func:`newcombe_difference`: the score interval of a rate and
  Newcombe's hybrid score interval of a difference of two independent rates (Newcombe 1998,
  method 10). The exact-copy excess uses them: its counts are often 0, where a percentile
  bootstrap collapses to ``[0, 0]`` and claims a certainty no sample gives.
* :func:`widen`: an interval recorded at one confidence, re-expressed at another under the normal
  approximation, each side scaled separately (asymmetric intervals stay asymmetric). The rules use
  it for the correction for choosing the best of ``k`` attacks (Bonferroni: each at ``1 - alpha/k``).
"""

from __future__ import annotations

import math

from scipy.stats import norm

__all__ = ["wilson_interval", "newcombe_difference", "widen", "z_value"]


def z_value(confidence: float) -> float:
    """The two-sided standard-normal quantile of ``confidence`` (1.96 for 0.95)."""
    return float(norm.ppf(0.5 + confidence / 2))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of the rate ``k / n`` (``n >= 1``)."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"wilson_interval needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    z = z_value(confidence)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_difference(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``k1/n1 - k2/n2`` (two independent samples)."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, confidence)
    l2, u2 = wilson_interval(k2, n2, confidence)
    d = p1 - p2
    return d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


def widen(value: float, ci: tuple[float, float], *, recorded: float, wanted: float) -> tuple[float, float]:
    """``ci`` (recorded at confidence ``recorded`` around ``value``) at confidence ``wanted``."""
    scale = z_value(wanted) / z_value(recorded)
    lo, hi = ci
    return value - max(value - lo, 0.0) * scale, value + max(hi - value, 0.0) * scale
