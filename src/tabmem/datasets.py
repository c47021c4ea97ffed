"""``tabmem.datasets``: the dataset registry under the name the core issue uses (see :mod:`tabmem.data.datasets`)."""

from tabmem.data.datasets import (
    ChecksumMismatchError,
    DataFile,
    Dataset,
    DatasetFiles,
    DatasetInfo,
    DatasetSpec,
    get_dataset_spec,
    list_datasets,
    load_dataset,
    load_table_with_schema,
    register_dataset,
    resolve_cache_dir,
    resolve_data_dir,
    sha256_file,
    verify_local_files,
)

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
