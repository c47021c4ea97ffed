"""Table schema: which columns are numerical or categorical, the target and the task.

A :class:`Schema` is fitted on (or declared for) the *training* table; every other table
(synthetic, holdout, members, ...) is checked against it with :func:`validate_table` before
any distance is computed, so that bad input gives a clear message instead of a wrong number.

Column-kind inference rule (:meth:`Schema.infer`), applied to columns the user did not name:

1. bool, object, string and category dtypes are **categorical**, except text columns whose
   every value is a number (read from JSON, say), which are numerical;
2. integer columns with at most ``max_int_categories`` (default 20) distinct values are
   **categorical** (codes such as ``SEX`` 1/2, ``EDUCATION`` 0..6), provided the values repeat:
   at most half as many distinct values as rows. A code column repeats its values; a column of
   mostly distinct integers is a measurement, whatever its length (without this, every integer
   column of a one-row table would be categorical);
3. everything else (floats, integers with many values) is **numerical**.

A text column that is numeric except for a few cells (at most 5% of its values, e.g. one
``forty`` among ages) is an error naming the column, the count and the first rows, not a silent
switch to categorical: fix the cells, or name the column categorical (``categorical=[...]``,
``--categorical``) to accept it as such.

The target's kind decides the task: categorical with 2 levels ``binclass``, more
``multiclass``; numerical ``regression``.

Numerical values must lie in the *value domain*: 0 or ``1e-100 <= |x| <= 1e15``
(:data:`MAX_MAGNITUDE`, :data:`MIN_MAGNITUDE`; ``docs/neighbors.md``). :func:`validate` refuses a
value outside it with one line naming the table, the column, the first row and its magnitude,
since every consumer (distances, encoders, generators, metrics) is exact only inside it.

Categorical values are compared as *canonical strings* (see :func:`canonical_category`):
``1``, ``1.0``, ``"1"`` and ``np.int64(1)`` are the same category, ``True`` is ``"True"``, and a
missing value is the category ``"<NA>"``. This removes the dtype trap of the papers' code
(``1 != "1"`` after a CSV round trip) without changing any comparison of real categories.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Sequence, get_args

import numpy as np
import pandas as pd

from tabmem._checks import check_choice
from tabmem.errors import ParameterError, SchemaError, suggest

ColumnKind = Literal["numerical", "categorical"]
Task = Literal["binclass", "multiclass", "regression"]
NA_CATEGORY = "<NA>"
NanPolicy = Literal["error", "drop", "match"]
UnseenPolicy = Literal["error", "drop", "mismatch"]
ExtraPolicy = Literal["error", "ignore"]
#: The value domain (``docs/neighbors.md``): every numerical value is 0 or has a magnitude in
#: ``[MIN_MAGNITUDE, MAX_MAGNITUDE]``. :func:`validate` refuses anything else, so every scaled
#: value, difference, square and sum of squares the distances and encoders compute stays a
#: normal float64 (no overflow, no underflow): the float64 formulas are then exact as written.
MAX_MAGNITUDE = 1e15
MIN_MAGNITUDE = 1e-100


def canonical_category(value: Any) -> str:
    """Return the canonical string of one categorical value (see module docstring)."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return NA_CATEGORY
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if f.is_integer() and abs(f) < 2**53:
            return str(int(f))
        return repr(f)
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def canonical_categories(series: pd.Series) -> np.ndarray:
    """Vectorised :func:`canonical_category` for a column (object array of str)."""
    s = series
    if pd.api.types.is_bool_dtype(s.dtype) and not s.isna().any():  # nullable boolean with <NA>: below
        return np.where(s.to_numpy(dtype=bool), "True", "False").astype(object)
    if pd.api.types.is_integer_dtype(s.dtype) and not s.isna().any():
        return s.astype("int64").astype(str).to_numpy(dtype=object)
    if pd.api.types.is_float_dtype(s.dtype):
        values = s.to_numpy(dtype=float)
        out = np.empty(len(values), dtype=object)
        nan = np.isnan(values)
        integral = ~nan & (np.mod(values, 1.0) == 0) & (np.abs(values) < 2**53)
        out[nan] = NA_CATEGORY
        out[integral] = values[integral].astype(np.int64).astype(str)
        rest = ~nan & ~integral
        out[rest] = [repr(float(v)) for v in values[rest]]
        return out
    # object/string columns: canonicalise each distinct value once (a column of strings is the
    # common case; mixed Python types take the per-value path, since 1 == 1.0 == True hash alike)
    codes, uniques = pd.factorize(s.to_numpy(dtype=object), use_na_sentinel=True)
    if all(type(u) is str for u in uniques):
        lookup = np.array([canonical_category(u) for u in uniques] + [NA_CATEGORY], dtype=object)
        return lookup[codes]  # code -1 (missing) takes the last entry
    return np.array([canonical_category(v) for v in s.tolist()], dtype=object)


class _Columns(tuple):
    """A tuple of column names whose ``in`` is a set lookup.

    Membership tests (``c in schema.numerical``) run once per column in many places; on a plain
    tuple each is linear in the number of columns, which makes a 100,000-column table quadratic.
    It compares, hashes, prints and pickles as the tuple it is.
    """

    def __new__(cls, items=()):  # noqa: ANN001, ANN204
        self = super().__new__(cls, items)
        self._set = frozenset(self)
        return self

    def __contains__(self, item: object) -> bool:
        try:
            return item in self._set
        except TypeError:  # an unhashable probe is in no tuple of names
            return False


@dataclass(frozen=True)
class Schema:
    """Column kinds of a table, its target and task.

    ``columns`` keeps the training table's column order; ``numerical`` and ``categorical``
    partition it. The target, when present, is one of the columns (categorical for
    classification, numerical for regression).
    """

    columns: tuple[str, ...]
    numerical: tuple[str, ...]
    categorical: tuple[str, ...]
    target: str | None = None
    task: Task | None = None
    name: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("columns", "numerical", "categorical"):
            object.__setattr__(self, name, _Columns(getattr(self, name)))
        seen = set()
        dupes = [c for c in self.columns if c in seen or seen.add(c)]  # type: ignore[func-returns-value]
        if dupes:
            raise ParameterError(f"Schema: duplicated column names {dupes}")
        both = set(self.numerical) & set(self.categorical)
        if both:
            raise ParameterError(f"Schema: columns declared both numerical and categorical: {sorted(both)}")
        kinds = set(self.numerical) | set(self.categorical)
        if kinds != set(self.columns):
            missing = [c for c in self.columns if c not in kinds]
            extra = sorted(kinds - set(self.columns))
            raise ParameterError(f"Schema: columns without a kind {missing}; kinds for unknown columns {extra}")
        if self.target is not None and self.target not in self.columns:
            raise ParameterError(f"Schema: target {self.target!r} is not one of the columns")

    # ----------------------------------------------------------------- queries
    def kind(self, column: str) -> ColumnKind:
        """Kind of ``column`` (``KeyError`` naming it if unknown)."""
        if column in self.numerical:
            return "numerical"
        if column in self.categorical:
            return "categorical"
        raise KeyError(f"column {column!r} is not in the schema")

    @property
    def features(self) -> tuple[str, ...]:
        """All columns except the target."""
        return tuple(c for c in self.columns if c != self.target)

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    # ------------------------------------------------------------ construction
    @classmethod
    def infer(
        cls,
        table: pd.DataFrame,
        *,
        categorical: Sequence[str] | None = None,
        numerical: Sequence[str] | None = None,
        target: str | None = None,
        task: Task | None = None,
        max_int_categories: int = 20,
        name: str | None = None,
    ) -> "Schema":
        """Infer column kinds from ``table``; user-named kinds always win (module docstring)."""
        _check_unique_columns(table, "training")
        columns = [str(c) for c in table.columns]
        categorical = list(categorical or [])
        numerical = list(numerical or [])
        unknown = [c for c in [*categorical, *numerical, *([target] if target else [])] if c not in columns]
        if unknown:
            raise SchemaError(
                "training", [f"column {c!r} named on the command line is not in the table" for c in unknown]
            )
        _check_kinds_disjoint(categorical, numerical)
        cat, num, problems = [], [], []
        named_cat, named_num = set(categorical), set(numerical)
        for j, (col, dtype) in enumerate(zip(columns, table.dtypes, strict=True)):
            if col in named_cat:
                cat.append(col)
            elif col in named_num:
                num.append(col)
            elif isinstance(dtype, np.dtype) and dtype.kind == "f":
                num.append(col)  # a float column is numerical (no per-column pass: wide tables)
            else:
                series = table.iloc[:, j]
                bad = _non_numeric_cells(series)
                if bad is not None:
                    problems.append(_mostly_numeric_problem(col, bad))
                (cat if _looks_categorical(series, max_int_categories) else num).append(col)
        if problems:
            raise SchemaError("training", problems)
        if target is not None and task is None:
            if target in cat:
                n_levels = table[target].nunique(dropna=False)
                task = "binclass" if n_levels <= 2 else "multiclass"
            else:
                task = "regression"
        return cls(tuple(columns), tuple(num), tuple(cat), target, task, name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "columns": list(self.columns),
            "numerical": list(self.numerical),
            "categorical": list(self.categorical),
            "target": self.target,
            "task": self.task,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Schema":
        return cls(
            tuple(d["columns"]),
            tuple(d["numerical"]),
            tuple(d["categorical"]),
            d.get("target"),
            d.get("task"),
            d.get("name"),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def with_overrides(
        self,
        *,
        categorical: Iterable[str] = (),
        numerical: Iterable[str] = (),
        target: str | None = None,
    ) -> "Schema":
        """Copy with some columns re-declared (used by ``--categorical/--numerical/--target``)."""
        cat_set, num_set = set(categorical), set(numerical)
        unknown = sorted((cat_set | num_set | ({target} if target else set())) - set(self.columns))
        if unknown:
            raise SchemaError("training", [f"column {c!r} is not in the table" for c in unknown])
        _check_kinds_disjoint(cat_set, num_set)
        cat = [c for c in self.columns if (c in self.categorical and c not in num_set) or c in cat_set]
        num = [c for c in self.columns if c not in cat]
        tgt = target or self.target
        task = self.task if tgt == self.target and not (cat_set | num_set) & {tgt} else None
        if tgt is not None and task is None:
            task = "multiclass" if tgt in cat else "regression"
        return Schema(self.columns, tuple(num), tuple(cat), tgt, task, self.name)


#: name parts that mark a key: ``patient_id``, ``PatientID``, ``record_key``, ``uuid``, ``case_no``, ``mrn``
KEY_NAME_PARTS = frozenset({"id", "key", "uuid", "guid", "code", "number", "no", "nr", "num", "mrn", "ssn"})
#: tables with fewer rows are not checked for keys (any column is unique on a handful of rows)
KEY_MIN_ROWS = 20
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_ID_VALUE = re.compile(
    r"[A-Za-z]{0,6}[-_]?\d{3,}\Z|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
)


def key_like_columns(table: pd.DataFrame, schema: Schema | None = None) -> list[str]:
    """Columns of ``table`` that look like identifiers (keys), in table order.

    A key holds one distinct value per row, none missing, of integer or text kind (a float with
    decimals is a measurement, never a key), and has a key-like name (``id``, ``*_id``, ``key``,
    ``uuid``, ``code``, ``number``/``no``, ``mrn``, ...: :data:`KEY_NAME_PARTS`) or key-like values
    (consecutive integers in file order, ``P000123``-style or UUID strings). The target is never
    a key. Tables under :data:`KEY_MIN_ROWS` rows are not checked. Nothing is dropped here: the
    caller warns (:func:`key_columns_warning`) and the user decides.
    """
    n = len(table)
    if n < KEY_MIN_ROWS:
        return []
    target = schema.target if schema is not None else None
    out = []
    for j, col in enumerate(table.columns):
        if str(col) == target:
            continue
        s = table.iloc[:, j]
        if s.isna().any() or s.nunique(dropna=False) != n:
            continue
        dtype = s.dtype
        parts = [p.lower() for p in _NAME_PART.findall(str(col))]
        named = bool(parts) and (parts[-1] in KEY_NAME_PARTS or parts[0] in {"id", "uuid", "guid"})
        if pd.api.types.is_bool_dtype(dtype):
            continue
        if pd.api.types.is_integer_dtype(dtype) or (
            pd.api.types.is_float_dtype(dtype) and bool(np.all(np.mod(s.to_numpy(dtype=float), 1.0) == 0))
        ):
            values = s.to_numpy(dtype=float) if pd.api.types.is_float_dtype(dtype) else s.to_numpy()
            consecutive = bool(np.all(np.diff(values) == 1))
            if named or consecutive:
                out.append(str(col))
        elif pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            values = [str(v).strip() for v in s.tolist()]
            if named or all(_ID_VALUE.match(v) for v in values):
                out.append(str(col))
    return out


def key_columns_warning(columns: Sequence[str]) -> str:
    """The warning about identifier columns: what they do to the figures and how to leave them out."""
    names = ", ".join(repr(c) for c in columns)
    flag = suggest(f"table.drop(columns={list(columns)!r})", "--exclude")
    if flag is None:
        how = "drop them from the input files"
    elif flag.startswith("--"):
        how = f"leave them out with --exclude {','.join(columns)}"
    else:
        how = f"leave them out of every table ({flag})"
    return (
        f"column(s) {names} look like identifiers (one distinct value per row): a key makes every row unique "
        f"and moves the distances (and the holdout baseline) by the ids, not the records; {how}"
    )


#: a text column is "numeric except for a few cells" when at most this share of its values is not a number
MOSTLY_NUMERIC_SHARE = 0.05


def _looks_categorical(series: pd.Series, max_int_categories: int) -> bool:
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
        return True
    if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        # object columns of numbers (e.g. read from JSON) still count as numerical, codes do not
        coerced = pd.to_numeric(series, errors="coerce")
        return bool(coerced.isna().sum() > series.isna().sum()) or _is_code_column(series)
    if pd.api.types.is_integer_dtype(dtype):
        if series.notna().any() and (int(series.max()) > MAX_EXACT_INT or int(series.min()) < -MAX_EXACT_INT):
            return True  # ids beyond 2^53 would collide as floats: categories
        distinct = series.nunique(dropna=True)
        return distinct <= max_int_categories and 2 * distinct <= int(series.notna().sum())
    return False


#: integers beyond this magnitude lose digits as floats
MAX_EXACT_INT = 2**53
_DIGITS = re.compile(r"[+-]?\d+\Z")
_LEADING_ZERO = re.compile(r"[+-]?0\d+\Z")


def _is_code_column(series: pd.Series) -> bool:
    """A text column of digit strings where one has a leading zero (``00501``) or one is beyond 2^53: codes."""
    values = [str(v).strip() for v in series.dropna().unique()]
    if not values or not all(_DIGITS.match(v) for v in values):
        return False
    return any(_LEADING_ZERO.match(v) for v in values) or any(abs(int(v)) > MAX_EXACT_INT for v in values)


def _non_numeric_cells(series: pd.Series) -> np.ndarray | None:
    """Row positions of the non-numeric cells of a text column that is numeric except for a few, else None."""
    dtype = series.dtype
    if not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
        return None
    present = series.notna().to_numpy()
    if not present.any() or pd.api.types.is_bool_dtype(dtype):
        return None
    values = series.to_numpy(dtype=object)
    if any(isinstance(v, (bool, np.bool_)) for v in values[present][:1000]):
        return None
    numeric = pd.to_numeric(series, errors="coerce").notna().to_numpy()
    bad = present & ~numeric
    n_bad, n_present = int(bad.sum()), int(present.sum())
    if n_bad == 0 or n_bad == n_present or n_bad > MOSTLY_NUMERIC_SHARE * n_present:
        return None
    return np.flatnonzero(bad)


def _mostly_numeric_problem(col: str, rows: np.ndarray) -> str:
    flag = suggest(f"categorical=[{col!r}]", "--categorical")
    if flag is None:
        accept = "declare it"
    else:
        accept = f"pass --categorical {col}" if flag.startswith("--") else f"pass {flag}"
    return (
        f"column {col!r} is numeric except for {len(rows)} cell(s) (first rows: {_head(rows)}); "
        f"fix those cells (or leave them empty), or {accept} to treat the column as categorical"
    )


def _check_kinds_disjoint(categorical: Iterable[str], numerical: Iterable[str]) -> None:
    both = sorted(set(categorical) & set(numerical))
    if both:
        raise SchemaError("training", [f"column {c!r} is declared both categorical and numerical" for c in both])


def _check_unique_columns(table: pd.DataFrame, name: str) -> None:
    cols = pd.Index([str(c) for c in table.columns])
    if cols.duplicated().any():
        dupes = sorted(set(cols[cols.duplicated()]))
        raise SchemaError(name, [f"duplicated column name {c!r}" for c in dupes])


@dataclass(frozen=True, eq=False)
class ValidatedTable:
    """A table checked against a schema once, with the policies it was checked under.

    Produced by :func:`validate`; every function below the command line that takes a table
    also takes a ``ValidatedTable`` and then does not validate it again (only the checks that
    a stricter policy adds, on the already clean values: a few vectorised comparisons).

    ``data`` is the clean frame (schema column order; numerical float64, categorical canonical
    strings; index = 0-based row positions in the original table, so dropped rows keep their
    ids). ``dtypes`` are the original table's column dtypes (names, ``str(dtype)``; generated
    tables are given back in them by :func:`tabmem.data.dtypes.restore_dtypes`). ``categories``
    are the allowed categories it was checked against (``None``: not checked against any) and
    ``unseen`` what was done with others. ``source`` is
    the table as given (its kept rows with their original values and dtypes; a reference, not a
    copy) for the few consumers defined on raw values (the papers' string formats).
    """

    data: pd.DataFrame
    schema: Schema
    name: str
    nan: NanPolicy
    unseen: UnseenPolicy
    categories: dict[str, frozenset[str]] | None
    dtypes: dict[str, str]
    has_nan: bool
    source: pd.DataFrame | None = None

    def __len__(self) -> int:
        return len(self.data)

    @property
    def index(self) -> pd.Index:
        return self.data.index

    def __repr__(self) -> str:
        return (
            f"ValidatedTable({self.name!r}, {len(self.data)} rows x {self.schema.n_columns} columns, nan={self.nan!r})"
        )


def validate(
    table: pd.DataFrame | ValidatedTable,
    schema: Schema,
    *,
    name: str = "synthetic",
    categories: dict[str, set[str]] | None = None,
    nan: NanPolicy = "error",
    unseen: UnseenPolicy = "error",
    extra: ExtraPolicy = "error",
) -> ValidatedTable:
    """Check ``table`` against ``schema`` once and return a :class:`ValidatedTable`.

    Parameters are those of :func:`validate_table`. Given a ``ValidatedTable`` for the same
    schema, only what the requested policies add is checked (missing values under
    ``nan="error"``/``"drop"``, categories outside ``categories`` under ``unseen="error"``/``"drop"``)
    and the table is returned as is when nothing changes.
    """
    # a misspelt policy must not silently act as another one (e.g. keep missing values)
    check_choice("nan", nan, get_args(NanPolicy))
    check_choice("unseen", unseen, get_args(UnseenPolicy))
    check_choice("extra", extra, get_args(ExtraPolicy))
    _COUNTER[0] += 1
    if isinstance(table, ValidatedTable):
        if table.schema == schema:
            return _recheck(table, categories=categories, nan=nan, unseen=unseen)
        table = table.data  # another schema: validate its clean values afresh
    clean = _validate_raw(table, schema, name=name, categories=categories, nan=nan, unseen=unseen, extra=extra)
    names: dict[Any, str] = {}  # str() of each distinct dtype once (a wide table has few)
    dtypes = {str(c): names.setdefault(dt, str(dt)) for c, dt in zip(table.columns, table.dtypes, strict=True)}
    num = list(schema.numerical)
    has_nan = bool(num) and bool(np.isnan(clean[num].to_numpy(dtype=np.float64)).any())
    cats = None if categories is None else {c: frozenset(v) for c, v in categories.items()}
    source = table if len(clean) == len(table) else table.iloc[clean.index.to_numpy()]
    return ValidatedTable(clean, schema, name, nan, unseen, cats, dtypes, has_nan, source)


# number of validate() calls, read by the tests that prove each table is validated once
_COUNTER = [0]


def as_frame(table: pd.DataFrame | ValidatedTable) -> pd.DataFrame:
    """The frame behind ``table`` (its clean data when it is a :class:`ValidatedTable`)."""
    return table.data if isinstance(table, ValidatedTable) else table


def raw_frame(table: pd.DataFrame | ValidatedTable) -> pd.DataFrame:
    """The table with its original values (a validated table's ``source``, else its clean data)."""
    if isinstance(table, ValidatedTable):
        return table.source if table.source is not None else table.data
    return table


def concat_validated(parts: Sequence[ValidatedTable], *, name: str) -> ValidatedTable:
    """Row-wise concatenation of tables validated against the same schema (positions renumbered).

    The result carries the loosest policies of its parts, so it can be passed on without being
    validated again.
    """
    if not parts:
        raise ParameterError("concat_validated needs at least one table")
    schema = parts[0].schema
    if any(p.schema != schema for p in parts):
        raise ParameterError("concat_validated: the tables were validated against different schemas")
    data = pd.concat([p.data for p in parts], ignore_index=True)
    nan: NanPolicy = "match" if any(p.nan == "match" for p in parts) else parts[0].nan
    unseen: UnseenPolicy = "mismatch" if any(p.unseen == "mismatch" for p in parts) else parts[0].unseen
    cats = parts[0].categories if all(p.categories == parts[0].categories for p in parts) else None
    source = None
    if all(p.source is not None for p in parts):
        cols = list(schema.columns)
        source = pd.concat([p.source.rename(columns=str)[cols] for p in parts], ignore_index=True)  # type: ignore[union-attr]
    has_nan = any(p.has_nan for p in parts)
    return ValidatedTable(data, schema, name, nan, unseen, cats, dict(parts[0].dtypes), has_nan, source)


def _recheck(
    vt: ValidatedTable,
    *,
    categories: dict[str, set[str]] | None,
    nan: NanPolicy,
    unseen: UnseenPolicy,
) -> ValidatedTable:
    data, problems = vt.data, []
    drop = np.zeros(len(data), dtype=bool)
    if vt.has_nan and nan in ("error", "drop"):
        for col in vt.schema.numerical:
            miss = np.isnan(data[col].to_numpy(dtype=np.float64))
            if miss.any():
                if nan == "error":
                    problems.append(_nan_problem(col, data.index.to_numpy()[miss]))
                drop |= miss
    if categories is not None and (unseen != "mismatch" or nan != "match"):
        for col, allowed in categories.items():
            if col not in data.columns:
                continue
            if (
                vt.categories is not None
                and col in vt.categories
                and vt.categories[col] <= set(allowed)
                and (nan == "match" or vt.nan != "match")
            ):
                continue  # already checked against these categories (or a subset) under a policy as strict
            canon = data[col].to_numpy(dtype=object)
            found, bad = _category_check(col, canon, allowed, nan, unseen, data.index.to_numpy())
            problems += found
            drop |= bad
    if problems:
        raise SchemaError(vt.name, problems)
    if not drop.any():
        if categories is None or (unseen == "mismatch" and nan == "match"):
            return vt
        cats = {c: frozenset(v) for c, v in categories.items()}
        return ValidatedTable(vt.data, vt.schema, vt.name, vt.nan, unseen, cats, vt.dtypes, vt.has_nan, vt.source)
    kept = data.loc[~drop]
    if len(kept) == 0:
        raise SchemaError(vt.name, ["no rows left after dropping rows with missing values or unseen categories"])
    num = list(vt.schema.numerical)
    has_nan = bool(num) and bool(np.isnan(kept[num].to_numpy(dtype=np.float64)).any())
    cats = vt.categories if categories is None else {c: frozenset(v) for c, v in categories.items()}
    source = None if vt.source is None else vt.source.iloc[np.flatnonzero(~drop)]
    return ValidatedTable(kept, vt.schema, vt.name, nan, unseen, cats, vt.dtypes, has_nan, source)


def _advice(options: list[tuple[str | None, str]], fallback: str) -> str:
    """'pass A to x or B to y' from the (setting, purpose) pairs this command offers, else ``fallback``."""
    offered = [f"{setting} to {purpose}" for setting, purpose in options if setting]
    return "pass " + " or ".join(offered) if offered else fallback


def _nan_problem(col: str, rows: np.ndarray, *, categorical: bool = False) -> str:
    advice = _advice(
        [
            (suggest("nan='drop'", "--nan", "drop"), "drop those rows"),
            (suggest("nan='match'", "--nan", "match"), "compare them"),
        ],
        "drop or fill those rows first",
    )
    where = " (the training column has none)" if categorical else ""
    return f"column {col!r} has {len(rows)} missing value(s){where} (first rows: {_head(rows)}); {advice}"


def _unseen_problem(col: str, rows: np.ndarray) -> str:
    advice = _advice(
        [
            (suggest("unseen='mismatch'", "--unseen", "mismatch"), "treat them as different from every training value"),
            (suggest("unseen='drop'", "--unseen", "drop"), "drop those rows"),
        ],
        "drop those rows or map them to training categories first",
    )
    return (
        f"column {col!r} has {len(rows)} row(s) with categories never seen in training "
        f"(first rows: {_head(rows)}); {advice}"
    )


def _category_check(
    col: str, canon: np.ndarray, allowed: set[str] | frozenset[str], nan: NanPolicy, unseen: UnseenPolicy, positions
) -> tuple[list[str], np.ndarray]:
    """Problems and rows to drop for categories outside ``allowed``.

    A missing cell (``"<NA>"``) in a column whose training values have none is a *missing value*,
    handled by ``nan`` (error / drop / match: kept, it then matches no training category); any
    other value outside ``allowed`` is an unseen category, handled by ``unseen``.
    """
    outside = ~pd.Series(canon, dtype=object).isin(allowed).to_numpy()
    missing = outside & (canon == NA_CATEGORY)
    unseen_mask = outside & ~missing
    problems: list[str] = []
    drop = np.zeros(len(canon), dtype=bool)
    if missing.any():
        if nan == "error":
            problems.append(_nan_problem(col, positions[missing], categorical=True))
        elif nan == "drop":
            drop |= missing
    if unseen_mask.any():
        if unseen == "error":
            problems.append(_unseen_problem(col, positions[unseen_mask]))
        elif unseen == "drop":
            drop |= unseen_mask
    return problems, drop


def validate_table(
    table: pd.DataFrame | ValidatedTable,
    schema: Schema,
    *,
    name: str = "synthetic",
    categories: dict[str, set[str]] | None = None,
    nan: NanPolicy = "error",
    unseen: UnseenPolicy = "error",
    extra: ExtraPolicy = "error",
) -> pd.DataFrame:
    """The clean frame of :func:`validate` (kept for code that wants the frame itself)."""
    return validate(table, schema, name=name, categories=categories, nan=nan, unseen=unseen, extra=extra).data


def _validate_raw(
    table: pd.DataFrame,
    schema: Schema,
    *,
    name: str = "synthetic",
    categories: dict[str, set[str]] | None = None,
    nan: NanPolicy = "error",
    unseen: UnseenPolicy = "error",
    extra: ExtraPolicy = "error",
) -> pd.DataFrame:
    """Check ``table`` against ``schema`` and return a clean copy in schema column order.

    Numerical columns come back as float64, categorical ones as canonical strings (object).
    Every problem is collected and raised together in one :class:`SchemaError` that names the
    column and the number of affected rows; row positions are 0-based positions in ``table``.

    Parameters
    ----------
    categories:
        Allowed categories per categorical column (canonical strings, from the training table).
        ``None`` skips the unseen-category check (used when validating the training table).
    nan:
        Missing numerical values: ``"error"`` (default), ``"drop"`` the rows (the returned frame
        keeps the original positions as its index, so ids stay those of the file), or
        ``"match"`` (keep them; distances then use the documented NaN semantics).
    unseen:
        Categories absent from training: ``"error"``, ``"drop"`` the rows, or ``"mismatch"``
        (keep them: they differ from every training value).
    extra:
        Columns not in the schema: ``"error"`` or ``"ignore"`` (drop them).
    """
    problems: list[str] = []
    if not isinstance(table, pd.DataFrame):
        raise SchemaError(name, [f"expected a pandas DataFrame, got {type(table).__name__}"])
    _check_unique_columns(table, name)
    table = table.rename(columns=str)
    missing = [c for c in schema.columns if c not in table.columns]
    extras = [c for c in table.columns if c not in schema.columns]
    if missing:
        problems.append(f"missing column(s): {', '.join(map(repr, missing))}")
    if extras and extra == "error":
        ignore = suggest("extra='ignore'", "--ignore-extra")
        advice = f"pass {ignore} to drop them" if ignore else "remove them"
        problems.append(f"column(s) not in the training data: {', '.join(map(repr, extras))} ({advice})")
    if len(table) == 0:
        problems.append("the table is empty (0 rows)")
    if problems:
        raise SchemaError(name, problems)

    out: dict[str, Any] = {}
    drop = np.zeros(len(table), dtype=bool)
    # numerical columns already held as numpy ints/floats are checked as one block (a per-column
    # pandas pass costs ~1 ms a column: minutes on a 100,000-column table); the rest column by column
    dtypes = dict(zip(table.columns, table.dtypes, strict=True))
    fast = [c for c in schema.numerical if isinstance(dtypes[c], np.dtype) and dtypes[c].kind in "iuf"]
    if fast:
        block = table[fast].to_numpy(dtype=np.float64)
        inf = np.isinf(block)
        nan_block = np.isnan(block)
        mag = np.abs(block)
        with np.errstate(invalid="ignore"):
            outside = np.isfinite(mag) & ((mag > MAX_MAGNITUDE) | ((mag < MIN_MAGNITUDE) & (mag > 0)))
        flagged = set(np.flatnonzero(inf.any(axis=0) | outside.any(axis=0) | nan_block.any(axis=0)).tolist())
        kept = [j for j in range(len(fast)) if j not in flagged]
        fast_frame = pd.DataFrame(block[:, kept], columns=[fast[j] for j in kept], index=pd.RangeIndex(len(table)))
    else:
        fast_frame = pd.DataFrame(index=pd.RangeIndex(len(table)))
    for col in schema.columns:
        if col in fast_frame.columns:
            continue
        s = table[col]
        if schema.kind(col) == "numerical":
            if pd.api.types.is_bool_dtype(s.dtype):
                problems.append(f"column {col!r} is numerical in the training data but holds booleans")
                continue
            values = pd.to_numeric(s, errors="coerce")
            bad = values.isna() & s.notna()
            if bad.any():
                rows = np.flatnonzero(bad.to_numpy())
                problems.append(
                    f"column {col!r} is numerical but {int(bad.sum())} row(s) hold non-numeric values "
                    f"(first rows: {_head(rows)})"
                )
                continue
            arr = values.to_numpy(dtype=np.float64)
            inf = np.isinf(arr)
            if inf.any():
                problems.append(
                    f"column {col!r} has {int(inf.sum())} infinite value(s) (first rows: {_head(np.flatnonzero(inf))})"
                )
            problem = _magnitude_problem(col, arr)
            if problem:
                problems.append(problem)
            nan_rows = np.isnan(arr)
            if nan_rows.any():
                if nan == "error":
                    problems.append(_nan_problem(col, np.flatnonzero(nan_rows)))
                elif nan == "drop":
                    drop |= nan_rows
            out[col] = arr
        else:
            canon = canonical_categories(s)
            if categories is not None and col in categories:
                found, bad = _category_check(col, canon, categories[col], nan, unseen, np.arange(len(canon)))
                problems += found
                drop |= bad
            # a string-dtype column without missing values is canonical already: the clean frame shares its
            # memory instead of holding a second copy of every string (the same values and dtype). Only a
            # real string dtype (pandas 3's default): an object column (pandas 2) may hold numbers or bools
            out[col] = s.array if isinstance(s.dtype, pd.StringDtype) and not s.hasnans else canon
    if problems:
        raise SchemaError(name, problems)
    clean = pd.DataFrame(out, index=pd.RangeIndex(len(table)))
    if len(fast_frame.columns):
        clean = pd.concat([fast_frame, clean], axis=1) if len(clean.columns) else fast_frame
        if list(clean.columns) != list(schema.columns):
            clean = clean[list(schema.columns)]
    if drop.any():
        clean = clean.loc[~drop]
        if len(clean) == 0:
            raise SchemaError(name, ["no rows left after dropping rows with missing values or unseen categories"])
    return clean


def _magnitude_problem(col: str, values: np.ndarray) -> str | None:
    """The one line refusing finite values outside the value domain (first row, its magnitude), or None."""
    mag = np.abs(values)
    with np.errstate(invalid="ignore"):
        outside = np.isfinite(mag) & ((mag > MAX_MAGNITUDE) | ((mag < MIN_MAGNITUDE) & (mag > 0)))
    if not outside.any():
        return None
    rows = np.flatnonzero(outside)
    more = f" ({len(rows)} rows outside, first rows: {_head(rows)})" if len(rows) > 1 else ""
    return (
        f"column {col!r} row {rows[0]} holds a value of magnitude {_e(mag[rows[0]], 3)}, outside the value domain "
        f"(0 or {_e(MIN_MAGNITUDE)} <= |x| <= {_e(MAX_MAGNITUDE)}){more}; rescale the column (e.g. to thousands, or log), "
        "or declare it categorical if it is an identifier"
    )


def _e(value: float, digits: int = 1) -> str:
    """``1e15``, ``2.5e-120``: ``g`` format with ``digits`` significant digits, without ``+`` in the exponent."""
    return f"{value:.{digits}g}".replace("e+", "e")


def _head(rows: np.ndarray, k: int = 5) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:k])
    return shown + (", ..." if len(rows) > k else "")
