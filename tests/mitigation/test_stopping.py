"""Memorization-aware stopping and checkpoint choice: the rule on planted series, the callback's
figures against an independent computation, weights, resume, the directory run and bad input."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch
from mitigation_tables import TINY_DDPM, mixed_table

from cli_run import run
from tabmem.callbacks import StopAtEpoch
from tabmem.errors import TabmemError
from tabmem.generators import DEFAULT_PRESET, get_generator, load_generator
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.metrics.shape import Shape
from tabmem.mitigation import MemorizationStopping, choose_epoch, should_stop
from tabmem.runs.train import train_to_dir

EPOCHS = 8
PARAMS = {**TINY_DDPM, "epochs": EPOCHS}


@pytest.fixture(scope="module")
def data():
    df, schema = mixed_table(n=60, seed=2)
    hold, _ = mixed_table(n=60, seed=3)
    sel, _ = mixed_table(n=60, seed=4)
    return df, schema, hold, sel


def weights(gen):
    return [p.detach().clone() for m in gen._torch_modules() for p in m.parameters()]


def same_weights(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(weights(a), weights(b), strict=True))


def series(hi, shape):
    return [{"epoch": 100 * (i + 1), "excess_hi": h, "shape": s} for i, (h, s) in enumerate(zip(hi, shape))]


# ------------------------------------------------------------------ the rule on planted series
def test_last_eligible_epoch_is_chosen():
    rows = series([0.00, 0.03, 0.01, 0.06, 0.09], [0.90, 0.95, 0.96, 0.97, 0.97])
    assert choose_epoch(rows, 0.05)[:2] == (300, True)  # 0.01 <= 0.05 at 300; 400 and 500 are above
    assert choose_epoch(rows, 0.05, quality_floor=0.955)[:2] == (300, True)
    assert choose_epoch(rows, 0.02)[:2] == (300, True)  # 200 (0.03) is out, 300 (0.01) is in
    assert choose_epoch(rows, 0.0)[:2] == (100, True)  # the bound is inclusive


def test_best_quality_among_eligible_epochs():
    rows = series([0.00, 0.03, 0.01, 0.06], [0.90, 0.97, 0.96, 0.99])
    assert choose_epoch(rows, 0.05, choose="best-quality")[:2] == (200, True)  # 400 has a better Shape, not eligible
    tied = series([0.0, 0.0], [0.95, 0.95])
    assert choose_epoch(tied, 0.05, choose="best-quality")[0] == 100  # ties: the earlier epoch


def test_floor_excludes_low_quality_epochs_and_no_eligible_epoch_is_said():
    rows = series([0.00, 0.04, 0.08], [0.80, 0.85, 0.97])
    epoch, met, reason = choose_epoch(rows, 0.05, quality_floor=0.9)
    assert (epoch, met) == (200, False)  # the limit wins: the best Shape within it, though below the floor
    assert "no tracked epoch" in reason and "best Shape among those within the limit" in reason
    epoch, met, _ = choose_epoch(series([0.09, 0.07, float("nan")], [0.9, 0.9, 0.9]), 0.05)
    assert (epoch, met) == (200, False)  # the lowest upper bound; an undefined bound is never eligible
    assert choose_epoch([], 0.05) == (None, False, "no tracked epoch")
    with pytest.raises(TabmemError, match="choose must be one of"):
        choose_epoch(rows, 0.05, choose="first")


def test_should_stop_needs_patience_epochs_in_a_row():
    rows = series([0.0, 0.06, 0.01, 0.07, 0.08], [1] * 5)
    assert not should_stop(rows[:2], 0.05, patience=2)
    assert not should_stop(rows[:3], 0.05, patience=1)
    assert should_stop(rows[:2], 0.05, patience=1)
    assert should_stop(rows, 0.05, patience=2) and not should_stop(rows, 0.05, patience=3)


# ------------------------------------------------------------------ the callback in a real fit
def _fit(df, schema, sel, *, limit=1.0, floor=None, choose="last", stop=False, patience=1, path=None, epochs=EPOCHS):
    tracker = MemorizationTracker(every=2, n_samples=40, random_state=0)
    chooser = MemorizationStopping(tracker, sel, limit=limit, quality_floor=floor, choose=choose, stop=stop,
                                   patience=patience, path=path, random_state=0)  # fmt: skip
    gen = get_generator("tabddpm", **{**PARAMS, "epochs": epochs}).fit(
        df, schema, callbacks=[chooser, tracker], random_state=3
    )
    return gen, tracker, chooser


def test_figures_match_an_independent_computation_and_measuring_changes_nothing(data):
    df, schema, _, sel = data
    gen, tracker, chooser = _fit(df, schema, sel)
    plain = get_generator("tabddpm", **PARAMS).fit(df, schema, random_state=3)
    assert same_weights(gen, plain)  # tracking, scoring and snapshots leave training untouched
    h = chooser.history_
    assert h["epoch"].tolist() == [2, 4, 6, 8]
    det = ReplicaDetector("gower").fit(df, schema)
    sel_rate = det.score(sel, unseen="mismatch").memorization_rate
    for e in (4, 8):  # the sample the tracker drew at e, drawn again from a run stopped at e
        twin = get_generator("tabddpm", **PARAMS).fit(df, schema, random_state=3, callbacks=[StopAtEpoch(e)])
        sample = twin.sample(40, random_state=tracker.sample_seed(e))
        rate = det.score(sample).memorization_rate
        row = h.set_index("epoch").loc[e]
        assert row["memorization_rate"] == pytest.approx(rate)
        assert row["excess"] == pytest.approx(rate - sel_rate)
        assert row["excess_lo"] <= row["excess"] <= row["excess_hi"]
        assert row["shape"] == pytest.approx(Shape().compute(df, sample, schema))


def test_chosen_snapshot_equals_a_run_trained_to_that_epoch(data, tmp_path):
    df, schema, _, sel = data
    gen, _, chooser = _fit(df, schema, sel, choose="best-quality", path=tmp_path / "sel")
    epoch, met, _ = chooser.choice()
    assert met and epoch in (2, 4, 6, 8)
    assert epoch == int(chooser.history_.sort_values(["shape", "epoch"], ascending=[False, True]).iloc[0]["epoch"])
    chosen = chooser.load_chosen()
    twin = get_generator("tabddpm", **PARAMS).fit(df, schema, random_state=3, callbacks=[StopAtEpoch(epoch)])
    assert chosen.epoch_ == epoch and same_weights(chosen, twin)
    chooser.prune_snapshots()
    assert [f.name for f in (tmp_path / "sel" / "snapshots").iterdir()] == [f"epoch={epoch:06d}.pt"]


def test_stop_early_ends_training_after_patience_epochs_above_the_limit(data):
    df, schema, _, sel = data
    gen, _, chooser = _fit(df, schema, sel, limit=-1.0, stop=True, patience=2, epochs=20)
    assert gen.epoch_ == 4 and gen.stopped_early_ and chooser.stopped_epoch_ == 4  # tracked 2 and 4, both above
    assert chooser.history_["stop"].tolist() == [False, True]
    epoch, met, _ = chooser.choice()
    assert not met and epoch in (2, 4)


def test_bad_callback_settings_are_one_line(data):
    df, schema, _, sel = data
    tracker = MemorizationTracker(every=2)
    for kwargs, match in [
        ({"limit": 2.0}, "limit must be a fraction"),
        ({"limit": 0.1, "quality_floor": 1.5}, "quality_floor must be in"),
        ({"limit": 0.1, "choose": "first"}, "choose must be one of"),
        ({"limit": 0.1, "patience": 0}, "patience"),
    ]:
        with pytest.raises(TabmemError, match=match):
            MemorizationStopping(tracker, sel, **kwargs)
    with pytest.raises(TabmemError, match="selection_holdout"):
        MemorizationStopping(tracker, sel.iloc[:0], limit=0.1)
    with pytest.raises(TabmemError, match="pass its tracker to fit"):
        get_generator("tabddpm", **PARAMS).fit(df, schema, callbacks=[MemorizationStopping(tracker, sel, limit=0.1)])


# ------------------------------------------------------------------ the directory run (tabmem train)
def _train(df, schema, hold, sel, out, **kw):
    return train_to_dir(df, schema, out, params=PARAMS, track_every=2, holdout=hold, stop_excess=0.3,
                        quality_floor=0.5, choose="best-quality", selection_holdout=sel, seed=0, **kw)  # fmt: skip


def test_directory_run_writes_the_chosen_model_and_resumes_exactly(data, tmp_path, monkeypatch):
    df, schema, hold, sel = data
    full = _train(df, schema, hold, sel, tmp_path / "full")
    s = full["selection"]
    epoch = s["chosen_epoch"]
    assert full["epochs"] == epoch and full["epochs_trained"] == EPOCHS and s["epochs_trained"] == EPOCHS
    assert s["rule_met"] and "best Shape" in s["reason"] and s["n_tracked_epochs"] == 4
    model = load_generator(tmp_path / "full" / "model.pt")
    last = load_generator(tmp_path / "full" / "last_model.pt")
    assert model.epoch_ == epoch and last.epoch_ == EPOCHS
    twin = get_generator("tabddpm", preset=DEFAULT_PRESET, **PARAMS)  # train_to_dir's default preset
    twin.fit(df, schema, random_state=0, callbacks=[StopAtEpoch(epoch)])
    assert same_weights(model, twin)
    tracker = MemorizationTracker(every=2)
    synthetic = pd.read_csv(tmp_path / "full" / "synthetic.csv")
    drawn = model.sample(len(df), random_state=tracker.sample_seed(epoch))  # the tracker's sample of that epoch
    pd.testing.assert_frame_equal(synthetic, drawn, check_dtype=False)
    config = json.loads((tmp_path / "full" / "config.json").read_text())
    assert config["selection"]["stop_excess"] == 0.3 and config["selection"]["selection_holdout"]["n_rows"] == 60

    # a crash at epoch 6 after its row and snapshot were written, before that epoch's checkpoint
    original = MemorizationStopping.on_epoch_end

    def crash(self, gen, e, logs):
        out = original(self, gen, e, logs)
        if e == 6:
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(MemorizationStopping, "on_epoch_end", crash)
    with pytest.raises(KeyboardInterrupt):
        _train(df, schema, hold, sel, tmp_path / "cut")
    assert (tmp_path / "cut" / "selection" / "snapshots" / "epoch=000006.pt").is_file()
    monkeypatch.setattr(MemorizationStopping, "on_epoch_end", original)
    resumed = _train(df, schema, hold, sel, tmp_path / "cut", resume=True)
    assert resumed["selection"] == s
    for f in ("selection/selection.csv", "synthetic.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "cut" / f), pd.read_csv(tmp_path / "full" / f))
    assert same_weights(load_generator(tmp_path / "cut" / "model.pt"), model)
    assert same_weights(load_generator(tmp_path / "cut" / "last_model.pt"), last)


def test_directory_run_stopped_early_does_not_train_on_when_resumed(data, tmp_path):
    df, schema, hold, sel = data
    kw = {"params": {**PARAMS, "epochs": 20}, "track_every": 2, "holdout": hold, "stop_excess": -1.0,
          "stop_early": True, "patience": 2, "selection_holdout": sel, "seed": 0}  # fmt: skip
    first = train_to_dir(df, schema, tmp_path / "r", **kw)
    assert first["epochs_trained"] == 4 and first["selection"]["stopped_early"]
    again = train_to_dir(df, schema, tmp_path / "r", resume=True, **kw)
    assert again["epochs_trained"] == 4 and again["selection"] == first["selection"]
    assert not math.isnan(first["selection"]["excess_vs_selection_holdout"])


# ------------------------------------------------------------------ the command line
@pytest.fixture
def files(tmp_path, data):
    df, _, hold, sel = data
    paths = {k: tmp_path / f"{k}.csv" for k in ("train", "hold", "sel")}
    for k, frame in zip(paths, (df, hold, sel)):
        frame.to_csv(paths[k], index=False)
    return paths


TINY = ["--param", "layers=[16]", "--param", "dim_t=8", "--param", "num_timesteps=5", "--param", "batch_size=32"]


def _cli(files, out, *extra):
    return ["train", "--train", files["train"], "--categorical", "level", "--holdout", files["hold"], *TINY,
            "--epochs", "6", "--threads", "1", "--quiet", "--out", out, *extra]  # fmt: skip


def test_cli_chooses_and_reports(files, tmp_path, capsys):
    code, text = run(_cli(files, tmp_path / "o", "--track-every", "2", "--stop-excess", "0.3", "--quality-floor",
                          "0.5", "--selection-holdout", files["sel"]), capsys)  # fmt: skip
    assert code == 0, text
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert f"chose epoch {s['selection']['chosen_epoch']} of 6" in text
    assert (tmp_path / "o" / "last_model.pt").is_file() and (tmp_path / "o" / "selection" / "selection.csv").is_file()


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--track-every", "2", "--stop-excess", "0.1"], "--stop-excess needs --selection-holdout"),
        (["--stop-excess", "0.1", "--selection-holdout", "SEL"], "--stop-excess needs tracking: --track-every > 0"),
        (["--track-every", "2", "--stop-excess", "5", "--selection-holdout", "SEL"], "--stop-excess must be a fraction"),
        (["--track-every", "2", "--quality-floor", "0.9"], "--stop-excess is needed"),
        (["--track-every", "2", "--stop-excess", "0.1", "--selection-holdout", "HOLD"], "is the evaluation holdout"),
        (["--track-every", "2", "--stop-excess", "0.1", "--quality-floor", "2", "--selection-holdout", "SEL"],
         "--quality-floor must be a Shape"),
    ],
)  # fmt: skip
def test_cli_bad_input_is_one_line(files, tmp_path, capsys, extra, match):
    extra = [{"SEL": files["sel"], "HOLD": files["hold"]}.get(a, a) for a in extra]
    code, text = run(_cli(files, tmp_path / "x", *extra), capsys)
    assert code != 0 and match in text and "Traceback" not in text
    assert len([line for line in text.splitlines() if "rror" in line]) == 1, text
    assert not (tmp_path / "x" / "model.pt").exists()
