"""quality_report, the metric registry (conformance over every metric) and `tabmem quality`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.errors import SchemaError, TabmemError
from tabmem.metrics import METRICS, SUMMARY_KEYS, get_metric, list_metrics, quality_report


def _table(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n).astype(float) + shift,
            "income": rng.lognormal(10, 1, n),
            "city": rng.choice(["Paris", "Lyon", "Nice"], n).astype(object),
        }
    )
    df["label"] = np.where(df["age"] + rng.normal(0, 10, n) > 50, "hi", "lo").astype(object)
    return df


SCHEMA = Schema(("age", "income", "city", "label"), ("age", "income"), ("city", "label"), "label", "binclass")


@pytest.mark.parametrize("name", METRICS.names())
def test_every_registered_metric_declares_goal_bounds_and_stays_in_bounds(name):
    assert name in list_metrics()
    cls = METRICS[name]
    assert cls.goal in ("maximize", "minimize")
    lo, hi = cls.bounds
    assert lo < hi
    metric = get_metric(name, **({"grid": "tiny"} if name == "mle" else {}))
    real, syn, other = _table(150, 1), _table(120, 2, shift=3.0), _table(150, 3)
    res = metric.evaluate(real, syn, SCHEMA, test=other, holdout=other)
    assert res.name == name and res.goal in ("maximize", "minimize")
    assert res.value is not None and res.bounds[0] <= res.value <= res.bounds[1]
    again = get_metric(name, **({"grid": "tiny"} if name == "mle" else {})).evaluate(
        real, syn, SCHEMA, test=other, holdout=other
    )
    assert again.value == res.value  # same seed, same number
    assert repr(metric).startswith(type(metric).__name__)


def test_unknown_metric_is_a_clear_error():
    with pytest.raises(TabmemError, match="unknown metric 'nope'"):
        get_metric("nope")
    with pytest.raises(TabmemError, match="unknown metric"):
        quality_report(_table(50, 1), _table(50, 2), SCHEMA, metrics=["nope"])


def test_quality_report_summary_skips_with_reasons_and_does_not_touch_global_rng(tmp_path):
    real, syn = _table(200, 4), _table(200, 5)
    syn.loc[7, "income"] = np.nan  # MMD etc. need complete rows; Shape/Trend/C2ST have NaN rules
    state = np.random.get_state()[1].copy()  # noqa: NPY002 (checking the legacy global RNG is untouched)
    rep = quality_report(real, syn, SCHEMA, mle_grid="tiny")
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002
    s = rep.summary().to_dict()
    assert set(SUMMARY_KEYS) <= set(s)
    assert s["mle"] is None and "test" in s["skipped"]["mle"]
    assert s["dcr_share"] is None and "holdout" in s["skipped"]["dcr_share"]
    assert s["mmd"] is None and "'income'" in s["skipped"]["mmd"]
    assert s["shape"] is not None and s["trend"] is not None and s["c2st"] is not None
    assert s["details"]["trend"]["n_pairs_scored"] == 6
    path = rep.save(tmp_path / "out")
    loaded = json.loads(path.read_text())
    assert loaded["shape"] == pytest.approx(s["shape"])
    assert (tmp_path / "out" / "trend_breakdown.csv").exists()


def test_quality_report_full_run_is_deterministic():
    real, syn, test = _table(200, 6), _table(200, 7), _table(200, 8)
    a = quality_report(real, syn, SCHEMA, test=test, holdout=test, mle_grid="tiny").summary().to_dict()
    b = quality_report(real, syn, SCHEMA, test=test, holdout=test, mle_grid="tiny").summary().to_dict()
    assert not a["skipped"]
    for k in SUMMARY_KEYS:
        assert a[k] == b[k], k
    assert a["details"]["mle"]["real"]["auc"] > 0.7


def test_structural_problems_are_fatal_and_name_the_column():
    real, syn = _table(50, 1), _table(50, 2).drop(columns=["city"])
    with pytest.raises(SchemaError, match="'city'"):
        quality_report(real, syn, SCHEMA)


def test_cli_quality_writes_summary_and_breakdowns(tmp_path, capsys):
    real, syn, test = _table(200, 9), _table(200, 10), _table(200, 11)
    for name, df in (("real", real), ("syn", syn), ("test", test)):
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    out = tmp_path / "q"
    main(["quality", "--real", str(tmp_path / "real.csv"), "--synthetic", str(tmp_path / "syn.csv"), "--test", str(tmp_path / "test.csv"),
          "--holdout", str(tmp_path / "test.csv"), "--target", "label", "--mle-grid", "tiny", "--out", str(out)])  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert set(SUMMARY_KEYS) <= set(summary) and not summary["skipped"]
    assert 0 <= summary["dcr_share"] <= 1
    assert (out / "shape_breakdown.csv").exists() and (out / "mle_breakdown.csv").exists()
    printed = capsys.readouterr().out
    assert "Paris" not in printed and "Lyon" not in printed  # no raw values on the terminal


def test_cli_quality_user_errors_exit_2(tmp_path, capsys):
    _table(50, 1).to_csv(tmp_path / "real.csv", index=False)
    _table(50, 2).drop(columns=["age"]).to_csv(tmp_path / "syn.csv", index=False)
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "quality",
                "--real",
                str(tmp_path / "real.csv"),
                "--synthetic",
                str(tmp_path / "syn.csv"),
                "--out",
                str(tmp_path / "o"),
            ]
        )
    assert exc.value.code == 2
    assert "'age'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "quality",
                "--real",
                str(tmp_path / "real.csv"),
                "--synthetic",
                str(tmp_path / "real.csv"),
                "--metrics",
                "shape,bogus",
                "--out",
                str(tmp_path / "o"),
            ]
        )
    assert exc.value.code == 2


def test_quality_report_on_diabetes_like_the_demo():
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("diabetes")
    rng = np.random.default_rng(0)
    syn = ds.train.sample(len(ds.train), replace=True, random_state=1).reset_index(drop=True)
    syn["bmi"] = syn["bmi"] + rng.normal(0, 0.01, len(syn))
    rep = quality_report(ds.train, syn, ds.schema, test=ds.test, holdout=ds.test, mle_grid="tiny")
    s = rep.summary().to_dict()
    assert not s["skipped"], s["skipped"]
    assert s["details"]["mle"]["score"] == "rmse" and s["goals"]["mle"] == "minimize"
    assert s["dcr_share"] > 0.9  # resampled training rows sit on their sources
    assert s["shape"] > 0.8 and s["details"]["trend"]["n_pairs_total"] == 55


def test_quality_report_validates_each_table_once(monkeypatch):
    import tabmem.metrics.base as base

    calls: list[str] = []
    real_validate = base.validate_table

    def counting(table, schema, **kw):
        calls.append(kw["name"])
        return real_validate(table, schema, **kw)

    monkeypatch.setattr(base, "validate_table", counting)
    real, syn, test = _table(150, 12), _table(150, 13), _table(150, 14)
    quality_report(real, syn, SCHEMA, test=test, holdout=test, mle_grid="tiny")
    assert sorted(calls) == ["holdout", "real", "synthetic", "test"]


@pytest.mark.parametrize("kind", ["numerical_only", "categorical_only"])
def test_single_kind_tables_run_every_metric(kind):
    df = _table(160, 15)
    if kind == "numerical_only":
        df = df[["age", "income"]].assign(label=(df["label"] == "hi").astype(float))
        schema = Schema(("age", "income", "label"), ("age", "income", "label"), (), "label", "regression")
    else:
        df = df[["city", "label"]]
        schema = Schema(("city", "label"), (), ("city", "label"), "label", "binclass")
    real, syn, test = df.iloc[:60], df.iloc[60:110], df.iloc[110:]
    rep = quality_report(real, syn, schema, test=test, holdout=test, mle_grid="tiny")
    s = rep.summary().to_dict()
    assert not s["skipped"], s["skipped"]
    assert all(s[k] is not None for k in SUMMARY_KEYS)


def test_to_frame_lists_every_key_with_notes():
    real, syn = _table(120, 16), _table(120, 17)
    frame = quality_report(real, syn, SCHEMA, metrics=["shape", "trend"]).to_frame()
    assert list(frame["metric"]) == list(SUMMARY_KEYS)
    notes = frame.set_index("metric")["note"]
    assert notes["trend"] == "6/6 pairs scored (all)" and notes["mle"] == "" and frame["value"].notna().sum() == 2
