"""Membership-inference attacks on synthetic tables, and their evaluation.

``get_attack("levatt").fit(synthetic, schema).score(targets)`` -> one score per target,
higher = more likely a member. No-box attacks (the synthetic table only): ``levatt`` (string
edit distance, Ward et al. 2025), ``dcr`` (distance to closest record), ``mc`` (Monte Carlo,
Hilprecht et al. 2019), ``density`` (KDE of the synthetic data) and ``domias`` (van Breugel et
al. 2023). Shadow-model attacks (``needs_shadows``; ``fit(..., shadows=ShadowSet)``): ``lira``,
``lira_offline``, ``lira_levatt``, ``lira_domias`` (Carlini et al. 2022) and ``groundhog``
(Stadler et al. 2022). :mod:`tabmem.attacks.auditing`: Clopper–Pearson intervals, MIDST TPR at
FPR and empirical ε lower bounds.
"""

from tabmem.attacks.base import ATTACKS, Attack, check_attack_names, get_attack, register_attack
from tabmem.attacks.evaluation import MembershipResult, evaluate_membership, top_k_worst_case, worst_case_records
from tabmem.attacks.shadows import ShadowSet
from tabmem.attacks.summary import AttackSummary

# attack modules (one import line each; importing registers them)
from tabmem.attacks import levatt  # noqa: E402,F401  isort: skip
from tabmem.attacks import dcr  # noqa: E402,F401  isort: skip
from tabmem.attacks import montecarlo  # noqa: E402,F401  isort: skip
from tabmem.attacks import density  # noqa: E402,F401  isort: skip
from tabmem.attacks import lira  # noqa: E402,F401  isort: skip
from tabmem.attacks import groundhog  # noqa: E402,F401  isort: skip

__all__ = [
    "ATTACKS",
    "Attack",
    "AttackSummary",
    "check_attack_names",
    "MembershipResult",
    "ShadowSet",
    "evaluate_membership",
    "get_attack",
    "register_attack",
    "top_k_worst_case",
    "worst_case_records",
]
