"""``risk_to_dir``: the one WP29 risk sequence behind ``tabmem risk`` and the study's ``risk`` step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.risk import RiskSummary
from tabmem.runs.protocol import RISK_RUN, RunDirectory, kinds_in
from tabmem.runs.risk import INFERENCE_COLUMNS, risk_to_dir

OUTPUTS = ["inference.csv", "summary.json"]
SECRET_VALUE = "SECRET-b41f"  # a one-off training value: no output file may hold it
N_ATTACKS = 100


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "city": rng.choice(["north", "south", "east", "west"], n).astype(object),
            "income": np.round(rng.normal(50, 10, n), 2),
            "sex": rng.choice(["f", "m"], n).astype(object),
            "y": rng.choice(["no", "yes"], n).astype(object),
        }
    )


@pytest.fixture
def tables():
    train = _table(200, 0)
    train.loc[199, "city"] = SECRET_VALUE
    synthetic = pd.concat([train.iloc[:60], _table(140, 1)], ignore_index=True)  # 60 copies: leaky
    return train, synthetic, _table(150, 2)


@pytest.fixture
def schema(tables):
    return Schema.infer(tables[0], categorical=["city", "sex", "y"])


def _risk(tables, schema, out, **kw):
    kw.setdefault("secrets", ["y", "sex"])
    kw.setdefault("aux", [["age", "city"], ["income", "sex"]])
    return risk_to_dir(*tables, schema, out, n_attacks=N_ATTACKS, seed=0, **kw)


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_writes_the_summary_and_the_per_column_inference(tables, schema, tmp_path):
    out = tmp_path / "risk"
    s = _risk(tables, schema, out)
    assert isinstance(s, RiskSummary)
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS  # the lock file goes with the run
    doc = _summary(out)
    assert doc == {**json.loads(json.dumps(s.to_dict())), "schema": schema.to_dict()}
    assert RiskSummary.from_dict({k: v for k, v in doc.items() if k != "schema"}) == s
    assert doc["secrets"] == ["y", "sex"] and doc["aux"] == [["age", "city"], ["income", "sex"]]
    assert (doc["n_train"], doc["n_synthetic"], doc["n_control"]) == (200, 200, 150)
    inference = pd.read_csv(out / "inference.csv")
    assert list(inference.columns) == list(INFERENCE_COLUMNS)
    assert list(inference["column"]) == ["y", "sex"]
    for row in inference.itertuples(index=False):
        est = doc["inference"]["per_column"][row.column]
        assert row.risk == pytest.approx(est["risk"]) and [row.ci_low, row.ci_high] == pytest.approx(est["risk_ci"])
        assert row.attack_rate == pytest.approx(est["attack_rate"])
        assert row.control_rate == pytest.approx(est["control_rate"])
        assert row.baseline_rate == pytest.approx(est["baseline_rate"])
    for name in OUTPUTS:  # rates and counts only, never a record
        assert SECRET_VALUE not in (out / name).read_text(), name
    assert [k.name for k in kinds_in(out)] == ["risk"]


def test_outputs_equal_what_tabmem_risk_writes(tables, schema, tmp_path):
    paths = {}
    for name, df in zip(("train", "syn", "control"), tables):
        paths[name] = tmp_path / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    main(["risk", "--train", paths["train"], "--synthetic", paths["syn"], "--control", paths["control"],
          "--categorical", "city,sex,y", "--secret", "y", "--secret", "sex", "--aux", "age,city", "--aux", "income,sex",
          "--n-attacks", str(N_ATTACKS), "--seed", "0", "--out", str(tmp_path / "cli")])  # fmt: skip
    cli = _summary(tmp_path / "cli")
    lib = _risk(tables, Schema.from_dict(cli["schema"]), tmp_path / "lib").to_dict()
    lib_file = _summary(tmp_path / "lib")
    assert list(lib_file) == list(cli)  # same keys, in the same order
    for doc in (lib_file, cli):
        doc.pop("seconds")
    assert lib_file == cli
    assert (tmp_path / "lib" / "inference.csv").read_bytes() == (tmp_path / "cli" / "inference.csv").read_bytes()
    assert lib["secrets"] == cli["secrets"]


def test_refuses_another_run_types_directory_and_another_tools_summary(tables, schema, tmp_path):
    audit = tmp_path / "audit"
    audit.mkdir()
    for name in ("summary.json", "replicas.csv", "records.csv", "rare_values.csv"):
        (audit / name).write_text("old\n")
    with pytest.raises(TabmemError, match=r"holds a tabmem audit run \(.*replicas\.csv.*\), not a risk run"):
        _risk(tables, schema, audit)
    assert all((audit / n).read_text() == "old\n" for n in ("summary.json", "replicas.csv"))
    assert not (audit / "inference.csv").exists() and not (audit / ".lock").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "summary.json").write_text('{"accuracy": 0.9}\n')
    with pytest.raises(
        TabmemError, match=r"holds summary\.json, which no tabmem risk run can be shown to have written"
    ):
        _risk(tables, schema, other)
    assert (other / "summary.json").read_text() == '{"accuracy": 0.9}\n'
    # and an audit refuses a risk directory
    risk = tmp_path / "risk"
    _risk(tables, schema, risk)
    from tabmem.runs.protocol import AUDIT_RUN

    with pytest.raises(TabmemError, match=r"holds a tabmem risk run \(inference\.csv\), not an audit run"):
        RunDirectory(risk, AUDIT_RUN).check_kind()


def test_running_again_replaces_its_own_files_only(tables, schema, tmp_path):
    """Like ``tabmem audit``: a second run into a risk directory replaces summary.json and inference.csv
    (same settings, same files, timing aside) and leaves everything else alone."""
    out = tmp_path / "risk"
    _risk(tables, schema, out)
    first = _summary(out)
    csv = (out / "inference.csv").read_bytes()
    (out / "notes.txt").write_text("mine")
    _risk(tables, schema, out)
    again = _summary(out)
    first.pop("seconds"), again.pop("seconds")
    assert again == first and (out / "inference.csv").read_bytes() == csv
    _risk(tables, schema, out, secrets=["y"])
    assert _summary(out)["secrets"] == ["y"]
    assert list(pd.read_csv(out / "inference.csv")["column"]) == ["y"]
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["inference.csv", "notes.txt", "summary.json"]


def test_a_directory_being_written_is_refused(tables, schema, tmp_path):
    out = tmp_path / "risk"
    with RunDirectory(out, RISK_RUN).lock():
        with pytest.raises(TabmemError, match=r"being written by another tabmem process"):
            _risk(tables, schema, out)
        assert not (out / "summary.json").exists()
    _risk(tables, schema, out)  # the lock goes with its holder
    assert (out / "summary.json").is_file()
