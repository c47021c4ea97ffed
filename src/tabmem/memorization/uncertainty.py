"""Bootstrap confidence intervals of memorization rates and of the excess over the holdout baseline.

A memorization rate is the mean of per-row flags (replica or not). Resampling ``n`` flags with
replacement and taking their mean has exactly the distribution ``Binomial(n, k/n) / n`` (``k``
flagged rows), so the percentile bootstrap is computed by drawing binomials: ``O(n_bootstrap)``
work and memory whatever ``n`` is, and the same interval as resampling rows (tested against a
naive resampling loop and against the exact binomial quantiles). The excess memorization
(synthetic rate minus holdout rate) resamples the two tables independently, as two
independent samples are.
"""

from __future__ import annotations

import numpy as np

from tabmem._checks import check_fraction, check_int

__all__ = ["proportion_ci", "proportion_difference_ci"]


def _draws(k: int, n: int, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    return rng.binomial(n, k / n, size=n_bootstrap) / n


def _checked(k: int, n: int, name: str) -> tuple[int, int]:
    n = check_int(f"{name}: n", n, low=0)
    k = check_int(f"{name}: k", k, low=0, high=max(n, 0))
    return k, n


def proportion_ci(
    k: int, n: int, *, n_bootstrap: int = 1000, confidence: float = 0.95, random_state: int | None = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the rate ``k / n`` (``(nan, nan)`` when ``n = 0`` or ``n_bootstrap = 0``)."""
    k, n = _checked(k, n, "proportion_ci")
    n_bootstrap = check_int("n_bootstrap", n_bootstrap, low=0)
    check_fraction("confidence", confidence)
    if n == 0 or n_bootstrap == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(random_state)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(_draws(k, n, n_bootstrap, rng), [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def proportion_difference_ci(
    k1: int,
    n1: int,
    k2: int,
    n2: int,
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of ``k1/n1 - k2/n2`` (two independent samples resampled separately)."""
    k1, n1 = _checked(k1, n1, "proportion_difference_ci")
    k2, n2 = _checked(k2, n2, "proportion_difference_ci")
    n_bootstrap = check_int("n_bootstrap", n_bootstrap, low=0)
    check_fraction("confidence", confidence)
    if n1 == 0 or n2 == 0 or n_bootstrap == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(random_state)
    diff = _draws(k1, n1, n_bootstrap, rng) - _draws(k2, n2, n_bootstrap, rng)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(diff, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))
