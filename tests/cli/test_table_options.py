"""The table options --sep, --decimal and --exclude: declared once, applied to every table a command reads."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_run import run


def _tables(tmp_path, sep: str = ",", decimal: str = ".") -> dict[str, str]:
    rng = np.random.default_rng(3)
    n = 60
    train = pd.DataFrame(
        {"patient_id": np.arange(1, n + 1), "age": rng.integers(20, 90, n), "bmi": np.round(rng.normal(25, 4, n), 1),
         "sex": rng.choice(["F", "M"], n)}
    )  # fmt: skip
    syn = train.iloc[:20].assign(patient_id=np.arange(500, 520))
    paths = {}
    for name, t in (("train", train), ("syn", syn)):
        paths[name] = str(tmp_path / f"{name}.csv")
        t.to_csv(paths[name], index=False, sep=sep, decimal=decimal)
    return paths


def test_identifier_warned_once_and_written(tmp_path, capsys) -> None:
    p = _tables(tmp_path)
    code, text = run(["audit", "--train", p["train"], "--synthetic", p["syn"], "--out", str(tmp_path / "o")], capsys)
    assert code == 0
    lines = [ln for ln in text.splitlines() if "look like identifiers" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning:") and "--exclude patient_id" in lines[0]
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("--exclude patient_id" in w for w in s["warnings"])
    assert "patient_id" in s["schema"]["numerical"]  # warned, never dropped


def test_exclude_leaves_the_column_out_of_every_table(tmp_path, capsys) -> None:
    p = _tables(tmp_path)
    out = tmp_path / "o"
    code, text = run(
        ["audit", "--train", p["train"], "--synthetic", p["syn"], "--exclude", "patient_id", "--out", str(out)], capsys
    )
    assert code == 0, text
    assert "left out: patient_id (--exclude)" in text and "identifiers" not in text
    s = json.loads((out / "summary.json").read_text())
    assert "patient_id" not in s["schema"]["columns"] and s["exact_copy_rate"] == 1.0


def test_exclude_unknown_column(tmp_path, capsys) -> None:
    p = _tables(tmp_path)
    code, text = run(
        ["quality", "--real", p["train"], "--synthetic", p["syn"], "--exclude", "nope", "--out", str(tmp_path / "o")],
        capsys,
    )
    assert code == 2 and "Error: --exclude: column 'nope' is not in the training table" in text


def test_sep_and_decimal_options(tmp_path, capsys) -> None:
    p = _tables(tmp_path, sep=";", decimal=",")
    args = ["audit", "--train", p["train"], "--synthetic", p["syn"], "--exclude", "patient_id"]
    code, text = run([*args, "--out", str(tmp_path / "a")], capsys)
    assert code == 0 and "(read: separator ';'; decimal comma; left out: patient_id (--exclude))" in text
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert "bmi" in s["schema"]["numerical"] and s["exact_copy_rate"] == 1.0
    # --decimal . says the commas are not decimal marks: bmi is text, a categorical column
    code, text = run([*args, "--sep", ";", "--decimal", ".", "--out", str(tmp_path / "b")], capsys)
    assert code == 0 and "bmi" in json.loads((tmp_path / "b" / "summary.json").read_text())["schema"]["categorical"]
    code, text = run([*args, "--sep", "tab", "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and "--sep tab leaves the header in one column, while the file looks ';'-separated" in text


def test_exclude_on_a_registered_dataset(shared_data_dir, tmp_path, capsys) -> None:
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=shared_data_dir)
    col = ds.schema.numerical[0]
    syn = tmp_path / "syn.csv"
    ds.train.iloc[:50].drop(columns=col).to_csv(syn, index=False)
    code, text = run(
        ["audit", "--dataset", "adult", "--data-dir", str(shared_data_dir), "--synthetic", str(syn), "--no-holdout",
         "--exclude", col, "--out", str(tmp_path / "o")],
        capsys,
    )  # fmt: skip
    assert code == 0, text
    assert col not in json.loads((tmp_path / "o" / "summary.json").read_text())["schema"]["columns"]
    code, text = run(
        ["audit", "--dataset", "adult", "--data-dir", str(shared_data_dir), "--synthetic", str(syn),
         "--exclude", "nope", "--out", str(tmp_path / "p")],
        capsys,
    )  # fmt: skip
    assert code == 2 and "--exclude: column 'nope' is not in the dataset 'adult'" in text


@pytest.mark.parametrize("command", ["audit", "attack", "quality", "train", "augment", "dynamiccut", "risk"])
def test_every_table_command_has_the_options(command) -> None:
    import click

    from tabmem.cli import cli

    cmd = cli.get_command(click.Context(cli), command)
    flags = {o for p in cmd.params for o in getattr(p, "opts", [])}
    assert {"--sep", "--decimal", "--exclude"} <= flags
