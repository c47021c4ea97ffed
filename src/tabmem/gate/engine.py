"""The rule engine: a policy applied to what was measured, one :class:`Judgement` per rule and table.

A ``max`` rule on a figure (``min`` mirrors it):

* **pass** when the upper end of the figure's interval is at most the limit, for every component
  (every attack run, every secret column, every audited distance). Requiring each to pass is an
  intersection-union test: the joint claim holds at the intervals' own confidence, no correction.
* **fail** when the lower end of some component's interval is at or above the limit, the interval
  widened for the choice among the ``k`` components (Bonferroni: each at ``1 - alpha/k``, by the
  normal approximation of :func:`~tabmem.gate.intervals.widen`): the strongest of four attacks
  must beat the limit by more than one attack alone would.
* **unresolved** otherwise (the interval holds the limit, or a figure cannot be judged: no
  holdout, a distance that cannot discriminate, an FPR too low for the non-members). A release
  gate counts it as not passed: the data does not show the table is under the limit.
* **not measured** when no figure of the rule's name is in the results (a failure only for a
  ``required`` rule).

Exit codes of ``tabmem check``: 0 when every judgement passes or is not measured (and one at least
passes), 1 otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tabmem.gate.figures import Figure, Measured, figure_spec, figures_of
from tabmem.gate.intervals import widen
from tabmem.gate.policy import CLAIMED, Policy, Rule

__all__ = ["PASS", "FAIL", "UNRESOLVED", "NOT_MEASURED", "Judgement", "Scorecard", "evaluate", "judge", "fmt_value"]

PASS, FAIL, UNRESOLVED, NOT_MEASURED = "pass", "fail", "unresolved", "not measured"


@dataclass(frozen=True)
class Judgement:
    """One rule on one table: its status, the figure that decided it, the limit, and a sentence."""

    rule: Rule
    source: str
    status: str
    figure: Figure | None  # the deciding component (the worst one); None when not measured
    limit: float | None
    message: str
    components: tuple[tuple[str, str], ...] = ()  # (component, status) of every component judged

    @property
    def advice(self) -> str:
        """What to do: the rule's advice on a failure; on an unresolved rule, what would resolve it."""
        if self.status == FAIL or (self.status == NOT_MEASURED and self.rule.required):
            return self.rule.advice
        if self.status == UNRESOLVED:
            if self.figure is not None and self.figure.unjudged is not None:
                return "see why above"
            spec = figure_spec(self.rule.figure)
            return spec.resolve if spec is not None else ""
        return ""

    @property
    def failed(self) -> bool:
        """Whether this judgement keeps the gate closed (fail, unresolved, or a required figure not measured)."""
        return self.status in (FAIL, UNRESOLVED) or (self.status == NOT_MEASURED and self.rule.required)

    def to_dict(self) -> dict[str, Any]:
        f = self.figure
        return {
            "rule": self.rule.id,
            "figure": self.rule.figure,
            "source": self.source,
            "component": f.component if f is not None else None,
            "status": self.status,
            "value": f.value if f is not None else None,
            "ci": list(f.ci) if f is not None and f.ci is not None else None,
            "confidence": f.confidence if f is not None else None,
            "family": f.family if f is not None else None,
            "bound": self.rule.bound,
            "limit": self.limit,
            "required": self.rule.required,
            "message": self.message,
            "why": self.rule.why,
            "advice": self.advice,
            "components": {c: s for c, s in self.components},
        }


@dataclass(frozen=True)
class Scorecard:
    """A policy's judgements over every table checked."""

    policy: Policy
    judgements: tuple[Judgement, ...]
    sources: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        """Every judgement passes or is not measured (and not required), and at least one passes."""
        return not any(j.failed for j in self.judgements) and any(j.status == PASS for j in self.judgements)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def for_source(self, source: str) -> list[Judgement]:
        return [j for j in self.judgements if j.source == source]

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` scorecard."""
        counts = {s: sum(j.status == s for j in self.judgements) for s in (PASS, FAIL, UNRESOLVED, NOT_MEASURED)}
        return {
            "policy": {"name": self.policy.name, "source": self.policy.source, "description": self.policy.description},
            "verdict": PASS if self.passed else FAIL,
            "exit_code": self.exit_code,
            "counts": counts,
            "sources": list(self.sources),
            "judgements": [j.to_dict() for j in self.judgements],
        }


def evaluate(policy: Policy, measured: Sequence[Measured]) -> Scorecard:
    """Every rule of ``policy`` on every table of ``measured``."""
    judgements = [judge(rule, m.label, figures_of(m)) for m in measured for rule in policy.rules]
    return Scorecard(policy=policy, judgements=tuple(judgements), sources=tuple(m.label for m in measured))


def judge(rule: Rule, source: str, figures: Sequence[Figure]) -> Judgement:
    """``rule`` on the figures of one table (see the module docstring for the three outcomes)."""
    mine = [f for f in figures if f.name == rule.figure]
    if not mine:
        what = "required, but not measured" if rule.required else "not measured"
        return Judgement(rule, source, NOT_MEASURED, None, None, f"{rule.figure} {what}")
    verdicts = [(f, *_component(rule, f)) for f in mine]
    verdicts = [v for v in verdicts if v[1] != NOT_MEASURED] or verdicts
    order = {FAIL: 0, UNRESOLVED: 1, PASS: 2, NOT_MEASURED: 3}
    figure, status, limit, reason = min(verdicts, key=lambda v: (order[v[1]], _severity(rule, v[0])))
    components = tuple((f.component, s) for f, s, _, _ in verdicts)
    return Judgement(
        rule, source, status, figure, limit, _message(rule, figure, status, limit, reason, len(mine)), components
    )


def _component(rule: Rule, f: Figure) -> tuple[str, float | None, str]:
    """(status, limit, reason) of one component."""
    if rule.limit == CLAIMED:
        if f.reference is None:
            return NOT_MEASURED, None, "no ε was claimed for this generator"
        limit = f.reference
    else:
        limit = float(rule.limit)
    if f.unjudged is not None or f.value is None or f.ci is None:
        return UNRESOLVED, limit, f.unjudged or "no value was recorded"
    lo, hi = f.ci
    if f.exact:
        wide_lo, wide_hi = lo, hi
    else:
        wanted = 1 - (1 - f.confidence) / max(f.family, 1)
        wide_lo, wide_hi = widen(f.value, f.ci, recorded=f.confidence, wanted=wanted)
    if rule.upper:
        if hi <= limit:
            return PASS, limit, ""
        if wide_lo >= limit:
            return FAIL, limit, ""
    else:
        if lo >= limit:
            return PASS, limit, ""
        if wide_hi <= limit:
            return FAIL, limit, ""
    return UNRESOLVED, limit, "the interval holds the limit"


def _severity(rule: Rule, f: Figure) -> float:
    """Sort key: the worst component first (highest upper end for a max rule)."""
    if f.ci is None:
        return 0.0
    return -f.ci[1] if rule.upper else f.ci[0]


def fmt_value(unit: str, x: float | None, *, signed: bool = False) -> str:
    """A figure's value as the report and the lines show it: points for shares, 3 decimals for scores."""
    if x is None:
        return "n/a"
    if unit == "points":
        return f"{100 * x:+.1f} points" if signed else f"{100 * x:.1f} points"
    if unit == "epsilon":
        return f"{x:.2f}"
    return f"{x:.3f}"


def _message(rule: Rule, f: Figure, status: str, limit: float | None, reason: str, n: int) -> str:
    unit = figure_spec(rule.figure).unit if figure_spec(rule.figure) else "score"
    signed = unit == "points"
    where = f" ({f.component})" if f.component else ""
    if f.value is None:
        value = "n/a"
    else:
        value = fmt_value(unit, f.value, signed=signed)
    if f.ci is not None and not f.exact:
        lo, hi = (fmt_value(unit, x, signed=signed).replace(" points", "") for x in f.ci)
        value += f" ({round(100 * f.confidence)}% CI {lo} to {hi})"
    op = "≤" if rule.upper else "≥"
    lim = fmt_value(unit, limit, signed=signed) if limit is not None else "n/a"
    head = f"{rule.figure}{where} {value}, limit {op} {lim}"
    if status == PASS:
        tail = f"every one of {n} within the limit" if n > 1 else ""
    elif status == FAIL:
        tail = (
            f"beyond the limit even corrected for choosing the worst of {f.family}"
            if f.family > 1
            else "beyond the limit"
        )
    elif status == UNRESOLVED:
        tail = f"not shown within the limit: {reason}"
    else:
        tail = reason
    return head + (f": {tail}" if tail else "")
