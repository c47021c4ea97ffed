"""C2ST: logistic-regression detection exactly as SDMetrics' ``LogisticDetection`` computes it.

Classifier two-sample test (Lopez-Paz & Oquab 2017) in the SDMetrics form used by TabSyn and
TabCutMix's detection protocol: label real rows 1 and synthetic rows 0; encode numericals as
values with missing ones filled by the *real* mean, boolean columns as 0/1, other categoricals
one-hot (categories of the real table; an unseen synthetic category is all zeros, where
sdmetrics would fail); stratified 3-fold CV of ``SimpleImputer -> RobustScaler ->
LogisticRegression(lbfgs)``; score ``= 1 - mean_folds(max(0.5, AUC) * 2 - 1)``.
Higher is better: 1 = the classifier cannot tell the tables apart.

Differences from sdmetrics, on purpose: folds are seeded (``random_state``; sdmetrics shuffles
unseeded, so its value changes from run to run), and column kinds follow the schema (sdmetrics
decides by dtype, so integer-coded categoricals are numbers there).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import RobustScaler

from tabmem._checks import check_positive_int, check_random_state
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import NA_CATEGORY, Schema
from tabmem.errors import TabmemError
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric


def detection_features(
    encoder: TableEncoder, real: pd.DataFrame, synthetic: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """SDMetrics-HyperTransformer-like encoding (module docstring), fitted on ``real``."""
    schema = encoder.schema
    lead_r, lead_s, tail_r, tail_s = [], [], [], []
    num = list(schema.numerical)
    # the numerical columns as two blocks (a pandas pass per column is slow on wide tables)
    num_r, num_s = real[num].to_numpy(np.float64), synthetic[num].to_numpy(np.float64)
    position = {c: j for j, c in enumerate(num)}
    for c in schema.columns:
        if c in position:
            r, s = num_r[:, position[c]], num_s[:, position[c]]
            mean = np.nanmean(r) if np.isfinite(r).any() else 0.0
            lead_r.append(np.where(np.isnan(r), mean, r))
            lead_s.append(np.where(np.isnan(s), mean, s))
            continue
        cats = [v for v in encoder.categories_[c].tolist() if v != NA_CATEGORY]
        if cats and set(cats) <= {"True", "False"}:  # a boolean column: 0/1, NA -> real mode
            r, s = real[c].to_numpy(object), synthetic[c].to_numpy(object)
            rv = np.where(r == "True", 1.0, np.where(r == "False", 0.0, np.nan))
            sv = np.where(s == "True", 1.0, np.where(s == "False", 0.0, np.nan))
            known = rv[~np.isnan(rv)]
            mode = float(pd.Series(known).mode().iloc[0]) if known.size else 0.0
            lead_r.append(np.where(np.isnan(rv), mode, rv))
            lead_s.append(np.where(np.isnan(sv), mode, sv))
            continue
        levels = encoder.categories_[c]
        lookup = {v: i for i, v in enumerate(levels)}
        for table, out in ((real, tail_r), (synthetic, tail_s)):
            codes = np.fromiter(
                (lookup.get(v, -1) for v in table[c].to_numpy(object)), dtype=np.int64, count=len(table)
            )
            oh = np.zeros((len(table), len(levels)))
            ok = codes >= 0
            oh[np.flatnonzero(ok), codes[ok]] = 1.0
            out.append(oh)

    def stack(lead: list[np.ndarray], tail: list[np.ndarray], n: int) -> np.ndarray:
        parts = ([np.column_stack(lead)] if lead else []) + tail
        return np.hstack(parts) if parts else np.zeros((n, 0))

    return stack(lead_r, tail_r, len(real)), stack(lead_s, tail_s, len(synthetic))


@register_metric
class LogisticDetection(Metric):
    """C2ST with logistic regression (SDMetrics ``LogisticDetection``); breakdown = per-fold AUC."""

    name = "c2st"
    goal = "maximize"
    bounds = (0.0, 1.0)

    def __init__(self, n_splits: int = 3, random_state: int | None = 0, max_iter: int = 100) -> None:
        self.n_splits = n_splits
        self.random_state = random_state
        self.max_iter = max_iter

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        check_positive_int("n_splits", self.n_splits)
        check_positive_int("max_iter", self.max_iter)
        check_random_state(self.random_state)
        if self.n_splits < 2:
            raise TabmemError(f"n_splits must be at least 2 (one fold leaves no rows to test on), got {self.n_splits}")
        prep, _ = prepare_tables(real, synthetic, schema, nan="match")
        for which, table in (("real", prep.real), ("synthetic", prep.synthetic)):
            if len(table) < self.n_splits:  # a test fold would hold one class: its AUC is undefined
                raise TabmemError(
                    f"n_splits={self.n_splits} needs at least {self.n_splits} rows in each table; "
                    f"the {which} table has {len(table)}"
                )
        xr, xs = detection_features(prep.encoder, prep.real, prep.synthetic)
        x = np.concatenate([xr, xs])
        y = np.hstack([np.ones(len(xr)), np.zeros(len(xs))])
        folds = StratifiedKFold(n_splits=self.n_splits, shuffle=True, random_state=self.random_state)
        aucs, scores = [], []
        not_converged = 0  # sdmetrics' max_iter=100 often stops lbfgs early; we record it instead of warning
        for train_idx, test_idx in folds.split(x, y):
            model = Pipeline(
                [
                    ("imputer", SimpleImputer()),
                    ("scaler", RobustScaler()),
                    ("classifier", LogisticRegression(solver="lbfgs", max_iter=self.max_iter)),
                ]
            )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                model.fit(x[train_idx], y[train_idx])
            not_converged += any(issubclass(w.category, ConvergenceWarning) for w in caught)
            for w in caught:  # every other warning of the fit reaches the caller as usual
                if not issubclass(w.category, ConvergenceWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            auc = roc_auc_score(y[test_idx], model.predict_proba(x[test_idx])[:, 1])
            aucs.append(auc)
            scores.append(max(0.5, auc) * 2 - 1)
        table = pd.DataFrame({"fold": np.arange(len(aucs)), "auc": aucs, "score": scores})
        return self._result(
            1.0 - float(np.mean(scores)), table, mean_auc=float(np.mean(aucs)), folds_not_converged=not_converged
        )
