"""``tabmem risk``: its flags (a contract), ``--aux`` twice, the printed table and defaults, bad input in one line."""

from __future__ import annotations

import json
import re

import click
import numpy as np
import pandas as pd
import pytest

from cli_run import run
from tabmem.cli import cli

N_ATTACKS = "100"


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "city": rng.choice(["north", "south", "east", "west"], n),
            "income": np.round(rng.normal(50, 10, n), 2),
            "sex": rng.choice(["f", "m"], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    train = _table(150, 0)
    tables = {"train": train, "syn": pd.concat([train.iloc[:50], _table(100, 1)]), "control": _table(100, 2)}
    paths = {}
    for name, t in tables.items():
        paths[name] = str(tmp_path / f"{name}.csv")
        t.to_csv(paths[name], index=False)
    return paths


def _args(files, out, *extra) -> list[str]:
    return ["risk", "--train", files["train"], "--synthetic", files["syn"], "--control", files["control"],
            "--n-attacks", N_ATTACKS, *extra, "--out", str(out)]  # fmt: skip


def _error_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("Error")]


def test_the_flags_are_the_contract():
    cmd = cli.get_command(click.Context(cli), "risk")
    flags = {o for p in cmd.params for o in getattr(p, "opts", ())}
    table = {"--categorical", "--numerical", "--target", "--encoding", "--sep", "--decimal", "--exclude"}
    assert flags == {"--train", "--synthetic", "--control", "--secret", "--aux", "--n-attacks", "--seed", "--out"} | table  # fmt: skip
    secret = next(p for p in cmd.params if "--secret" in p.opts)
    aux = next(p for p in cmd.params if "--aux" in p.opts)
    assert secret.multiple and aux.multiple


def test_secrets_and_aux_twice(files, tmp_path, capsys):
    out = tmp_path / "o"
    code, text = run(
        _args(files, out, "--secret", "y", "--secret", "sex", "--aux", "age,city", "--aux", "income,sex"), capsys
    )
    assert code == 0, text
    s = json.loads((out / "summary.json").read_text())
    assert s["secrets"] == ["y", "sex"] and s["aux"] == [["age", "city"], ["income", "sex"]]
    assert s["n_attacks"] == int(N_ATTACKS) and s["seed"] == 0
    assert list(pd.read_csv(out / "inference.csv")["column"]) == ["y", "sex"]
    for label in (
        "singling out, univariate",
        "singling out, multivariate",
        "linkability",
        "inference: y",
        "inference: sex",
    ):
        assert label in text, label
    for head in ("95% CI", "attack", "control", "baseline"):
        assert head in text
    assert f"{s['linkability']['risk']:.3f}" in text
    assert "defaults:" not in text  # nothing left to choose
    assert "Outputs:" in text and "inference.csv" in text


def test_defaults_are_chosen_and_said(files, tmp_path, capsys):
    out = tmp_path / "o"
    code, text = run(_args(files, out), capsys)
    assert code == 0, text
    s = json.loads((out / "summary.json").read_text())
    assert s["chosen"] and s["secrets"] and len(s["aux"]) == 2
    lines = [ln for ln in text.splitlines() if ln.startswith("defaults: ")]
    assert len(lines) == len(s["chosen"])
    for (key, why), line in zip(s["chosen"].items(), lines):
        assert line == f"defaults: {key}: {why}"
    for col in s["secrets"]:
        assert f"inference: {col}" in text


def test_table_options_apply_to_the_three_tables(tmp_path, capsys):
    paths = {}
    for name, seed in (("train", 0), ("syn", 1), ("control", 2)):
        t = _table(120, seed).assign(row_id=np.arange(120) + 1000 * seed, income=lambda d: d.income + 0.25)
        paths[name] = str(tmp_path / f"{name}.csv")
        t.to_csv(paths[name], index=False, sep=";", decimal=",")
    out = tmp_path / "o"
    code, text = run(
        _args(paths, out, "--sep", ";", "--decimal", ",", "--exclude", "row_id", "--categorical", "age",
              "--secret", "y"),
        capsys,
    )  # fmt: skip
    assert code == 0, text
    schema = json.loads((out / "summary.json").read_text())["schema"]
    assert "row_id" not in schema["columns"] and "age" in schema["categorical"] and "income" in schema["numerical"]


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (("--aux", "age,city"), r"Error: --aux: give it twice, .*not once"),
        (("--aux", "age", "--aux", "city", "--aux", "sex"), r"Error: --aux: give it twice, .*not 3 times"),
        (("--aux", "age,city", "--aux", "city,sex"), r"Error: --aux: column 'city' is in both column sets"),
        (("--aux", "age", "--aux", ","), r"Error: --aux: column set 2 \(','\) names no column"),
        (("--secret", "nope"), r"Error: --secret: column 'nope' is not in the training table \(its columns: age,"),
        (("--aux", "age,nope", "--aux", "sex"), r"Error: --aux: column 'nope' is not in the training table"),
        (("--secret", "y", "--secret", "y"), r"Error: --secret: column 'y' is named twice"),
        (("--n-attacks", "0"), r"Error: Invalid value for '--n-attacks'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(files, tmp_path, capsys, extra, match):
    out = tmp_path / "o"
    code, text = run(_args(files, out, *extra), capsys)
    assert code == 2, text
    errors = _error_lines(text)
    assert len(errors) == 1 and re.match(match, errors[0]), text
    assert "Traceback" not in text and not (out / "summary.json").exists()


def test_bad_files_and_directories(files, tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    pd.DataFrame(columns=list(_table(1, 0).columns)).to_csv(empty, index=False)
    cases = [
        ({"syn": str(empty)}, r"Error: .*empty\.csv: the synthetic table is empty"),
        ({"control": str(empty)}, r"Error: .*empty\.csv: the control table is empty"),
        ({"control": str(tmp_path / "missing.csv")}, r"Error: .*missing\.csv"),
    ]
    for i, (swap, match) in enumerate(cases):
        code, text = run(_args({**files, **swap}, tmp_path / f"o{i}"), capsys)
        assert code == 2 and len(_error_lines(text)) == 1, text
        assert re.match(match, _error_lines(text)[0]), text
    audit = tmp_path / "audit"
    code, text = run(["audit", "--train", files["train"], "--synthetic", files["syn"], "--out", str(audit)], capsys)
    assert code == 0, text
    code, text = run(_args(files, audit), capsys)
    assert code == 2 and _error_lines(text) == [
        f"Error: --out: {str(audit)!r} holds a tabmem audit run (rare_values.csv, replicas.csv), not a risk run: "
        "choose another output directory"
    ], text
    no_control = ["risk", "--train", files["train"], "--synthetic", files["syn"], "--out", str(tmp_path / "x")]
    code, text = run(no_control, capsys)
    assert code == 2 and "Missing option '--control'" in text
