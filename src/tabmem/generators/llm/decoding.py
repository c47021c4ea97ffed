"""Decoding for one :meth:`LLMGenerator.sample` call: a plan built once, batched ``generate``, resampling.

The plan holds everything that does not change between generation rounds (the prompt, the
logits processors: format constraint, then TLP, then the user's, and the special ids), so a
call builds its processors once however many rounds and chunks it needs. Malformed generations
are counted in ``stats`` and resampled, with each round sized to the malformed rate seen so far,
until ``n`` valid rows exist or ``max_rounds`` rounds have run (then one clear error).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from tabmem.defenses import TendencyLogitsProcessor
from tabmem.errors import TabmemError
from tabmem.generators.llm.formats.base import Prompt, RowFormat
from tabmem.generators.llm.huggingface import require_transformers
from tabmem.generators.llm.options import SamplingOptions


@dataclass(frozen=True)
class DecodingPlan:
    """What every generation round of one sample call uses, built once by :func:`plan_decoding`."""

    options: SamplingOptions
    prompt: Prompt
    processors: Any  # transformers.LogitsProcessorList
    prefix_fn: Callable[[int, torch.Tensor], list[int]] | None
    eos_id: int
    pad_id: int


def plan_decoding(model: torch.nn.Module, fmt: RowFormat, options: SamplingOptions) -> DecodingPlan:
    """The prompt, processor list and special ids for ``options`` (bad conditions raise here, once)."""
    prompt = fmt.prompt(options.conditions)
    processors, prefix_fn = fmt.constraint(options.constraint, prompt, model)
    if options.tendency is not None:
        processors.append(TendencyLogitsProcessor(options.tendency))
    processors.extend(options.logits_processor)
    pad, eos = model.config.pad_token_id, fmt.eos_id
    return DecodingPlan(
        options=options,
        prompt=prompt,
        processors=require_transformers().LogitsProcessorList(processors),
        prefix_fn=prefix_fn,
        eos_id=eos,
        pad_id=pad if pad is not None else eos,
    )


def generate(model: Any, plan: DecodingPlan, k: int, device: torch.device) -> torch.Tensor:
    """``k`` sampled continuations of the prompt (KV cache on), prompt tokens cut off, on the CPU."""
    prompt, opts = plan.prompt.ids, plan.options
    ids = prompt.to(device).expand(k, -1).contiguous()
    kwargs: dict[str, Any] = {}
    if plan.prefix_fn is not None:
        kwargs["prefix_allowed_tokens_fn"] = plan.prefix_fn
    out = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        do_sample=True,
        max_new_tokens=plan.prompt.max_new_tokens,
        temperature=float(opts.temperature),
        top_k=int(opts.top_k or 0),
        top_p=float(opts.top_p),
        logits_processor=plan.processors,
        pad_token_id=plan.pad_id,
        eos_token_id=plan.eos_id,
        use_cache=True,
        **kwargs,
    )
    return out[:, prompt.shape[1] :].cpu()


def sample_valid_rows(
    model: Any,
    fmt: RowFormat,
    plan: DecodingPlan,
    n: int,
    *,
    stats: dict[str, int],
    max_rounds: int,
    device: torch.device,
) -> pd.DataFrame:
    """``n`` valid rows, generating and decoding in rounds; ``stats`` (shared by a call's chunks) counts them."""
    conditions = plan.options.conditions
    parts: list[pd.DataFrame] = []
    have, rounds = 0, 0
    while have < n:
        if rounds >= max_rounds:
            raise TabmemError(
                f"LLMGenerator: only {have} valid rows of {n} after {rounds} generation rounds "
                f"({stats['invalid']} of {stats['generated']} generations malformed); train longer, relax the "
                "conditions or raise max_resample_rounds"
            )
        if stats["generated"] == 0 or stats["invalid"] == 0:
            k = n - have
        else:  # ask for enough to cover the observed malformed rate
            rate = max(0.05, 1 - stats["invalid"] / stats["generated"])
            k = int(min(math.ceil((n - have) / rate * 1.1), 4 * n))
        res = fmt.decode(generate(model, plan, k, device), plan.prompt, conditions)
        stats["generated"] += k
        stats["invalid"] += res.n_invalid
        rounds += 1
        stats["rounds"] += 1
        if len(res.table):
            parts.append(res.table)
            have += len(res.table)
    return pd.concat(parts, ignore_index=True).iloc[:n].reset_index(drop=True)
