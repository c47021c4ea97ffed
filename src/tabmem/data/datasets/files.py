"""A dataset's files: where they are looked for, how they are downloaded and verified, how they are read.

Lookup order: ``<data_dir>/<dataset>/<file>`` (``data_dir=``, else ``$TABMEM_DATA_DIR``), then
``<cache_dir>/<dataset>/<file>`` (``cache_dir=``, else ``$TABMEM_CACHE_DIR``, else
``~/.cache/tabmem``). A missing file with public URLs is downloaded into the cache:

* every URL of the file is tried in order (mirrors), and a copy is accepted only when its sha256
  equals the one recorded in the dataset's ``SOURCE.md``;
* the body is streamed in 1 MiB chunks into a temporary file next to the target (bounded
  memory), fsynced, and renamed over the target only once verified, so a reader sees no file or
  the whole verified one, never a partial or corrupt copy (``tabmem._io.atomic_write`` is not
  used: the checksum must be checked between the write and the rename, and network errors must
  stay distinguishable from disk errors to fall through to the next mirror);
* offline, or when every mirror fails, :class:`~tabmem.errors.DataUnavailableError` says which
  file is missing, why, where to put it and where to download it.

Tests replace :func:`_fetch` (``monkeypatch.setattr(files, "_fetch", fake)``) to exercise all of
this without a network.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from tabmem.data.io import EXACT_FLOATS
from tabmem.errors import DataUnavailableError, TabmemError, suggest

__all__ = [
    "DOWNLOAD_TIMEOUT_S",
    "ChecksumMismatchError",
    "DataFile",
    "DatasetFiles",
    "DeclaredFiles",
    "load_npy",
    "read_csv",
    "resolve_cache_dir",
    "resolve_data_dir",
    "sha256_file",
]

DOWNLOAD_TIMEOUT_S = 30.0
logger = logging.getLogger("tabmem.data.datasets")


class ChecksumMismatchError(DataUnavailableError):
    """A local or downloaded file does not have the sha256 its ``SOURCE.md`` records."""


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


class DeclaredFiles(Protocol):
    """What :class:`DatasetFiles` and the loaders read of a dataset's declaration
    (:class:`~tabmem.data.datasets.registry.DatasetSpec` is one; this module does not import the registry)."""

    @property
    def name(self) -> str: ...

    @property
    def categorical(self) -> tuple[str, ...]: ...

    @property
    def files(self) -> tuple[DataFile, ...]: ...

    def file(self, path: str) -> DataFile: ...


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


# --------------------------------------------------------------------------- download
def _fetch(url: str, timeout: float) -> Iterator[bytes]:
    """GET ``url`` and yield its body in 1 MiB chunks (tests monkeypatch this; returning plain bytes works too)."""
    request = urllib.request.Request(url, headers={"User-Agent": "tabmem-dataset-loader"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (https URLs from the registry)
        while chunk := response.read(1 << 20):
            yield chunk


_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError, ValueError)


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


class DatasetFiles:
    """Finds a dataset's files in the data dir or cache, downloading or verifying them as asked."""

    def __init__(self, spec: DeclaredFiles, *, data_dir: Path | None, cache_dir: Path, download: bool, verify: bool):
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
        flag = suggest("data_dir=", "--data-dir")
        how = f"set $TABMEM_DATA_DIR or pass {flag}" if flag else "set $TABMEM_DATA_DIR"
        return f"put {declared.path!r} into {folders} ({how} to use another directory)"

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
                f"dataset {name!r}: downloaded {declared.path!r} but its checksum is wrong, so nothing was saved ("
                + "; ".join(mismatches + failures)
                + ")"
            )
        raise DataUnavailableError(  # one line: every source tried, then what to do
            f"dataset {name!r}: could not download {declared.path!r} (offline or the source moved: "
            + "; ".join(failures)
            + f"); download it on a connected machine from {declared.urls[0]} and "
            + self._where_to_put(declared)
        )


# --------------------------------------------------------------------------- readers
_PYARROW_OPTIONS = {"sep", "header", "encoding"}


def read_csv(path: Path, **kwargs) -> pd.DataFrame:
    """``pd.read_csv`` with exactly rounded floats (pandas 2's default C parser is off by an ulp on ~5% of values).

    pyarrow's reader (correctly rounded, 2-4x faster than the C parser in round-trip mode; see
    ``benchmarks/bench_datasets.py``) where its options suffice, else the C parser in round-trip mode.
    A file that cannot be parsed raises :class:`~tabmem.errors.TabmemError` naming it.
    """
    try:
        if set(kwargs) <= _PYARROW_OPTIONS:
            return pd.read_csv(path, engine="pyarrow", **kwargs)
        return pd.read_csv(path, **EXACT_FLOATS, **kwargs)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise TabmemError(
            f"{path}: could not be parsed ({exc}); the file is corrupted (load with verify=True)"
        ) from None


def load_npy(path: Path) -> np.ndarray:
    """``np.load`` without pickles; an unreadable file raises :class:`~tabmem.errors.TabmemError` naming it."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise TabmemError(
            f"{path}: not a readable .npy file ({exc}); the file is corrupted (load with verify=True)"
        ) from None
