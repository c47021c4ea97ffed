"""Registry of the real datasets used by the tabular-memorization papers.

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
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tabmem.data.io import EXACT_FLOATS, read_table
from tabmem.data.schema import Schema, Task
from tabmem.errors import DataUnavailableError, TabmemError

__all__ = [
    "ChecksumMismatchError",
    "DataFile",
    "Dataset",
    "DatasetFiles",
    "DatasetInfo",
    "DatasetSpec",
    "get_dataset_spec",
    "list_datasets",
    "load_dataset",
    "load_table_with_schema",
    "register_dataset",
    "resolve_cache_dir",
    "resolve_data_dir",
    "sha256_file",
    "verify_local_files",
]

DOWNLOAD_TIMEOUT_S = 30.0
logger = logging.getLogger(__name__)
_GH = "https://raw.githubusercontent.com"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_TABDDPM_COMMIT = "ec7254ad810d34b7fe403fca1aa076acf3de274b"  # ruheyun/tab-ddpm-dp: last change of the TabDDPM files


class ChecksumMismatchError(DataUnavailableError):
    """A local or downloaded file does not have the sha256 its ``SOURCE.md`` records."""


# --------------------------------------------------------------------------- public records
@dataclass(frozen=True)
class DataFile:
    """One file of a dataset folder.

    ``path`` is relative to ``<dir>/<dataset>/``; ``urls`` are tried in order (the sha256
    decides which copy is accepted); ``derived_from`` lists the files a *derivable* file
    (``required=False``) is computed from when it is absent.
    """

    path: str
    sha256: str | None = None
    urls: tuple[str, ...] = ()
    required: bool = True
    derived_from: tuple[str, ...] = ()
    no_download_reason: str | None = None


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


@dataclass(frozen=True)
class DatasetSpec:
    """Registry entry: what a dataset is and how to load it (see :func:`register_dataset`)."""

    name: str
    task: Task
    target: str
    columns: tuple[str, ...]
    categorical: tuple[str, ...]
    loader: Callable[[DatasetFiles], Mapping[str, pd.DataFrame]]
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


_REGISTRY: dict[str, DatasetSpec] = {}


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
) -> Callable[
    [Callable[[DatasetFiles], Mapping[str, pd.DataFrame]]], Callable[[DatasetFiles], Mapping[str, pd.DataFrame]]
]:
    """Decorator registering ``loader(files) -> {"train": df, "test": df[, "val": df]}`` under ``name``.

    The loader gets a :class:`DatasetFiles` (``files.path("x.csv")`` finds or downloads a
    declared file) and returns raw-unit frames whose index holds the 0-based source record
    positions. ``columns`` fixes the column order; columns not in ``categorical`` are
    numerical (the target is categorical for classification, numerical for regression).
    ``sizes`` (rows per split) are checked at load time when given.
    """
    if task not in ("binclass", "multiclass", "regression"):
        raise ValueError(f"register_dataset({name!r}): task must be binclass, multiclass or regression, got {task!r}")
    columns = tuple(columns)
    if target not in columns:
        raise ValueError(f"register_dataset({name!r}): target {target!r} is not one of the columns")
    unknown = sorted(set(categorical) - set(columns))
    if unknown:
        raise ValueError(f"register_dataset({name!r}): categorical columns {unknown} are not in columns")
    if (target in categorical) != (task != "regression"):
        raise ValueError(
            f"register_dataset({name!r}): the target must be categorical exactly when the task is classification"
        )

    def decorator(loader):
        if name in _REGISTRY and not overwrite:
            raise ValueError(f"dataset {name!r} is already registered (pass overwrite=True to replace it)")
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
        _REGISTRY[name] = spec
        return loader

    return decorator


def get_dataset_spec(name: str) -> DatasetSpec:
    """Registry entry of ``name`` (a :class:`TabmemError` lists the known names)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise TabmemError(f"unknown dataset {name!r}; known datasets: {known}") from None


# --------------------------------------------------------------------------- directories
def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """``data_dir`` if given, else ``$TABMEM_DATA_DIR``, else ``None`` (cache only)."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get("TABMEM_DATA_DIR")
    return Path(env).expanduser() if env else None


def resolve_cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir`` if given, else ``$TABMEM_CACHE_DIR``, else ``~/.cache/tabmem``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("TABMEM_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tabmem"


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks (bounded memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(chunk_size):
            h.update(chunk)
    return h.hexdigest()


def _fetch(url: str, timeout: float) -> Iterator[bytes]:
    """GET ``url`` and yield its body in 1 MiB chunks (tests monkeypatch this; returning plain bytes works too)."""
    request = urllib.request.Request(url, headers={"User-Agent": "tabmem-dataset-loader"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (https URLs from the registry)
        while chunk := response.read(1 << 20):
            yield chunk


_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError, ValueError)


class DatasetFiles:
    """Finds a dataset's files in the data dir or cache, downloading or verifying them as asked."""

    def __init__(self, spec: DatasetSpec, *, data_dir: Path | None, cache_dir: Path, download: bool, verify: bool):
        self.spec = spec
        self.data_dir = data_dir
        self.cache_dir = cache_dir
        self.download = download
        self.verify = verify
        self._verified: set[Path] = set()

    @property
    def search_dirs(self) -> list[Path]:
        dirs = [d / self.spec.name for d in (self.data_dir, self.cache_dir) if d is not None]
        return list(dict.fromkeys(dirs))

    def local(self, path: str) -> Path | None:
        """First existing copy of ``path`` (data dir before cache), or ``None``."""
        for folder in self.search_dirs:
            candidate = folder / path
            if candidate.is_file():
                return candidate
        return None

    def exists(self, path: str) -> bool:
        return self.local(path) is not None

    def available(self) -> bool:
        """Whether every required file (or what a derivable file is derived from) is local."""
        return all(self._has(f) for f in self.spec.files if f.required or f.derived_from)

    def _has(self, declared: DataFile) -> bool:
        if self.exists(declared.path):
            return True
        return bool(declared.derived_from) and all(self._has(self.spec.file(p)) for p in declared.derived_from)

    def path(self, path: str) -> Path:
        """Local path of a declared file: found, else downloaded into the cache, else a clear error."""
        declared = self.spec.file(path)
        found = self.local(path)
        if found is not None:
            if self.verify and declared.sha256 and found not in self._verified:
                actual = sha256_file(found)
                if actual != declared.sha256:
                    raise ChecksumMismatchError(
                        f"{found}: sha256 {actual} differs from the expected {declared.sha256} "
                        f"(dataset {self.spec.name!r}); the file is corrupted or a different version: replace it"
                    )
                self._verified.add(found)
            return found
        return self._download(declared)

    def _where_to_put(self, declared: DataFile) -> str:
        folders = " or ".join(str(d) for d in self.search_dirs)
        return f"put {declared.path!r} into {folders} (set $TABMEM_DATA_DIR or pass data_dir= / --data-dir to use another directory)"

    def _download(self, declared: DataFile) -> Path:
        name = self.spec.name
        if not declared.urls:
            reason = declared.no_download_reason or "it has no anonymous public download"
            raise DataUnavailableError(
                f"dataset {name!r}: file {declared.path!r} is missing and cannot be downloaded ({reason}); "
                + self._where_to_put(declared)
            )
        if not self.download:
            raise DataUnavailableError(
                f"dataset {name!r}: file {declared.path!r} is missing and download=False; "
                + self._where_to_put(declared)
                + f", or allow downloading from {declared.urls[0]}"
            )
        dest = self.cache_dir / name / declared.path
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataUnavailableError(
                f"cannot create the dataset cache {dest.parent}: {exc}; pass cache_dir= or set $TABMEM_CACHE_DIR"
            ) from exc
        failures: list[str] = []
        mismatches: list[str] = []
        for url in declared.urls:
            logger.info("dataset %s: downloading %s from %s", name, declared.path, url)
            try:
                tmp, actual = _stream_to_temp(url, dest)
            except _NETWORK_ERRORS as exc:
                failures.append(f"{url}: {getattr(exc, 'reason', None) or exc}")
                continue
            if declared.sha256 and actual != declared.sha256:
                tmp.unlink(missing_ok=True)
                mismatches.append(f"{url}: got sha256 {actual}, expected {declared.sha256}")
                continue
            os.replace(tmp, dest)  # atomic: readers see the old state or the whole verified file
            return dest
        if mismatches:
            raise ChecksumMismatchError(
                f"dataset {name!r}: downloaded {declared.path!r} but its checksum is wrong, so nothing was saved:\n  - "
                + "\n  - ".join(mismatches + failures)
            )
        raise DataUnavailableError(
            f"dataset {name!r}: could not download {declared.path!r} (offline or the source moved):\n  - "
            + "\n  - ".join(failures)
            + f"\nDownload it on a connected machine from {declared.urls[0]} and "
            + self._where_to_put(declared)
        )


def _stream_to_temp(url: str, dest: Path) -> tuple[Path, str]:
    """Write the body of ``url`` to a temporary file next to ``dest`` (bounded memory); return it and its sha256."""
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(name)
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as fh:
            body = _fetch(url, DOWNLOAD_TIMEOUT_S)
            for chunk in [body] if isinstance(body, bytes) else body:
                h.update(chunk)
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp, h.hexdigest()


# --------------------------------------------------------------------------- public API
def list_datasets(
    *, data_dir: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
) -> list[DatasetInfo]:
    """All registered datasets with their sizes and whether their files are on this machine."""
    data = resolve_data_dir(data_dir)
    cache = resolve_cache_dir(cache_dir)
    infos = []
    for name in _REGISTRY:
        spec = _REGISTRY[name]
        files = DatasetFiles(spec, data_dir=data, cache_dir=cache, download=False, verify=False)
        sizes = spec.sizes or {}
        infos.append(
            DatasetInfo(
                name=name,
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


# --------------------------------------------------------------------------- split helpers
def tabcutmix_split(
    table: pd.DataFrame, categorical: Sequence[str], *, seed: int = 82, train_fraction: float = 0.9
) -> tuple[np.ndarray, np.ndarray, int]:
    """TabCutMix's 90/10 split (``process_dataset.py`` of Fang et al. 2024, TabSyn convention).

    ``idx = arange(n)`` is shuffled in place with the legacy numpy generator seeded ``seed``;
    train = ``idx[:int(0.9 n)]``, test = the last ``n - int(0.9 n)``; when some categorical
    column lacks a category in train, the seed grows by 1 and the *already shuffled* ``idx`` is
    shuffled again. Uses a private ``RandomState`` (no global RNG side effect). Returns
    (train positions, test positions, seed used), positions in the papers' row order.
    """
    n = len(table)
    n_train = int(train_fraction * n)
    n_test = n - n_train
    idx = np.arange(n)
    full_levels = {c: table[c].nunique(dropna=False) for c in categorical}
    for attempt in range(1000):
        used = seed + attempt
        np.random.RandomState(used).shuffle(idx)
        train = idx[:n_train]
        if all(table[c].iloc[train].nunique(dropna=False) == k for c, k in full_levels.items()):
            return train.copy(), idx[n - n_test :].copy(), used
    raise TabmemError("tabcutmix_split: no seed in 1000 tries keeps every category in the training split")


def _check_split_file(files: DatasetFiles, rel: str, parts: Mapping[str, np.ndarray]) -> None:
    """When the stored split map is present, check that the derived split agrees with it."""
    found = files.local(rel)
    if found is None:
        return
    files.path(rel)  # checksum when verify=True
    stored = _read_csv(found)
    for split, positions in parts.items():
        expected = np.sort(stored.loc[stored["split"] == split, "row"].to_numpy())
        if not np.array_equal(expected, np.sort(positions)):
            raise TabmemError(
                f"{found}: its {split} rows differ from the re-derived split; the file is corrupted or stale"
            )


def _split_by_map(table: pd.DataFrame, split_map: pd.DataFrame, source: str) -> dict[str, pd.DataFrame]:
    if len(split_map) != len(table) or not np.array_equal(np.sort(split_map["row"].to_numpy()), np.arange(len(table))):
        raise TabmemError(
            f"{source}: expected one line per record (rows 0..{len(table) - 1}), got {len(split_map)} lines"
        )
    out = {}
    for split in ("train", "val", "test"):
        rows = np.sort(split_map.loc[split_map["split"] == split, "row"].to_numpy())
        if len(rows):
            out[split] = table.iloc[rows]
    return out


def derive_tabddpm_split(
    table: pd.DataFrame,
    features: Sequence[str],
    target: str,
    arrays: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    target_offset: float = 0.0,
    decimals: int | None = 5,
    as_float32: bool = False,
) -> pd.DataFrame:
    """Map each record of ``table`` to the TabDDPM split (``X_num_<split>.npy`` / ``y_<split>.npy``).

    A record matches a split row when its features and target (minus ``target_offset``) agree,
    rounded to ``decimals`` or compared as float32 (``as_float32``: the TabDDPM California files
    are float32). Identical records are assigned one-to-one in record order. Returns a frame
    ``row, split, ambiguous`` like ``split_tabddpm.csv`` (``ambiguous``: its group of identical
    keys spans several splits, so which copy went where is arbitrary).
    """

    def keys(x: np.ndarray, y: np.ndarray) -> pd.DataFrame:
        m = np.column_stack([x, y]).astype(np.float64)
        m = m.astype(np.float32).astype(np.float64) if as_float32 else np.round(m, decimals)
        return pd.DataFrame(m, columns=[f"k{i}" for i in range(m.shape[1])])

    record_keys = keys(
        table[list(features)].to_numpy(dtype=np.float64), table[target].to_numpy(dtype=np.float64) - target_offset
    )
    key_cols = list(record_keys.columns)
    record_keys["row"] = np.arange(len(table))
    record_keys["occurrence"] = record_keys.groupby(key_cols, sort=False).cumcount()
    split_keys = []
    for split, (x, y) in arrays.items():
        k = keys(np.asarray(x), np.asarray(y).reshape(-1))
        k["split"] = split
        split_keys.append(k)
    all_split = pd.concat(split_keys, ignore_index=True)
    all_split["occurrence"] = all_split.groupby(key_cols, sort=False).cumcount()
    merged = record_keys.merge(all_split, on=[*key_cols, "occurrence"], how="left", validate="one_to_one")
    if merged["split"].isna().any() or len(all_split) != len(table):
        n_bad = int(merged["split"].isna().sum())
        raise TabmemError(
            f"TabDDPM split files ({len(all_split):,} rows) do not match the table ({len(table):,} records): "
            f"{n_bad:,} record(s) have no counterpart"
        )
    n_splits = merged.groupby(key_cols, sort=False)["split"].transform("nunique")
    merged["ambiguous"] = (n_splits > 1).astype(int)
    return merged.sort_values("row")[["row", "split", "ambiguous"]].reset_index(drop=True)


def _tabddpm_split_map(files: DatasetFiles, table: pd.DataFrame, features, target, **kwargs) -> pd.DataFrame:
    found = files.local("split_tabddpm.csv")
    if found is not None:
        return _read_csv(files.path("split_tabddpm.csv"))
    arrays = {}
    for split in ("train", "val", "test"):
        arrays[split] = tuple(_load_npy(files.path(f"tabddpm_split/{stem}_{split}.npy")) for stem in ("X_num", "y"))
    return derive_tabddpm_split(table, features, target, arrays, **kwargs)


_PYARROW_OPTIONS = {"sep", "header", "encoding"}


def _load_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise TabmemError(
            f"{path}: not a readable .npy file ({exc}); the file is corrupted (load with verify=True)"
        ) from None


def _read_csv(path: Path, **kwargs) -> pd.DataFrame:
    """``pd.read_csv`` with exactly rounded floats (pandas' default C parser is off by an ulp on ~5% of values).

    pyarrow's reader (correctly rounded, 2-4x faster than the C parser in round-trip mode; see
    ``benchmarks/bench_datasets.py``) where its options suffice, else the C parser in round-trip mode.
    """
    try:
        if set(kwargs) <= _PYARROW_OPTIONS:
            return pd.read_csv(path, engine="pyarrow", **kwargs)
        return pd.read_csv(path, **EXACT_FLOATS, **kwargs)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise TabmemError(
            f"{path}: could not be parsed ({exc}); the file is corrupted (load with verify=True)"
        ) from None


def _gh(repo: str, commit: str, path: str) -> str:
    return f"{_GH}/{repo}/{commit}/{urllib.request.quote(path)}"


def _tabddpm_files(dataset: str, shas: Mapping[str, str]) -> tuple[DataFile, ...]:
    return tuple(
        DataFile(
            f"tabddpm_split/{stem}.npy",
            shas[stem],
            (_gh("ruheyun/tab-ddpm-dp", _TABDDPM_COMMIT, f"data/{dataset}/{stem}.npy"),),
            required=False,
        )
        for stem in shas
    )


# =========================================================================== the datasets
ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education.num", "marital.status", "occupation",
    "relationship", "race", "sex", "capital.gain", "capital.loss", "hours.per.week", "native.country", "income",
)  # fmt: skip
_ADULT_GEN = "99c353916d474e4bd70b1f5cdc745213d205ccbf"  # llxler/TabCutMix_GEN


@register_dataset(
    "adult",
    task="binclass",
    target="income",
    columns=ADULT_COLUMNS,
    categorical=[ADULT_COLUMNS[i] for i in (1, 3, 5, 6, 7, 8, 9, 13, 14)],
    files=(
        DataFile(
            "adult.data",
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            (f"{_UCI}/adult/adult.data", _gh("llxler/TabCutMix_GEN", _ADULT_GEN, "data/adult/adult.data")),
        ),
        DataFile(
            "adult.test",
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            (f"{_UCI}/adult/adult.test", _gh("llxler/TabCutMix_GEN", _ADULT_GEN, "data/adult/adult.test")),
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/2/adult",
    split="official UCI train/test files",
    sizes={"train": 32_561, "test": 16_281},
)
def _load_adult(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    opts = dict(header=None, names=list(ADULT_COLUMNS), skipinitialspace=True, keep_default_na=False, na_values=[])
    train = _read_csv(files.path("adult.data"), **opts)
    test = _read_csv(files.path("adult.test"), skiprows=1, **opts)
    test["income"] = test["income"].str.removesuffix(".")  # test labels are written "<=50K." / ">50K."
    return {"train": train, "test": test}


DEFAULT_COLUMNS = (
    "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
    "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
    "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6", "default payment next month",
)  # fmt: skip


@register_dataset(
    "default",
    task="binclass",
    target="default payment next month",
    columns=DEFAULT_COLUMNS,
    categorical=[DEFAULT_COLUMNS[i] for i in (1, 2, 3, 5, 6, 7, 8, 9, 10, 23)],
    files=(
        DataFile(
            "default_of_credit_card_clients.csv",
            "5571adc7f0ce9747839d50cd4b7342b8e1c14de878849b533d02d46fa310fb0a",
            (
                _gh(
                    "sbyousuf/credit-card-default-prediction",
                    "f8f1f38aeba3fbbec61e01a9c4edd8de3263bbde",
                    "default of credit card clients.csv",
                ),
            ),
        ),
        DataFile(
            "split_tabcutmix_seed82.csv",
            "f29182b6c57aef6dde18d98e634fb8268a5cc6c04fdad99e5afa9bfd944f36b7",
            required=False,
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/350/default+of+credit+card+clients",
    split="TabCutMix 90/10, numpy seed 82 (re-derived)",
    sizes={"train": 27_000, "test": 3_000},
)
def _load_default(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    # line 1 is UCI's anonymised header (X0..X23,Y), line 2 the real names; UTF-8 BOM, CRLF
    table = _read_csv(files.path("default_of_credit_card_clients.csv"), header=1, encoding="utf-8-sig")
    table = table.drop(columns="ID")
    return _tabcutmix_parts(files, table, "split_tabcutmix_seed82.csv")


def _tabcutmix_parts(files: DatasetFiles, table: pd.DataFrame, split_file: str) -> dict[str, pd.DataFrame]:
    train, test, _ = tabcutmix_split(table, files.spec.categorical, seed=82)
    _check_split_file(files, split_file, {"train": train, "test": test})
    return {"train": table.iloc[train], "test": table.iloc[test]}


SHOPPERS_COLUMNS = (
    "Administrative", "Administrative_Duration", "Informational", "Informational_Duration", "ProductRelated",
    "ProductRelated_Duration", "BounceRates", "ExitRates", "PageValues", "SpecialDay", "Month", "OperatingSystems",
    "Browser", "Region", "TrafficType", "VisitorType", "Weekend", "Revenue",
)  # fmt: skip


@register_dataset(
    "shoppers",
    task="binclass",
    target="Revenue",
    columns=SHOPPERS_COLUMNS,
    categorical=SHOPPERS_COLUMNS[10:],
    files=(
        DataFile(
            "online_shoppers_intention.csv",
            "b3055ee355f59134d851d32641183cb4a8b45def7124d2f50442a042f358e0d9",
            (
                f"{_UCI}/00468/online_shoppers_intention.csv",
                _gh(
                    "llxler/TabCutMix-3F7B",
                    "7ae93f08386389805db1d1206c9ecfca92a8ba22",
                    "data/shoppers/online_shoppers_intention.csv",
                ),
            ),
        ),
        DataFile(
            "split_tabcutmix_seed82.csv",
            "ff01c3adc73f1e1c23558365f4e777655a524cac45e04c657506c51bd4c673c7",
            required=False,
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/468/online+shoppers+purchasing+intention+dataset",
    split="TabCutMix 90/10, numpy seed 82 (re-derived)",
    sizes={"train": 11_097, "test": 1_233},
)
def _load_shoppers(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    table = _read_csv(files.path("online_shoppers_intention.csv"))
    return _tabcutmix_parts(files, table, "split_tabcutmix_seed82.csv")


CARDIO_COLUMNS = (
    "age",
    "gender",
    "height",
    "weight",
    "ap_hi",
    "ap_lo",
    "cholesterol",
    "gluc",
    "smoke",
    "alco",
    "active",
    "cardio",
)
_KAGGLE_CARDIO = "https://www.kaggle.com/datasets/sulianova/cardiovascular-disease-dataset"


@register_dataset(
    "cardio",
    task="binclass",
    target="cardio",
    columns=CARDIO_COLUMNS,
    categorical=[CARDIO_COLUMNS[i] for i in (1, 6, 7, 8, 9, 10, 11)],
    files=(
        DataFile(
            "cardio_train.csv",
            "21a705d23381b0dfd6a6416da701b490744f1fc3b47e9ff3db3968c420ffa10c",
            no_download_reason=f"Kaggle requires a signed-in account; download cardio_train.csv from {_KAGGLE_CARDIO}",
        ),
        DataFile(
            "split_tabddpm.csv",
            "6a19253d5045d47841bb18a5147b4354a1ad0d087fe8f1c20241a172f0213be2",
            no_download_reason="it was derived by matching the TabDDPM cardio split files, whose categorical part is not public; "
            "copy it from the tabmem shared datasets folder",
        ),
    ),
    source=_KAGGLE_CARDIO,
    split="TabDDPM split (split_tabddpm.csv)",
    sizes={"train": 44_800, "val": 14_000, "test": 11_200},
)
def _load_cardio(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    table = _read_csv(files.path("cardio_train.csv"), sep=";").drop(columns="id")
    split_map = _read_csv(files.path("split_tabddpm.csv"))
    return _split_by_map(table, split_map, "cardio/split_tabddpm.csv")


WILT_COLUMNS = ("GLCM_Pan", "Mean_G", "Mean_R", "Mean_NIR", "SD_Plan", "Class")


@register_dataset(
    "wilt",
    task="binclass",
    target="Class",
    columns=WILT_COLUMNS,
    categorical=["Class"],
    files=(
        DataFile(
            "wilt.csv",
            "7cbf7020c99b0b0c3487a5539b8717319ce25dcfe15ac16ad79b9d3e7812ef28",
            (
                _gh(
                    "mcavs/imbalanced_tabular_benchmark_dataset", "8924cd8d36a466a83eacc573d634e3c07d5f980b", "wilt.csv"
                ),
            ),
        ),
        DataFile(
            "split_tabddpm.csv",
            "670c7df793f4f1c5662b7f5be89d1e7d99dd61979534c8732d100335cc9e5134",
            required=False,
            derived_from=tuple(f"tabddpm_split/{s}_{p}.npy" for s in ("X_num", "y") for p in ("train", "val", "test")),
        ),
        *_tabddpm_files(
            "wilt",
            {
                "X_num_train": "3b57a83d72a3447f828495ea124151fa3405e566723eae8fc8c4cc59470fd050",
                "X_num_val": "08dfffb0e8037815f132de53cb938f0d00010d659817ff50eb84c5ccc6f89586",
                "X_num_test": "ba30e6cc7a780e70d726ef3d2971d434e1667427634cf9b5459caf17044108e5",
                "y_train": "2743985cd028e8adde73d9fde181e289ea7f79e2368255697d9fcec344be73c1",
                "y_val": "38fe09e9ad0a005fcc9ef880d34e197a755f1e6dbdb16c02e2f77d64df14f430",
                "y_test": "4380c27dbb26e00aa8706553f55aebf1276d0f01986fd6c5b91f0ecee6b22343",
            },
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/285/wilt",
    split="TabDDPM split (split_tabddpm.csv, re-derived from the TabDDPM .npy files when absent)",
    sizes={"train": 3_096, "val": 775, "test": 968},
)
def _load_wilt(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    table = _read_csv(files.path("wilt.csv"))
    # TabDDPM codes the class 0/1 (= Class - 1); features match at 5 decimals
    split_map = _tabddpm_split_map(files, table, WILT_COLUMNS[:5], "Class", target_offset=1.0, decimals=5)
    return _split_by_map(table, split_map, "wilt split map")


CALIFORNIA_COLUMNS = (
    "MedInc",
    "HouseAge",
    "AveRooms",
    "AveBedrms",
    "Population",
    "AveOccup",
    "Latitude",
    "Longitude",
    "MedHouseVal",
)


def california_from_raw(raw: pd.DataFrame) -> pd.DataFrame:
    """scikit-learn's ``fetch_california_housing`` layout from the StatLib columns (its documented definition)."""
    households = raw["households"]
    return pd.DataFrame(
        {
            "MedInc": raw["medianIncome"],
            "HouseAge": raw["housingMedianAge"],
            "AveRooms": raw["totalRooms"] / households,
            "AveBedrms": raw["totalBedrooms"] / households,
            "Population": raw["population"],
            "AveOccup": raw["population"] / households,
            "Latitude": raw["latitude"],
            "Longitude": raw["longitude"],
            "MedHouseVal": raw["medianHouseValue"] / 100_000,
        }
    ).astype(np.float64)


@register_dataset(
    "california",
    task="regression",
    target="MedHouseVal",
    columns=CALIFORNIA_COLUMNS,
    categorical=[],
    files=(
        DataFile(
            "cal_housing_raw.csv",
            "033804e189f49ddf4a2666d6a67c9dda842d6dc7b64980eb8005633980c1afba",
            (_gh("mcobzarenco/test-datasets", "6c2eccaf55730e4beea49d6270ef07c8e52a9b47", "california_housing.csv"),),
            required=False,
        ),
        DataFile(
            "california.csv",
            "94ef369b909f5c725340b512b7c9a05c1550a554b6592d29303990e3ba521a1f",
            required=False,
            derived_from=("cal_housing_raw.csv",),
        ),
        DataFile(
            "split_tabddpm.csv",
            "180fbe823981164b11ce9bf8b0d1d18233dae582b071ba55e33458e3757ef787",
            required=False,
            derived_from=tuple(f"tabddpm_split/{s}_{p}.npy" for s in ("X_num", "y") for p in ("train", "val", "test")),
        ),
        *_tabddpm_files(
            "california",
            {
                "X_num_train": "1579afba8fc21fe576de46ab0e04692162542cd6a54a29aa8b8db35b34633831",
                "X_num_val": "fcdc5aa78d48174953959f09f418abb6ce17133cf0297c2f3c52bbe533abb4b3",
                "X_num_test": "509dbf1d10a85301b2a560d1cce38b4acb96327e20414e7aea4ff1c0848b6827",
                "y_train": "219117b4a5c0b18aea5aa5c1ddb591b60664c51b8e5c983c486ab43ab69dd945",
                "y_val": "4e766e32aef456f619ab69f146ebfb9dc41a9eeb4ef3a873ca392b7ddce35825",
                "y_test": "93bfc0e8af7908026ab9d20cc3798579d97f4e5bfa558d39e5b03f5968ae078c",
            },
        ),
    ),
    source="https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.html",
    split="TabDDPM split (split_tabddpm.csv, re-derived from the TabDDPM .npy files when absent)",
    sizes={"train": 13_209, "val": 3_303, "test": 4_128},
)
def _load_california(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    if files.exists("california.csv"):
        table = _read_csv(files.path("california.csv"))
    else:
        table = california_from_raw(_read_csv(files.path("cal_housing_raw.csv"), skipinitialspace=True))
    split_map = _tabddpm_split_map(files, table, CALIFORNIA_COLUMNS[:8], "MedHouseVal", as_float32=True)
    return _split_by_map(table, split_map, "california split map")


CASP_COLUMNS = ("RMSD", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9")


def _sklearn_split(table: pd.DataFrame, train_size: float = 0.8, random_state: int = 42) -> dict[str, pd.DataFrame]:
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(table, train_size=train_size, random_state=random_state)
    return {"train": train, "test": test}


@register_dataset(
    "casp",
    task="regression",
    target="RMSD",
    columns=CASP_COLUMNS,
    categorical=[],
    files=(
        DataFile(
            "CASP.csv",
            "712d2759f8113622a3ba93a47e451397147df946111f6ffdd8c655385d564aef",
            (
                f"{_UCI}/00265/CASP.csv",
                _gh("himabindu26/BioInformatics", "4331e93121287d4300991ebe9de49ce62b3b93a1", "CASP.csv"),
            ),
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/265/physicochemical+properties+of+protein+tertiary+structure",
    split="80/20, train_test_split(train_size=0.8, random_state=42) (LevAtt paper)",
    sizes={"train": 36_584, "test": 9_146},
)
def _load_casp(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    return _sklearn_split(_read_csv(files.path("CASP.csv")))


DIABETES_COLUMNS = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target")


@register_dataset(
    "diabetes",
    task="regression",
    target="target",
    columns=DIABETES_COLUMNS,
    categorical=["sex"],
    source="scikit-learn (sklearn.datasets.load_diabetes, bundled; Efron et al. 2004)",
    split="80/20, train_test_split(train_size=0.8, random_state=42)",
    sizes={"train": 353, "test": 89},
)
def _load_diabetes(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    from sklearn.datasets import load_diabetes

    table = load_diabetes(scaled=False, as_frame=True).frame
    table["sex"] = table["sex"].astype(np.int64)  # raw codes 1/2 (floats in scikit-learn's frame)
    return _sklearn_split(table[list(DIABETES_COLUMNS)])
