"""LLM generators: ``LLMGenerator`` (fine-tuned causal LM, registered as ``"llm"``) and the
in-context generator (:mod:`tabmem.generators.llm.icl`)."""

from __future__ import annotations

from tabmem.generators.llm.generator import LLMGenerator

__all__ = ["LLMGenerator"]
