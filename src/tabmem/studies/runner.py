"""``run_study``: run a study file's cells into a directory, resumably, on an executor (``tabmem run``).

What a run does:

1. reads and checks the study (:func:`~tabmem.studies.study.load_study`), keeps the cells that
   ``only`` selects, and finds which are finished (``status.json`` done and every step directory
   finished: those are skipped);
2. groups the other cells into tasks (cells that share a step run in one task, so shared steps
   run once) and hands them to the executor (:mod:`tabmem.studies.executors`) with the
   thread budget per task;
3. prints one line per finished cell (cells done / running / failed, elapsed, ETA from the cost
   model scaled by the speed measured so far) and rewrites ``results.parquet`` and
   ``manifest.json`` after every task (:mod:`tabmem.studies.store`).

Threads: ``[study] threads = N`` pins torch/BLAS threads per task (results then do not depend on
the executor or ``jobs``: some generators' floating-point sums depend on the thread count); the
local executor runs at most ``available CPUs // N`` jobs. ``threads = "auto"`` gives each of the
``jobs`` workers ``available CPUs // jobs`` threads.

A directory is used by one ``tabmem run`` at a time (the run protocol's writer lock, ``DIR/.lock``).
"""

from __future__ import annotations

import contextlib
import heapq
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabmem._checks import available_cpus, resolve_n_jobs, threads_per_worker
from tabmem._io import read_json, reading, write_text
from tabmem.errors import ParameterError, TabmemError, name_setting, suggest
from tabmem.runs.protocol import STUDY_RUN, RunDirectory
from tabmem.studies.cells import cell_state, step_dir
from tabmem.studies.executors import EXECUTORS
from tabmem.studies.steps.base import STEPS
from tabmem.studies.store import write_manifest, write_results
from tabmem.studies.study import Cell, Study, load_study, select_cells

__all__ = ["Plan", "StudyOutcome", "collect_rows", "format_seconds", "group_cells", "plan_study", "run_study"]


def format_seconds(s: float) -> str:
    """``42s``, ``3m 05s``, ``2h 10m``."""
    s = max(0.0, float(s))
    if s < 60:
        return f"{s:.0f}s"
    if s < 3600:
        return f"{int(s // 60)}m {int(s % 60):02d}s"
    return f"{int(s // 3600)}h {int(s % 3600 // 60):02d}m"


@dataclass
class Plan:
    """The cells of a run, their state, the tasks to run and the cost estimate (``--dry-run``)."""

    study: Study
    cells: list[Cell]
    states: dict[str, str]
    tasks: list[list[Cell]]
    task_estimates: list[float]
    jobs: int
    threads: int
    executor: str
    cell_estimates: dict[str, float] = field(default_factory=dict)

    @property
    def cpu_seconds(self) -> float:
        return sum(self.task_estimates)

    @property
    def wall_seconds(self) -> float:
        """Longest-processing-time-first schedule of the task estimates on ``jobs`` workers."""
        return _makespan(self.task_estimates, self.jobs)

    def describe(self) -> list[str]:
        """The ``--dry-run`` listing: one line per cell, then the totals and the estimate model."""
        lines = [f"study {self.study.name!r}: {len(self.cells)} cells selected of {len(self.study.cells)}"]
        width = max((len(c.name) for c in self.cells), default=4)
        lines.append(f"  {'cell':<12}  {'name':<{width}}  {'state':<7}  estimate")
        for c in self.cells:
            est = self.cell_estimates.get(c.id, 0.0)
            lines.append(f"  {c.id}  {c.name:<{width}}  {self.states[c.id]:<7}  {format_seconds(est) if est else '-'}")
        todo = sum(1 for c in self.cells if self.states[c.id] != "done")
        lines.append(
            f"to run: {todo} cells in {len(self.tasks)} tasks; estimated {format_seconds(self.cpu_seconds)} of "
            f"work, about {format_seconds(self.wall_seconds)} with {self.jobs} job(s) x {self.threads} thread(s) "
            f"({self.executor})"
        )
        lines.append(
            "estimate: per step, work x a per-unit cost measured on a 2-core CPU with one thread "
            "(tabmem.studies.estimate); steps shared by several cells count once; finished steps count zero"
        )
        if self.study.estimate_note:
            lines.append(f"study note: {self.study.estimate_note}")
        return lines


@dataclass
class StudyOutcome:
    """What a run did: counts and the failed cells (name, id, error)."""

    out: Path
    total: int
    skipped: int
    done: int
    failed: list[tuple[str, str, str]]
    seconds: float


def group_cells(cells: list[Cell]) -> list[list[Cell]]:
    """Tasks: cells that share any step (transitively) form one task, so a shared step runs once.

    Union-find over step keys; tasks and the cells in them keep the study order.
    """
    parent = list(range(len(cells)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, cell in enumerate(cells):
        for spec in cell.steps:
            if spec.key in owner:
                parent[find(i)] = find(owner[spec.key])
            else:
                owner[spec.key] = i
    groups: dict[int, list[Cell]] = {}
    for i, cell in enumerate(cells):
        groups.setdefault(find(i), []).append(cell)
    return list(groups.values())  # ordered by each task's first cell (the dict keeps insertion order)


def _makespan(estimates: Iterable[float], jobs: int) -> float:
    loads = [0.0] * max(1, jobs)
    heapq.heapify(loads)
    for e in sorted(estimates, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + e)
    return max(loads) if loads else 0.0


def _resolve_parallelism(study: Study, executor: str, jobs: int | None, n_tasks: int) -> tuple[int, int, str | None]:
    """``(jobs, threads, note)`` for this machine (module docstring)."""
    cpus = available_cpus()
    note = None
    if jobs is not None:  # the library's one n_jobs rule: -1 all CPUs, -k all but k-1
        jobs = resolve_n_jobs(jobs, "jobs")
    if executor != "local":
        threads = study.threads if isinstance(study.threads, int) else 1
        return (jobs or max(1, n_tasks)), threads, None
    if isinstance(study.threads, int):
        threads = study.threads
        limit = max(1, cpus // threads)
        if jobs is None:
            jobs = limit
        elif jobs > limit:
            asked = suggest(f"jobs={jobs}", "--jobs", str(jobs)) or f"{jobs} jobs"
            note = f"{asked} x threads {threads} would oversubscribe {cpus} CPU(s): running {limit} job(s)"
            jobs = limit
    else:
        if jobs is not None and jobs > cpus:
            asked = suggest(f"jobs={jobs}", "--jobs", str(jobs)) or f"{jobs} jobs"
            note = f"{asked} would oversubscribe {cpus} CPU(s): running {cpus} job(s)"
            jobs = cpus
        jobs = jobs or cpus
        threads = threads_per_worker(jobs)
    return max(1, jobs), threads, note


def plan_study(
    study: Study | str | Path,
    out: str | Path,
    *,
    only: Iterable[str] = (),
    executor: str = "local",
    jobs: int | None = None,
) -> Plan:
    """Which cells run, in which tasks, at what estimated cost (nothing is written)."""
    if not isinstance(study, Study):
        study = load_study(study)
    out = Path(out)
    cells = select_cells(study.cells, only)
    if not cells:
        example = study.cells[0].name
        raise ParameterError(
            f"{name_setting('only', '--only')} matched no cell (cell names look like {example!r}; ids are 12 hex digits)"
        )
    states = {c.id: cell_state(out, c) for c in cells}
    tasks = group_cells([c for c in cells if states[c.id] != "done"])
    counted: set[str] = set()
    task_estimates: list[float] = []
    cell_estimates: dict[str, float] = {}
    for task in tasks:
        total = 0.0
        for c in task:
            est = 0.0
            for s in c.steps:
                if s.key in counted or (step_dir(out, s.name, s.key) / "step.json").is_file():
                    continue
                counted.add(s.key)
                est += float(STEPS.get(s.name).estimate(s.config, c.info))
            cell_estimates[c.id] = est
            total += est
        task_estimates.append(total)
    jobs_, threads, _ = _resolve_parallelism(study, executor, jobs, len(tasks))
    return Plan(study, cells, states, tasks, task_estimates, jobs_, threads, executor, cell_estimates)


def collect_rows(out: Path, study: Study) -> list[dict[str, Any]]:
    """Rows of results.parquet from every finished cell of ``study`` in ``out`` (store docstring)."""
    rows: list[dict[str, Any]] = []
    for cell in study.cells:
        if cell_state(out, cell) != "done":
            continue
        base = {"study": study.name, **cell.row()}
        for spec in cell.steps:
            path = step_dir(out, spec.name, spec.key) / "metrics.json"
            with reading(path):
                for m in read_json(path) if path.is_file() else []:
                    rows.append({**base, "step": spec.name, **m})
    return rows


def _write_store(out: Path, study: Study, executor: dict[str, Any]) -> None:
    write_results(out, collect_rows(out, study))
    cells = []
    for c in study.cells:
        status: dict[str, Any] = {}
        path = out / "cells" / c.id / "status.json"
        if path.is_file():
            with contextlib.suppress(TabmemError):
                status = read_json(path, require=("state",))
        cells.append(
            {
                "id": c.id,
                "name": c.name,
                "labels": c.labels,
                "seed": c.seed,
                "status": cell_state(out, c),
                "error": status.get("error"),
                "seconds": status.get("seconds"),
                "host": status.get("host"),
                "dir": f"cells/{c.id}",
            }
        )
    write_manifest(
        out,
        {
            "study": {
                "name": study.name,
                "variant": study.variant,
                "description": study.description,
                "path": str(study.path),
                "hash": study.hash,
                "steps": study.steps,
                "axes": study.axes_present,
            },
            "executor": executor,
            "cells": cells,
            "published": study.published,
        },
    )


class _Progress:
    """Prints one line per finished cell and rewrites the store after each task."""

    def __init__(
        self,
        plan: Plan,
        out: Path,
        payloads: list[dict[str, Any]],
        echo: Callable[[str], None],
        store: Callable[[], None],
    ):
        self.plan, self.out, self.payloads, self.echo, self.store = plan, out, payloads, echo, store
        self.names = {c.id: c for task in plan.tasks for c in task}
        self.total = len(self.names)
        self.reported: dict[str, str] = {}
        self.failed: list[tuple[str, str, str]] = []
        self.open_tasks = set(range(len(payloads)))
        self.done_estimate = 0.0
        self.done_seconds = 0.0
        self.start = time.perf_counter()
        self.running = 0

    def _eta(self) -> str:
        remaining = [self.plan.cell_estimates.get(cid, 0.0) for cid in self.names if cid not in self.reported]
        if not remaining:
            return "0s"
        speed = (self.done_seconds / self.done_estimate) if self.done_estimate > 0 and self.done_seconds > 0 else 1.0
        return "~" + format_seconds(_makespan(remaining, self.plan.jobs) * speed)

    def cell_done(self, outcome: dict[str, Any]) -> None:
        cid = outcome["id"]
        if cid in self.reported:
            return
        self.reported[cid] = outcome["state"]
        cell = self.names[cid]
        seconds = float(outcome.get("seconds") or 0.0)
        self.done_estimate += self.plan.cell_estimates.get(cid, 0.0)
        self.done_seconds += seconds
        if outcome["state"] != "done":
            self.failed.append((cell.name, cid, outcome.get("error") or "unknown error"))
        n_failed = len(self.failed)
        elapsed = time.perf_counter() - self.start
        line = (
            f"[{len(self.reported):>{len(str(self.total))}}/{self.total}] {outcome['state']:<6} {cell.name} ({cid}) "
            f"{format_seconds(seconds)} | {self.running} running, {n_failed} failed | "
            f"elapsed {format_seconds(elapsed)}, ETA {self._eta()}"
        )
        if outcome["state"] != "done":
            line += f"\n    error: {outcome.get('error')}  (traceback: {self.out / 'cells' / cid / 'error.log'})"
        self.echo(line)

    def task_done(self, index: int, outcomes: list[dict[str, Any]]) -> None:
        self.open_tasks.discard(index)
        self.running = max(0, self.running - sum(1 for o in outcomes if o["id"] not in self.reported))
        for o in outcomes:
            self.cell_done(o)
        self.store()

    def tick(self) -> None:
        running, finished = 0, []
        for i in self.open_tasks:
            for d in self.payloads[i]["cells"]:
                path = self.out / "cells" / d["id"] / "status.json"
                if d["id"] in self.reported or not path.is_file():
                    continue
                try:
                    status = read_json(path, require=("state",))
                except TabmemError:
                    continue
                if status.get("run") != self.payloads[i].get("run"):
                    continue  # a status left by an earlier run
                if status.get("state") == "running":
                    running += 1
                elif status.get("state") in ("done", "failed") and status.get("finished"):
                    finished.append({"id": d["id"], **{k: status.get(k) for k in ("state", "error", "seconds")}})
        self.running = running
        for outcome in finished:
            self.cell_done(outcome)


def run_study(
    study: Study | str | Path,
    out: str | Path,
    *,
    executor: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    only: Iterable[str] = (),
    storage: str = "shared",
    data_dir: str | os.PathLike | None = None,
    echo: Callable[[str], None] = print,
) -> StudyOutcome:
    """Run the study's (selected, unfinished) cells into ``out``; see the module docstring."""
    if not isinstance(study, Study):
        study = load_study(study)
    if executor not in EXECUTORS:
        raise ParameterError(
            f"{name_setting('executor', '--executor')}: unknown executor {executor!r} "
            f"(available: {', '.join(EXECUTORS.names())})"
        )
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TabmemError(
            f"{name_setting('out', '--out')}: cannot create {str(out)!r} ({exc.strerror or exc})"
        ) from None
    out = out.resolve()
    plan = plan_study(study, out, only=only, executor=executor, jobs=jobs)
    _, _, note = _resolve_parallelism(study, executor, jobs, len(plan.tasks))
    if note:
        echo(note)
    if data_dir is None and study.data_dir is not None:
        data_dir = study.path.parent / study.data_dir
    if data_dir is None and os.environ.get("TABMEM_DATA_DIR"):
        data_dir = os.environ["TABMEM_DATA_DIR"]
    t0 = time.perf_counter()
    with RunDirectory(out, STUDY_RUN).lock():
        write_text(out / "study.toml", study.path.read_text(encoding="utf-8"))
        info = {"name": executor, "jobs": plan.jobs, "threads": plan.threads, "gpus": study.gpus}
        if executor == "ray":
            info.update(address=address, storage=storage)
        store = lambda: _write_store(out, study, info)  # noqa: E731
        store()
        skipped = sum(1 for c in plan.cells if plan.states[c.id] == "done")
        echo(
            f"study {study.name!r}: {len(plan.cells)} cells, {skipped} already done, "
            f"{len(plan.cells) - skipped} to run in {len(plan.tasks)} task(s) on {executor} "
            f"({plan.jobs} job(s) x {plan.threads} thread(s)); estimated about {format_seconds(plan.wall_seconds)}"
        )
        run_token = f"{os.getpid()}-{time.time_ns()}"
        payloads = [
            {
                "out": str(out),
                "cells": [c.to_dict() for c in task],
                "threads": plan.threads,
                "data_dir": None if data_dir is None else str(data_dir),
                "plugins": list(study.plugins),
                "run": run_token,
            }
            for task in plan.tasks
        ]
        progress = _Progress(plan, out, payloads, echo, store)
        if payloads:
            runner = EXECUTORS.get(executor)(
                jobs=plan.jobs, address=address, storage=storage, threads=plan.threads, gpus=study.gpus
            )
            runner.run(payloads, progress)
        store()
    done = sum(1 for s in progress.reported.values() if s == "done")
    outcome = StudyOutcome(out, len(plan.cells), skipped, done, progress.failed, time.perf_counter() - t0)
    echo(
        f"finished in {format_seconds(outcome.seconds)}: {done} cell(s) run, {skipped} skipped (already done), "
        f"{len(outcome.failed)} failed; results in {out / 'results.parquet'}"
    )
    return outcome
