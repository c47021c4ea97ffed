"""``tabmem prune``: the training table without a ranking's top fraction (DynamicCut's pruning, for any tool)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cli_run import run
from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import Schema, validate
from tabmem.mitigation.dynamiccut import retrain_table
from tabmem.mitigation.ranking import Ranking


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 50
    train = pd.DataFrame({"a": rng.normal(0, 1, n).round(3), "k": rng.choice(["p", "q"], n), "i": np.arange(n)})
    train.to_csv(tmp_path / "train.csv", index=False)
    schema = Schema.infer(train)
    fp = table_fingerprint(validate(train, schema, name="training", nan="match"))
    Ranking.from_scores(rng.random(n), method="intensity", fingerprint=fp).save(tmp_path / "ranking.csv")
    return tmp_path, train, schema


def test_prune_removes_the_top_fraction_as_dynamiccut_does(files, capsys):
    tmp, train, schema = files
    code, out = run(["prune", "--train", tmp / "train.csv", "--ranking", tmp / "ranking.csv", "--prune", "0.1",
                     "--out", tmp / "pruned.parquet"], capsys)  # fmt: skip
    assert code == 0, out
    assert "removed 5 of 50 training records (the top 10% of the intensity ranking); 45 kept" in out
    pruned = pd.read_parquet(tmp / "pruned.parquet")
    ranking = Ranking.load(tmp / "ranking.csv")
    top = ranking.top(0.1)
    assert sorted(set(train["i"]) - set(pruned["i"])) == top.tolist()  # the records of rank <= ceil(pN)
    assert (ranking.table.set_index("train_row").loc[top, "rank"] <= 5).all()
    expected = retrain_table(train, schema, ranking, 0.1).table  # one implementation: DynamicCut's stage 2 table
    pd.testing.assert_frame_equal(pruned, expected.reset_index(drop=True), check_dtype=False)
    pd.testing.assert_frame_equal(pruned, train[~train["i"].isin(top)].reset_index(drop=True), check_dtype=False)


def test_prune_refuses_another_table_a_bad_fraction_and_a_run_file(files, capsys):
    tmp, train, _ = files
    base = ["prune", "--ranking", tmp / "ranking.csv"]
    train.iloc[:49].to_csv(tmp / "short.csv", index=False)
    code, out = run([*base, "--train", tmp / "short.csv", "--prune", "0.1", "--out", tmp / "p.csv"], capsys)
    assert code == 2 and "ranking.csv' ranks 50 records but the training table has 49 rows" in out
    train.assign(a=train["a"] + 1).to_csv(tmp / "other.csv", index=False)
    code, out = run([*base, "--train", tmp / "other.csv", "--prune", "0.1", "--out", tmp / "p.csv"], capsys)
    assert code == 2 and "was computed on another training table (fingerprint" in out
    for bad in ("0", "1", "1.5", "-0.1"):
        code, out = run([*base, "--train", tmp / "train.csv", "--prune", bad, "--out", tmp / "p.csv"], capsys)
        assert code == 2 and "Invalid value for '--prune'" in out, bad
    (tmp / "run").mkdir()
    for name in ("config.json", "model.pt", "history.csv", "synthetic.csv"):
        (tmp / "run" / name).write_text("x")
    code, out = run([*base, "--train", tmp / "train.csv", "--prune", "0.1", "--out", tmp / "run" / "synthetic.csv"],
                    capsys)  # fmt: skip
    assert code == 2 and "would replace the synthetic.csv of the tabmem training run" in out
    code, out = run([*base, "--train", tmp / "train.csv", "--prune", "0.1", "--out", tmp / "train.csv"], capsys)
    assert code == 2 and "is the --train file" in out
    assert not (tmp / "p.csv").exists()
    (tmp / "ranking.json").unlink()
    code, out = run([*base, "--train", tmp / "train.csv", "--prune", "0.2", "--out", tmp / "p.csv"], capsys)
    assert code == 0 and "warning: --ranking" in out and "no .json sidecar" in out
    assert len(pd.read_csv(tmp / "p.csv")) == 40
