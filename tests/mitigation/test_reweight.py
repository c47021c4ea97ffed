"""Reweighting instead of pruning: the weights of a ranking, DynamicCut(reweight=...), its run directory and CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from mitigation_tables import TINY_DDPM, mixed_table

from cli_run import run
from tabmem.errors import ParameterError
from tabmem.generators import load_generator
from tabmem.mitigation import DynamicCut, Ranking, retrain_table
from tabmem.mitigation.reweight import ranking_weights
from tabmem.runs.dynamiccut import dynamiccut_to_dir

PARAMS = {**TINY_DDPM, "epochs": 4}


@pytest.fixture(scope="module")
def data():
    df, schema = mixed_table(n=60, seed=2)
    hold, _ = mixed_table(n=60, seed=3)
    return df, schema, hold


def test_ranking_weights_brute_force():
    scores = np.array([0.1, 0.9, 0.5, 0.7, 0.2, 0.8, 0.0, 0.3, 0.6, 0.4])
    rk = Ranking.from_scores(scores, method="intensity")
    rank = dict(zip(rk.table.train_row, rk.table["rank"]))  # record -> rank (1 = highest score)
    step = ranking_weights(rk, 0.3, 0.1, "step")
    linear = ranking_weights(rk, 0.3, 0.0, "linear")
    for i in range(10):
        r = rank[i]
        assert step[i] == (0.1 if r <= 3 else 1.0)
        assert linear[i] == pytest.approx((r - 1) / 3 if r <= 3 else 1.0)
    assert sorted(np.flatnonzero(step < 1)) == [1, 3, 5]  # the three highest scores
    with pytest.raises(ParameterError, match="reweight"):
        ranking_weights(rk, 0.3, 1.0)
    with pytest.raises(ParameterError, match="reweight_shape"):
        ranking_weights(rk, 0.3, 0.1, "cubic")


def test_retrain_table_with_reweight_keeps_every_record(data):
    df, schema, _ = data
    rk = Ranking.from_scores(np.linspace(1.0, 0.0, 60), method="intensity")
    rt = retrain_table(df, schema, rk, 0.1, reweight=0.25)
    assert len(rt.table) == 60 and rt.n_kept == 60 and rt.n_new == 0
    np.testing.assert_array_equal(rt.pruned_rows, np.arange(6))
    np.testing.assert_array_equal(rt.weights, np.r_[np.full(6, 0.25), np.ones(54)])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"reweight": 1.0}, r"reweight must be in \[0, 1\)"),
        ({"reweight": -0.1}, r"reweight must be in \[0, 1\)"),
        ({"reweight": 0.1, "mix": "tabcutmix"}, "does not combine with mix"),
        ({"reweight": 0.1, "reweight_shape": "cubic"}, "reweight_shape must be one of"),
        ({"reweight": 0.1, "model": "noisy_resample", "preset": None, "params": {}}, "does not support"),
    ],
)
def test_bad_reweight_settings_fail_before_any_training(data, kwargs, match):
    df, schema, _ = data
    args = {"params": PARAMS, "prune_by": "random", **kwargs}
    with pytest.raises(ParameterError, match=match):
        DynamicCut(**args).fit(df, schema)


def test_in_memory_and_directory_runs_train_the_same_weighted_model(data, tmp_path):
    df, schema, hold = data
    settings = {"params": PARAMS, "warmup_epochs": 2, "track_every": 1, "top_k": 2, "prune": 0.2,
                "reweight": 0.1, "reweight_shape": "linear"}  # fmt: skip
    cut = DynamicCut(**settings, random_state=0).fit(df, schema)
    assert cut.n_retrain_ == 60 and len(cut.pruned_rows_) == 12
    assert (cut.weights_[cut.pruned_rows_] < 1).all() and (np.delete(cut.weights_, cut.pruned_rows_) == 1).all()
    s = dynamiccut_to_dir(df, schema, tmp_path / "rw", **settings, seed=0, holdout=hold, quality=False)
    assert s.reweight == 0.1 and s.reweight_shape == "linear" and s.n_retrain == 60 and s.n_pruned == 12
    config = json.loads((tmp_path / "rw" / "config.json").read_text())
    assert config["reweight"] == 0.1 and config["reweight_shape"] == "linear"
    retrained = load_generator(tmp_path / "rw" / "retrain" / "model.pt")
    a, b = retrained.model_.state_dict(), cut.generator_.model_.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    # resumable like DynamicCut; another weight is another run
    again = dynamiccut_to_dir(df, schema, tmp_path / "rw", **settings, seed=0, holdout=hold, quality=False, resume=True)
    assert again.memorization_rate == s.memorization_rate
    with pytest.raises(Exception, match="reweight"):
        dynamiccut_to_dir(df, schema, tmp_path / "rw", **{**settings, "reweight": 0.5}, seed=0, holdout=hold,
                          quality=False, resume=True)  # fmt: skip


def test_cli_reweight(tmp_path, capsys):
    train, _ = mixed_table(n=60, seed=2)
    path = tmp_path / "t.csv"
    train.to_csv(path, index=False)
    base = ["dynamiccut", "--train", path, "--categorical", "level", "--target", "y", "--epochs", "4", "--threads",
            "1", "--quiet", "--no-quality", "--prune-by", "random", "--param", "layers=[16]", "--param", "dim_t=8",
            "--param", "num_timesteps=5", "--param", "batch_size=32"]  # fmt: skip
    code, text = run([*base, "--reweight", "0.2", "--out", tmp_path / "rw"], capsys)
    assert code == 0, text
    summary = json.loads((tmp_path / "rw" / "summary.json").read_text())
    assert summary["reweight"] == 0.2 and summary["reweight_shape"] == "step" and summary["n_retrain"] == 60
    assert "at weight 0.2" in text and "full-weight records" in text
    code, text = run([*base, "--reweight", "1.5", "--out", tmp_path / "bad"], capsys)
    assert code == 2 and "--reweight" in text and "Traceback" not in text
    code, text = run([*base, "--reweight", "0.2", "--mix", "tabcutmix", "--out", tmp_path / "bad2"], capsys)
    assert code != 0 and "--reweight" in text and "--mix" in text and "Traceback" not in text
    assert len([line for line in text.splitlines() if line.startswith("Error")]) == 1
