"""The ``dynamiccut`` study step: a mitigation arm that replaces ``train`` and is judged against the original rows."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from study_fixtures import BASE

from tabmem.errors import ParameterError
from tabmem.experiments import load_results, run_study
from tabmem.experiments.study import load_study

ARMS = """
[[mitigations]]
label = "none"

[[mitigations]]
label = "dc"
step = "dynamiccut"
warmup_epochs = 2
track_every = 1
prune = 0.25
"""


def _study(epochs: int = 4) -> str:
    text = BASE.replace('"train", "audit", "attack", "quality"', '"train", "audit"').replace(
        "epochs = 2", f"epochs = {epochs}"
    )
    return text.split("[attack]")[0] + ARMS


def test_dynamiccut_arm_prunes_retrains_and_is_audited_against_the_original_rows(write_study, tmp_path):
    path = write_study(_study())
    study = load_study(path)
    assert [[s.name for s in c.steps] for c in study.cells] == [["train", "audit"], ["dynamiccut", "audit"]]
    out = tmp_path / "out"
    outcome = run_study(path, out, jobs=1, echo=lambda _line: None)
    assert outcome.done == 2 and not outcome.failed
    _, dc = study.cells
    cdir = out / "cells" / dc.id
    n_train = len(pd.read_csv(tmp_path / "data" / "train.csv"))
    ranking = pd.read_csv(cdir / "dynamiccut" / "ranking.csv")
    # ceil(0.25 N) records pruned, the top of the ranking; the retrain saw the others only
    n_pruned = -(-n_train // 4)
    assert int(ranking.pruned.sum()) == n_pruned
    assert set(ranking[ranking.pruned.astype(bool)]["rank"]) == set(range(1, n_pruned + 1))  # rank 1 = pruned first
    retrain = json.loads((cdir / "dynamiccut" / "retrain" / "summary.json").read_text())
    assert retrain["n_train"] == n_train - n_pruned
    # the evaluations read the step's synthetic table and count members among all original rows
    audit = json.loads((cdir / "audit" / "fang2024" / "summary.json").read_text())
    assert audit["n_train"] == n_train and audit["n_synthetic"] == n_train
    syn = pd.read_csv(cdir / "dynamiccut" / "synthetic.csv")
    assert len(syn) == n_train
    df = load_results(out)
    rows = df[df.cell == dc.id]
    assert set(rows.step) == {"dynamiccut", "audit"}
    assert rows[rows.metric == "n_pruned"].value.item() == n_pruned
    assert set(df.mitigation) == {"none", "dc"}
    # a second run skips both cells
    again = run_study(path, out, jobs=1, echo=lambda _line: None)
    assert (again.done, again.skipped) == (0, 2)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ("warmup_epochs = 2", r"\[dynamiccut\] warmup_epochs \(--warmup-epochs\) = 9 is longer than the run"),
        ("prune = 0.25", r"\[\[mitigations\]\] #2: prune must be a number in \(0, 1\]"),
        ("track_every = 1", r"track_every \(--track-every\) = 5 tracks no epoch"),
    ],
)
def test_bad_dynamiccut_settings_fail_before_anything_runs_with_one_line(write_study, change, match):
    new = {
        "warmup_epochs = 2": "warmup_epochs = 9",
        "prune = 0.25": "prune = 1.5",
        "track_every = 1": "track_every = 5",
    }[change]
    path = write_study(_study().replace(change, new))
    with pytest.raises(ParameterError, match=match) as info:
        load_study(path)
    assert "\n" not in str(info.value)
