"""The ``reject`` mitigation step in a study: sampling-time rejection in place of the sample step."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_study_mitigation import _study

from tabmem.data.schema import Schema
from tabmem.errors import ParameterError
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.studies.runner import run_study
from tabmem.studies.store import load_results
from tabmem.studies.study import load_study

REJECT = """
[[mitigations]]
label = "none"

[[mitigations]]
label = "rej"
step = "reject"
threshold = 0.9
"""


def test_reject_arm_replaces_sample_and_keeps_no_replica(write_study, tmp_path):
    path = write_study(_study(REJECT))
    study = load_study(path)
    assert [[s.name for s in c.steps] for c in study.cells] == [
        ["train", "sample", "audit", "quality"],
        ["train", "reject", "audit", "quality"],
    ]
    out = tmp_path / "out"
    outcome = run_study(path, out, jobs=1, echo=lambda _m: None)
    assert outcome.done == 2 and not outcome.failed
    none, rej = (out / "cells" / c.id for c in study.cells)
    summary = json.loads((rej / "reject" / "summary.json").read_text())["rejection"]
    syn = pd.read_csv(rej / "reject" / "synthetic.csv")
    assert len(syn) == summary["n_kept"] == 80 and summary["threshold"] == 0.9
    df = load_results(out)
    rate = df[(df.mitigation == "rej") & (df.metric == "rejection_rate")].value.item()
    assert rate == pytest.approx(summary["rejection_rate"]) and summary["n_rejected"] > 0
    train = pd.read_csv(tmp_path / "data" / "train.csv")
    det = ReplicaDetector("gower", 0.9, duplicates="replica").fit(train, Schema.infer(train, categorical=["c", "y"]))
    assert not det.score(syn, unseen="mismatch").table["is_replica"].any()
    # round 0 is the none arm's sample: its rows that are not replicas open the rejected table, in order
    plain = pd.read_csv(none / "sample" / "synthetic.csv")
    kept = plain[~det.score(plain, unseen="mismatch").table["is_replica"].to_numpy()].reset_index(drop=True)
    pd.testing.assert_frame_equal(syn.iloc[: len(kept)], kept)


def test_bad_reject_entries_fail_when_the_study_is_read(write_study):
    path = write_study(_study('\n[[mitigations]]\nlabel = "bad"\nstep = "reject"\nthreshold = 0\n'))
    with pytest.raises(ParameterError, match="threshold"):
        load_study(path)
