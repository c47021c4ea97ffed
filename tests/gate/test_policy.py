"""Policies: the built-ins parse, a team's TOML is checked at parse time with one line naming file, rule and key."""

from __future__ import annotations

import pytest

from cli_run import run
from tabmem.errors import TabmemError
from tabmem.gate import BUILTIN_POLICIES, load_policy, parse_policy
from tabmem.gate.figures import figure_spec


@pytest.mark.parametrize("name", BUILTIN_POLICIES)
def test_builtin_policies_parse_and_justify_every_limit(name):
    policy = load_policy(name)
    assert policy.name == name and policy.rules
    for rule in policy.rules:
        assert figure_spec(rule.figure) is not None
        assert rule.why and rule.advice  # every limit says where it comes from and what to do


def test_strict_is_tighter_than_standard():
    standard = {r.id: r.limit for r in load_policy("standard").rules}
    strict = {r.id: r.limit for r in load_policy("strict").rules}
    for rid, limit in standard.items():
        if isinstance(limit, float):
            assert strict[rid] < limit, rid


def test_extends_replaces_a_rule_by_id_and_adds_others():
    p = parse_policy(
        'extends = "standard"\n[[rule]]\nid = "replicas"\nfigure = "memorization.excess"\nmax = 0.02\n'
        '[[rule]]\nid = "fidelity"\nfigure = "quality.shape"\nmin = 0.8\n',
        source="team.toml",
    )
    rules = {r.id: r for r in p.rules}
    assert rules["replicas"].limit == 0.02 and rules["fidelity"].upper is False and "exact-copies" in rules
    assert p.name == "team"


RULE = '[[rule]]\nid = "r"\nfigure = "membership.auc"\nmax = 0.6\n'


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name = ", "team.toml: not valid TOML"),
        ("colour = 1\n" + RULE, "team.toml: unknown key 'colour'"),
        ('extends = "lenient"\n' + RULE, "team.toml: key 'extends': 'lenient' is not a built-in policy"),
        ("", "team.toml: the policy has no rule"),
        ("rule = 3", "team.toml: key 'rule': write each rule as a [[rule]] table"),
        ('[[rule]]\nfigure = "membership.auc"\nmax = 0.6\n', "team.toml: rule 1: key 'id'"),
        (RULE.replace("membership.auc", "membership.aucc"), "team.toml: rule 'r': key 'figure': 'membership.aucc'"),
        (RULE.replace("max = 0.6", 'max = "0.6"'), "team.toml: rule 'r': key 'max': expected a finite number"),
        (RULE.replace("max = 0.6", "max = nan"), "team.toml: rule 'r': key 'max': expected a finite number"),
        (RULE.replace("max = 0.6", "max = 0.6\nmin = 0.1"), "team.toml: rule 'r': give exactly one of the keys"),
        (RULE.replace("max = 0.6", ""), "team.toml: rule 'r': give exactly one of the keys"),
        (RULE.replace("max = 0.6", 'max = "claimed"'), "team.toml: rule 'r': key 'max': 'claimed' is only"),
        (RULE + "required = 1\n", "team.toml: rule 'r': key 'required': expected true or false"),
        (RULE + "treshold = 1\n", "team.toml: rule 'r': unknown key 'treshold'"),
        (RULE + RULE, "team.toml: rule 'r': key 'id': two rules have this id"),
        (RULE + "why = 3\n", "team.toml: rule 'r': key 'why': expected text"),
    ],
)
def test_malformed_policy_is_one_line_naming_file_rule_and_key(text, words):
    with pytest.raises(TabmemError) as err:
        parse_policy(text, source="team.toml")
    assert words in str(err.value) and "\n" not in str(err.value)


def test_figure_names_with_parameters():
    assert figure_spec("membership.tpr_at_fpr_0.01") is not None and figure_spec("quality.shape") is not None
    assert figure_spec("membership.tpr_at_fpr_2") is None and figure_spec("quality.colour") is None


def test_malformed_policy_file_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "team.toml"
    bad.write_text(RULE.replace("max = 0.6", 'max = "high"'))
    code, text = run(["check", tmp_path, "--policy", bad], capsys)
    assert code == 2 and text.strip().count("\n") == 0 and "team.toml: rule 'r': key 'max'" in text
    code, text = run(["check", tmp_path, "--policy", "lenient"], capsys)
    assert code == 2 and "neither a built-in policy (standard, strict) nor a .toml file" in text
    code, text = run(["check", tmp_path, "--policy", tmp_path / "none.toml"], capsys)
    assert code == 2 and "does not exist" in text
    code, text = run(["report", tmp_path, "--policy", bad], capsys)
    assert code == 2 and "team.toml: rule 'r': key 'max'" in text


def test_results_without_a_figure_exit_2(tmp_path, capsys):
    code, text = run(["check", tmp_path], capsys)
    assert code == 2 and text.strip().count("\n") == 0, text
