"""Per-record training weights (``fit(..., sample_weight=w)``): the check and the weighted batch mean.

A weight ``w_i >= 0`` scales record ``i``'s share of the training objective, so that a mitigation
can down-weight the records a warm-up ranks as memorized while keeping everyone's data in the table
(:mod:`tabmem.mitigation.dynamiccut`, ``reweight``). How each generator applies it:

* TabDDPM, TVAE and the LLM generator compute one loss per record, so the batch loss becomes the
  **weighted mean** ``sum_i w_i l_i / sum_i w_i`` over the batch (:func:`weighted_mean`; for the LLM
  generator the token mean with each token weighted by its row's weight, :func:`weighted_token_loss`,
  not with differential privacy): the batch
  order and every random draw stay those of unweighted training, and a record of weight 0 adds
  exactly nothing to the gradient (the other records' losses do not depend on it: these models
  have no batch statistics).
* CTGAN draws its real rows (it never iterates over them, and its critic scores packs of ``pac``
  rows, so there is no per-record loss): a real row is drawn with probability proportional to its
  weight within the condition's category, and conditions by weighted category counts
  (:class:`~tabmem.generators._conditional.ConditionalSampler`). A record of weight 0 is never drawn.

``None`` or all-ones weights select the unweighted code path (:func:`check_sample_weight` returns
``None``): training is bit for bit that of a fit without weights.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from tabmem.errors import ParameterError

__all__ = ["check_sample_weight", "weight_fingerprint", "weighted_mean", "weighted_token_loss"]


def check_sample_weight(sample_weight: Any, n: int, *, name: str = "sample_weight") -> np.ndarray | None:
    """``sample_weight`` as a float64 array of length ``n``, or ``None`` for no weights (``None`` or all ones).

    Weights must be finite, non-negative and not all zero; each error is one line naming ``name``."""
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{name}: expected numbers, one per training record") from None
    if w.ndim != 1 or len(w) != int(n):
        raise ParameterError(f"{name}: expected one weight per training record ({n}), got shape {w.shape}")
    if not np.isfinite(w).all():
        raise ParameterError(f"{name}: weights must be finite (record {int(np.flatnonzero(~np.isfinite(w))[0])})")
    if (w < 0).any():
        raise ParameterError(
            f"{name}: weights must be >= 0 (record {int(np.flatnonzero(w < 0)[0])} has {w[w < 0][0]:g})"
        )
    if not (w > 0).any():
        raise ParameterError(f"{name}: all weights are zero: nothing would be learnt")
    if (w == 1.0).all():
        return None
    return w


def weight_fingerprint(weights: np.ndarray | None) -> str | None:
    """A short hash of the weights (kept in checkpoints: a resumed fit must use the same weights)."""
    if weights is None:
        return None
    return hashlib.sha256(np.ascontiguousarray(weights, dtype="<f8").tobytes()).hexdigest()[:16]


def weighted_mean(losses: Any, weights: Any) -> Any:
    """``sum(w * l) / sum(w)`` of one batch's per-record ``losses`` (torch); 0 for a batch of weight 0."""
    total = weights.sum()
    return (losses * weights).sum() / total.clamp_min(1e-12)


def weighted_token_loss(logits: Any, labels: Any, weights: Any) -> Any:
    """Causal-LM loss with one weight per row: ``sum_i w_i sum_t l_it / sum_i w_i n_i``.

    ``l_it`` is the next-token cross-entropy of row ``i`` at position ``t`` and ``n_i`` its number of
    predicted tokens (labels ``-100`` are ignored), so all-ones weights give the usual token mean of
    Hugging Face's ``loss`` (the same value; the unweighted path still uses theirs)."""
    import torch.nn.functional as F

    shift_logits = logits[:, :-1, :].float()
    shift_labels = labels[:, 1:]
    per_token = F.cross_entropy(
        shift_logits.reshape(-1, shift_logits.shape[-1]), shift_labels.reshape(-1), ignore_index=-100, reduction="none"
    ).reshape(shift_labels.shape)
    n_tokens = (shift_labels != -100).sum(1).to(per_token.dtype)
    w = weights.to(per_token.dtype)
    return (w * per_token.sum(1)).sum() / (w * n_tokens).sum().clamp_min(1e-12)
