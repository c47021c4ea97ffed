"""The dataset registry: what each dataset is (columns, kinds, target, files, split sizes) and how it is read.

A dataset is one :func:`register_dataset` call around a loader function; the built-in ones live
in :mod:`tabmem.data.datasets.catalogue`, imported the first time a dataset is looked up, so
``import tabmem`` does not pay for it. :data:`DATASETS` is a :class:`~tabmem._registry.Registry`
like every other registry of tabmem (duplicate names refused, unknown names answered with the
list of known ones); listing keeps the catalogue's order, which the papers' tables follow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from tabmem._registry import Registry
from tabmem.data.datasets.files import DataFile, DatasetFiles
from tabmem.data.schema import Schema, Task
from tabmem.errors import ParameterError

__all__ = ["DATASETS", "DatasetSpec", "Loader", "get_dataset_spec", "register_dataset"]

#: ``loader(files) -> {"train": df, "test": df[, "val": df]}``; frame indexes are 0-based source record positions
Loader = Callable[[DatasetFiles], Mapping[str, pd.DataFrame]]


@dataclass(frozen=True)
class DatasetSpec:
    """Registry entry: what a dataset is and how to load it (see :func:`register_dataset`)."""

    name: str
    task: Task
    target: str
    columns: tuple[str, ...]
    categorical: tuple[str, ...]
    loader: Loader
    files: tuple[DataFile, ...] = ()
    source: str = ""
    split: str = ""
    sizes: Mapping[str, int] | None = None

    @property
    def numerical(self) -> tuple[str, ...]:
        return tuple(c for c in self.columns if c not in self.categorical)

    def schema(self) -> Schema:
        return Schema(self.columns, self.numerical, tuple(self.categorical), self.target, self.task, self.name)

    def file(self, path: str) -> DataFile:
        for f in self.files:
            if f.path == path:
                return f
        raise KeyError(f"dataset {self.name!r} declares no file {path!r}")


#: name -> :class:`DatasetSpec`; the built-in catalogue is imported on first lookup.
DATASETS: Registry[DatasetSpec] = Registry("dataset", modules=["tabmem.data.datasets.catalogue"], attribute=None)


def register_dataset(
    name: str,
    *,
    task: Task,
    target: str,
    columns: Sequence[str],
    categorical: Sequence[str],
    files: Sequence[DataFile] = (),
    source: str = "",
    split: str = "",
    sizes: Mapping[str, int] | None = None,
    overwrite: bool = False,
) -> Callable[[Loader], Loader]:
    """Decorator registering ``loader(files) -> {"train": df, "test": df[, "val": df]}`` under ``name``.

    The loader gets a :class:`~tabmem.data.datasets.files.DatasetFiles` (``files.path("x.csv")``
    finds or downloads a declared file) and returns raw-unit frames whose index holds the 0-based
    source record positions. ``columns`` fixes the column order; columns not in ``categorical``
    are numerical (the target is categorical for classification, numerical for regression).
    ``sizes`` (rows per split) are checked at load time when given. The declaration is checked
    now (a :class:`~tabmem.errors.ParameterError`, a ``ValueError``, names what is wrong), not at first load.
    """
    if task not in ("binclass", "multiclass", "regression"):
        raise ParameterError(
            f"register_dataset({name!r}): task must be binclass, multiclass or regression, got {task!r}"
        )
    columns = tuple(columns)
    if target not in columns:
        raise ParameterError(f"register_dataset({name!r}): target {target!r} is not one of the columns")
    unknown = sorted(set(categorical) - set(columns))
    if unknown:
        raise ParameterError(f"register_dataset({name!r}): categorical columns {unknown} are not in columns")
    if (target in categorical) != (task != "regression"):
        raise ParameterError(
            f"register_dataset({name!r}): the target must be categorical exactly when the task is classification"
        )

    def decorator(loader: Loader) -> Loader:
        if name in DATASETS and not overwrite:
            raise ParameterError(f"dataset {name!r} is already registered (pass overwrite=True to replace it)")
        spec = DatasetSpec(
            name=name,
            task=task,
            target=target,
            columns=columns,
            categorical=tuple(c for c in columns if c in set(categorical)),
            loader=loader,
            files=tuple(files),
            source=source,
            split=split,
            sizes=dict(sizes) if sizes is not None else None,
        )
        spec.schema()  # validates the column partition now, not at first load
        DATASETS.add(name, spec, overwrite=True)
        return loader

    return decorator


def get_dataset_spec(name: str) -> DatasetSpec:
    """Registry entry of ``name`` (a :class:`~tabmem.errors.ParameterError` lists the known names)."""
    return DATASETS.get(name)
