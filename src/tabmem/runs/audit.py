"""Replica audit into a directory (``tabmem audit``, the study's ``audit`` step, one distance at a time).

:func:`audit_to_dir` fits a :class:`~tabmem.memorization.replicas.ReplicaDetector` on the
training table, validates the synthetic table (and the holdout) once, scores them, computes the
distance evidence (:func:`tabmem.memorization.evidence.distance_evidence`) and writes::

    DIR/summary.json     the replica rates and their intervals, the heavy tail, the distance evidence
                         and the schema (:meth:`ReplicaResult.summary`)
    DIR/replicas.csv     one row per synthetic row (and holdout row)
    DIR/records.csv      one row per training record: its replica count
    DIR/rare_values.csv  rare-value leakage counts per column

Positions and counts only, never a value. The directory's writer lock is held throughout
(:class:`~tabmem.runs.protocol.RunDirectory`): a second process auditing into the same directory
stops with one line.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pandas as pd

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, ValidatedTable, validate
from tabmem.memorization.evidence import distance_evidence
from tabmem.memorization.replicas import N_BOOTSTRAP, ReplicaDetector, ReplicaResult
from tabmem.memorization.summary import AuditSummary
from tabmem.runs.protocol import AUDIT_RUN, RunDirectory
from tabmem.runs.searches import sharded_searches

__all__ = ["AUDIT_RUN", "audit_to_dir", "validate_audit_tables"]

Table = pd.DataFrame | ValidatedTable
#: ``progress(rows_to_search, training_rows)`` opens the progress display of the neighbour search and
#: yields its per-rows callback (or ``None``: no display)
ProgressFactory = Callable[[int, int], AbstractContextManager[Callable[[int], None] | None]]


def audit_to_dir(
    detector: ReplicaDetector,
    train: Table,
    synthetic: Table,
    schema: Schema,
    out_dir: str | Path,
    *,
    holdout: Table | None = None,
    unseen: str = "error",
    extra: str = "error",
    evidence: bool = True,
    copying_cells: int = 10,
    seed: int | None = 0,
    n_bootstrap: int = N_BOOTSTRAP,
    bootstrap_seed: int = 0,
    timed: bool = False,
    progress: ProgressFactory | None = None,
    executor: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    shards: int | None = None,
) -> AuditSummary:
    """Audit ``synthetic`` against ``train`` with ``detector`` (unfitted: it is fitted here) into ``out_dir``.

    ``holdout`` (real rows never trained on) is scored the same way: the no-memorization
    baseline. ``unseen`` and ``extra`` are the policies of :meth:`ReplicaDetector.validate`;
    tables already validated for this training table (:func:`validate_audit_tables`, to audit
    several distances) are not validated again. With ``evidence``, ``summary.json`` holds the
    distance evidence (data-copying test with ``copying_cells`` k-means cells seeded by ``seed``,
    authenticity, identical matches, NNDR); the rate intervals take ``n_bootstrap`` resamples
    seeded by ``bootstrap_seed``. ``timed`` puts the seconds of fit, search and evidence first
    in the summary. The neighbour searches run sharded on ``executor`` (``"local"``: ``jobs``
    worker processes, none by default; ``"ray"``: Ray tasks, ``jobs`` at once, default all, on the
    cluster at ``address``) in at most ``shards``
    shards (:func:`tabmem.runs.searches.sharded_searches`); the files do not depend on it.
    Returns the summary (what ``summary.json`` holds).
    """
    searches = sharded_searches(executor, jobs=jobs, address=address, shards=shards, threads=_threads(detector))
    with RunDirectory(out_dir, AUDIT_RUN).lock() as run, searches:
        t0 = time.perf_counter()
        detector.fit(train, schema)
        syn, hold = _validated(detector, synthetic, holdout, unseen=unseen, extra=extra)
        result = _score(detector, syn, hold, unseen=unseen, extra=extra, progress=progress)
        found = None
        if evidence:  # the training table's self-search: computed once per table (memorization.selfsearch)
            with (progress or _no_progress)(detector.n_train_, detector.n_train_) as advance:
                found = distance_evidence(
                    detector, result, syn, hold, n_cells=copying_cells, random_state=seed, progress=advance
                )
        seconds = time.perf_counter() - t0 if timed else None
        return result.save(run.path, seconds=seconds, schema=schema.to_dict(), evidence=found,
                           n_bootstrap=n_bootstrap, random_state=bootstrap_seed)  # fmt: skip


def validate_audit_tables(
    train: Table,
    synthetic: Table,
    schema: Schema,
    *,
    holdout: Table | None = None,
    nan: str = "error",
    unseen: str = "error",
    extra: str = "error",
) -> tuple[ValidatedTable, ValidatedTable, ValidatedTable | None]:
    """The training, synthetic and holdout tables validated once as :func:`audit_to_dir` validates them
    (the training table's schema and categories, whatever the distance): pass them to every distance's
    :func:`audit_to_dir`. ``nan`` is the detector's policy."""
    fit_nan = "match" if nan in ("match", "drop") else "error"
    checked = validate(train, schema, name="training", nan=fit_nan)  # type: ignore[arg-type]
    categories = TableEncoder(schema).fit(checked, nan=fit_nan).category_sets()  # type: ignore[arg-type]

    def one(table: Table, name: str) -> ValidatedTable:
        return validate(table, schema, name=name, categories=categories, nan=nan, unseen=unseen, extra=extra)  # type: ignore[arg-type]

    return checked, one(synthetic, "synthetic"), None if holdout is None else one(holdout, "holdout")


def _validated(
    detector: ReplicaDetector, synthetic: Table, holdout: Table | None, *, unseen: str, extra: str
) -> tuple[ValidatedTable, ValidatedTable | None]:
    """Each table validated once, then shared by the replica search and the distance evidence."""
    syn = detector.validate(synthetic, name="synthetic", unseen=unseen, extra=extra)  # type: ignore[arg-type]
    if holdout is None:
        return syn, None
    return syn, detector.validate(holdout, name="holdout", unseen=unseen, extra=extra)  # type: ignore[arg-type]


def _score(
    detector: ReplicaDetector,
    syn: ValidatedTable,
    hold: ValidatedTable | None,
    *,
    unseen: str,
    extra: str,
    progress: ProgressFactory | None,
) -> ReplicaResult:
    n_rows = len(syn) + (len(hold) if hold is not None else 0)
    with (progress or _no_progress)(n_rows, detector.n_train_) as advance:
        return detector.score(syn, holdout=hold, unseen=unseen, extra=extra, progress=advance)  # type: ignore[arg-type]


def _threads(detector: ReplicaDetector) -> int | None:
    """Threads of each sharded search task: the detector's ``n_jobs`` when it names a number, else the pool's rule."""
    n = detector.n_jobs
    return n if isinstance(n, int) and n > 0 else None


@contextlib.contextmanager
def _no_progress(rows: int, n_train: int) -> Iterator[None]:
    yield None
