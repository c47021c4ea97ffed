"""The study ``risk`` step: the ``tabmem risk`` layout in the cell, its rows in ``results.parquet``, the audit's
holdout as the control, and the report's WP29 section."""

from __future__ import annotations

import json
import sys
import textwrap

import pandas as pd
import pytest

from study_fixtures import BASE
from tabmem.errors import TabmemError
from tabmem.report import write_report
from tabmem.studies.runner import run_study
from tabmem.studies.store import load_results
from tabmem.studies.study import load_study

PLUGIN = '''
from tabmem._io import write_frame
from tabmem.studies.steps import Step, register_step

@register_step("rk_copy")
class Copy(Step):
    """'Synthetic' rows that are the training rows: a generator that copies (no training)."""
    placement = ("instead", "train")
    produces = {"synthetic": "synthetic.csv"}

    def run(self, ctx):
        write_frame(ctx.out / "synthetic.csv", ctx.data.train)
        return []
'''

RISK = """
[risk]
secrets = ["y", "c"]
aux = [["a", "b"], ["c", "y"]]
n_attacks = 50
n_control = 30
"""


def _text(risk: str = RISK) -> str:
    text = BASE.replace("[study]", '[study]\nplugins = ["plug_rk"]').replace(
        '"train", "audit", "attack", "quality"', '"train", "audit", "risk"'
    )
    text = text.split("[attack]")[0].replace('distances = ["fang2024", "gower"]', 'distances = ["fang2024"]')
    text += "n_holdout = 30\n" + risk
    return text + '\n[[mitigations]]\nlabel = "copy"\nstep = "rk_copy"\n'


@pytest.fixture()
def risk_study(tmp_path, write_study, monkeypatch):
    """One cell, no training: the 'generator' copies its 80 training rows; audit and risk follow."""
    from tabmem.studies.steps import STEPS

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "plug_rk.py").write_text(textwrap.dedent(PLUGIN))
    yield write_study
    if "rk_copy" in STEPS.names():
        STEPS.unregister("rk_copy")  # type: ignore[attr-defined]
    sys.modules.pop("plug_rk", None)


def test_risk_step_writes_the_risk_layout_and_its_rows(risk_study, tmp_path):
    path = risk_study(_text())
    out = tmp_path / "out"
    outcome = run_study(path, out, echo=lambda line: None, jobs=1)
    assert (outcome.done, outcome.failed) == (1, [])
    (cell,) = load_study(path).cells
    rdir = out / "cells" / cell.id / "risk"
    assert sorted(p.name for p in rdir.iterdir() if not p.name.endswith(".json") or p.name == "summary.json") == [
        "inference.csv",
        "summary.json",
    ]
    s = json.loads((rdir / "summary.json").read_text())
    assert s["secrets"] == ["y", "c"] and s["aux"] == [["a", "b"], ["c", "y"]] and s["n_attacks"] == 50
    assert s["n_train"] == 80 and s["n_synthetic"] == 80 and s["schema"]["columns"] == ["a", "b", "c", "y"]
    audit = json.loads((out / "cells" / cell.id / "audit" / "fang2024" / "summary.json").read_text())
    assert s["n_control"] == audit["n_holdout"] == 30  # the audit's holdout is the control
    assert list(pd.read_csv(rdir / "inference.csv")["column"]) == ["y", "c"]

    df = load_results(out)
    rows = df[(df.cell == cell.id) & (df.step == "risk")]
    components = ["singling_out_univariate", "singling_out_multivariate", "linkability", "inference:y", "inference:c"]
    assert list(dict.fromkeys(rows.component)) == components
    for component in components:
        est = s[component] if ":" not in component else s["inference"]["per_column"][component.split(":")[1]]
        got = {r.metric: r for r in rows[rows.component == component].itertuples()}
        assert list(got) == ["risk", "attack_rate", "control_rate", "baseline_rate"]
        for name, r in got.items():
            assert r.value == est[name] and [r.ci_low, r.ci_high] == est[f"{name}_ci"], (component, name)
        assert got["risk"].goal == "minimize" and got["risk"].baseline == 0.0
        assert got["attack_rate"].baseline == est["control_rate"]

    page = write_report(out, tmp_path / "report.html").read_text()
    assert "Anonymisation risks (WP29)" in page


def test_the_risk_step_refuses_bad_options_in_one_line(risk_study):
    bad = {
        'aux = [["a", "b"]]': r"\[risk\] aux must be two lists of column names",
        'aux = [["a", "b"], ["b"]]': r"\[risk\] aux: column 'b' is in both column sets",
        "n_attacks = 0": r"\[risk\] n_attacks must be an integer in \[1, inf\]",
        "confidence = 1.0": r"confidence must be a number in \(0, 1\)",
        "secret = ['y']": r"\[risk\] unknown key 'secret'",
    }
    for line, match in bad.items():
        path = risk_study(_text(f"\n[risk]\n{line}\n"))
        with pytest.raises(TabmemError, match=match):
            load_study(path)
