"""Density attacks: KDE of the synthetic data at the target, and DOMIAS.

* ``density`` (TAPAS "ProbabilityEstimationAttack", the LevAtt paper's "Density Estimator"):
  ``score(x) = log p_S(x)`` with a Gaussian KDE of the synthetic rows;
* ``domias`` (van Breugel et al., AISTATS 2023, Eq. 2): ``score(x) = log p_S(x) - log p_R(x)``,
  the log of the density ratio ``p_S / p_R`` with ``p_R`` a KDE of a reference table of real
  non-member rows. (Logs are monotone, so AUCs equal those of the ratio; they do not
  underflow to ties at 0 as raw densities do far from the data. The original's ``+1e-20`` guard
  is not needed.)

Features: numerical columns and ordinal category codes (as the paper's preprocessing), or
one-hot categoricals (``categorical="onehot"``) or none (``"drop"``); then
``preprocess="standardize"`` (mean/std of the synthetic table, the paper's ``StandardScaler``),
``"pca"`` (standardise, then keep ``n_components`` principal components of the synthetic
table: use it in high dimension, where a full-covariance KDE degrades) or ``"none"``.

KDE exactly as ``scipy.stats.gaussian_kde``: kernel covariance = the data covariance
(``ddof=1``) times ``factor^2``, ``factor`` by ``bandwidth="scott"`` (``n^(-1/(d+4))``),
``"silverman"`` (``(n (d+2) / 4)^(-1/(d+4))``) or a number. Defaults follow the sources:
Silverman for ``density`` (the paper's code), Scott for ``domias`` (DOMIAS' code). Directions
with zero variance (constant or collinear features) are projected out before the KDE (scipy
raises on a singular covariance); the density is then that of the remaining subspace.
Evaluation is blocked and exact in float64: squared Mahalanobis distances by BLAS, log-sum-exp;
no query x data matrix is ever whole: a block holds 4M cells, or fewer when the enclosing
:func:`~tabmem.neighbors.settings.working_memory` allows less (``tabmem attack --memory-gb``). Another
block size gives the same numbers up to the last bits (BLAS picks its kernel by the block's shape:
relative differences near 1e-15); the same settings give the same bytes.

Extreme magnitudes: the standardisation's mean and standard deviation are computed without
overflow (each column divided by a power of two near its largest magnitude first, which is
exact), so a synthetic value of 1e308 is an outlier in standard units, not an infinite
covariance. A target too far from every synthetic row for its squared distance to be finite
has log density ``-inf`` (its density underflows), which the evaluation ranks below every
finite score.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from tabmem._checks import check_positive_int
from tabmem.attacks._features import fit_encoder, validate_targets
from tabmem.attacks.base import Attack, register_attack
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.neighbors.settings import current_memory

_BLOCK_CELLS = 4_000_000  # query x data cells per block without a memory budget (32 MB of float64)
_CELL_BYTES = 24  # working memory per query x data cell of a block: the distances and a mask (16 measured)


class GaussianKDE:
    """Blocked, exact Gaussian KDE equal to ``scipy.stats.gaussian_kde`` (log density), with a rank guard."""

    def __init__(self, bandwidth: str | float = "scott") -> None:
        self.bandwidth = bandwidth

    def fit(self, data: np.ndarray) -> "GaussianKDE":
        x = np.asarray(data, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] < 2:
            raise TabmemError(f"KDE needs at least 2 rows, got {x.shape[0] if x.ndim == 2 else x.shape}")
        n, d = x.shape
        mean = x.mean(axis=0)
        cov = np.cov(x, rowvar=False, ddof=1).reshape(d, d)
        evals, evecs = np.linalg.eigh(cov)
        tol = max(evals.max(initial=0.0), 0.0) * d * 1e-12
        keep = evals > tol
        if not keep.any():
            raise TabmemError("KDE: every feature is constant in the data; there is no density to estimate")
        k = int(keep.sum())
        factor = _factor(self.bandwidth, n, k)
        # whitening so that squared Euclidean distance = (x - y)^T (factor^2 cov)^-1 (x - y)
        self.proj_ = evecs[:, keep] / (np.sqrt(evals[keep]) * factor)
        self.center_ = mean
        self.z_ = (x - mean) @ self.proj_
        self.z_sq_ = np.einsum("ij,ij->i", self.z_, self.z_)
        self.factor_ = factor
        self.dim_ = k
        self.n_ = n
        # log of the normalising constant: n * sqrt(det(2 pi factor^2 cov))
        self.log_norm_ = np.log(n) + 0.5 * (k * np.log(2 * np.pi) + np.sum(np.log(evals[keep] * factor**2)))
        return self

    def logpdf(self, points: np.ndarray) -> np.ndarray:
        p = np.asarray(points, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            zq = (p - self.center_) @ self.proj_
            q_sq = np.einsum("ij,ij->i", zq, zq)
        far = ~np.isfinite(q_sq)  # squared distance beyond float64: the density underflows to 0
        zq[far] = 0.0
        q_sq[far] = 0.0
        out = np.empty(len(p))
        step = self.block_rows()
        for a in range(0, len(p), step):
            b = min(a + step, len(p))
            # q_sq + z_sq - 2 (zq . z), in this order, in two buffers
            d2 = q_sq[a:b, None] + self.z_sq_[None, :]
            cross = zq[a:b] @ self.z_.T
            cross *= 2.0
            d2 -= cross
            del cross
            np.maximum(d2, 0.0, out=d2)
            d2 *= -0.5
            out[a:b] = log_sum_exp_rows(d2)
        redo = np.flatnonzero(~np.isfinite(out))  # a non-finite row (overflowing distances): scipy's own rules
        if redo.size:
            d2 = q_sq[redo, None] + self.z_sq_[None, :] - 2.0 * (zq[redo] @ self.z_.T)
            np.maximum(d2, 0.0, out=d2)
            out[redo] = logsumexp(-0.5 * d2, axis=1)
        out = out - self.log_norm_
        out[far] = -np.inf
        return out

    def block_rows(self) -> int:
        """Query rows per block: :data:`_BLOCK_CELLS` cells, fewer when the enclosing
        :func:`~tabmem.neighbors.settings.working_memory` holds less at :data:`_CELL_BYTES` a cell (at least one row)."""
        budget = current_memory()
        # a budget only shrinks the blocks: larger ones are no faster (and fault in fresh pages each time)
        cells = _BLOCK_CELLS if budget is None else min(_BLOCK_CELLS, budget // _CELL_BYTES)
        return max(1, cells // max(self.n_, 1))


def log_sum_exp_rows(a: np.ndarray) -> np.ndarray:
    """``scipy.special.logsumexp(a, axis=1)`` of a 2-D float64 array, overwriting ``a``: one ``exp`` pass, no copy.

    The arithmetic of scipy's (1.15 and later) step for step, so the values are the same to the
    bit: the row maxima (``m`` of them) are taken out of the sum, ``s`` = the sum of the other
    ``exp(a - max)`` over ``m``, result ``log1p(s) + log(m) + max``; scipy also computes
    ``exp(a)`` once more for rows whose result is not finite, which finite rows never are (the
    few rows that are not: the caller's to redo, see :meth:`GaussianKDE.logpdf`).
    """
    a_max = a.max(axis=1, keepdims=True)
    is_max = a == a_max
    m = is_max.sum(axis=1, keepdims=True, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        a -= a_max
        np.exp(a, out=a)
    a[is_max] = 0.0
    s = a.sum(axis=1, keepdims=True)
    s = np.where(s == 0, s, s / m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.log1p(s) + np.log(m) + a_max)[:, 0]


def _factor(bandwidth: str | float, n: int, d: int) -> float:
    if bandwidth == "scott":
        return float(n ** (-1.0 / (d + 4)))
    if bandwidth == "silverman":
        return float((n * (d + 2) / 4.0) ** (-1.0 / (d + 4)))
    if (
        isinstance(bandwidth, (int, float))
        and not isinstance(bandwidth, bool)
        and np.isfinite(bandwidth)
        and bandwidth > 0
    ):
        return float(bandwidth)
    raise TabmemError(f"bandwidth must be 'scott', 'silverman' or a positive number, got {bandwidth!r}")


class _Features:
    """Target/synthetic rows -> KDE features (see module docstring)."""

    def __init__(self, categorical: str, preprocess: str, n_components: int | None) -> None:
        if categorical not in ("ordinal", "onehot", "drop"):
            raise TabmemError(f"categorical must be 'ordinal', 'onehot' or 'drop', got {categorical!r}")
        if preprocess not in ("standardize", "pca", "none"):
            raise TabmemError(f"preprocess must be 'standardize', 'pca' or 'none', got {preprocess!r}")
        check_positive_int("n_components", n_components, allow_none=True)
        self.categorical, self.preprocess, self.n_components = categorical, preprocess, n_components

    def raw(self, enc: TableEncoder, clean: pd.DataFrame) -> np.ndarray:
        parts = [enc.numeric(clean)]
        if self.categorical == "ordinal":
            parts.append(enc.codes(clean).astype(np.float64))
        elif self.categorical == "onehot":
            parts.append(enc.one_hot(clean))
        x = np.concatenate(parts, axis=1)
        if x.shape[1] == 0:
            raise TabmemError("density attacks need at least one feature (no numerical columns and categorical='drop')")
        return x

    def fit(self, enc: TableEncoder, clean: pd.DataFrame) -> "_Features":
        x = self.raw(enc, clean)
        self.mean_, std = _mean_std(x)
        self.std_ = np.where(std > 0, std, 1.0)
        if self.preprocess == "pca":
            z = (x - self.mean_) / self.std_
            _, s, vt = np.linalg.svd(z, full_matrices=False)
            k = self.n_components or min(10, vt.shape[0])
            if k > vt.shape[0]:
                raise TabmemError(f"n_components={k} exceeds the {vt.shape[0]} available feature dimensions")
            self.components_ = vt[:k].T
        return self

    def transform(self, enc: TableEncoder, clean: pd.DataFrame) -> np.ndarray:
        x = self.raw(enc, clean)
        if self.preprocess == "none":
            return x
        with np.errstate(over="ignore", invalid="ignore"):
            z = (x - self.mean_) / self.std_
            return z @ self.components_ if self.preprocess == "pca" else z


def _mean_std(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and population std without overflow (exact power-of-two rescaling first)."""
    with np.errstate(all="ignore"):
        peak = np.abs(x).max(axis=0, initial=0.0)
        shift = np.where(peak > 0, np.frexp(peak)[1], 0)
        y = np.ldexp(x, -shift[None, :])
        return np.ldexp(y.mean(axis=0), shift), np.ldexp(y.std(axis=0), shift)


@register_attack("density")
class DensityAttack(Attack):
    """Log density of a Gaussian KDE of the synthetic rows at the target (see module docstring)."""

    display_name = "density (KDE)"
    short_name = "density"

    supports_nan = False

    def __init__(
        self,
        bandwidth: str | float = "silverman",
        categorical: str = "ordinal",
        preprocess: str = "standardize",
        n_components: int | None = None,
        nan: str = "error",
    ) -> None:
        self.bandwidth = bandwidth
        self.categorical = categorical
        self.preprocess = preprocess
        self.n_components = n_components
        self.nan = nan

    def _fit(self, synthetic: pd.DataFrame, schema: Schema, reference: pd.DataFrame | None) -> None:
        if self.nan != "error":
            raise TabmemError(
                "density attacks need complete rows: nan must be 'error' (drop rows with missing values first)"
            )
        self.encoder_, clean = fit_encoder(synthetic, schema, "error")
        self.features_ = _Features(self.categorical, self.preprocess, self.n_components).fit(self.encoder_, clean)
        self.kde_ = GaussianKDE(self.bandwidth).fit(self.features_.transform(self.encoder_, clean))

    def _features(self, table: pd.DataFrame, name: str) -> np.ndarray:
        return self.features_.transform(self.encoder_, validate_targets(self.encoder_, table, "error", name=name))

    def _score(self, targets: pd.DataFrame) -> np.ndarray:
        return self.kde_.logpdf(self._features(targets, "targets"))


@register_attack("domias")
class DOMIAS(DensityAttack):
    """``log p_S(x) - log p_R(x)``: synthetic-vs-reference density ratio (van Breugel et al. 2023)."""

    display_name = "DOMIAS"
    short_name = None  # its registered name
    cost_factor = 2.0  # two densities

    needs_reference = True

    def __init__(
        self,
        bandwidth: str | float = "scott",
        categorical: str = "ordinal",
        preprocess: str = "standardize",
        n_components: int | None = None,
        nan: str = "error",
    ) -> None:
        super().__init__(bandwidth, categorical, preprocess, n_components, nan)

    def _fit(self, synthetic: pd.DataFrame, schema: Schema, reference: pd.DataFrame | None) -> None:
        super()._fit(synthetic, schema, None)
        assert reference is not None
        self.reference_kde_ = GaussianKDE(self.bandwidth).fit(self._features(reference, "reference"))

    def _score(self, targets: pd.DataFrame) -> np.ndarray:
        x = self._features(targets, "targets")
        return self.kde_.logpdf(x) - self.reference_kde_.logpdf(x)
