"""alpha-precision and beta-recall, the *naive* variant TabSyn reports through synthcity.

Alaa et al., "How Faithful is your Synthetic Data?" (ICML 2022); the naive (no one-class
embedding) version of synthcity's ``AlphaPrecision`` as used by TabSyn/TabCutMix
(``delta_precision_alpha_naive``, ``delta_coverage_beta_naive``; paper brief §4.2):

* rows are encoded as ``[min-max scaled numericals, one-hot categoricals]`` (scaler fitted on
  the real table), center ``c`` = mean real row;
* ``alphas = linspace(0, 1, 30)``; radii ``R_a`` = a-quantiles of real ``||x - c||``;
  ``P(a)`` = share of synthetic rows with ``||y - c|| <= R_a``;
* beta-coverage: for each real row x, ``y*(x)`` = its nearest synthetic row and
  ``r(x)`` = distance to its nearest *other* real row; ``C(a)`` = share of real rows with
  ``||x - y*|| <= r(x)`` and ``||y* - c_syn|| <= q_a`` (a-quantile of ``||y* - c_syn||``,
  ``c_syn`` = mean synthetic row);
* ``alpha-precision = 1 - sum_a |a - P(a)| / sum_a a``, same for beta-recall with ``C``.

Higher is better (1 = ideal). The nearest neighbours are exact (scikit-learn brute force,
chunked BLAS). synthcity requires equal table sizes; tabmem does not (the formulas do not).
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors

from tabmem.errors import TabmemError
from tabmem.metrics._encode import features
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric

N_ALPHAS = 30


def alpha_beta_naive(x: np.ndarray, y: np.ndarray, n_jobs: int | None = 1) -> dict[str, object]:
    """Curves and scores of the naive alpha-precision / beta-recall (module docstring)."""
    if len(x) < 2 or len(y) < 1:
        raise TabmemError("alpha-precision/beta-recall need at least 2 real rows and 1 synthetic row")
    alphas = np.linspace(0.0, 1.0, N_ALPHAS)
    center = x.mean(axis=0)
    radii = np.quantile(np.linalg.norm(x - center, axis=1), alphas)
    syn_to_center = np.linalg.norm(y - center, axis=1)
    precision_curve = (syn_to_center[None, :] <= radii[:, None]).mean(axis=1)

    real_nn = NearestNeighbors(n_neighbors=2, algorithm="brute", n_jobs=n_jobs).fit(x)
    real_to_real = real_nn.kneighbors(x)[0][:, 1]
    syn_nn = NearestNeighbors(n_neighbors=1, algorithm="brute", n_jobs=n_jobs).fit(y)
    dist, idx = syn_nn.kneighbors(x)
    real_to_syn, idx = dist[:, 0], idx[:, 0]
    closest_to_syn_center = np.linalg.norm(y[idx] - y.mean(axis=0), axis=1)
    q = np.quantile(closest_to_syn_center, alphas)
    covered = real_to_syn <= real_to_real
    coverage_curve = (covered[None, :] & (closest_to_syn_center[None, :] <= q[:, None])).mean(axis=1)

    alpha_precision = 1.0 - np.abs(alphas - precision_curve).sum() / alphas.sum()
    beta_recall = 1.0 - np.abs(alphas - coverage_curve).sum() / alphas.sum()
    return {
        "alphas": alphas,
        "precision_curve": precision_curve,
        "coverage_curve": coverage_curve,
        "alpha_precision": float(alpha_precision),
        "beta_recall": float(beta_recall),
    }


def _curves_table(out: dict[str, object]):
    import pandas as pd

    return pd.DataFrame(
        {"alpha": out["alphas"], "precision_curve": out["precision_curve"], "coverage_curve": out["coverage_curve"]}
    )


@register_metric
class AlphaPrecision(Metric):
    """Naive alpha-precision (synthcity ``delta_precision_alpha_naive``); breakdown = the curves."""

    name = "alpha_precision"
    goal = "maximize"
    bounds = (0.0, 1.0)

    def __init__(self, n_jobs: int | None = 1) -> None:
        self.n_jobs = n_jobs

    def _run(self, real, synthetic, schema) -> dict[str, object]:
        prep, _ = prepare_tables(real, synthetic, schema, nan="error")
        x = features(prep.encoder, prep.real, "range")
        y = features(prep.encoder, prep.synthetic, "range")
        return alpha_beta_naive(x, y, self.n_jobs)

    def evaluate(self, real, synthetic, schema, *, test=None, holdout=None) -> MetricResult:
        out = self._run(real, synthetic, schema)
        return self._result(out["alpha_precision"], _curves_table(out), beta_recall=out["beta_recall"])


@register_metric
class BetaRecall(AlphaPrecision):
    """Naive beta-recall (synthcity ``delta_coverage_beta_naive``); breakdown = the curves."""

    name = "beta_recall"

    def evaluate(self, real, synthetic, schema, *, test=None, holdout=None) -> MetricResult:
        out = self._run(real, synthetic, schema)
        return self._result(out["beta_recall"], _curves_table(out), alpha_precision=out["alpha_precision"])
