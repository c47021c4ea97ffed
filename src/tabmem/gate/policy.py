"""Policies: named lists of rules, each a limit on one figure, read from TOML and checked at parse time.

A policy file (the built-ins ``standard`` and ``strict`` are such files, in ``policies/``)::

    name = "our-release-policy"
    description = "what it is for"
    extends = "standard"          # optional: start from a built-in; a rule with the same id replaces its rule

    [[rule]]
    id = "exact-copies"           # unique, shown in every line, JSON and JUnit
    figure = "memorization.exact_copy_excess"   # a name of tabmem.gate.figures (docs/gate.md lists them)
    max = 0.01                    # or min = ...; for privacy.epsilon_lower_bound also max = "claimed"
    required = false              # true: the rule fails when its figure was not measured
    why = "where the limit comes from"
    advice = "what to do when it fails"

Every mistake is one line naming the file, the rule and the key.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from tabmem.errors import TabmemError
from tabmem.gate.figures import figure_spec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["BUILTIN_POLICIES", "CLAIMED", "Policy", "Rule", "load_policy", "parse_policy"]

BUILTIN_POLICIES = ("standard", "strict")
#: the limit of an ε rule that is the generator's own claim
CLAIMED = "claimed"
POLICY_KEYS = {"name", "description", "extends", "rule"}
RULE_KEYS = {"id", "figure", "max", "min", "required", "why", "advice"}


@dataclass(frozen=True)
class Rule:
    """A limit on one figure: ``max`` (the upper end of its interval must be at most it) or ``min``."""

    id: str
    figure: str
    limit: float | str  # a number, or CLAIMED
    upper: bool  # True: a max rule
    required: bool = False
    why: str = ""
    advice: str = ""

    @property
    def bound(self) -> str:
        return "max" if self.upper else "min"


@dataclass(frozen=True)
class Policy:
    """A named set of rules; ``source`` is the built-in name or the file it was read from."""

    name: str
    description: str
    rules: tuple[Rule, ...]
    source: str


def load_policy(spec: str | Path | None = None) -> Policy:
    """A built-in policy by name (``standard`` when ``spec`` is None) or a TOML policy file."""
    spec = "standard" if spec is None else spec
    if str(spec) in BUILTIN_POLICIES:
        text = resources.files("tabmem.gate").joinpath("policies", f"{spec}.toml").read_text(encoding="utf-8")
        return parse_policy(text, source=str(spec))
    path = Path(spec)
    if path.suffix.lower() != ".toml":
        raise TabmemError(
            f"--policy: {str(spec)!r} is neither a built-in policy ({', '.join(BUILTIN_POLICIES)}) nor a .toml file"
        )
    if not path.is_file():
        raise TabmemError(f"--policy: {str(path)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TabmemError(f"--policy: {str(path)!r} cannot be read ({exc})") from None
    return parse_policy(text, source=str(path))


def parse_policy(text: str, *, source: str) -> Policy:
    """The policy in TOML ``text``; ``source`` names it in every error."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TabmemError(f"{source}: not valid TOML ({exc})") from None
    unknown = sorted(set(doc) - POLICY_KEYS)
    if unknown:
        raise TabmemError(f"{source}: unknown key {unknown[0]!r} (a policy has {', '.join(sorted(POLICY_KEYS))})")
    name = _text(doc, "name", source, default=Path(source).stem)
    description = _text(doc, "description", source, default="")
    base: dict[str, Rule] = {}
    if "extends" in doc:
        parent = doc["extends"]
        if parent not in BUILTIN_POLICIES:
            raise TabmemError(
                f"{source}: key 'extends': {parent!r} is not a built-in policy ({', '.join(BUILTIN_POLICIES)})"
            )
        base = {r.id: r for r in load_policy(parent).rules}
    entries = doc.get("rule", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise TabmemError(f"{source}: key 'rule': write each rule as a [[rule]] table")
    seen: set[str] = set()
    rules = dict(base)
    for i, entry in enumerate(entries, 1):
        rule = _rule(entry, f"{source}: rule {i}", source)
        if rule.id in seen:
            raise TabmemError(f"{source}: rule {rule.id!r}: key 'id': two rules have this id")
        seen.add(rule.id)
        rules[rule.id] = rule
    if not rules:
        raise TabmemError(f"{source}: the policy has no rule (add a [[rule]] table)")
    return Policy(name=name, description=description, rules=tuple(rules.values()), source=source)


def _rule(entry: dict[str, Any], where: str, source: str) -> Rule:
    rid = entry.get("id")
    if not isinstance(rid, str) or not rid.strip():
        raise TabmemError(f"{where}: key 'id': give each rule a non-empty text id")
    where = f"{source}: rule {rid!r}"
    unknown = sorted(set(entry) - RULE_KEYS)
    if unknown:
        raise TabmemError(f"{where}: unknown key {unknown[0]!r} (a rule has {', '.join(sorted(RULE_KEYS))})")
    figure = entry.get("figure")
    if not isinstance(figure, str) or figure_spec(figure) is None:
        raise TabmemError(
            f"{where}: key 'figure': {figure!r} is not a figure tabmem measures (docs/gate.md lists them, "
            "e.g. memorization.excess, membership.auc, risk.inference)"
        )
    if ("max" in entry) == ("min" in entry):
        raise TabmemError(f"{where}: give exactly one of the keys 'max' and 'min'")
    key = "max" if "max" in entry else "min"
    limit = entry[key]
    if limit == CLAIMED:
        if figure != "privacy.epsilon_lower_bound" or key != "max":
            raise TabmemError(
                f"{where}: key {key!r}: {CLAIMED!r} is only a limit for max of privacy.epsilon_lower_bound"
            )
    elif isinstance(limit, bool) or not isinstance(limit, (int, float)) or not math.isfinite(limit):
        raise TabmemError(f"{where}: key {key!r}: expected a finite number, got {limit!r}")
    required = entry.get("required", False)
    if not isinstance(required, bool):
        raise TabmemError(f"{where}: key 'required': expected true or false, got {required!r}")
    rule = Rule(
        id=rid,
        figure=figure,
        limit=limit if limit == CLAIMED else float(limit),
        upper=key == "max",
        required=required,
        why=_text(entry, "why", where, default=""),
        advice=_text(entry, "advice", where, default=""),
    )
    spec = figure_spec(figure)
    return rule if rule.advice or spec is None else replace(rule, advice=spec.advice)


def _text(doc: dict[str, Any], key: str, where: str, *, default: str) -> str:
    value = doc.get(key, default)
    if not isinstance(value, str):
        raise TabmemError(f"{where}: key {key!r}: expected text, got {value!r}")
    return value
