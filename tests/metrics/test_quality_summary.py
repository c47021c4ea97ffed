"""QualitySummary: the typed quality summary writes exactly the summary.json of ``tabmem quality``."""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest

from tabmem._io import dumps_json
from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.metrics.report import SUMMARY_KEYS, QualitySummary, quality_report

KEYS = [*SUMMARY_KEYS, "skipped", "goals", "details", "timings_s", "n_real", "n_synthetic", "config", "schema"]


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(0, 1, n), "b": rng.uniform(0, 10, n), "c": rng.integers(0, 3, n)})


def test_summary_fields_are_the_file_keys():
    assert [f.name for f in fields(QualitySummary)] == KEYS


def test_summary_is_typed_and_round_trips():
    real, syn = _table(120, 0), _table(100, 1)
    schema = Schema.infer(real, categorical=["c"])
    rep = quality_report(real, syn, schema, metrics=["shape", "trend", "dcr_share"])
    s = rep.summary()
    assert isinstance(s, QualitySummary) and s.shape == rep.results["shape"].value == s.value("shape")
    assert s.mle is None and s.dcr_share is None and "holdout" in s.skipped["dcr_share"]
    assert list(s.to_dict()) == KEYS and s.values["trend"] == s.trend
    assert QualitySummary.from_dict(s.to_dict()) == s
    with pytest.raises(KeyError):
        s.value("nope")


def test_the_cli_file_is_what_to_dict_writes(tmp_path, capsys):
    _table(120, 0).to_csv(tmp_path / "real.csv", index=False)
    _table(100, 1).to_csv(tmp_path / "syn.csv", index=False)
    out = tmp_path / "out"
    args = ["quality", "--real", str(tmp_path / "real.csv"), "--synthetic", str(tmp_path / "syn.csv")]
    args += ["--categorical", "c", "--metrics", "shape,trend", "--out", str(out)]
    try:
        main(args)
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    written = json.loads((out / "summary.json").read_text())
    assert list(written) == KEYS
    assert dumps_json(QualitySummary.from_dict(written).to_dict()) == dumps_json(written)
