"""``tabmem audit`` end to end (``tabmem demo``: tests/studies/test_demo.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cli_run import run


@pytest.fixture
def adult_files(shared_data_dir, tmp_path):
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=shared_data_dir)
    train = ds.train.iloc[:3000]
    syn = pd.concat([train.iloc[:100], ds.test.iloc[:300]], ignore_index=True)  # 100 planted copies
    paths = {name: tmp_path / f"{name}.csv" for name in ("train", "syn", "hold")}
    train.to_csv(paths["train"], index=False)
    syn.to_csv(paths["syn"], index=False)
    ds.test.iloc[300:800].to_csv(paths["hold"], index=False)
    return paths


def test_audit_end_to_end_on_adult(adult_files, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code, text = run(
        [
            "audit",
            "--train",
            str(adult_files["train"]),
            "--synthetic",
            str(adult_files["syn"]),
            "--holdout",
            str(adult_files["hold"]),
            "--target",
            "income",
            "--distance",
            "gower",
            "--unseen",
            "mismatch",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, text
    summary = json.loads((out / "summary.json").read_text())
    for key in [
        "n_train",
        "n_synthetic",
        "distance",
        "threshold",
        "memorization_rate",
        "mem_auc",
        "mem_auc_trapz10",
        "holdout_memorization_rate",
        "excess_memorization",
    ]:
        assert key in summary
    assert summary["n_train"] == 3000 and summary["n_synthetic"] == 400 and summary["distance"] == "gower"
    # distance evidence with its own null: each figure next to the holdout's
    assert summary["identical_matches"]["synthetic_share"] >= 0.25 > summary["identical_matches"]["holdout_share"]
    auth = summary["authenticity"]
    assert auth["synthetic_closer_share"] > auth["holdout_closer_share"]
    assert auth["synthetic_authenticity"] == pytest.approx(1 - auth["synthetic_closer_share"])
    assert set(summary["nndr"]["synthetic"]["quantiles"]) == {"0.01", "0.05", "0.1", "0.25", "0.5"}
    copying = summary["data_copying"]
    assert copying["n_cells"] == 10 and copying["z"] < 0 and 0 <= copying["p_value"] <= 1
    assert "data-copying test" in text
    replicas = pd.read_csv(out / "replicas.csv")
    assert list(replicas.columns) == [
        "synthetic_row",
        "nn1",
        "nn2",
        "d1",
        "d2",
        "ratio",
        "is_replica",
        "exact_copy",
        "rare_value",
    ]
    assert replicas.exact_copy.iloc[:100].all() and summary["exact_copy_rate"] >= 100 / 400
    assert replicas.is_replica.iloc[:100].mean() > 0.9  # the planted copies
    assert (replicas.nn1.iloc[:100].to_numpy() == list(range(100))).mean() > 0.9
    records = pd.read_csv(out / "records.csv")
    assert list(records.columns) == ["train_row", "replica_count", "mem_auc"] and len(records) == 3000
    assert "memorization rate" in text
    # private by default: no raw record values on the terminal
    first = pd.read_csv(adult_files["train"]).iloc[0]
    assert str(int(first["fnlwgt"])) not in text


def test_audit_show_records_prints_raw_rows_only_when_asked(adult_files, tmp_path, capsys) -> None:
    code, text = run(
        [
            "audit",
            "--train",
            str(adult_files["train"]),
            "--synthetic",
            str(adult_files["syn"]),
            "--distance",
            "l2",
            "--unseen",
            "mismatch",
            "--show-records",
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
    )
    assert code == 0 and "Most-replicated training records" in text


def test_audit_bad_input_gives_one_clear_message(adult_files, tmp_path, capsys) -> None:
    bad = pd.read_csv(adult_files["syn"]).drop(columns=["age"]).assign(extra=1)
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    code, text = run(
        ["audit", "--train", str(adult_files["train"]), "--synthetic", str(path), "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2
    assert "missing column(s): 'age'" in text and "'extra'" in text and "Traceback" not in text
    code, text = run(["audit", "--synthetic", str(path)], capsys)
    assert code != 0 and "--train" in text


def test_audit_with_registered_dataset_uses_test_split_as_holdout(shared_data_dir, tmp_path, capsys) -> None:
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("diabetes")
    syn = tmp_path / "syn.csv"
    ds.train.iloc[:50].to_csv(syn, index=False)
    code, text = run(["audit", "--dataset", "diabetes", "--synthetic", str(syn), "--out", str(tmp_path / "o")], capsys)
    assert code == 0, text
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["n_holdout"] == len(ds.test)
