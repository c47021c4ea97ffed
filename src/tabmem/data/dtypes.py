"""Give a generated table back in the dtypes of the training table.

:func:`~tabmem.data.schema.validate` records the original dtypes of a table
(``ValidatedTable.dtypes``; :func:`category_dtypes` adds the levels of ``category`` columns)
before turning it into its clean form: numerical columns
float64, categorical columns canonical strings with ``"<NA>"`` for a missing value. Generators
work on the clean form; :func:`restore_dtypes` is the inverse, from a clean generated table to
the user's dtypes.

Rules, per training dtype (the dtype is recorded as its name, ``str(dtype)``, so that it can be
saved with a model and read back without pickles):

============================ ================================= =====================================
training dtype               numerical column                  categorical column
============================ ================================= =====================================
``int*``/``uint*`` (numpy)   rounded, clipped to the dtype's   that dtype; with a missing value the
                             range; float64 if any value is    nullable one (``Int64``...)
                             not finite
``Int*``/``UInt*``           rounded, clipped; NaN -> ``<NA>`` that dtype, ``<NA>`` kept
``float*`` (numpy)           float64 (never rounded to the     that dtype, ``<NA>`` -> NaN
                             training precision)
``Float*``                   ``Float64``, NaN -> ``<NA>``      that dtype, ``<NA>`` -> ``<NA>``
``bool``                     (not numerical)                   ``bool``; with a missing value ``boolean``
``boolean``                  (not numerical)                   ``boolean``
``str`` (pandas 3)           float64                           ``str`` (missing: NaN); ``object`` on pandas 2
``string``                   float64                           ``string`` (missing: ``<NA>``)
``object``                   float64                           ``object`` (missing: ``None``)
``category``                 float64                           ``category`` with the training levels and
                                                               order when they were recorded
anything else                float64                           that dtype when the canonical strings
                                                               convert to it, else ``object``
============================ ================================= =====================================

A column whose dtype was not recorded is treated as ``object`` (categorical) / float64 (numerical).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from tabmem.data.schema import NA_CATEGORY, Schema, ValidatedTable, canonical_category, raw_frame

__all__ = ["category_dtypes", "restore_dtypes", "restore_numerical", "restore_categorical"]

_PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3


def category_dtypes(table: pd.DataFrame | ValidatedTable) -> dict[str, dict[str, Any]]:
    """Levels and order of each ``category`` column: ``{col: {"categories": [...], "ordered": bool}}``.

    A :class:`~tabmem.data.schema.ValidatedTable` is read through its ``source`` (the table as
    given). Only levels that are plain Python values (str, int, float, bool) are recorded, so that
    the record can be saved with a model and loaded with ``torch.load(weights_only=True)``; other
    ``category`` columns are restored with the generated values as levels.
    """
    out: dict[str, dict[str, Any]] = {}
    for col, dtype in raw_frame(table).dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            levels = dtype.categories.tolist()
            if all(isinstance(v, (str, int, float, bool)) for v in levels):
                out[str(col)] = {"categories": levels, "ordered": bool(dtype.ordered)}
    return out


def restore_dtypes(
    clean: pd.DataFrame,
    schema: Schema,
    dtypes: Mapping[str, str],
    *,
    category_dtypes: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """``clean`` (numerical float, categorical canonical strings) in the recorded training dtypes (module rules).

    The result has the schema's columns in order and a fresh ``RangeIndex``.
    """
    levels = category_dtypes or {}
    out: dict[str, Any] = {}
    numerical = set(schema.numerical)
    for c in schema.columns:
        dtype = dtypes.get(c, "object")
        if c in numerical:
            out[c] = restore_numerical(clean[c].to_numpy(dtype=np.float64), dtype)
        else:
            out[c] = restore_categorical(clean[c].to_numpy(dtype=object), dtype, levels.get(c))
    return pd.DataFrame(out, columns=list(schema.columns))


# --------------------------------------------------------------------------- numerical
def _integer_bounds(dtype: np.dtype) -> tuple[float, float]:
    """Clip range of an integer dtype as floats (64-bit types: +-2**62, exactly representable)."""
    info = np.iinfo(dtype)
    lo = max(float(info.min), -(2.0**62))
    hi = min(float(info.max), 2.0**62)
    return lo, hi


def restore_numerical(values: np.ndarray, dtype: str) -> Any:
    """Float values of a numerical column in the training dtype ``dtype`` (module rules)."""
    arr = np.asarray(values, dtype=np.float64)
    kind = _resolve(dtype)
    if isinstance(kind, np.dtype) and kind.kind in "iu":
        if not np.isfinite(arr).all():
            return arr
        lo, hi = _integer_bounds(kind)
        return np.clip(np.rint(arr), lo, hi).astype(np.int64).astype(kind)
    if _is_masked(kind, "iu"):
        missing = np.isnan(arr)
        if np.isinf(arr).any():
            return arr
        lo, hi = _integer_bounds(kind.numpy_dtype)
        ints = np.clip(np.rint(np.where(missing, 0.0, arr)), lo, hi).astype(np.int64).astype(kind.numpy_dtype)
        return pd.array(pd.arrays.IntegerArray(ints, missing), dtype=kind)
    if _is_masked(kind, "f"):
        return pd.array(arr, dtype="Float64")  # NaN -> <NA>
    return arr


# --------------------------------------------------------------------------- categorical
def restore_categorical(values: np.ndarray, dtype: str, levels: Mapping[str, Any] | None = None) -> Any:
    """Canonical category strings of a categorical column in the training dtype ``dtype`` (module rules).

    ``levels`` is the column's entry of :func:`category_dtypes` (``category`` columns only).
    """
    values = np.asarray(values, dtype=object)
    na = values == NA_CATEGORY
    has_na = bool(na.any())
    kind = _resolve(dtype)
    if isinstance(kind, np.dtype) and kind.kind == "b":
        out = values == "True"
        return pd.array(np.where(na, None, out), dtype="boolean") if has_na else out
    if isinstance(kind, pd.BooleanDtype):
        return pd.array(np.where(na, None, values == "True"), dtype="boolean")
    if isinstance(kind, np.dtype) and kind.kind in "iu":
        if has_na:  # the nullable dtype of the same width
            nullable = f"{'UInt' if kind.kind == 'u' else 'Int'}{8 * kind.itemsize}"
            return pd.array(_ints(values, na), dtype=nullable)
        return values.astype(np.int64).astype(kind)
    if _is_masked(kind, "iu"):
        return pd.array(_ints(values, na), dtype=kind)
    if isinstance(kind, np.dtype) and kind.kind == "f":
        out = np.full(len(values), np.nan)
        out[~na] = values[~na].astype(np.float64)
        return out.astype(kind)
    if _is_masked(kind, "f"):
        floats = [None if m else float(v) for v, m in zip(values, na)]
        return pd.array(floats, dtype=kind)
    if isinstance(kind, pd.CategoricalDtype):
        return _categorical(values, na, levels)
    if isinstance(kind, pd.StringDtype):
        return pd.array(np.where(na, None, values), dtype=kind)
    if kind is object:
        return pd.Series(np.where(na, None, values) if has_na else values, dtype=object)
    try:  # other dtypes (datetimes, ...): let pandas parse the canonical strings
        return pd.Series(np.where(na, None, values), dtype=object).astype(kind)
    except (TypeError, ValueError):
        return pd.Series(np.where(na, None, values), dtype=object)


def _ints(values: np.ndarray, na: np.ndarray) -> list[int | None]:
    return [None if m else int(v) for v, m in zip(values, na)]


def _categorical(values: np.ndarray, na: np.ndarray, levels: Mapping[str, Any] | None) -> pd.Categorical:
    if levels is not None:
        categories = list(levels["categories"])
        lookup = {canonical_category(v): v for v in categories}
        if all(m or v in lookup for v, m in zip(values, na)):
            mapped = [None if m else lookup[v] for v, m in zip(values, na)]
            return pd.Categorical(mapped, categories=categories, ordered=bool(levels.get("ordered", False)))
    # levels not recorded (or a value outside them): the generated values are the levels
    return pd.Categorical([None if m else v for v, m in zip(values, na)])


def _is_masked(kind: Any, kinds: str) -> bool:
    """A pandas nullable (masked) numeric dtype of one of ``kinds`` (``Int64``, ``UInt8``, ``Float64``...)."""
    return isinstance(kind, pd.api.extensions.ExtensionDtype) and hasattr(kind, "numpy_dtype") and kind.kind in kinds


def _resolve(dtype: str) -> Any:
    """The dtype object named ``dtype`` (``object`` for object, unknown or pandas-2 ``str`` names)."""
    if dtype == "str" and not _PANDAS_3:
        return object  # pandas 2 has no str dtype: strings live in object columns
    try:
        resolved = pd.api.types.pandas_dtype(dtype)
    except TypeError:
        return object
    if isinstance(resolved, np.dtype) and resolved.kind in "OUS":
        return object
    return resolved
