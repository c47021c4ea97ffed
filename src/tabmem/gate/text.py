"""The lines ``tabmem check`` prints: a header, one line per rule and table, advice under each failure, the verdict."""

from __future__ import annotations

from tabmem.gate.engine import FAIL, NOT_MEASURED, PASS, UNRESOLVED, Scorecard

__all__ = ["scorecard_lines"]


def scorecard_lines(card: Scorecard) -> list[str]:
    """The lines ``tabmem check`` prints: a header, one line per rule and table (advice under a failure), the verdict."""
    tag = {PASS: "PASS", FAIL: "FAIL", UNRESOLVED: "UNRESOLVED", NOT_MEASURED: "-"}
    n_rules = len(card.policy.rules)
    lines = [
        f"policy {card.policy.name} ({n_rules} rule{'s' * (n_rules != 1)}) on {len(card.sources)} table{'s' * (len(card.sources) != 1)}"
    ]
    width = max(len(r.id) for r in card.policy.rules)
    for source in card.sources:
        lines.append(f"{source}:")
        quiet = []
        for j in card.for_source(source):
            if j.status == NOT_MEASURED and not j.failed:
                quiet.append(j.rule.id + (f" ({j.message.split(': ', 1)[1]})" if ": " in j.message else ""))
                continue
            status = "FAIL" if j.status == NOT_MEASURED else tag[j.status]
            lines.append(f"  {status:<10} {j.rule.id:<{width}}  {j.message}")
            if j.advice and j.advice != "see why above":
                lines.append(f"  {'':<10} {'':<{width}}  what to do: {j.advice}")
        if quiet:
            lines.append(f"  {'-':<10} not measured: {', '.join(quiet)}")
    failed = [j for j in card.judgements if j.failed]
    if card.passed:
        lines.append(
            f"verdict: PASS ({sum(j.status == PASS for j in card.judgements)} judged, all within the {card.policy.name} policy)"
        )
    elif failed:
        n_fail = sum(j.status == FAIL or j.status == NOT_MEASURED for j in failed)
        n_unres = sum(j.status == UNRESOLVED for j in failed)
        lines.append(f"verdict: FAIL ({n_fail} failed, {n_unres} unresolved: not shown within their limits)")
    else:
        lines.append("verdict: FAIL (no rule of the policy could be judged on these results)")
    return lines
