"""Sampling-time rejection of replicas, and the attack that knows the rule.

:class:`RejectionSampler` is fitted once on the training table (a
:class:`~tabmem.memorization.replicas.ReplicaDetector`: the audit's criterion, ``d1/d2 <
threshold`` with the distance the user chose) and then either

* ``sample(generator, n)``: draws from a fitted generator, drops every row the criterion flags as
  a replica of a training row and draws again until ``n`` rows are kept (at most ``max_rounds``
  rounds; a model that writes almost nothing but copies fails in one line), or
* ``filter(synthetic)``: drops the replicas of a table made elsewhere (no top-up).

Both report how many rows were drawn and rejected. Exact copies always count as replicas
(``duplicates="replica"``): a copy of a training row that is duplicated in the table has an
undefined ratio, and the papers' rule would let it through.

The catch: removing near-copies leaves a hole around each member, which an attacker who knows the
rule can look for. :func:`rejection_aware_scores` is that attacker (module docstring of the
function); judge rejection with it and the other membership attacks, never with the replica rate
it optimises.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_number, check_positive_int, check_random_state
from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, validate
from tabmem.errors import NotFittedError, TabmemError
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.neighbors.blocked import DEFAULT_MEMORY_BUDGET
from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.neighbors.index import NeighborIndex

#: the largest draw of one round, in multiples of the rows still missing
MAX_DRAW_FACTOR = 20
ATTACK_MODES = ("hole", "edge")


@dataclass(frozen=True)
class RejectionReport:
    """What rejection did: rows requested, drawn and rejected, rounds, and the criterion used."""

    n_requested: int
    n_drawn: int
    n_rejected: int
    n_kept: int
    rounds: int
    distance: str
    threshold: float

    @property
    def rejection_rate(self) -> float:
        """Share of the scored rows that were replicas (NaN when nothing was drawn)."""
        return self.n_rejected / self.n_drawn if self.n_drawn else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rejection_rate": self.rejection_rate}


class RejectionSampler:
    """Reject synthetic rows that the audit's replica criterion flags (module docstring).

    Parameters
    ----------
    distance, threshold, nan, n_jobs, memory_budget:
        The replica criterion and its search, as :class:`~tabmem.memorization.replicas.ReplicaDetector`
        (default: the audit's, gower and 1/3).
    max_rounds:
        ``sample``: the most draws from the generator (the first of ``n`` rows, then top-ups sized by
        the acceptance rate seen so far).
    """

    def __init__(
        self,
        distance: str = DEFAULT_DISTANCE,
        threshold: float = 1 / 3,
        *,
        max_rounds: int = 10,
        nan: str = "error",
        n_jobs: int | None = None,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
    ) -> None:
        self.distance = distance
        self.threshold = threshold
        self.max_rounds = max_rounds
        self.nan = nan
        self.n_jobs = n_jobs
        self.memory_budget = memory_budget

    def fit(self, train: pd.DataFrame, schema: Schema | None = None) -> "RejectionSampler":
        """Index the training table once (every later call only searches it)."""
        check_positive_int("max_rounds", self.max_rounds)
        if len(train) < 2:
            raise TabmemError(f"rejection needs a training table of at least 2 rows (d1/d2), got {len(train)}")
        self.detector_ = ReplicaDetector(
            self.distance, self.threshold, nan=self.nan, n_jobs=self.n_jobs,  # type: ignore[arg-type]
            memory_budget=self.memory_budget, duplicates="replica",
        ).fit(train, schema)  # fmt: skip
        return self

    def replicas(self, synthetic: pd.DataFrame) -> np.ndarray:
        """One flag per row of ``synthetic``: True where the criterion calls it a replica."""
        if not hasattr(self, "detector_"):
            raise NotFittedError("RejectionSampler is not fitted: call fit(train, schema) first")
        if len(synthetic) == 0:
            return np.zeros(0, dtype=bool)
        result = self.detector_.score(synthetic.reset_index(drop=True), unseen="mismatch", extra="ignore")
        return result.table["is_replica"].to_numpy(bool)

    def filter(self, synthetic: pd.DataFrame) -> tuple[pd.DataFrame, RejectionReport]:
        """``synthetic`` without its replicas (order and index kept), and the report; no top-up."""
        flags = self.replicas(synthetic)
        kept = synthetic[~flags]
        report = RejectionReport(len(synthetic), len(synthetic), int(flags.sum()), len(kept), 1,
                                 self.detector_.distance, float(self.threshold))  # fmt: skip
        return kept, report

    def sample(
        self, generator: Any, n: int, *, random_state: int | None = None, **sample_options: Any
    ) -> tuple[pd.DataFrame, RejectionReport]:
        """``n`` rows of ``generator`` that are not replicas, in draw order, and the report.

        Round 0 is ``generator.sample(n, random_state=random_state)`` itself (when nothing is
        rejected the output is the plain sample, byte for byte); round ``j`` draws with the seed
        ``SeedSequence([random_state, j])``. Same seed, same rows.
        """
        n = check_positive_int("n", n)
        seed = check_random_state(random_state)
        if not hasattr(self, "detector_"):
            raise NotFittedError("RejectionSampler is not fitted: call fit(train, schema) first")
        kept: list[pd.DataFrame] = []
        n_kept = n_drawn = n_rejected = 0
        rounds = 0
        while n_kept < n and rounds < self.max_rounds:
            missing = n - n_kept
            if rounds == 0:
                size, round_seed = n, seed
            else:
                accept = n_kept / n_drawn if n_kept else 1 / MAX_DRAW_FACTOR
                size = min(math.ceil(1.1 * missing / accept) + 1, MAX_DRAW_FACTOR * missing)
                round_seed = None if seed is None else int(np.random.SeedSequence([seed, rounds]).generate_state(1)[0])
            batch = generator.sample(size, random_state=round_seed, **sample_options).reset_index(drop=True)
            flags = self.replicas(batch)
            kept.append(batch[~flags])
            n_drawn += len(batch)
            n_rejected += int(flags.sum())
            n_kept += int((~flags).sum())
            rounds += 1
        report = RejectionReport(n, n_drawn, n_rejected, min(n_kept, n), rounds, self.detector_.distance,
                                 float(self.threshold))  # fmt: skip
        if n_kept < n:
            raise TabmemError(
                f"rejection: after {rounds} rounds ({n_drawn:,} rows drawn) only {n_kept:,} of {n:,} rows are not "
                f"replicas ({100 * report.rejection_rate:.1f}% rejected): the model writes mostly copies of training "
                "rows; raise max_rounds (--max-rounds) or mitigate in training"
            )
        table = pd.concat(kept, ignore_index=True).iloc[:n].reset_index(drop=True)
        return table, report


def rejection_aware_scores(
    synthetic: pd.DataFrame,
    targets: pd.DataFrame,
    reference: pd.DataFrame,
    schema: Schema,
    *,
    distance: str = DEFAULT_DISTANCE,
    threshold: float = 1 / 3,
    mode: str = "hole",
    n_jobs: int | None = 1,
) -> np.ndarray:
    """Membership scores (higher = member) of an attacker who knows the rejection rule.

    The attacker has the synthetic table and real non-member rows (``reference``, the stand-in for
    the other training rows). For each synthetic row ``s`` let ``d_R(s)`` be its distance to the
    closest reference row; were target ``t`` a training row, ``s`` would have been rejected when
    ``d(s, t) / d_R(s) < threshold``. ``m(t) = min_s d(s, t) / d_R(s)`` is then the smallest such
    ratio: a member's rejection zone was emptied, so ``m`` is pushed up to about ``threshold``.

    * ``mode="hole"``: score ``m(t)`` (an empty zone = member);
    * ``mode="edge"``: score ``-|m(t) - threshold|`` (the member's near-copies sit just outside).

    Distances use the encoding fitted on ``reference`` and ``targets`` together (the rows the attacker holds); the cost is ``|S| x |targets|`` distances.
    """
    check_choice("mode", mode, ATTACK_MODES)
    check_number("threshold", threshold, low=0.0, high=1.0, low_open=True)
    known = validate(pd.concat([reference, targets], ignore_index=True), schema, name="reference and targets")
    encoder = TableEncoder(schema).fit(known, nan="error")  # the attacker's rows: reference and targets
    ref = NeighborIndex(distance, n_jobs=n_jobs, nan="error").fit(reference, encoder=encoder)
    queries = ref.validate(synthetic, name="synthetic")
    d_ref = ref.kneighbors(queries, k=1)[1][:, 0]
    tgt = NeighborIndex(distance, n_jobs=n_jobs, nan="error").fit(targets, encoder=encoder)
    idx, dist = tgt.kneighbors(queries, k=len(targets))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dist == 0, 0.0, dist / d_ref[:, None])
    m = np.full(len(targets), np.inf)
    np.minimum.at(m, idx.ravel(), ratio.ravel())
    return m if mode == "hole" else -np.abs(m - threshold)
