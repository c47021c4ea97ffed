"""Reading user tables (CSV or Parquet) with clear errors.

pandas silently renames duplicated CSV headers (``a``, ``a.1``) and raises a deep
``UnicodeDecodeError`` on non-UTF-8 bytes; :func:`read_table` turns both into a
:class:`~tabmem.errors.SchemaError` that names the file, the column or the line.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from tabmem.errors import SchemaError, TabmemError

#: read_csv options for exact float parsing: pandas 3 parses exactly by default (and deprecates
#: ``float_precision``); pandas 2's default C parser is one ulp off on ~5% of values.
EXACT_FLOATS: dict[str, str] = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


def read_table(path: str | Path, *, encoding: str = "utf-8", sep: str | None = None) -> pd.DataFrame:
    """Read a CSV (``sep`` sniffed from ``,;\\t|`` when not given) or Parquet file.

    A UTF-8 byte-order mark is accepted. Row positions in the returned frame are 0-based
    record positions in the file (the header is not a record).
    """
    path = Path(path)
    name = path.name
    if not path.exists():
        raise TabmemError(f"file not found: {path}")
    if path.suffix.lower() in {".parquet", ".pq"}:
        try:
            table = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types
            raise TabmemError(f"{path}: not a readable Parquet file ({exc})") from exc
        if pd.Index(table.columns).duplicated().any():
            dupes = sorted(set(pd.Index(table.columns)[pd.Index(table.columns).duplicated()]))
            raise SchemaError(name, [f"duplicated column name {c!r}" for c in dupes])
        return table

    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf") and encoding.lower().replace("-", "") == "utf8":
        raw = raw[3:]
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SchemaError(
            name,
            [
                f"is not valid {encoding}: byte 0x{raw[exc.start]:02x} at offset {exc.start} (line {line}); "
                "re-save the file as UTF-8 or pass --encoding (for example latin-1)"
            ],
        ) from None
    if not text.strip():
        raise SchemaError(name, ["the file is empty"])
    header_line = text.splitlines()[0]
    if sep is None:
        try:
            sep = csv.Sniffer().sniff(header_line, delimiters=",;\t|").delimiter
        except csv.Error:
            sep = ","
    header = next(csv.reader([header_line], delimiter=sep))
    header = [h.strip() for h in header]
    seen: set[str] = set()
    dupes = sorted({h for h in header if h in seen or seen.add(h)})  # type: ignore[func-returns-value]
    if dupes:
        raise SchemaError(name, [f"duplicated column name {c!r} in the header" for c in dupes])
    try:
        table = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True, **EXACT_FLOATS)
    except pd.errors.ParserError as exc:
        raise SchemaError(name, [f"could not be parsed as CSV: {exc}"]) from None
    table.columns = [str(c).strip() for c in table.columns]
    return table


def write_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write ``table`` as CSV or Parquet according to the suffix; parents are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in {".parquet", ".pq"}:
        table.to_parquet(path, index=False)
    else:
        table.to_csv(path, index=False)
    return path
