"""Reading user tables (CSV or Parquet) with clear errors.

pandas silently renames duplicated CSV headers (``a``, ``a.1``) and raises a deep
``UnicodeDecodeError`` on non-UTF-8 bytes; :func:`read_table` turns both into one
:class:`~tabmem.errors.TabmemError` line that names the file and the column or the line.

Privacy: these are the user's tables, so no message quotes a cell. A parse error gives the
line number and the field counts, never the parser's own text (which may quote the row).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from tabmem.errors import TabmemError, suggest

#: read_csv options for exact float parsing: pandas 3 parses exactly by default (and deprecates
#: ``float_precision``); pandas 2's default C parser is one ulp off on ~5% of values.
EXACT_FLOATS: dict[str, str] = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


def read_table(path: str | Path, *, encoding: str = "utf-8", sep: str | None = None) -> pd.DataFrame:
    """Read a CSV (``sep`` sniffed from ``,;\\t|`` when not given) or Parquet file.

    A UTF-8 byte-order mark is accepted. Row positions in the returned frame are 0-based
    record positions in the file (the header is not a record).
    """
    path = Path(path)
    if not path.exists():
        raise TabmemError(f"file not found: {path}")
    if path.is_dir():
        raise TabmemError(f"{path}: is a directory, not a table file")
    if path.suffix.lower() in {".parquet", ".pq"}:
        try:
            table = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types; its text is not shown (it may quote data)
            raise TabmemError(f"{path}: not a readable Parquet file ({type(exc).__name__})") from None
        if pd.Index(table.columns).duplicated().any():
            dupes = sorted(set(pd.Index(table.columns)[pd.Index(table.columns).duplicated()]))
            raise TabmemError(f"{path}: duplicated column name(s) {', '.join(map(repr, dupes))}")
        return table

    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf") and encoding.lower().replace("-", "") == "utf8":
        raw = raw[3:]
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        flag = suggest("encoding='latin-1'", "--encoding")
        if flag is None:
            advice = "re-save the file as UTF-8"
        else:
            advice = f"pass {flag + ' latin-1' if flag == '--encoding' else flag} (or the file's encoding)"
        raise TabmemError(
            f"{path}: is not valid {encoding}: byte 0x{raw[exc.start]:02x} at offset {exc.start} (line {line}); {advice}"
        ) from None
    if not text.strip():
        raise TabmemError(f"{path}: the file is empty")
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
        raise TabmemError(f"{path}: duplicated column name {', '.join(map(repr, dupes))} in the header")
    try:
        table = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True, **EXACT_FLOATS)
    except (pd.errors.ParserError, ValueError) as exc:
        raise TabmemError(f"{path}: could not be parsed as CSV ({_parse_problem(str(exc))})") from None
    table.columns = [str(c).strip() for c in table.columns]
    return table


def _parse_problem(message: str) -> str:
    """The parser's complaint reduced to numbers (it may quote the offending row, which is user data)."""
    m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
    if m:
        return f"line {m.group(2)} has {m.group(3)} fields, the header {m.group(1)}"
    m = re.search(r"(?:line|row) (\d+)", message)
    if m:
        return f"malformed near line {m.group(1)}"
    return "malformed CSV"


def write_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write ``table`` as CSV or Parquet according to the suffix; parents are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in {".parquet", ".pq"}:
        table.to_parquet(path, index=False)
    else:
        table.to_csv(path, index=False)
    return path
