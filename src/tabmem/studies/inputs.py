"""The input tables of a study cell: a registered dataset or files, optionally subsampled.

A ``[[datasets]]`` entry of a study file is either a registered dataset (``name = "adult"``,
``tabmem datasets`` lists them) or a table file (``path = "train.csv"``, with ``test`` for the
real rows not trained on, and the column kinds ``categorical``/``numerical``/``target`` as on the
command line). ``n_train`` keeps a seeded random subset of the training rows
(:func:`subsample_rows`: ``subsample_seed`` only, never the cell seed, so every seed and every
generator of a study sees the same rows); the test split is used whole (each step caps what it
uses).

The cell hash covers a dataset's *identity*: the registered name, or the sha256 of the files
(moving a file keeps its cells; editing it makes new ones), the kinds, ``n_train`` and
``subsample_seed``, never labels or paths.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.errors import ParameterError
from tabmem.studies._fields import Field, check_table, integer, string, string_list

__all__ = ["DATASET_FIELDS", "CellData", "DatasetEntry", "load_inputs", "parse_dataset", "subsample_rows"]

DATASET_FIELDS: dict[str, Field] = {
    "name": Field(None, string(), "a registered dataset (tabmem datasets)"),
    "path": Field(None, string(), "a CSV/Parquet training table (relative to the study file)"),
    "test": Field(None, string(), "with path: real rows not trained on (holdout, non-members, MLE test)"),
    "label": Field(None, string(), "name in results (default: name, or the file stem)"),
    "target": Field(None, string(), "target column (overrides a registered dataset's)"),
    "categorical": Field([], string_list(empty=True), "columns to treat as categorical"),
    "numerical": Field([], string_list(empty=True), "columns to treat as numerical"),
    "encoding": Field("utf-8", string(), "text encoding of CSV files"),
    "n_train": Field(None, integer(2), "keep this many training rows (seeded subsample)"),
    "subsample_seed": Field(0, integer(0, 2**63 - 1), "seed of the n_train subsample"),
}


@dataclass(frozen=True)
class DatasetEntry:
    """One resolved ``[[datasets]]`` entry (``identity`` is what the cell hash covers)."""

    label: str
    identity: dict[str, Any]
    n_rows: int | None  # training rows after subsampling (None: unknown before loading)
    n_columns: int
    n_test: int | None = None  # rows of the test split (None: unknown before loading, or no test split)
    name: str | None = None
    path: str | None = None
    test: str | None = None
    target: str | None = None
    categorical: list[str] = field(default_factory=list)
    numerical: list[str] = field(default_factory=list)
    encoding: str = "utf-8"
    n_train: int | None = None
    subsample_seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DatasetEntry:
        return cls(**d)


@dataclass(frozen=True)
class CellData:
    """The tables a cell's steps read: training rows (after subsampling), the test split, the schema."""

    train: pd.DataFrame
    test: pd.DataFrame | None
    schema: Schema


def subsample_rows(n_rows: int, n_train: int | None, seed: int) -> np.ndarray:
    """Positions of the kept training rows: ``n_train`` of ``n_rows`` drawn without replacement, sorted."""
    if n_train is None or n_train >= n_rows:
        return np.arange(n_rows)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, size=n_train, replace=False))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parse_dataset(values: dict[str, Any], base_dir: Path, where: str) -> DatasetEntry:
    """Check one ``[[datasets]]`` table; files are resolved against ``base_dir`` (the study's folder)."""
    v = check_table(values, DATASET_FIELDS, where=where)
    if bool(v["name"]) == bool(v["path"]):
        raise ParameterError(f"{where}give exactly one of name (a registered dataset) or path (a table file)")
    kinds = {"target": v["target"], "categorical": v["categorical"], "numerical": v["numerical"]}
    common = {"n_train": v["n_train"], "subsample_seed": v["subsample_seed"], **kinds}
    if v["name"]:
        from tabmem.data.datasets import DATASETS

        if v["test"]:
            raise ParameterError(f"{where}test applies to file datasets (path); {v['name']!r} has its own test split")
        if v["name"] not in DATASETS:
            raise ParameterError(
                f"{where}name: unknown dataset {v['name']!r} (available: {', '.join(DATASETS.names())})"
            )
        spec = DATASETS.get(v["name"])
        total = (spec.sizes or {}).get("train")
        if v["n_train"] is not None and total is not None and v["n_train"] > total:
            raise ParameterError(f"{where}n_train: {v['name']} has {total:,} training rows, asked for {v['n_train']:,}")
        n_rows = total if v["n_train"] is None else v["n_train"]
        _check_columns(kinds, list(spec.columns), f"dataset {v['name']!r}", where)
        identity = {"dataset": v["name"], **common}
        return DatasetEntry(
            label=v["label"] or v["name"],
            identity=identity,
            n_rows=n_rows,
            n_columns=len(spec.columns),
            n_test=(spec.sizes or {}).get("test"),
            name=v["name"],
            encoding=v["encoding"],
            **common,
        )
    from tabmem.data.io import read_table

    files: dict[str, str] = {}
    shapes: dict[str, tuple[int, int]] = {}
    columns: dict[str, list[str]] = {}
    for key in ("path", "test"):
        if not v[key]:
            continue
        p = Path(v[key]).expanduser()
        p = p if p.is_absolute() else (base_dir / p)
        if not p.is_file():
            raise ParameterError(f"{where}{key}: file not found: {str(p)!r}")
        try:
            table = read_table(p, encoding=v["encoding"])
        except LookupError:
            raise ParameterError(f"{where}encoding: unknown text encoding {v['encoding']!r}") from None
        shapes[key] = table.shape
        columns[key] = [str(c) for c in table.columns]
        files[key] = str(p.resolve())
    n_total = shapes["path"][0]
    _check_columns(kinds, columns["path"], Path(files["path"]).name, where)
    if "test" in files:  # the test rows are scored with the training table's schema: every column is needed
        lacking = [c for c in columns["path"] if c not in columns["test"]]
        if lacking:
            raise ParameterError(
                f"{where}test: {Path(files['test']).name} lacks column {lacking[0]!r} of {Path(files['path']).name}"
                + (f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else "")
            )
    if v["n_train"] is not None and v["n_train"] > n_total:
        raise ParameterError(
            f"{where}n_train: {Path(files['path']).name} has {n_total:,} rows, asked for {v['n_train']:,}"
        )
    identity = {
        "train_sha256": _sha256(Path(files["path"])),
        "test_sha256": _sha256(Path(files["test"])) if "test" in files else None,
        "encoding": v["encoding"],
        **common,
    }
    return DatasetEntry(
        label=v["label"] or Path(files["path"]).stem,
        identity=identity,
        n_rows=n_total if v["n_train"] is None else v["n_train"],
        n_columns=shapes["path"][1],
        n_test=shapes["test"][0] if "test" in shapes else None,
        path=files["path"],
        test=files.get("test"),
        encoding=v["encoding"],
        **common,
    )


def _check_columns(kinds: dict[str, Any], columns: list[str], table: str, where: str) -> None:
    """``target``, ``categorical`` and ``numerical`` must name columns of the table (checked when the file is read)."""
    for key in ("target", "categorical", "numerical"):
        names = kinds[key] if isinstance(kinds[key], list) else [kinds[key]] if kinds[key] else []
        missing = [c for c in names if c not in columns]
        if missing:
            shown = ", ".join(repr(c) for c in columns[:12]) + (", ..." if len(columns) > 12 else "")
            raise ParameterError(f"{where}{key}: {missing[0]!r} is not a column of {table} (columns: {shown})")


def load_inputs(entry: DatasetEntry, data_dir: str | os.PathLike | None = None) -> CellData:
    """The entry's tables (cached per process: the cells of a task share them; treat them as read-only)."""
    return _load(entry, None if data_dir is None else str(data_dir))


def _load(entry: DatasetEntry, data_dir: str | None) -> CellData:
    return _load_cached(json.dumps(entry.to_dict(), sort_keys=True), data_dir)


@lru_cache(maxsize=4)
def _load_cached(entry_json: str, data_dir: str | None) -> CellData:
    return _load_uncached(DatasetEntry.from_dict(json.loads(entry_json)), data_dir)


def _load_uncached(entry: DatasetEntry, data_dir: str | None) -> CellData:
    cat, num, target = list(entry.categorical), list(entry.numerical), entry.target
    if entry.name:
        from tabmem.data.datasets import load_dataset

        ds = load_dataset(entry.name, data_dir=data_dir)
        train, test, schema = ds.train, ds.test, ds.schema
        if cat or num or target:
            schema = schema.with_overrides(categorical=cat, numerical=num, target=target or None)
    else:
        from tabmem.data.io import read_table

        assert entry.path is not None
        train = read_table(entry.path, encoding=entry.encoding)
        test = read_table(entry.test, encoding=entry.encoding) if entry.test else None
        schema = Schema.infer(train, categorical=cat, numerical=num, target=target or None, name=Path(entry.path).stem)
    rows = subsample_rows(len(train), entry.n_train, entry.subsample_seed)
    if len(rows) < len(train):
        train = train.iloc[rows].reset_index(drop=True)
    return CellData(train=train, test=test, schema=schema)
