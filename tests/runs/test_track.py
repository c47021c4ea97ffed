"""``tabmem track``: snapshots of any generator become a tracked run that rank, report, attack and dynamiccut read.

The evidence: a tabmem TabDDPM trained with ``tabmem train --track-every 1`` (its tracker keeping each
tracked epoch's sample), those samples written as snapshot files, ``tabmem track`` over them: the
rankings ``tabmem rank`` writes from the two run directories are identical (byte for byte), and so are
the per-record records, the final audit's records.csv and the dynamics.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_run import run
from tabmem.errors import TabmemError
from tabmem.runs.protocol import TRACK_RUN, TRAIN_RUN, RunDirectory, kinds_in

TRAIN_ARGS = ("--model", "tabddpm", "--preset", "small", "--epochs", "4", "--param", "layers=[32,32]",
              "--param", "dim_t=16", "--param", "num_timesteps=20", "--threads", "1", "--quiet")  # fmt: skip


def _table(n: int = 80, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.normal(0, 1, n).round(4),
            "b": rng.integers(0, 1000, n),
            "c": rng.choice(["x", "y", "z"], n),
            "y": rng.choice(["0", "1"], n),
        }
    )


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """A `tabmem train --track-every 1` run whose tracker kept each epoch's sample, and those samples as
    snapshot files (CSV for odd epochs, Parquet for even ones), ``tabmem track``ed into ``track/``."""
    pytest.importorskip("torch")
    import tabmem.runs.train as train_module
    from tabmem.cli import main

    tmp = tmp_path_factory.mktemp("track")
    _table().to_csv(tmp / "train.csv", index=False)
    _table(40, 4).to_csv(tmp / "holdout.csv", index=False)
    kept: list = []

    class Keeping(train_module.MemorizationTracker):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, keep_samples=True, **kwargs)
            kept.append(self)

    mp = pytest.MonkeyPatch()
    mp.setattr(train_module, "MemorizationTracker", Keeping)
    try:
        main([str(a) for a in ("train", "--train", tmp / "train.csv", "--holdout", tmp / "holdout.csv", *TRAIN_ARGS,
                               "--track-every", "1", "--out", tmp / "train")])  # fmt: skip
    except SystemExit as exc:
        assert not exc.code
    finally:
        mp.undo()
    snaps = tmp / "snaps"
    snaps.mkdir()
    for epoch, sample in kept[0].samples_.items():
        if epoch % 2:
            sample.to_csv(snaps / f"tabddpm-run7_epoch{epoch:03d}.csv", index=False)
        else:
            sample.to_parquet(snaps / f"tabddpm-run7_epoch{epoch:03d}.parquet", index=False)
    try:
        main([str(a) for a in ("track", "--train", tmp / "train.csv", "--holdout", tmp / "holdout.csv",
                               "--snapshots", snaps / "*", "--generator", "tabddpm", "--out", tmp / "track")])  # fmt: skip
    except SystemExit as exc:
        assert not exc.code
    return tmp


def test_a_snapshot_tracked_run_ranks_its_records_as_the_tabmem_tracked_run(tracked, capsys):
    for method in ("intensity", "count", "first-memorization"):
        for name in ("train", "track"):
            code, out = run(["rank", "--run", tracked / name, "--by", method, "--out",
                             tracked / f"rank-{method}-{name}.csv"], capsys)  # fmt: skip
            assert code == 0, out
        a = (tracked / f"rank-{method}-train.csv").read_bytes()
        assert a == (tracked / f"rank-{method}-track.csv").read_bytes(), method
        sa, sb = (json.loads((tracked / f"rank-{method}-{n}.json").read_text()) for n in ("train", "track"))
        assert sa["fingerprint"] == sb["fingerprint"] and sa["n_train"] == sb["n_train"] == 80
    assert (pd.read_csv(tracked / "rank-intensity-track.csv")["score"] > 0).any()  # a ranking with content
    # the records themselves, the final audit and the dynamics are the same too
    cols = ["epoch", "n_samples", "memorization_rate", "mem_auc", "mem_auc_trapz10", "n_replicas"]
    e_train, e_track = (pd.read_csv(tracked / n / "tracking" / "epochs.csv") for n in ("train", "track"))
    pd.testing.assert_frame_equal(e_train[cols], e_track[cols])
    assert (tracked / "train" / "records.csv").read_bytes() == (tracked / "track" / "records.csv").read_bytes()
    d_train, d_track = (json.loads((tracked / n / "dynamics.json").read_text()) for n in ("train", "track"))
    assert d_train == d_track
    s_train, s_track = (json.loads((tracked / n / "summary.json").read_text()) for n in ("train", "track"))
    for key in ("memorization_rate", "mem_auc", "holdout_memorization_rate", "exact_copy_rate", "n_train"):
        assert s_train[key] == s_track[key], key
    assert s_track["epochs"] == 4 and s_track["n_snapshots"] == 4 and s_track["model"] == "tabddpm"


def test_the_track_run_directory(tracked):
    out = tracked / "track"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "config.json",
            "snapshots.csv",
            "tracking",
            "synthetic.csv",
            "records.csv",
            "summary.json",
            "dynamics.json",
            "trajectories.csv",
        ]  # fmt: skip
    )
    manifest = pd.read_csv(out / "snapshots.csv")
    assert manifest["epoch"].tolist() == [1, 2, 3, 4] and manifest["sha256"].str.len().eq(64).all()
    assert [k.name for k in kinds_in(out)] == ["track"]  # its tracking/ is its own, not a training run's
    assert [k.name for k in kinds_in(tracked / "train")] == ["training"]
    last = pd.read_parquet(tracked / "snaps" / "tabddpm-run7_epoch004.parquet")
    pd.testing.assert_frame_equal(pd.read_csv(out / "synthetic.csv"), last, check_dtype=False)


def test_report_attack_and_dynamiccut_read_the_track_run(tracked, capsys):
    code, out = run(["report", tracked / "track", "--out", tracked / "report.html"], capsys)
    assert code == 0, out
    html = (tracked / "report.html").read_text()
    assert "tabddpm" in html and "track" in html
    from tabmem.report.readers import detect_kind, read_train_dir

    assert detect_kind(tracked / "track") == "train"
    training, _ = read_train_dir(tracked / "track")
    assert training.epochs is not None and training.epochs["epoch"].tolist() == [1, 2, 3, 4]

    for name in ("train", "track"):
        code, out = run(["attack", "--members", tracked / "train.csv", "--non-members", tracked / "holdout.csv",
                         "--synthetic", tracked / name / "synthetic.csv", "--attacks", "dcr", "--n-bootstrap", "10",
                         "--n-jobs", "1", "--run", tracked / name, "--out", tracked / f"attack-{name}"], capsys)  # fmt: skip
        assert code == 0, out
    a, b = (pd.read_csv(tracked / f"attack-{n}" / "risk.csv") for n in ("train", "track"))
    assert a["intensity"].notna().sum() == 80
    pd.testing.assert_series_equal(a["intensity"], b["intensity"])

    code, out = run(["dynamiccut", "--train", tracked / "train.csv", "--holdout", tracked / "holdout.csv",
                     *TRAIN_ARGS, "--ranking", tracked / "rank-intensity-track.csv", "--prune", "0.1", "--no-quality",
                     "--out", tracked / "cut"], capsys)  # fmt: skip
    assert code == 0, out
    summary = json.loads((tracked / "cut" / "summary.json").read_text())
    assert summary["ranking_source"].endswith("rank-intensity-track.csv") and summary["n_retrain"] == 72


def test_resume_keeps_the_scored_epochs_and_adds_new_snapshots(tracked, tmp_path, capsys):
    from tabmem.data.schema import Schema
    from tabmem.runs.track import track_to_dir

    train = pd.read_csv(tracked / "train.csv")
    schema = Schema.infer(train)
    snaps = sorted((tracked / "snaps").iterdir())
    out = tmp_path / "run"
    track_to_dir(train, schema, snaps[:2], out)
    scored = (out / "tracking" / "records" / "epoch=000001.parquet").stat().st_mtime_ns
    with pytest.raises(TabmemError, match=r"already holds a track run: pass resume=True"):
        track_to_dir(train, schema, snaps, out)
    summary = track_to_dir(train, schema, snaps, out, resume=True)
    assert (out / "tracking" / "records" / "epoch=000001.parquet").stat().st_mtime_ns == scored  # not re-scored
    assert summary["epochs"] == 4
    full = tmp_path / "full"
    track_to_dir(train, schema, snaps, full)
    for f in ("records.csv", "dynamics.json"):
        assert (out / f).read_bytes() == (full / f).read_bytes(), f
    with pytest.raises(TabmemError, match=r"settings differ .*: snapshots \(a file scored before changed"):
        track_to_dir(train, schema, snaps[1:], out, resume=True)
    with pytest.raises(TabmemError, match=r"settings differ .*: distance"):
        track_to_dir(train, schema, snaps, out, resume=True, distance="fang2024")
    (out / "notes.txt").write_text("mine\n")
    track_to_dir(train, schema, snaps[:3], out, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine\n"
    assert pd.read_csv(out / "tracking" / "epochs.csv")["epoch"].tolist() == [1, 2, 3]
    # a training run and a track run refuse each other's directories
    with pytest.raises(TabmemError, match=r"holds a tabmem track run \(snapshots\.csv\), not a training run"):
        RunDirectory(out, TRAIN_RUN).check_kind()
    with pytest.raises(TabmemError, match=r"holds a tabmem training run \(.*\), not a track run"):
        RunDirectory(tracked / "train", TRACK_RUN).check_kind()
    code, text = run(["sample", "--model", out, "--n", "3", "--out", tmp_path / "s.csv"], capsys)
    assert code == 2 and "no saved generator" in text


def test_bad_snapshots_fail_in_one_line_naming_the_file(tracked, tmp_path, capsys):
    from tabmem.runs.track import find_snapshots

    d = tmp_path / "s"
    d.mkdir()
    (d / "final.csv").write_text("a\n1\n")
    with pytest.raises(TabmemError, match=r"'.*final\.csv' has no epoch number in its name"):
        find_snapshots(str(d / "*.csv"))
    (d / "final.csv").unlink()
    (d / "e10.csv").write_text("a\n1\n")
    (d / "run2_e010.parquet").write_text("x")
    with pytest.raises(TabmemError, match=r"'.*e10\.csv' and '.*run2_e010\.parquet' are both epoch 10"):
        find_snapshots(str(d / "*"))
    with pytest.raises(TabmemError, match=r"snapshots: '.*nothing-\*\.csv' matches no file"):
        find_snapshots(str(d / "nothing-*.csv"))
    code, out = run(["track", "--train", tracked / "train.csv", "--snapshots", d / "nothing-*.csv",
                     "--out", tmp_path / "o"], capsys)  # fmt: skip
    assert code == 2 and "--snapshots: " in out and "matches no file" in out
    other = d / "other"
    other.mkdir()
    pd.DataFrame({"x": [1.0, 2.0], "c": ["x", "y"]}).to_csv(other / "ep1.csv", index=False)
    code, out = run(["track", "--train", tracked / "train.csv", "--snapshots", other / "*.csv",
                     "--out", tmp_path / "o"], capsys)  # fmt: skip
    assert code == 2 and "ep1.csv" in out and "missing column(s)" in out, out
    assert not (tmp_path / "o" / "snapshots.csv").exists()  # checked before anything was written
