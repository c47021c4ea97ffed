"""The three WP29 anonymisation risks of synthetic tables (singling out, linkability, inference).

Defined as anonymeter defines them (Giomi et al., "A Unified Framework for Quantifying Privacy
Risk in Synthetic Data", PoPETs 2023): each attack's success on training rows beyond its
success on control rows (real rows never trained on), with Wilson-score intervals.
"""

from tabmem.risk.evaluate import N_ATTACKS, evaluate_risk
from tabmem.risk.summary import RiskEstimate, RiskSummary

__all__ = ["N_ATTACKS", "RiskEstimate", "RiskSummary", "evaluate_risk"]
