"""The sampling options of one :meth:`LLMGenerator.sample` call, validated once and frozen.

The generator builds one :class:`SamplingOptions` from its constructor defaults and the call's
keyword arguments, and passes it down the sampling path; nothing below re-checks a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tabmem._checks import check_choice, check_number, check_positive_int
from tabmem.errors import ParameterError

#: how digit rows are constrained while decoding (see :mod:`tabmem.generators.llm.constraints`)
CONSTRAINTS = ("mask", "prefix_fn", "none")


@dataclass(frozen=True)
class SamplingOptions:
    """How rows are decoded; every field is checked in the constructor, errors name it and its value.

    Args:
        temperature: > 0 (1 = the model's distribution).
        top_k: keep the ``k`` most likely tokens (``None`` = off).
        top_p: nucleus mass in (0, 1] (1 = off).
        tendency: TLP strength ``t >= 1`` (:class:`~tabmem.defenses.TendencyLogitsProcessor`; ``None`` = off).
        constraint: ``"mask"``, ``"prefix_fn"`` or ``"none"`` (digit format only).
        conditions: ``{column: value}`` fixed in every row (kept read-only, in the given order).
        logits_processor: extra Hugging Face processors, applied after the constraint and TLP.

    Examples:
        >>> SamplingOptions(tendency=4, conditions={"sex": "F"}).tendency
        4.0
        >>> SamplingOptions(top_p=1.5)
        Traceback (most recent call last):
        ...
        tabmem.errors.ParameterError: top_p must be in (0, 1], got 1.5
    """

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float = 1.0
    tendency: float | None = None
    constraint: str = "mask"
    conditions: Mapping[str, Any] = field(default_factory=dict, hash=False)
    logits_processor: tuple[Callable[..., Any], ...] = ()

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalised values are written once, here
        set_(self, "temperature", check_number("temperature", self.temperature, low=0.0, low_open=True))
        set_(self, "top_k", check_positive_int("top_k", self.top_k, allow_none=True))
        set_(self, "top_p", check_number("top_p", self.top_p, low=0.0, high=1.0, low_open=True))
        if self.tendency is not None:
            set_(self, "tendency", check_number("tendency", self.tendency, low=1.0))
        check_choice("constraint", self.constraint, CONSTRAINTS)
        try:
            conditions = dict(self.conditions or {})
        except (TypeError, ValueError):
            raise ParameterError(f"conditions must be a dict {{column: value}}, got {self.conditions!r}") from None
        set_(self, "conditions", MappingProxyType(conditions))
        processors = () if self.logits_processor is None else self.logits_processor
        if not isinstance(processors, (list, tuple)) or not all(callable(p) for p in processors):
            raise ParameterError(f"logits_processor must be a list of LogitsProcessor callables, got {processors!r}")
        set_(self, "logits_processor", tuple(processors))
