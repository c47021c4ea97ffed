"""The real datasets of the tabular-memorization papers: ``load_dataset(name)`` and the registry behind it.

``load_dataset(name)`` returns a :class:`Dataset` (train / test, and val where the source
split has one, plus a :class:`~tabmem.data.schema.Schema`) in **raw units**: the papers'
``fang2024`` distance is defined on raw values, so nothing is scaled or re-coded here. Column
names, column kinds and targets are those of the TabCutMix metadata (``info_tabcutmix.json``)
or, for datasets without one, the dataset's ``SOURCE.md`` table. Integer-coded categoricals
(``SEX``, ``PAY_*``, ``OperatingSystems``, ...) keep their integer values; the schema declares
them categorical.

Splits are those the papers used (see ``docs/datasets.md``):

========== ============================================================ =====================
dataset    split                                                        train / val / test
========== ============================================================ =====================
adult      official UCI files (``adult.data`` / ``adult.test``)         32,561 / - / 16,281
default    TabCutMix 90/10, legacy numpy seed 82                        27,000 / - / 3,000
shoppers   TabCutMix 90/10, legacy numpy seed 82                        11,097 / - / 1,233
cardio     TabDDPM split (``split_tabddpm.csv``)                        44,800 / 14,000 / 11,200
wilt       TabDDPM split                                                3,096 / 775 / 968
california TabDDPM split                                                13,209 / 3,303 / 4,128
casp       ``train_test_split(train_size=0.8, random_state=42)``        36,584 / - / 9,146
diabetes   ``train_test_split(train_size=0.8, random_state=42)``        353 / - / 89
========== ============================================================ =====================

Where data come from: the ``data_dir`` argument, else ``$TABMEM_DATA_DIR``, else the cache
directory (``cache_dir``, ``$TABMEM_CACHE_DIR`` or ``~/.cache/tabmem``), each laid out as
``<dir>/<dataset>/<file>`` like ``../shared/datasets``. A missing file is downloaded (when
``download=True``) from its public source into the cache, verified against the sha256 that the
dataset's ``SOURCE.md`` records, and written atomically. Files derived from others (the seed-82
split, ``california.csv``, the TabDDPM split maps of wilt and california) are re-derived by code
when absent instead of being downloaded.

Layout of this package: :mod:`~tabmem.data.datasets.registry` (what a dataset is,
:func:`register_dataset`, :data:`DATASETS`), :mod:`~tabmem.data.datasets.files` (lookup,
download, sha256, readers), :mod:`~tabmem.data.datasets.splits` (the papers' split recipes),
:mod:`~tabmem.data.datasets.catalogue` (the eight datasets); this module holds the load API.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tabmem.data.datasets.files import (
    ChecksumMismatchError,
    DataFile,
    DatasetFiles,
    resolve_cache_dir,
    resolve_data_dir,
    sha256_file,
)
from tabmem.data.datasets.registry import DATASETS, DatasetSpec, get_dataset_spec, register_dataset
from tabmem.data.datasets.splits import derive_tabddpm_split, tabcutmix_split
from tabmem.data.io import read_table
from tabmem.data.schema import Schema, Task
from tabmem.errors import TabmemError

__all__ = [
    "DATASETS",
    "ChecksumMismatchError",
    "DataFile",
    "Dataset",
    "DatasetFiles",
    "DatasetInfo",
    "DatasetSpec",
    "derive_tabddpm_split",
    "get_dataset_spec",
    "list_datasets",
    "load_dataset",
    "load_table_with_schema",
    "register_dataset",
    "resolve_cache_dir",
    "resolve_data_dir",
    "sha256_file",
    "tabcutmix_split",
    "verify_local_files",
]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded dataset: splits in raw units plus their schema.

    ``source_rows`` maps each split name to the 0-based record positions of its rows in the
    source file (row ``i`` of ``train`` is record ``source_rows["train"][i]``; adult's test rows
    index ``adult.test``, all others index the dataset's single table), so any row can be traced
    back to the file. Every split frame has a fresh ``RangeIndex`` and keeps the row order of the
    papers' code where it is known (seed-82 permutation, ``train_test_split`` order), else the
    file order.
    """

    name: str
    train: pd.DataFrame
    test: pd.DataFrame
    schema: Schema
    val: pd.DataFrame | None = None
    source_rows: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def splits(self) -> dict[str, pd.DataFrame]:
        """The splits present, in the order train, val, test."""
        out = {"train": self.train}
        if self.val is not None:
            out["val"] = self.val
        out["test"] = self.test
        return out


@dataclass(frozen=True)
class DatasetInfo:
    """One line of :func:`list_datasets`: static facts plus local availability.

    ``n_columns`` counts every column (target included); ``n_numerical`` / ``n_categorical``
    count the *features* only, as the ``SOURCE.md`` tables do ("6 num, 8 cat, target").
    """

    name: str
    task: Task
    target: str
    n_rows: int | None
    n_train: int | None
    n_val: int | None
    n_test: int | None
    n_columns: int
    n_numerical: int
    n_categorical: int
    available_locally: bool
    source: str
    split: str


# --------------------------------------------------------------------------- public API
def list_datasets(
    *, data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
) -> list[DatasetInfo]:
    """All registered datasets with their sizes and whether their files are on this machine."""
    data = resolve_data_dir(data_dir)
    cache = resolve_cache_dir(cache_dir)
    infos = []
    for spec in DATASETS.in_order():
        files = DatasetFiles(spec, data_dir=data, cache_dir=cache, download=False, verify=False)
        sizes = spec.sizes or {}
        infos.append(
            DatasetInfo(
                name=spec.name,
                task=spec.task,
                target=spec.target,
                n_rows=sum(sizes.values()) if sizes else None,
                n_train=sizes.get("train"),
                n_val=sizes.get("val"),
                n_test=sizes.get("test"),
                n_columns=len(spec.columns),
                n_numerical=sum(c != spec.target for c in spec.numerical),
                n_categorical=sum(c != spec.target for c in spec.categorical),
                available_locally=files.available(),
                source=spec.source,
                split=spec.split,
            )
        )
    return infos


def verify_local_files(
    name: str, *, data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
) -> dict[str, bool | None]:
    """sha256 check of a dataset's local files: ``{path: True (ok) / False (mismatch) / None (absent or no checksum)}``."""
    spec = get_dataset_spec(name)
    files = DatasetFiles(
        spec, data_dir=resolve_data_dir(data_dir), cache_dir=resolve_cache_dir(cache_dir), download=False, verify=False
    )
    out: dict[str, bool | None] = {}
    for declared in spec.files:
        found = files.local(declared.path)
        out[declared.path] = None if found is None or not declared.sha256 else sha256_file(found) == declared.sha256
    return out


def load_dataset(
    name: str,
    *,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    download: bool = True,
    verify: bool = False,
) -> Dataset:
    """Load a registered dataset's splits (raw units) and schema.

    Files are looked up in ``data_dir`` (else ``$TABMEM_DATA_DIR``) and then the cache; missing
    ones are downloaded into the cache when ``download`` is true (sha256-verified). Local files
    are sha256-verified only when ``verify=True`` (it adds roughly 2-20% to a load; see
    ``benchmarks/bench_datasets.py``). Row-count checks against the registry always run, so a
    truncated file fails loudly even without ``verify``.
    """
    spec = get_dataset_spec(name)
    files = DatasetFiles(
        spec,
        data_dir=resolve_data_dir(data_dir),
        cache_dir=resolve_cache_dir(cache_dir),
        download=download,
        verify=verify,
    )
    parts = dict(spec.loader(files))
    missing_splits = [s for s in ("train", "test") if s not in parts]
    unknown_splits = sorted(set(parts) - {"train", "val", "test"})
    if missing_splits or unknown_splits:
        raise TabmemError(
            f"dataset {name!r}: the loader must return train, test and optionally val; "
            f"missing {missing_splits}, unknown {unknown_splits}"
        )
    out: dict[str, pd.DataFrame] = {}
    rows: dict[str, np.ndarray] = {}
    for split, frame in parts.items():
        if list(frame.columns) != list(spec.columns):
            raise TabmemError(
                f"dataset {name!r}: the {split} split has columns {list(frame.columns)}, expected {list(spec.columns)}"
            )
        if spec.sizes is not None and split in spec.sizes and len(frame) != spec.sizes[split]:
            raise TabmemError(
                f"dataset {name!r}: the {split} split has {len(frame):,} rows, expected {spec.sizes[split]:,}; "
                "a data file is truncated or a different version (load with verify=True to check checksums)"
            )
        rows[split] = frame.index.to_numpy(dtype=np.int64, copy=True)
        out[split] = frame.reset_index(drop=True)
    return Dataset(
        name=name,
        train=out["train"],
        test=out["test"],
        val=out.get("val"),
        schema=spec.schema(),
        source_rows=rows,
    )


def load_table_with_schema(
    path: str | os.PathLike,
    *,
    categorical: Sequence[str] | str | None = None,
    numerical: Sequence[str] | str | None = None,
    target: str | None = None,
) -> tuple[pd.DataFrame, Schema]:
    """Read any CSV or Parquet file and infer its schema (:meth:`Schema.infer`'s documented rule).

    ``categorical`` / ``numerical`` (lists or comma-separated strings, as the CLI's
    ``--categorical a,b``) override the inferred kinds; ``target`` sets the target and task.
    """
    table = read_table(path)
    schema = Schema.infer(
        table,
        categorical=_split_names(categorical),
        numerical=_split_names(numerical),
        target=target or None,
        name=Path(path).stem,
    )
    return table, schema


def _split_names(names: Sequence[str] | str | None) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str):
        names = [names]
    out = []
    for item in names:
        out.extend(part.strip() for part in str(item).split(",") if part.strip())
    return out
