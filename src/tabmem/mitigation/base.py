"""The augmenter interface and its registry.

Every augmenter is a scikit-learn-style object: the constructor stores its parameters, ``fit(train,
schema)`` validates them and learns what it needs from the training table, and
``augment(n_new=None, ratio=0.3, random_state=None)`` returns **new rows only**, with the training
columns, in the training dtypes, with categories taken from the training table only. The caller
appends them to the training table (``augmented_table``); the training rows are never changed.

How many rows: ``n_new`` when given, else ``int(ratio * |train|)`` (the authors' code,
``num_new_samples = int(0.3 * N)``). Randomness comes only from ``random_state`` (same seed, same
rows). Methods that condition on the label (``needs_target = True``) refuse a table without a
categorical target with one line naming the method.

Implementing one: subclass :class:`Augmenter`, decorate with ``@register_augmenter("name")``,
implement ``_fit(clean)`` and ``_augment(n, rng) -> clean frame`` (numerical float64, categorical
canonical strings, schema column order); the base class validates, counts, seeds and restores
dtypes. The conformance battery (``tests/mitigation/test_augmenter_conformance.py``) checks every
registered augmenter.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tabmem._checks import check_number, check_random_state
from tabmem._params import Params
from tabmem._registry import Registry
from tabmem.data.dtypes import category_dtypes, restore_dtypes
from tabmem.data.schema import Schema, ValidatedTable, raw_frame, validate
from tabmem.errors import NotFittedError, ParameterError, TabmemError, name_setting

__all__ = [
    "AUGMENTERS",
    "Augmenter",
    "augmented_table",
    "get_augmenter",
    "register_augmenter",
    "resolve_n_new",
]


class Augmenter(Params):
    """Base class of training-data augmenters (module docstring)."""

    name: ClassVar[str] = "base"
    #: the method pairs rows of the same class: a categorical target is required
    needs_target: ClassVar[bool] = False

    # ------------------------------------------------------------ parameters
    def _check_params(self) -> None:
        """Validate the constructor arguments (called by :meth:`fit`); errors name the argument."""

    # ------------------------------------------------------------------ fit
    def fit(self, train: pd.DataFrame | ValidatedTable, schema: Schema | None = None) -> Augmenter:
        """Validate the parameters and the training table, and learn what :meth:`augment` needs."""
        self._check_params()
        if schema is None:
            schema = train.schema if isinstance(train, ValidatedTable) else Schema.infer(train)
        if self.needs_target:
            require_class_target(schema, self.name)
        table = validate(train, schema, name="training", nan="match")
        self.schema_ = schema
        self.n_train_ = len(table)
        self.dtypes_ = {c: table.dtypes.get(c, "object") for c in schema.columns}
        self.category_dtypes_ = {c: v for c, v in category_dtypes(table).items() if c in schema.categorical}
        self._fit(table)
        return self

    def _fit(self, table: ValidatedTable) -> None:
        raise NotImplementedError

    # --------------------------------------------------------------- augment
    def augment(self, n_new: int | None = None, ratio: float = 0.3, random_state: int | None = None) -> pd.DataFrame:
        """``n_new`` (default ``int(ratio * |train|)``) new rows in the training columns and dtypes."""
        if not hasattr(self, "schema_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(train, schema) first")
        n = resolve_n_new(n_new, ratio, self.n_train_)
        seed = check_random_state(random_state)
        if n == 0:
            clean = self._empty_clean()
        else:
            clean = self._augment(n, np.random.default_rng(seed))
        return restore_dtypes(clean, self.schema_, self.dtypes_, category_dtypes=self.category_dtypes_)

    def _augment(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        raise NotImplementedError

    def _empty_clean(self) -> pd.DataFrame:
        num = set(self.schema_.numerical)
        return pd.DataFrame(
            {c: pd.Series(dtype=np.float64 if c in num else object) for c in self.schema_.columns},
            columns=list(self.schema_.columns),
        )


#: name -> augmenter class; the built-in modules register on first lookup.
AUGMENTERS: Registry[type[Augmenter]] = Registry(
    "augmenter",
    base=Augmenter,
    modules=(
        "tabmem.mitigation.tabcutmix",
        "tabmem.mitigation.smote",
        "tabmem.mitigation.mixup",
        "tabmem.mitigation.ijf",
    ),
)
register_augmenter = AUGMENTERS.register


def get_augmenter(name: str, /, **params: Any) -> Augmenter:
    """A new augmenter registered as ``name`` (unknown names and bad arguments raise :class:`ParameterError`)."""
    return AUGMENTERS.create(name, **params)


def resolve_n_new(n_new: int | None, ratio: float, n_train: int) -> int:
    """``n_new`` if given, else ``int(ratio * n_train)`` (the authors' rounding)."""
    if n_new is not None:
        if isinstance(n_new, (bool, np.bool_)) or not isinstance(n_new, (int, np.integer)) or n_new < 0:
            raise ParameterError(f"n_new must be a non-negative integer or None, got {n_new!r}")
        return int(n_new)
    r = check_number("ratio", ratio, low=0.0, low_open=True)
    return int(r * n_train)


def require_class_target(schema: Schema, method: str) -> str:
    """The schema's target, which must exist and be categorical (label-conditioned methods)."""
    if schema.target is None:
        raise TabmemError(
            f"{method} is label-conditioned: it needs a categorical target column "
            f"({name_setting('Schema(target=...)', '--target')}); "
            "the table has none"
        )
    if schema.target not in schema.categorical:
        raise TabmemError(
            f"{method} is label-conditioned: it needs a categorical target, but target {schema.target!r} is numerical "
            "(regression); declare it categorical or use mixup / ijf"
        )
    return schema.target


def augmented_table(train: pd.DataFrame | ValidatedTable, new_rows: pd.DataFrame) -> pd.DataFrame:
    """The training rows unchanged and in order, followed by ``new_rows`` (a fresh ``RangeIndex``)."""
    original = raw_frame(train).rename(columns=str)
    if len(new_rows) == 0:
        return original.reset_index(drop=True)
    return pd.concat([original, new_rows[list(original.columns)]], ignore_index=True)


def class_groups(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by label: ``(codes, order, start, count)`` with ``order[start[c]:start[c]+count[c]]``
    the rows of class ``c`` (in table order) and ``codes[i]`` the class of row ``i``."""
    codes, uniques = pd.factorize(pd.Series(labels, dtype=object), sort=True)
    codes = codes.astype(np.int64)
    order = np.argsort(codes, kind="stable")
    count = np.bincount(codes, minlength=len(uniques))
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    return codes, order, start, count


def random_subset_mask(n_chosen: np.ndarray, width: int, rng: np.random.Generator) -> np.ndarray:
    """(len(n_chosen), width) bool mask with exactly ``n_chosen[i]`` uniformly chosen distinct columns in row i."""
    if width == 0:
        return np.zeros((len(n_chosen), 0), dtype=bool)
    ranks = np.argsort(np.argsort(rng.random((len(n_chosen), width)), axis=1), axis=1)
    return ranks < np.asarray(n_chosen)[:, None]
