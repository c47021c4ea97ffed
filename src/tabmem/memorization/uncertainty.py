"""Bootstrap confidence intervals of memorization rates and of the excess over the holdout baseline.

A memorization rate is the mean of per-row flags (replica or not). Resampling ``n`` flags with
replacement and taking their mean has exactly the distribution ``Binomial(n, k/n) / n`` (``k``
flagged rows), so the percentile bootstrap is computed by drawing binomials: ``O(n_bootstrap)``
work and memory whatever ``n`` is, and the same interval as resampling rows (tested against a
naive resampling loop and against the exact binomial quantiles). The excess memorization
(synthetic rate minus holdout rate) resamples the two tables independently, as two
independent samples are.

One row has no spread to resample: every bootstrap draw repeats it, and the "interval" would be
the point itself, ``[x, x]``, presented as certainty. An interval therefore needs at least
:data:`MIN_ROWS` rows in each sample; with fewer it is ``(nan, nan)`` (null in ``summary.json``),
and :func:`interval_note` words the warning that says why.
"""

from __future__ import annotations

import numpy as np

from tabmem._checks import check_fraction, check_int

__all__ = ["MIN_ROWS", "interval_note", "proportion_ci", "proportion_difference_ci"]

MIN_ROWS = 2  # rows a sample needs for a bootstrap interval (one row resamples to itself)


def interval_note(field: str, sizes: dict[str, int]) -> str | None:
    """The warning for an interval left null because a sample is too small, or None when it is estimable."""
    small = [f"{n} {name} row{'s' if n != 1 else ''}" for name, n in sizes.items() if n < MIN_ROWS]
    if not small:
        return None
    return (
        f"{field} is null: a bootstrap interval needs at least {MIN_ROWS} rows per table, got {' and '.join(small)} "
        "(one row resamples to itself: the interval would be the point, [x, x])"
    )


def _draws(k: int, n: int, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    return rng.binomial(n, k / n, size=n_bootstrap) / n


def _checked(k: int, n: int, name: str) -> tuple[int, int]:
    n = check_int(f"{name}: n", n, low=0)
    k = check_int(f"{name}: k", k, low=0, high=max(n, 0))
    return k, n


def proportion_ci(
    k: int, n: int, *, n_bootstrap: int = 1000, confidence: float = 0.95, random_state: int | None = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the rate ``k / n`` (``(nan, nan)`` when ``n < MIN_ROWS`` or ``n_bootstrap = 0``)."""
    k, n = _checked(k, n, "proportion_ci")
    n_bootstrap = check_int("n_bootstrap", n_bootstrap, low=0)
    check_fraction("confidence", confidence)
    if n < MIN_ROWS or n_bootstrap == 0:
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
    """Percentile-bootstrap interval of ``k1/n1 - k2/n2`` (two independent samples resampled separately;
    ``(nan, nan)`` when either has fewer than ``MIN_ROWS`` rows)."""
    k1, n1 = _checked(k1, n1, "proportion_difference_ci")
    k2, n2 = _checked(k2, n2, "proportion_difference_ci")
    n_bootstrap = check_int("n_bootstrap", n_bootstrap, low=0)
    check_fraction("confidence", confidence)
    if n1 < MIN_ROWS or n2 < MIN_ROWS or n_bootstrap == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(random_state)
    diff = _draws(k1, n1, n_bootstrap, rng) - _draws(k2, n2, n_bootstrap, rng)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(diff, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))
