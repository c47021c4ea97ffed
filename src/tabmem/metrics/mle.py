"""Machine-learning efficacy (MLE): train on synthetic, test on real, with the TabSyn protocol.

TabSyn's ``eval/mle`` (reused by TabCutMix):

* features: a numerical column becomes ``log(max(x, 0.01))`` when its minimum in the *training*
  table is >= 0 and its maximum >= 1000, else ``(x - min) / (max - min) * 5``; categoricals
  one-hot (categories unseen in training -> all zeros); the target is label-encoded;
* 1/9 of the training table (seeded shuffle) is held out for validation;
* XGBoost grid ``n_estimators {10, 50, 100} x min_child_weight {1, 10} x max_depth {5, 10, 20}
  x gamma {0, 1}`` (36 configurations), the configuration with the best validation score
  (ROC-AUC for binary, macro-F1 for multiclass, RMSE for regression) is refitted on the other
  8/9 and scored on the real test table: **ROC-AUC** (binary), **macro-F1** (multiclass),
  **RMSE and R^2** (regression; the value is RMSE, R^2 in the details).

The same procedure on the *real* training table gives the reference line (``real_*`` details).

Differences from TabSyn's script, on purpose: min/max are taken per column (TabSyn reuses the
first numerical column's min/max for all columns, a bug), the regression target is used as is
(TabSyn fits ``log(clip(y, 1, 20000))``), seeds are explicit, and ``grid="tiny"`` (2 configs)
exists for fast tests. XGBoost runs with ``tree_method="hist"`` on ``n_jobs`` threads.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.metrics import f1_score, mean_squared_error, r2_score, roc_auc_score

from tabmem._checks import check_random_state, resolve_n_jobs
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError, name_setting
from tabmem.metrics.base import Metric, MetricResult, prepare_tables, register_metric

TABSYN_GRID: dict[str, list[Any]] = {
    "n_estimators": [10, 50, 100],
    "min_child_weight": [1, 10],
    "max_depth": [5, 10, 20],
    "gamma": [0.0, 1.0],
}
TINY_GRID: dict[str, list[Any]] = {"n_estimators": [10, 30], "min_child_weight": [1], "max_depth": [4], "gamma": [0.0]}


def expand_grid(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    keys = sorted(grid)
    return [dict(zip(keys, values)) for values in product(*(grid[k] for k in keys))]


class _Features:
    """TabSyn feature transform fitted on one training table."""

    def __init__(self, encoder: TableEncoder, train: pd.DataFrame) -> None:
        schema = encoder.schema
        self.num_cols = [c for c in schema.numerical if c != schema.target]
        self.cat_cols = [c for c in schema.categorical if c != schema.target]
        x = (
            np.column_stack([train[c].to_numpy(np.float64) for c in self.num_cols])
            if self.num_cols
            else np.zeros((len(train), 0))
        )
        self.min_ = x.min(axis=0) if len(x) else np.zeros(x.shape[1])
        self.max_ = x.max(axis=0) if len(x) else np.zeros(x.shape[1])
        self.log_ = (self.min_ >= 0) & (self.max_ >= 1e3)
        self.levels_ = {c: encoder.categories_[c] for c in self.cat_cols}

    def transform(self, table: pd.DataFrame) -> np.ndarray:
        parts = []
        if self.num_cols:
            x = np.column_stack([table[c].to_numpy(np.float64) for c in self.num_cols])
            rng = np.where(self.max_ > self.min_, self.max_ - self.min_, 1.0)
            scaled = (x - self.min_) / rng * 5.0
            logged = np.log(np.maximum(x, 1e-2))
            parts.append(np.where(self.log_, logged, scaled))
        for c in self.cat_cols:
            levels = self.levels_[c]
            lookup = {v: i for i, v in enumerate(levels)}
            codes = np.fromiter(
                (lookup.get(v, -1) for v in table[c].to_numpy(object)), dtype=np.int64, count=len(table)
            )
            oh = np.zeros((len(table), len(levels)), dtype=np.float32)
            ok = codes >= 0
            oh[np.flatnonzero(ok), codes[ok]] = 1.0
            parts.append(oh)
        return np.hstack(parts).astype(np.float32) if parts else np.zeros((len(table), 0), np.float32)


def _score(
    task: str, y_true: np.ndarray, model: Any, x: np.ndarray, classes: np.ndarray, positive: Any = None
) -> dict[str, float]:
    """Test scores; for ``binclass`` the AUC ranks ``positive`` (the real table's positive label)
    by its predicted probability, whatever labels the training table held."""
    if task == "regression":
        pred = model.predict(x)
        return {"rmse": float(np.sqrt(mean_squared_error(y_true, pred))), "r2": float(r2_score(y_true, pred))}
    if model is None:  # one class only in training: constant prediction
        pred = np.full(len(y_true), classes[0], dtype=object)
        p = np.zeros((len(y_true), len(classes)))
    else:
        p = model.predict_proba(x)
        pred = classes[np.argmax(p, axis=1)]
    out = {"macro_f1": float(f1_score(y_true.astype(str), pred.astype(str), average="macro"))}
    if task == "binclass":
        hit = np.flatnonzero(classes == positive)
        # a label never trained on is never predicted: a constant score, AUC 0.5
        proba = p[:, hit[0]] if len(hit) else np.zeros(len(y_true))
        y_bin = (y_true == positive).astype(int)
        out["auc"] = float(roc_auc_score(y_bin, proba)) if len(np.unique(y_bin)) == 2 else float("nan")
    return out


def evaluate_mle(
    encoder: TableEncoder,
    train: pd.DataFrame,
    test: pd.DataFrame,
    *,
    grid: dict[str, list[Any]],
    random_state: int,
    n_jobs: int,
) -> dict[str, Any]:
    """Run the TabSyn protocol for one training table; returns test scores and the chosen config."""
    try:
        import xgboost as xgb
    except ModuleNotFoundError:  # pragma: no cover - depends on the environment
        raise TabmemError("mle needs xgboost: pip install 'tabmem[quality]' (xgboost-cpu)") from None

    schema = encoder.schema
    task, target = schema.task, schema.target
    feats = _Features(encoder, train)
    if not feats.num_cols and not feats.cat_cols:
        raise TabmemError(f"mle needs at least one feature column besides the target {target!r}")
    x_all, x_test = feats.transform(train), feats.transform(test)
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(len(train))
    n_val = len(train) // 9
    val_idx, fit_idx = perm[:n_val], perm[n_val:]
    if n_val < 1:
        raise TabmemError(f"MLE needs at least 9 training rows (1/9 is held out for validation), got {len(train)}")
    if task == "regression":
        y_all = train[target].to_numpy(np.float64)
        y_test = test[target].to_numpy(np.float64)
        classes = np.array([])
    else:
        y_raw = train[target].to_numpy(object)
        y_test = test[target].to_numpy(object)
        classes = np.array(sorted(set(y_raw[fit_idx].tolist())), dtype=object)
        lookup = {v: i for i, v in enumerate(classes)}
    # binclass: the positive label is the real table's second category, even where the training
    # (synthetic) table lacks it or holds labels the real table does not
    levels = encoder.categories_[target].tolist() if task == "binclass" else []
    positive = levels[1] if len(levels) > 1 else None
    configs = expand_grid(grid)

    def fit(params: dict[str, Any], idx: np.ndarray) -> Any:
        common = dict(tree_method="hist", n_jobs=n_jobs, random_state=random_state, verbosity=0)
        if task == "regression":
            return xgb.XGBRegressor(**params, **common).fit(x_all[idx], y_all[idx])
        if len(classes) < 2:
            return None
        y_codes = np.fromiter((lookup[v] for v in y_raw[idx]), dtype=np.int64, count=len(idx))
        return xgb.XGBClassifier(**params, **common).fit(x_all[idx], y_codes)

    key, sign = {"binclass": ("auc", 1), "multiclass": ("macro_f1", 1), "regression": ("rmse", -1)}[task]
    y_val = y_all[val_idx] if task == "regression" else y_raw[val_idx]
    results = []
    for params in configs:
        model = fit(params, fit_idx)
        s = _score(task, y_val, model, x_all[val_idx], classes, positive)
        results.append(s.get(key, float("nan")))
    vals = np.array([sign * r if np.isfinite(r) else -np.inf for r in results])
    best = configs[int(np.argmax(vals))]
    model = fit(best, fit_idx)
    test_scores = _score(task, y_test, model, x_test, classes, positive)
    return {"scores": test_scores, "best_params": best, "validation": results, "configs": configs}


def _check_classes(target: str, tables: dict[str, pd.DataFrame]) -> None:
    """A classification score needs two classes in the real and the test table: refuse in one line.

    (A synthetic table with one class is scored: the classifier trained on it predicts that class
    for every row, which is the utility such a table has: ROC-AUC 0.5.)"""
    for name, table in tables.items():
        classes = pd.unique(table[target].to_numpy(dtype=object))
        if len(classes) < 2:
            only = ", ".join(repr(str(v)) for v in classes) or "none"
            raise TabmemError(
                f"the target column {target!r} of the {name} table has a single class ({only}); "
                "a classification score needs at least two classes there"
            )


@register_metric
class MLE(Metric):
    """Train-on-synthetic / test-on-real XGBoost score (TabSyn protocol), with the real-train reference.

    The value is ROC-AUC (binary), macro-F1 (multiclass) or RMSE (regression; goal then
    ``minimize``, R^2 in details). ``grid``: ``"tabsyn"`` (36 configs), ``"tiny"`` (2) or a dict.
    """

    name = "mle"
    goal = "maximize"
    bounds = (0.0, 1.0)
    needs = ("test",)

    def __init__(
        self,
        grid: Literal["tabsyn", "tiny"] | dict[str, list[Any]] = "tabsyn",
        reference: bool = True,
        random_state: int = 0,
        n_jobs: int | None = 1,
    ) -> None:
        self.grid = grid
        self.reference = reference
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _grid(self) -> dict[str, list[Any]]:
        if isinstance(self.grid, dict):
            bad = [k for k, v in self.grid.items() if not isinstance(v, (list, tuple)) or len(v) == 0]
            if bad or not self.grid:
                raise TabmemError(
                    f"grid must map XGBoost parameter names to non-empty lists; bad entries: {bad or 'empty grid'}"
                )
            return self.grid
        if self.grid == "tabsyn":
            return TABSYN_GRID
        if self.grid == "tiny":
            return TINY_GRID
        raise TabmemError(f"grid must be 'tabsyn', 'tiny' or a dict of lists, got {self.grid!r}")

    def evaluate(
        self,
        real: pd.DataFrame,
        synthetic: pd.DataFrame,
        schema: Schema,
        *,
        test: pd.DataFrame | None = None,
        holdout: pd.DataFrame | None = None,
    ) -> MetricResult:
        if test is None:
            raise TabmemError(f"mle needs a real test table ({name_setting('test', '--test')})")
        if schema.target is None or schema.task is None:
            raise TabmemError(
                f"mle needs a target column ({name_setting('Schema(target=...)', '--target')}) and its task"
            )
        n_jobs = resolve_n_jobs(self.n_jobs)
        check_random_state(self.random_state)
        grid = self._grid()
        prep, extra = prepare_tables(real, synthetic, schema, nan="error", extra_tables={"test": test})
        if schema.task != "regression":
            _check_classes(schema.target, {"real": prep.real, "test": extra["test"]})
        syn = evaluate_mle(
            prep.encoder, prep.synthetic, extra["test"], grid=grid, random_state=self.random_state, n_jobs=n_jobs
        )
        key = {"binclass": "auc", "multiclass": "macro_f1", "regression": "rmse"}[schema.task]
        rows = [{"train_on": "synthetic", **syn["scores"], "best_params": str(syn["best_params"])}]
        details: dict[str, Any] = {
            "task": schema.task,
            "score": key,
            "n_configs": len(syn["configs"]),
            "synthetic": syn["scores"],
        }
        details["synthetic_best_params"] = syn["best_params"]
        if self.reference:
            ref = evaluate_mle(
                prep.encoder, prep.real, extra["test"], grid=grid, random_state=self.random_state, n_jobs=n_jobs
            )
            rows.append({"train_on": "real", **ref["scores"], "best_params": str(ref["best_params"])})
            details["real"] = ref["scores"]
            details["real_best_params"] = ref["best_params"]
        result = self._result(syn["scores"][key], pd.DataFrame(rows), **details)
        if schema.task == "regression":
            return MetricResult(result.name, result.value, "minimize", (0.0, np.inf), result.breakdown, result.details)
        return result
