"""Reading user tables (CSV or Parquet) with clear errors, and CSV files read as they were meant.

pandas silently renames duplicated CSV headers (``a``, ``a.1``) and raises a deep
``UnicodeDecodeError`` on non-UTF-8 bytes; :func:`read_table` turns both into one
:class:`~tabmem.errors.TabmemError` line that names the file and the column or the line.

What a CSV file holds is decided per file and per column (docs/robustness.md, "Inputs"):

* **separator**: ``,`` ``;`` tab or ``|``, the one that splits the header and every sampled
  record into the same number (> 1) of fields (quotes respected, so a header name holding a
  comma is one column); two candidates that both do is refused, naming ``sep``;
* **decimal comma**: in a file not separated by ``,``, a column of numbers written ``50,3``
  is numerical; a comma followed by exactly three digits everywhere (``1,500``: a decimal or a
  thousands separator?) or decimal commas next to decimal points is refused, naming ``decimal``;
* **missing values**: an empty cell is missing everywhere; the strings pandas reads as missing
  by default (``NA``, ``None``, ``null``, ``NaN``, ``N/A``, ...) are missing only in a column
  whose other values are all numbers, and stay categories in a column of text (a region "NA");
* **codes**: a column of digit strings in which one has a leading zero (``00501``) or one is
  beyond 2^53 (an id that would collide as a float) is read as text, so ``00501`` stays
  ``00501`` and agrees with a Parquet twin holding strings;
* a UTF-8 byte-order mark is dropped.

What was decided is kept in ``table.attrs["tabmem.read"]`` (:func:`read_notes`), which the
command line prints on its schema line.

Privacy: these are the user's tables, so no message quotes a cell. A parse error gives the
line number and the field counts, never the parser's own text (which may quote the row).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem.errors import TabmemError, suggest

#: read_csv options for exact float parsing: pandas 3 parses exactly by default (and deprecates
#: ``float_precision``); pandas 2's default C parser is one ulp off on ~5% of values.
EXACT_FLOATS: dict[str, str] = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}

#: the strings pandas reads as missing by default (``pandas.read_csv``'s ``na_values``)
NA_TOKENS: frozenset[str] = frozenset(
    ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
     "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
)  # fmt: skip

#: separators tried when none is given, in order of preference
SEPARATORS = (",", ";", "\t", "|")
#: characters of the file read to choose the separator
SNIFF_CHARS = 1 << 16
#: integers beyond this magnitude lose digits as floats: such a column is read as text
MAX_EXACT_INT = 2**53

# patterns of whole cells (``Series.str.fullmatch``) and of their start (``str.match``)
_INT = r"[+-]?\d+"
_LEADING_ZERO = r"[+-]?0\d"
_NUMBER_OR_DECIMAL_COMMA = r"[+-]?\d+|[+-]?\d*,\d+"
_THOUSANDS = r"[+-]?\d{1,3}(?:,\d{3})+"
_SEP_NAMES = {",": "','", ";": "';'", "\t": "tab", "|": "'|'"}


def _release_arrow_memory() -> None:
    """Give back the memory pyarrow's allocator keeps after decoding a file (about 0.6 of the table's
    size, held until the process ends otherwise; docs/scale.md)."""
    import pyarrow

    pyarrow.default_memory_pool().release_unused()


def read_table(
    path: str | Path, *, encoding: str = "utf-8", sep: str | None = None, decimal: str | None = None
) -> pd.DataFrame:
    """Read a CSV or Parquet file (module docstring: how a CSV's separator, decimals, missing values and codes are read).

    ``sep`` (``,`` ``;`` tab ``|``; default: the one that fits the file) and ``decimal`` (``.`` or
    ``,``; default: ``,`` where a column holds decimal commas, in a file not separated by ``,``)
    are for CSV files. Row positions in the returned frame are 0-based record positions in the
    file (the header is not a record).
    """
    path = Path(path)
    if not path.exists():
        raise TabmemError(f"file not found: {path}")
    if path.is_dir():
        raise TabmemError(f"{path}: is a directory, not a table file")
    if sep is not None and sep not in SEPARATORS:
        raise TabmemError(f"{_name('sep', '--sep')}: {sep!r} is not a separator (use ',', ';', tab or '|')")
    if decimal is not None and decimal not in (".", ","):
        raise TabmemError(f"{_name('decimal', '--decimal')}: {decimal!r} is not a decimal mark (use '.' or ',')")
    if path.suffix.lower() in {".parquet", ".pq"}:
        try:
            table = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types; its text is not shown (it may quote data)
            raise TabmemError(f"{path}: not a readable Parquet file ({type(exc).__name__})") from None
        if pd.Index(table.columns).duplicated().any():
            dupes = sorted(set(pd.Index(table.columns)[pd.Index(table.columns).duplicated()]))
            raise TabmemError(f"{path}: duplicated column name(s) {', '.join(map(repr, dupes))}")
        _release_arrow_memory()
        return table

    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf") and encoding.lower().replace("-", "").replace("_", "") == "utf8":
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
    if sep is None:
        sep = sniff_separator(text, path)
    else:
        _check_given_sep(text, sep, path)
    if decimal == "," and sep == ",":
        raise TabmemError(f"{path}: a decimal comma needs a separator other than ',' ({_name('sep', '--sep')})")
    header_line = text.splitlines()[0]
    header = [h.strip() for h in next(csv.reader([header_line], delimiter=sep))]
    seen: set[str] = set()
    dupes = sorted({h for h in header if h in seen or seen.add(h)})  # type: ignore[func-returns-value]
    if dupes:
        raise TabmemError(f"{path}: duplicated column name {', '.join(map(repr, dupes))} in the header")
    raw_cells = _read_csv(path, text, sep=sep, dtype=str, na_filter=False)
    plan = _plan_columns(raw_cells, path, sep=sep, decimal=decimal)
    table = _read_csv(
        path,
        text,
        sep=sep,
        keep_default_na=False,
        na_values=plan["na_values"],
        dtype=dict.fromkeys(plan["as_text"], str) or None,
        decimal=plan["decimal"],
        **EXACT_FLOATS,
    )
    table.columns = [str(c).strip() for c in table.columns]
    notes: dict[str, Any] = {}
    if sep != ",":
        notes["sep"] = sep
    if plan["decimal"] != ".":
        notes["decimal"] = plan["decimal"]
    if plan["codes"]:
        notes["codes"] = {str(c).strip(): why for c, why in plan["codes"].items()}
    if plan["na_kept"]:
        notes["na_kept"] = [str(c).strip() for c in plan["na_kept"]]
    table.attrs["tabmem.read"] = notes
    return table


def read_notes(table: pd.DataFrame) -> dict[str, Any]:
    """What :func:`read_table` decided about a CSV file: ``sep``, ``decimal``, ``codes`` (column -> why read as
    text) and ``na_kept`` (text columns whose ``NA``-like strings stay categories); empty when nothing to say."""
    return dict(table.attrs.get("tabmem.read") or {})


def describe_read(notes: dict[str, Any]) -> str:
    """The notes of :func:`read_notes` in words (``''`` when there are none)."""
    parts = []
    if "sep" in notes:
        parts.append(f"separator {_SEP_NAMES.get(notes['sep'], repr(notes['sep']))}")
    if "decimal" in notes:
        parts.append("decimal comma")
    for col, why in (notes.get("codes") or {}).items():
        parts.append(f"{col} read as text ({why})")
    if notes.get("na_kept"):
        parts.append(f"NA-like strings kept as categories in {', '.join(notes['na_kept'])}")
    return "; ".join(parts)


def sniff_separator(text: str, path: str | Path = "input") -> str:
    """The separator among :data:`SEPARATORS` that splits the header and every sampled record alike.

    Candidates give the header's field count (> 1) on every record of the first
    :data:`SNIFF_CHARS` characters (quotes respected). One candidate: it. None (a ragged file):
    the one matching the header on most records, so that the parser names the bad line; a
    one-column file is read with ``,``. Two or more: refused (:class:`TabmemError` naming ``sep``).
    """
    counts = _field_counts(text)
    fits = [s for s, rows in counts.items() if rows[0] > 1 and all(n == rows[0] for n in rows)]
    if len(fits) == 1:
        return fits[0]
    if len(fits) > 1:
        names = " and ".join(_SEP_NAMES[s] for s in fits)
        raise TabmemError(
            f"{path}: the separator is ambiguous ({names} both split every line into the same number of "
            f"fields); {_which_sep(fits)}"
        )
    best = max(
        (s for s, rows in counts.items() if rows[0] > 1),
        key=lambda s: (sum(n == counts[s][0] for n in counts[s]), -SEPARATORS.index(s)),
        default=",",
    )
    return best


def _field_counts(text: str) -> dict[str, list[int]]:
    """Fields per record of the first :data:`SNIFF_CHARS` characters, per separator (quotes respected)."""
    sample = text[:SNIFF_CHARS]
    truncated = len(text) > SNIFF_CHARS
    counts: dict[str, list[int]] = {}
    for s in SEPARATORS:
        try:
            rows = [len(r) for r in csv.reader(io.StringIO(sample), delimiter=s, skipinitialspace=True) if r]
        except csv.Error:
            continue
        if truncated and len(rows) > 1:
            rows = rows[:-1]  # the last record may be cut
        if rows:
            counts[s] = rows
    return counts


def _check_given_sep(text: str, sep: str, path: Path) -> None:
    """A given separator that leaves one column where another fits the file is refused (a wrong ``sep``)."""
    counts = _field_counts(text)
    if counts.get(sep, [2])[0] > 1:
        return
    fits = [s for s, rows in counts.items() if rows[0] > 1 and all(n == rows[0] for n in rows)]
    if fits:
        raise TabmemError(
            f"{path}: {_name('sep', '--sep')} {_SEP_NAMES[sep]} leaves the header in one column, while the file "
            f"looks {_SEP_NAMES[fits[0]]}-separated"
        )


def _which_sep(candidates: list[str]) -> str:
    """``say which: --sep ; or --sep ,`` (``sep=';'`` in the library), or how to re-save the file."""
    flag = suggest("sep", "--sep")
    if flag is None:
        return "re-save the file with one separator"
    if flag == "--sep":
        return "say which: " + " or ".join(f"--sep {'tab' if s == chr(9) else s}" for s in candidates)
    return "say which: " + " or ".join(f"sep={s!r}" for s in candidates)


def _name(parameter: str, flag: str) -> str:
    """``parameter`` in the library, ``flag`` under the command line (when the command has it)."""
    return suggest(parameter, flag) or parameter


def _advice(parameter: str, flag: str, value: str, verb: str, fallback: str) -> str:
    """``verb sep=','`` in the library, ``verb --sep ,`` under a command that has the flag, else ``fallback``."""
    named = suggest(f"{parameter}={value!r}", flag)
    if named is None:
        return fallback
    return f"{verb} {flag} {value}" if named == flag else f"{verb} {named}"


def _read_csv(path: Path, text: str, **options: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(io.StringIO(text), skipinitialspace=True, **options)
    except (pd.errors.ParserError, ValueError) as exc:
        raise TabmemError(f"{path}: could not be parsed as CSV ({_parse_problem(str(exc))})") from None


def _plan_columns(cells: pd.DataFrame, path: Path, *, sep: str, decimal: str | None) -> dict[str, Any]:
    """Per column of raw cells (strings): which strings are missing, which columns are text, the decimal mark."""
    na_values: dict[Any, list[str]] = {}
    as_text: list[Any] = []
    codes: dict[Any, str] = {}
    na_kept: list[Any] = []
    comma: dict[Any, bool] = {}  # decimal-comma column -> every comma is followed by 3 digits (thousands?)
    dotted: list[Any] = []
    numeric_na = sorted(NA_TOKENS)
    for col in cells.columns:
        values = pd.Series(pd.unique(cells[col].to_numpy(dtype=object)), dtype=object).str.strip().unique()
        is_na = pd.Series(values, dtype=object).isin(NA_TOKENS).to_numpy()
        present = pd.Series(values[~is_na], dtype=object)
        if present.empty:  # empty or NA-like only: missing
            na_values[col] = numeric_na
            continue
        numbers = pd.to_numeric(present, errors="coerce")
        if numbers.notna().all():
            kind = _code_kind(present, numbers)
            if kind is None:
                if present.str.contains(".", regex=False).any():
                    dotted.append(col)
            else:
                codes[col] = kind
                as_text.append(col)
            na_values[col] = numeric_na
            continue
        if sep != "," and present.str.fullmatch(_NUMBER_OR_DECIMAL_COMMA).all():
            with_comma = present[present.str.contains(",", regex=False)]
            comma[col] = bool(with_comma.str.fullmatch(_THOUSANDS).all())
            continue
        na_values[col] = [""]
        if (is_na & (values != "")).any():
            na_kept.append(col)
    if decimal is None:
        decimal = "."
        if comma:
            ambiguous = [c for c, thousands in comma.items() if thousands]
            if ambiguous:
                raise TabmemError(
                    f"{path}: column {str(ambiguous[0]).strip()!r} holds numbers with a comma followed by three "
                    f"digits (a decimal comma or a thousands separator?); "
                    f"{_advice('decimal', '--decimal', ',', 'pass', 're-save the file with decimal points')} if the "
                    "comma is the decimal mark, or re-save the file without thousands separators"
                )
            if dotted:
                raise TabmemError(
                    f"{path}: column {str(next(iter(comma))).strip()!r} holds decimal commas and column "
                    f"{str(dotted[0]).strip()!r} decimal points; "
                    f"{_advice('decimal', '--decimal', ',', 'pass', 're-save the file with one decimal mark')}"
                )
            decimal = ","
    for col in comma:
        na_values[col] = numeric_na if decimal == "," else [""]
    return {"na_values": na_values, "as_text": as_text, "codes": codes, "na_kept": na_kept, "decimal": decimal}


def _code_kind(present: pd.Series, numbers: pd.Series) -> str | None:
    """Why a column of numbers is read as text (codes), or None: integers only, with a leading zero or beyond 2^53."""
    as_float = numbers.to_numpy(dtype=float)
    if not (np.isfinite(as_float).all() and (np.mod(as_float, 1.0) == 0).all()):
        return None
    if not present.str.fullmatch(_INT).all():
        return None  # 1e3, 2.0: numbers written as numbers
    if present.str.match(_LEADING_ZERO).any():
        return "codes with leading zeros"
    long = present[present.str.len() >= 16]  # the others are below 2^53
    if any(abs(int(v)) > MAX_EXACT_INT for v in long):
        return "integers beyond 2^53"
    return None


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
