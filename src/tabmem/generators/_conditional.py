"""Conditional vector and training-by-sampling (Xu et al. 2019, section 4.3).

During training each batch element is conditioned on one category of one discrete column:

1. a discrete column ``i*`` is picked uniformly;
2. a category ``k*`` of that column is picked with probability proportional to the *logarithm* of its
   frequency (we use ``log(1 + count)`` so that a category seen once keeps a non-zero chance; the paper's
   ``log(count)`` would never pick it);
3. the condition is the concatenation of one one-hot mask per discrete column, all zeros except
   position ``k*`` of column ``i*``;
4. the real example fed to the critic (CTGAN) or encoder is a training row whose column ``i*`` equals
   ``k*``, drawn uniformly among those rows.

The generator is then penalised with the cross-entropy between the mask and its output for column ``i*``
(:func:`conditional_loss`), so that it learns to honour the condition. At generation time the category is
drawn with its empirical frequency (``training=False``), which gives back the data's marginal distribution,
or from the training law (``training=True``), as the reference code does (CTGAN's ``sample_conditions``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tabmem.errors import TabmemError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class ConditionBatch:
    """One batch of conditions: ``cond`` (float32, ``(b, cond_dim)``), chosen ``column`` and ``category``."""

    cond: np.ndarray
    column: np.ndarray
    category: np.ndarray


class ConditionalSampler:
    """Draw conditions and matching training rows for training-by-sampling.

    Parameters
    ----------
    codes:
        One integer code array per discrete column (all of the training table's length), codes in
        ``[0, n_categories[j])``.
    n_categories:
        Number of categories of each discrete column (width of its one-hot block).
    n_rows:
        Number of training rows (needed only when there is no discrete column).
    log_frequency:
        Use ``log(1 + count)`` (the paper's training-by-sampling) rather than the raw count when drawing
        training conditions.
    weights:
        Per-row training weights (``fit(sample_weight=...)``) or ``None``: training conditions use the
        weighted counts, and a row is drawn with probability proportional to its weight among the rows
        of the condition's category (weight 0: never drawn). Generation-time frequencies (``counts_``,
        ``training=False``) stay those of the whole table.
    """

    def __init__(
        self,
        codes: list[np.ndarray],
        n_categories: list[int],
        *,
        log_frequency: bool = True,
        n_rows: int | None = None,
        weights: np.ndarray | None = None,
    ) -> None:
        if len(codes) != len(n_categories):
            raise TabmemError("ConditionalSampler: one code array per discrete column is needed")
        lengths = {len(c) for c in codes}
        if len(lengths) > 1:
            raise TabmemError(f"ConditionalSampler: code arrays of different lengths {sorted(lengths)}")
        self.n_columns_ = len(codes)
        self.n_rows_ = lengths.pop() if lengths else int(n_rows or 0)
        if n_rows is not None and self.n_rows_ != n_rows:
            raise TabmemError(f"ConditionalSampler: code arrays have {self.n_rows_} rows, n_rows={n_rows}")
        self.n_categories_ = np.asarray(n_categories, dtype=np.int64)
        self.offsets_ = np.concatenate([[0], np.cumsum(self.n_categories_)]).astype(np.int64)
        self.cond_dim_ = int(self.offsets_[-1])
        self.log_frequency = log_frequency
        width = int(self.n_categories_.max()) if self.n_columns_ else 0
        self._cum_train = np.ones((self.n_columns_, width))
        self._cum_orig = np.ones((self.n_columns_, width))
        self._order: list[np.ndarray] = []
        self._starts: list[np.ndarray] = []
        self._cum_weight: list[np.ndarray] = []  # per column: cumulative weights in ``order`` (weighted only)
        self.weights_ = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.counts_: list[np.ndarray] = []
        for j, (c, k) in enumerate(zip(codes, self.n_categories_)):
            c = np.asarray(c, dtype=np.int64)
            if c.size and (c.min() < 0 or c.max() >= k):
                raise TabmemError(f"ConditionalSampler: codes of discrete column {j} fall outside [0, {k})")
            counts = np.bincount(c, minlength=k).astype(np.float64)
            self.counts_.append(counts)
            train_counts = counts if self.weights_ is None else np.bincount(c, weights=self.weights_, minlength=k)
            for cum, weights in (
                (self._cum_train, np.log1p(train_counts) if log_frequency else train_counts),
                (self._cum_orig, counts),
            ):
                p = weights / weights.sum()
                cum[j, :k] = np.cumsum(p)
                cum[j, k - 1 :] = 1.0
            order = np.argsort(c, kind="stable")
            self._order.append(order)
            self._starts.append(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
            if self.weights_ is not None:
                self._cum_weight.append(np.concatenate([[0.0], np.cumsum(self.weights_[order])]))

    def probabilities(self, column: int, *, training: bool = True) -> np.ndarray:
        """Category probabilities of one discrete column (training: log-frequency; else: frequency)."""
        cum = (self._cum_train if training else self._cum_orig)[column, : self.n_categories_[column]]
        return np.diff(np.concatenate([[0.0], cum]))

    def sample_condition(self, batch_size: int, rng: np.random.Generator, *, training: bool = True) -> ConditionBatch:
        """Draw ``batch_size`` conditions (column uniform, category by (log-)frequency)."""
        if self.n_columns_ == 0:
            empty = np.zeros(batch_size, dtype=np.int64)
            return ConditionBatch(np.zeros((batch_size, 0), dtype=np.float32), empty, empty)
        column = rng.integers(0, self.n_columns_, size=batch_size)
        cum = (self._cum_train if training else self._cum_orig)[column]
        u = rng.random(batch_size)
        category = (cum < u[:, None]).sum(axis=1)
        category = np.minimum(category, self.n_categories_[column] - 1)
        cond = np.zeros((batch_size, self.cond_dim_), dtype=np.float32)
        cond[np.arange(batch_size), self.offsets_[column] + category] = 1.0
        return ConditionBatch(cond, column, category)

    def sample_rows(self, condition: ConditionBatch, rng: np.random.Generator) -> np.ndarray:
        """For each condition, one training row index whose discrete column ``column`` equals ``category``."""
        b = len(condition.column)
        if self.n_columns_ == 0:
            if self.weights_ is not None:
                cum = np.cumsum(self.weights_)
                return np.minimum(np.searchsorted(cum, rng.random(b) * cum[-1], side="right"), self.n_rows_ - 1)
            return rng.integers(0, self.n_rows_, size=b)
        u = rng.random(b)
        rows = np.empty(b, dtype=np.int64)
        for j in np.unique(condition.column):
            sel = condition.column == j
            starts = self._starts[j]
            lo = starts[condition.category[sel]]
            size = starts[condition.category[sel] + 1] - lo
            if self.weights_ is None:
                pick = lo + np.minimum((u[sel] * size).astype(np.int64), np.maximum(size - 1, 0))
            else:  # inverse CDF of the weights of the category's rows: P(row) = w_row / sum of the category's w
                cw = self._cum_weight[j]
                target = cw[lo] + u[sel] * (cw[lo + size] - cw[lo])
                pick = np.clip(np.searchsorted(cw, target, side="right") - 1, lo, np.maximum(lo + size - 1, lo))
            rows[sel] = self._order[j][pick]
        return rows


def conditional_loss(logits: torch.Tensor, condition: ConditionBatch, spans: list[tuple[int, int]]) -> torch.Tensor:
    """Mean cross-entropy between the condition and the generator's logits of the conditioned column.

    ``logits`` is the generator's raw output (torch tensor ``(b, d)``) and ``spans`` the ``(start, end)``
    of each discrete column's block in it, in the sampler's column order.
    """
    import torch
    import torch.nn.functional as F

    if not spans:
        return logits.new_zeros(())
    b = logits.shape[0]
    losses = logits.new_zeros(b)
    column = torch.as_tensor(condition.column, device=logits.device)
    category = torch.as_tensor(condition.category, device=logits.device)
    for j, (start, end) in enumerate(spans):
        sel = column == j
        if bool(sel.any()):
            losses[sel] = F.cross_entropy(logits[sel, start:end], category[sel], reduction="none")
    return losses.mean()
