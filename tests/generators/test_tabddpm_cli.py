"""`tabmem train` / `tabmem sample` end to end on a tiny table (TabDDPM with a tiny network)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.cli import main


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models: one thread is faster and does not fight the other test processes for cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


TINY = ["--param", "layers=[16]", "--param", "dim_t=8", "--param", "num_timesteps=4", "--param", "batch_size=32"]


@pytest.fixture
def csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "income": rng.normal(1e4, 3e3, n).round(2),
            "city": rng.choice(["Zzsecretville", "Paris", "Oslo"], n),
            "label": rng.choice(["yes", "no"], n),
        }
    )
    path = tmp_path / "train.csv"
    df.to_csv(path, index=False)
    hold = tmp_path / "hold.csv"
    df.iloc[:10].to_csv(hold, index=False)
    return path, hold, df


def run(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_train_track_resume_sample(csv, tmp_path, capsys):
    path, hold, df = csv
    out = tmp_path / "run"

    def train_argv(epochs, *extra):
        return [
            "train",
            "--train",
            str(path),
            "--target",
            "label",
            "--holdout",
            str(hold),
            "--epochs",
            str(epochs),
            "--track-every",
            "1",
            "--seed",
            "3",
            "--out",
            str(out),
            "--quiet",
            *TINY,
            *extra,
        ]

    argv = train_argv(2)
    code, stdout, err = run(argv, capsys)
    assert code == 0, err
    assert "memorization rate" in stdout and "holdout baseline" in stdout
    assert "Zzsecretville" not in stdout + err  # never print training values
    for name in (
        "model.pt",
        "checkpoint.pt",
        "config.json",
        "synthetic.csv",
        "summary.json",
        "dynamics.json",
        "history.csv",
        "tracking/epochs.csv",
        "records.csv",
    ):
        assert (out / name).exists(), name
    syn = pd.read_csv(out / "synthetic.csv")
    assert list(syn.columns) == list(df.columns) and len(syn) == len(df)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs"] == 2 and 0 <= summary["memorization_rate"] <= 1
    assert summary["holdout_memorization_rate"] == 1.0  # holdout rows are training rows here: exact copies
    assert summary["holdout_memorization_rate_ci"] == [1.0, 1.0]  # every resample of all-ones is all ones
    lo, hi = summary["excess_memorization_ci"]
    assert lo <= summary["excess_memorization"] <= hi
    # records.csv: one row per training record (positions and counts only) adding up to the replicas
    records = pd.read_csv(out / "records.csv")
    assert list(records.columns) == ["train_row", "replica_count", "mem_auc"]
    assert records.train_row.tolist() == list(range(len(df))) and records.replica_count.sum() == summary["n_replicas"]
    dyn = json.loads((out / "dynamics.json").read_text())
    assert dyn["tracked_epochs"] == [1, 2] and set(dyn["metrics"]) >= {
        "first_memorization_epoch",
        "early_mem_auc",
        "n_forgetting_events",
    }

    # an existing run is never overwritten silently
    code, _, err = run(argv, capsys)
    assert code == 2 and "--resume" in err
    # resume with more epochs continues from the checkpoint
    code, stdout, err = run(train_argv(3, "--resume"), capsys)
    assert code == 0, err
    hist = pd.read_csv(out / "history.csv")
    assert hist["epoch"].tolist() == [1, 2, 3]
    assert pd.read_csv(out / "tracking" / "epochs.csv")["epoch"].tolist() == [1, 2, 3]
    # resume with different settings is refused
    code, _, err = run(train_argv(4, "--resume", "--param", "lr=0.5"), capsys)
    assert code == 2 and "settings differ" in err and "params" in err

    f1, f2 = tmp_path / "a.csv", tmp_path / "b.parquet"
    assert run(["sample", "--model", str(out), "--n", "17", "--seed", "1", "--out", str(f1)], capsys)[0] == 0
    assert (
        run(["sample", "--model", str(out / "model.pt"), "--n", "17", "--seed", "1", "--out", str(f2)], capsys)[0] == 0
    )
    a, b = pd.read_csv(f1), pd.read_parquet(f2)
    assert len(a) == 17 and set(a["city"]) <= {"Zzsecretville", "Paris", "Oslo"}
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_user_errors(csv, tmp_path, capsys):
    path, _, _ = csv
    code, _, err = run(["train", "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and "exactly one of --train FILE or --dataset NAME" in err
    code, _, err = run(
        ["train", "--train", str(path), "--model", "nope", "--out", str(tmp_path / "y"), "--quiet"], capsys
    )
    assert code == 2 and "unknown generator 'nope'" in err
    code, _, err = run(
        ["train", "--train", str(path), "--param", "oops", "--out", str(tmp_path / "z"), "--quiet"], capsys
    )
    assert code == 2 and "KEY=VALUE" in err
    code, _, err = run(["sample", "--model", str(path), "--n", "3", "--out", str(tmp_path / "s.csv")], capsys)
    assert code == 2 and "not a readable tabmem generator" in err
