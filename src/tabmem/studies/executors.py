"""Executors: where the tasks of a study run (``--executor local|ray``), one registry.

A task is a group of cells that share steps (:func:`~tabmem.studies.runner.group_cells`); its payload is
plain JSON-able data and :func:`tabmem.studies.cells.run_task` runs it, so every executor
runs exactly the same code and the results do not depend on where it ran (given the same
threads per task: ``[study] threads``).

* ``local`` (default): ``jobs`` worker processes (spawned, each with the task's thread limit);
  ``jobs = 1`` runs in this process. A worker that dies (killed, out of memory) fails only the
  cell it was running; a new worker takes the remaining tasks.
* ``ray``: each task is a Ray task with ``num_cpus = threads`` and ``num_gpus = [study] gpus``;
  ``address="auto"`` (or ``ray://...``) joins a running cluster, without an address a local
  instance starts (or the one this process already started is used). ``storage="shared"``:
  workers write into DIR (a path every node sees); ``storage="gather"``: a worker receives the
  task's existing directories as an archive, runs in a private folder and sends the new ones
  back, which are unpacked into DIR.

An executor is a class with ``run(payloads, monitor)``; ``monitor.tick()`` is called about every
second (it reports progress from the cells' ``status.json``) and ``monitor.task_done(i,
outcomes)`` when task ``i`` ends. The processes and Ray are :func:`tabmem.runs.pool.run_pool`'s
(the pool the shadow generators use too); a task whose worker died or raised is reported here as
its cells' outcomes (:func:`_died`).
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from tabmem._registry import Registry
from tabmem.errors import ParameterError, TabmemError, name_setting
from tabmem.runs.pool import run_pool
from tabmem.studies.cells import run_task

__all__ = ["EXECUTORS", "LocalExecutor", "Monitor", "RayExecutor", "pack_task", "unpack"]


class Monitor(Protocol):
    def tick(self) -> None: ...

    def task_done(self, index: int, outcomes: list[dict[str, Any]]) -> None: ...

    def cell_done(self, outcome: dict[str, Any]) -> None: ...


EXECUTORS: Registry[type] = Registry("executor", attribute=None)


def _died(payload: dict[str, Any], why: str) -> list[dict[str, Any]]:
    """Outcomes of a task whose worker died: its unfinished cells fail with ``why``."""
    from tabmem._io import read_json, write_json

    out = Path(payload["out"])
    outcomes = []
    for d in payload["cells"]:
        path = out / "cells" / d["id"] / "status.json"
        status: dict[str, Any] = {}
        if path.is_file():
            try:
                status = read_json(path, require=("state",))
            except TabmemError:
                status = {}
        this_run = status.get("run") == payload.get("run")
        if this_run and status.get("state") == "done":
            outcomes.append({"id": d["id"], "state": "done", "error": None, "seconds": status.get("seconds")})
            continue
        if this_run and status.get("state") == "running":
            running = [k for k, v in status.get("steps", {}).items() if v.get("state") == "running"]
            line = f"{running[0]}: {why}" if running else why
        else:
            line = f"not run: the worker of its task stopped ({why})"
        status.update(id=d["id"], name=d["name"], state="failed", error=line)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, status)
        outcomes.append({"id": d["id"], "state": "failed", "error": line, "seconds": status.get("seconds")})
    return outcomes


@EXECUTORS.register("local")
class LocalExecutor:
    """``jobs`` spawned worker processes (``jobs = 1``: in this process), through :func:`run_pool`."""

    def __init__(self, jobs: int = 1, **_: Any) -> None:
        self.jobs = jobs

    def run(self, payloads: Sequence[dict[str, Any]], monitor: Monitor) -> None:
        # in this process, each cell is reported as it ends; workers are followed by monitor.tick()
        fn = partial(run_task, on_cell=monitor.cell_done) if self.jobs == 1 else run_task
        run_pool(
            fn,
            payloads,
            on_done=monitor.task_done,
            on_failed=lambda i, why: monitor.task_done(i, _died(payloads[i], why)),
            on_tick=monitor.tick,
            executor="local",
            jobs=self.jobs,
        )


def pack_task(out: Path, payload: dict[str, Any]) -> bytes:
    """The existing directories of a task's cells and steps, as a tar archive (``storage="gather"``)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel in _task_paths(payload):
            p = out / rel
            if p.exists() or p.is_symlink():
                tar.add(p, arcname=rel)
    return buf.getvalue()


def unpack(archive: bytes, out: Path) -> None:
    """Unpack a task archive into ``out`` (only relative paths under cells/ and steps/ are accepted)."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
        members = []
        for m in tar.getmembers():
            parts = Path(m.name).parts
            if Path(m.name).is_absolute() or ".." in parts or not parts or parts[0] not in ("cells", "steps"):
                raise TabmemError(f"refusing to unpack {m.name!r} from a task archive")
            members.append(m)
        if hasattr(tarfile, "tar_filter"):  # Python >= 3.10.12 / 3.11.4: refuse links and paths outside out
            tar.extractall(out, members=members, filter="tar")
        else:  # pragma: no cover - older patch releases; members were checked above
            tar.extractall(out, members=members)


def _task_paths(payload: dict[str, Any]) -> list[str]:
    paths: list[str] = []
    for d in payload["cells"]:
        paths.append(f"cells/{d['id']}")
        for s in d["steps"]:
            rel = f"steps/{s['name']}/{s['key']}"
            if rel not in paths:
                paths.append(rel)
    return paths


def _run_gathered(item: tuple[dict[str, Any], bytes]) -> tuple[list[dict[str, Any]], bytes]:
    """A task in a private folder: unpack its archive, run, return outcomes and the new directories."""
    payload, archive = item
    with tempfile.TemporaryDirectory(prefix="tabmem-task-") as tmp:
        root = Path(tmp)
        unpack(archive, root)
        local = {**payload, "out": str(root)}
        outcomes = run_task(local)
        return outcomes, pack_task(root, local)


class _Gathered(Sequence):
    """The payloads of ``storage="gather"``, each with its archive, packed when its task starts."""

    def __init__(self, payloads: Sequence[dict[str, Any]]) -> None:
        self.payloads = payloads

    def __len__(self) -> int:
        return len(self.payloads)

    def __getitem__(self, i: Any) -> Any:
        p = self.payloads[i]
        return p, pack_task(Path(p["out"]), p)


@EXECUTORS.register("ray")
class RayExecutor:
    """Ray tasks (``num_cpus`` = threads, ``num_gpus`` = gpus); shared or gathered storage, through :func:`run_pool`."""

    def __init__(
        self,
        jobs: int | None = None,
        address: str | None = None,
        storage: str = "shared",
        threads: int = 1,
        gpus: float = 0,
        **_: Any,
    ) -> None:
        if storage not in ("shared", "gather"):
            raise ParameterError(f"{name_setting('storage', '--storage')} must be shared or gather, got {storage!r}")
        self.jobs, self.address, self.storage, self.threads, self.gpus = jobs, address, storage, threads, gpus

    def run(self, payloads: Sequence[dict[str, Any]], monitor: Monitor) -> None:
        gather = self.storage == "gather"

        def done(i: int, result: Any) -> None:
            if gather:
                result, archive = result
                unpack(archive, Path(payloads[i]["out"]))
            monitor.task_done(i, result)

        run_pool(
            _run_gathered if gather else run_task,
            _Gathered(payloads) if gather else payloads,
            on_done=done,
            on_failed=lambda i, why: monitor.task_done(i, _died(payloads[i], why)),
            on_tick=monitor.tick,
            executor="ray",
            jobs=self.jobs,
            address=self.address,
            num_cpus=self.threads,
            num_gpus=self.gpus,
            resources_from="[study] threads and gpus",
        )
