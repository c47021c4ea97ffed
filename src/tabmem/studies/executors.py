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
outcomes)`` when task ``i`` ends.
"""

from __future__ import annotations

import io
import multiprocessing as mp
import os
import signal
import tarfile
import tempfile
from collections.abc import Sequence
from multiprocessing.connection import wait as wait_connections
from pathlib import Path
from typing import Any, Protocol

from tabmem._checks import available_cpus
from tabmem._registry import Registry
from tabmem.errors import ParameterError, TabmemError
from tabmem.studies.cells import run_task

__all__ = ["EXECUTORS", "LocalExecutor", "Monitor", "RayExecutor", "pack_task", "unpack"]

_TICK = 1.0


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
                status = read_json(path)
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


def _worker_main(conn: Any) -> None:
    """A local worker: run task payloads received on ``conn`` until it receives ``None``.

    Ctrl-C is left to the parent, which stops the workers (their cells stay resumable).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        msg = conn.recv()
        if msg is None:
            return
        index, payload = msg
        try:
            outcomes = run_task(payload)
        except Exception as exc:  # noqa: BLE001 - reported as the task's failure
            from tabmem.studies.cells import one_line

            outcomes = _died(payload, f"worker error: {one_line(exc)}")
        conn.send((index, outcomes))


@EXECUTORS.register("local")
class LocalExecutor:
    """``jobs`` spawned worker processes (``jobs = 1``: in this process)."""

    def __init__(self, jobs: int = 1, **_: Any) -> None:
        self.jobs = jobs

    def run(self, payloads: Sequence[dict[str, Any]], monitor: Monitor) -> None:
        if self.jobs == 1:
            for i, payload in enumerate(payloads):
                monitor.task_done(i, run_task(payload, on_cell=monitor.cell_done))
            return
        ctx = mp.get_context("spawn")
        queue = list(range(len(payloads)))[::-1]
        workers: list[dict[str, Any]] = []

        def spawn() -> dict[str, Any]:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker_main, args=(child,), daemon=True)
            proc.start()
            child.close()
            return {"proc": proc, "conn": parent, "task": None}

        try:
            for _ in range(min(self.jobs, len(payloads))):
                workers.append(spawn())
            while queue or any(w["task"] is not None for w in workers):
                for w in workers:
                    if w["task"] is None and queue:
                        w["task"] = queue.pop()
                        w["conn"].send((w["task"], payloads[w["task"]]))
                busy = [w for w in workers if w["task"] is not None]
                ready = wait_connections([w["conn"] for w in busy] + [w["proc"].sentinel for w in busy], timeout=_TICK)
                for w in busy:
                    if w["conn"] in ready or w["conn"].poll():
                        try:
                            index, outcomes = w["conn"].recv()
                        except (EOFError, OSError):
                            index, outcomes = None, None
                        if index is not None:
                            w["task"] = None
                            monitor.task_done(index, outcomes)
                            continue
                    if not w["proc"].is_alive():
                        index = w["task"]
                        code = w["proc"].exitcode
                        why = f"worker process died (exit code {code}: killed, or out of memory)"
                        monitor.task_done(index, _died(payloads[index], why))
                        w["conn"].close()
                        workers.remove(w)
                        if queue:
                            workers.append(spawn())
                monitor.tick()
        finally:
            for w in workers:
                try:
                    w["conn"].send(None)
                except (OSError, BrokenPipeError):
                    pass
            for w in workers:
                w["proc"].join(timeout=5 if w["task"] is None else 0.1)
                if w["proc"].is_alive():
                    w["proc"].terminate()
                    w["proc"].join(timeout=5)


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


def _run_gathered(payload: dict[str, Any], archive: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """A task in a private folder: unpack ``archive``, run, return outcomes and the new directories."""
    with tempfile.TemporaryDirectory(prefix="tabmem-task-") as tmp:
        root = Path(tmp)
        unpack(archive, root)
        local = {**payload, "out": str(root)}
        outcomes = run_task(local)
        return outcomes, pack_task(root, local)


@EXECUTORS.register("ray")
class RayExecutor:
    """Ray tasks (``num_cpus`` = threads, ``num_gpus`` = gpus); shared or gathered storage."""

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
            raise ParameterError(f"--storage must be shared or gather, got {storage!r}")
        self.jobs, self.address, self.storage, self.threads, self.gpus = jobs, address, storage, threads, gpus
        self._started = False  # whether this executor started (and so shuts down) the Ray instance

    def _init(self) -> Any:
        try:
            import ray
        except ModuleNotFoundError:
            raise TabmemError("--executor ray needs Ray: pip install 'tabmem[ray]'") from None
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            if self.address:
                kwargs["address"] = self.address
            else:  # a local instance with this machine's CPUs: Ray never runs more tasks than fit
                kwargs["num_cpus"] = available_cpus()
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": _pythonpath()}}
            try:
                ray.init(**kwargs)
            except ConnectionError as exc:
                raise TabmemError(f"--address {self.address}: cannot join the Ray cluster ({exc})") from None
            self._started = not self.address
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        if not any(r.get("CPU", 0) >= self.threads and r.get("GPU", 0) >= self.gpus for r in nodes):
            largest = max(((r.get("CPU", 0), r.get("GPU", 0)) for r in nodes), default=(0, 0))
            if self._started:
                ray.shutdown()
            raise TabmemError(
                f"no Ray node has the {self.threads} CPU(s) and {self.gpus:g} GPU(s) a task asks for "
                f"([study] threads and gpus; the largest node has {largest[0]:g} CPU(s), {largest[1]:g} GPU(s))"
            )
        return ray

    def run(self, payloads: Sequence[dict[str, Any]], monitor: Monitor) -> None:
        ray = self._init()
        options = {"num_cpus": self.threads, "num_gpus": self.gpus, "max_retries": 0}
        task = ray.remote(**options)(run_task if self.storage == "shared" else _run_gathered)
        pending: dict[Any, int] = {}
        queue = list(range(len(payloads)))[::-1]
        limit = self.jobs or len(payloads)
        try:
            while queue or pending:
                while queue and len(pending) < limit:
                    i = queue.pop()
                    p = payloads[i]
                    ref = task.remote(p) if self.storage == "shared" else task.remote(p, pack_task(Path(p["out"]), p))
                    pending[ref] = i
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_TICK)
                for ref in ready:
                    i = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - a crashed Ray task fails its cells only
                        why = f"ray task failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
                        monitor.task_done(i, _died(payloads[i], why))
                        continue
                    if self.storage == "gather":
                        outcomes, archive = result
                        unpack(archive, Path(payloads[i]["out"]))
                    else:
                        outcomes = result
                    monitor.task_done(i, outcomes)
                monitor.tick()
        finally:
            if self._started:
                ray.shutdown()


def _pythonpath() -> str:
    """PYTHONPATH for local Ray workers: where this tabmem is imported from, then the current value."""
    import tabmem

    root = str(Path(tabmem.__file__).resolve().parents[1])
    current = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([root] + ([current] if current else []))
