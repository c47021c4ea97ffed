"""DynamicCut: the pruned set, the retrain table, the warm-up, the run directory, resume, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from mitigation_tables import TINY_DDPM, mixed_table

from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import Schema, validate
from tabmem.errors import ParameterError, TabmemError
from tabmem.generators import get_generator, load_generator
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.mitigation import DynamicCut, Ranking, rank_records, retrain_table
from tabmem.mitigation.summary import DynamicCutSummary
from tabmem.runs.dynamiccut import SUMMARY_KEYS, dynamiccut_to_dir

EPOCHS = 6
PARAMS = {**TINY_DDPM, "epochs": EPOCHS}


@pytest.fixture(scope="module")
def data():
    df, schema = mixed_table(n=60, seed=2)
    hold, _ = mixed_table(n=60, seed=3)
    return df, schema, hold


def _ranking(n: int, fingerprint: str | None = None) -> Ranking:
    return Ranking.from_scores(np.linspace(1.0, 0.0, n) ** 2, method="intensity", fingerprint=fingerprint)


# ------------------------------------------------------------------ pure steps
def test_retrain_table_removes_the_top_ceil_pn_and_keeps_order(data):
    df, schema, _ = data
    fp = table_fingerprint(validate(df, schema, name="training"))
    scores = np.random.default_rng(0).random(len(df))
    rk = Ranking.from_scores(scores, method="x", fingerprint=fp)
    rt = retrain_table(df, schema, rk, 0.1)
    top = np.argsort(-scores)[:6]  # ceil(0.1 * 60) = 6 highest scores
    np.testing.assert_array_equal(rt.pruned_rows, np.sort(top))
    keep = np.setdiff1d(np.arange(len(df)), top)
    pd.testing.assert_frame_equal(rt.table, df.iloc[keep].reset_index(drop=True))
    assert (rt.n_kept, rt.n_new) == (54, 0)


def test_retrain_table_with_mix_adds_rows_made_from_kept_records_only(data):
    df, schema, _ = data
    rk = _ranking(len(df))
    rt = retrain_table(df, schema, rk, 0.25, mix="tabcutmix", mix_ratio=0.3, random_state=1)
    assert rt.n_kept == 45 and rt.n_new == int(0.3 * 45) and len(rt.table) == 45 + 13
    kept = df.drop(index=rt.pruned_rows).reset_index(drop=True)
    pd.testing.assert_frame_equal(rt.table.iloc[:45].reset_index(drop=True), kept)
    pruned_only = df.iloc[rt.pruned_rows]
    for c in ("income", "age"):  # cells of pruned records do not come back (values unique here)
        shared = set(pruned_only[c]) & set(kept[c])
        assert not (set(rt.table[c].iloc[45:]) & (set(pruned_only[c]) - shared))


def test_retrain_table_refuses_a_ranking_of_another_table(data):
    df, schema, _ = data
    with pytest.raises(TabmemError, match="another training table"):
        retrain_table(df, schema, _ranking(len(df), fingerprint="0" * 64), 0.1)
    with pytest.raises(TabmemError, match="ranks 59 records"):
        retrain_table(df, schema, _ranking(59), 0.1)


# ------------------------------------------------------------------ in memory
def test_dynamiccut_warmup_is_the_start_of_the_full_schedule_and_retrain_is_from_scratch(data):
    df, schema, hold = data
    dc = DynamicCut(params=PARAMS, warmup_epochs=4, track_every=2, top_k=2, prune=0.1, random_state=0).fit(df, schema)
    # stage 1 = epochs 1..4 of the 6-epoch schedule: its tracked records equal a full run's up to epoch 4
    full_tracker = MemorizationTracker(every=2, random_state=0)
    get_generator("tabddpm", preset="small", **PARAMS).fit(df, schema, callbacks=[full_tracker], random_state=0)
    assert dc.warmup_generator_.epoch_ == 4
    full = full_tracker.records_
    pd.testing.assert_frame_equal(dc.warmup_tracker_.records_, full[full.epoch <= 4].reset_index(drop=True))
    lr_warm = [h["lr"] for h in dc.warmup_generator_.history_]
    assert lr_warm[-1] > 0  # a 4-epoch schedule would have decayed the learning rate to 0
    # the ranking is the intensity over the warm-up, the pruned set its top ceil(0.1 * 60) = 6
    expected = rank_records(full_tracker, "intensity", top_k=2, warmup_epochs=4, random_state=0)
    pd.testing.assert_frame_equal(dc.ranking_.table, expected.table)
    np.testing.assert_array_equal(dc.pruned_rows_, expected.top(0.1))
    # stage 2: a fresh model on the 54 kept rows, identical to training one directly
    assert dc.generator_.n_train_ == dc.n_retrain_ == 54 and dc.generator_.epoch_ == EPOCHS
    direct = get_generator("tabddpm", preset="small", **PARAMS).fit(
        df.drop(index=dc.pruned_rows_).reset_index(drop=True), schema, random_state=0
    )
    for a, b in zip(dc.generator_.model_.parameters(), direct.model_.parameters()):
        assert torch.equal(a, b)
    rep = dc.evaluate(hold, quality=False)
    assert rep.n_pruned == 6 and rep.n_synthetic == 60
    assert 0 <= rep.memorization_rate <= 1 and "excess_memorization" in rep.to_dict()


def test_random_control_and_given_ranking_skip_the_warmup(data):
    df, schema, _ = data
    dc = DynamicCut(params=PARAMS, prune_by="random", prune=0.2, random_state=3).fit(df, schema)
    assert dc.warmup_generator_ is None and len(dc.pruned_rows_) == 12
    fp = table_fingerprint(validate(df, schema, name="training"))
    given = _ranking(len(df), fingerprint=fp)
    dc2 = DynamicCut(params=PARAMS, ranking=given, prune=0.1, mix="tabcutmix").fit(df, schema)
    assert dc2.warmup_generator_ is None
    np.testing.assert_array_equal(dc2.pruned_rows_, np.arange(6))
    assert dc2.n_retrain_ == 54 + int(0.3 * 54)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"prune": 0.0, "warmup_epochs": 2, "track_every": 1}, "prune"),
        ({"prune": 1.0, "warmup_epochs": 2, "track_every": 1}, "prune"),
        ({"top_k": 0, "warmup_epochs": 2, "track_every": 1}, "top_k"),
        ({"warmup_epochs": 10, "track_every": 2}, "longer than the run"),
        ({"warmup_epochs": 4, "track_every": 5}, "tracks no epoch within the warm-up"),
        ({}, "give warmup_epochs"),
        ({"prune_by": "loss"}, "prune_by"),
        ({"prune_by": "random", "mix": "nope"}, "unknown augmenter 'nope'"),
    ],
)
def test_bad_settings_fail_before_any_training(data, kwargs, match):
    df, schema, _ = data
    with pytest.raises(ParameterError, match=match):
        DynamicCut(params=PARAMS, **kwargs).fit(df, schema)


def test_label_conditioned_mix_without_target_fails_before_the_warmup(data, tmp_path):
    df, _, _ = data
    schema = Schema.infer(df.drop(columns="y"))
    with pytest.raises(TabmemError, match="mix='tabcutmix' is label-conditioned"):
        dynamiccut_to_dir(
            df.drop(columns="y"), schema, tmp_path / "r", params=PARAMS, warmup_epochs=4, track_every=2, mix="tabcutmix"
        )
    assert not (tmp_path / "r" / "warmup").exists()


# ------------------------------------------------------------------ directory run
def _run(df, schema, hold, out, **kw):
    args = {"params": PARAMS, "warmup_epochs": 4, "track_every": 2, "top_k": 2, "prune": 0.1, "holdout": hold,
            "test": hold, "mle_grid": "tiny", "seed": 0}  # fmt: skip
    args.update(kw)
    return dynamiccut_to_dir(df, schema, out, **args)


def test_directory_layout_and_summary_contract(data, tmp_path):
    df, schema, hold = data
    s = _run(df, schema, hold, tmp_path / "dc", mix="tabcutmix")
    out = tmp_path / "dc"
    for f in ("config.json", "ranking.csv", "ranking.json", "synthetic.csv", "summary.json"):
        assert (out / f).is_file(), f
    for stage in ("warmup", "retrain"):
        assert (out / stage / "model.pt").is_file() and (out / stage / "summary.json").is_file()
    assert json.loads((out / "warmup" / "summary.json").read_text())["epochs"] == 4
    assert (out / "warmup" / "tracking" / "tracker.json").is_file()
    written = json.loads((out / "summary.json").read_text())
    assert set(SUMMARY_KEYS) <= set(written)
    assert {"shape", "trend", "mle"} <= set(written["quality"])
    ranking = pd.read_csv(out / "ranking.csv")
    assert list(ranking.columns) == ["train_row", "score", "rank", "pruned"] and ranking.pruned.sum() == 6
    assert s.n_pruned == 6 and s.n_retrain == 54 + int(0.3 * 54) and s.n_train == 60
    assert load_generator(out / "retrain" / "model.pt").n_train_ == s.n_retrain
    assert len(pd.read_csv(out / "synthetic.csv")) == 60
    assert s.ranking_source == "warmup" and s.prune_by == "intensity" and s.mix == "tabcutmix"
    # pruned rows are those of the saved ranking's top ceil(p N)
    np.testing.assert_array_equal(np.flatnonzero(ranking.pruned), Ranking.load(out / "ranking.csv").top(0.1))
    # the memorization rate is measured against the original 60 rows; vs pruned, against the 54 kept
    assert written["n_train"] == 60 and 0 <= written["memorization_rate_vs_pruned"] <= 1
    with pytest.raises(TabmemError, match="already holds a dynamiccut run"):
        _run(df, schema, hold, tmp_path / "dc")


def test_given_ranking_file_skips_warmup_and_foreign_file_is_refused(data, tmp_path):
    df, schema, hold = data
    _run(df, schema, hold, tmp_path / "a")
    s = _run(df, schema, hold, tmp_path / "b", ranking=tmp_path / "a" / "ranking.csv", model="tabddpm")
    assert not (tmp_path / "b" / "warmup").exists() and s.ranking_source.endswith("ranking.csv")
    other, _ = mixed_table(n=60, seed=9)
    with pytest.raises(TabmemError, match="another training table"):
        _run(other, schema, hold, tmp_path / "c", ranking=tmp_path / "a" / "ranking.csv")
    assert not (tmp_path / "c").exists()  # refused before anything was written


def test_resume_after_a_kill_between_stages_and_during_retraining(data, tmp_path, monkeypatch):
    df, schema, hold = data
    ref = _run(df, schema, hold, tmp_path / "ref")

    import tabmem.runs.dynamiccut as mod

    real = mod.train_to_dir

    def killed_before_retrain(table, schema_, out, **kw):
        if out.name == "retrain":
            raise KeyboardInterrupt("killed between stages")
        return real(table, schema_, out, **kw)

    monkeypatch.setattr(mod, "train_to_dir", killed_before_retrain)
    with pytest.raises(KeyboardInterrupt):
        _run(df, schema, hold, tmp_path / "k1")
    assert (tmp_path / "k1" / "warmup" / "summary.json").is_file() and not (tmp_path / "k1" / "retrain").exists()
    monkeypatch.setattr(mod, "train_to_dir", real)
    stages = []
    resumed = _run(df, schema, hold, tmp_path / "k1", resume=True, log=stages.append)
    assert "already done" in stages[0]
    _same(ref, resumed)

    # a kill in the middle of retraining (after the epoch-3 checkpoint): resume continues from it
    import tabmem.runs.train as training

    original = training._Progress.on_epoch_end

    def die(self, gen, epoch, logs):
        if gen.n_train_ == 54 and epoch == 4:
            raise KeyboardInterrupt("killed during retraining")
        return original(self, gen, epoch, logs)

    monkeypatch.setattr(training._Progress, "on_epoch_end", die)
    with pytest.raises(KeyboardInterrupt):
        _run(df, schema, hold, tmp_path / "k2")
    assert (tmp_path / "k2" / "retrain" / "checkpoint.pt").is_file()
    monkeypatch.setattr(training._Progress, "on_epoch_end", original)
    stages = []
    resumed = _run(df, schema, hold, tmp_path / "k2", resume=True, log=stages.append)
    assert "already done" in stages[0] and "(resumed)" in stages[1]
    _same(ref, resumed)
    with pytest.raises(TabmemError, match="settings differ.*prune"):
        _run(df, schema, hold, tmp_path / "k2", resume=True, prune=0.2)


def _same(a: DynamicCutSummary, b: DynamicCutSummary) -> None:
    for k in ("memorization_rate", "memorization_rate_vs_pruned", "holdout_memorization_rate", "mem_auc", "n_pruned"):
        assert getattr(a, k) == getattr(b, k), k
    assert a.quality is not None and b.quality is not None and a.quality.shape == b.quality.shape


def test_stop_at_epoch_keeps_the_full_schedule_and_a_resume_past_it_trains_nothing(data, tmp_path):
    from tabmem.callbacks import StopAtEpoch

    df, schema, _ = data
    full = get_generator("tabddpm", preset="small", **PARAMS).fit(df, schema, random_state=1)
    ckpt = tmp_path / "c.pt"
    warm = get_generator("tabddpm", preset="small", **PARAMS)
    warm.fit(df, schema, callbacks=[StopAtEpoch(3)], random_state=1, checkpoint_every=1, checkpoint_path=ckpt)
    assert warm.epoch_ == 3 and warm.epochs == EPOCHS
    assert [h["lr"] for h in warm.history_] == [h["lr"] for h in full.history_[:3]]
    again = get_generator("tabddpm", preset="small", **PARAMS)
    again.fit(df, schema, callbacks=[StopAtEpoch(3)], resume_from=ckpt)
    assert again.epoch_ == 3 and again.epochs == EPOCHS and len(again.history_) == 3
    for a, b in zip(again.model_.parameters(), warm.model_.parameters()):
        assert torch.equal(a, b)


def test_report_without_holdout_keeps_the_keys_as_null(data):
    from tabmem.mitigation import mitigation_report

    df, schema, hold = data
    rep = mitigation_report(hold, df, schema, pruned_rows=np.arange(3), quality=False)
    assert rep.holdout_memorization_rate is None and rep.excess_memorization is None
    assert rep.n_pruned == 3 and rep.memorization_rate_vs_pruned is not None


def test_bootstrap_interval_of_the_excess_matches_naive_resampling():
    from tabmem.mitigation import bootstrap_excess_ci

    rng = np.random.default_rng(0)
    syn, hold = rng.random(800) < 0.35, rng.random(600) < 0.25
    lo, hi = bootstrap_excess_ci(syn, hold, n_boot=4000, random_state=1)
    a = rng.choice(syn.astype(float), (4000, len(syn))).mean(1)  # naive: resample rows
    b = rng.choice(hold.astype(float), (4000, len(hold))).mean(1)
    nlo, nhi = np.percentile(a - b, [2.5, 97.5])
    assert lo == pytest.approx(nlo, abs=0.006) and hi == pytest.approx(nhi, abs=0.006)
    se = np.sqrt(0.35 * 0.65 / 800 + 0.25 * 0.75 / 600)  # normal approximation
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.1)
