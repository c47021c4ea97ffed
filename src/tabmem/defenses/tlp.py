"""Tendency-based Logit Processor (TLP), the decoding-time defence of the LevAtt paper.

Ward, Gu, Wang, Cheng, "When Tables Leak: Attacking String Memorization in LLM-Based Tabular
Data Generation" (arXiv 2512.08875), as implemented in the authors' ``CustomLogitsProcessor``:
with ``m``/``M`` the min/max of the finite logits,

    u  = (z - m) / (M - m)
    z' = m + (M - m) * u ** (1 / t)

``t = 1`` is the identity; ``t > 1`` is a concave warp that keeps the order, the max and the min
of the logits but pulls every intermediate logit towards the max, so runner-up tokens (other
digits) gain probability and verbatim digit strings are broken up. Masked (``-inf``) logits stay
masked. Unlike temperature, the range ``M - m`` is kept.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from tabmem.defenses.registry import register_defense
from tabmem.errors import TabmemError

try:  # transformers is an optional dependency (extra "llm"); the processor also works standalone.
    from transformers import LogitsProcessor as _Base
except ImportError:  # pragma: no cover - exercised only without transformers
    _Base = object  # type: ignore[assignment,misc]

Normalize = Literal["row", "batch"]


@register_defense("tlp")
class TendencyLogitsProcessor(_Base):  # type: ignore[misc,valid-type]
    """Warp next-token logits with the tendency ``t`` (LevAtt paper, TLP).

    Args:
        tendency: ``t >= 1``; 1 is the identity, larger values flatten the distribution over the
            tokens that are not masked while keeping their order.
        normalize: ``"row"`` (default) takes min/max per sequence, so sequences in a batch do not
            influence each other; ``"batch"`` takes them over the whole ``[batch, vocab]`` tensor,
            exactly as the paper's code.

    Rows whose finite logits are all equal (``M = m``; the paper's code divides 0/0 there), rows
    without finite logits and rows holding ``+inf``/``NaN`` are returned unchanged (with
    ``"batch"``, the whole batch). ``scores`` is never edited in place.

    Examples:
        >>> import torch
        >>> tlp = TendencyLogitsProcessor(tendency=2.0)
        >>> tlp(None, torch.tensor([[0.0, 1.0, 4.0, float("-inf")]]))
        tensor([[0., 2., 4., -inf]])
    """

    stage = "decoding"

    def __init__(self, tendency: float, normalize: Normalize = "row") -> None:
        if isinstance(tendency, bool) or not isinstance(tendency, (int, float)):
            raise TabmemError(f"tendency must be a number >= 1, got {tendency!r}")
        if not math.isfinite(float(tendency)) or float(tendency) < 1.0:
            raise TabmemError(f"tendency must be a finite number >= 1 (1 = no change), got tendency={tendency!r}")
        if normalize not in ("row", "batch"):
            raise TabmemError(f"normalize must be 'row' or 'batch', got normalize={normalize!r}")
        self.tendency = float(tendency)
        self.normalize = normalize

    def __repr__(self) -> str:
        return f"TendencyLogitsProcessor(tendency={self.tendency!r}, normalize={self.normalize!r})"

    def __call__(self, input_ids: torch.LongTensor | None, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.tendency == 1.0:
            return scores
        work = scores.float() if scores.dtype in (torch.float16, torch.bfloat16) else scores
        masked = torch.isneginf(work)
        dims: tuple[int, ...] = (-1,) if self.normalize == "row" else tuple(range(work.dim()))
        lo = work.masked_fill(masked, float("inf")).amin(dim=dims, keepdim=True)
        hi = work.amax(dim=dims, keepdim=True)  # masked logits are -inf, so this is the finite max
        span = hi - lo
        # Rows where the warp is undefined (constant rows, rows without finite logits, rows holding
        # +inf or NaN, never produced by a model) get the identity (exponent 1, lo 0, span 1): only
        # [rows, 1]-sized tensors are patched, so the full-size work is 6 fused-able passes.
        ok = torch.isfinite(span) & (span > 0)
        lo = torch.where(ok, lo, torch.zeros_like(lo))
        span = torch.where(ok, span, torch.ones_like(span))
        exponent = torch.where(ok, torch.full_like(span, 1.0 / self.tendency), torch.ones_like(span))
        # u = ((z - m) / (M - m)) ** (1/t) * (M - m) + m; masked entries are restored to -inf
        out = (work - lo).div_(span).pow_(exponent).mul_(span).add_(lo).masked_fill_(masked, float("-inf"))
        return out.to(scores.dtype)
