"""`tabmem train --model llm` and `tabmem sample --tlp/--digit-modifier` end to end."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from tabmem.cli import cli


def test_train_and_sample_llm_with_defences(tmp_path, small_table):
    small_table.to_csv(tmp_path / "train.csv", index=False)
    run = CliRunner().invoke(
        cli,
        [
            "train",
            "--train",
            str(tmp_path / "train.csv"),
            "--categorical",
            "sex",
            "--numerical",
            "age,income",
            "--model",
            "llm",
            "--preset",
            "tiny",
            "--epochs",
            "2",
            "--param",
            "n_embd=32",
            "--threads",
            "1",
            "--quiet",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert run.exit_code == 0, run.output + repr(run.exception)
    outs = {}
    for name, extra in {"plain": [], "tlp": ["--tlp", "4"], "dm": ["--digit-modifier", "1,1"]}.items():
        res = CliRunner().invoke(
            cli,
            [
                "sample",
                "--model",
                str(tmp_path / "run"),
                "--n",
                "20",
                "--seed",
                "3",
                *extra,
                "--out",
                str(tmp_path / f"{name}.csv"),
            ],
        )
        assert res.exit_code == 0, res.output + repr(res.exception)
        outs[name] = pd.read_csv(tmp_path / f"{name}.csv")
    assert list(outs["plain"].columns) == ["age", "income", "sex"] and len(outs["tlp"]) == 20
    from tabmem.generators import load_generator

    gen = load_generator(tmp_path / "run")
    expected = gen.sample(20, random_state=3, tendency=4.0)
    pd.testing.assert_frame_equal(outs["tlp"], expected, check_dtype=False)
    # p = 1: every digit of every numerical cell moves by +1 mod 10; the category is untouched
    assert (outs["dm"]["sex"] == outs["plain"]["sex"]).all()
    assert (outs["dm"]["age"] != outs["plain"]["age"]).all()


@pytest.mark.parametrize(
    "args,message",
    [
        (["--tlp", "0.5"], "--tlp"),
        (["--digit-modifier", "0.1"], "PMIN,PMAX"),
        (["--digit-modifier", "0.5,0.1"], "p_min must be <= p_max"),
    ],
)
def test_sample_bad_defence_args(tmp_path, small_table, args, message):
    from tabmem.data.schema import Schema
    from tabmem.generators.llm import LLMGenerator

    schema = Schema.infer(small_table, categorical=["sex"], numerical=["age", "income"])
    LLMGenerator(epochs=1, n_layer=1, n_head=2, n_embd=16, random_state=0).fit(small_table, schema).save(
        tmp_path / "m.pt"
    )
    res = CliRunner().invoke(
        cli, ["sample", "--model", str(tmp_path / "m.pt"), "--n", "5", *args, "--out", str(tmp_path / "o.csv")]
    )
    assert res.exit_code != 0 and (message in str(res.exception) or message in res.output)


def test_backbone_only_for_llm(tmp_path, small_table):
    small_table.to_csv(tmp_path / "train.csv", index=False)
    res = CliRunner().invoke(
        cli,
        [
            "train",
            "--train",
            str(tmp_path / "train.csv"),
            "--model",
            "tvae",
            "--backbone",
            "x",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code != 0 and "--backbone only applies" in str(res.exception)
