"""Run one command under a memory cap and a time limit; report seconds, peak memory and the outcome.

The peer comparison (``bench_peers.py``) runs every tool, tabmem included, through
:func:`run_capped`, so that each gets the same address-space cap (``RLIMIT_AS``, set in the child
before it starts) and the same wall-clock limit. The child's own resource usage comes from
``os.wait4`` (wall seconds, user + system CPU seconds, ``ru_maxrss``), so parallel work on the
machine does not leak into it. :func:`classify` turns the exit status and the end of stderr into
one outcome: ``ok``, ``out of memory``, ``timeout`` or ``error: <last line>``.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

GIB = 2**30

# What an allocation beyond RLIMIT_AS looks like in the languages the peers use.
_OOM_MARKERS = (
    "MemoryError",
    "Unable to allocate",  # numpy
    "bad_alloc",  # C++ (torch, faiss, sklearn's C++ parts)
    "Cannot allocate memory",  # errno ENOMEM (mmap, fork, thread stacks)
    "out of memory",
    "failed to allocate",
    "memory allocation of",  # Rust (polars): "memory allocation of N bytes failed"
)


def classify(returncode: int | None, stderr_tail: str, timed_out: bool) -> str:
    """The outcome of one capped run (module docstring); ``returncode`` < 0 is a signal."""
    if timed_out:
        return "timeout"
    if returncode == 0:
        return "ok"
    if any(m.lower() in stderr_tail.lower() for m in _OOM_MARKERS):
        return "out of memory"
    if returncode is not None and returncode in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT, 137):
        # An abort or kill with nothing printed under an address-space cap is, in practice, a failed
        # allocation that the library did not report (a NULL from malloc dereferenced, abort()).
        return "out of memory" if not stderr_tail.strip() else f"error: signal {-returncode}"
    lines = [ln.strip() for ln in stderr_tail.splitlines() if ln.strip()]
    return "error: " + (lines[-1][:200] if lines else f"exit status {returncode}")


def run_capped(
    cmd: list[str],
    memory_bytes: int | None,
    timeout_s: float,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> dict:
    """Run ``cmd`` with ``RLIMIT_AS = memory_bytes`` (None: no cap) for at most ``timeout_s`` seconds.

    stdout and stderr go to ``log``. Returns ``outcome`` (:func:`classify`), ``wall_s``, ``cpu_s``,
    ``peak_gib`` (the child's maximum resident set), ``returncode``.
    """

    def cap() -> None:  # runs in the child between fork and exec
        os.setsid()  # its own process group: a timeout kills its workers too
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd, preexec_fn=cap)  # noqa: PLW1509
        timed_out, status, usage = False, 0, None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout_s:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
    wall = time.perf_counter() - t0
    text = log.read_bytes()[-20000:].decode("utf-8", "replace")
    return {
        "outcome": classify(proc.returncode, text, timed_out),
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_gib": round(usage.ru_maxrss * 1024 / GIB, 3),
        "returncode": proc.returncode,
    }
