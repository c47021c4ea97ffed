"""Conformance battery over the dataset registry: every registered dataset, built-in or added later,
is checked against its own declaration (no list of names here, so a new dataset is tested automatically).

The facts that come from outside the code (sizes and kinds from SOURCE.md, values read independently
of the loaders) live in ``test_datasets.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabmem.data.datasets import DATASETS, list_datasets, load_dataset
from tabmem.data.datasets.files import DatasetFiles
from tabmem.data.schema import validate

NAMES = DATASETS.names()


@pytest.mark.parametrize("name", NAMES)
def test_declaration_is_consistent(name):
    spec = DATASETS[name]
    assert spec.name == name
    schema = spec.schema()
    assert schema.columns == spec.columns and schema.target == spec.target and schema.task == spec.task
    assert set(spec.categorical) <= set(spec.columns)
    paths = [f.path for f in spec.files]
    assert len(paths) == len(set(paths)), "a file is declared twice"
    for f in spec.files:
        if f.urls:  # a downloaded file is only accepted against a recorded checksum
            assert f.sha256 and len(f.sha256) == 64, (name, f.path)
            assert all(u.startswith("https://") for u in f.urls), (name, f.path)
        for parent in f.derived_from:
            assert parent in paths, f"{name}/{f.path} is derived from undeclared {parent}"
        if f.derived_from:
            assert not f.required
    if spec.sizes is not None:
        assert set(spec.sizes) <= {"train", "val", "test"} and {"train", "test"} <= set(spec.sizes)
        assert all(isinstance(n, int) and n > 0 for n in spec.sizes.values())
    assert spec.source and spec.split


@pytest.mark.parametrize("name", NAMES)
def test_loads_as_declared(name, shared_data_dir: Path, tmp_path: Path):
    """Columns, sizes and source rows as declared; val/test validate against the train schema and categories."""
    spec = DATASETS[name]
    files = DatasetFiles(spec, data_dir=shared_data_dir, cache_dir=tmp_path, download=False, verify=False)
    if not files.available():
        pytest.skip(f"{name}: files not on this machine")
    d = load_dataset(name, data_dir=shared_data_dir, cache_dir=tmp_path, download=False)
    assert d.name == name and d.schema == spec.schema()
    assert set(d.splits) <= {"train", "val", "test"}
    for split, frame in d.splits.items():
        assert list(frame.columns) == list(spec.columns)
        assert isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0
        if spec.sizes is not None and split in spec.sizes:
            assert len(frame) == spec.sizes[split]
        rows = d.source_rows[split]
        assert rows.dtype == np.int64 and len(rows) == len(frame) and len(np.unique(rows)) == len(rows)
    train = validate(d.train, d.schema, name="train", nan="match")
    categories = {c: set(train.data[c]) for c in d.schema.categorical}
    for split, frame in d.splits.items():
        validate(frame, d.schema, name=split, categories=categories, nan="match")


def test_listing_covers_the_registry_in_order(shared_data_dir: Path):
    assert [i.name for i in list_datasets(data_dir=shared_data_dir)] == [s.name for s in DATASETS.in_order()]
    assert sorted(s.name for s in DATASETS.in_order()) == NAMES
