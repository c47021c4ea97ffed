"""Failure class 'check': the release gate's inputs (result directories, policies, output files).

``tabmem check`` exits 2 with one line on bad input, never 1: a damaged or foreign ``summary.json``,
a folder that holds nothing the policy judges, a malformed policy file, a ``--json``/``--junit``
file that would replace a run's own file or is a directory. A clear failure of the gate is exit 1
and is not bad input.
"""

from __future__ import annotations

from cases_dirs import tracked_run
from corpus_runner import Case, Result

BINARY = bytes(range(256)) * 8


def _rundir_with(name: str, data: bytes | str):
    def setup(tmp, out) -> None:
        (tmp / "rundir").mkdir(parents=True, exist_ok=True)
        p = tmp / "rundir" / name
        p.write_bytes(data) if isinstance(data, bytes) else p.write_text(data)

    return setup


def _policy(text: str):
    def setup(tmp, out) -> None:
        tracked_run(tmp, out)
        (tmp / "team.toml").write_text(text)

    return setup


def _gate_ran(r: Result) -> None:
    import json

    card = json.loads((r.tmp / "card.json").read_text())
    assert card["exit_code"] == r.code and card["policy"]["name"] == "standard"
    assert {j["rule"] for j in card["judgements"]} >= {"exact-copies", "replicas", "membership-auc"}


CASES: list[Case] = [
    Case("check_damaged_summary", "13 check", ("check",), "error", setup=_rundir_with("summary.json", BINARY),
         match=r"summary\.json' is not a readable JSON file"),
    Case("check_foreign_summary", "13 check", ("check",), "error",
         setup=_rundir_with("summary.json", '{"accuracy": 0.9}'), match=r"is not a study, a tabmem train run"),
    Case("check_summary_not_an_object", "13 check", ("check",), "error", setup=_rundir_with("summary.json", "[1, 2]"),
         match=r"summary\.json' is not a tabmem summary|is not a study"),
    Case("check_policy_bad_limit", "13 check", ("check",), "error",
         setup=_policy('[[rule]]\nid = "auc"\nfigure = "membership.auc"\nmax = "high"\n'), args=("--policy", "{tmp}/team.toml"),
         match=r"team\.toml: rule 'auc': key 'max': expected a finite number, got 'high'"),
    Case("check_policy_unknown_figure", "13 check", ("check",), "error",
         setup=_policy('[[rule]]\nid = "x"\nfigure = "privacy.score"\nmax = 1\n'), args=("--policy", "{tmp}/team.toml"),
         match=r"team\.toml: rule 'x': key 'figure': 'privacy\.score' is not a figure tabmem measures"),
    Case("check_policy_not_toml", "13 check", ("check",), "error", setup=_policy("name = \n"),
         args=("--policy", "{tmp}/team.toml"), match=r"team\.toml: not valid TOML"),
    Case("check_json_over_the_runs_summary", "13 check", ("check",), "error", setup=tracked_run,
         args=("--json", "{tmp}/rundir/summary.json"), match=r"--json.*summary\.json"),
    Case("check_junit_is_a_directory", "13 check", ("check",), "error", setup=tracked_run, args=("--junit", "{tmp}"),
         match=r"--junit: .* is a directory"),
    Case("check_a_train_run", "13 check", ("check",), "ok", setup=tracked_run, check=_gate_ran,
         match=r"verdict: (PASS|FAIL)", note="exit 1 or 0: the gate's verdict, not bad input"),
    Case("check_results_missing", "13 check", ("check",), "error", match=r"RESULTS: '.*rundir' does not exist"),
]  # fmt: skip
