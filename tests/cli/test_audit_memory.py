"""``tabmem audit``'s memory estimate: printed before the run, one clear line where it clearly cannot fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cli_run import run
from tabmem.errors import TabmemError
from tabmem.runs import memory
from tabmem.runs.memory import GIB, audit_memory, available_memory_bytes, check_audit_memory


def test_estimate_is_linear_in_the_cells_and_counts_the_search_budget() -> None:
    a = audit_memory(200_000, 200_000, 15, GIB, n_categorical=9)
    b = audit_memory(400_000, 400_000, 15, GIB, n_categorical=9)
    c = audit_memory(600_000, 600_000, 15, GIB, n_categorical=9)
    rest = [x.peak - x.blocks for x in (a, b, c)]  # without the search's blocks: linear past the lookup tables' cap
    cells = (memory.TRAIN_CELL_BYTES + memory.SCORED_CELL_BYTES) * 200_000 * 15
    assert rest[2] - rest[1] == pytest.approx(cells, abs=2) and rest[1] - rest[0] == pytest.approx(cells, abs=2)
    assert 0 < c.blocks <= GIB
    # the search's blocks: more with a larger budget or more threads, never above the budget
    more = audit_memory(600_000, 600_000, 15, 4 * GIB, n_categorical=9)
    assert 0 < more.peak - c.peak <= 3 * GIB and more.search == 4 * GIB
    assert audit_memory(600_000, 600_000, 15, GIB, n_categorical=9, n_jobs=2).peak >= c.peak
    tiny = audit_memory(600_000, 600_000, 15, 1 << 20, n_categorical=9)
    fixed = memory.START_BYTES + memory.LOOKUP_BYTES
    cells = (memory.TRAIN_CELL_BYTES + memory.SCORED_CELL_BYTES) * 600_000 * 15
    assert 0 < tiny.peak - fixed - cells <= 1 << 20
    hold = audit_memory(600_000, 600_000, 15, GIB, n_categorical=9, copying=True)  # k-means on at most 50,000 rows
    assert hold.peak - c.peak == pytest.approx(memory.COPYING_CELL_BYTES * memory.COPYING_ROWS * 15, abs=2)
    no_cat = audit_memory(600_000, 600_000, 15, GIB, n_categorical=0)
    assert c.peak - no_cat.peak == memory.LOOKUP_BYTES


def test_refused_only_when_clearly_above_what_is_available() -> None:
    est = audit_memory(1_000_000, 1_000_000, 15, GIB)
    check_audit_memory(est, None)  # unknown: never refused
    check_audit_memory(est, est.peak)  # fits
    check_audit_memory(est, int(est.peak / memory.CLEARLY) + 1)  # near the edge: the estimate may be high
    check_audit_memory(est, int(est.peak / 2), held=int(est.peak / 2))  # what the process holds already counts
    with pytest.raises(TabmemError, match="--memory-gb") as err:
        check_audit_memory(est, int(est.peak / 2))
    assert f"{est.peak / GIB:.1f} GiB" in str(err.value) and "\n" not in str(err.value)


def test_available_memory_is_read_from_the_machine() -> None:
    found = available_memory_bytes()
    assert found is None or 0 <= found < 1 << 50


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"x": rng.normal(size=300), "c": rng.choice(list("abc"), 300)})
    paths = {"train": tmp_path / "train.csv", "syn": tmp_path / "syn.csv"}
    train.to_csv(paths["train"], index=False)
    train.iloc[:50].to_csv(paths["syn"], index=False)
    return paths


def test_audit_prints_its_estimate_and_refuses_what_cannot_fit(files, tmp_path, capsys, monkeypatch) -> None:
    args = ["audit", "--train", str(files["train"]), "--synthetic", str(files["syn"]), "--out", str(tmp_path / "o")]
    code, text = run(args, capsys)
    assert code == 0, text
    assert "memory: about" in text and "GiB at the peak expected" in text and "--memory-gb 1 GiB" in text

    import tabmem.cli.audit as audit_cli

    monkeypatch.setattr(audit_cli, "available_memory_bytes", lambda: 1 << 20)  # 1 MiB free
    monkeypatch.setattr(audit_cli, "resident_bytes", lambda: 0)
    code, text = run([*args[:-1], str(tmp_path / "o2"), "--memory-gb", "2"], capsys)
    assert code == 2 and "Traceback" not in text
    assert "the audit needs about" in text and "--memory-gb 2 GiB" in text
    assert not (tmp_path / "o2" / "summary.json").exists()
