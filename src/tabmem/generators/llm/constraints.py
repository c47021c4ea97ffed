"""Constrained decoding for fixed-width digit rows (REaLTabFormer format).

At generation step ``p`` (``p`` tokens written after the prompt) only the tokens of position
``p`` are allowed, then ``[EOS]``. :class:`PositionMaskLogitsProcessor` does this with one
precomputed boolean mask per position (one ``masked_fill`` per step for the whole batch), and
:func:`prefix_allowed_tokens_fn` gives the same rule in Hugging Face's
``prefix_allowed_tokens_fn`` form; both set disallowed logits to ``-inf`` and give identical
samples. Forced positions (conditional sampling) allow exactly one token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

try:
    from transformers import LogitsProcessor as _Base
except ImportError:  # pragma: no cover
    _Base = object  # type: ignore[assignment,misc]


def _allowed(allowed: Sequence[Sequence[int]], forced: dict[int, int] | None) -> list[list[int]]:
    out = [list(a) for a in allowed]
    for p, t in (forced or {}).items():
        out[p] = [int(t)]
    return out


class PositionMaskLogitsProcessor(_Base):  # type: ignore[misc,valid-type]
    """Allow only the tokens of the current position (then ``eos_id``) at each decoding step."""

    def __init__(
        self,
        allowed: Sequence[Sequence[int]],
        vocab_size: int,
        eos_id: int,
        prompt_length: int,
        forced: dict[int, int] | None = None,
    ) -> None:
        rules = _allowed(allowed, forced)
        mask = torch.zeros(len(rules) + 1, vocab_size, dtype=torch.bool)
        for p, ids in enumerate(rules):
            mask[p, ids] = True
        mask[len(rules), eos_id] = True
        self.mask = mask
        self.prompt_length = int(prompt_length)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        p = min(input_ids.shape[1] - self.prompt_length, self.mask.shape[0] - 1)
        allowed = self.mask[p].to(scores.device)
        return scores.masked_fill(~allowed[: scores.shape[-1]], float("-inf"))


def prefix_allowed_tokens_fn(
    allowed: Sequence[Sequence[int]], eos_id: int, prompt_length: int, forced: dict[int, int] | None = None
) -> Callable[[int, torch.Tensor], list[int]]:
    """The same rule as a Hugging Face ``prefix_allowed_tokens_fn(batch_id, input_ids)``."""
    rules = _allowed(allowed, forced) + [[int(eos_id)]]

    def fn(batch_id: int, input_ids: torch.Tensor) -> list[int]:
        return rules[min(int(input_ids.shape[-1]) - prompt_length, len(rules) - 1)]

    return fn
