"""The ``dpsgd`` mitigation step: DP-SGD training in place of train, its spent budget in the results."""

from __future__ import annotations

import json

import pytest

from study_fixtures import BASE
from tabmem.errors import ParameterError
from tabmem.report import write_report
from tabmem.studies.runner import run_study
from tabmem.studies.store import load_results
from tabmem.studies.study import load_study

pytest.importorskip("opacus")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _study(arm: str) -> str:
    text = BASE.replace('"train", "audit", "attack", "quality"', '"train", "sample", "audit"')
    text = text.replace('distances = ["fang2024", "gower"]', 'distances = ["fang2024"]')
    text = text.replace('[attack]\nattacks = ["levatt", "dcr"]\nn_bootstrap = 20\n', "")
    text = text.replace('[quality]\nmetrics = ["shape", "trend"]\n', "")
    return text + '\n[[mitigations]]\nlabel = "none"\n\n[[mitigations]]\nlabel = "dp5"\n' + arm


def test_dpsgd_arm_trains_privately_and_records_the_budget(write_study, tmp_path):
    path = write_study(_study('step = "dpsgd"\nepsilon = 5.0\ndelta = 0.001\nepochs = 3\n'))
    study = load_study(path)
    assert [[s.name for s in c.steps] for c in study.cells] == [
        ["train", "sample", "audit"],
        ["dpsgd", "sample", "audit"],
    ]
    out = tmp_path / "out"
    outcome = run_study(path, out, jobs=1, echo=lambda _m: None)
    assert outcome.done == 2 and not outcome.failed
    d = out / "cells" / study.cells[1].id / "dpsgd"
    config = json.loads((d / "config.json").read_text())
    assert config["params"]["dp_epsilon"] == 5.0 and config["params"]["epochs"] == 3
    summary = json.loads((d / "summary.json").read_text())
    assert summary["dp_delta"] == 0.001 and 0 < summary["dp_epsilon_spent"] <= 5.0 + 0.02
    df = load_results(out)
    spent = df[(df.mitigation == "dp5") & (df.metric == "dp_epsilon_spent")]
    assert spent.value.item() == pytest.approx(summary["dp_epsilon_spent"])
    assert len(df[(df.mitigation == "dp5") & (df.metric == "excess_memorization")]) == 1
    # the report's frontier by arm names both arms and says the study measured no quality
    html = write_report(out).read_text()
    fig = html[html.index('aria-label="Frontier by mitigation') :]
    fig = fig[: fig.index("</svg>")]
    assert "none, dp5" in fig[: fig.index(">")] and "<!-- quality (metrics: shape) -->" in fig


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('step = "dpsgd"\n', r"missing required key 'epsilon'"),
        ('step = "dpsgd"\nepsilon = 0\n', r"epsilon must be a number in \(0"),
        ('step = "dpsgd"\nepsilon = 1\ndelta = 1\n', r"delta must be a number in \(0, 1\)"),
        ('step = "dpsgd"\nepsilon = 1\nmax_grad_norm = -1\n', r"max_grad_norm"),
    ],
)
def test_bad_dpsgd_entries_fail_when_the_study_is_read(write_study, entry, message):
    with pytest.raises(ParameterError, match=message):
        load_study(write_study(_study(entry)))


def test_dpsgd_refuses_a_generator_without_dp(write_study):
    text = (
        _study('step = "dpsgd"\nepsilon = 1\n')
        .replace('name = "tabddpm"', 'name = "tvae"')
        .replace('preset = "small"\n', "")
    )
    with pytest.raises(ParameterError, match="no DP-SGD training"):
        load_study(write_study(text))
