"""Atomic file writes and strict JSON, used by every writer in tabmem.

* Atomic: a file is written to a temporary name in the same directory and renamed over the
  target (``os.replace``), so a crash or a kill leaves either the old file or the whole new one,
  never a truncated one. Run directories rely on this to stay resumable.
* Strict JSON: ``NaN``/``Infinity`` are not JSON (Python's ``json`` writes them by default and
  other readers reject the file). :func:`jsonable` turns numpy scalars and arrays, tuples and
  paths into plain JSON values and every non-finite float into ``null``; :func:`write_json`
  then refuses anything that is still not JSON.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tabmem.errors import TabmemError

__all__ = ["jsonable", "dumps_json", "write_json", "read_json", "atomic_write", "write_text", "write_frame"]


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values: numpy scalars/arrays converted, non-finite floats -> ``None``."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, str):
        return obj
    if hasattr(obj, "to_dict"):
        return jsonable(obj.to_dict())
    return str(obj)


def dumps_json(obj: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text of ``obj`` (after :func:`jsonable`; never ``NaN``/``Infinity``)."""
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False)


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` then rename ``tmp_path`` over ``path`` (parents are created)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TabmemError(f"cannot create directory {str(path.parent)!r}: {exc.strerror or exc}") from None
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TabmemError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as strict, indented JSON atomically."""
    return write_text(path, dumps_json(obj) + "\n")


def read_json(path: str | Path) -> Any:
    """Read a JSON file; a missing or malformed file raises :class:`TabmemError` naming it."""
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TabmemError(f"file not found: {str(p)!r}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TabmemError(f"{str(p)!r} is not a readable JSON file ({exc})") from None


def write_frame(path: str | Path, frame: Any) -> Path:
    """Write a DataFrame atomically as CSV or Parquet, by suffix (no index)."""
    p = Path(path)
    if p.suffix.lower() in {".parquet", ".pq"}:
        return atomic_write(p, lambda tmp: frame.to_parquet(tmp, index=False))
    return atomic_write(p, lambda tmp: frame.to_csv(tmp, index=False))
