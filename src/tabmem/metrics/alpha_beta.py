"""alpha-precision and beta-recall, the *naive* variant TabSyn reports through synthcity.

Alaa et al., "How Faithful is your Synthetic Data?" (ICML 2022); the naive (no one-class
embedding) version of synthcity's ``AlphaPrecision`` as used by TabSyn/TabCutMix
(``delta_precision_alpha_naive``, ``delta_coverage_beta_naive``, as TabCutMix reports them):

* rows are encoded as ``[min-max scaled numericals, one-hot categoricals]`` (scaler fitted on
  the real table), center ``c`` = mean real row;
* ``alphas = linspace(0, 1, 30)``; radii ``R_a`` = a-quantiles of real ``||x - c||``;
  ``P(a)`` = share of synthetic rows with ``||y - c|| <= R_a``;
* beta-coverage: for each real row x, ``y*(x)`` = its nearest synthetic row and
  ``r(x)`` = distance to its nearest *other* real row; ``C(a)`` = share of real rows with
  ``||x - y*|| <= r(x)`` and ``||y* - c_syn|| <= q_a`` (a-quantile of ``||y* - c_syn||``,
  ``c_syn`` = mean synthetic row);
* ``alpha-precision = 1 - sum_a |a - P(a)| / sum_a a``, same for beta-recall with ``C``.

Higher is better (1 = ideal). The nearest neighbours are exact: the project's blocked search
(:mod:`tabmem.neighbors.blocked`, float32 GEMM candidates refined in float64; ties go to the
lowest synthetic index) on these features; :func:`alpha_beta_naive` also works on plain arrays
(scikit-learn brute force). synthcity requires equal table sizes; tabmem does not (the formulas
do not).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors

from tabmem._checks import check_n_jobs, resolve_n_jobs
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics._encode import features
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric
from tabmem.neighbors.distances import L2Distance, Queries
from tabmem.neighbors.index import NeighborIndex

N_ALPHAS = 30


_TAME = 2.0**40  # feature magnitude beyond which a row is evaluated exactly (as in L2Distance)


class _FeatureL2(L2Distance):
    """Euclidean distance on ``[min-max scaled numericals, one-hot]`` (real-table statistics)."""

    name = "alpha_beta_l2"

    def prepare(self, clean: pd.DataFrame, *, fitting: bool = False) -> Queries:
        enc = self.encoder_
        feats = features(enc, clean, "range")
        # rows far outside the real range (a synthetic 1e12 against ranges near 1) take the exact path, as in L2Distance
        absmax = np.abs(feats).max(axis=1) if feats.shape[1] else np.zeros(len(feats))
        tame = absmax <= _TAME
        fast = feats if tame.all() else np.where(tame[:, None], feats, 0.0)
        sq = np.einsum("ij,ij->i", fast, fast)
        n_num = len(enc.schema.numerical)
        q = Queries(
            num=feats[:, :n_num],
            miss=np.zeros((len(feats), n_num), bool),
            onehot=feats[:, n_num:].astype(np.float32),
            codes=enc.codes(clean),
        )
        q.feats, q.sq = feats, sq  # type: ignore[attr-defined]
        q.tame = tame
        if fitting:
            q.aug = np.column_stack([fast, np.ones(len(feats)), sq]).astype(np.float32)
        else:
            q.aug = np.column_stack([-2.0 * fast, sq, np.ones(len(feats))]).astype(np.float32)
        return q


def _sklearn_neighbors(x: np.ndarray, y: np.ndarray, n_jobs: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_jobs = resolve_n_jobs(n_jobs)  # scikit-learn reads None as 1; the library's rule reads it as every CPU
    real_nn = NearestNeighbors(n_neighbors=2, algorithm="brute", n_jobs=n_jobs).fit(x)
    real_to_real = real_nn.kneighbors(x)[0][:, 1]
    dist, idx = NearestNeighbors(n_neighbors=1, algorithm="brute", n_jobs=n_jobs).fit(y).kneighbors(x)
    return real_to_real, dist[:, 0], idx[:, 0]


def _blocked_neighbors(
    encoder: TableEncoder, real: pd.DataFrame, synthetic: pd.DataFrame, n_jobs: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact neighbours on the real-table features: real->real (2nd, counting itself) and real->synthetic."""
    on_real = NeighborIndex(_FeatureL2(), n_jobs=n_jobs).fit(None, encoder=encoder, clean=real)
    _, d_rr = on_real.kneighbors(on_real.distance_.prepare(real), k=2)
    on_syn = NeighborIndex(_FeatureL2(), n_jobs=n_jobs).fit(None, encoder=encoder, clean=synthetic)
    idx, d_rs = on_syn.kneighbors(on_syn.distance_.prepare(real), k=1)
    return d_rr[:, 1], d_rs[:, 0], idx[:, 0]


def _norms(diff: np.ndarray) -> np.ndarray:
    """Row norms (``np.linalg.norm``; finite inside the value domain: features are at most ~1e131)."""
    return np.linalg.norm(diff, axis=1)


def alpha_beta_naive(
    x: np.ndarray,
    y: np.ndarray,
    n_jobs: int | None = 1,
    *,
    neighbors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> dict[str, object]:
    """Curves and scores of the naive alpha-precision / beta-recall (module docstring).

    ``neighbors`` = (distance of each real row to its 2nd nearest real row counting itself,
    distance to its nearest synthetic row, index of that row); computed with scikit-learn when
    not given.
    """
    if len(x) < 2 or len(y) < 1:
        raise TabmemError("alpha-precision/beta-recall need at least 2 real rows and 1 synthetic row")
    alphas = np.linspace(0.0, 1.0, N_ALPHAS)
    center = x.mean(axis=0)
    radii = np.quantile(_norms(x - center), alphas)
    syn_to_center = _norms(y - center)
    precision_curve = (syn_to_center[None, :] <= radii[:, None]).mean(axis=1)

    real_to_real, real_to_syn, idx = _sklearn_neighbors(x, y, n_jobs) if neighbors is None else neighbors
    closest_to_syn_center = _norms(y[idx] - y.mean(axis=0))
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


def _curves_table(out: dict[str, object]) -> pd.DataFrame:
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
        check_n_jobs(self.n_jobs)
        prep, _ = prepare_tables(real, synthetic, schema, nan="error")
        if len(prep.real) < 2:
            raise TabmemError("alpha-precision/beta-recall need at least 2 real rows")
        x = features(prep.encoder, prep.real, "range")
        y = features(prep.encoder, prep.synthetic, "range")
        nn = _blocked_neighbors(prep.encoder, prep.real, prep.synthetic, self.n_jobs)
        return alpha_beta_naive(x, y, neighbors=nn)

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        out = self._run(real, synthetic, schema)  # one run gives both: the value is this metric's, details the other
        other = "beta_recall" if self.name == "alpha_precision" else "alpha_precision"
        return self._result(out[self.name], _curves_table(out), **{other: out[other]})


@register_metric
class BetaRecall(AlphaPrecision):
    """Naive beta-recall (synthcity ``delta_coverage_beta_naive``); breakdown = the curves."""

    name = "beta_recall"
