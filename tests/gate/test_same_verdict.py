"""The report's badges and ``tabmem check`` give the same verdict: one engine, read from the same files.

Checked on the report's example outputs (a directory of runs and a study, tests/report_inputs.py) and on
the demo's study output (tests/studies/test_demo.py checks the demo's own report).
"""

from __future__ import annotations

import html
import json
import re

import pytest

from cli_run import run
from report_inputs import cached_build
from tabmem.gate import FAIL, UNRESOLVED
from tabmem.report import load_report_data
from tabmem.report.verdict import cell_verdict


def expected_level(statuses: list[str], failed: list[bool]) -> str:
    """The badge's level from the scorecard: alert when a rule fails, info when one is unresolved, ok when one passes."""
    if any(s == FAIL for s in statuses) or any(f and s not in (FAIL, UNRESOLVED) for s, f in zip(statuses, failed)):
        return "alert"
    if UNRESOLVED in statuses:
        return "info"
    return "ok" if "pass" in statuses else "missing"


def agree(directory, tmp_path, capsys, policy="standard"):
    """Each cell's report badge level and the check's judgements of that cell agree; returns the check's exit code."""
    card = tmp_path / "card.json"
    code, text = run(["check", directory, "--policy", policy, "--json", card], capsys)
    assert code in (0, 1), text
    judgements = json.loads(card.read_text())["judgements"]
    data = load_report_data(directory)
    for cell in data.cells:
        if cell.status not in ("done", "ok", "finished", "success"):
            continue
        mine = [j for j in judgements if j["source"] == cell.name or j["source"] == str(directory)]
        v = cell_verdict(cell, __import__("tabmem.gate", fromlist=["load_policy"]).load_policy(policy))
        assert [(j.rule.id, j.status) for j in v.judgements] == [(j["rule"], j["status"]) for j in mine]
        statuses = [j["status"] for j in mine]
        failed = [j["status"] in (FAIL, UNRESOLVED) or (j["status"] == "not measured" and j["required"]) for j in mine]
        assert v.level == expected_level(statuses, failed), (cell.name, v.badge, statuses)
    return code


@pytest.mark.parametrize("policy", ["standard", "strict"])
def test_report_and_check_agree_on_the_example_runs_and_study(tmp_path_factory, tmp_path, capsys, policy):
    root = cached_build(tmp_path_factory)
    for directory in (root, root.parent / "study"):
        assert agree(directory, tmp_path, capsys, policy) == 1  # the example holds a copying generator


def test_the_rendered_badges_are_the_policy_verdicts(tmp_path_factory, tmp_path, capsys):
    root = cached_build(tmp_path_factory)
    out = tmp_path / "r.html"
    code, text = run(["report", root, "--policy", "strict", "--out", out], capsys)
    assert code == 0, text
    page = out.read_text()
    badges = [html.unescape(b) for b in re.findall(r'<span class="badge [a-z]+">([^<]*)</span>', page)]
    data = load_report_data(root)
    from tabmem.gate import load_policy

    assert badges == [cell_verdict(c, load_policy("strict")).badge for c in data.cells]
    assert "the <b>strict</b> policy" in page and "rule membership-auc:" in page
