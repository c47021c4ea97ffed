"""Argument checks shared by the whole library, each raising one :class:`TabmemError` that names
the argument and the offending value; and the one rule for ``n_jobs`` and threads.

``n_jobs`` (every component that runs work in parallel follows it, scikit-learn's convention):

* ``None`` (default): every CPU this process may use (:func:`available_cpus`, which honours
  CPU affinity and cgroup quotas, not the machine's core count);
* a positive integer ``k``: ``k`` workers (also when ``k`` exceeds the available CPUs: asked for,
  given);
* ``-1``: all available CPUs; ``-k``: all but ``k - 1`` (at least 1).

Zero, booleans and anything that is not an integer (numpy integers are integers) are errors.
:func:`check_n_jobs` validates a value, :func:`resolve_n_jobs` turns it into a worker count; every
component that takes ``n_jobs`` (or ``jobs``) calls one of them, and the command line's
``--n-jobs``/``--jobs`` options convert through :func:`check_n_jobs` too.

Seeds: :func:`check_random_state` is the one check of a ``random_state`` (a non-negative integer
or ``None``; it returns the seed, and a caller that needs a generator builds it with
``np.random.default_rng(seed)``).

Threads: a run that puts ``w`` workers side by side gives each ``available_cpus() // w`` threads
(:func:`threads_per_worker`, at least 1), so that the default never oversubscribes the CPUs this
process may use; :func:`limit_threads` applies a count to the BLAS/OpenMP pools and torch.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from tabmem.errors import ParameterError

__all__ = [
    "available_cpus",
    "check_fraction",
    "check_int",
    "check_n_jobs",
    "check_number",
    "check_positive_int",
    "check_random_state",
    "check_choice",
    "resolve_n_jobs",
    "limit_threads",
    "threads_per_worker",
]


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` within ``[low, high]`` (either bound may be ``None``)."""
    if not _is_int(value):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ParameterError(f"{name} must be in [{lo}, {hi}], got {value!r}")
    return v


def check_positive_int(name: str, value: Any, *, allow_none: bool = False) -> int | None:
    """A positive integer (or ``None`` when ``allow_none``)."""
    if value is None and allow_none:
        return None
    if not _is_int(value) or value <= 0:
        extra = " or None" if allow_none else ""
        raise ParameterError(f"{name} must be a positive integer{extra}, got {value!r}")
    return int(value)


def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number within the given bounds (open or closed at each end)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    bad_low = low is not None and (v <= low if low_open else v < low)
    bad_high = high is not None and (v >= high if high_open else v > high)
    if bad_low or bad_high:
        left = "(" if low_open or low is None else "["
        right = ")" if high_open or high is None else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ParameterError(f"{name} must be in {left}{lo}, {hi}{right}, got {value!r}")
    return v


def check_fraction(name: str, value: Any, *, allow_zero: bool = False, allow_one: bool = False) -> float:
    """A fraction in (0, 1) (ends included on request)."""
    return check_number(name, value, low=0.0, high=1.0, low_open=not allow_zero, high_open=not allow_one)


def check_choice(name: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    """One of ``choices``."""
    if value not in choices:
        raise ParameterError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_random_state(value: Any, name: str = "random_state") -> int | None:
    """A non-negative integer seed or ``None``."""
    if value is None:
        return None
    if not _is_int(value) or int(value) < 0:
        raise ParameterError(f"{name} must be a non-negative integer or None, got {value!r}")
    return int(value)


def available_cpus() -> int:
    """CPUs this process may use: affinity mask and cgroup CPU quota honoured (at least 1)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    quota = _cgroup_cpu_limit()
    if quota is not None:
        n = min(n, quota)
    return max(1, n)


def _cgroup_cpu_limit() -> int | None:
    try:  # cgroup v2: "max 100000" or "200000 100000"
        text = open("/sys/fs/cgroup/cpu.max").read().split()
        if text and text[0] != "max":
            return max(1, math.ceil(int(text[0]) / int(text[1])))
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_n_jobs(value: Any, name: str = "n_jobs") -> int | None:
    """Validate ``n_jobs`` (module docstring); returns it unchanged (``None`` allowed)."""
    if value is None:
        return None
    if not _is_int(value) or int(value) == 0:
        raise ParameterError(f"{name} must be a non-zero integer or None (None/-1: all available CPUs), got {value!r}")
    return int(value)


def resolve_n_jobs(value: Any, name: str = "n_jobs") -> int:
    """The number of workers ``n_jobs`` stands for on this machine (module docstring)."""
    v = check_n_jobs(value, name)
    cpus = available_cpus()
    if v is None:
        return cpus
    if v > 0:
        return v
    return max(1, cpus + 1 + v)


def threads_per_worker(n_workers: int = 1) -> int:
    """Threads each of ``n_workers`` side-by-side workers may use without oversubscribing (at least 1)."""
    return max(1, available_cpus() // max(1, int(n_workers)))


@contextmanager
def limit_threads(n: int) -> Iterator[None]:
    """Run a block with the BLAS/OpenMP thread pools and torch's intra-op pool (if loaded) at ``n`` threads."""
    from threadpoolctl import threadpool_limits

    n = check_positive_int("threads", n)
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(limits=n):
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch is not None and before is not None:
                torch.set_num_threads(before)
