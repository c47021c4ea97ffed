"""A killed ``tabmem train`` leaves a directory that ``--resume`` finishes with the same result.

The training runs in a subprocess that is killed with SIGKILL at chosen points: as soon as
``config.json`` exists (before the first checkpoint, when the run can only start again from
scratch), as soon as the first checkpoint exists, and (``-m slow``) at random points of the run. ``--resume`` then finishes the run, and its ``synthetic.csv``
must equal, byte for byte, that of an uninterrupted run with the same seed.
"""

from __future__ import annotations

import os
import random
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
ARGS = ["--model", "tabddpm", "--preset", "small", "--epochs", "6", "--checkpoint-every", "3", "--track-every", "3",
        "--param", "layers=[32,32]", "--param", "dim_t=16", "--param", "num_timesteps=20", "--threads", "1",
        "--quiet", "--seed", "3"]  # fmt: skip


@pytest.fixture(scope="module")
def table_and_reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kill")
    rng = np.random.default_rng(5)
    table = pd.DataFrame(
        {
            "x": np.round(rng.normal(0, 1, 160), 4),
            "y": rng.integers(0, 1000, 160),
            "k": rng.choice(["a", "b", "c"], 160),
        }
    )
    path = tmp / "train.csv"
    table.to_csv(path, index=False)
    ref = tmp / "reference"
    try:
        main(["train", "--train", str(path), *ARGS, "--out", str(ref)])
    except SystemExit as exc:
        assert not exc.code
    return path, (ref / "synthetic.csv").read_bytes()


def _run_until(path: Path, out: Path, when) -> str:
    """Start training in a subprocess, SIGKILL it when ``when(out)`` holds (or it ends); the state it left."""
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tabmem", "train", "--train", str(path), *ARGS, "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    start = time.monotonic()
    while proc.poll() is None and not when(out, time.monotonic() - start):
        time.sleep(0.002)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    if (out / "summary.json").exists():
        return "finished"
    if (out / "checkpoint.pt").exists():
        return "checkpoint"
    return "config only" if (out / "config.json").exists() else "nothing"


def _resume_and_compare(path: Path, out: Path, reference: bytes) -> None:
    try:
        main(["train", "--train", str(path), *ARGS, "--out", str(out), "--resume"])
    except SystemExit as exc:
        assert not exc.code, f"--resume failed on a killed run directory ({out})"
    assert (out / "synthetic.csv").read_bytes() == reference


def test_killed_before_the_first_checkpoint_resumes_from_scratch(table_and_reference, tmp_path) -> None:
    path, reference = table_and_reference
    out = tmp_path / "early"
    state = _run_until(path, out, lambda d, t: (d / "config.json").exists())
    assert state in ("config only", "checkpoint", "finished")
    _resume_and_compare(path, out, reference)


class _AfterStart:
    """True ``delay`` seconds after training started (config.json written): a random point of the run itself."""

    def __init__(self, delay: float) -> None:
        self.delay, self.started = delay, None

    def __call__(self, out: Path, t: float) -> bool:
        if self.started is None and (out / "config.json").exists():
            self.started = t
        return self.started is not None and t - self.started > self.delay


def test_killed_after_the_first_checkpoint_resumes_from_it(table_and_reference, tmp_path) -> None:
    path, reference = table_and_reference
    out = tmp_path / "checkpointed"
    state = _run_until(path, out, lambda d, t: (d / "checkpoint.pt").exists())
    assert state in ("checkpoint", "finished")
    _resume_and_compare(path, out, reference)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_killed_at_more_random_points(table_and_reference, tmp_path, seed) -> None:
    path, reference = table_and_reference
    out = tmp_path / f"random{seed}"
    state = _run_until(path, out, _AfterStart(random.Random(100 + seed).uniform(0.0, 8.0)))
    _resume_and_compare(path, out, reference)
    print(f"killed in state: {state}")
