"""Running cells: what one worker does with one task (a group of cells that share their first step).

Layout of a study directory::

    DIR/cells/<cell>/config.json    the resolved cell (axes, seed, every step's config and key)
    DIR/cells/<cell>/status.json    state (running, done, failed), host, pid, per-step seconds, error
    DIR/cells/<cell>/error.log      the traceback of a failed cell
    DIR/cells/<cell>/<step>         -> ../../steps/<step>/<key>   (relative links)
    DIR/steps/<step>/<key>/         the step's outputs, plus step.json (done marker) and metrics.json

A step directory with ``step.json`` is finished and is reused by every cell that links to it; one
without is an interrupted attempt (resumed or restarted, :mod:`tabmem.studies.steps.base`).
A failing cell writes one line into ``status.json`` and the traceback into ``error.log``, and the
task goes on with its next cell (a step that failed is not retried by the other cells of the
task: they fail with the same line).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import socket
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tabmem._checks import limit_threads
from tabmem._io import read_json, write_json, write_text
from tabmem.errors import TabmemError
from tabmem.runs.protocol import RunDirectory, RunKind
from tabmem.studies.inputs import load_inputs
from tabmem.studies.steps.base import STEPS, StepContext
from tabmem.studies.study import Cell, import_plugins

__all__ = ["cell_state", "one_line", "run_cell", "run_task", "thread_limits"]

#: a step directory's record: written when the step finished (the protocol's stage marker)
STEP_RECORD = "step.json"
STEP_FIELDS = ("name", "key", "seconds")  # what a step record must hold to count as finished
#: the study's step directories as run types of the run protocol: a step directory is the study's own
STEPS_RUN = RunKind("study steps", ("*",), progress="*", config=None)
RESUMABLE_STEP = RunKind("study step", ("*",), progress="*", config=None)  # resumes from what it left
ONE_SHOT_STEP = RunKind("study step", ("*",), progress=STEP_RECORD, config=None)  # starts again


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def one_line(exc: BaseException) -> str:
    """An exception as one line (multi-line messages joined with '; ')."""
    text = "; ".join(part.strip(" -") for part in str(exc).splitlines() if part.strip())
    return text if isinstance(exc, TabmemError) else f"{type(exc).__name__}: {text}"


@contextlib.contextmanager
def thread_limits(threads: int) -> Iterator[None]:
    """Limit torch and BLAS/OpenMP pools to ``threads`` (restored afterwards): :func:`limit_threads`
    with torch loaded first, so that the steps' torch models get the limit too."""
    with contextlib.suppress(ModuleNotFoundError):  # torch is an extra
        import torch  # noqa: F401
    with limit_threads(threads):
        yield


def step_dir(out: Path, name: str, key: str) -> Path:
    return out / "steps" / name / key


def step_record_damage(sdir: Path) -> str | None:
    """What is wrong with the record ``step.json`` of a finished step (None: nothing; a damaged
    record makes the step unfinished: the cell runs it again)."""
    try:
        read_json(sdir / STEP_RECORD, require=STEP_FIELDS)
    except TabmemError as exc:
        return str(exc)
    return None


def cell_state(out: Path, cell: Cell) -> str:
    """``done`` (status done and every step finished), ``failed``, ``partial`` (started) or ``new``."""
    cdir = out / "cells" / cell.id
    status_path = cdir / "status.json"
    if not status_path.is_file():
        return "new"
    try:
        state = read_json(status_path, require=("state",))["state"]
    except TabmemError:
        return "partial"
    if state == "done" and all(step_record_damage(step_dir(out, s.name, s.key)) is None for s in cell.steps):
        return "done"
    return "failed" if state == "failed" else "partial"


def _link(cdir: Path, name: str, target: Path) -> None:
    link = cdir / name
    rel = os.path.relpath(target, cdir)
    if link.is_symlink():
        if os.readlink(link) == rel:
            return
        link.unlink()
    elif link.exists():
        shutil.rmtree(link) if link.is_dir() else link.unlink()
    os.symlink(rel, link, target_is_directory=True)


def run_cell(
    cell: Cell,
    out: Path,
    *,
    data_dir: str | None,
    threads: int,
    failed_steps: dict[str, str] | None = None,
    run: str | None = None,
) -> dict[str, Any]:
    """Run (or finish) one cell in ``out``; returns ``{"id", "state", "error", "seconds"}``."""
    failed_steps = {} if failed_steps is None else failed_steps
    cdir = out / "cells" / cell.id
    cdir.mkdir(parents=True, exist_ok=True)
    write_json(cdir / "config.json", cell.to_dict())
    status: dict[str, Any] = {
        "id": cell.id,
        "name": cell.name,
        "state": "running",
        "run": run,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "threads": threads,
        "started": _now(),
        "steps": {},
    }
    write_json(cdir / "status.json", status)
    (cdir / "error.log").unlink(missing_ok=True)
    t0 = time.perf_counter()
    current = None
    try:
        data = load_inputs(cell.info.dataset, data_dir)
        artifacts: dict[str, Path] = {}
        for spec in cell.steps:
            current = spec.name
            cls = STEPS.get(spec.name)
            sdir = step_dir(out, spec.name, spec.key)
            if spec.key in failed_steps:
                raise TabmemError(failed_steps[spec.key])
            marker = sdir / STEP_RECORD
            state = RunDirectory(sdir.parent, STEPS_RUN).stage(
                spec.key,
                RESUMABLE_STEP if cls.resumable else ONE_SHOT_STEP,
                done=(STEP_RECORD,),
                intact=step_record_damage,
            )
            if state.done:
                status["steps"][spec.name] = {
                    "key": spec.key,
                    "state": "reused",
                    "seconds": read_json(marker)["seconds"],
                }
            else:
                started = state.resume  # an interrupted attempt of a resumable step; others start again
                sdir.mkdir(parents=True, exist_ok=True)
                _link(cdir, spec.name, sdir)
                status["steps"][spec.name] = {"key": spec.key, "state": "running", "resumed": started}
                write_json(cdir / "status.json", status)
                ctx = StepContext(
                    out=sdir,
                    data=data,
                    cell=cell.info,
                    config=spec.config,
                    artifacts=dict(artifacts),
                    threads=threads,
                    resume=started,
                )
                ts = time.perf_counter()
                try:
                    rows = cls(spec.config).run(ctx)
                except Exception as exc:
                    failed_steps[spec.key] = f"{spec.name}: {one_line(exc)}"
                    raise
                seconds = time.perf_counter() - ts
                write_json(sdir / "metrics.json", list(rows or []))
                write_json(
                    marker,
                    {
                        "name": spec.name,
                        "key": spec.key,
                        "config": spec.config,
                        "seconds": seconds,
                        "resumed": started,
                        "host": socket.gethostname(),
                        "finished": _now(),
                    },
                )
                status["steps"][spec.name] = {"key": spec.key, "state": "done", "seconds": seconds, "resumed": started}
            _link(cdir, spec.name, sdir)
            for artifact, filename in cls.produces.items():
                artifacts[artifact] = sdir / filename
        status.update(state="done", error=None)
    except Exception as exc:
        line = one_line(exc)
        if current and not line.startswith(f"{current}:"):
            line = f"{current}: {line}"
        status.update(state="failed", error=line, failed_step=current)
        write_text(cdir / "error.log", f"cell {cell.name} ({cell.id}), step {current}\n\n{traceback.format_exc()}")
    status.update(seconds=time.perf_counter() - t0, finished=_now())
    write_json(cdir / "status.json", status)
    return {"id": cell.id, "state": status["state"], "error": status.get("error"), "seconds": status["seconds"]}


def run_task(payload: dict[str, Any], on_cell: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Worker entry point: the cells of one task, in order, under the task's thread limit.

    ``payload``: ``{"out": DIR, "cells": [Cell.to_dict()...], "threads": n, "data_dir": str|None,
    "plugins": [...]}``. Returns one outcome per cell (:func:`run_cell`).
    """
    import_plugins(payload.get("plugins", []))
    out = Path(payload["out"])
    threads = int(payload["threads"])
    failed: dict[str, str] = {}
    outcomes = []
    with thread_limits(threads):
        for d in payload["cells"]:
            outcome = run_cell(
                Cell.from_dict(d),
                out,
                data_dir=payload.get("data_dir"),
                threads=threads,
                failed_steps=failed,
                run=payload.get("run"),
            )
            outcomes.append(outcome)
            if on_cell is not None:
                on_cell(outcome)
    return outcomes
