"""One pool for every parallel run: a function over a list of payloads, on local processes or Ray.

:func:`run_pool` calls a picklable top-level function ``fn`` on each payload and reports each task
as it ends: ``on_done(index, result)``, or ``on_failed(index, why)`` with ``why`` one line. Both
executors run the same ``fn`` on the same payload, so results never depend on where a task ran.
The study executors (:mod:`tabmem.studies.executors`) and the shadow generators
(:mod:`tabmem.runs.shadows`) use it.

* ``local``: ``jobs`` spawned worker processes (``jobs = 1``: every task in this process, no
  pickling). A worker that dies (killed, out of memory) fails only the task it was running
  (``worker process died (exit code -9: killed, or out of memory)``); a new worker takes the
  remaining tasks. Workers ignore Ctrl-C: the calling process gets it and stops them.
* ``ray``: each task is a Ray task with ``num_cpus`` CPUs and ``num_gpus`` GPUs, at most ``jobs``
  in flight (``None``: all). ``address`` (``"auto"``, ``ray://host:port``) joins a running
  cluster; without one a local instance starts with this machine's CPUs, its workers importing the
  tabmem this process runs (PYTHONPATH), and is shut down at the end; a Ray instance this process
  had already started is used as is. Tasks that no node can hold are refused before any starts; an
  address nothing answers on is refused in seconds. ``fn`` is put in Ray's object store once.

``fn`` raising fails only its task, with ``why = "ExceptionType: first line"`` under every
executor. ``on_tick()`` is called about every second while tasks run in workers.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import wait as wait_connections
from pathlib import Path
from typing import Any

from tabmem._checks import available_cpus, check_choice
from tabmem.errors import ParameterError, TabmemError, name_setting

__all__ = ["POOLS", "check_pool", "pool_session", "run_pool"]

#: the executors of :func:`run_pool`
POOLS = ("local", "ray")
_RAY = "executor='ray'"
_TICK = 1.0
_CONNECT_TIMEOUT = 5.0  # seconds to reach a Ray address before it is called unreachable


def check_pool(executor: str, address: str | None = None) -> None:
    """Refuse an unknown executor, and an ``address`` without ``executor="ray"`` (one line each)."""
    check_choice("executor", executor, POOLS)
    if address is not None and executor != "ray":
        raise ParameterError(
            f"{name_setting('address', '--address')} applies to {name_setting(_RAY, '--executor', 'ray')}"
        )


def run_pool(
    fn: Callable[[Any], Any],
    payloads: Sequence[Any],
    *,
    on_done: Callable[[int, Any], None],
    on_failed: Callable[[int, str], None],
    on_tick: Callable[[], None] | None = None,
    executor: str = "local",
    jobs: int | None = 1,
    address: str | None = None,
    num_cpus: float = 1,
    num_gpus: float = 0,
    resources_from: str = "",
    spread: bool = False,
) -> None:
    """Run ``fn(payloads[i])`` for every ``i`` on ``executor`` (module docstring); returns when all ended.

    ``payloads[i]`` is read when task ``i`` starts (a lazy sequence may build it then).
    ``jobs``: ``local`` worker processes (``1``: in this process), ``ray`` tasks in flight
    (``None``: all). ``num_cpus``/``num_gpus``: Ray resources of a task; ``resources_from`` names
    the settings they come from in the error that no node can hold a task; ``spread``: Ray places the
    tasks on the nodes in turn (Ray's ``SPREAD``) rather than filling the node that holds ``fn`` first.
    An exception raised by
    ``on_done``/``on_failed``/``on_tick`` (Ctrl-C included) stops the pool and propagates.
    """
    check_pool(executor, address)
    if not payloads:
        return
    tick = on_tick or (lambda: None)
    if executor == "ray":
        _run_ray(fn, payloads, on_done, on_failed, tick, jobs, address, num_cpus, num_gpus, resources_from, spread)
    elif jobs is None or jobs <= 1:
        for i in range(len(payloads)):
            ok, value = _call(fn, payloads[i])
            (on_done if ok else on_failed)(i, value)
    else:
        _run_local(fn, payloads, on_done, on_failed, tick, jobs)


def _one_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__


def _call(fn: Callable[[Any], Any], payload: Any) -> tuple[bool, Any]:
    """``(True, fn(payload))``, or ``(False, why)`` when it raised: a task never raises across processes."""
    try:
        return True, fn(payload)
    except Exception as exc:  # noqa: BLE001 - reported as the task's failure, in one line
        return False, _one_line(exc)


def _worker_main(conn: Any, fn: Callable[[Any], Any]) -> None:
    """A local worker: run the ``(index, payload)`` received on ``conn`` until it receives ``None``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the workers
    while True:
        msg = conn.recv()
        if msg is None:
            return
        index, payload = msg
        conn.send((index, _call(fn, payload)))


def _run_local(
    fn: Callable[[Any], Any],
    payloads: Sequence[Any],
    on_done: Callable[[int, Any], None],
    on_failed: Callable[[int, str], None],
    tick: Callable[[], None],
    jobs: int,
) -> None:
    ctx = mp.get_context("spawn")
    queue = list(range(len(payloads)))[::-1]
    workers: list[dict[str, Any]] = []

    def spawn() -> dict[str, Any]:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child, fn), daemon=True)
        proc.start()
        child.close()
        return {"proc": proc, "conn": parent, "task": None}

    try:
        for _ in range(min(jobs, len(payloads))):
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
                        index, (ok, value) = w["conn"].recv()
                    except (EOFError, OSError):
                        index = None
                    if index is not None:
                        w["task"] = None
                        (on_done if ok else on_failed)(index, value)
                        continue
                if not w["proc"].is_alive():
                    index, code = w["task"], w["proc"].exitcode
                    w["conn"].close()
                    workers.remove(w)
                    if queue:
                        workers.append(spawn())
                    on_failed(index, f"worker process died (exit code {code}: killed, or out of memory)")
            tick()
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


def _run_ray(
    fn: Callable[[Any], Any],
    payloads: Sequence[Any],
    on_done: Callable[[int, Any], None],
    on_failed: Callable[[int, str], None],
    tick: Callable[[], None],
    jobs: int | None,
    address: str | None,
    num_cpus: float,
    num_gpus: float,
    resources_from: str,
    spread: bool = False,
) -> None:
    ray, started = _init_ray(address)
    try:
        _check_fits(ray, num_cpus, num_gpus, resources_from)
        placement = {"scheduling_strategy": "SPREAD"} if spread else {}
        task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=0, **placement)(_call)
        fn_ref = ray.put(fn)  # sent once, not with every task (it may carry a fitted index)
        pending: dict[Any, int] = {}
        queue = list(range(len(payloads)))[::-1]
        limit = jobs or len(payloads)
        while queue or pending:
            while queue and len(pending) < limit:
                i = queue.pop()
                pending[task.remote(fn_ref, payloads[i])] = i
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=_TICK)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    ok, value = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a crashed Ray task (lost worker or node) fails only itself
                    first = str(exc).splitlines()[0] if str(exc) else ""
                    on_failed(i, f"ray task failed ({type(exc).__name__}: {first})")
                    continue
                (on_done if ok else on_failed)(i, value)
            tick()
    finally:
        if started:
            ray.shutdown()


def _init_ray(address: str | None) -> tuple[Any, bool]:
    """The ``ray`` module, connected; and whether this call started (and so shuts down) the instance."""
    try:
        import ray
    except ImportError:
        raise TabmemError(f"{name_setting(_RAY, '--executor', 'ray')} needs Ray: pip install 'tabmem[ray]'") from None
    if address:
        _check_reachable(address)
    if ray.is_initialized():
        return ray, False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address:
        kwargs["address"] = address
    else:  # a local instance with this machine's CPUs: Ray never runs more tasks than fit
        kwargs["num_cpus"] = available_cpus()
        kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": _pythonpath()}}
    try:
        ray.init(**kwargs)
    except ConnectionError as exc:
        raise TabmemError(
            f"{name_setting('address', '--address')} {address}: cannot join the Ray cluster ({exc})"
        ) from None
    return ray, not address


def _check_reachable(address: str) -> None:
    """Refuse in one line, within seconds, a ``host:port`` (or ``ray://host:port``) nobody listens on:
    ``ray.init`` would retry for minutes."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", or a form Ray itself explains
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise TabmemError(
            f"{name_setting('address', '--address')} {address}: cannot join the Ray cluster "
            f"(nothing answers there: {exc.strerror or exc})"
        ) from None


@contextlib.contextmanager
def pool_session(executor: str, address: str | None = None) -> Iterator[int]:
    """Keep one executor open for several :func:`run_pool` calls; yields the CPUs it offers.

    ``ray``: joins ``address`` (or starts a local instance) once, so that every pool inside runs on
    it, and at the end disconnects (or shuts down the instance it started) unless this process was
    connected already; the CPUs are the cluster's. ``local``:
    nothing to open; the CPUs available to this process.
    """
    check_pool(executor, address)
    if executor != "ray":
        yield available_cpus()
        return
    was_connected = _ray_connected()
    ray, _ = _init_ray(address)
    try:
        yield max(1, int(ray.cluster_resources().get("CPU", 1)))
    finally:
        if not was_connected:  # the instance it started, or its connection to the cluster
            ray.shutdown()


def _ray_connected() -> bool:
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


def _check_fits(ray: Any, num_cpus: float, num_gpus: float, resources_from: str) -> None:
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    if any(r.get("CPU", 0) >= num_cpus and r.get("GPU", 0) >= num_gpus for r in nodes):
        return
    largest = max(((r.get("CPU", 0), r.get("GPU", 0)) for r in nodes), default=(0, 0))
    where = f"{resources_from}; " if resources_from else ""
    raise TabmemError(
        f"no Ray node has the {num_cpus:g} CPU(s) and {num_gpus:g} GPU(s) a task asks for "
        f"({where}the largest node has {largest[0]:g} CPU(s), {largest[1]:g} GPU(s))"
    )


def _pythonpath() -> str:
    """PYTHONPATH for local Ray workers: where this tabmem is imported from, then the current value."""
    import tabmem

    root = str(Path(tabmem.__file__).resolve().parents[1])
    current = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([root] + ([current] if current else []))
