"""Per-record memorization measured at every tracked epoch of a real training run.

:class:`MemorizationTracker` is a training callback (see :mod:`tabmem.callbacks`):
every ``every`` epochs it samples ``n_samples`` rows (default ``|train|``, as the papers do)
from the model under training and scores them with the core
:class:`~tabmem.memorization.replicas.ReplicaDetector` against the original training table.
Per tracked epoch e and training record x_r it stores (DynamicCut's definitions):

* ``replica_count`` c_e(x_r): synthetic rows whose NN1 is x_r and whose ratio r < threshold;
* the indicator 1_e(x_r) = [c_e(x_r) > 0] (derived: ``replica_count > 0``);
* ``mem_auc`` Mem-AUC_e(x_r) = sum of (1 - r)/|G_e| over synthetic rows whose NN1 is x_r
  (so the per-record values sum to the table's exact Mem-AUC);

and per epoch the table's memorization rate, Mem-AUC (exact and the papers' trapz10) and timings.

Any training loop can feed it, without the callback protocol: ``tracker.start(train, schema)``
binds it to the training table, then ``tracker.observe(epoch, synthetic)`` scores a table the
generator made after that epoch (``tabmem track`` does this for snapshot files, the Hugging Face
callback :mod:`tabmem.integrations.huggingface` for a ``transformers.Trainer``). The callback path
is the same code: ``on_fit_start`` binds the generator's training table and ``on_epoch_end`` samples
and calls :meth:`MemorizationTracker.observe`.

Measuring never changes what is measured: sampling goes through ``gen.sample`` (eval mode,
private RNG, all states restored); the test suite checks that the final weights are identical
with and without the tracker.

Storage (``path``): one Parquet file per tracked epoch holding only the non-zero entries
(``records/epoch=000010.parquet``: train_row, replica_count, mem_auc), plus ``epochs.csv``
(one line per tracked epoch) and ``tracker.json`` (settings, |train| and the training table's fingerprint). Files are written
atomically; after a crash, ``fit(..., resume_from=checkpoint)`` with the same tracker path drops
the epochs after the checkpoint and carries on, so the records equal those of an uninterrupted
run. No raw training values are ever written (only row positions).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_int, check_positive_int, check_random_state
from tabmem._io import read_frame, read_json, reading, write_frame, write_json
from tabmem.callbacks import Callback
from tabmem.callbacks import TrainingRun as TabularGenerator
from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import Schema, ValidatedTable, raw_frame, validate
from tabmem.errors import NotFittedError, TabmemError
from tabmem.memorization.dynamics import TrainingDynamics
from tabmem.memorization.replicas import ReplicaDetector, ReplicaResult
from tabmem.memorization.store import EPOCH_COLUMNS, concat_records, load_tracking
from tabmem.neighbors.distances import DEFAULT_DISTANCE

__all__ = ["MemorizationTracker", "load_tracking", "EPOCH_COLUMNS"]


class MemorizationTracker(Callback):
    """Track per-record memorization every ``every`` epochs (see module docstring).

    Parameters
    ----------
    every:
        Track epochs that are multiples of ``every`` (and the last epoch when ``track_last``).
    n_samples:
        Rows sampled per tracked epoch; ``None`` = |train| (the papers' |G| = |D|).
    distance, threshold:
        Passed to :class:`ReplicaDetector` (defaults: ``gower`` and the papers' 1/3; ``fang2024`` reproduces the papers).
    path:
        Directory for the appendable on-disk records (``None``: memory only).
    holdout:
        Real rows never trained on; scored once against the training table so every epoch's rate
        can be read next to the holdout baseline (``holdout_memorization_rate_``).
    random_state:
        Seed of the tracker's own sampling (epoch e uses a stream derived from it and e).
    keep_last_sample:
        Keep the synthetic table of the last tracked epoch in ``last_sample_`` (used by the CLI
        to write ``synthetic.csv`` without sampling twice).
    keep_samples:
        Keep every tracked epoch's synthetic table in ``samples_`` (``{epoch: table}``; memory grows
        with the tracked epochs): what a snapshot-tracked run of the same samples reads back.
    """

    order = 10  # before progress bars (they show "mem_rate"), before checkpoints (order 100)

    def __init__(
        self,
        every: int = 1,
        n_samples: int | None = None,
        *,
        distance: str = DEFAULT_DISTANCE,
        threshold: float = 1 / 3,
        path: str | Path | None = None,
        holdout: pd.DataFrame | None = None,
        random_state: int = 0,
        track_last: bool = True,
        keep_last_sample: bool = False,
        keep_samples: bool = False,
        n_jobs: int | None = None,
    ):
        check_positive_int("MemorizationTracker: every", every)
        check_positive_int("MemorizationTracker: n_samples", n_samples, allow_none=True)
        if not (0 < float(threshold) <= 1):
            raise TabmemError(f"MemorizationTracker: threshold must be in (0, 1], got {threshold!r}")
        check_random_state(random_state, "MemorizationTracker: random_state")
        self.every = int(every)
        self.n_samples = n_samples
        self.distance = distance
        self.threshold = float(threshold)
        self.path = Path(path) if path is not None else None
        self.holdout = holdout
        self.random_state = int(random_state)
        self.track_last = track_last
        self.keep_last_sample = keep_last_sample
        self.keep_samples = keep_samples
        self.samples_: dict[int, pd.DataFrame] = {}
        self.n_jobs = n_jobs
        self.epochs_: list[dict[str, Any]] = []
        self._records: dict[int, pd.DataFrame] = {}
        self.last_sample_: pd.DataFrame | None = None
        self.last_result_: ReplicaResult | None = None
        self._fingerprint: str | None = None
        self.fingerprint_: str | None = None
        self.n_train_: int | None = None

    # ---------------------------------------------------------------- binding and scoring
    def start(
        self,
        train: pd.DataFrame | ValidatedTable,
        schema: Schema | None = None,
        *,
        start_epoch: int = 0,
    ) -> MemorizationTracker:
        """Bind the tracker to the training table, for :meth:`observe` from any training loop.

        ``train`` is validated against ``schema`` (inferred when None) as a generator's ``fit``
        validates it, so its fingerprint (``tracker.json``) is the one a tabmem generator records.
        ``start_epoch`` > 0 resumes: tracked epochs after it are dropped from the store (a
        training loop resumed from a checkpoint of that epoch). Returns the tracker."""
        if schema is None:
            schema = train.schema if isinstance(train, ValidatedTable) else Schema.infer(train)
        table = validate(train, schema, name="training", nan="error")
        if len(table) < 2:
            raise TabmemError(f"MemorizationTracker: the training table needs at least 2 rows, got {len(table)}")
        check_int("MemorizationTracker: start_epoch", start_epoch, low=0)
        self._bind(table, schema, table_fingerprint(table), int(start_epoch))
        return self

    def observe(
        self,
        epoch: int,
        synthetic: pd.DataFrame | ValidatedTable,
        *,
        logs: dict[str, Any] | None = None,
        sample_seconds: float = 0.0,
        name: str = "synthetic",
    ) -> dict[str, Any]:
        """Score ``synthetic`` (rows a generator made after epoch ``epoch``) as a tracked epoch.

        Writes the epoch's per-record records, its line of ``epochs.csv`` (returned) and, with
        ``logs``, adds ``mem_rate`` and ``mem_auc`` to it. Epochs must increase from one call to
        the next; :meth:`start` (or a tabmem generator's ``fit``) binds the training table first.
        ``name`` names the table in validation errors (a snapshot's file)."""
        if not hasattr(self, "detector_") or getattr(self, "n_train_", None) is None:
            raise NotFittedError(
                "MemorizationTracker: bind it to the training table first (tracker.start(train, schema), "
                "or pass it as a callback to a tabmem generator's fit)"
            )
        epoch = check_int("MemorizationTracker: epoch", epoch, low=1)
        if self.epochs_ and epoch <= int(self.epochs_[-1]["epoch"]):
            raise TabmemError(
                f"MemorizationTracker: epoch {epoch} is not after the last tracked epoch {self.epochs_[-1]['epoch']}"
            )
        t1 = time.perf_counter()
        result = self.detector_.score(synthetic, name=name)
        t2 = time.perf_counter()
        counts = result.record_counts
        auc = result.record_mem_auc
        nz = np.flatnonzero((counts > 0) | (auc > 0))
        records = pd.DataFrame(
            {
                "train_row": nz.astype(np.int64),
                "replica_count": counts[nz].astype(np.int32),
                "mem_auc": auc[nz].astype(np.float64),
            }
        )
        row = {
            "epoch": int(epoch),
            "n_samples": int(len(synthetic)),
            "memorization_rate": result.memorization_rate,
            "mem_auc": result.mem_auc,
            "mem_auc_trapz10": result.mem_auc_trapz10,
            "n_replicas": int(counts.sum()),
            "n_records_memorized": int((counts > 0).sum()),
            "sample_seconds": float(sample_seconds),
            "score_seconds": t2 - t1,
        }
        self._records[int(epoch)] = records
        if self.path is not None:
            write_frame(self.path / "records" / f"epoch={epoch:06d}.parquet", records)
        row["tracker_seconds"] = time.perf_counter() - t2
        self.epochs_.append(row)
        if self.path is not None:
            self._write_epochs()
        if self.keep_last_sample:
            self.last_sample_ = synthetic if isinstance(synthetic, pd.DataFrame) else raw_frame(synthetic)
        if self.keep_samples:
            self.samples_[int(epoch)] = synthetic if isinstance(synthetic, pd.DataFrame) else raw_frame(synthetic)
        self.last_result_ = result
        if logs is not None:
            logs["mem_rate"] = row["memorization_rate"]
            logs["mem_auc"] = row["mem_auc"]
        return row

    def _bind(self, train: ValidatedTable, schema: Schema, fingerprint: str, start: int) -> None:
        """Fit the detector on ``train`` (once per table), open the store at epoch ``start``."""
        if self._fingerprint != fingerprint or not hasattr(self, "detector_"):
            self.detector_ = ReplicaDetector(self.distance, self.threshold, n_jobs=self.n_jobs).fit(train, schema)
            self._fingerprint = fingerprint
            self.holdout_memorization_rate_ = float("nan")
            self.holdout_mem_auc_ = float("nan")
            if self.holdout is not None:
                hold = self.detector_.score(self.holdout, name="holdout", unseen="mismatch")
                self.holdout_memorization_rate_ = hold.memorization_rate
                self.holdout_mem_auc_ = hold.mem_auc
        self.fingerprint_ = fingerprint  # identity of the tracked training table (tabmem.data.fingerprint)
        self.n_train_ = int(len(train))
        if self.path is not None:
            self._open_store(start)
        else:  # in memory: a resumed fit drops what was tracked after the checkpoint
            self.epochs_ = [e for e in self.epochs_ if e["epoch"] <= start] if start else []
            self._records = {e: r for e, r in self._records.items() if e <= start} if start else {}
        self.samples_ = {e: r for e, r in self.samples_.items() if e <= start} if start else {}

    # ---------------------------------------------------------------- callback hooks
    def on_fit_start(self, gen: TabularGenerator) -> None:
        self._bind(gen.training_table_, gen.schema_, gen.fingerprint_, int(gen.epoch_))

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        if not self.tracks(epoch, int(getattr(gen, "epochs", -1))):
            return None
        t0 = time.perf_counter()
        synthetic = gen.sample(int(self.n_samples or gen.n_train_), random_state=self.sample_seed(epoch))
        self.observe(epoch, synthetic, logs=logs, sample_seconds=time.perf_counter() - t0)
        return None

    def sample_seed(self, epoch: int) -> int:
        """The seed of the sample drawn at ``epoch`` (a function of ``random_state`` and the epoch only)."""
        return int(np.random.SeedSequence([self.random_state, int(epoch)]).generate_state(1)[0])

    def tracks(self, epoch: int, epochs: int) -> bool:
        """Whether ``epoch`` of a run of ``epochs`` epochs is tracked."""
        return epoch % self.every == 0 or (self.track_last and epoch == epochs)

    # -------------------------------------------------------------- storage
    def _open_store(self, start: int) -> None:
        assert self.path is not None
        rec_dir = self.path / "records"
        rec_dir.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": "tabmem-tracking",
            "version": 1,
            "n_train": int(self.n_train_),
            "fingerprint": self.fingerprint_,
            "every": self.every,
            "n_samples": self.n_samples,
            "distance": self.distance,
            "threshold": self.threshold,
            "random_state": self.random_state,
            "holdout_memorization_rate": self.holdout_memorization_rate_,
            "holdout_mem_auc": self.holdout_mem_auc_,
        }
        meta_path = self.path / "tracker.json"
        if start > 0 and meta_path.is_file():
            old = read_json(meta_path, require=("n_train",))
            with reading(meta_path):
                old_n = int(old["n_train"])
            if old_n != int(self.n_train_):
                raise TabmemError(
                    f"MemorizationTracker: {str(self.path)!r} tracks a table of {old.get('n_train')} rows, not {self.n_train_}"
                )
        write_json(meta_path, meta)
        # a fresh fit starts over; a resumed fit keeps epochs <= start and drops later ones
        keep: dict[int, pd.DataFrame] = {}
        for f in sorted(rec_dir.glob("epoch=*.parquet")):
            e = int(f.stem.split("=")[1])
            if start == 0 or e > start:
                f.unlink()
            else:
                keep[e] = read_frame(f)
        for f in rec_dir.glob(".*.tmp*"):
            f.unlink()
        self._records = keep
        ep_path = self.path / "epochs.csv"
        if start > 0 and ep_path.is_file():
            old_epochs = read_frame(ep_path)
            with reading(ep_path):
                self.epochs_ = [
                    r for r in old_epochs.to_dict("records") if int(r["epoch"]) <= start and int(r["epoch"]) in keep
                ]
        else:
            self.epochs_ = []
        self._write_epochs()

    def _write_epochs(self) -> None:
        assert self.path is not None
        frame = pd.DataFrame(self.epochs_, columns=EPOCH_COLUMNS)
        write_frame(self.path / "epochs.csv", frame)

    # -------------------------------------------------------------- results
    @property
    def history_(self) -> pd.DataFrame:
        """One row per tracked epoch (EPOCH_COLUMNS)."""
        return pd.DataFrame(self.epochs_, columns=EPOCH_COLUMNS)

    @property
    def records_(self) -> pd.DataFrame:
        """Long table of the non-zero entries: epoch, train_row, replica_count, mem_auc."""
        return concat_records(self._records)

    def dynamics(self) -> TrainingDynamics:
        """A :class:`~tabmem.memorization.dynamics.TrainingDynamics` over what was tracked."""
        return TrainingDynamics.from_records(self.records_, [e["epoch"] for e in self.epochs_], self.n_train_)
