"""The neighbour searches sharded over the executor pool: the files of an in-process run, wherever the shards ran."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tabmem.neighbors.shards as shards_module
import tabmem.runs.searches as searches_module
from cli_run import run
from tabmem.data.schema import Schema
from tabmem.errors import ParameterError, TabmemError
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.neighbors import NeighborIndex
from tabmem.neighbors.shards import Sharding, shard_bounds, sharding
from tabmem.runs.attack import attack_to_dir
from tabmem.runs.audit import audit_to_dir
from tabmem.runs.searches import sharded_searches

AUDIT_FILES = ("summary.json", "replicas.csv", "records.csv", "rare_values.csv")
ATTACK_FILES = ("summary.json", "scores.csv", "risk.csv", "roc.csv")
SCHEMA = Schema(("x", "y", "c", "d"), ("x", "y"), ("c", "d"))


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n).round(1),  # coarse values: many ties and duplicated rows
            "y": rng.integers(0, 5, n).astype(float),
            "c": rng.choice(list("abcd"), n).astype(object),
            "d": rng.choice(list("pq"), n).astype(object),
        }
    )


@pytest.fixture
def tables():
    train = _table(300, 0)
    synthetic = pd.concat([train.iloc[:40], _table(160, 1)], ignore_index=True)  # 40 planted copies
    return train, synthetic, _table(120, 2)


@pytest.fixture
def tiny_shards(monkeypatch):
    """Small tables sharded too (their main searches, not the data-copying test's small cells), and the shard
    counts every search was split into."""
    monkeypatch.setattr(shards_module, "MIN_SHARD_CELLS", 5000)
    counts: list[int] = []
    pool = searches_module.run_pool

    def counting(fn, payloads, **kw):
        counts.append(len(payloads))
        return pool(fn, payloads, **kw)

    monkeypatch.setattr(searches_module, "run_pool", counting)
    return counts


def _bytes(out: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in names}


def _in_process(fn, payloads, on_done) -> None:
    for i in range(len(payloads)):
        on_done(i, fn(payloads[i]))


# ------------------------------------------------------------------------------------------ the split


@pytest.mark.parametrize(
    ("n_rows", "n_ref", "shards", "min_cells", "sizes"),
    [
        (10, 100, 3, 1, [3, 3, 4]),  # sizes differ by at most one row
        (10, 100, 20, 1, [1] * 10),  # never more shards than rows
        (10, 100, 4, 400, [5, 5]),  # each shard at least min_cells pairs: 1000 // 400 = 2 shards
        (10, 100, 4, 2000, [10]),  # too small to shard
        (0, 100, 4, 1, [0]),
    ],
)
def test_shard_bounds_cover_the_rows_in_order(monkeypatch, n_rows, n_ref, shards, min_cells, sizes):
    monkeypatch.setattr(shards_module, "MIN_SHARD_CELLS", min_cells)
    bounds = shard_bounds(n_rows, n_ref, shards)
    assert [b - a for a, b in bounds] == sizes
    assert bounds[0][0] == 0 and bounds[-1][1] == n_rows
    assert all(b0 == a1 for (_, b0), (a1, _) in zip(bounds, bounds[1:]))


@pytest.mark.parametrize("distance", ["gower", "fang2024", "l2"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_sharded_kneighbors_is_the_unsharded_search_bit_for_bit(monkeypatch, distance, k):
    monkeypatch.setattr(shards_module, "MIN_SHARD_CELLS", 1)
    ref, queries = _table(200, 3), pd.concat([_table(97, 4), _table(20, 3)], ignore_index=True)  # exact copies too
    index = NeighborIndex(distance, n_jobs=1).fit(ref, SCHEMA)
    idx, dist = index.kneighbors(queries, k)
    done: list[int] = []
    with sharding(Sharding(_in_process, shards=5)):
        sidx, sdist = index.kneighbors(queries, k, progress=done.append)
    np.testing.assert_array_equal(sidx, idx)
    assert sdist.tobytes() == dist.tobytes()
    assert sorted(done) == [23, 23, 23, 24, 24]  # one progress call per shard: its rows
    assert (
        index.n_jobs == 1 and shards_module.active_sharding() is None
    )  # the caller's index and context are left as they were


def test_a_device_search_is_never_sharded_silently_onto_the_cpu(monkeypatch):
    pytest.importorskip("torch")
    from tabmem.neighbors.device import use_device

    monkeypatch.setattr(shards_module, "MIN_SHARD_CELLS", 1)
    index = NeighborIndex("gower", n_jobs=1).fit(_table(50, 3), SCHEMA)
    with use_device("torch-cpu"), sharding(Sharding(_in_process, shards=3)):
        with pytest.raises(TabmemError, match="not combined with sharded searches"):
            index.kneighbors(_table(30, 4), 2)


def test_a_reference_smaller_than_k_pads_every_shard_alike(monkeypatch):
    monkeypatch.setattr(shards_module, "MIN_SHARD_CELLS", 1)
    index = NeighborIndex("gower", n_jobs=1).fit(_table(1, 5), SCHEMA)
    with sharding(Sharding(_in_process, shards=4)):
        idx, dist = index.kneighbors(_table(9, 6), 2)
    assert idx[:, 1].tolist() == [-1] * 9 and np.isinf(dist[:, 1]).all() and idx[:, 0].tolist() == [0] * 9


def test_a_shard_runs_unsharded_and_a_failing_shard_is_one_line(tiny_shards, tables, tmp_path):
    nested: list[object] = []

    def spy(fn, payloads, on_done):
        nested.append(shards_module.active_sharding())
        _in_process(fn, payloads, on_done)

    index = NeighborIndex("gower", n_jobs=1).fit(tables[0], SCHEMA)
    with sharding(Sharding(spy, shards=3)):
        index.kneighbors(tables[1], 2)
    assert len(nested) == 1  # the tasks themselves search unsharded: no nested pool

    def fail(x):
        raise ValueError(f"bad shard {x}\nsecond line")

    with pytest.raises(TabmemError) as err:  # a task that fails stops the search in one line naming the shard
        searches_module._run_shards(fail, [1, 2], print, executor="local", jobs=1, address=None, threads=1)
    assert str(err.value) == "the neighbour search failed in shard 1 of 2 (local): ValueError: bad shard 1"


def test_sharded_searches_checks_its_settings():
    with pytest.raises(ParameterError, match="shards"):
        with sharded_searches("local", shards=0):
            pass
    with pytest.raises(ParameterError, match="address applies to executor='ray'"):
        with sharded_searches("local", address="auto"):
            pass
    with sharded_searches("local", jobs=1):  # nothing to shard: no context at all
        assert shards_module.active_sharding() is None


# ------------------------------------------------------------------------------------------ the audit


def test_audit_in_shards_in_process_and_in_worker_processes_writes_the_same_files(
    tiny_shards, tables, tmp_path, monkeypatch
):
    from tabmem.memorization.selfsearch import clear_memory_cache

    train, synthetic, holdout = tables
    runs = {"plain": {}, "in-process": {"shards": 3}, "workers": {"jobs": 2, "shards": 5}}
    files = {}
    monkeypatch.setenv("TABMEM_SELF_SEARCH_CACHE", "off")  # every run searches the training table itself
    for name, kw in runs.items():
        clear_memory_cache()
        audit_to_dir(
            ReplicaDetector("gower", n_jobs=1), train, synthetic, SCHEMA, tmp_path / name, holdout=holdout, **kw
        )
        files[name] = _bytes(tmp_path / name, AUDIT_FILES)
    assert files["in-process"] == files["plain"] and files["workers"] == files["plain"]
    # synthetic, holdout and the training table's self-search (authenticity), each split; the copying cells too
    assert tiny_shards[:3] == [3, 3, 3] and 5 in tiny_shards
    assert b'"n_replicas"' in files["plain"]["summary.json"]


@pytest.mark.parametrize("distance", ["fang2024", "gower"])
def test_audit_on_ray_writes_the_local_files(tiny_shards, tables, tmp_path, ray_instance, distance):
    train, synthetic, holdout = tables
    for name, kw in {"local": {}, "ray": {"executor": "ray", "shards": 4}}.items():
        audit_to_dir(
            ReplicaDetector(distance, n_jobs=1), train, synthetic, SCHEMA, tmp_path / name, holdout=holdout, **kw
        )
    assert _bytes(tmp_path / "ray", AUDIT_FILES) == _bytes(tmp_path / "local", AUDIT_FILES)
    assert tiny_shards and set(tiny_shards[:3]) == {4}
    assert ray_instance.is_initialized()  # a Ray instance the process had started is left running


def test_dcr_and_mc_attacks_on_ray_and_workers_write_the_local_files(tiny_shards, tables, tmp_path, ray_instance):
    train, synthetic, holdout = tables
    runs = {"local": {}, "workers": {"jobs": 2, "shards": 3}, "ray": {"executor": "ray", "jobs": 2, "shards": 3}}
    for name, kw in runs.items():
        attack_to_dir(train, holdout, synthetic, SCHEMA, tmp_path / name, attacks=["dcr", "mc"], n_bootstrap=20, **kw)
    local = _bytes(tmp_path / "local", ATTACK_FILES)
    assert _bytes(tmp_path / "workers", ATTACK_FILES) == local
    assert _bytes(tmp_path / "ray", ATTACK_FILES) == local
    assert len(tiny_shards) >= 6 and set(tiny_shards) == {3}  # DCR, MC's ε and the ledger's replica search, twice


# ------------------------------------------------------------------------------------------ the command


@pytest.fixture
def files(tables, tmp_path):
    paths = {}
    for name, df in zip(("train", "syn", "hold"), tables):
        paths[name] = tmp_path / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    return paths


def _audit_args(files, out: Path, *extra: str) -> list[str]:
    return [
        "audit",
        "--train",
        files["train"],
        "--synthetic",
        files["syn"],
        "--holdout",
        files["hold"],
        "--categorical",
        "c,d",
        "--n-jobs",
        "1",
        "--out",
        out,
        *extra,
    ]


def test_cli_audit_with_workers_writes_the_in_process_files(tiny_shards, files, tmp_path, capsys):
    code, text = run(_audit_args(files, tmp_path / "a"), capsys)
    assert code == 0, text
    code, text = run(_audit_args(files, tmp_path / "b", "--jobs", "2", "--shards", "3"), capsys)
    assert code == 0, text
    for name in AUDIT_FILES[1:]:  # summary.json holds the seconds
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert tiny_shards[0] == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--address", "auto"], "Error: --address applies to --executor ray"),
        (
            ["--executor", "ray", "--address", "127.0.0.1:1"],
            "Error: --address 127.0.0.1:1: cannot join the Ray cluster",
        ),
        (["--shards", "0"], "Invalid value for '--shards'"),
        (["--device", "torch-cpu", "--shards", "2"], "Error: --device runs the neighbour search in this process"),
    ],
)
def test_cli_bad_executor_settings_are_one_line(files, tmp_path, capsys, extra, message):
    code, text = run(_audit_args(files, tmp_path / "out", *extra), capsys)
    assert code != 0 and message in text and "Traceback" not in text
    if "Invalid value" not in message:  # the error is the last line, and one line
        assert text.strip().splitlines()[-1].startswith(message) and text.count("Error") == 1, text


def test_cli_ray_missing_is_one_line(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    code, text = run(_audit_args(files, tmp_path / "out", "--executor", "ray"), capsys)
    assert code != 0 and text.strip().splitlines()[-1] == "Error: --executor ray needs Ray: pip install 'tabmem[ray]'"
    assert not (tmp_path / "out" / "summary.json").exists()
