"""``--device`` of ``tabmem audit`` and ``tabmem attack``: the same files whatever the device; no CUDA is one line.

torch's CPU device stands in for a GPU (the hidden ``--device torch-cpu``), running the torch code
that ``--device cuda`` runs.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from cli_run import run
from tabmem.neighbors import device

pytestmark = pytest.mark.device


def frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.integers(18, 70, n).astype(float),
            "hours": rng.normal(40.0, 8.0, n).round(1),
            "job": rng.choice(["a", "b", "c", "d"], n),
            "city": rng.choice(["x", "y"], n),
        }
    )


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    train, hold = frame(rng, 300), frame(rng, 150)
    syn = pd.concat([train.iloc[:40], frame(rng, 160)], ignore_index=True)  # 40 planted copies
    paths = {}
    for name, df in (("train", train), ("syn", syn), ("hold", hold)):
        paths[name] = tmp_path / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    return paths


@pytest.fixture
def spy(monkeypatch):
    calls = {"blocks": 0, "bounds": 0}
    search, bounds = device._search, device.bag_bounds

    def counted_search(*args, **kwargs):
        calls["blocks"] += 1
        return search(*args, **kwargs)

    def counted_bounds(*args, **kwargs):
        calls["bounds"] += 1
        return bounds(*args, **kwargs)

    monkeypatch.setattr(device, "_search", counted_search)
    monkeypatch.setattr(device, "bag_bounds", counted_bounds)
    return calls


def _audit(files, out, dev, capsys, distance="gower"):
    args = ["audit", "--train", files["train"], "--synthetic", files["syn"], "--holdout", files["hold"]]
    args += ["--distance", distance, "--n-jobs", "1", "--out", out, "--device", dev]
    return run(args, capsys)


@pytest.mark.parametrize("distance", ["gower", "fang2024"])
def test_audit_writes_the_same_files_on_the_device(files, tmp_path, capsys, spy, distance) -> None:
    outs = {}
    for dev in ("cpu", device.TORCH_CPU):
        outs[dev] = tmp_path / dev
        code, text = _audit(files, outs[dev], dev, capsys, distance)
        assert code == 0, text
        if dev == "cpu":
            assert spy["blocks"] == 0
    assert spy["blocks"] > 0  # the searches ran on the device
    for name in ("replicas.csv", "records.csv", "rare_values.csv"):
        assert (outs["cpu"] / name).read_bytes() == (outs[device.TORCH_CPU] / name).read_bytes(), name
    a, b = (json.loads((outs[d] / "summary.json").read_text()) for d in outs)
    for s in (a, b):
        s.pop("seconds", None)
    assert a == b
    assert a["memorization_rate"] > 0  # the planted copies are found


def test_audit_without_cuda_is_one_line(files, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, text = _audit(files, tmp_path / "out", "cuda", capsys)
    assert code == 2
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    assert lines[0].startswith("Error: --device cuda: no CUDA device is available"), text
    assert not (tmp_path / "out").exists()  # refused before any work


def test_unknown_device_is_one_line(files, tmp_path, capsys) -> None:
    code, text = _audit(files, tmp_path / "out", "tpu", capsys)
    assert code == 2 and text.strip() == "Error: --device: 'tpu' is not a device (use cpu, cuda or cuda:N)", text


def test_attack_scores_are_the_same_on_the_device(files, tmp_path, capsys, spy) -> None:
    outs = {}
    for dev in ("cpu", device.TORCH_CPU):
        outs[dev] = tmp_path / dev
        args = ["attack", "--members", files["train"], "--non-members", files["hold"], "--synthetic", files["syn"]]
        args += ["--attacks", "levatt,dcr,mc", "--n-bootstrap", "0", "--n-jobs", "1", "--out", outs[dev]]
        code, text = run([*args, "--device", dev], capsys)
        assert code == 0, text
    assert spy["blocks"] > 0 and spy["bounds"] > 0
    for name in ("scores.csv", "risk.csv", "roc.csv"):
        assert (outs["cpu"] / name).read_bytes() == (outs[device.TORCH_CPU] / name).read_bytes(), name
