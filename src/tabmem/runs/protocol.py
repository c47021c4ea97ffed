"""The one run-directory protocol: what a run owns, one writer at a time, resume or start again.

Every command that writes a directory (``tabmem train``, ``audit``, ``attack``, ``dynamiccut``,
the shadows of an attack, a study's steps) goes through :class:`RunDirectory`:

* **ownership**: a run type (:class:`RunKind`) lists the files and folders it writes; ``overwrite``
  deletes exactly those (and the leftovers of their atomic writes), never anything else in the
  directory;
* **one writer**: :meth:`RunDirectory.lock` holds an exclusive ``flock`` on ``DIR/.lock`` while the
  run writes (removed when it ends), so a second process writing the same directory stops with one
  line instead of corrupting the first;
* **resume**: :meth:`RunDirectory.start` compares the settings of the run in the directory with the
  new ones (``config.json``); ``resume`` continues a run whose progress marker exists (a
  checkpoint, or a finished stage), starts again from scratch when the run stopped before its first
  marker, and refuses other settings naming the keys that differ;
* **stages**: :meth:`RunDirectory.stage` says whether a sub-directory stage is finished (its
  ``done`` file exists), resumable, or to be started again;
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

__all__ = ["RunKind", "RunDirectory", "flag_text"]

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
    config: str | None = "config.json"  # None: the settings live a level up


@dataclass(frozen=True)
class StageState:
    """A stage sub-directory: finished (reuse it), resumable (from its progress marker), or new."""

    done: bool
    resume: bool


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

    def remove(self) -> None:
        """Delete the files and folders this run type owns (and their atomic-write leftovers), nothing else."""
        for p in self.owned():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()

    # ------------------------------------------------------------------ one writer
    @contextlib.contextmanager
    def lock(self) -> Iterator[RunDirectory]:
        """Hold ``DIR/.lock`` exclusively while the block runs (one writer per directory); the file is
        removed when the block ends, so a finished run leaves nothing of the lock behind."""
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
                        f"no checkpoint yet in {str(out)!r} (the run stopped before its first one): "
                        "starting from scratch"
                    )
                self.remove()
        elif has_run:
            staged = kind.progress == kind.config  # each stage resumes itself: no checkpoint of the run's own
            state = f"a {kind.name} run"
            if not staged and not marker.exists():
                state += " that stopped before its first checkpoint"
            scratch = "" if staged else " (from scratch when there is no checkpoint)"
            raise TabmemError(
                f"{str(out)!r} already holds {state}: pass {flag_text('resume')} to continue it{scratch} or "
                f"{flag_text('overwrite')} to start again, or choose another output directory"
            )
        out.mkdir(parents=True, exist_ok=True)
        if write_config and kind.config:
            write_json(out / kind.config, config)
        return resuming

    def stage(self, name: str, kind: RunKind, *, done: Sequence[str] = ("summary.json",)) -> StageState:
        """The state of stage sub-directory ``name`` (a run of ``kind``): finished when every file of
        ``done`` exists, resumable when its progress marker (and config) exist; an attempt that stopped
        before its first marker is deleted (its own files only) and starts again."""
        sub = RunDirectory(self.path / name, kind)
        if all((sub.path / f).is_file() for f in done):
            return StageState(done=True, resume=False)
        progressed = any(sub.path.glob(kind.progress)) if sub.path.is_dir() else False
        if progressed and (kind.config is None or (sub.path / kind.config).is_file()):
            return StageState(done=False, resume=True)
        if sub.holds_run():
            sub.remove()
        return StageState(done=False, resume=False)


def _differing(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [k for k in new if old.get(k) != new.get(k)]
