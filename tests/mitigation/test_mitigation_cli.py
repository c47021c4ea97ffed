"""``tabmem augment`` and ``tabmem dynamiccut`` end to end: files, keys, and one clear line for bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from mitigation_tables import mixed_table

from cli_run import run


@pytest.fixture
def files(tmp_path):
    train, _ = mixed_table(n=60, seed=2)
    hold, _ = mixed_table(n=60, seed=3)
    other, _ = mixed_table(n=60, seed=4)
    paths = {"train": tmp_path / "t.csv", "hold": tmp_path / "h.csv", "other": tmp_path / "o.csv"}
    train.to_csv(paths["train"], index=False)
    hold.to_csv(paths["hold"], index=False)
    other.to_csv(paths["other"], index=False)
    return paths


TINY = ["--param", "layers=[16]", "--param", "dim_t=8", "--param", "num_timesteps=5", "--param", "batch_size=32"]
BASE = ["--categorical", "level", "--target", "y", "--epochs", "6", "--threads", "1", "--quiet", "--mle-grid", "tiny"]


def test_augment_writes_originals_then_new_rows(files, tmp_path, capsys):
    out = tmp_path / "aug"
    code, text = run(
        ["augment", "--train", files["train"], "--target", "y", "--method", "tabcutmix", "--ratio", "0.3",
         "--param", "mode=paper", "--seed", "0", "--out", out],
        capsys,
    )  # fmt: skip
    assert code == 0, text
    train = pd.read_csv(files["train"])
    aug = pd.read_csv(out / "augmented.csv")
    assert len(aug) == 60 + 18
    pd.testing.assert_frame_equal(aug.iloc[:60], train)  # the training rows unchanged, in order
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "tabcutmix" and summary["ratio"] == 0.3 and summary["seed"] == 0
    assert (summary["n_original"], summary["n_new"]) == (60, 18)
    assert summary["params"] == {"mode": "paper"}
    assert "18 new rows" in text and "north" not in text  # counts only, no record values


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--method", "tabcutmix"], "tabcutmix is label-conditioned"),  # no --target
        (["--method", "nope", "--target", "y"], "unknown augmenter 'nope'"),
        (["--method", "mixup", "--ratio", "0"], "Invalid value for '--ratio'"),
        (["--method", "tabcutmix", "--target", "y", "--param", "mode=x"], "mode must be one of"),
        (["--method", "smote", "--target", "y", "--param", "k=3"], "bad argument"),
    ],
)
def test_augment_bad_input_one_line(files, tmp_path, capsys, args, match):
    code, text = run(["augment", "--train", files["train"], *args, "--out", tmp_path / "x"], capsys)
    assert code == 2 and match in text and "Traceback" not in text


def test_dynamiccut_end_to_end_and_transfer(files, tmp_path, capsys):
    out = tmp_path / "dc"
    code, text = run(
        ["dynamiccut", "--train", files["train"], "--holdout", files["hold"], "--test", files["hold"], *BASE, *TINY,
         "--warmup-epochs", "4", "--track-every", "2", "--top-k", "2", "--prune", "0.10",
         "--mix", "tabcutmix", "--mix-ratio", "0.3", "--seed", "0", "--out", out],
        capsys,
    )  # fmt: skip
    assert code == 0, text
    assert "[1/3] warm-up" in text and "[2/3] retrain" in text and "[3/3] evaluate" in text
    assert "memorization rate" in text and "holdout baseline" in text
    assert "north" not in text and "south" not in text  # no record values on the terminal
    s = json.loads((out / "summary.json").read_text())
    for key in ("memorization_rate", "memorization_rate_vs_pruned", "holdout_memorization_rate",
                "excess_memorization", "mem_auc", "n_train", "n_pruned", "prune", "prune_by", "top_k",
                "warmup_epochs", "ranking_source", "mix", "quality"):  # fmt: skip
        assert key in s, key
    assert s["quality"]["mle"] is not None and s["n_pruned"] == 6 and s["mix"] == "tabcutmix"
    assert (out / "warmup" / "model.pt").is_file() and (out / "retrain" / "model.pt").is_file()
    # transfer: TVAE pruned with the TabDDPM ranking (no warm-up)
    code, text = run(
        ["dynamiccut", "--train", files["train"], "--holdout", files["hold"], "--categorical", "level", "--target", "y",
         "--model", "tvae", "--epochs", "2", "--threads", "1", "--quiet", "--no-quality",
         "--ranking", out / "ranking.csv", "--out", tmp_path / "tvae"],
        capsys,
    )  # fmt: skip
    assert code == 0, text
    assert not (tmp_path / "tvae" / "warmup").exists()
    t = json.loads((tmp_path / "tvae" / "summary.json").read_text())
    assert t["ranking_source"].endswith("ranking.csv") and t["n_pruned"] == 6
    assert pd.read_csv(tmp_path / "tvae" / "ranking.csv").pruned.equals(pd.read_csv(out / "ranking.csv").pruned)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--prune", "1.2", "--warmup-epochs", "2", "--track-every", "1"], "Invalid value for '--prune'"),
        (["--prune", "0", "--warmup-epochs", "2", "--track-every", "1"], "Invalid value for '--prune'"),
        (["--top-k", "0", "--warmup-epochs", "2", "--track-every", "1"], "Invalid value for '--top-k'"),
        (["--warmup-epochs", "20", "--track-every", "2"], "--warmup-epochs) = 20 is longer than the run"),
        ([], "give warmup_epochs (--warmup-epochs)"),
        (["--prune-by", "random", "--mix", "nope"], "unknown augmenter 'nope'"),
    ],
)
def test_dynamiccut_bad_input_one_line(files, tmp_path, capsys, args, match):
    code, text = run(["dynamiccut", "--train", files["train"], *BASE, *args, "--out", tmp_path / "x"], capsys)
    assert code == 2 and match in text and "Traceback" not in text
    assert not (tmp_path / "x" / "warmup").exists()


def test_dynamiccut_refuses_ranking_of_another_table_and_mix_without_target(files, tmp_path, capsys):
    code, text = run(
        ["dynamiccut", "--train", files["train"], *BASE, *TINY, "--prune-by", "random", "--no-quality",
         "--out", tmp_path / "r"],
        capsys,
    )  # fmt: skip
    assert code == 0, text
    code, text = run(
        ["dynamiccut", "--train", files["other"], *BASE, "--ranking", tmp_path / "r" / "ranking.csv",
         "--out", tmp_path / "o"],
        capsys,
    )  # fmt: skip
    assert code == 2 and "computed on another training table" in text and "Traceback" not in text
    code, text = run(
        ["dynamiccut", "--train", files["train"], "--categorical", "level", "--epochs", "6", "--prune-by", "random",
         "--mix", "tabcutmix", "--out", tmp_path / "m"],
        capsys,
    )  # fmt: skip
    assert code == 2 and "--mix tabcutmix is label-conditioned" in text


def test_rank_command_writes_a_ranking_usable_for_transfer(files, tmp_path, capsys):
    run_dir = tmp_path / "train"
    code, text = run(
        ["train", "--train", files["train"], "--categorical", "level", "--target", "y", "--epochs", "4",
         "--track-every", "2", "--threads", "1", "--quiet", *TINY, "--out", run_dir],
        capsys,
    )  # fmt: skip
    assert code == 0, text
    code, text = run(["rank", "--run", run_dir, "--by", "count", "--out", tmp_path / "count.csv"], capsys)
    assert code == 0 and "ranked 60 training records" in text
    r = pd.read_csv(tmp_path / "count.csv")
    assert list(r.columns) == ["train_row", "score", "rank"] and sorted(r["rank"]) == list(range(1, 61))
    assert json.loads((tmp_path / "count.json").read_text())["method"] == "count"
    code, text = run(
        ["rank", "--run", run_dir, "--by", "intensity", "--warmup-epochs", "1", "--out", tmp_path / "i.csv"], capsys
    )
    assert code == 2 and "no tracked epoch <= warmup_epochs=1" in text
    code, text = run(["rank", "--run", run_dir, "--by", "count", "--out", tmp_path / "count.parquet"], capsys)
    assert code == 0 and pd.read_parquet(tmp_path / "count.parquet").equals(r)  # a ranking as Parquet, by suffix
    code, text = run(
        ["dynamiccut", "--train", files["train"], *BASE, *TINY, "--no-quality", "--ranking", tmp_path / "count.parquet",
         "--out", tmp_path / "dc"],
        capsys,
    )  # fmt: skip
    assert code == 0, text
    summary = json.loads((tmp_path / "dc" / "summary.json").read_text())
    assert summary["prune_by"] == "count" and summary["ranking_source"].endswith("count.parquet")


def test_augment_smote_on_a_one_class_target_is_one_line_naming_the_column(files, tmp_path, capsys):
    single = pd.read_csv(files["train"])
    single["y"] = single["y"].iloc[0]
    path = tmp_path / "one_class.csv"
    single.to_csv(path, index=False)
    code, text = run(
        ["augment", "--train", path, "--target", "y", "--method", "smote", "--seed", "0", "--out", tmp_path / "x"],
        capsys,
    )
    lines = [line for line in text.splitlines() if line.startswith("Error:")]
    assert code == 2 and "Traceback" not in text and len(lines) == 1, text
    assert "the target column 'y' has a single class" in lines[0] and "at least two classes" in lines[0]
