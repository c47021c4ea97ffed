"""tabmem run: the cell layout, the results table, skipping, new cells on change, failure isolation, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from study_fixtures import BASE
from tabmem.studies.runner import run_study
from tabmem.studies.steps import STEPS
from tabmem.studies.store import RESULT_COLUMNS, load_published, load_results
from tabmem.studies.study import load_study

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run(path: Path, out: Path, **kw):
    lines: list[str] = []
    outcome = run_study(path, out, echo=lines.append, **kw)
    return outcome, lines


def status(out: Path, cell_id: str) -> dict:
    return json.loads((out / "cells" / cell_id / "status.json").read_text())


@pytest.fixture()
def plugin(tmp_path, monkeypatch):
    """``plugin(name, code)`` writes an importable module registering steps or generators (removed afterwards)."""
    from tabmem.generators import GENERATORS

    monkeypatch.syspath_prepend(str(tmp_path))
    added: list[tuple[object, str]] = []

    def write(name: str, code: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(code))
        before = [(reg, set(reg.names())) for reg in (STEPS, GENERATORS)]
        __import__(name)
        for reg, names in before:
            added.extend((reg, n) for n in sorted(set(reg.names()) - names))
        return name

    yield write
    for reg, name in added:
        reg.unregister(name)  # type: ignore[attr-defined]
    for name in list(sys.modules):
        if name.startswith("plug_"):
            del sys.modules[name]


def test_a_cell_holds_the_command_layouts_and_the_results_match_them(write_study, tmp_path):
    published = '\n[[published]]\ndataset = "toy"\ngenerator = "ddpm"\ncomponent = "fang2024"\nmetric = "memorization_rate"\nvalue = 0.31\nsource = "paper"\n'
    path = write_study(BASE + published)
    out = tmp_path / "out"
    outcome, lines = run(path, out, jobs=1)
    assert (outcome.done, outcome.skipped, outcome.failed) == (1, 0, [])
    cell = load_study(path).cells[0]
    cdir = out / "cells" / cell.id
    # the cell links every step to the content-addressed store
    for spec in cell.steps:
        link = cdir / spec.name
        assert link.is_symlink() and link.resolve() == (out / "steps" / spec.name / spec.key).resolve()
    for f in ("model.pt", "checkpoint.pt", "synthetic.csv", "summary.json", "history.csv", "config.json"):
        assert (cdir / "train" / f).is_file(), f
    for d in ("fang2024", "gower"):
        for f in ("summary.json", "replicas.csv", "records.csv"):
            assert (cdir / "audit" / d / f).is_file()
    for f in ("summary.json", "scores.csv", "risk.csv", "roc.csv"):
        assert (cdir / "attack" / f).is_file()
    assert (cdir / "quality" / "summary.json").is_file()
    assert status(out, cell.id)["state"] == "done"
    assert json.loads((cdir / "config.json").read_text())["id"] == cell.id

    df = load_results(out)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert (
        str(df["value"].dtype) == "float64" and str(df["seed"].dtype) == "Int64" and str(df["metric"].dtype) == "string"
    )
    assert not df.duplicated(["cell", "step", "component", "metric"]).any()
    assert set(df["step"]) == {"train", "audit", "attack", "quality"}
    assert (df["dataset"] == "toy").all() and (df["generator"] == "ddpm").all() and (df["mitigation"] == "none").all()
    assert (df["n_train"] == 80).all() and (df["epochs"] == 2).all() and (df["model"] == "tabddpm").all()

    def value(step, component, metric):
        row = df[(df.step == step) & (df.component == component) & (df.metric == metric)]
        assert len(row) == 1, (step, component, metric)
        return row.iloc[0]

    for d in ("fang2024", "gower"):
        s = json.loads((cdir / "audit" / d / "summary.json").read_text())
        r = value("audit", d, "memorization_rate")
        assert r.value == s["memorization_rate"] and r.baseline == s["holdout_memorization_rate"]
        assert r.ci_low <= r.value <= r.ci_high
        assert value("audit", d, "excess_memorization").value == pytest.approx(s["excess_memorization"])
        assert value("audit", d, "n_synthetic").value == 80
    a = json.loads((cdir / "attack" / "summary.json").read_text())
    for attack in ("levatt", "dcr"):
        r = value("attack", attack, "auc")
        assert (r.value, r.ci_low, r.ci_high, r.baseline) == (a[attack]["auc"], *a[attack]["auc_ci"], 0.5)
        assert value("attack", attack, "tpr_at_fpr_0.1").value == a[attack]["tpr_at_fpr"]["0.1"]
        assert value("attack", attack, "min_resolved_fpr").value == pytest.approx(1 / 40)
    q = json.loads((cdir / "quality" / "summary.json").read_text())
    assert value("quality", "", "shape").value == q["shape"] and value("quality", "", "shape").goal == "maximize"

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["study"]["hash"] == load_study(path).hash
    assert {"python", "tabmem", "numpy", "pandas", "torch"} <= set(manifest["versions"])
    assert [(c["id"], c["status"]) for c in manifest["cells"]] == [(cell.id, "done")]
    pub = load_published(out)
    assert pub.to_dict("records") == [
        {
            "dataset": "toy",
            "generator": "ddpm",
            "step": "audit",
            "component": "fang2024",
            "metric": "memorization_rate",
            "value": 0.31,
            "source": "paper",
        }
    ]
    assert any("[1/1] done" in line and cell.name in line for line in lines)


def test_a_train_cell_reproduces_train_to_dir_with_the_cell_seed(write_study, tmp_path):
    from tabmem._checks import limit_threads
    from tabmem.data.io import read_table
    from tabmem.data.schema import Schema
    from tabmem.runs.train import train_to_dir

    path = write_study(BASE.replace("seeds = [0]", "seeds = [3]"))
    out = tmp_path / "out"
    run(path, out, jobs=1)
    cell = load_study(path).cells[0]
    train = read_table(tmp_path / "data" / "train.csv")
    schema = Schema.infer(train, categorical=["c", "y"], target="y", name="train")
    with limit_threads(1):  # as the cell ran (jobs=1: one thread): torch's reductions differ with the thread count
        train_to_dir(train, schema, tmp_path / "direct", model="tabddpm", preset="small", params={"epochs": 2}, seed=3)
    ours = out / "cells" / cell.id / "train" / "synthetic.csv"
    assert ours.read_bytes() == (tmp_path / "direct" / "synthetic.csv").read_bytes()


def test_rerun_skips_finished_cells_and_a_changed_value_makes_a_new_cell(write_study, tmp_path):
    out = tmp_path / "out"
    path = write_study(BASE)
    run(path, out, jobs=1)
    first = load_study(path).cells[0]
    markers = {s.name: (out / "steps" / s.name / s.key / "step.json") for s in first.steps}
    stamps = {k: p.stat().st_mtime_ns for k, p in markers.items()}
    outcome, _ = run(path, out, jobs=1)
    assert (outcome.done, outcome.skipped) == (0, 1)
    assert {k: p.stat().st_mtime_ns for k, p in markers.items()} == stamps

    path = write_study(BASE.replace("n_bootstrap = 50", "n_bootstrap = 60"))
    second = load_study(path).cells[0]
    assert second.id != first.id
    outcome, _ = run(path, out, jobs=1)
    assert (outcome.done, outcome.skipped) == (1, 0)
    st = status(out, second.id)["steps"]
    assert st["train"]["state"] == "reused" and st["attack"]["state"] == "reused" and st["quality"]["state"] == "reused"
    assert st["audit"]["state"] == "done"
    # the old cell is untouched; the results hold the study's current cells only
    assert status(out, first.id)["state"] == "done"
    assert {k: p.stat().st_mtime_ns for k, p in markers.items()} == stamps
    assert set(load_results(out)["cell"]) == {second.id}


def test_only_selects_cells(write_study, tmp_path):
    path = write_study(BASE.replace("seeds = [0]", "seeds = [0, 1]"))
    outcome, _ = run(path, tmp_path / "out", jobs=1, only=["*/seed=1"])
    assert (outcome.total, outcome.done) == (1, 1)
    assert set(load_results(tmp_path / "out")["seed"]) == {1}


FAILING = '''
from tabmem.studies.steps import Step, register_step, metric

@register_step("explode")
class Explode(Step):
    """Fails on the dataset labelled 'bad'."""
    needs = ("synthetic",)

    def run(self, ctx):
        if ctx.cell.dataset.label == "bad":
            raise ValueError("boom in row 3\\nsecond line")
        return [metric("rows", len(ctx.read_table("synthetic")))]
'''


def test_a_failed_cell_records_its_error_and_the_others_go_on(write_study, tmp_path, plugin):
    plugin("plug_explode", FAILING)
    text = BASE.replace("[study]", '[study]\nplugins = ["plug_explode"]').replace(
        '"train", "audit", "attack", "quality"', '"train", "explode", "audit"'
    )
    text = text.split("[attack]")[0]
    text = text.replace(
        "[[generators]]",
        '[[datasets]]\nlabel = "bad"\npath = "data/train.csv"\ntest = "data/test.csv"\nn_train = 60\n\n[[generators]]',
    )
    path = write_study(text)
    out = tmp_path / "out"
    outcome, lines = run(path, out, jobs=1)
    good, bad = load_study(path).cells
    assert outcome.done == 1
    assert [(n, c) for n, c, _ in outcome.failed] == [(bad.name, bad.id)]
    st = status(out, bad.id)
    assert st["state"] == "failed" and st["error"] == "explode: ValueError: boom in row 3; second line"
    assert "Traceback" in (out / "cells" / bad.id / "error.log").read_text()
    assert status(out, good.id)["state"] == "done"
    df = load_results(out)
    assert set(df["cell"]) == {good.id}
    assert df[df.step == "explode"]["value"].tolist() == [80.0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert {c["id"]: (c["status"], c["error"]) for c in manifest["cells"]} == {
        good.id: ("done", None),
        bad.id: ("failed", "explode: ValueError: boom in row 3; second line"),
    }
    assert any("failed" in line and "boom in row 3" in line for line in lines)
    # a rerun retries the failed cell only (its training is finished and reused)
    outcome, _ = run(path, out, jobs=1)
    assert (outcome.skipped, len(outcome.failed)) == (1, 1)
    assert status(out, bad.id)["steps"]["train"]["state"] == "reused"


DYING = '''
import os, signal
from pathlib import Path
from tabmem.studies.steps import Step, register_step, metric

@register_step("die_once")
class DieOnce(Step):
    """Kills its own worker process the first time it runs on the dataset labelled 'doomed'."""
    needs = ("synthetic",)

    def run(self, ctx):
        marker = Path(ctx.cell.dataset.path).parent / "died"
        if ctx.cell.dataset.label == "doomed" and not marker.exists():
            marker.write_text("x")
            os.kill(os.getpid(), signal.SIGKILL)
        return [metric("ok", 1)]
'''


def test_a_killed_worker_fails_only_its_cell_and_a_rerun_finishes_it(write_study, tmp_path, plugin):
    plugin("plug_die", DYING)
    text = BASE.replace("[study]", '[study]\nplugins = ["plug_die"]').replace(
        '"train", "audit", "attack", "quality"', '"train", "die_once"'
    )
    text = text.split("[audit]")[0]
    text = text.replace(
        "[[generators]]", '[[datasets]]\nlabel = "doomed"\npath = "data/train.csv"\nn_train = 70\n\n[[generators]]'
    )
    path = write_study(text)
    out = tmp_path / "out"
    outcome, _ = run(path, out, jobs=2)
    good, doomed = load_study(path).cells
    assert outcome.done == 1 and [c for _, c, _ in outcome.failed] == [doomed.id]
    assert status(out, doomed.id)["error"].startswith("die_once: worker process died (exit code -9")
    assert status(out, good.id)["state"] == "done"
    outcome, _ = run(path, out, jobs=1)
    assert (outcome.done, outcome.skipped, outcome.failed) == (1, 1, [])
    assert status(out, doomed.id)["steps"]["train"]["state"] == "reused"


SLEEPY = """
import time
from tabmem.generators import register_generator
from tabmem.generators.tabddpm import TabDDPM

@register_generator("sleepy_ddpm")
class SleepyDDPM(TabDDPM):
    \"\"\"TabDDPM that also sleeps 40 ms per epoch, so that a test can interrupt its training.\"\"\"

    def _train_epoch(self, epoch):
        time.sleep(0.04)
        return super()._train_epoch(epoch)
"""

RESUME = """
[study]
name = "resume"
steps = ["train"]
threads = 1
plugins = ["plug_sleepy"]

[[datasets]]
path = "data/train.csv"

[[generators]]
name = "sleepy_ddpm"
preset = "small"
epochs = 60

[train]
holdout = false
checkpoint_every = 5
"""


def test_an_interrupted_cell_resumes_from_its_checkpoint_and_ends_as_an_uninterrupted_one(
    write_study, tmp_path, plugin
):
    plugin("plug_sleepy", SLEEPY)
    path = write_study(RESUME)
    cell = load_study(path).cells[0]
    out = tmp_path / "out"
    train_dir = out / "steps" / "train" / cell.steps[0].key
    proc = subprocess.Popen(
        [sys.executable, "-m", "tabmem", "run", str(path), "--out", str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([SRC, str(tmp_path)]), "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while not (train_dir / "checkpoint.pt").exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole run dies mid-training (a crash, a lost node)
    proc.wait()
    assert not (train_dir / "step.json").exists(), "the run finished before it could be interrupted"
    assert status(out, cell.id)["state"] == "running"

    outcome, _ = run(path, out, jobs=1)
    assert outcome.done == 1
    st = status(out, cell.id)["steps"]["train"]
    assert st["state"] == "done" and st["resumed"] is True
    history = pd.read_csv(train_dir / "history.csv")
    assert history["epoch"].tolist() == list(range(1, 61))
    # bit-exact: the same outputs as a run that was never interrupted
    ref = tmp_path / "ref"
    run(path, ref, jobs=1)
    ref_dir = ref / "steps" / "train" / cell.steps[0].key
    assert (train_dir / "synthetic.csv").read_bytes() == (ref_dir / "synthetic.csv").read_bytes()
    np.testing.assert_array_equal(history["loss"], pd.read_csv(ref_dir / "history.csv")["loss"])


def test_dry_run_lists_cells_and_counts_shared_and_finished_steps_once(write_study, tmp_path):
    from tabmem.studies.runner import plan_study

    text = BASE.replace('"train", "audit"', '"train", "sample", "audit"')
    text += '\n[[sampling]]\nlabel = "a"\n\n[[sampling]]\nlabel = "b"\ndraw = 1\n'
    path = write_study(text)
    study = load_study(path)
    plan = plan_study(study, tmp_path / "out", jobs=2)
    assert len(plan.tasks) == 1 and len(plan.cells) == 2
    a, b = study.cells
    train_est = STEPS.get("train").estimate(a.steps[0].config, a.info)
    assert train_est > 0
    # the shared training is counted in the first cell only
    assert plan.cell_estimates[a.id] == pytest.approx(plan.cell_estimates[b.id] + train_est)
    assert plan.cpu_seconds == pytest.approx(sum(plan.cell_estimates.values()))
    text_lines = plan.describe()
    assert any(a.id in line and a.name in line and "new" in line for line in text_lines)
    assert any(line.startswith("to run: 2 cells in 1 tasks") for line in text_lines)
    run(path, tmp_path / "out", jobs=1)
    plan = plan_study(study, tmp_path / "out")
    assert plan.tasks == [] and plan.cpu_seconds == 0 and set(plan.states.values()) == {"done"}


def test_makespan_is_the_longest_processing_time_schedule():
    from tabmem.studies.runner import _makespan

    # Graham's LPT: 5 | 4 | 4+3 | 5+3 | 7+3 -> 10, within 4/3 of the optimum 9 ({5, 4}, {3, 3, 3})
    assert _makespan([5, 4, 3, 3, 3], 2) == 10
    assert _makespan([10, 1, 1], 4) == 10
    assert _makespan([], 3) == 0


MITIGATION = '''
from tabmem._io import write_frame
from tabmem.studies._fields import Field, integer
from tabmem.studies.steps import Step, register_step, metric

@register_step("keep_first")
class KeepFirst(Step):
    """A stand-in mitigation: train on the first n rows only (the augmenters plug in the same way)."""
    options = {"n": Field(40, integer(2))}
    placement = ("before", "train")
    produces = {"train_table": "train.csv"}

    def run(self, ctx):
        write_frame(ctx.out / "train.csv", ctx.data.train.iloc[: self.config["n"]])
        return [metric("n_kept", self.config["n"])]

@register_step("no_train")
class NoTrain(Step):
    """A stand-in for a step that replaces training (DynamicCut): writes the real rows as 'synthetic'."""
    placement = ("instead", "train")
    produces = {"synthetic": "synthetic.csv"}

    def run(self, ctx):
        write_frame(ctx.out / "synthetic.csv", ctx.data.train)
        return []
'''


def test_mitigation_steps_are_placed_by_their_entry_and_train_on_the_table_they_write(write_study, tmp_path, plugin):
    plugin("plug_mitig", MITIGATION)
    text = BASE.replace("[study]", '[study]\nplugins = ["plug_mitig"]').replace(
        '"train", "audit", "attack", "quality"', '"train", "audit"'
    )
    text = text.split("[attack]")[0] + (
        '\n[[mitigations]]\nlabel = "none"\n\n[[mitigations]]\nlabel = "first30"\nstep = "keep_first"\nn = 30\n'
        '\n[[mitigations]]\nlabel = "copy"\nstep = "no_train"\n'
    )
    path = write_study(text)
    study = load_study(path)
    assert [[s.name for s in c.steps] for c in study.cells] == [
        ["train", "audit"],
        ["keep_first", "train", "audit"],
        ["no_train", "audit"],
    ]
    assert [c.name for c in study.cells] == ["toy/ddpm/none/seed=0", "toy/ddpm/first30/seed=0", "toy/ddpm/copy/seed=0"]
    out = tmp_path / "out"
    outcome, _ = run(path, out, jobs=1)
    assert outcome.done == 3
    none, first, copy = study.cells
    train_summary = json.loads((out / "cells" / first.id / "train" / "summary.json").read_text())
    assert train_summary["n_train"] == 30
    # memorization is measured against everyone who contributed data: the original 80 rows
    audit = json.loads((out / "cells" / first.id / "audit" / "fang2024" / "summary.json").read_text())
    assert audit["n_train"] == 80
    # the real rows audited as 'synthetic' are all exact copies (d1 = 0 < d2): rate 1 (up to duplicates)
    df = load_results(out)
    rate = df[(df.cell == copy.id) & (df.metric == "memorization_rate") & (df.component == "fang2024")].value.item()
    assert rate > 0.95
    assert set(df[df.cell == first.id].step) == {"keep_first", "train", "audit"}
    assert set(df.mitigation) == {"none", "first30", "copy"}
    with pytest.raises(Exception, match=r"\[\[mitigations\]\] #2: unknown key 'm'"):
        load_study(write_study(text.replace("n = 30", "m = 30"), "bad.toml"))


DEFENCES = """
[study]
name = "defences"
steps = ["train", "sample", "attack"]
threads = 1

[[datasets]]
path = "data/train.csv"
test = "data/test.csv"
categorical = ["c", "y"]

[[generators]]
name = "llm"
preset = "tiny"
epochs = 1
params = { n_layer = 1, n_embd = 16, n_head = 2, device = "cpu" }

[[sampling]]
label = "none"

[[sampling]]
label = "tlp-3"
options = { tendency = 3.0 }

[[sampling]]
label = "dm"
defenses = [{ name = "digit_modifier", p_min = 1.0, p_max = 1.0 }]

[train]
holdout = false

[attack]
attacks = ["levatt"]
n_bootstrap = 10
"""


def test_sampling_variants_share_one_model_and_apply_options_and_defences(write_study, tmp_path):
    path = write_study(DEFENCES)
    study = load_study(path)
    out = tmp_path / "out"
    outcome, _ = run(path, out, jobs=1)
    assert outcome.done == 3
    none, tlp, dm = study.cells
    assert len({c.steps[0].key for c in study.cells}) == 1 and len(list((out / "steps" / "train").iterdir())) == 1
    summaries = {
        c.labels["sampling"]: json.loads((out / "cells" / c.id / "sample" / "summary.json").read_text())
        for c in study.cells
    }
    assert summaries["tlp-3"]["options"] == {"tendency": 3.0} and summaries["none"]["options"] == {}
    assert summaries["dm"]["defenses"] == [
        {"name": "digit_modifier", "stage": "postprocess", "params": {"p_min": 1.0, "p_max": 1.0}}
    ]
    plain = pd.read_csv(out / "cells" / none.id / "sample" / "synthetic.csv")
    modified = pd.read_csv(out / "cells" / dm.id / "sample" / "synthetic.csv")
    # none and dm draw the same rows (same draw index); p = 1 flips every digit of every numerical cell
    assert len(plain) == len(modified) == 80
    assert (plain["b"] != modified["b"]).all() and (plain["c"] == modified["c"]).all()
    df = load_results(out)
    assert set(df[df.step == "sample"].metric) == {"n_rows", "invalid_rows"}
    assert set(df.sampling) == {"none", "tlp-3", "dm"}
    assert df[(df.metric == "auc")].shape[0] == 3
