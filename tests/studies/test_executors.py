"""The same study gives the same results and files under every executor (timings and host names aside)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from study_fixtures import BASE
from tabmem.studies.runner import run_study
from tabmem.studies.store import load_results

#: keys whose values are timings, hosts or dates (everything else must be identical)
VOLATILE = {"seconds", "train_seconds", "timings_s", "finished", "started", "host", "pid", "run", "epoch_time"}
STUDY = BASE.replace("seeds = [0]", "seeds = [0, 1]").replace('"train", "audit"', '"train", "sample", "audit"')


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def comparable(path: Path):
    """A file's content with timings removed: JSON without volatile keys, CSV without epoch_time, .pt tensors."""
    if path.suffix == ".json":
        return _strip(json.loads(path.read_text()))
    if path.suffix == ".csv":
        frame = pd.read_csv(path)
        return frame.drop(columns=[c for c in frame.columns if c in VOLATILE]).to_csv(index=False)
    if path.suffix == ".pt":
        import torch

        payload = torch.load(path, map_location="cpu", weights_only=True)
        payload["history"] = [_strip(h) for h in payload["history"]]
        return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in _flatten(payload).items()}
    return path.read_bytes()


def _flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}/"))
    elif isinstance(obj, (list, tuple)) and any(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            out.update(_flatten(v, f"{prefix}{i}/"))
    else:
        out[prefix] = obj
    return out


def tree(out: Path) -> dict[str, object]:
    files = {}
    for p in sorted((out / "steps").rglob("*")) + sorted((out / "cells").rglob("config.json")):
        if p.is_file():
            files[str(p.relative_to(out))] = comparable(p)
    return files


def test_local_and_ray_executors_give_identical_results_and_files(write_study, tmp_path, ray_instance):
    path = write_study(STUDY + '\n[[sampling]]\nlabel = "a"\n\n[[sampling]]\nlabel = "b"\ndraw = 1\n')
    runs = {
        "local": {"executor": "local", "jobs": 1},  # the worker-process pool runs the same task function
        "ray-shared": {"executor": "ray", "storage": "shared"},
        "ray-gather": {"executor": "ray", "storage": "gather"},
    }
    results, trees = {}, {}
    for name, kw in runs.items():
        outcome = run_study(path, tmp_path / name, echo=lambda line: None, **kw)
        assert (outcome.done, outcome.failed) == (4, []), (name, outcome.failed)
        results[name] = load_results(tmp_path / name)
        trees[name] = tree(tmp_path / name)
    assert len(results["local"]) > 100
    for name in ("ray-shared", "ray-gather"):
        pd.testing.assert_frame_equal(results[name], results["local"])
        assert sorted(trees[name]) == sorted(trees["local"])
        different = [f for f in trees["local"] if trees[name][f] != trees["local"][f]]
        assert different == [], (name, different)
    # the gathered run really ran elsewhere and was unpacked: links and outputs are in place
    cell = json.loads(next((tmp_path / "ray-gather" / "cells").glob("*/config.json")).read_text())
    assert (tmp_path / "ray-gather" / "cells" / cell["id"] / "audit" / "fang2024" / "summary.json").is_file()


def test_ray_refuses_tasks_no_node_can_hold(write_study, tmp_path, ray_instance):
    from tabmem.errors import TabmemError

    path = write_study(BASE.replace("threads = 1", "threads = 4"))
    with pytest.raises(TabmemError, match=r"no Ray node has the 4 CPU\(s\) and 0 GPU\(s\) a task asks for"):
        run_study(path, tmp_path / "out", executor="ray", echo=lambda line: None)
