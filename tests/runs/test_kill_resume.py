"""Every run type, killed with SIGKILL mid-run, is finished by running the same command again (``--resume``
where the command has it), with the files of an uninterrupted run.

``tabmem train`` has its own, finer kill tests (tests/cli/test_train_kill.py), and the study runner its
(tests/studies/test_runner.py); here: DynamicCut (killed during its warm-up and during its retraining),
an attack with shadow generators (killed after its first shadow), an audit and a track run (killed after
its second snapshot).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabmem.cli import main

pytest.importorskip("torch")

SRC = str(Path(__file__).resolve().parents[2] / "src")
TINY = ["--param", "layers=[16]", "--param", "dim_t=8", "--param", "num_timesteps=4", "--param", "batch_size=16"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("kill-runs")
    rng = np.random.default_rng(2)
    n = 150
    df = pd.DataFrame(
        {"x": rng.normal(0, 1, n).round(3), "y": rng.integers(0, 90, n), "k": rng.choice(["a", "b", "c"], n)}
    )
    paths = {}
    for name, part in (("train", df.iloc[:60]), ("holdout", df.iloc[60:90]), ("population", df.iloc[90:])):
        paths[name] = str(tmp / f"{name}.csv")
        part.to_csv(paths[name], index=False)
    (tmp / "snaps").mkdir()
    for epoch in range(1, 9):  # snapshots of a generator that copies more training rows as it trains
        rows = pd.concat([df.iloc[: 5 * epoch], df.iloc[90 : 90 + 60 - 5 * epoch]], ignore_index=True)
        rows.to_csv(tmp / "snaps" / f"gen_epoch{epoch}.csv", index=False)
    paths["snapshots"] = str(tmp / "snaps" / "gen_epoch*.csv")
    return paths


def _commands(f: dict[str, str]) -> dict[str, tuple[list[str], str, list[str]]]:
    """run type -> (arguments, file whose appearance is the moment to kill, the outputs to compare)."""
    return {
        "dynamiccut-warmup": (
            ["dynamiccut", "--train", f["train"], "--holdout", f["holdout"], "--epochs", "8", "--warmup-epochs", "6"]
            + ["--track-every", "2", "--no-quality", "--threads", "1", "--quiet", *TINY],
            "warmup/checkpoint.pt",
            ["ranking.csv", "synthetic.csv", "retrain/synthetic.csv"],
        ),
        "dynamiccut-retrain": (
            ["dynamiccut", "--train", f["train"], "--holdout", f["holdout"], "--epochs", "8", "--warmup-epochs", "2"]
            + ["--track-every", "2", "--no-quality", "--threads", "1", "--quiet", *TINY],
            "retrain/config.json",
            ["ranking.csv", "synthetic.csv", "retrain/synthetic.csv"],
        ),
        "attack-shadows": (
            ["attack", "--members", f["train"], "--non-members", f["holdout"], "--population", f["population"]]
            + ["--synthetic", f["holdout"], "--attacks", "dcr,lira_offline", "--model", "tabddpm", "--epochs", "3"]
            + ["--n-shadows", "4", "--n-bootstrap", "20", "--n-jobs", "1", *TINY],
            "shadows/000/done.json",
            ["scores.csv", "risk.csv", "roc.csv", "shadows/003/synthetic.parquet"],
        ),
        "track": (
            ["track", "--train", f["train"], "--holdout", f["holdout"], "--snapshots", f["snapshots"]],
            "tracking/records/epoch=000002.parquet",
            [
                "records.csv",
                "synthetic.csv",
                "dynamics.json",
                "trajectories.csv",
                "snapshots.csv",
                "tracking/records/epoch=000008.parquet",
            ],
        ),
        "audit": (
            ["audit", "--train", f["train"], "--synthetic", f["population"], "--holdout", f["holdout"]]
            + ["--unseen", "mismatch", "--n-jobs", "1"],
            "replicas.csv",
            ["replicas.csv", "records.csv", "rare_values.csv"],
        ),
    }


def _kill_when(argv: list[str], out: Path, marker: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tabmem", *argv, "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while proc.poll() is None and not (out / marker).exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


def _run(argv: list[str]) -> None:
    try:
        main(argv)
    except SystemExit as exc:
        assert not exc.code, f"tabmem {' '.join(argv)} exited with {exc.code}"


@pytest.mark.parametrize("kind", ["dynamiccut-warmup", "dynamiccut-retrain", "attack-shadows", "audit", "track"])
def test_a_killed_run_finishes_with_the_files_of_an_uninterrupted_one(files, tmp_path, kind):
    import torch

    argv, marker, compared = _commands(files)[kind]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _run([*argv, "--out", str(tmp_path / "reference")])
        _kill_when(argv, tmp_path / "killed", marker)
        again = [*argv, "--out", str(tmp_path / "killed")]
        _run(again + (["--resume"] if kind.startswith(("dynamiccut", "track")) else []))
    finally:
        torch.set_num_threads(threads)
    for name in compared:
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name
    assert not (tmp_path / "killed" / ".lock").exists()
