"""The one run-directory protocol: what a run owns, one writer at a time, resume or start again.

Every command that writes a directory (``tabmem train``, ``audit``, ``attack``, ``dynamiccut``, ``risk``,
the shadows of an attack, a study's steps) goes through :class:`RunDirectory`:

* **ownership**: a run type (:class:`RunKind`) lists the files and folders it writes; ``overwrite``
  deletes exactly those (and the leftovers of their atomic writes), never anything else in the
  directory;
* **run types**: every run type that writes a directory is declared here (:data:`RUN_KINDS`), each
  with the files that only it writes (its ``signature``); :meth:`RunDirectory.check_kind` refuses a
  directory that holds another run type, naming it, before anything is written (:meth:`lock` calls
  it), and :func:`check_out_file` refuses an output file that would replace a file of the run
  directory it sits in;
* **one writer**: :meth:`RunDirectory.lock` holds an exclusive ``flock`` on ``DIR/.lock`` while the
  run writes (removed when it ends), so a second process writing the same directory stops with one
  line instead of corrupting the first;
* **resume**: :meth:`RunDirectory.start` compares the settings of the run in the directory with the
  new ones (``config.json``); ``resume`` continues a run whose progress marker exists (a
  checkpoint, or a finished stage), starts again from scratch when the run stopped before its first
  marker, and refuses other settings naming the keys that differ;
* **stages**: :meth:`RunDirectory.stage` says whether a sub-directory stage is finished (its
  ``done`` file exists and, with ``intact``, is not damaged), resumable, or to be started again (a
  damaged finished stage is deleted, its own files only, and made again);
* **atomic state**: ``config.json`` and every output are written with :mod:`tabmem._io`'s atomic
  writes, so a kill leaves the old file or the whole new one.

Messages name library parameters (``resume=True``); the command line shows them as flags
(:func:`tabmem.errors.suggest`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabmem._io import read_json, write_json
from tabmem.errors import TabmemError, suggest

__all__ = [
    "RunKind",
    "RunDirectory",
    "RUN_KINDS",
    "check_out_file",
    "kinds_in",
    "flag_text",
    "TRAIN_RUN",
    "TRACK_RUN",
    "AUDIT_RUN",
    "ATTACK_RUN",
    "DYNAMICCUT_RUN",
    "SHADOWS_RUN",
    "SHADOW_RUN",
    "QUALITY_RUN",
    "AUGMENT_RUN",
    "RISK_RUN",
    "STUDY_RUN",
]

LOCK_FILE = ".lock"


def flag_text(*names: str) -> str:
    """``--resume`` under the command line, ``resume=True`` in the library (joined with 'and')."""
    return " and ".join(suggest(f"{n}=True", f"--{n}") or f"{n}=True" for n in names)


@dataclass(frozen=True)
class RunKind:
    """A run type: its name in messages, the files it owns and the file that marks resumable progress."""

    name: str
    files: tuple[str, ...]  # names or glob patterns ("[0-9][0-9][0-9]")
    progress: str = "checkpoint.pt"  # a name or glob pattern
    progress_name: str = "checkpoint"  # what the progress marker is, in messages
    config: str | None = "config.json"  # None: the settings live a level up
    signature: tuple[str, ...] = ()  # names or patterns only this run type writes: they identify it
    config_keys: tuple[str, ...] = ()  # keys its config file always has (identifies a run with no signature file yet)
    proof: str | None = None  # the JSON file holding config_keys, when it is not the config file (a summary)
    #: the run type whose signature files this one also writes (a track run holds a training run's
    #: ``tracking/``): where this run type's own signature is found, those files are its own
    extends: str | None = None

    def found_in(self, path: str | os.PathLike) -> list[str]:
        """The signature files of this run type in directory ``path`` (empty: not this run type)."""
        p = Path(path)
        if not self.signature or not p.is_dir():
            return []
        return sorted(q.name for q in p.iterdir() if any(fnmatch.fnmatchcase(q.name, s) for s in self.signature))

    @property
    def title(self) -> str:
        """``a training run``, ``an audit run``."""
        return f"{'an' if self.name[:1] in 'aeiou' else 'a'} {self.name} run"


# ---------------------------------------------------------------------- the run types
#: files and folders of a training run (what ``overwrite=True`` deletes; nothing else is touched)
RUN_FILES = (
    "config.json",
    "checkpoint.pt",
    "model.pt",
    "history.csv",
    "synthetic.csv",
    "summary.json",
    "dynamics.json",
    "trajectories.csv",
    "records.csv",
    "tracking",
    "selection",
    "last_model.pt",
)
TRAIN_RUN = RunKind(
    "training",
    RUN_FILES,
    signature=("model.pt", "checkpoint.pt", "history.csv", "tracking"),
    config_keys=("model", "seed"),
)
AUDIT_RUN = RunKind(
    "audit",
    files=("summary.json", "replicas.csv", "records.csv", "rare_values.csv"),
    progress="summary.json",
    signature=("replicas.csv", "rare_values.csv"),
    config_keys=("n_train", "n_synthetic", "distance", "threshold"),
    proof="summary.json",
)
ATTACK_RUN = RunKind(
    "attack",
    files=("summary.json", "scores.csv", "roc.csv", "risk.csv", "shadows"),
    progress="shadows",
    signature=("scores.csv", "roc.csv", "risk.csv", "shadows"),
    config_keys=("_meta",),
    proof="summary.json",
)
DYNAMICCUT_RUN = RunKind(
    "dynamiccut",
    ("config.json", "warmup", "ranking.csv", "ranking.json", "retrain", "synthetic.csv", "summary.json"),
    progress="config.json",
    signature=("warmup", "retrain", "ranking.csv", "ranking.json"),
    config_keys=("model", "seed", "prune_by"),
)
SHADOWS_RUN = RunKind(
    "shadows", ("plan.json", "[0-9][0-9][0-9]"), progress="plan.json", config="plan.json", signature=("plan.json",)
)
SHADOW_RUN = RunKind("shadow", ("checkpoint.pt", "synthetic.parquet", "done.json"), config=None)
QUALITY_RUN = RunKind(
    "quality",
    ("summary.json", "*_breakdown.csv"),
    progress="summary.json",
    config=None,
    signature=("*_breakdown.csv",),
    config_keys=("goals", "n_real", "n_synthetic"),
    proof="summary.json",
)
AUGMENT_RUN = RunKind(
    "augment",
    ("augmented.csv", "summary.json"),
    progress="summary.json",
    config=None,
    signature=("augmented.csv",),
    config_keys=("method", "n_original", "n_new"),
    proof="summary.json",
)
#: the three WP29 risks (``tabmem risk``): one shot, its summary keys prove a run of it
RISK_RUN = RunKind(
    "risk",
    ("summary.json", "inference.csv"),
    progress="summary.json",
    config=None,
    signature=("inference.csv",),
    config_keys=("singling_out_univariate", "singling_out_multivariate", "linkability", "inference"),
    proof="summary.json",
)
#: synthetic snapshots of any generator tracked into a training run's files (``tabmem track``):
#: no model, checkpoint or history; ``snapshots.csv`` (the files, their epochs and hashes) identifies it;
#: ``samples/`` holds the tables the Hugging Face callback sampled
TRACK_RUN = RunKind(
    "track",
    ("config.json", "snapshots.csv", "tracking", "samples", "synthetic.csv", "records.csv", "summary.json",
     "dynamics.json", "trajectories.csv"),
    progress="tracking",
    progress_name="scored snapshot",
    signature=("snapshots.csv",),
    config_keys=("snapshots", "fingerprint"),
    extends="training",
)  # fmt: skip
#: a study directory (its writer lock; cells resume step by step)
STUDY_RUN = RunKind(
    "study",
    ("manifest.json", "results.parquet", "study.toml", "cells", "steps"),
    progress="manifest.json",
    signature=("manifest.json", "results.parquet", "study.toml", "cells", "steps"),
)
#: every run type that writes a directory of its own (the ones with a signature are recognised)
RUN_KINDS = (
    TRAIN_RUN, TRACK_RUN, AUDIT_RUN, ATTACK_RUN, DYNAMICCUT_RUN, SHADOWS_RUN, QUALITY_RUN, AUGMENT_RUN, RISK_RUN,
    STUDY_RUN,
)  # fmt: skip


def kinds_in(path: str | os.PathLike) -> list[RunKind]:
    """The run types whose signature files are in directory ``path`` (a run type that another found
    one ``extends`` counts only for signature files that the extending run type does not own)."""
    found = [k for k in RUN_KINDS if k.found_in(path)]
    kinds = []
    for kind in found:
        own = kind.found_in(path)
        for other in found:
            if other.extends == kind.name:
                own = [n for n in own if not RunDirectory(path, other)._owns(n)]
        if own:
            kinds.append(kind)
    return kinds


def check_out_file(path: str | os.PathLike, option: str = "path") -> Path:
    """Refuse an output file that would replace a file of the run directory it sits in (a run's
    ``summary.json``, ``records.csv``, ...): one line naming the run type and the file."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    for kind in kinds_in(parent):
        if RunDirectory(parent, kind)._owns(p.name):
            raise TabmemError(
                f"{option}: {str(p)!r} would replace the {p.name} of the tabmem {kind.name} run in "
                f"{str(parent)!r}: choose another file name or directory"
            )
    return p


@dataclass(frozen=True)
class StageState:
    """A stage sub-directory: finished (reuse it), resumable (from its progress marker), or new."""

    done: bool
    resume: bool
    damaged: str | None = None  # a finished stage found damaged (its files were deleted): what was wrong


class RunDirectory:
    """One run directory of kind ``kind`` at ``path`` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike, kind: RunKind) -> None:
        self.path = Path(path)
        self.kind = kind

    # ------------------------------------------------------------------ ownership
    def owned(self) -> list[Path]:
        """The files and folders of this run type in the directory."""
        if not self.path.is_dir():
            return []
        return [p for p in sorted(self.path.iterdir()) if self._owns(p.name)]

    def _owns(self, name: str) -> bool:
        base = name.split(".tmp")[0].lstrip(".") if name.startswith(".") and ".tmp" in name else name
        return any(fnmatch.fnmatchcase(base, pattern) for pattern in self.kind.files)

    def holds_run(self) -> bool:
        """Whether any file this run type owns is in the directory."""
        return bool(self.owned())

    def proven_own(self) -> bool:
        """Whether the files of this run type's names in the directory can be proven to be a run of
        it: a signature file, a config file with the run type's keys, or only atomic-write leftovers.
        (Run types declaring neither signature nor config keys prove nothing: always True.)"""
        kind = self.kind
        if not kind.signature and not kind.config_keys:
            return True
        if kind.found_in(self.path):
            return True
        owned = self.owned()
        if all(p.name.startswith(".") and ".tmp" in p.name for p in owned):
            return True
        proof = kind.proof or kind.config
        if proof and kind.config_keys and (self.path / proof).is_file():
            try:
                doc = read_json(self.path / proof)
            except TabmemError:
                return False
            return isinstance(doc, dict) and all(k in doc for k in kind.config_keys)
        return False

    def check_own(self) -> None:
        """Refuse a directory holding files of this run type's names that no run of it can be shown to
        have written (:meth:`proven_own`): another tool's ``summary.json`` is never replaced."""
        if self.holds_run() and not self.proven_own():
            names = ", ".join(p.name for p in self.owned()[:3])
            proof = self.kind.proof or self.kind.config or "config"
            raise TabmemError(
                f"{str(self.path)!r} holds {names}, which no tabmem {self.kind.name} run can be shown to have "
                f"written (no {', '.join(self.kind.signature[:2])}, no {proof} of one): tabmem deletes or "
                "replaces only its own files; choose another output directory"
            )

    def remove(self) -> None:
        """Delete the files and folders this run type owns (and their atomic-write leftovers), nothing else."""
        for p in self.owned():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()

    def check_kind(self) -> None:
        """Refuse a directory that holds another run type (its signature files are there), naming it:
        nothing of it may be replaced or deleted by this run."""
        for other in kinds_in(self.path):
            if other.name != self.kind.name:
                found = ", ".join(other.found_in(self.path)[:3])
                raise TabmemError(
                    f"{str(self.path)!r} holds a tabmem {other.name} run ({found}), not {self.kind.title}: "
                    "choose another output directory"
                )

    # ------------------------------------------------------------------ one writer
    @contextlib.contextmanager
    def lock(self) -> Iterator[RunDirectory]:
        """Hold ``DIR/.lock`` exclusively while the block runs (one writer per directory); the file is
        removed when the block ends, so a finished run leaves nothing of the lock behind. A directory
        holding another run type, or files of this one's names that no run of it wrote, is refused first
        (:meth:`check_kind`, :meth:`check_own`), before anything is written."""
        self.check_kind()
        self.check_own()
        try:
            import fcntl
        except ModuleNotFoundError:  # pragma: no cover - not POSIX: no lock
            yield self
            return
        path = self.path / LOCK_FILE
        while True:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                fh = open(path, "a+")
            except OSError as exc:
                raise TabmemError(f"cannot write to {str(self.path)!r} ({exc.strerror or exc})") from None
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.seek(0)
                pid = fh.read().strip() or "?"
                fh.close()
                raise TabmemError(
                    f"{str(self.path)!r} is being written by another tabmem process (pid {pid}): wait for it to "
                    "finish, or choose another output directory"
                ) from None
            try:  # the holder before us may have removed the file between our open and our lock: lock anew
                same = os.stat(path).st_ino == os.fstat(fh.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(str(os.getpid()))
            fh.flush()
            yield self
        finally:
            path.unlink(missing_ok=True)
            fh.close()

    # ------------------------------------------------------------------ resume or start again
    def start(
        self,
        config: dict[str, Any],
        *,
        resume: bool = False,
        overwrite: bool = False,
        compare: Callable[[dict[str, Any], dict[str, Any]], Sequence[str]] | None = None,
        warn: Callable[[str], None] | None = None,
        write_config: bool = True,
    ) -> bool:
        """Prepare the directory for a run with ``config``; returns whether the run resumes.

        ``compare(old, new)`` lists the settings that differ (default: every key of ``config``).
        Without ``resume`` or ``overwrite``, a directory that holds this run type is an error saying
        which to pass. ``config`` is then written to ``config.json`` (atomically).
        """
        if resume and overwrite:
            raise TabmemError(flag_text("resume", "overwrite") + " exclude each other")
        kind, out = self.kind, self.path
        marker = out / kind.progress
        has_run = self.holds_run()
        self.check_own()
        resuming = False
        if overwrite and has_run:
            self.remove()
        elif resume and marker.exists():
            old_path = out / kind.config if kind.config else None
            old = read_json(old_path) if old_path is not None and old_path.is_file() else {}
            diff = list((compare or _differing)(old, config))
            if diff:
                raise TabmemError(
                    f"{flag_text('resume')}: settings differ from the run in {str(out)!r}: {', '.join(diff)} "
                    f"(start a new run with {flag_text('overwrite')} or another output directory)"
                )
            resuming = True
        elif resume:
            if has_run:
                if warn is not None:
                    warn(
                        f"no {kind.progress_name} yet in {str(out)!r} (the run stopped before its first one): "
                        "starting from scratch"
                    )
                self.remove()
        elif has_run:
            staged = kind.progress == kind.config  # each stage resumes itself: no checkpoint of the run's own
            state = f"a {kind.name} run"
            if not staged and not marker.exists():
                state += f" that stopped before its first {kind.progress_name}"
            scratch = "" if staged else f" (from scratch when there is no {kind.progress_name})"
            raise TabmemError(
                f"{str(out)!r} already holds {state}: pass {flag_text('resume')} to continue it{scratch} or "
                f"{flag_text('overwrite')} to start again, or choose another output directory"
            )
        out.mkdir(parents=True, exist_ok=True)
        if write_config and kind.config:
            write_json(out / kind.config, config)
        return resuming

    def stage(
        self,
        name: str,
        kind: RunKind,
        *,
        done: Sequence[str] = ("summary.json",),
        intact: Callable[[Path], str | None] | None = None,
    ) -> StageState:
        """The state of stage sub-directory ``name`` (a run of ``kind``): finished when every file of
        ``done`` exists (and ``intact(dir)``, if given, finds nothing wrong), resumable when its
        progress marker (and config) exist; an attempt that stopped before its first marker, or a
        finished one found damaged (``StageState.damaged`` says how), is deleted (its own files only)
        and starts again."""
        sub = RunDirectory(self.path / name, kind)
        if all((sub.path / f).is_file() for f in done):
            problem = intact(sub.path) if intact is not None else None
            if problem is None:
                return StageState(done=True, resume=False)
            sub.remove()
            return StageState(done=False, resume=False, damaged=problem)
        progressed = any(sub.path.glob(kind.progress)) if sub.path.is_dir() else False
        if progressed and (kind.config is None or (sub.path / kind.config).is_file()):
            return StageState(done=False, resume=True)
        if sub.holds_run():
            sub.remove()
        return StageState(done=False, resume=False)


def _differing(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [k for k in new if old.get(k) != new.get(k)]
