"""The mitigation steps in a study: ``augment`` before train, ``dynamiccut`` instead of train."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from click.testing import CliRunner

from study_fixtures import BASE
from tabmem.cli import cli
from tabmem.errors import ParameterError
from tabmem.studies.runner import run_study
from tabmem.studies.store import load_results
from tabmem.studies.study import load_study

ARMS = """
[[mitigations]]
label = "none"

[[mitigations]]
label = "tcm30"
step = "augment"
method = "tabcutmix"
ratio = 0.3

[[mitigations]]
label = "random10"
step = "dynamiccut"
prune_by = "random"

[[mitigations]]
label = "dc10"
step = "dynamiccut"
prune_by = "intensity"
warmup_epochs = 2
track_every = 1
top_k = 2

[[mitigations]]
label = "dcm"
step = "dynamiccut"
warmup_epochs = 2
track_every = 1
mix = "tabcutmix"
"""


def _study(extra: str = ARMS) -> str:
    text = BASE.replace('"train", "audit", "attack", "quality"', '"train", "sample", "audit", "quality"')
    text = text.replace("epochs = 2\n", "epochs = 4\n").replace(
        'distances = ["fang2024", "gower"]', 'distances = ["fang2024"]'
    )
    text = text.replace('[attack]\nattacks = ["levatt", "dcr"]\nn_bootstrap = 20\n', "")
    return text + extra


def test_arms_are_placed_and_measured_against_the_original_rows(write_study, tmp_path):
    path = write_study(_study())
    study = load_study(path)
    assert [[s.name for s in c.steps] for c in study.cells] == [
        ["train", "sample", "audit", "quality"],
        ["augment", "train", "sample", "audit", "quality"],
        ["dynamiccut", "sample", "audit", "quality"],
        ["dynamiccut", "sample", "audit", "quality"],
        ["dynamiccut", "sample", "audit", "quality"],
    ]
    out = tmp_path / "out"
    outcome = run_study(path, out, jobs=1, echo=lambda _m: None)
    assert outcome.done == 5 and not outcome.failed
    none, tcm, rnd, dc, dcm = (out / "cells" / c.id for c in study.cells)
    original = pd.read_csv(tmp_path / "data" / "train.csv")

    # augment: the 80 training rows unchanged and in order, then 0.3 x 80 = 24 new rows; train trains on 104
    aug = pd.read_csv(tcm / "augment" / "augmented.csv")
    assert len(aug) == 104
    pd.testing.assert_frame_equal(aug.iloc[:80].reset_index(drop=True), original, check_dtype=False)
    assert json.loads((tcm / "train" / "summary.json").read_text())["n_train"] == 104

    # dynamiccut: ceil(0.1 x 80) = 8 records pruned; retrained from scratch on 72 (+ int(0.3 x 72) = 21 mixed rows in dcm)
    for cell, n_retrain in ((rnd, 72), (dc, 72), (dcm, 72 + int(0.3 * 72))):
        ranking = pd.read_csv(cell / "dynamiccut" / "ranking.csv")
        assert int(ranking["pruned"].sum()) == 8
        assert json.loads((cell / "dynamiccut" / "retrain" / "summary.json").read_text())["n_train"] == n_retrain
    assert not (rnd / "dynamiccut" / "warmup").exists()  # the random control needs no warm-up
    assert json.loads((dc / "dynamiccut" / "warmup" / "summary.json").read_text())["epochs"] == 2
    # the sample step draws from the retrained model: the pruned records' arm is judged like every other arm
    for cell in (none, tcm, rnd, dc, dcm):
        assert len(pd.read_csv(cell / "sample" / "synthetic.csv")) == 80
        audit = json.loads((cell / "audit" / "fang2024" / "summary.json").read_text())
        assert audit["n_train"] == 80  # everyone who contributed data

    df = load_results(out)
    assert set(df.mitigation) == {"none", "tcm30", "random10", "dc10", "dcm"}
    for label in ("none", "tcm30", "random10", "dc10", "dcm"):
        rows = df[df.mitigation == label]
        excess = rows[(rows.metric == "excess_memorization") & (rows.component == "fang2024")]
        assert len(excess) == 1 and excess.ci_low.item() <= excess.value.item() <= excess.ci_high.item()
        assert {"shape", "trend"} <= set(rows[rows.step == "quality"].metric)
    dcr = df[(df.step == "dynamiccut") & (df.metric == "n_pruned")]
    assert sorted(dcr.value) == [8.0, 8.0, 8.0]
    vs_pruned = df[(df.step == "dynamiccut") & (df.metric == "memorization_rate_vs_pruned")]
    assert len(vs_pruned) == 3 and vs_pruned.value.between(0, 1).all()
    new = df[(df.step == "augment") & (df.metric == "n_new")].value.item()
    assert new == 24.0 and not math.isnan(new)


def test_augment_step_writes_what_tabmem_augment_writes(write_study, tmp_path):
    path = write_study(_study(ARMS.split('[[mitigations]]\nlabel = "random10"')[0]))
    out = tmp_path / "out"
    study = load_study(path)
    run_study(path, out, jobs=1, echo=lambda _m: None, only=[c.name for c in study.cells if "tcm30" in c.name])
    cell = next(c for c in study.cells if "tcm30" in c.name)
    cli_out = tmp_path / "cli"
    res = CliRunner().invoke(
        cli,
        ["augment", "--train", str(tmp_path / "data" / "train.csv"), "--target", "y", "--categorical", "c,y",
         "--method", "tabcutmix", "--ratio", "0.3", "--seed", "0", "--out", str(cli_out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (out / "cells" / cell.id / "augment" / "augmented.csv").read_bytes() == (
        cli_out / "augmented.csv"
    ).read_bytes()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('step = "dynamiccut"\nprune_by = "intensity"', r"give warmup_epochs.* and track_every"),
        ('step = "dynamiccut"\nwarmup_epochs = 9\ntrack_every = 1', r"warmup_epochs.* = 9 is longer than the run"),
        ('step = "dynamiccut"\nprune_by = "random"\nprune = 1.0', r"prune"),
        ('step = "dynamiccut"\nprune_by = "random"\nmix = "nope"', r"mix: unknown value 'nope'"),
        ('step = "augment"\nmethod = "tabcutmix"\nparams = { mode = "bernoulli" }', r"params: .*mode"),
        ('step = "augment"\nratio = 0', r"ratio must be a number in \(0"),
        ('step = "dynamiccut"\nprune_by = "random"\nmix = "smote"\nmix_params = { k = 3 }', r"mix_params: .*k"),
        ('step = "dynamiccut"\nprune_by = "random"\nreweight = 1.0', r"reweight must be in \[0, 1\)"),
        ('step = "dynamiccut"\nprune_by = "random"\nreweight = 0.1\nmix = "tabcutmix"', r"does not combine with mix"),
        ('step = "dynamiccut"\nprune_by = "random"\nreweight = 0.1\nreweight_shape = "cubic"', r"unknown value"),
    ],
)
def test_bad_mitigation_entries_fail_when_the_study_is_read(write_study, entry, message):
    path = write_study(_study(f'\n[[mitigations]]\nlabel = "bad"\n{entry}\n'))
    with pytest.raises(ParameterError, match=message):
        load_study(path)


def test_shipped_mitigation_studies_parse_into_their_arms():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "studies" / "mitigation"
    quick = load_study(root / "quick.toml")
    assert len(quick.cells) == 8 and {c.seed for c in quick.cells} == {0, 1}
    assert {c.labels["mitigation"] for c in quick.cells} == {"none", "random10", "dc10", "tcm30"}
    full = load_study(root / "full.toml")
    arms = {(c.labels["generator"], c.labels["mitigation"]) for c in full.cells}
    assert len(full.cells) == 3 * len(arms) and {c.seed for c in full.cells} == {0, 1, 2}
    assert {m for g, m in arms if g == "tabddpm"} == {
        "none", "random10", "dc10", "count10", "tcm30", "dcm", "smote30", "rw10",
    }  # fmt: skip
    for cell in full.cells:  # every DynamicCut warm-up is 20% of its generator's schedule
        for step in cell.steps:
            if step.name == "dynamiccut" and step.config["prune_by"] == "intensity":
                assert step.config["warmup_epochs"] * 5 == step.config["resolved"]["epochs"]
    papers = load_study(root / "papers.toml")  # the full Adult training split, one seed
    assert {c.labels["mitigation"] for c in papers.cells} == {"none", "tcm30", "tcmp30", "smote30"}
    assert len(papers.cells) == 4 and {c.seed for c in papers.cells} == {0}


MEMSTOP = """
[[mitigations]]
label = "none"

[[mitigations]]
label = "memstop"
step = "memstop"
stop_excess = 0.5
choose = "best-quality"
track_every = 1
n_selection = 15
audit_n_holdout = 20
"""


def test_memstop_arm_chooses_on_rows_the_audit_never_sees(write_study, tmp_path):
    from tabmem.generators import load_generator

    text = _study(MEMSTOP).replace("n_bootstrap = 50\n", "n_bootstrap = 50\nn_holdout = 20\n")
    path = write_study(text)
    study = load_study(path)
    assert [[s.name for s in c.steps] for c in study.cells] == [
        ["train", "sample", "audit", "quality"],
        ["memstop", "sample", "audit", "quality"],
    ]
    out = tmp_path / "out"
    outcome = run_study(path, out, jobs=1, echo=lambda _m: None)
    assert outcome.done == 2 and not outcome.failed
    cell = out / "cells" / study.cells[1].id
    rows = json.loads((cell / "memstop" / "selection_rows.json").read_text())
    assert len(rows["test_rows"]) == 15 and len(rows["audit_rows"]) == 20
    assert not set(rows["test_rows"]) & set(rows["audit_rows"])  # chosen on rows the audit does not judge with
    summary = json.loads((cell / "memstop" / "summary.json").read_text())
    epoch = summary["selection"]["chosen_epoch"]
    assert load_generator(cell / "memstop" / "model.pt").epoch_ == epoch and summary["epochs_trained"] == 4
    df = load_results(out)
    chosen = df[(df.mitigation == "memstop") & (df.metric == "chosen_epoch")]
    assert chosen.value.item() == epoch
    assert len(df[(df.mitigation == "memstop") & (df.metric == "excess_memorization")]) >= 1


def test_memstop_arm_with_ema_tracks_chooses_and_keeps_the_averaged_weights(write_study, tmp_path):
    """``ema_decay`` (docs/mitigation.md part 10): the arm's generator keeps an EMA, and the chosen
    model samples from it (the generator's tests check the average itself)."""
    from tabmem.generators import load_generator

    arm = MEMSTOP.replace('label = "memstop"\n', 'label = "ema"\n').replace(
        "track_every = 1\n", "track_every = 1\nema_decay = 0.9\n"
    )
    text = _study(arm).replace("n_bootstrap = 50\n", "n_bootstrap = 50\nn_holdout = 20\n")
    path = write_study(text)
    (cell,) = [c for c in load_study(path).cells if c.labels["mitigation"] == "ema"]
    out = tmp_path / "out"
    outcome = run_study(path, out, jobs=1, echo=lambda _m: None, only=[cell.name])
    assert outcome.done == 1 and not outcome.failed
    d = out / "cells" / cell.id / "memstop"
    gen = load_generator(d / "model.pt")
    assert (
        gen.ema_decay == 0.9 and gen.epoch_ == json.loads((d / "summary.json").read_text())["selection"]["chosen_epoch"]
    )
    assert json.loads((d / "config.json").read_text())["params"]["ema_decay"] == 0.9


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            'step = "memstop"\ntrack_every = 1\naudit_n_holdout = 20\nema_decay = 1',
            r"ema_decay must be a number in \(0, 1\)",
        ),
        ('step = "memstop"\ntrack_every = 1', r"audit_n_holdout: set it to the \[audit\] n_holdout"),
        ('step = "memstop"\ntrack_every = 9\naudit_n_holdout = 20', r"track_every is larger"),
        ('step = "memstop"\nstop_excess = 2\naudit_n_holdout = 20\ntrack_every = 1', r"stop_excess"),
        ('step = "memstop"\nchoose = "first"\naudit_n_holdout = 20\ntrack_every = 1', r"choose"),
        ('step = "memstop"\naudit_n_holdout = 30\ntrack_every = 1', r"but the test split has 40"),
    ],
)
def test_bad_memstop_entries_fail_when_the_study_is_read(write_study, entry, message):
    path = write_study(_study(f'\n[[mitigations]]\nlabel = "bad"\n{entry}\n'))
    with pytest.raises(ParameterError, match=message):
        load_study(path)


def test_reweight_arm_keeps_every_record_and_down_weights_the_top(write_study, tmp_path):
    arm = (
        '\n[[mitigations]]\nlabel = "rw20"\nstep = "dynamiccut"\nprune = 0.2\nprune_by = "intensity"\n'
        'warmup_epochs = 2\ntrack_every = 1\ntop_k = 2\nreweight = 0.1\nreweight_shape = "linear"\n'
    )
    path = write_study(_study(arm))
    study = load_study(path)
    (cell,) = [c for c in study.cells if c.labels["mitigation"] == "rw20"]
    out = tmp_path / "out"
    outcome = run_study(path, out, jobs=1, echo=lambda _m: None, only=[cell.name])
    assert outcome.done == 1 and not outcome.failed
    d = out / "cells" / cell.id / "dynamiccut"
    summary = json.loads((d / "summary.json").read_text())
    assert summary["reweight"] == 0.1 and summary["reweight_shape"] == "linear"
    assert summary["n_retrain"] == 80 and summary["n_pruned"] == 16  # kept, down-weighted
    assert json.loads((d / "retrain" / "summary.json").read_text())["n_train"] == 80
    assert json.loads((d / "retrain" / "config.json").read_text())["sample_weight"]  # the weights' hash
