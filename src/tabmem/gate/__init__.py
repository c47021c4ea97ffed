"""Release decisions: policies of rules on the measured figures, and the engine that applies them.

``tabmem check`` and the report's verdict both run :func:`evaluate`: one engine, so the two never
disagree. :mod:`~tabmem.gate.figures` reads the figures from the summaries the commands wrote,
:mod:`~tabmem.gate.policy` reads policies (the built-ins and TOML files), :mod:`~tabmem.gate.engine`
judges each rule on the far end of its interval, :mod:`~tabmem.gate.junit` writes JUnit XML.
"""

from tabmem.gate.engine import FAIL, NOT_MEASURED, PASS, UNRESOLVED, Judgement, Scorecard, evaluate, judge
from tabmem.gate.figures import FIGURES, Figure, Measured, figures_of
from tabmem.gate.junit import junit_xml
from tabmem.gate.policy import BUILTIN_POLICIES, Policy, Rule, load_policy, parse_policy

__all__ = [
    "BUILTIN_POLICIES",
    "FAIL",
    "FIGURES",
    "NOT_MEASURED",
    "PASS",
    "UNRESOLVED",
    "Figure",
    "Judgement",
    "Measured",
    "Policy",
    "Rule",
    "Scorecard",
    "evaluate",
    "figures_of",
    "judge",
    "junit_xml",
    "load_policy",
    "parse_policy",
]
