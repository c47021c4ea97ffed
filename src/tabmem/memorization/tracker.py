"""Per-record memorization measured at every tracked epoch of a real training run.

:class:`MemorizationTracker` is a training callback (see :mod:`tabmem.generators.callbacks`):
every ``every`` epochs it samples ``n_samples`` rows (default ``|train|``, as the papers do)
from the model under training and scores them with the core
:class:`~tabmem.memorization.replicas.ReplicaDetector` against the original training table.
Per tracked epoch e and training record x_r it stores (DynamicCut brief §2.7):

* ``replica_count`` c_e(x_r): synthetic rows whose NN1 is x_r and whose ratio r < threshold;
* the indicator 1_e(x_r) = [c_e(x_r) > 0] (derived: ``replica_count > 0``);
* ``mem_auc`` Mem-AUC_e(x_r) = sum of (1 - r)/|G_e| over synthetic rows whose NN1 is x_r
  (so the per-record values sum to the table's exact Mem-AUC);

and per epoch the table's memorization rate, Mem-AUC (exact and the papers' trapz10) and timings.

Measuring never changes what is measured: sampling goes through ``gen.sample`` (eval mode,
private RNG, all states restored); the test suite checks that the final weights are identical
with and without the tracker.

Storage (``path``): one Parquet file per tracked epoch holding only the non-zero entries
(``records/epoch=000010.parquet``: train_row, replica_count, mem_auc), plus ``epochs.csv``
(one line per tracked epoch) and ``tracker.json`` (settings, |train|). Files are written
atomically; after a crash, ``fit(..., resume_from=checkpoint)`` with the same tracker path drops
the epochs after the checkpoint and carries on, so the records equal those of an uninterrupted
run. No raw training values are ever written (only row positions).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tabmem.errors import TabmemError
from tabmem.generators.callbacks import Callback
from tabmem.memorization.replicas import ReplicaDetector, ReplicaResult

if TYPE_CHECKING:  # pragma: no cover
    from tabmem.generators.base import TabularGenerator

__all__ = ["MemorizationTracker", "load_tracking", "EPOCH_COLUMNS"]

EPOCH_COLUMNS = [
    "epoch",
    "n_samples",
    "memorization_rate",
    "mem_auc",
    "mem_auc_trapz10",
    "n_replicas",
    "n_records_memorized",
    "sample_seconds",
    "score_seconds",
    "tracker_seconds",
]


class MemorizationTracker(Callback):
    """Track per-record memorization every ``every`` epochs (see module docstring).

    Parameters
    ----------
    every:
        Track epochs that are multiples of ``every`` (and the last epoch when ``track_last``).
    n_samples:
        Rows sampled per tracked epoch; ``None`` = |train| (the papers' |G| = |D|).
    distance, threshold:
        Passed to :class:`ReplicaDetector` (defaults: the papers' ``fang2024`` and 1/3).
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
    """

    order = 10  # before progress bars (they show "mem_rate"), before checkpoints (order 100)

    def __init__(
        self,
        every: int = 1,
        n_samples: int | None = None,
        *,
        distance: str = "fang2024",
        threshold: float = 1 / 3,
        path: str | Path | None = None,
        holdout: pd.DataFrame | None = None,
        random_state: int = 0,
        track_last: bool = True,
        keep_last_sample: bool = False,
        n_jobs: int | None = None,
    ):
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
            raise TabmemError(f"MemorizationTracker: every must be a positive integer, got {every!r}")
        if n_samples is not None and (
            isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1
        ):
            raise TabmemError(f"MemorizationTracker: n_samples must be a positive integer or None, got {n_samples!r}")
        if not (0 < float(threshold) <= 1):
            raise TabmemError(f"MemorizationTracker: threshold must be in (0, 1], got {threshold!r}")
        if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
            raise TabmemError(f"MemorizationTracker: random_state must be a non-negative integer, got {random_state!r}")
        self.every = int(every)
        self.n_samples = n_samples
        self.distance = distance
        self.threshold = float(threshold)
        self.path = Path(path) if path is not None else None
        self.holdout = holdout
        self.random_state = int(random_state)
        self.track_last = track_last
        self.keep_last_sample = keep_last_sample
        self.n_jobs = n_jobs
        self.epochs_: list[dict[str, Any]] = []
        self._records: dict[int, pd.DataFrame] = {}
        self.last_sample_: pd.DataFrame | None = None
        self.last_result_: ReplicaResult | None = None
        self._fingerprint: str | None = None

    # ---------------------------------------------------------------- hooks
    def on_fit_start(self, gen: TabularGenerator) -> None:
        train = gen.training_table_
        if self._fingerprint != gen.fingerprint_ or not hasattr(self, "detector_"):
            self.detector_ = ReplicaDetector(self.distance, self.threshold, n_jobs=self.n_jobs).fit(train, gen.schema_)
            self._fingerprint = gen.fingerprint_
            self.holdout_memorization_rate_ = float("nan")
            self.holdout_mem_auc_ = float("nan")
            if self.holdout is not None:
                hold = self.detector_.score(self.holdout, name="holdout", unseen="mismatch")
                self.holdout_memorization_rate_ = hold.memorization_rate
                self.holdout_mem_auc_ = hold.mem_auc
        self.n_train_ = gen.n_train_
        start = int(gen.epoch_)
        if self.path is not None:
            self._open_store(start)
        else:  # in memory: a resumed fit drops what was tracked after the checkpoint
            self.epochs_ = [e for e in self.epochs_ if e["epoch"] <= start] if start else []
            self._records = {e: r for e, r in self._records.items() if e <= start} if start else {}

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        last = self.track_last and epoch == int(getattr(gen, "epochs", -1))
        if epoch % self.every != 0 and not last:
            return None
        t0 = time.perf_counter()
        n = int(self.n_samples or gen.n_train_)
        seed = int(np.random.SeedSequence([self.random_state, epoch]).generate_state(1)[0])
        synthetic = gen.sample(n, random_state=seed)
        t1 = time.perf_counter()
        result = self.detector_.score(synthetic)
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
            "n_samples": n,
            "memorization_rate": result.memorization_rate,
            "mem_auc": result.mem_auc,
            "mem_auc_trapz10": result.mem_auc_trapz10,
            "n_replicas": int(counts.sum()),
            "n_records_memorized": int((counts > 0).sum()),
            "sample_seconds": t1 - t0,
            "score_seconds": t2 - t1,
        }
        self._records[int(epoch)] = records
        if self.path is not None:
            _atomic_parquet(records, self.path / "records" / f"epoch={epoch:06d}.parquet")
        row["tracker_seconds"] = time.perf_counter() - t2
        self.epochs_.append(row)
        if self.path is not None:
            self._write_epochs()
        if self.keep_last_sample:
            self.last_sample_ = synthetic
        self.last_result_ = result
        logs["mem_rate"] = row["memorization_rate"]
        logs["mem_auc"] = row["mem_auc"]
        return None

    # -------------------------------------------------------------- storage
    def _open_store(self, start: int) -> None:
        assert self.path is not None
        rec_dir = self.path / "records"
        rec_dir.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": "tabmem-tracking",
            "version": 1,
            "n_train": int(self.n_train_),
            "every": self.every,
            "n_samples": self.n_samples,
            "distance": self.distance,
            "threshold": self.threshold,
            "random_state": self.random_state,
            "holdout_memorization_rate": _json_float(self.holdout_memorization_rate_),
            "holdout_mem_auc": _json_float(self.holdout_mem_auc_),
        }
        meta_path = self.path / "tracker.json"
        if start > 0 and meta_path.is_file():
            old = json.loads(meta_path.read_text())
            if int(old.get("n_train", -1)) != int(self.n_train_):
                raise TabmemError(
                    f"MemorizationTracker: {str(self.path)!r} tracks a table of {old.get('n_train')} rows, not {self.n_train_}"
                )
        _atomic_text(json.dumps(meta, indent=2), meta_path)
        # a fresh fit starts over; a resumed fit keeps epochs <= start and drops later ones
        keep: dict[int, pd.DataFrame] = {}
        for f in sorted(rec_dir.glob("epoch=*.parquet")):
            e = int(f.stem.split("=")[1])
            if start == 0 or e > start:
                f.unlink()
            else:
                keep[e] = pd.read_parquet(f)
        for f in rec_dir.glob(".*.tmp*"):
            f.unlink()
        self._records = keep
        ep_path = self.path / "epochs.csv"
        if start > 0 and ep_path.is_file():
            old_epochs = pd.read_csv(ep_path)
            self.epochs_ = [
                r for r in old_epochs.to_dict("records") if int(r["epoch"]) <= start and int(r["epoch"]) in keep
            ]
        else:
            self.epochs_ = []
        self._write_epochs()

    def _write_epochs(self) -> None:
        assert self.path is not None
        frame = pd.DataFrame(self.epochs_, columns=EPOCH_COLUMNS)
        _atomic_text(frame.to_csv(index=False), self.path / "epochs.csv")

    # -------------------------------------------------------------- results
    @property
    def history_(self) -> pd.DataFrame:
        """One row per tracked epoch (EPOCH_COLUMNS)."""
        return pd.DataFrame(self.epochs_, columns=EPOCH_COLUMNS)

    @property
    def records_(self) -> pd.DataFrame:
        """Long table of the non-zero entries: epoch, train_row, replica_count, mem_auc."""
        return _concat_records(self._records)

    def dynamics(self):
        """A :class:`~tabmem.memorization.dynamics.TrainingDynamics` over what was tracked."""
        from tabmem.memorization.dynamics import TrainingDynamics

        return TrainingDynamics.from_records(self.records_, [e["epoch"] for e in self.epochs_], self.n_train_)


def load_tracking(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Read a tracker directory: (epochs table, long records table, tracker.json settings)."""
    p = Path(path)
    meta_path = p / "tracker.json"
    if not meta_path.is_file():
        raise TabmemError(f"{str(p)!r} holds no memorization tracking (tracker.json missing)")
    meta = json.loads(meta_path.read_text())
    epochs = pd.read_csv(p / "epochs.csv") if (p / "epochs.csv").is_file() else pd.DataFrame(columns=EPOCH_COLUMNS)
    recs = {int(f.stem.split("=")[1]): pd.read_parquet(f) for f in sorted((p / "records").glob("epoch=*.parquet"))}
    tracked = set(epochs["epoch"].astype(int)) if len(epochs) else set()
    recs = {e: r for e, r in recs.items() if e in tracked}
    return epochs, _concat_records(recs), meta


def _concat_records(recs: dict[int, pd.DataFrame]) -> pd.DataFrame:
    cols = ["epoch", "train_row", "replica_count", "mem_auc"]
    if not recs:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(cols, ["int64", "int64", "int32", "float64"])})
    frames = [r.assign(epoch=np.int64(e))[cols] for e, r in sorted(recs.items())]
    return pd.concat(frames, ignore_index=True)


def _json_float(v: float) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


def _atomic_parquet(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def _atomic_text(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
