"""MMD (documented bandwidth) and the MLE protocol (split, grid, selection) against hand-run references.

The MMD reference encodes the tables with pandas, takes the median heuristic with scipy's ``pdist``
and sums the kernel ``exp(-||a-b||^2 / (2 sigma^2))`` entry by entry; the MLE reference runs the
TabSyn protocol by hand with XGBoost (its own feature transform, split, grid loop and selection).
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist, pdist
from sklearn.metrics import mean_squared_error, r2_score, roc_auc_score

from tabmem.data.schema import Schema
from tabmem.metrics import MLE, MMD

SCHEMA = Schema(("x", "big", "c", "y"), ("x", "big"), ("c", "y"), "y", "binclass")


def _mixed(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(shift, 1, n),
            "big": rng.normal(1000, 300, n) + 100 * shift,
            "c": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]).astype(object),
            "y": rng.choice(["no", "yes"], n).astype(object),
        }
    )


# ------------------------------------------------------------------------------------ MMD
def _encode(df: pd.DataFrame, real: pd.DataFrame) -> np.ndarray:
    """Numericals standardised with the real table's mean and population std; categoricals one-hot."""
    cols = [((df[c] - real[c].mean()) / real[c].std(ddof=0)).to_numpy(float) for c in ("x", "big")]
    for c in ("c", "y"):
        cols += [(df[c] == level).to_numpy(float) for level in sorted(real[c].unique())]
    return np.column_stack(cols)


def _naive_mmd2_unbiased(x: np.ndarray, y: np.ndarray, sigma: float) -> float:
    def k(a, b):
        return np.exp(-cdist(a, b, "sqeuclidean") / (2.0 * sigma**2))

    n, m = len(x), len(y)
    kxx, kyy, kxy = k(x, x), k(y, y), k(x, y)
    sum_xx = sum(kxx[i, j] for i in range(n) for j in range(n) if i != j)
    sum_yy = sum(kyy[i, j] for i in range(m) for j in range(m) if i != j)
    return sum_xx / (n * (n - 1)) + sum_yy / (m * (m - 1)) - 2.0 * kxy.sum() / (n * m)


@pytest.mark.parametrize("shift", [0.0, 0.7])
def test_mmd_equals_naive_kernel_sum_with_the_median_bandwidth(shift):
    real, syn = _mixed(150, 1), _mixed(120, 2, shift=shift)
    x, y = _encode(real, real), _encode(syn, real)
    sigma = float(np.median(pdist(np.vstack([x, y]))))  # median heuristic over all pooled pairs (< 1000 rows)
    res = MMD(random_state=0).evaluate(real, syn, SCHEMA)
    assert res.details["bandwidth"] == pytest.approx(sigma, rel=1e-12)
    assert res.details["gamma"] == pytest.approx(1.0 / (2.0 * sigma**2), rel=1e-12)
    assert res.value == pytest.approx(_naive_mmd2_unbiased(x, y, sigma), rel=1e-9, abs=1e-12)


def test_mmd_paper_mode_equals_naive_biased_sum_on_raw_values():
    # 'big' rescaled so that the gamma = 1 kernel on raw values is not ~0 for every pair
    real = _mixed(60, 3).assign(big=lambda d: d["big"] * 1e-3)
    syn = _mixed(50, 4, shift=0.5).assign(big=lambda d: d["big"] * 1e-3)

    def raw(df):
        cols = [df[c].to_numpy(float) for c in ("x", "big")]
        for c in ("c", "y"):
            cols += [(df[c] == level).to_numpy(float) for level in sorted(real[c].unique())]
        return np.column_stack(cols)

    x, y = raw(real), raw(syn)

    def k(a, b):
        return np.exp(-cdist(a, b, "sqeuclidean"))  # gamma = 1

    expected = k(x, x).mean() + k(y, y).mean() - 2 * k(x, y).mean()
    got = MMD(mode="paper").evaluate(real, syn, SCHEMA)
    assert got.value == pytest.approx(expected, rel=1e-9)
    assert got.details["gamma"] == 1.0


# ------------------------------------------------------------------------------------ MLE
def _tabsyn_features(table: pd.DataFrame, fit_on: pd.DataFrame, levels: dict[str, list]) -> np.ndarray:
    """TabSyn's transform written out: log for non-negative columns reaching 1000, else 5 * min-max; one-hot."""
    cols = []
    for c in ("x", "big"):
        lo, hi = fit_on[c].min(), fit_on[c].max()
        v = table[c].to_numpy(float)
        if lo >= 0 and hi >= 1000:
            cols.append(np.log(np.maximum(v, 0.01)))
        else:
            cols.append((v - lo) / (hi - lo) * 5.0)
    for c in levels:
        cols += [(table[c] == level).to_numpy(float) for level in levels[c]]
    return np.column_stack(cols).astype(np.float32)


def _hand_run_mle(train: pd.DataFrame, test: pd.DataFrame, real: pd.DataFrame, grid: dict, seed: int, task: str):
    """Split 1/9 for validation (seeded shuffle), try every configuration, refit the best, score on test."""
    import xgboost as xgb

    levels = {"c": sorted(real["c"].unique())}
    x_all = _tabsyn_features(train, train, levels)
    x_test = _tabsyn_features(test, train, levels)
    perm = np.random.default_rng(seed).permutation(len(train))
    val, fit = perm[: len(train) // 9], perm[len(train) // 9 :]
    keys = sorted(grid)
    configs = [dict(zip(keys, values)) for values in product(*(grid[k] for k in keys))]
    common = dict(tree_method="hist", n_jobs=1, random_state=seed, verbosity=0)
    if task == "binclass":
        y_all = (train["y"] == "yes").to_numpy(int)  # classes sorted: "no" -> 0, "yes" -> 1 (positive)
        y_test = (test["y"] == "yes").to_numpy(int)

        def fit_score(params, rows, x_eval, y_eval):
            model = xgb.XGBClassifier(**params, **common).fit(x_all[rows], y_all[rows])
            return roc_auc_score(y_eval, model.predict_proba(x_eval)[:, 1])

        val_scores = [fit_score(p, fit, x_all[val], y_all[val]) for p in configs]
        best = configs[int(np.argmax(val_scores))]
        return fit_score(best, fit, x_test, y_test), best, val_scores
    y_all, y_test = train["r"].to_numpy(float), test["r"].to_numpy(float)

    def fit_predict(params, rows, x_eval):
        return xgb.XGBRegressor(**params, **common).fit(x_all[rows], y_all[rows]).predict(x_eval)

    val_scores = [np.sqrt(mean_squared_error(y_all[val], fit_predict(p, fit, x_all[val]))) for p in configs]
    best = configs[int(np.argmin(val_scores))]  # RMSE: lower is better
    pred = fit_predict(best, fit, x_test)
    return np.sqrt(mean_squared_error(y_test, pred)), best, val_scores, r2_score(y_test, pred)


GRID = {"n_estimators": [3, 40], "max_depth": [1, 4], "min_child_weight": [1], "gamma": [0.0]}


def _classification_tables():
    rng = np.random.default_rng(23)
    n = 540
    df = _mixed(n, 5)
    signal = np.sin(2 * df["x"]) + (df["c"] == "a") * 0.8 + np.log(df["big"].clip(1)) / 10 + rng.normal(0, 0.6, n)
    df["y"] = np.where(signal > np.median(signal), "yes", "no").astype(object)
    real, test = df.iloc[:270].reset_index(drop=True), df.iloc[270:].reset_index(drop=True)
    syn = real.sample(270, replace=True, random_state=1).reset_index(drop=True)
    syn["x"] = syn["x"] + rng.normal(0, 0.3, len(syn))
    return real, syn, test


def test_mle_binary_equals_a_hand_run_tabsyn_protocol():
    pytest.importorskip("xgboost")
    real, syn, test = _classification_tables()
    res = MLE(grid=GRID, random_state=3).evaluate(real, syn, SCHEMA, test=test)
    auc, best, val_scores = _hand_run_mle(syn, test, real, GRID, 3, "binclass")
    assert res.value == pytest.approx(auc, abs=1e-12)
    assert res.details["synthetic_best_params"] == best
    assert res.details["n_configs"] == 4
    assert len(set(np.round(val_scores, 6))) > 1  # the selection had a real choice to make
    # the real-data reference line is the same protocol on the real training table
    auc_real, best_real, _ = _hand_run_mle(real, test, real, GRID, 3, "binclass")
    assert res.details["real"]["auc"] == pytest.approx(auc_real, abs=1e-12)
    assert res.details["real_best_params"] == best_real
    assert res.details["real"]["auc"] != pytest.approx(res.value, abs=1e-9)  # two different tables, two runs


def test_mle_regression_selects_the_lowest_validation_rmse():
    pytest.importorskip("xgboost")
    rng = np.random.default_rng(7)
    df = _mixed(450, 6).drop(columns="y")
    df["r"] = 3 * df["x"] + (df["c"] == "b") * 2 + rng.normal(0, 0.3, len(df))
    schema = Schema(("x", "big", "c", "r"), ("x", "big", "r"), ("c",), "r", "regression")
    real, test = df.iloc[:300].reset_index(drop=True), df.iloc[300:].reset_index(drop=True)
    res = MLE(grid=GRID, random_state=1, reference=False).evaluate(real, real, schema, test=test)
    rmse, best, val_scores, r2 = _hand_run_mle(real, test, real, GRID, 1, "regression")
    assert best == {"gamma": 0.0, "max_depth": 4, "min_child_weight": 1, "n_estimators": 40}  # not the worst
    assert res.details["synthetic_best_params"] == best
    assert res.value == pytest.approx(rmse, rel=1e-6) and res.goal == "minimize"
    assert res.details["synthetic"]["r2"] == pytest.approx(r2, rel=1e-6)
