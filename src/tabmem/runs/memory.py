"""The peak memory of a whole audit, estimated from its sizes before it starts.

``--memory-gb`` (``memory_budget``) bounds the neighbour search's working memory: its blocks,
all threads together. The process holds more: the interpreter and its libraries, the tables as
read and validated, their encodings, the match-count lookup tables, the outputs.
:func:`audit_peak_bytes` estimates the whole process's peak (the resident set, ``ru_maxrss``)
with a linear model of the table cells, calibrated on measured audits of Adult-shaped tables
(``docs/scale.md``, "Where the memory goes at 300k"): ``tabmem audit`` prints it next to the
memory available, and refuses, in one line, a run that clearly cannot fit
(:func:`check_audit_memory`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tabmem.errors import TabmemError
from tabmem.neighbors.blocked import block_rows_for

__all__ = ["AuditMemory", "audit_memory", "available_memory_bytes", "check_audit_memory"]

GIB = 1 << 30
#: the interpreter, numpy, pandas, pyarrow and tabmem imported, before any table (measured: 0.17 GiB)
START_BYTES = int(0.2 * GIB)
#: bytes held at the peak per cell (row x column) of the training table and of each scored table
#: (the tables, their validated and encoded forms, the exact-copy index, the outputs): a scored
#: table's from what it holds (its frame 13, its encodings during its search 10, its outputs 2 on
#: Adult), the training table's then fitted on the measured peaks at 30k and 300k (docs/scale.md)
TRAIN_CELL_BYTES = 52.0
SCORED_CELL_BYTES = 25.0
#: the match-count lookup tables of the categorical columns are at most this large (neighbors.distances)
LOOKUP_BYTES = 128 << 20
#: the pruned search's blocks hold about this much per query x reference pair (uint8 match counts and
#: their passes); the dense search, where pruning is not selective, can take all of ``--memory-gb``
SEARCH_CELL_BYTES = 2
#: the data-copying test (with a holdout) fits its k-means on at most this many training rows, holding
#: about this much per cell of them at its peak (the rows embedded in float64, scikit-learn's copies)
COPYING_ROWS = 50_000
COPYING_CELL_BYTES = 150
#: refuse only when the estimate exceeds the available memory by this factor (a clear case)
CLEARLY = 1.25


@dataclass(frozen=True)
class AuditMemory:
    """An audit's estimated peak (``peak``), the search's working-memory budget (``search``, ``--memory-gb``)
    and the part of the peak its blocks are expected to hold (``blocks``), in bytes."""

    peak: int
    search: int
    blocks: int = 0

    def line(self, available: int | None) -> str:
        """The one log line: the estimate, the budget of ``--memory-gb`` and the memory available."""
        have = "" if available is None else f" of {available / GIB:.1f} GiB available"
        return (
            f"memory: about {self.peak / GIB:.1f} GiB at the peak expected{have} (the neighbour search's "
            f"working memory within --memory-gb {self.search / GIB:.3g} GiB; the rest: tables and their encodings)"
        )


def audit_memory(
    n_train: int,
    n_scored: int,
    n_columns: int,
    memory_budget: int,
    *,
    n_categorical: int = 1,
    n_jobs: int = 1,
    copying: bool = False,
) -> AuditMemory:
    """Estimated peak of an audit of ``n_scored`` rows (synthetic and holdout together) against ``n_train``
    training rows of ``n_columns`` columns, searched by ``n_jobs`` threads within ``memory_budget`` bytes;
    ``copying``: with the data-copying test (a holdout)."""
    cells = TRAIN_CELL_BYTES * n_train * n_columns + SCORED_CELL_BYTES * n_scored * n_columns
    if copying:
        cells += COPYING_CELL_BYTES * min(n_train, COPYING_ROWS) * n_columns
    lookup = min(LOOKUP_BYTES, n_train * 1024) if n_categorical else 0
    blocks = min(memory_budget, n_jobs * block_rows_for(n_train, n_jobs, memory_budget) * n_train * SEARCH_CELL_BYTES)
    return AuditMemory(int(START_BYTES + cells + lookup + blocks), int(memory_budget), int(blocks))


def available_memory_bytes() -> int | None:
    """Memory this process may still take: ``MemAvailable`` of ``/proc/meminfo``, lowered by a cgroup
    limit (``memory.max`` less ``memory.current``); ``None`` where neither can be read."""
    found = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    cgroup = Path("/sys/fs/cgroup")
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int((cgroup / "memory.current").read_text().strip()))
    except (OSError, ValueError):
        pass
    return max(min(found), 0) if found else None


def check_audit_memory(estimate: AuditMemory, available: int | None, *, held: int = 0) -> None:
    """One line (a :class:`TabmemError`) when the audit clearly cannot fit: its estimated peak, less the
    ``held`` bytes the process already holds, exceeds ``available`` by more than :data:`CLEARLY`."""
    if available is None or estimate.peak - held <= CLEARLY * available:
        return
    raise TabmemError(
        f"the audit needs about {estimate.peak / GIB:.1f} GiB at its peak (tables, their encodings and the "
        f"neighbour search's --memory-gb {estimate.search / GIB:.3g} GiB), but only {(available + held) / GIB:.1f} GiB "
        "are available: free memory, audit fewer rows (or on a larger machine), or lower --memory-gb"
    )


def resident_bytes() -> int:
    """This process's resident set now (``/proc/self/statm``; 0 where it cannot be read)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
