"""The rule engine's truth table: pass on the far end of the interval, fail corrected for the best of k, else unresolved."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tabmem.gate import FAIL, NOT_MEASURED, PASS, UNRESOLVED, Figure, Measured, Rule, evaluate, judge, junit_xml
from tabmem.gate.figures import figures_of
from tabmem.gate.policy import parse_policy

MAX = Rule(id="r", figure="membership.auc", limit=0.6, upper=True)
MIN = Rule(id="q", figure="quality.shape", limit=0.8, upper=False)


def auc(value, ci, family=1, component="a"):
    return Figure("membership.auc", component, value, ci, family=family)


@pytest.mark.parametrize(
    ("figures", "status"),
    [
        ([auc(0.55, (0.50, 0.60))], PASS),  # the upper end at the limit: within it
        ([auc(0.58, (0.55, 0.61))], UNRESOLVED),  # the interval holds the limit
        ([auc(0.65, (0.60, 0.70))], FAIL),
        ([auc(0.65, (0.61, 0.70), family=4)], UNRESOLVED),  # beyond alone, not once the best of 4 is corrected for
        ([auc(0.70, (0.65, 0.75), family=4)], FAIL),
        ([auc(0.55, (0.5, 0.59), 2, "a"), auc(0.57, (0.5, 0.62), 2, "b")], UNRESOLVED),  # every attack must pass
        ([auc(0.55, (0.5, 0.59), 2, "a"), auc(0.52, (0.45, 0.58), 2, "b")], PASS),
        ([Figure("membership.auc", "a", 0.5, None, unjudged="no interval was recorded")], UNRESOLVED),
        ([], NOT_MEASURED),
    ],
)
def test_max_rule_truth_table(figures, status):
    assert judge(MAX, "t", figures).status == status


def test_min_rule_and_exact_figures():
    assert judge(MIN, "t", [Figure("quality.shape", "", 0.85, (0.85, 0.85), exact=True)]).status == PASS
    assert judge(MIN, "t", [Figure("quality.shape", "", 0.75, (0.75, 0.75), exact=True)]).status == FAIL


def test_claimed_epsilon_is_judged_only_with_a_claim():
    rule = Rule(id="dp", figure="privacy.epsilon_lower_bound", limit="claimed", upper=True)
    bound = dict(name="privacy.epsilon_lower_bound", component="lira", value=1.3, ci=(1.3, 1.3), exact=True)
    assert judge(rule, "t", [Figure(**bound, reference=1.0)]).status == FAIL
    assert judge(rule, "t", [Figure(**bound, reference=3.0)]).status == PASS
    j = judge(rule, "t", [Figure(**bound)])
    assert j.status == NOT_MEASURED and not j.failed and "no ε was claimed" in j.message


def test_required_rule_not_measured_fails():
    j = judge(Rule(id="r", figure="membership.auc", limit=0.6, upper=True, required=True), "t", [])
    assert j.status == NOT_MEASURED and j.failed and "required, but not measured" in j.message


def test_the_worst_component_decides_and_is_named():
    j = judge(MAX, "t", [auc(0.55, (0.5, 0.59), 2, "dcr"), auc(0.58, (0.52, 0.64), 2, "mc")])
    assert j.figure.component == "mc" and "membership.auc (mc) 0.580 (95% CI 0.520 to 0.640)" in j.message
    assert dict(j.components) == {"dcr": PASS, "mc": UNRESOLVED}


AUDIT = {
    "n_synthetic": 1000,
    "n_holdout": 1000,
    "memorization_rate": 0.1,
    "holdout_memorization_rate": 0.1,
    "excess_memorization": 0.0,
    "excess_memorization_ci": [0.0, 0.0],  # a collapsed bootstrap: the score interval is used where wider
    "exact_copy_rate": 0.0,
    "holdout_exact_copy_rate": 0.0,
    "confidence": 0.95,
}


def test_figures_from_an_audit_use_score_intervals_where_the_bootstrap_collapses():
    figs = {f.name: f for f in figures_of(Measured("t", audits={"gower": AUDIT}))}
    lo, hi = figs["memorization.excess"].ci
    assert lo < -0.02 and hi > 0.02
    lo, hi = figs["memorization.exact_copy_excess"].ci
    assert lo < 0 < hi < 0.005
    without = figures_of(Measured("t", audits={"gower": {**AUDIT, "distance_discriminates": False}}))
    assert "cannot tell copies" in next(f for f in without if f.name == "memorization.excess").unjudged


def test_scorecard_json_and_junit():
    policy = parse_policy(
        '[[rule]]\nid = "auc"\nfigure = "membership.auc"\nmax = 0.6\n'
        '[[rule]]\nid = "risk"\nfigure = "risk.linkability"\nmax = 0.1\n',
        source="t.toml",
    )
    attacks = {"dcr": {"auc": 0.7, "auc_ci": [0.65, 0.75]}, "_meta": {}}
    card = evaluate(
        policy,
        [Measured("leaky", attacks=attacks), Measured("fine", attacks={"dcr": {"auc": 0.5, "auc_ci": [0.45, 0.55]}})],
    )
    assert card.exit_code == 1 and not card.passed
    d = json.loads(json.dumps(card.to_dict()))
    assert d["verdict"] == "fail" and d["counts"] == {"pass": 1, "fail": 1, "unresolved": 0, "not measured": 2}
    assert [j["status"] for j in d["judgements"]] == ["fail", "not measured", "pass", "not measured"]
    root = ET.fromstring(junit_xml(card).split("\n", 1)[1])
    assert root.get("tests") == "4" and root.get("failures") == "1" and root.get("skipped") == "2"
    assert [s.get("name") for s in root.iter("testsuite")] == ["t: leaky", "t: fine"]
    assert evaluate(policy, [Measured("fine", attacks={"dcr": {"auc": 0.5, "auc_ci": [0.45, 0.55]}})]).exit_code == 0
