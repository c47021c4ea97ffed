"""Atomic file writes and strict JSON, used by every writer in tabmem.

* Atomic: a file is written to a temporary name in the same directory and renamed over the
  target (``os.replace``), so a crash or a kill leaves either the old file or the whole new one,
  never a truncated one. Run directories rely on this to stay resumable.
* Damaged files: :func:`reading` turns what a damaged or foreign file raises while tabmem reads
  one of its own files (``KeyError``, ``TypeError``, ``ValueError``, ``UnicodeDecodeError``,
  ``EOFError``...) into one :class:`TabmemError` line naming the file; :func:`read_json` (with
  ``require=``) and :func:`read_frame` read through it.
* Strict JSON: ``NaN``/``Infinity`` are not JSON (Python's ``json`` writes them by default and
  other readers reject the file). :func:`jsonable` turns numpy scalars and arrays, tuples and
  paths into plain JSON values and every non-finite float into ``null``; :func:`write_json`
  then refuses anything that is still not JSON.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tabmem.errors import TabmemError

__all__ = [
    "jsonable",
    "dumps_json",
    "write_json",
    "read_json",
    "read_frame",
    "reading",
    "damage",
    "DAMAGE",
    "atomic_write",
    "write_text",
    "write_frame",
]

#: what reading a damaged file raises (pandas' and pyarrow's parser errors are ValueErrors)
DAMAGE = (KeyError, IndexError, TypeError, ValueError, UnicodeDecodeError, EOFError, AttributeError, OSError)


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


def damage(exc: BaseException) -> str:
    """What is wrong with a file, from what reading it raised (one line)."""
    if isinstance(exc, KeyError):
        return f"the entry {exc.args[0]!r} is missing" if exc.args else "an entry is missing"
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text (a binary file?)"
    if isinstance(exc, EOFError):
        return "it ends early (truncated)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def reading(path: str | Path, what: str = "file") -> Iterator[Path]:
    """Read ``path`` (a file tabmem wrote) in the block: a damaged file stops with one
    :class:`TabmemError` naming it (:data:`DAMAGE`; a missing one: 'not found') instead of a
    ``KeyError``/``TypeError``/``UnicodeDecodeError``; a :class:`TabmemError` raised inside passes."""
    p = Path(path)
    try:
        yield p
    except TabmemError:
        raise
    except FileNotFoundError:
        raise TabmemError(f"{what} not found: {str(p)!r}") from None
    except DAMAGE as exc:
        raise TabmemError(f"{what} {str(p)!r} is damaged or not one tabmem wrote ({damage(exc)})") from None


def read_json(path: str | Path, *, require: Sequence[str] = ()) -> Any:
    """Read a JSON file; a missing or malformed file raises :class:`TabmemError` naming it, and so
    does one that is not an object with every key of ``require``."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TabmemError(f"file not found: {str(p)!r}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TabmemError(f"{str(p)!r} is not a readable JSON file ({damage(exc)})") from None
    if require:
        if not isinstance(doc, dict):
            raise TabmemError(f"{str(p)!r} is damaged: a JSON object was expected, not {type(doc).__name__}")
        missing = [k for k in require if k not in doc]
        if missing:
            raise TabmemError(f"{str(p)!r} is damaged: it lacks the field(s) {', '.join(missing)}")
    return doc


def read_frame(path: str | Path, what: str = "file", **kwargs: Any) -> Any:
    """Read a CSV or Parquet file tabmem wrote (by suffix) as a DataFrame; a damaged one (binary,
    truncated, columns missing) raises one :class:`TabmemError` naming it (:func:`reading`)."""
    import pandas as pd

    p = Path(path)
    with reading(p, what):
        if p.suffix.lower() in {".parquet", ".pq"}:
            return pd.read_parquet(p, **kwargs)
        return pd.read_csv(p, encoding="utf-8", **kwargs)


def write_frame(path: str | Path, frame: Any) -> Path:
    """Write a DataFrame atomically as CSV or Parquet, by suffix (no index)."""
    p = Path(path)
    if p.suffix.lower() in {".parquet", ".pq"}:
        return atomic_write(p, lambda tmp: frame.to_parquet(tmp, index=False))
    return atomic_write(p, lambda tmp: frame.to_csv(tmp, index=False))
