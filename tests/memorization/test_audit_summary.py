"""AuditSummary: the typed audit summary writes exactly the summary.json of ``tabmem audit`` and reads it back."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tabmem._io import dumps_json
from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.memorization.evidence import distance_evidence
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.memorization.summary import AuditSummary, DistanceEvidence, HeavyTail, RareValuesSummary

BASE_KEYS = [
    "n_train",
    "n_synthetic",
    "distance",
    "threshold",
    "memorization_rate",
    "mem_auc",
    "mem_auc_trapz10",
    "n_replicas",
    "n_nan_ratio",
    "n_undefined_ratio",
    "duplicates",
    "exact_copy_rate",
    "n_exact_copies",
    "heavy_tail",
    "memorization_rate_ci",
    "confidence",
    "n_bootstrap",
    "rare_value_leakage",
    "rare_values",
]
HOLDOUT_KEYS = [
    "n_holdout",
    "holdout_memorization_rate",
    "holdout_mem_auc",
    "excess_memorization",
    "holdout_memorization_rate_ci",
    "excess_memorization_ci",
    "holdout_exact_copy_rate",
    "excess_exact_copy_rate",
    "holdout_rare_value_leakage",
    "excess_rare_value_leakage",
]
CLI_KEYS = [*BASE_KEYS, *HOLDOUT_KEYS, "distance_discriminates", "warnings", "seconds", "schema"]
EVIDENCE_KEYS = ["authenticity", "identical_matches", "nndr", "data_copying"]


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"a": np.round(rng.normal(0, 1, n), 3), "b": np.round(rng.uniform(0, 10, n), 2), "c": rng.integers(0, 3, n)}
    )


@pytest.fixture
def tables():
    train, holdout = _table(200, 0), _table(80, 1)
    synthetic = pd.concat([train.iloc[:30], _table(50, 2)], ignore_index=True)  # 30 copies
    return train, synthetic, holdout, Schema.infer(train, categorical=["c"])


def test_summary_is_typed_and_round_trips(tables):
    train, synthetic, holdout, schema = tables
    det = ReplicaDetector().fit(train, schema)
    res = det.score(synthetic, holdout=holdout)
    s = res.summary(n_bootstrap=50)
    assert isinstance(s, AuditSummary) and isinstance(s.heavy_tail, HeavyTail)
    assert isinstance(s.rare_values, RareValuesSummary) and s.rare_values.n_in_holdout is not None
    assert s.has_holdout and s.excess_memorization == pytest.approx(
        res.memorization_rate - res.holdout.memorization_rate
    )
    assert list(s.to_dict()) == [*BASE_KEYS, *HOLDOUT_KEYS, "distance_discriminates", "warnings"]
    assert AuditSummary.from_dict(s.to_dict()) == s
    bare = det.score(synthetic).summary(n_bootstrap=50)
    assert not bare.has_holdout and bare.excess_memorization is None and bare.evidence is None
    assert (
        list(bare.to_dict()) == [*BASE_KEYS, "distance_discriminates", "warnings"]
        and "n_in_holdout" not in bare.to_dict()["rare_values"]
    )
    assert AuditSummary.from_dict(bare.to_dict()) == bare


def test_evidence_is_typed_and_added_in_the_file_order(tables):
    train, synthetic, holdout, schema = tables
    det = ReplicaDetector().fit(train, schema)
    syn, hold = det.validate(synthetic), det.validate(holdout, name="holdout")
    res = det.score(syn, holdout=hold)
    ev = distance_evidence(det, res, syn, hold, n_cells=3)
    assert isinstance(ev, DistanceEvidence) and list(ev.to_dict()) == EVIDENCE_KEYS
    s = res.summary(n_bootstrap=20).with_extra(schema=schema.to_dict(), evidence=ev)
    assert list(s.to_dict())[-5:] == ["schema", *EVIDENCE_KEYS] and s.evidence == ev
    no_copying = distance_evidence(det, det.score(syn), syn)
    assert no_copying.data_copying is None and "data_copying" in no_copying.to_dict()  # written as null


def test_the_cli_file_is_what_to_dict_writes(tables, tmp_path, capsys):
    train, synthetic, holdout, _ = tables
    for name, t in (("train", train), ("syn", synthetic), ("hold", holdout)):
        t.to_csv(tmp_path / f"{name}.csv", index=False)
    out = tmp_path / "out"
    args = ["audit", "--train", str(tmp_path / "train.csv"), "--synthetic", str(tmp_path / "syn.csv")]
    args += ["--holdout", str(tmp_path / "hold.csv"), "--categorical", "c", "--copying-cells", "3", "--out", str(out)]
    try:
        main(args)
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    written = json.loads((out / "summary.json").read_text())
    assert list(written) == [*CLI_KEYS, *EVIDENCE_KEYS]
    typed = AuditSummary.from_dict(written)
    assert typed.seconds == written["seconds"] and typed.evidence is not None
    assert dumps_json(typed.to_dict()) == dumps_json(written)  # same keys, order and values
