"""The run-directory protocol: ownership, one writer, resume or start again, stages."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import pytest

from tabmem.errors import TabmemError
from tabmem.runs.protocol import LOCK_FILE, RunDirectory, RunKind

KIND = RunKind("toy", ("config.json", "checkpoint.pt", "summary.json", "tracking"))
STAGED = RunKind("staged", ("config.json", "stage", "summary.json"), progress="config.json")


def _hold_lock(path: str, ready, release) -> None:  # a second process holding the lock
    with RunDirectory(path, KIND).lock():
        ready.set()
        release.wait(20)


def test_a_second_process_cannot_write_a_locked_directory_and_the_lock_file_goes_away(tmp_path):
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold_lock, args=(str(tmp_path / "run"), ready, release))
    child.start()
    try:
        assert ready.wait(30)
        with pytest.raises(TabmemError, match=r"being written by another tabmem process \(pid \d+\)"):
            with RunDirectory(tmp_path / "run", KIND).lock():
                pass
    finally:
        release.set()
        child.join(30)
    assert not (tmp_path / "run" / LOCK_FILE).exists()
    with RunDirectory(tmp_path / "run", KIND).lock() as run:  # free again
        assert (run.path / LOCK_FILE).read_text() != ""
    assert not (tmp_path / "run" / LOCK_FILE).exists()


def test_the_lock_is_released_when_the_run_fails(tmp_path):
    with pytest.raises(RuntimeError):
        with RunDirectory(tmp_path, KIND).lock():
            raise RuntimeError("killed")
    with RunDirectory(tmp_path, KIND).lock():
        pass


def _write_run(out: Path, config: dict, *, checkpoint: bool = True) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config))
    if checkpoint:
        (out / "checkpoint.pt").write_bytes(b"x")
    (out / "tracking").mkdir(exist_ok=True)
    (out / "tracking" / "epoch_1.npz").write_bytes(b"x")
    (out / ".summary.json.tmp123").write_text("{")  # a leftover of an interrupted atomic write


def test_overwrite_deletes_only_the_files_of_its_run_type(tmp_path):
    _write_run(tmp_path, {"a": 1})
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "other").mkdir()
    assert RunDirectory(tmp_path, KIND).start({"a": 2}, overwrite=True) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "notes.txt", "other"]
    assert json.loads((tmp_path / "config.json").read_text()) == {"a": 2}


def test_a_directory_holding_a_run_needs_resume_or_overwrite(tmp_path):
    _write_run(tmp_path, {"a": 1})
    with pytest.raises(TabmemError, match=r"already holds a toy run: pass resume=True .* or overwrite=True"):
        RunDirectory(tmp_path, KIND).start({"a": 1})
    _write_run(tmp_path / "early", {"a": 1}, checkpoint=False)
    with pytest.raises(TabmemError, match="stopped before its first checkpoint"):
        RunDirectory(tmp_path / "early", KIND).start({"a": 1})
    with pytest.raises(TabmemError, match="exclude each other"):
        RunDirectory(tmp_path, KIND).start({"a": 1}, resume=True, overwrite=True)


def test_resume_continues_the_same_settings_and_names_the_ones_that_differ(tmp_path):
    _write_run(tmp_path, {"a": 1, "b": 2})
    assert RunDirectory(tmp_path, KIND).start({"a": 1, "b": 2}, resume=True) is True
    assert (tmp_path / "checkpoint.pt").is_file()
    with pytest.raises(TabmemError, match=r"settings differ from the run in .*: b \(start a new run"):
        RunDirectory(tmp_path, KIND).start({"a": 1, "b": 3}, resume=True)
    only_a = RunDirectory(tmp_path, KIND).start({"a": 1, "b": 3}, resume=True, compare=lambda o, n: [])
    assert only_a is True


def test_resume_without_a_checkpoint_starts_again_and_says_so(tmp_path):
    _write_run(tmp_path, {"a": 1}, checkpoint=False)
    said: list[str] = []
    assert RunDirectory(tmp_path, KIND).start({"a": 1}, resume=True, warn=said.append) is False
    assert said and "starting from scratch" in said[0]
    assert not (tmp_path / "tracking").exists()
    assert RunDirectory(tmp_path / "new", KIND).start({"a": 1}, resume=True, warn=said.append) is False
    assert len(said) == 1  # nothing to say about an empty directory


def test_a_staged_run_resumes_from_its_config_and_its_stages_from_their_markers(tmp_path):
    run = RunDirectory(tmp_path, STAGED)
    run.start({"a": 1})
    with pytest.raises(TabmemError, match=r"already holds a staged run: pass resume=True to continue it or"):
        run.start({"a": 1})
    assert run.start({"a": 1}, resume=True) is True
    stage = tmp_path / "stage"
    assert not run.stage("stage", KIND).done and not run.stage("stage", KIND).resume
    _write_run(stage, {"s": 1})
    state = run.stage("stage", KIND)
    assert not state.done and state.resume
    (stage / "summary.json").write_text("{}")
    assert run.stage("stage", KIND).done
    _write_run(tmp_path / "early", {"s": 1}, checkpoint=False)
    (tmp_path / "early" / "mine.txt").write_text("kept")
    state = run.stage("early", KIND)
    assert not state.done and not state.resume
    assert sorted(p.name for p in (tmp_path / "early").iterdir()) == ["mine.txt"]  # own files only


def test_two_writers_of_one_training_run_directory(tmp_path):
    """``tabmem train`` into a directory that another process is writing stops before touching it."""
    import numpy as np
    import pandas as pd

    from tabmem.data.schema import Schema
    from tabmem.runs.train import train_to_dir

    df = pd.DataFrame({"a": np.arange(20.0), "c": ["x", "y"] * 10})
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold_lock, args=(str(tmp_path / "run"), ready, release))
    child.start()
    try:
        assert ready.wait(30)
        with pytest.raises(TabmemError, match="being written by another tabmem process"):
            train_to_dir(df, Schema.infer(df), tmp_path / "run", model="noisy_resample", preset=None)
    finally:
        release.set()
        child.join(30)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == []
