"""The registry of defences, with the stage at which each one acts.

``stage`` is a capability flag: ``"decoding"`` defences are Hugging Face ``LogitsProcessor``
objects applied while a language-model generator samples (``sample(logits_processor=[...])``);
``"postprocess"`` defences transform a finished synthetic table (``fit(train).transform(synthetic)``).
"""

from __future__ import annotations

from tabmem._registry import Registry

__all__ = ["DEFENSES", "register_defense"]

#: name -> defence class; modules with optional dependencies (torch for TLP) load on demand.
DEFENSES: Registry[type] = Registry(
    "defense",
    optional={"tlp": "tabmem.defenses.tlp", "digit_modifier": "tabmem.defenses.digit_modifier"},
    attribute=None,
)
register_defense = DEFENSES.register
