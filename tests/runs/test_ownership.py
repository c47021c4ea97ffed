"""Run directories that hold other things, and damaged files of tabmem's own.

* a directory holding another run type is refused before anything is written, naming that type;
* an output file that would replace a file of the run directory it sits in is refused;
* ``overwrite`` deletes only the files of its own run type;
* a ranking is written and read back as CSV or Parquet (by suffix); a ``.json`` ranking is refused;
* a damaged file (binary, truncated, fields missing) is one line naming it; a damaged finished
  stage (a cached shadow) is deleted through the protocol and made again.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabmem._io import read_frame, read_json, reading
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.runs.protocol import (
    ATTACK_RUN,
    AUDIT_RUN,
    AUGMENT_RUN,
    LOCK_FILE,
    QUALITY_RUN,
    RUN_KINDS,
    TRAIN_RUN,
    RunDirectory,
    RunKind,
    check_out_file,
    kinds_in,
)

TOY = RunKind("toy", ("config.json", "checkpoint.pt", "summary.json"), signature=("checkpoint.pt",))


def _listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def _fake_run(path: Path, names: tuple[str, ...]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for name in names:
        if "." in name:
            (path / name.replace("*", "shape")).write_text("{}\n")
        else:
            (path / name).mkdir()


# ----------------------------------------------------------------------------- run types
def test_every_signature_belongs_to_one_run_type_only():
    """A signature file identifies its run type: no other run type writes a file of that name, except a
    run type that ``extends`` it (a track run writes a training run's ``tracking/``; ``kinds_in`` then
    counts that file as the track run's, test_track checks it)."""
    for kind in RUN_KINDS:
        assert kind.signature, kind.name
        for other in RUN_KINDS:
            if other is kind or other.extends == kind.name:
                continue
            for sig in kind.signature:
                owned = [f for f in other.files if fnmatch.fnmatchcase(sig.replace("*", "shape"), f)]
                assert not owned, (kind.name, sig, other.name)


@pytest.mark.parametrize("kind", RUN_KINDS, ids=lambda k: k.name)
def test_each_run_type_is_recognised_and_refused_by_the_others(tmp_path, kind):
    out = tmp_path / "d"
    _fake_run(out, kind.signature)
    (out / "notes.txt").write_text("mine")
    before = _listing(out)
    assert [k.name for k in kinds_in(out)] == [kind.name]
    RunDirectory(out, kind).check_kind()  # its own type: fine
    other = AUDIT_RUN if kind is not AUDIT_RUN else TRAIN_RUN
    with pytest.raises(TabmemError, match=rf"holds a tabmem {kind.name} run .*not {other.title}: choose another"):
        with RunDirectory(out, other).lock():
            pytest.fail("the lock was taken")
    assert _listing(out) == before  # nothing written, not even the lock file
    assert LOCK_FILE not in before


def test_a_plain_folder_or_a_folder_of_the_same_type_is_accepted(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with RunDirectory(tmp_path, TRAIN_RUN).lock():
        pass
    _fake_run(tmp_path / "run", ("model.pt", "history.csv", "summary.json"))
    with RunDirectory(tmp_path / "run", TRAIN_RUN).lock():
        pass


def test_an_output_file_may_not_replace_a_file_of_the_run_it_sits_in(tmp_path):
    run = tmp_path / "run"
    _fake_run(run, ("model.pt", "history.csv", "summary.json"))
    for name in ("summary.json", "records.csv", "synthetic.csv"):
        with pytest.raises(TabmemError, match=rf"--out: .*{name}' would replace the {name} of the tabmem training run"):
            check_out_file(run / name, "--out")
    check_out_file(run / "sample.csv", "--out")  # not a file of the run
    check_out_file(tmp_path / "summary.json", "--out")  # not in a run directory


def test_overwrite_deletes_only_its_own_files(tmp_path):
    out = tmp_path / "run"
    _fake_run(out, ("config.json", "checkpoint.pt", "summary.json"))
    (out / "notes.txt").write_text("mine")
    (out / "other.parquet").write_text("another tool's")
    RunDirectory(out, TOY).start({"seed": 1}, overwrite=True)
    assert _listing(out) == ["config.json", "notes.txt", "other.parquet"]


def test_a_damaged_finished_stage_is_deleted_and_started_again(tmp_path):
    stage_kind = RunKind("part", ("done.json", "table.parquet"), config=None)
    run = RunDirectory(tmp_path, TOY)
    sub = tmp_path / "000"
    sub.mkdir()
    (sub / "done.json").write_text("{}")
    (sub / "table.parquet").write_bytes(b"PAR1 truncated")
    (sub / "mine.txt").write_text("kept")
    state = run.stage("000", stage_kind, done=("done.json", "table.parquet"), intact=lambda d: "truncated")
    assert not state.done and not state.resume and state.damaged == "truncated"
    assert _listing(sub) == ["mine.txt"]
    (sub / "done.json").write_text("{}")
    (sub / "table.parquet").write_text("x")
    assert run.stage("000", stage_kind, done=("done.json", "table.parquet"), intact=lambda d: None).done


# ----------------------------------------------------------------------------- the library calls
def _table(n: int = 24) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": np.round(rng.normal(0, 1, n), 3), "c": rng.choice(["x", "y"], n)})


def test_train_and_audit_refuse_each_others_directories(tmp_path):
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.runs.audit import audit_to_dir
    from tabmem.runs.train import train_to_dir

    df = _table()
    schema = Schema.infer(df, categorical=["c"])
    train_to_dir(df, schema, tmp_path / "run", model="noisy_resample", preset=None)
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "run").iterdir()}
    with pytest.raises(TabmemError, match=r"holds a tabmem training run .*not an audit run"):
        audit_to_dir(ReplicaDetector(), df, df, schema, tmp_path / "run", evidence=False)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "run").iterdir()} == before
    audit_to_dir(ReplicaDetector(), df, df, schema, tmp_path / "audit", evidence=False)
    for flag in ({}, {"overwrite": True}, {"resume": True}):
        with pytest.raises(TabmemError, match=r"holds a tabmem audit run .*not a training run"):
            train_to_dir(df, schema, tmp_path / "audit", model="noisy_resample", preset=None, **flag)
    assert "model.pt" not in _listing(tmp_path / "audit")


# ----------------------------------------------------------------------------- rankings
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_ranking_round_trips_as_csv_and_parquet(tmp_path, suffix):
    from tabmem.mitigation.ranking import Ranking

    rk = Ranking.from_scores(np.array([0.3, 0.1, 0.9, 0.5]), method="count", fingerprint="f" * 64, params={"k": 1})
    path = rk.save(tmp_path / f"ranking{suffix}", extra={"pruned": np.array([0, 0, 1, 0], dtype=bool)})
    assert (tmp_path / "ranking.json").is_file()
    back = Ranking.load(path)
    pd.testing.assert_frame_equal(back.table, rk.table)
    assert (back.method, back.fingerprint, back.params) == (rk.method, rk.fingerprint, rk.params)


def test_a_ranking_file_cannot_be_its_own_sidecar(tmp_path):
    from tabmem.mitigation.ranking import Ranking

    rk = Ranking.from_scores(np.array([0.3, 0.1, 0.9]), method="count")
    with pytest.raises(TabmemError, match=r"ends in \.csv or \.parquet.*sidecar"):
        rk.save(tmp_path / "ranking.json")
    assert not (tmp_path / "ranking.json").exists()


# ----------------------------------------------------------------------------- damaged files
def test_damaged_files_are_one_line_naming_them(tmp_path):
    binary = tmp_path / "history.csv"
    binary.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(TabmemError, match=r"history\.csv' is damaged"):
        read_frame(binary)
    truncated = tmp_path / "synthetic.parquet"
    pd.DataFrame({"a": range(100)}).to_parquet(truncated)
    truncated.write_bytes(truncated.read_bytes()[:60])
    with pytest.raises(TabmemError, match=r"synthetic\.parquet' is damaged"):
        read_frame(truncated)
    record = tmp_path / "step.json"
    record.write_text(json.dumps({"name": "audit"}))
    with pytest.raises(TabmemError, match=r"step\.json' is damaged: it lacks the field\(s\) key, seconds"):
        read_json(record, require=("name", "key", "seconds"))
    record.write_text("[1, 2]")
    with pytest.raises(TabmemError, match=r"step\.json' is damaged: a JSON object was expected"):
        read_json(record, require=("name",))
    for exc in (KeyError("schema"), TypeError("bad"), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "x"), EOFError()):
        with pytest.raises(TabmemError, match=r"model\.pt' is damaged"):
            with reading(tmp_path / "model.pt"):
                raise exc


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from tabmem.runs.train import train_to_dir

    df = _table()
    out = tmp_path_factory.mktemp("model") / "run"
    train_to_dir(df, Schema.infer(df, categorical=["c"]), out, model="noisy_resample", preset=None)
    return torch.load(out / "model.pt", weights_only=True)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda p: p.pop("schema"), r"lacks the entry 'schema'"),
        (lambda p: p.pop("state"), r"lacks the entry 'state'"),
        (lambda p: p.update(state={}), r"damaged .*the entry '\w+' is missing"),
        (lambda p: p.update(encoder={"unknown": 1}), r"damaged .*the entry '\w+' is missing"),
        (lambda p: p.update(params={**p["params"], "unknown_entry": 1}), r"params entry is not valid.*unknown_entry"),
        (lambda p: p.update(schema={"columns": 3}), r"damaged .*TypeError"),
    ],
    ids=["no-schema", "no-state", "empty-state", "unknown-encoder", "unknown-param", "bad-schema"],
)
def test_a_model_file_with_a_missing_or_unknown_entry_is_one_line(tmp_path, saved_model, change, match):
    import torch

    from tabmem.generators import load_generator

    payload = dict(saved_model)
    change(payload)
    torch.save(payload, tmp_path / "model.pt")
    with pytest.raises(TabmemError, match=r"generator file '.*model\.pt' is .*" + match):
        load_generator(tmp_path)


def test_a_damaged_cached_shadow_is_trained_again(tmp_path):
    pytest.importorskip("torch")
    from tabmem.data.schema import concat_validated, validate
    from tabmem.runs.shadows import load_shadows, train_shadows

    rng = np.random.default_rng(1)
    members, non_members, population = _table(20), _table(20), _table(60)
    population["a"] = np.round(rng.normal(5, 1, 60), 3)
    schema = Schema.infer(members, categorical=["c"])
    targets = concat_validated(
        [validate(members, schema, name="members"), validate(non_members.assign(a=non_members.a + 9), schema,
                                                             name="non-members")],
        name="targets",
    )  # fmt: skip
    opts = {"model": "tabddpm", "preset": "small", "params": {"epochs": 1, "batch_size": 16}, "n_shadows": 4,
            "n_train": 20, "n_synthetic": 15, "seed": 3}  # fmt: skip
    first = train_shadows(targets, population, schema, tmp_path, **opts)
    (tmp_path / "000" / "synthetic.parquet").write_bytes((tmp_path / "000" / "synthetic.parquet").read_bytes()[:50])
    (tmp_path / "001" / "done.json").write_text("garbage")
    with pytest.raises(TabmemError, match=r"000/synthetic\.parquet' is damaged"):
        load_shadows(tmp_path)
    said: list[str] = []
    again = train_shadows(targets, population, schema, tmp_path, progress=said.append, **opts)
    assert any("shadow 0:" in s and "synthetic.parquet" in s and "training it again" in s for s in said)
    assert any("shadow 1:" in s and "done.json" in s and "training it again" in s for s in said)
    for a, b in zip(first.synthetic, again.synthetic):  # the same seeds: the same shadows again
        pd.testing.assert_frame_equal(a, b)


# ----------------------------------------------------------------------------- two processes
def test_two_tabmem_train_processes_into_one_directory(tmp_path):
    """The second ``tabmem train`` into a directory the first is writing stops with one line."""
    pytest.importorskip("torch")
    df = _table(64)
    df.to_csv(tmp_path / "train.csv", index=False)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    argv = [sys.executable, "-m", "tabmem", "train", "--train", str(tmp_path / "train.csv"), "--model", "tabddpm",
            "--preset", "small", "--epochs", "5000", "--param", "layers=[16,16]", "--param", "dim_t=8",
            "--param", "num_timesteps=10", "--threads", "1", "--quiet", "--out", str(tmp_path / "run")]  # fmt: skip
    first = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "run" / LOCK_FILE).exists():
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "the first process never took the lock"
            time.sleep(0.2)
        second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    finally:
        first.kill()
        first.wait(30)
    assert second.returncode == 2, second.stderr
    lines = [ln for ln in second.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error:")]
    assert len(errors) == 1 and "being written by another tabmem process" in errors[0], second.stderr
    assert "Traceback" not in second.stderr


def test_files_of_a_run_types_names_that_no_run_of_it_wrote_are_left_alone(tmp_path):
    """Another tool's summary.json and config.json: not a training run's, so neither deleted nor replaced."""
    out = tmp_path / "d"
    out.mkdir()
    (out / "summary.json").write_text('{"theirs": 1}')
    (out / "config.json").write_text('{"lr": 0.1}')
    for flags in ({}, {"overwrite": True}, {"resume": True}):
        with pytest.raises(
            TabmemError, match=r"holds config\.json, summary\.json, which no tabmem training run can be"
        ):
            RunDirectory(out, TRAIN_RUN).start({"model": "m", "seed": 0}, **flags)
    assert (out / "summary.json").read_text() == '{"theirs": 1}' and (out / "config.json").read_text() == '{"lr": 0.1}'
    (out / "config.json").write_text('{"model": "tabddpm", "seed": 0}')  # a run killed before its first checkpoint
    assert not RunDirectory(out, TRAIN_RUN).start({"model": "m", "seed": 0}, overwrite=True)
    assert _listing(out) == ["config.json"]


@pytest.mark.parametrize("kind", [AUDIT_RUN, ATTACK_RUN, QUALITY_RUN, AUGMENT_RUN], ids=lambda k: k.name)
def test_single_shot_runs_never_replace_another_tools_summary(tmp_path, kind):
    """A folder holding someone else's summary.json: refused before anything is written; a summary that the
    run type wrote (its keys) is its own, and the run may replace it."""
    out = tmp_path / "d"
    out.mkdir()
    (out / "summary.json").write_text('{"theirs": 1}')
    with pytest.raises(TabmemError, match=rf"holds summary\.json, which no tabmem {kind.name} run can be shown"):
        with RunDirectory(out, kind).lock():
            pass
    assert _listing(out) == ["summary.json"] and (out / "summary.json").read_text() == '{"theirs": 1}'
    (out / "summary.json").write_text(json.dumps(dict.fromkeys(kind.config_keys, 0)))  # a run killed mid-write
    with RunDirectory(out, kind).lock():
        pass


def test_audit_cli_refuses_a_foreign_summary_and_reruns_into_its_own_output(tmp_path):
    from tabmem.cli import main

    df = _table(40)
    train, syn = tmp_path / "train.csv", tmp_path / "syn.csv"
    df.iloc[:20].to_csv(train, index=False)
    df.iloc[20:].to_csv(syn, index=False)
    argv = ["audit", "--train", str(train), "--synthetic", str(syn), "--unseen", "mismatch", "--n-jobs", "1"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "summary.json").write_text('{"theirs": 1}')
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(foreign)])
    assert exc.value.code == 2 and (foreign / "summary.json").read_text() == '{"theirs": 1}'
    for _ in range(2):  # a second audit into its own output replaces its own files
        main([*argv, "--out", str(tmp_path / "mine")])
    assert json.loads((tmp_path / "mine" / "summary.json").read_text())["n_train"] == 20
