"""Maximum mean discrepancy (MMD) between real and synthetic rows.

``MMD^2 = E k(x,x') + E k(y,y') - 2 E k(x,y)`` (Gretton et al., JMLR 2012) with the RBF kernel
``k(a,b) = exp(-||a-b||^2 / (2 sigma^2))`` on *standardised* encodings (numericals
``(x - mean)/std`` with real-table statistics, categoricals one-hot), ``sigma`` = the median
pairwise distance of a pooled sample (median heuristic).

Estimators:

* ``"unbiased"`` (default): the U-statistic (diagonal terms excluded), computed in row blocks
  (memory ``O(block * n)``), on at most ``max_samples`` rows per side (seeded subsample;
  ``None`` = all rows, quadratic time);
* ``"linear"``: Gretton's linear-time estimator over ``min(n, m) // 2`` disjoint pairs
  (unbiased, higher variance, ``O(n)``).

``mode="paper"`` reproduces the LevAtt code (synthcity's ``MaximumMeanDiscrepancy``,
as the LevAtt paper uses it): the *biased* V-statistic with ``exp(-gamma ||a-b||^2)``, ``gamma = 1`` on
**raw** numerical values plus one-hot. It is scale-dependent: on columns with large ranges
every cross kernel is ~0 and the value collapses to ~``1/n + 1/m`` whatever the data.

Extreme magnitudes: when a row's squared norm in the encoding overflows float64 (a value near
1e154 real standard deviations or more), the kernel cannot be evaluated; the metric then raises
a :class:`~tabmem.errors.TabmemError` naming the column (``quality_report`` lists it under
``skipped`` with that reason) instead of returning NaN.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from tabmem._checks import check_positive_int, check_random_state
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics._encode import block_rows, features
from tabmem.metrics.base import (
    Metric,
    MetricResult,
    prepare_tables,
    register_metric,
)


def _sq_dists(a: np.ndarray, b: np.ndarray, a_sq: np.ndarray, b_sq: np.ndarray) -> np.ndarray:
    d = a_sq[:, None] + b_sq[None, :] - 2.0 * (a @ b.T)
    np.maximum(d, 0.0, out=d)
    return d


def kernel_sum(a: np.ndarray, b: np.ndarray, gamma: float, *, exclude_diagonal: bool = False) -> float:
    """``sum_{i,j} exp(-gamma ||a_i - b_j||^2)`` in row blocks (``exclude_diagonal`` when a is b).

    The exponent ``2 gamma <a,b> - gamma |a|^2 - gamma |b|^2`` comes out of one GEMM on
    augmented operands ``[2 gamma a, -gamma |a|^2, -1] @ [b, 1, gamma |b|^2]^T``; then clip at 0,
    ``exp`` and sum in place: three passes over each (block x n) slab, memory O(block x n).
    """
    a_sq = np.einsum("ij,ij->i", a, a)
    b_sq = np.einsum("ij,ij->i", b, b)
    a_aug = np.column_stack([2.0 * gamma * a, -gamma * a_sq, -np.ones(len(a))])
    b_aug_t = np.ascontiguousarray(np.column_stack([b, np.ones(len(b)), gamma * b_sq]).T)
    step = block_rows(len(b))
    total = 0.0
    buf = np.empty((min(step, len(a)), len(b)))
    for start in range(0, len(a), step):
        stop = min(start + step, len(a))
        k = buf[: stop - start]
        np.matmul(a_aug[start:stop], b_aug_t, out=k)
        np.minimum(k, 0.0, out=k)
        np.exp(k, out=k)
        if exclude_diagonal:
            idx = np.arange(start, stop)
            k[idx - start, idx] = 0.0
        total += float(k.sum())
    return total


def median_bandwidth(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_max: int = 1000) -> float:
    """Median pairwise Euclidean distance of up to ``n_max`` pooled rows (median heuristic)."""
    pooled = np.vstack([x, y])
    if len(pooled) > n_max:
        pooled = pooled[rng.choice(len(pooled), n_max, replace=False)]
    sq = np.einsum("ij,ij->i", pooled, pooled)
    d = _sq_dists(pooled, pooled, sq, sq)
    iu = np.triu_indices(len(pooled), k=1)
    med = float(np.sqrt(np.median(d[iu]))) if len(iu[0]) else 0.0
    return med if med > 0 else 1.0


def mmd2_unbiased(x: np.ndarray, y: np.ndarray, gamma: float) -> float:
    """Unbiased U-statistic of MMD^2 for the kernel ``exp(-gamma ||.||^2)``."""
    n, m = len(x), len(y)
    if n < 2 or m < 2:
        raise TabmemError("MMD needs at least 2 rows in each table")
    kxx = kernel_sum(x, x, gamma, exclude_diagonal=True) / (n * (n - 1))
    kyy = kernel_sum(y, y, gamma, exclude_diagonal=True) / (m * (m - 1))
    kxy = kernel_sum(x, y, gamma) / (n * m)
    return kxx + kyy - 2.0 * kxy


def mmd2_biased(x: np.ndarray, y: np.ndarray, gamma: float) -> float:
    """Biased V-statistic ``mean Kxx + mean Kyy - 2 mean Kxy`` (synthcity/LevAtt)."""
    n, m = len(x), len(y)
    return kernel_sum(x, x, gamma) / n**2 + kernel_sum(y, y, gamma) / m**2 - 2.0 * kernel_sum(x, y, gamma) / (n * m)


def mmd2_linear(x: np.ndarray, y: np.ndarray, gamma: float) -> float:
    """Gretton et al. (2012, Lemma 14) linear-time unbiased estimate over disjoint pairs."""
    p = min(len(x), len(y)) // 2
    if p < 1:
        raise TabmemError("the linear MMD estimator needs at least 2 rows in each table")
    x1, x2, y1, y2 = x[0 : 2 * p : 2], x[1 : 2 * p : 2], y[0 : 2 * p : 2], y[1 : 2 * p : 2]

    def k(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.exp(-gamma * np.einsum("ij,ij->i", a - b, a - b))

    return float(np.mean(k(x1, x2) + k(y1, y2) - k(x1, y2) - k(x2, y1)))


def _check_finite_norms(matrices: dict[str, np.ndarray], schema: Schema, numeric: str) -> None:
    """Raise, naming the column, when a squared row norm of an encoding is not finite."""
    for name, m in matrices.items():
        with np.errstate(over="ignore", invalid="ignore"):
            sq = np.einsum("ij,ij->i", m, m)
        if np.isfinite(sq).all():
            continue
        n_num = len(schema.numerical)
        peaks = np.abs(m[:, :n_num]).max(axis=0, initial=0.0) if n_num else np.zeros(0)
        j = int(np.argmax(np.where(np.isfinite(peaks), peaks, np.inf))) if n_num else 0
        unit = "real standard deviations" if numeric == "standardized" else "raw units"
        col = schema.numerical[j] if n_num else "?"
        raise TabmemError(
            f"column {col!r} of the {name} table reaches {peaks[j]:.3g} {unit}: squared distances overflow float64, "
            "so the kernel is undefined (rescale or clip the column)"
        )


@register_metric
class MMD(Metric):
    """RBF-kernel MMD^2 between real and synthetic (lower is better; 0 = same distribution).

    Parameters
    ----------
    mode: ``"standardized"`` (default, median-heuristic bandwidth) or ``"paper"`` (gamma = 1 on raw values).
    estimator: ``"unbiased"`` or ``"linear"`` (ignored in paper mode, which is the biased V-statistic).
    max_samples: rows per side for the quadratic estimators (seeded subsample; ``None`` = all).
    gamma: override the kernel's gamma (``exp(-gamma ||a-b||^2)``).
    """

    name = "mmd"
    goal = "minimize"
    bounds = (-np.inf, 2.0)

    def __init__(
        self,
        mode: Literal["standardized", "paper"] = "standardized",
        estimator: Literal["unbiased", "linear"] = "unbiased",
        max_samples: int | None = 5000,
        gamma: float | None = None,
        random_state: int | None = 0,
    ) -> None:
        self.mode = mode
        self.estimator = estimator
        self.max_samples = max_samples
        self.gamma = gamma
        self.random_state = random_state

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        if self.mode not in ("standardized", "paper"):
            raise TabmemError(f"mode must be 'standardized' or 'paper', got {self.mode!r}")
        if self.estimator not in ("unbiased", "linear"):
            raise TabmemError(f"estimator must be 'unbiased' or 'linear', got {self.estimator!r}")
        check_positive_int("max_samples", self.max_samples, allow_none=True)
        if self.gamma is not None and not (np.isfinite(self.gamma) and self.gamma > 0):
            raise TabmemError(f"gamma must be a positive number, got {self.gamma!r}")
        rng = np.random.default_rng(check_random_state(self.random_state))
        prep, _ = prepare_tables(real, synthetic, schema, nan="error")
        numeric = "raw" if self.mode == "paper" else "standardized"
        with np.errstate(over="ignore", invalid="ignore"):
            x = features(prep.encoder, prep.real, numeric)
            y = features(prep.encoder, prep.synthetic, numeric)
        _check_finite_norms({"real": x, "synthetic": y}, schema, numeric)
        if self.mode == "paper":
            gamma = 1.0 if self.gamma is None else float(self.gamma)
            value = mmd2_biased(x, y, gamma)
            return self._result(
                value, None, mode="paper", estimator="biased", gamma=gamma, n_real=len(x), n_synthetic=len(y)
            )
        if self.estimator == "linear":
            x = x[rng.permutation(len(x))]
            y = y[rng.permutation(len(y))]
        elif self.max_samples is not None:
            if len(x) > self.max_samples:
                x = x[rng.choice(len(x), self.max_samples, replace=False)]
            if len(y) > self.max_samples:
                y = y[rng.choice(len(y), self.max_samples, replace=False)]
        if self.gamma is None:
            sigma = median_bandwidth(x, y, rng)
            gamma = 1.0 / (2.0 * sigma**2)
        else:
            gamma, sigma = float(self.gamma), float(np.sqrt(1.0 / (2.0 * self.gamma)))
        value = mmd2_linear(x, y, gamma) if self.estimator == "linear" else mmd2_unbiased(x, y, gamma)
        return self._result(
            value,
            None,
            mode=self.mode,
            estimator=self.estimator,
            gamma=gamma,
            bandwidth=sigma,
            n_real=len(x),
            n_synthetic=len(y),
        )
