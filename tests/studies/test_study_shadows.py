"""A study whose attack step trains shadow generators: `tabmem run` end to end, then `tabmem report` on it."""

from __future__ import annotations

import json

import pytest

from study_fixtures import BASE
from tabmem.errors import TabmemError
from tabmem.report import write_report
from tabmem.studies.runner import run_study
from tabmem.studies.store import load_results
from tabmem.studies.study import load_study

pytest.importorskip("torch")

SHADOW_STUDY = (
    BASE.replace('steps = ["train", "audit", "attack", "quality"]', 'steps = ["train", "audit", "attack"]')
    .replace('[quality]\nmetrics = ["shape", "trend"]\n', "")
    .replace(
        '[attack]\nattacks = ["levatt", "dcr"]\nn_bootstrap = 20',
        '[attack]\nattacks = ["lira", "lira_offline", "dcr"]\nn_bootstrap = 20\nn_members = 40\nn_non_members = 20\nshadows = 4',
    )
    .replace('epochs = 2\nlabel = "ddpm"', 'epochs = 2\nlabel = "ddpm"\nparams = { batch_size = 16 }')
)


def test_a_study_with_shadow_attacks_runs_and_reports(write_study, tmp_path):
    assert "shadows = 4" in SHADOW_STUDY
    out = tmp_path / "out"
    outcome = run_study(write_study(SHADOW_STUDY), out, echo=lambda line: None)
    assert outcome.failed == [] and outcome.done == 1, outcome
    cell = next((out / "cells").iterdir())
    attack = cell / "attack"
    summary = json.loads((attack / "summary.json").read_text())
    assert summary["_meta"]["shadows"]["n_shadows"] == 4 and summary["_meta"]["shadows"]["model"] == "tabddpm"
    assert summary["_meta"]["shadows"]["params"]["epochs"] == 2  # the cell's generator, as train resolved it
    assert (attack / "shadows" / "003" / "synthetic.parquet").is_file() and (attack / "roc.csv").is_file()
    df = load_results(out)
    att = df[df.step == "attack"]
    assert {"lira", "lira_offline", "dcr"} <= set(att.component)
    for m in ("auc", "midst_tpr_at_fpr_0.1", "epsilon_lower_bound"):
        assert m in set(att.metric)
    html = write_report(out, tmp_path / "report.html").read_text()
    assert "lira_offline" in html
    # the privacy audit of a study cell: per attack MIDST TPR with exact intervals and the ε lower bound
    assert "Privacy audit: MIDST operating points and ε lower bounds" in html and "LiRA (offline)" in html
    assert "Distance evidence (each next to its holdout null)" in html
    # a shadow attack without shadows is refused when the study is read, naming the option
    with pytest.raises(TabmemError, match="shadows >= 4"):
        load_study(write_study(SHADOW_STUDY.replace("shadows = 4", "shadows = 0"), "bad.toml"))
