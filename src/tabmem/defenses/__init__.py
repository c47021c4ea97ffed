"""Defences against memorization: decoding-time logit processors and post-processors."""

from __future__ import annotations

from tabmem.defenses.digit_modifier import DigitModifier
from tabmem.defenses.registry import DEFENSES, register_defense
from tabmem.defenses.tlp import TendencyLogitsProcessor
from tabmem.defenses.tlp_search import TLPSearchResult, search_tendency

__all__ = [
    "DEFENSES",
    "register_defense",
    "DigitModifier",
    "TLPSearchResult",
    "TendencyLogitsProcessor",
    "search_tendency",
]
