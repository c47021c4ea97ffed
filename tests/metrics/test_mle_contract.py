"""MLE (TabSyn protocol) contract: the feature rule by hand, the selection by a hand-run XGBoost loop,
the XGBoost settings, the one-class and tiny-table edges, and the error messages.

The feature values are computed from the documented rule (docs/quality.md): ``log(max(x, 0.01))``
for a training column with min >= 0 and max >= 1000, else ``(x - min) / (max - min) * 5``
(a constant column: ``(x - min) * 5``), categoricals one-hot (unseen -> zeros). Trees are invariant
to monotone feature maps, so the transform is checked on its own, not through a model.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from itertools import product

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, mean_squared_error, r2_score, roc_auc_score

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.metrics import MLE
from tabmem.metrics.base import prepare_tables
from tabmem.metrics.mle import _Features, evaluate_mle

xgb = pytest.importorskip("xgboost")

GRID = {"n_estimators": [1, 12], "max_depth": [1, 3]}
CONFIGS = [{"max_depth": d, "n_estimators": n} for d, n in product([1, 3], [1, 12])]  # sorted keys, product order


def _classes_table(n: int, seed: int, labels=("lo", "mid", "hi")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(["a", "b"], n).astype(object)})
    df["y"] = np.select([df["x"] < -0.4, df["x"] < 0.4], labels[:2], labels[2]).astype(object)
    flip = rng.random(n) < 0.15
    df.loc[flip, "y"] = rng.choice(list(labels), flip.sum())
    return df


MULTI = Schema(("x", "c", "y"), ("x",), ("c", "y"), "y", "multiclass")
BIN = Schema(("x", "c", "y"), ("x",), ("c", "y"), "y", "binclass")


def _binary(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(["a", "b"], n).astype(object)})
    df["y"] = np.where(df["x"] + rng.normal(0, 0.7, n) > 0, "yes", "no").astype(object)
    return df


def _hand_features(table: pd.DataFrame, train: pd.DataFrame, real: pd.DataFrame) -> np.ndarray:
    """x: min-max * 5 on the training table (never >= 1000 here); c: one-hot over the real levels."""
    lo, hi = train["x"].min(), train["x"].max()
    cols = [(table["x"].to_numpy(float) - lo) / (hi - lo) * 5.0]
    cols += [(table["c"] == v).to_numpy(float) for v in sorted(real["c"].unique())]
    return np.column_stack(cols).astype(np.float32)


def _hand_run_classifier(train, test, real, seed, score, classes=None):
    """1/9 validation (seeded permutation), every config of GRID, refit the best on the 8/9, score on test."""
    x_all, x_test = _hand_features(train, train, real), _hand_features(test, train, real)
    perm = np.random.default_rng(seed).permutation(len(train))
    val, fit = perm[: len(train) // 9], perm[len(train) // 9 :]
    y = train["y"].to_numpy(object)
    classes = sorted(set(y[fit])) if classes is None else classes  # label encoding: sorted labels
    codes = np.array([classes.index(v) for v in y])
    common = dict(tree_method="hist", n_jobs=1, random_state=seed, verbosity=0)

    def model(params):
        return xgb.XGBClassifier(**params, **common).fit(x_all[fit], codes[fit])

    val_scores = [score(y[val], model(p).predict_proba(x_all[val]), classes) for p in CONFIGS]
    best = CONFIGS[int(np.argmax(val_scores))]
    return score(test["y"].to_numpy(object), model(best).predict_proba(x_test), classes), best, val_scores


def _macro_f1(y, proba, classes):
    return f1_score(y.astype(str), np.asarray(classes, dtype=object)[proba.argmax(1)].astype(str), average="macro")


def _auc_yes(y, proba, classes):
    return roc_auc_score(y == "yes", proba[:, classes.index("yes")])


# ---------------------------------------------------------------------------- feature rule
def _features(real: pd.DataFrame, train: pd.DataFrame, schema: Schema) -> _Features:
    prep, _ = prepare_tables(real, train, schema)
    return _Features(prep.encoder, prep.synthetic)


def test_numerical_features_follow_the_documented_rule_per_column():
    cols = ("lo0", "half", "neg", "small", "const")
    schema = Schema((*cols, "y"), cols, ("y",), "y", "binclass")
    train = pd.DataFrame(
        {
            "lo0": [0.0, 0.005, 0.5, 1000.0],  # min 0 and max exactly 1000: log
            "half": [0.5, 2000.0, 3.0, 7.0],  # min 0.5 >= 0: log
            "neg": [-1.0, 5000.0, 0.0, 2.0],  # min < 0: min-max
            "small": [2.0, 10.0, 4.0, 6.0],  # max < 1000: min-max
            "const": [7.0, 7.0, 7.0, 7.0],  # max == min: (x - min) * 5
            "y": ["p", "q", "p", "q"],
        }
    )
    test = pd.DataFrame(
        {"lo0": [-3.0, 2.0], "half": [0.0, 1.0], "neg": [2499.5, -2.0], "small": [12.0, 0.0], "const": [9.0, 7.0]}
    ).assign(y=["p", "q"])
    feats = _features(train, train, schema)
    log, mm = np.log, lambda v, lo, hi: (v - lo) / (hi - lo) * 5.0
    expected_train = np.column_stack(
        [
            log([0.01, 0.01, 0.5, 1000.0]),
            log([0.5, 2000.0, 3.0, 7.0]),
            mm(np.array([-1.0, 5000.0, 0.0, 2.0]), -1.0, 5000.0),
            mm(np.array([2.0, 10.0, 4.0, 6.0]), 2.0, 10.0),
            np.zeros(4),
        ]
    )
    expected_test = np.column_stack(
        [log([0.01, 2.0]), log([0.01, 1.0]), [2.5, -5.0 / 5001.0], [6.25, -1.25], [10.0, 0.0]]
    )  # training min/max reused; out-of-range values are extrapolated, not clipped
    np.testing.assert_allclose(feats.transform(train), expected_train, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(feats.transform(test), expected_test, rtol=1e-6, atol=1e-7)


def test_categoricals_are_one_hot_over_the_real_levels_and_unseen_values_are_zeros():
    schema = Schema(("n", "c", "y"), ("n",), ("c", "y"), "y", "binclass")
    real = pd.DataFrame({"n": [1.0, 2.0, 3.0], "c": ["u", "w", "v"], "y": ["p", "q", "p"]})
    feats = _features(real, real, schema)
    test = pd.DataFrame({"n": [2.0, 3.0, 1.0], "c": ["v", "zz", "u"], "y": ["p", "p", "q"]})
    # n: (x - 1) / 2 * 5; c over the sorted real levels u, v, w; "zz" unseen -> all zeros
    np.testing.assert_array_equal(feats.transform(test), [[2.5, 0, 1, 0], [5.0, 0, 0, 0], [0.0, 1, 0, 0]])
    cat_only = _features(real[["c", "y"]], real[["c", "y"]], Schema(("c", "y"), (), ("c", "y"), "y", "binclass"))
    np.testing.assert_array_equal(cat_only.transform(test[["c", "y"]]), [[0, 1, 0], [0, 0, 0], [1, 0, 0]])


def test_the_matrix_has_one_row_per_input_row_one_column_per_feature_and_one_dtype():
    table = pd.DataFrame({"n": [1.0, 5.0, 3.0], "c": ["u", "w", "u"], "y": ["p", "q", "p"]})
    shapes = {("n", "c", "y"): 1 + 2, ("c", "y"): 2, ("n", "y"): 1, ("y",): 0}  # no feature: an empty matrix
    for cols, width in shapes.items():
        schema = Schema(cols, tuple(c for c in cols if c == "n"), tuple(c for c in cols if c != "n"), "y", "binclass")
        x = _features(table[list(cols)], table[list(cols)], schema).transform(table[list(cols)].iloc[:2])
        assert x.shape == (2, width) and x.dtype == np.float32


# ---------------------------------------------------------------------- protocol by hand
def test_multiclass_selection_validation_scores_and_a_synthetic_only_class_equal_a_hand_run():
    real, test = _classes_table(180, 1), _classes_table(150, 2)
    syn = _classes_table(180, 3)
    syn.loc[::7, "y"] = "aaa"  # a class the real table lacks: kept, label-encoded in sorted order
    prep, extra = prepare_tables(real, syn, MULTI, extra_tables={"test": test})
    out = evaluate_mle(prep.encoder, prep.synthetic, extra["test"], grid=GRID, random_state=4, n_jobs=1)
    f1, best, val_scores = _hand_run_classifier(syn, test, real, 4, _macro_f1)
    assert best != CONFIGS[0]  # the selection has a real choice to make
    assert out["configs"] == CONFIGS and out["best_params"] == best
    np.testing.assert_allclose(out["validation"], val_scores, rtol=0, atol=1e-12)
    assert out["scores"] == {"macro_f1": pytest.approx(f1, abs=1e-12)}


def test_metric_result_breakdown_and_details_for_binary_with_the_real_reference():
    real, test, syn = _binary(180, 5), _binary(150, 6), _binary(180, 7)
    res = MLE(grid=GRID, random_state=2).evaluate(real, syn, BIN, test=test)
    auc_syn, best_syn, _ = _hand_run_classifier(syn, test, real, 2, _auc_yes, classes=["no", "yes"])
    auc_real, best_real, _ = _hand_run_classifier(real, test, real, 2, _auc_yes, classes=["no", "yes"])
    assert res.value == pytest.approx(auc_syn, abs=1e-12) and res.goal == "maximize"
    assert res.details["task"] == "binclass" and res.details["score"] == "auc"
    rows = res.breakdown.set_index("train_on")
    assert list(rows.index) == ["synthetic", "real"]
    assert ast.literal_eval(rows.loc["synthetic", "best_params"]) == best_syn
    assert ast.literal_eval(rows.loc["real", "best_params"]) == best_real
    assert rows.loc["real", "auc"] == pytest.approx(auc_real, abs=1e-12)


def test_regression_result_is_rmse_to_minimise_with_r2_and_both_rows():
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"x": rng.normal(size=240), "z": rng.normal(size=240)})
    df["r"] = 2 * df["x"] - df["z"] + rng.normal(0, 0.2, 240)
    schema = Schema(("x", "z", "r"), ("x", "z", "r"), (), "r", "regression")
    train, test = df.iloc[:150].reset_index(drop=True), df.iloc[150:].reset_index(drop=True)
    res = MLE(grid=GRID, random_state=3).evaluate(train, train, schema, test=test)
    # hand run: min-max * 5 features, 1/9 validation, lowest validation RMSE, refit, score on test
    lo, hi = train[["x", "z"]].min().to_numpy(), train[["x", "z"]].max().to_numpy()
    x_all = ((train[["x", "z"]].to_numpy() - lo) / (hi - lo) * 5).astype(np.float32)
    x_test = ((test[["x", "z"]].to_numpy() - lo) / (hi - lo) * 5).astype(np.float32)
    perm = np.random.default_rng(3).permutation(150)
    val, fit, y = perm[:16], perm[16:], train["r"].to_numpy()

    def predict(p, x):
        return xgb.XGBRegressor(**p, tree_method="hist", n_jobs=1, random_state=3).fit(x_all[fit], y[fit]).predict(x)

    best = CONFIGS[int(np.argmin([mean_squared_error(y[val], predict(p, x_all[val])) for p in CONFIGS]))]
    pred = predict(best, x_test)
    assert res.name == "mle" and res.goal == "minimize" and res.bounds == (0.0, np.inf)
    assert res.value == pytest.approx(np.sqrt(mean_squared_error(test["r"], pred)), rel=1e-9)
    assert res.details["synthetic"]["r2"] == pytest.approx(r2_score(test["r"], pred), rel=1e-9)
    assert res.details["task"] == "regression" and res.details["score"] == "rmse"
    rows = res.breakdown.set_index("train_on")
    assert list(rows.index) == ["synthetic", "real"] and (rows["rmse"] == res.value).all()  # same table twice
    assert [ast.literal_eval(s) for s in rows["best_params"]] == [best, best]


# -------------------------------------------------------------------------- XGBoost settings
def test_every_model_is_built_with_the_documented_settings(monkeypatch):
    """tree_method="hist", n_jobs and random_state as given (defaults 1 and 0), silent, the grid's params."""
    built = []

    class Classifier(xgb.XGBClassifier):
        def fit(self, *args, **kwargs):
            built.append(self.get_params())
            return super().fit(*args, **kwargs)

    class Regressor(xgb.XGBRegressor):
        def fit(self, *args, **kwargs):
            built.append(self.get_params())
            return super().fit(*args, **kwargs)

    monkeypatch.setattr(xgb, "XGBClassifier", Classifier)
    monkeypatch.setattr(xgb, "XGBRegressor", Regressor)
    real, test = _binary(90, 9), _binary(40, 10)
    reg = Schema(("x", "c", "y"), ("x", "y"), ("c",), "y", "regression")
    runs = [
        (MLE(grid=GRID), BIN, real, test, 0, 1),
        (MLE(grid=GRID, random_state=7, n_jobs=2), BIN, real, test, 7, 2),
        (MLE(grid=GRID, random_state=5, n_jobs=2), reg, real.assign(y=real["x"] * 2), test.assign(y=test["x"]), 5, 2),
    ]
    for metric, schema, tr, te, seed, jobs in runs:
        built.clear()
        metric.evaluate(tr, tr, schema, test=te)
        assert len(built) == 2 * (len(CONFIGS) + 1)  # synthetic and real: every config, then the refit
        for p in built:
            assert (p["tree_method"], p["n_jobs"], p["random_state"], p["verbosity"]) == ("hist", jobs, seed, 0)
            assert {k: p[k] for k in GRID} in CONFIGS


def test_the_default_grid_is_tabsyns_36_configurations(monkeypatch):
    """The docstring's grid, run by a stand-in classifier (the grid, not XGBoost, is under test)."""
    seen = []

    class Uniform:
        def __init__(self, **params):
            seen.append(params)

        def fit(self, x, y):
            self.k = len(np.unique(y))
            return self

        def predict_proba(self, x):
            return np.full((len(x), self.k), 1.0 / self.k)

    monkeypatch.setattr(xgb, "XGBClassifier", Uniform)
    real, test = _binary(45, 11), _binary(20, 12)
    tabsyn = [
        {"gamma": g, "max_depth": d, "min_child_weight": w, "n_estimators": n}
        for n, w, d, g in product([10, 50, 100], [1, 10], [5, 10, 20], [0.0, 1.0])
    ]
    for metric in (MLE(reference=False), MLE(grid="tabsyn", reference=False)):
        seen.clear()
        res = metric.evaluate(real, real, BIN, test=test)
        assert res.details["n_configs"] == 36
        grid_params = [{k: p[k] for k in ("gamma", "max_depth", "min_child_weight", "n_estimators")} for p in seen]
        assert sorted(map(str, grid_params[:36])) == sorted(map(str, tabsyn))
        assert (seen[0]["random_state"], seen[0]["n_jobs"]) == (0, 1)  # the defaults


# ---------------------------------------------------------------------------- edge cases
def test_one_class_training_predicts_that_class_and_scores_a_constant_auc_quietly():
    real, test = _binary(90, 13), _binary(60, 14)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = MLE(grid=GRID, reference=False).evaluate(real, real.assign(y="yes"), BIN, test=test)
    constant = f1_score(test["y"], ["yes"] * len(test), average="macro")
    # a constant prediction ranks no test row above another: the AUC of a constant score
    assert res.value == roc_auc_score(test["y"] == "yes", np.zeros(len(test))) == 0.5
    assert res.details["synthetic"]["macro_f1"] == pytest.approx(constant, abs=1e-12)
    multi_real, multi_test = _classes_table(90, 15), _classes_table(60, 16)
    res = MLE(grid=GRID, reference=False).evaluate(multi_real, multi_real.assign(y="mid"), MULTI, test=multi_test)
    assert res.value == pytest.approx(f1_score(multi_test["y"], ["mid"] * 60, average="macro"), abs=1e-12)


def test_a_table_with_only_categorical_features_runs():
    real, test = _binary(90, 17), _binary(60, 18)
    schema = Schema(("c", "y"), (), ("c", "y"), "y", "binclass")
    res = MLE(grid=GRID, reference=False).evaluate(real[["c", "y"]], real[["c", "y"]], schema, test=test[["c", "y"]])
    assert 0.0 <= res.value <= 1.0


_TOO_FEW = r"^MLE needs at least \d+ training rows \(1/9 is held out for validation\), got 8$"


def test_fewer_than_nine_training_rows_is_an_error_nine_run():
    real, test = _binary(90, 19), _binary(30, 20)
    with pytest.raises(TabmemError, match=_TOO_FEW):
        MLE(grid=GRID).evaluate(real, real.iloc[:8], BIN, test=test)
    res = MLE(grid=GRID, reference=False).evaluate(real, real.iloc[:9], BIN, test=test)  # 1 validation row
    assert res.details["n_configs"] == 4


def test_an_empty_training_table_gets_the_row_count_error():
    """evaluate_mle is also called on tables it did not validate: an empty one is the same clear error."""
    real, test = _binary(30, 19), _binary(20, 20)
    prep, extra = prepare_tables(real, real, BIN, extra_tables={"test": test})
    with pytest.raises(TabmemError, match=_TOO_FEW.replace("got 8", "got 0")):
        evaluate_mle(prep.encoder, prep.synthetic.iloc[:0], extra["test"], grid=GRID, random_state=0, n_jobs=1)


def test_a_table_without_features_is_a_clear_error():
    real, test = _binary(30, 29), _binary(20, 30)
    only_target = Schema(("y",), (), ("y",), "y", "binclass")
    with pytest.raises(TabmemError, match=r"^mle needs at least one feature column besides the target 'y'$"):
        MLE(grid=GRID).evaluate(real[["y"]], real[["y"]], only_target, test=test[["y"]])


def test_the_minimum_the_message_names_is_the_real_minimum():
    real, test = _binary(90, 19), _binary(30, 20)
    with pytest.raises(TabmemError, match=_TOO_FEW) as err:
        MLE(grid=GRID).evaluate(real, real.iloc[:8], BIN, test=test)
    named = int(re.search(r"at least (\d+)", str(err.value)).group(1))
    MLE(grid=GRID, reference=False).evaluate(real, real.iloc[:named], BIN, test=test)  # runs
    with pytest.raises(TabmemError, match="at least"):
        MLE(grid=GRID, reference=False).evaluate(real, real.iloc[: named - 1], BIN, test=test)


def test_binary_auc_with_an_extra_synthetic_label_scores_the_real_positive_class():
    real, test, syn = _binary(180, 21), _binary(120, 22), _binary(180, 23)
    syn.loc[::6, "y"] = "maybe"
    res = MLE(grid=GRID, random_state=1, reference=False).evaluate(real, syn, BIN, test=test)
    auc, _, _ = _hand_run_classifier(syn, test, real, 1, _auc_yes)
    assert res.value == pytest.approx(auc, abs=1e-6)


def test_binary_auc_without_the_real_positive_label_in_training_is_a_constant_score():
    # synthetic labels no / maybe: the real positive "yes" is never predicted, its probability is 0 for every row
    real, test, syn = _binary(180, 31), _binary(120, 32), _binary(180, 33)
    syn["y"] = syn["y"].replace({"yes": "maybe"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = MLE(grid=GRID, random_state=1, reference=False).evaluate(real, syn, BIN, test=test)
    assert res.value == 0.5


def test_a_real_or_test_target_with_one_label_is_refused_naming_the_column():
    real, test = _binary(90, 34), _binary(60, 35)
    real["y"], test["y"] = "yes", "yes"
    msg = r"^the target column 'y' of the real table has a single class \('yes'\); a classification score needs"
    with pytest.raises(TabmemError, match=msg):
        MLE(grid=GRID, reference=False).evaluate(real, _binary(90, 36), BIN, test=test)
    with pytest.raises(TabmemError, match=r"^the target column 'y' of the test table has a single class"):
        MLE(grid=GRID, reference=False).evaluate(_binary(90, 34), _binary(90, 36), BIN, test=test)


def test_a_synthetic_target_with_one_label_trains_a_constant_classifier():
    syn = _binary(90, 36)
    syn["y"] = "yes"
    res = MLE(grid=GRID, reference=False).evaluate(_binary(90, 34), syn, BIN, test=_binary(60, 35))
    assert res.value == pytest.approx(0.5)  # the utility of a one-class table: chance


def test_binary_auc_scores_the_real_positive_class_when_the_negative_label_is_missing():
    real, test, syn = _binary(180, 24), _binary(120, 25), _binary(180, 26)
    syn["y"] = syn["y"].replace({"no": "aaa"})  # synthetic labels: aaa / yes; real: no / yes
    res = MLE(grid=GRID, random_state=1, reference=False).evaluate(real, syn, BIN, test=test)
    auc, _, _ = _hand_run_classifier(syn, test, real, 1, _auc_yes)
    assert res.value == pytest.approx(auc, abs=1e-6)


# ------------------------------------------------------------------------------- messages
def test_error_messages_name_the_missing_input_or_option(monkeypatch):
    real, test = _binary(30, 27), _binary(20, 28)
    with pytest.raises(TabmemError, match=r"^mle needs a real test table \(test\)$"):
        MLE(grid=GRID).evaluate(real, real, BIN)
    target_msg = r"^mle needs a target column \(Schema\(target=\.\.\.\)\) and its task$"
    no_task = Schema(("x", "c", "y"), ("x",), ("c", "y"), "y", None)
    no_target = Schema(("x", "c", "y"), ("x",), ("c", "y"), None, "binclass")
    for schema in (no_task, no_target):
        with pytest.raises(TabmemError, match=target_msg):
            MLE(grid=GRID).evaluate(real, real, schema, test=test)
    with pytest.raises(TabmemError, match=r"^n_jobs must be a non-zero integer or None"):
        MLE(grid=GRID, n_jobs=0).evaluate(real, real, BIN, test=test)
    with pytest.raises(TabmemError, match=r"bad entries: empty grid$"):
        MLE(grid={}).evaluate(real, real, BIN, test=test)
    monkeypatch.setitem(sys.modules, "xgboost", None)  # not installed
    with pytest.raises(TabmemError, match=r"^mle needs xgboost: pip install 'tabmem\[quality\]' \(xgboost-cpu\)$"):
        MLE(grid=GRID).evaluate(real, real, BIN, test=test)
