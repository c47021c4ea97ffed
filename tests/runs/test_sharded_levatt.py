"""LevAtt's edit-distance search sharded over local worker processes writes the in-process files, byte for byte."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.neighbors import levenshtein
from tabmem.neighbors import shards as shards_module
from tabmem.runs import searches as searches_module
from tabmem.runs.attack import attack_to_dir

SCHEMA = Schema(("x", "y", "c"), ("x", "y"), ("c",))
FILES = ("summary.json", "scores.csv", "risk.csv", "roc.csv")


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"x": rng.normal(size=n).round(2), "y": rng.integers(0, 50, n).astype(float), "c": rng.choice(list("abc"), n)}
    )


def test_levatt_in_worker_shards_writes_the_in_process_files(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(shards_module, "MIN_SHARD_CELLS", 5000)
    counts: list[int] = []
    pool = searches_module.run_pool

    def counting(fn, payloads, **kw):
        counts.append(len(payloads))
        if fn.func is levenshtein._query_shard:  # type: ignore[attr-defined]
            counts.append(-1)  # LevAtt's own search went through the pool
        return pool(fn, payloads, **kw)

    monkeypatch.setattr(searches_module, "run_pool", counting)
    members, non_members = _table(150, 0), _table(150, 1)
    synthetic = pd.concat([members.iloc[:30], _table(120, 2)], ignore_index=True)
    for name, kw in {"plain": {}, "workers": {"jobs": 2, "shards": 3}}.items():
        attack_to_dir(
            members, non_members, synthetic, SCHEMA, tmp_path / name, attacks=["levatt"], n_bootstrap=10, **kw
        )
    assert -1 in counts and 3 in counts
    for f in FILES:
        assert (tmp_path / "plain" / f).read_bytes() == (tmp_path / "workers" / f).read_bytes(), f
