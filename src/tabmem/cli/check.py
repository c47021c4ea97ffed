"""``tabmem check RESULTS...``: a release gate. Exit 0 when every rule of the policy passes, 1 when one does not, 2 on bad input."""

from __future__ import annotations

import sys

import click

from tabmem.cli._options import prepare_out_file


@click.command("check")
@click.argument("results", nargs=-1, required=True, metavar="RESULTS...")
@click.option(
    "--policy",
    default="standard",
    show_default=True,
    help="A built-in policy (standard, strict) or a TOML policy file (docs/gate.md).",
)
@click.option(
    "--json",
    "json_out",
    default=None,
    help="Write the scorecard as JSON to this file.",
)
@click.option(
    "--junit",
    "junit_out",
    default=None,
    help="Write the rules as JUnit XML to this file (CI test reports).",
)
def check(results, policy, json_out, junit_out) -> None:
    """Judge RESULTS by a policy and exit 0 (every rule passes), 1 (a rule fails or is unresolved) or 2 (bad input).

    RESULTS are output directories: a study (tabmem run), a tabmem train run, the outputs of tabmem
    audit / attack / quality / risk, or a directory of those. Each rule is judged on the far end of
    its 95% interval: a limit on excess memorization passes when the upper end is under it. One
    line per rule and table; no record is ever printed.
    """
    from tabmem._io import write_json, write_text
    from tabmem.gate import load_policy
    from tabmem.gate.junit import junit_xml
    from tabmem.gate.text import scorecard_lines
    from tabmem.report.decision import check_dirs

    chosen = load_policy(policy)  # before any reading: a malformed policy is one line, exit 2
    for out, option in ((json_out, "--json"), (junit_out, "--junit")):
        if out is not None:
            prepare_out_file(out, option)
    card = check_dirs(list(results), chosen)
    for line in scorecard_lines(card):
        click.echo(line)
    if json_out is not None:
        write_json(json_out, card.to_dict())
    if junit_out is not None:
        write_text(junit_out, junit_xml(card))
    sys.exit(card.exit_code)
