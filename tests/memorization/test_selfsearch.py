"""The training table's self-search, computed once per table: same bytes with and without the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from brute import all_distances

import tabmem.memorization.selfsearch as selfsearch
from tabmem.data.schema import Schema
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.memorization.selfsearch import clear_memory_cache, nearest_other_distances, self_search_key
from tabmem.neighbors.distances import GowerDistance
from tabmem.runs.audit import audit_to_dir

OUTPUTS = ("summary.json", "replicas.csv", "records.csv", "rare_values.csv")
SCHEMA = Schema(("x", "y", "k", "j"), ("x", "y"), ("k", "j"))


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": np.round(rng.normal(50, 10, n), 1),
            "y": np.round(rng.exponential(100, n), 0),
            "k": rng.choice(["a", "b", "c"], n).astype(object),
            "j": rng.choice(["u", "v"], n).astype(object),
        }
    )
    frame.iloc[5] = frame.iloc[3]  # an exact duplicate: its nearest other row is at 0
    return frame


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """Each test starts with an empty memory cache and a disk cache of its own; searches are counted."""
    monkeypatch.setenv("TABMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TABMEM_SELF_SEARCH_CACHE", raising=False)
    clear_memory_cache()
    calls: list[int] = []
    real = selfsearch.nearest_other_distance

    def counted(index, reference, *, progress=None):
        calls.append(len(reference))
        return real(index, reference, progress=progress)

    monkeypatch.setattr(selfsearch, "nearest_other_distance", counted)
    yield calls
    clear_memory_cache()


def _loo_brute(train: pd.DataFrame, distance: str) -> np.ndarray:
    d = all_distances(train, train, SCHEMA, distance)
    np.fill_diagonal(d, np.inf)
    return d.min(axis=1)


@pytest.mark.parametrize("distance", ["gower", "fang2024", "l2"])
def test_cached_result_is_the_float64_brute_force_bit_for_bit(fresh, distance):
    train = _table(120, 0)
    det = ReplicaDetector(distance).fit(train, SCHEMA)
    first = nearest_other_distances(det.index_, det.training_table_)
    np.testing.assert_allclose(first, _loo_brute(train, distance), rtol=1e-12, atol=1e-15)
    assert first[3] == 0.0 and first[5] == 0.0
    again = nearest_other_distances(det.index_, det.training_table_)  # memory
    clear_memory_cache()
    det2 = ReplicaDetector(distance, n_jobs=2, memory_budget=1 << 16).fit(train, SCHEMA)  # other process, knobs
    disk = nearest_other_distances(det2.index_, det2.training_table_)
    assert fresh == [120]  # one search for three calls
    assert first.tobytes() == again.tobytes() == disk.tobytes()


def test_audits_write_the_same_bytes_with_and_without_the_cache(fresh, tmp_path, monkeypatch):
    train, hold = _table(150, 1), _table(60, 2)
    syns = [_table(80, 3), _table(90, 4)]

    def audit(syn: pd.DataFrame, out: Path) -> None:
        audit_to_dir(ReplicaDetector("gower"), train, syn, SCHEMA, out, holdout=hold)

    monkeypatch.setenv("TABMEM_SELF_SEARCH_CACHE", "off")
    for i, syn in enumerate(syns):
        clear_memory_cache()
        audit(syn, tmp_path / f"plain{i}")
    assert fresh == [150, 150]  # without any cache: one self-search per audit
    monkeypatch.delenv("TABMEM_SELF_SEARCH_CACHE")
    clear_memory_cache()
    audit(syns[0], tmp_path / "cold0")  # computes and stores
    audit(syns[1], tmp_path / "warm1")  # memory
    clear_memory_cache()
    audit(syns[0], tmp_path / "disk0")  # a new process: the disk
    assert fresh == [150, 150, 150]
    for name, i in (("cold0", 0), ("warm1", 1), ("disk0", 0)):
        for f in OUTPUTS:
            assert (tmp_path / name / f).read_bytes() == (tmp_path / f"plain{i}" / f).read_bytes(), (name, f)


def test_key_changes_with_everything_the_result_depends_on():
    train = _table(50, 5)
    det = ReplicaDetector("gower").fit(train, SCHEMA)
    base = self_search_key(det.index_, det.training_table_)
    changed = train.copy()
    changed.loc[7, "x"] += 0.5
    other_rows = train.iloc[::-1].reset_index(drop=True)
    roles = Schema(("x", "y", "k", "j"), ("x",), ("y", "k", "j"))
    variants = [
        ReplicaDetector("gower").fit(changed, SCHEMA),
        ReplicaDetector("gower").fit(other_rows, SCHEMA),
        ReplicaDetector("fang2024").fit(train, SCHEMA),
        ReplicaDetector("gower", nan="match").fit(train, SCHEMA),
        ReplicaDetector("gower").fit(train, roles),
    ]
    keys = {self_search_key(d.index_, d.training_table_) for d in variants}
    assert base not in keys and len(keys) == len(variants)
    same = ReplicaDetector("gower", threshold=0.2, n_jobs=1).fit(train.copy(), SCHEMA)
    assert self_search_key(same.index_, same.training_table_) == base
    det.index_.distance = GowerDistance()  # a custom instance: its parameters are not in the key
    assert self_search_key(det.index_, det.training_table_) is None


def test_a_changed_table_is_searched_again(fresh):
    train = _table(60, 6)
    det = ReplicaDetector("gower").fit(train, SCHEMA)
    nearest_other_distances(det.index_, det.training_table_)
    changed = train.copy()
    changed.loc[0, "y"] = 1e4  # row 0 moves far away: its nearest other row moves too
    det2 = ReplicaDetector("gower").fit(changed, SCHEMA)
    got = nearest_other_distances(det2.index_, det2.training_table_)
    assert fresh == [60, 60]
    np.testing.assert_allclose(got, _loo_brute(changed, "gower"), rtol=1e-12, atol=1e-15)


def test_damaged_or_unwritable_cache_is_recomputed_never_an_error(fresh, tmp_path, monkeypatch):
    train = _table(40, 7)
    det = ReplicaDetector("gower").fit(train, SCHEMA)
    first = nearest_other_distances(det.index_, det.training_table_)
    (entry,) = (tmp_path / "cache" / "self-search").glob("*.npy")
    entry.write_bytes(b"not an array")
    clear_memory_cache()
    assert nearest_other_distances(det.index_, det.training_table_).tobytes() == first.tobytes()
    np.save(entry, np.zeros(3))  # wrong length
    clear_memory_cache()
    assert nearest_other_distances(det.index_, det.training_table_).tobytes() == first.tobytes()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("TABMEM_CACHE_DIR", str(blocker))  # a file where the folder should be
    clear_memory_cache()
    assert nearest_other_distances(det.index_, det.training_table_).tobytes() == first.tobytes()
    assert fresh == [40, 40, 40, 40]


def test_progress_sees_every_row_searched_or_cached():
    train = _table(70, 8)
    det = ReplicaDetector("gower").fit(train, SCHEMA)
    for _ in range(2):
        seen: list[int] = []
        nearest_other_distances(det.index_, det.training_table_, progress=seen.append)
        assert sum(seen) == 70
