"""Track the synthetic snapshots any generator wrote during training into a run directory (``tabmem track``).

A generator trained by another tool (SDV, synthcity, a ``transformers.Trainer``, a script) writes a
synthetic table at several epochs; :func:`track_to_dir` scores each one with
:meth:`MemorizationTracker.observe <tabmem.memorization.tracker.MemorizationTracker.observe>`
(the code behind ``tabmem train --track-every``) and writes the files of a tracked training run::

    DIR/config.json      the settings: the generator's label, the snapshots, distance, seed, schema, fingerprint
    DIR/snapshots.csv    epoch, file, sha256, bytes of every snapshot (what identifies a track run)
    DIR/tracking/        per-record memorization records (epochs.csv, records/, tracker.json)
    DIR/synthetic.csv    the final epoch's snapshot (the final audit's table)
    DIR/records.csv      per training record: replicas in synthetic.csv and Mem-AUC share
    DIR/summary.json     the final audit (as ``tabmem train``'s: rate, holdout baseline, evidence)
    DIR/dynamics.json    Top vs Non-top training-dynamics comparison
    DIR/trajectories.csv per tracked epoch, Top vs Non-top Mem-AUC and memorized fractions

so ``tabmem rank --run DIR``, ``tabmem report DIR`` and ``tabmem attack --run DIR`` read it as they
read a training run. There is no ``model.pt``, ``checkpoint.pt`` or ``history.csv``: a track run is
its own run type (:data:`~tabmem.runs.protocol.TRACK_RUN`, which ``extends`` the training run's
files), so ``tabmem train --out DIR`` refuses it rather than resuming a model that does not exist.

The epoch of a snapshot is the last integer in its file name (``samples_epoch10.csv``, ``ep-0010.parquet``);
epochs count from 1 and must differ. ``resume=True`` continues a stopped run (the epochs scored are
kept) and accepts snapshots added since, when the old ones are unchanged (same files, same hashes);
``overwrite=True`` starts again, deleting only a track run's files.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tabmem._io import read_frame, reading, write_frame, write_json
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError, name_setting
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.runs.protocol import TRACK_RUN, RunDirectory, flag_text
from tabmem.runs.train import Warnings, final_audit, validated_tables, write_dynamics

__all__ = ["Snapshot", "TrackRun", "find_snapshots", "track_to_dir", "TRACK_RUN", "SNAPSHOT_SUFFIXES"]

#: what a snapshot file may end in
SNAPSHOT_SUFFIXES = (".csv", ".parquet", ".pq")
#: settings a resumed run must share (the snapshots may grow)
CONFIG_KEYS = ("model", "distance", "seed", "fingerprint", "duplicates", "holdout")


@dataclass(frozen=True)
class Snapshot:
    """One synthetic table a generator wrote after epoch ``epoch``."""

    epoch: int
    path: Path


def _option() -> str:
    return name_setting("snapshots", "--snapshots")


def snapshot_epoch(path: str | os.PathLike) -> int:
    """The epoch of a snapshot file: the last integer in its name (without the table suffix)."""
    p = Path(path)
    stem = p.name[: -len(p.suffix)] if p.suffix.lower() in SNAPSHOT_SUFFIXES else p.name
    numbers = re.findall(r"\d+", stem)
    if not numbers:
        raise TabmemError(
            f"{_option()}: {str(p)!r} has no epoch number in its name (the epoch is the last integer in the "
            "file name, as in samples_epoch10.csv)"
        )
    return int(numbers[-1])


def find_snapshots(snapshots: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Snapshot]:
    """The snapshot files of a glob pattern (``**`` recurses) or a list of files, by epoch.

    Refused, in one line naming the file: a pattern that matches no file, a file that is not CSV or
    Parquet, a name without an epoch number, epoch 0, and two files of one epoch."""
    if isinstance(snapshots, (str, os.PathLike)):
        pattern = str(snapshots)
        paths = [Path(p) for p in sorted(glob.glob(os.path.expanduser(pattern), recursive=True))]
        paths = [p for p in paths if p.is_file()]
        if not paths:
            raise TabmemError(f"{_option()}: {pattern!r} matches no file")
    else:
        paths = [Path(p) for p in snapshots]
        if not paths:
            raise TabmemError(f"{_option()}: no snapshot files given")
        for p in paths:
            if not p.is_file():
                raise TabmemError(f"{_option()}: snapshot file not found: {str(p)!r}")
    found: dict[int, Path] = {}
    for p in paths:
        if p.suffix.lower() not in SNAPSHOT_SUFFIXES:
            raise TabmemError(f"{_option()}: {str(p)!r} is not a CSV or Parquet file (.csv, .parquet)")
        epoch = snapshot_epoch(p)
        if epoch < 1:
            raise TabmemError(
                f"{_option()}: {str(p)!r} is epoch 0: epochs count from 1 (a table made before training is not tracked)"
            )
        if epoch in found:
            raise TabmemError(f"{_option()}: {str(found[epoch])!r} and {str(p)!r} are both epoch {epoch}")
        found[epoch] = p
    return [Snapshot(e, found[e]) for e in sorted(found)]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_snapshot(read: Callable[[Path], pd.DataFrame], snap: Snapshot) -> pd.DataFrame:
    try:
        frame = read(snap.path)
    except TabmemError as exc:
        text = str(exc)
        raise TabmemError(text if str(snap.path) in text else f"snapshot {str(snap.path)!r}: {text}") from None
    if len(frame) == 0:
        raise TabmemError(f"snapshot {str(snap.path)!r} (epoch {snap.epoch}): the table is empty")
    return frame


class TrackRun:
    """A track run written as snapshots arrive: :func:`track_to_dir` for files, the Hugging Face callback
    (:mod:`tabmem.integrations.huggingface`) for tables sampled during training.

    ``TrackRun(train, schema, out_dir, ...)`` validates the tables and fits the replica detector;
    :meth:`check` validates a snapshot before anything is written; :meth:`open` takes the writer lock,
    writes ``config.json`` (refusing or resuming a run there, as every run type does) and opens
    ``tracking/`` (returning the last epoch already scored); :meth:`observe` scores one snapshot;
    :meth:`close` writes the final audit of the last one, ``dynamics.json`` and ``summary.json`` and
    releases the lock (:meth:`abort` releases it without them)."""

    def __init__(
        self,
        train: pd.DataFrame,
        schema: Schema,
        out_dir: str | os.PathLike,
        *,
        holdout: pd.DataFrame | None = None,
        distance: str = DEFAULT_DISTANCE,
        generator: str = "external",
        seed: int = 0,
        q: float = 0.10,
        source: dict[str, Any] | None = None,
        duplicates: str = "papers",
        on_warning: Callable[[str], None] | None = None,
        evidence: bool = True,
    ) -> None:
        self.table, self.holdout = validated_tables(train, holdout, schema)
        self.schema, self.generator, self.seed, self.q = schema, generator, int(seed), q
        self.distance, self.duplicates, self.evidence, self.source = distance, duplicates, evidence, source or {}
        self.tracker = MemorizationTracker(every=1, distance=distance, keep_last_sample=True, random_state=seed)
        self.tracker.start(self.table, schema)  # fits the detector once (in memory until open)
        self.run = RunDirectory(out_dir, TRACK_RUN)
        self.warn = Warnings(on_warning)
        self.manifest = pd.DataFrame(columns=["epoch", "file", "sha256", "bytes"])
        self._lock: contextlib.ExitStack | None = None
        self._last_name = "synthetic"

    @property
    def path(self) -> Path:
        return self.run.path

    def check(self, synthetic: pd.DataFrame, name: str) -> None:
        """Validate a snapshot against the training table (columns, values, categories): one error naming it."""
        self.tracker.detector_.validate(synthetic, name=name)

    def open(
        self,
        snapshots: Any,
        manifest: pd.DataFrame | None = None,
        *,
        resume: bool = False,
        overwrite: bool = False,
    ) -> int:
        """Lock the directory, write ``config.json`` (``snapshots``: what the run scores, JSON) and
        ``snapshots.csv`` (``manifest``), open ``tracking/``; returns the last epoch already scored (0: none)."""
        if resume and overwrite:
            raise TabmemError(flag_text("resume", "overwrite") + " exclude each other")
        config = {"model": self.generator, "seed": self.seed, "distance": self.distance,
                  "duplicates": self.duplicates, "holdout": self.holdout is not None,
                  "fingerprint": self.tracker.fingerprint_, "n_train": len(self.table), "snapshots": snapshots,
                  "source": self.source, "schema": self.schema.to_dict()}  # fmt: skip
        stack = contextlib.ExitStack()
        stack.enter_context(self.run.lock())
        try:
            resuming = self.run.start(config, resume=resume, overwrite=overwrite, compare=_settings_differ,
                                      warn=self.warn)  # fmt: skip
            if manifest is not None:
                self.manifest = manifest.reset_index(drop=True)
            write_frame(self.path / "snapshots.csv", self.manifest)
            done = _done_epoch(self.path, self.manifest) if resuming else 0
            self.tracker.path = self.path / "tracking"
            self.tracker.start(self.table, self.schema, start_epoch=done)  # the same table: the detector is kept
        except BaseException:
            stack.close()
            raise
        self._lock = stack
        return done

    def observe(self, epoch: int, synthetic: pd.DataFrame, *, name: str, file: str | None = None) -> dict[str, Any]:
        """Score ``synthetic`` as tracked epoch ``epoch`` (``file``: a snapshot file to list in snapshots.csv
        when the run's manifest does not hold it yet)."""
        if self._lock is None:
            raise TabmemError("TrackRun: open() the run directory first")
        row = self.tracker.observe(epoch, synthetic, name=name)
        self._last_name = name
        if file is not None and int(epoch) not in set(self.manifest["epoch"].astype(int)):
            p = Path(file)
            entry = {"epoch": int(epoch), "file": str(p), "sha256": _sha256(p), "bytes": p.stat().st_size}
            self.manifest = pd.concat([self.manifest, pd.DataFrame([entry])], ignore_index=True)
            write_frame(self.path / "snapshots.csv", self.manifest)
        return row

    def close(self, last: tuple[pd.DataFrame, str] | None = None) -> dict[str, Any]:
        """The final audit of the last snapshot (``last``: its table and name, when the tracker did not just
        score it: a resumed run), ``dynamics.json`` and ``summary.json``; releases the lock. Returns the summary."""
        if self._lock is None:
            raise TabmemError("TrackRun: open() the run directory first")
        try:
            tracker = self.tracker
            if not tracker.epochs_:
                raise TabmemError(f"{str(self.path)!r}: no snapshot was scored, so there is no final audit")
            if last is None and tracker.last_sample_ is not None:
                synthetic, result, name = tracker.last_sample_, tracker.last_result_, self._last_name
            elif last is not None:
                (synthetic, name), result = last, None
            else:
                raise TabmemError(f"{str(self.path)!r}: the last snapshot's table is needed for the final audit")
            summary, counts = final_audit(self.path, synthetic, result, self.table, self.schema, tracker,
                                          self.holdout, distance=self.distance, seed=self.seed,
                                          duplicates=self.duplicates, evidence=self.evidence, name=name)  # fmt: skip
            epochs = [int(e["epoch"]) for e in tracker.epochs_]
            summary.update(model=self.generator, epochs=epochs[-1], seed=self.seed, n_train=len(self.table),
                           n_snapshots=len(epochs), train_seconds=None, final_loss=None)  # fmt: skip
            for message in summary.get("warnings", []):
                self.warn(message)
            summary["warnings"] = self.warn.messages
            write_dynamics(self.path, tracker, summary, counts, self.q)
            write_json(self.path / "summary.json", summary)
            return summary
        finally:
            self.abort()

    def abort(self) -> None:
        """Release the writer lock (the files written so far stay: ``resume`` continues them)."""
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.close()


def track_to_dir(
    train: pd.DataFrame,
    schema: Schema,
    snapshots: str | os.PathLike | Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    holdout: pd.DataFrame | None = None,
    distance: str = DEFAULT_DISTANCE,
    generator: str = "external",
    seed: int = 0,
    q: float = 0.10,
    resume: bool = False,
    overwrite: bool = False,
    source: dict[str, Any] | None = None,
    duplicates: str = "papers",
    on_warning: Callable[[str], None] | None = None,
    evidence: bool = True,
    read: Callable[[Path], pd.DataFrame] | None = None,
) -> dict[str, Any]:
    """Score the ``snapshots`` (a glob pattern or files) of a generator trained on ``train`` into
    ``out_dir`` (layout in the module docstring); returns the summary.

    ``generator`` labels the generator in the config (the report's "generator"); ``holdout`` gives
    the final audit's baseline, ``seed`` its bootstrap intervals and distance evidence; ``read(path)``
    reads a snapshot (default :func:`tabmem.data.io.read_table`; the command line applies its
    ``--sep``/``--encoding``). Every snapshot is checked (name, epoch, columns, values) before any
    file is written."""
    if resume and overwrite:
        raise TabmemError(flag_text("resume", "overwrite") + " exclude each other")
    if read is None:
        from tabmem.data.io import read_table as read
    found = find_snapshots(snapshots)
    track = TrackRun(train, schema, out_dir, holdout=holdout, distance=distance, generator=generator, seed=seed,
                     q=q, source=source, duplicates=duplicates, on_warning=on_warning, evidence=evidence)  # fmt: skip
    for snap in found:
        track.check(_read_snapshot(read, snap), _name(snap))
    manifest = pd.DataFrame(
        {
            "epoch": [s.epoch for s in found],
            "file": [str(s.path) for s in found],
            "sha256": [_sha256(s.path) for s in found],
            "bytes": [s.path.stat().st_size for s in found],
        }
    )
    snapshots_config = manifest[["epoch", "file", "sha256"]].to_dict("records")
    done = track.open(snapshots_config, manifest, resume=resume, overwrite=overwrite)
    try:
        for snap in found:
            if snap.epoch > done:
                track.observe(snap.epoch, _read_snapshot(read, snap), name=_name(snap))
    except BaseException:
        track.abort()
        raise
    last = found[-1]
    scored_last = track.tracker.epochs_ and track.tracker.epochs_[-1]["epoch"] == last.epoch and done < last.epoch
    return track.close(None if scored_last else (_read_snapshot(read, last), _name(last)))


def _name(snap: Snapshot) -> str:
    return f"snapshot {str(snap.path)!r}"


def _settings_differ(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The settings of a resumed run that differ; the snapshots may grow, the old ones unchanged."""
    diff = [k for k in CONFIG_KEYS if old.get(k) != new.get(k)]
    before = old.get("snapshots") or []
    if before != new["snapshots"][: len(before)]:
        diff.append("snapshots (a file scored before changed or is gone)")
    return diff


def _done_epoch(out: Path, manifest: pd.DataFrame) -> int:
    """The last epoch a stopped run scored (0: none), when every snapshot up to it was scored."""
    path = out / "tracking" / "epochs.csv"
    if not path.is_file():
        return 0
    epochs = read_frame(path)
    with reading(path):
        scored = {int(e) for e in epochs["epoch"]}
    done = 0
    for e in manifest["epoch"].astype(int):
        if e not in scored or not (out / "tracking" / "records" / f"epoch={e:06d}.parquet").is_file():
            break
        done = e
    return done
