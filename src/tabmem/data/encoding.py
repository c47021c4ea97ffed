"""Numeric encodings of a mixed-type table, fitted once on the training table.

:class:`TableEncoder` learns from the training table everything that later encodings need
(per-column categories, min/max/range, mean/std) so that synthetic, holdout or member tables
are always encoded with *training* statistics (ranges taken from the wrong table are a classic
bug: SDMetrics#742). :meth:`TableEncoder.to_state` / :meth:`TableEncoder.from_state` save and
restore what it learned as plain lists and numbers (a saved generator carries it), and
:meth:`TableEncoder.placeholder_table` gives a table with the training layout but no training
values, from which a saved model can be rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tabmem.data.schema import NanPolicy, Schema, UnseenPolicy, ValidatedTable, canonical_categories, validate_table
from tabmem.errors import TabmemError


@dataclass
class TableEncoder:
    """Encode tables that follow ``schema`` with statistics of the training table.

    After :meth:`fit`:

    * ``categories_[col]``: sorted canonical category strings seen in training;
    * ``min_``, ``max_``, ``range_``, ``mean_``, ``std_``: per numerical column (NaN ignored;
      a constant column has range 0 and std 0, which every encoding treats as "no spread");
      plain numpy statistics, exact as written for tables inside the value domain
      (:data:`tabmem.data.schema.MAX_MAGNITUDE`), which :meth:`fit` and :meth:`validate` enforce;
    * :meth:`numeric` gives raw float64 values, :meth:`codes` integer category codes
      (``-1`` for a category unseen in training, which matches nothing).
    """

    schema: Schema

    def fit(self, train: pd.DataFrame | ValidatedTable, *, nan: NanPolicy = "match") -> "TableEncoder":
        """Learn categories and numerical statistics from the training table.

        A :class:`~tabmem.data.schema.ValidatedTable` for this schema is used as it is (only the
        missing-value check that ``nan="error"`` adds runs on its clean values).
        """
        clean = validate_table(train, self.schema, name="training", nan="match" if nan == "drop" else nan)
        self._set_categories({c: sorted(set(clean[c].tolist())) for c in self.schema.categorical})
        num = self._numeric_clean(clean)
        with np.errstate(all="ignore"):
            if num.shape[0] and num.shape[1]:
                self.min_ = np.nanmin(num, axis=0) if num.size else np.zeros(0)
                self.max_ = np.nanmax(num, axis=0)
                self.mean_, self.std_ = np.nanmean(num, axis=0), np.nanstd(num, axis=0)
            else:
                self.min_ = self.max_ = self.mean_ = self.std_ = np.zeros(num.shape[1])
        for arr in (self.min_, self.max_, self.mean_, self.std_):
            arr[np.isnan(arr)] = 0.0  # an all-NaN column: no spread
        self.range_ = self.max_ - self.min_
        self.n_train_ = len(clean)
        return self

    def _set_categories(self, categories: dict[str, list[str]]) -> None:
        self.categories_: dict[str, np.ndarray] = {c: np.array(v, dtype=object) for c, v in categories.items()}
        self._lookup = {c: pd.Index(cats, dtype=object) for c, cats in self.categories_.items()}

    # ------------------------------------------------------------------ state
    def to_state(self) -> dict[str, Any]:
        """What :meth:`fit` learned, as plain lists, floats and ints.

        Safe to save with ``torch.save`` and load with ``torch.load(weights_only=True)`` (no
        pickled objects) or to write as JSON; floats are float64 values, so the round trip
        through :meth:`from_state` is exact.
        """
        return {
            "categories": {c: [str(v) for v in cats.tolist()] for c, cats in self.categories_.items()},
            "min": [float(v) for v in self.min_],
            "max": [float(v) for v in self.max_],
            "mean": [float(v) for v in self.mean_],
            "std": [float(v) for v in self.std_],
            "n_train": int(self.n_train_),
        }

    @classmethod
    def from_state(cls, schema: Schema, state: dict[str, Any]) -> "TableEncoder":
        """The fitted encoder whose :meth:`to_state` is ``state`` (statistics may also be arrays or
        CPU tensors, as generators saved them before format 2)."""
        enc = cls(schema)
        missing = sorted(set(schema.categorical) - set(state["categories"]))
        if missing:
            raise TabmemError(f"saved encoder state: no categories for column(s) {missing}")
        enc._set_categories({c: [str(v) for v in state["categories"][c]] for c in schema.categorical})
        stats = {k: _float64(state[k]) for k in ("min", "max", "mean", "std")}
        for k, v in stats.items():
            if len(v) != len(schema.numerical):
                raise TabmemError(
                    f"saved encoder state: {k!r} holds {len(v)} values for {len(schema.numerical)} numerical columns"
                )
        enc.min_, enc.max_, enc.mean_, enc.std_ = stats["min"], stats["max"], stats["mean"], stats["std"]
        enc.range_ = enc.max_ - enc.min_
        enc.n_train_ = int(state["n_train"])
        return enc

    def placeholder_table(self, n: int) -> pd.DataFrame:
        """A table with the training layout and no training values (for rebuilding a saved model).

        ``max(2, min(n, 64), largest number of categories)`` rows: numerical columns evenly spaced
        from the training minimum to maximum, categorical columns cycling through every training
        category. Code that builds a model from it must not rely on its values for anything the
        saved state does not restore afterwards (quantiles, for example, must be part of the state).
        """
        schema = self.schema
        rows = max([2, min(n, 64), *(len(self.categories_[c]) for c in schema.categorical)])
        data: dict[str, Any] = {}
        for j, c in enumerate(schema.numerical):
            data[c] = np.linspace(self.min_[j], self.max_[j], rows)
        for c in schema.categorical:
            cats = self.categories_[c]
            data[c] = cats[np.arange(rows) % len(cats)]
        return pd.DataFrame(data)[list(schema.columns)]

    # ------------------------------------------------------------------ checks
    def category_sets(self) -> dict[str, set[str]]:
        """Allowed categories per column, for :func:`validate_table`."""
        return {c: set(v.tolist()) for c, v in self.categories_.items()}

    def validate(
        self,
        table: pd.DataFrame | ValidatedTable,
        *,
        name: str = "synthetic",
        nan: NanPolicy = "error",
        unseen: UnseenPolicy = "error",
        extra: str = "error",
    ) -> pd.DataFrame:
        """:func:`validate_table` against the training schema and categories."""
        return validate_table(
            table,
            self.schema,
            name=name,
            categories=self.category_sets(),
            nan=nan,
            unseen=unseen,
            extra=extra,  # type: ignore[arg-type]
        )

    # --------------------------------------------------------------- encodings
    def _numeric_clean(self, clean: pd.DataFrame) -> np.ndarray:
        cols = self.schema.numerical
        if not cols:
            return np.zeros((len(clean), 0), dtype=np.float64)
        return clean[list(cols)].to_numpy(dtype=np.float64, copy=True)

    def numeric(self, clean: pd.DataFrame) -> np.ndarray:
        """Raw numerical values (n, n_numerical) float64 of an already validated table."""
        return self._numeric_clean(clean)

    def codes(self, clean: pd.DataFrame) -> np.ndarray:
        """Category codes (n, n_categorical) int32 of a validated table; unseen = -1."""
        cols = self.schema.categorical
        out = np.empty((len(clean), len(cols)), dtype=np.int32)
        for j, c in enumerate(cols):
            lookup = self._lookup[c]
            values = clean[c].to_numpy(dtype=object)
            if values.size and not isinstance(values[0], str):
                values = canonical_categories(clean[c])
            out[:, j] = lookup.get_indexer(values)  # -1 where unseen
        return out

    def standardized(self, clean: pd.DataFrame) -> np.ndarray:
        """(x - mean) / std per numerical column with training statistics (std 0 -> 1)."""
        std = np.where(self.std_ > 0, self.std_, 1.0)
        return (self.numeric(clean) - self.mean_) / std

    def range_scaled(self, clean: pd.DataFrame) -> np.ndarray:
        """(x - min) / range per numerical column with training statistics (range 0 -> 1)."""
        rng = np.where(self.range_ > 0, self.range_, 1.0)
        return (self.numeric(clean) - self.min_) / rng

    def one_hot(self, clean: pd.DataFrame, *, scale: float = 1.0, dtype: type = np.float64) -> np.ndarray:
        """One-hot of the categorical columns in training category order; unseen rows are all 0."""
        codes = self.codes(clean)
        sizes = [len(self.categories_[c]) for c in self.schema.categorical]
        offsets = np.concatenate([[0], np.cumsum(sizes)])[:-1].astype(np.int64)
        out = np.zeros((len(clean), int(sum(sizes))), dtype=dtype)
        rows = np.arange(len(clean))
        for j in range(codes.shape[1]):
            ok = codes[:, j] >= 0
            out[rows[ok], offsets[j] + codes[ok, j]] = scale
        return out


def _float64(values: Any) -> np.ndarray:
    """A 1-d float64 copy of a list, an array or a CPU tensor (format-1 generator files hold tensors)."""
    if hasattr(values, "detach"):  # a torch tensor, without importing torch here
        values = values.detach().cpu().numpy()
    return np.array(values, dtype=np.float64).reshape(-1)
