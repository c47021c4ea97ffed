"""Rankings of training records by how much a generator memorizes them (what DynamicCut prunes by).

A :class:`Ranking` is a table ``train_row, score, rank`` (rank 1 = the record to prune first) with
the fingerprint of the training table it was computed on (:mod:`tabmem.data.fingerprint`), so a
ranking saved from one run can be applied to another generator trained on the *same* table
(transfer, DynamicCut's cross-model experiment) and is refused for any other table. Ranks are
assigned once, by descending score with ties (and NaN scores, ranked last) broken by a seeded
permutation; pruning the top fraction p removes the ``ceil(p N)`` records of rank <= ceil(p N).

Methods (:data:`RANKING_METHODS`), from per-record memorization tracking
(:class:`~tabmem.memorization.dynamics.TrainingDynamics`, DynamicCut's definitions):

* ``intensity`` (DynamicCut, arXiv 2505.22322): mean of each record's ``k`` largest per-epoch
  Mem-AUC_e(x) over the tracked epochs <= the warm-up length (the paper's k and warm-up are not
  published; both are parameters);
* ``count``: the record's replica count c(x) at the last tracked epoch, i.e. of the fully trained
  model when the run tracked its last epoch (the papers' sample-removal experiment; an oracle:
  it needs the full training run DynamicCut is meant to avoid);
* ``first-memorization``: ``1 / FM(x)`` where FM is the first tracked epoch <= the warm-up length
  at which x had a replica (0 if none): earlier = higher;
* ``random``: i.i.d. uniform scores (the control).

Files: :meth:`Ranking.save` writes ``ranking.csv`` (``train_row, score, rank`` plus any extra
columns such as ``pruned``) and a sidecar ``ranking.json`` (method, |train|, fingerprint,
parameters); ``ranking.parquet`` instead, by suffix (a ``.json`` ranking file is refused: its
sidecar would overwrite it). :meth:`Ranking.load` reads both, by suffix; a CSV without its sidecar is accepted only when its
rows are a permutation of ``0..N-1`` for the expected N (the table's identity then cannot be
checked, which :attr:`Ranking.fingerprint` = ``None`` records).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_fraction, check_positive_int, check_random_state
from tabmem._io import jsonable, read_json, write_frame, write_json
from tabmem.errors import ParameterError, TabmemError, name_setting
from tabmem.memorization.dynamics import TrainingDynamics
from tabmem.memorization.replicas import ReplicaResult
from tabmem.memorization.store import load_tracking

__all__ = [
    "RANKING_METHODS",
    "RANKING_SUFFIXES",
    "Ranking",
    "count_ranking",
    "first_memorization_ranking",
    "intensity_ranking",
    "n_to_prune",
    "rank_records",
    "random_ranking",
]

RANKING_METHODS = ("intensity", "count", "first-memorization", "random")
COLUMNS = ["train_row", "score", "rank"]
#: what a ranking file may end in (CSV or Parquet, read and written by suffix)
RANKING_SUFFIXES = (".csv", ".parquet", ".pq")


def n_to_prune(n_train: int, prune: float) -> int:
    """``ceil(p N)``, computed so that float noise does not add a record (``0.1 * 30`` is 3, not 4)."""
    p = check_fraction("prune", prune)
    k = math.ceil(round(p * int(n_train), 9))
    if k >= n_train:
        raise ParameterError(f"prune={prune!r} removes all {n_train} training records; choose a smaller fraction")
    return max(1, k)


@dataclass(frozen=True)
class Ranking:
    """Training records ranked for pruning (module docstring). Build with :meth:`from_scores`."""

    table: pd.DataFrame  # train_row, score, rank; sorted by train_row
    method: str
    fingerprint: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def n_train(self) -> int:
        return len(self.table)

    @classmethod
    def from_scores(
        cls,
        scores: np.ndarray,
        *,
        method: str,
        fingerprint: str | None = None,
        params: dict[str, Any] | None = None,
        random_state: int | None = 0,
    ) -> Ranking:
        """Rank records by descending ``scores`` (NaN last; ties by a permutation seeded with ``random_state``)."""
        s = np.asarray(scores, dtype=np.float64)
        if s.ndim != 1 or len(s) < 2:
            raise ParameterError(f"a ranking needs one score per training record (at least 2), got shape {s.shape}")
        tie = np.random.default_rng(check_random_state(random_state)).permutation(len(s))
        key = np.where(np.isnan(s), -np.inf, s)
        order = np.lexsort((tie, np.isnan(s), -key))  # last key first: score desc, NaN last, then tie-break
        rank = np.empty(len(s), dtype=np.int64)
        rank[order] = np.arange(1, len(s) + 1)
        table = pd.DataFrame({"train_row": np.arange(len(s), dtype=np.int64), "score": s, "rank": rank})
        p = dict(params or {})
        p.setdefault("tie_break_seed", random_state)
        return cls(table, method, fingerprint, p)

    # ------------------------------------------------------------ queries
    def top(self, prune: float) -> np.ndarray:
        """Training rows of rank <= ceil(prune N), sorted by position."""
        k = n_to_prune(self.n_train, prune)
        return np.sort(self.table["train_row"].to_numpy()[self.table["rank"].to_numpy() <= k])

    def pruned_mask(self, prune: float) -> np.ndarray:
        """Boolean mask over training rows: True for the records :meth:`top` removes."""
        mask = np.zeros(self.n_train, dtype=bool)
        mask[self.top(prune)] = True
        return mask

    def overlap(self, other: Ranking, prune: float) -> float:
        """Share of this ranking's top ``prune`` that is also in ``other``'s (chance level: ``prune``)."""
        if other.n_train != self.n_train:
            raise ParameterError(f"rankings of different tables ({self.n_train} vs {other.n_train} records)")
        a, b = self.top(prune), other.top(prune)
        return len(np.intersect1d(a, b)) / len(a)

    def inclusion(self, prune: float) -> np.ndarray:
        """Probability that each record is in the top ``ceil(prune N)`` when ties at the cut are broken
        uniformly at random: 1 above the cut's score, ``m / t`` at it (``m`` of its ``t`` tied records
        are needed), 0 below. The seeded tie-break of :meth:`top` is one draw of this."""
        k = n_to_prune(self.n_train, prune)
        s = self.table["score"].to_numpy(dtype=np.float64)
        key = np.where(np.isnan(s), -np.inf, s)
        cut = np.sort(key)[::-1][k - 1]
        above, at = key > cut, key == cut
        out = above.astype(np.float64)
        out[at] = (k - int(above.sum())) / int(at.sum())
        return out[np.argsort(self.table["train_row"].to_numpy())]

    def expected_overlap(self, other: Ranking, prune: float) -> float:
        """:meth:`overlap` averaged over independent random tie-breaks of both rankings.

        Rankings built with the same ``random_state`` share their tie-break permutation, so records
        tied at both cuts (a count ranking where most records have no replica) fall into both tops
        together and :meth:`overlap` overstates their agreement; this does not (chance level: ``prune``).
        """
        if other.n_train != self.n_train:
            raise ParameterError(f"rankings of different tables ({self.n_train} vs {other.n_train} records)")
        k = n_to_prune(self.n_train, prune)
        return float(np.dot(self.inclusion(prune), other.inclusion(prune)) / k)

    def check_table(self, fingerprint: str | None, n_train: int, *, what: str = "ranking") -> None:
        """Refuse a ranking computed on another table (different fingerprint or size)."""
        if self.n_train != int(n_train):
            raise TabmemError(f"{what} ranks {self.n_train} records but the training table has {n_train} rows")
        if self.fingerprint is not None and fingerprint is not None and self.fingerprint != fingerprint:
            raise TabmemError(
                f"{what} was computed on another training table (fingerprint {self.fingerprint[:12]}... "
                f"vs {fingerprint[:12]}...): a ranking applies only to the table it was computed on"
            )

    # --------------------------------------------------------------- files
    def save(self, path: str | Path, *, extra: dict[str, np.ndarray] | None = None) -> Path:
        """Write ``path`` (CSV: train_row, score, rank and ``extra`` columns) and its ``.json`` sidecar."""
        p = _ranking_path(path)
        table = self.table.copy()
        for k, v in (extra or {}).items():
            table[k] = np.asarray(v)
        write_frame(p, table)
        write_json(
            p.with_suffix(".json"),
            {
                "format": "tabmem-ranking",
                "version": 1,
                "method": self.method,
                "n_train": self.n_train,
                "fingerprint": self.fingerprint,
                "params": jsonable(self.params),
            },
        )
        return p

    @classmethod
    def load(cls, path: str | Path) -> Ranking:
        """Read a ranking written by :meth:`save` (or a CSV with train_row, score, rank; module docstring)."""
        p = Path(path)
        if not p.is_file():
            raise TabmemError(f"ranking file not found: {str(p)!r}")
        parquet = p.suffix.lower() in {".parquet", ".pq"}
        try:
            table = pd.read_parquet(p) if parquet else pd.read_csv(p)
        except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            what = "Parquet" if parquet else "CSV"
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise TabmemError(f"{str(p)!r} is not a readable ranking {what} ({reason})") from None
        missing = [c for c in COLUMNS if c not in table.columns]
        if missing:
            raise TabmemError(f"ranking file {str(p)!r} lacks column(s) {missing} (expected train_row, score, rank)")
        n = len(table)
        rows = pd.to_numeric(table["train_row"], errors="coerce").to_numpy()
        ranks = pd.to_numeric(table["rank"], errors="coerce").to_numpy()
        if n < 2 or np.isnan(rows).any() or not np.array_equal(np.sort(rows), np.arange(n)):
            raise TabmemError(f"ranking file {str(p)!r}: train_row must list every row 0..N-1 exactly once")
        if np.isnan(ranks).any() or not np.array_equal(np.sort(ranks), np.arange(1, n + 1)):
            raise TabmemError(f"ranking file {str(p)!r}: rank must be a permutation of 1..N")
        table = (
            table[COLUMNS]
            .astype({"train_row": np.int64, "score": np.float64, "rank": np.int64})
            .sort_values("train_row")
            .reset_index(drop=True)
        )
        meta_path = p.with_suffix(".json")
        if meta_path.is_file():
            meta = read_json(meta_path)
            if not isinstance(meta, dict) or meta.get("format") not in (None, "tabmem-ranking"):
                raise TabmemError(f"{str(meta_path)!r} is not the sidecar of a tabmem ranking")
            if not isinstance(meta.get("n_train", n), int):
                raise TabmemError(f"{str(meta_path)!r}: n_train must be a whole number, got {meta.get('n_train')!r}")
            if int(meta.get("n_train", n)) != n:
                raise TabmemError(f"{str(meta_path)!r} describes {meta.get('n_train')} records but the CSV has {n}")
            return cls(
                table, str(meta.get("method", "unknown")), meta.get("fingerprint"), dict(meta.get("params") or {})
            )
        return cls(table, "file", None, {"source": str(p)})


def _ranking_path(path: str | Path) -> Path:
    """A ranking file's path: CSV or Parquet, so that its ``.json`` sidecar is another file."""
    p = Path(path)
    if p.suffix.lower() not in RANKING_SUFFIXES:
        raise TabmemError(
            f"a ranking file ends in {' or '.join(RANKING_SUFFIXES)} (its .json sidecar is written beside it), "
            f"got {str(p)!r}"
        )
    return p


# ------------------------------------------------------------------- methods
def intensity_ranking(
    dynamics: TrainingDynamics,
    *,
    top_k: int = 3,
    warmup_epochs: int | None = None,
    fingerprint: str | None = None,
    random_state: int | None = 0,
) -> Ranking:
    """DynamicCut's ranking: mean of the ``top_k`` largest Mem-AUC_e over tracked epochs <= ``warmup_epochs``."""
    k = check_positive_int("top_k", top_k)
    window = _window(dynamics, warmup_epochs)
    scores = dynamics.intensity_score(k, max_epoch=warmup_epochs)
    params = {"top_k": k, "warmup_epochs": warmup_epochs, "tracked_epochs": window}
    return Ranking.from_scores(
        scores, method="intensity", fingerprint=fingerprint, params=params, random_state=random_state
    )


def first_memorization_ranking(
    dynamics: TrainingDynamics,
    *,
    warmup_epochs: int | None = None,
    fingerprint: str | None = None,
    random_state: int | None = 0,
) -> Ranking:
    """``1 / FM(x)`` over tracked epochs <= ``warmup_epochs`` (0 when never memorized there)."""
    window = _window(dynamics, warmup_epochs)
    keep = np.isin(dynamics.epochs, window)
    sub = TrainingDynamics(dynamics.epochs[keep], dynamics.counts[keep], dynamics.mem_auc[keep])
    fm = sub.first_memorization_epoch()
    scores = np.where(np.isnan(fm), 0.0, 1.0 / np.where(np.isnan(fm), 1.0, fm))
    params = {"warmup_epochs": warmup_epochs, "tracked_epochs": window}
    return Ranking.from_scores(
        scores, method="first-memorization", fingerprint=fingerprint, params=params, random_state=random_state
    )


def count_ranking(
    counts: np.ndarray | ReplicaResult | TrainingDynamics,
    *,
    fingerprint: str | None = None,
    random_state: int | None = 0,
) -> Ranking:
    """Final replica counts (a :class:`ReplicaResult`, the last tracked epoch of a dynamics, or an array)."""
    params: dict[str, Any] = {}
    if isinstance(counts, ReplicaResult):
        c = counts.record_counts
    elif isinstance(counts, TrainingDynamics):
        if not len(counts.epochs):
            raise TabmemError("count ranking: the tracking holds no tracked epoch")
        c = counts.counts[-1]
        params["epoch"] = int(counts.epochs[-1])
    else:
        c = np.asarray(counts)
    return Ranking.from_scores(
        np.asarray(c, dtype=np.float64),
        method="count",
        fingerprint=fingerprint,
        params=params,
        random_state=random_state,
    )


def random_ranking(n_train: int, *, fingerprint: str | None = None, random_state: int | None = 0) -> Ranking:
    """Uniform random scores (the control): pruning its top p removes a uniformly random ceil(pN) records."""
    n = check_positive_int("n_train", n_train)
    seed = check_random_state(random_state)
    scores = np.random.default_rng(np.random.SeedSequence([0 if seed is None else seed, 7])).random(n)
    return Ranking.from_scores(
        scores, method="random", fingerprint=fingerprint, params={"seed": seed}, random_state=seed
    )


def rank_records(
    source: Any,
    method: str = "intensity",
    *,
    top_k: int = 3,
    warmup_epochs: int | None = None,
    random_state: int | None = 0,
) -> Ranking:
    """Rank the training records of a tracked run.

    ``source``: a :class:`~tabmem.memorization.tracker.MemorizationTracker` (after ``fit``), a
    tracking directory, or a ``tabmem train`` run directory (its ``tracking/``). ``random`` needs
    only the number of records (``source`` may then also be an int).
    """
    check_choice("method", method, RANKING_METHODS)
    if method == "random" and isinstance(source, (int, np.integer)):
        return random_ranking(int(source), random_state=random_state)
    dynamics, fingerprint = _dynamics_of(source)
    if method == "random":
        return random_ranking(dynamics.n_records, fingerprint=fingerprint, random_state=random_state)
    if method == "intensity":
        return intensity_ranking(
            dynamics, top_k=top_k, warmup_epochs=warmup_epochs, fingerprint=fingerprint, random_state=random_state
        )
    if method == "first-memorization":
        return first_memorization_ranking(
            dynamics, warmup_epochs=warmup_epochs, fingerprint=fingerprint, random_state=random_state
        )
    return count_ranking(dynamics, fingerprint=fingerprint, random_state=random_state)


def _dynamics_of(source: Any) -> tuple[TrainingDynamics, str | None]:
    if hasattr(source, "dynamics") and hasattr(source, "epochs_"):  # a MemorizationTracker
        if not source.epochs_:
            raise TabmemError("rank_records: the tracker has not tracked any epoch (fit a generator with it first)")
        return source.dynamics(), getattr(source, "fingerprint_", None)
    if isinstance(source, (str, Path)):
        p = Path(source)
        if (p / "tracking" / "tracker.json").is_file():
            p = p / "tracking"
        epochs, records, meta = load_tracking(p)
        if not len(epochs):
            raise TabmemError(f"rank_records: {str(p)!r} holds no tracked epoch")
        dyn = TrainingDynamics.from_records(records, epochs["epoch"].astype(int).tolist(), int(meta["n_train"]))
        return dyn, meta.get("fingerprint")
    raise ParameterError(
        f"rank_records: source must be a MemorizationTracker or a tracking/run directory, got {type(source).__name__}"
    )


def _window(dynamics: TrainingDynamics, warmup_epochs: int | None) -> list[int]:
    """Tracked epochs <= warmup_epochs (all when None); at least one is required."""
    if warmup_epochs is not None:
        check_positive_int("warmup_epochs", warmup_epochs)
    epochs = dynamics.epochs if warmup_epochs is None else dynamics.epochs[dynamics.epochs <= warmup_epochs]
    if not len(epochs):
        raise TabmemError(
            f"no tracked epoch <= warmup_epochs={warmup_epochs} (tracked: {dynamics.epochs.tolist()[:10]}); "
            f"track more often ({name_setting('track_every', '--track-every')}) or warm up longer"
        )
    return [int(e) for e in epochs]
