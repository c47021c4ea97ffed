"""The replica flag at the threshold, and every count derived from it, against an independent computation.

A synthetic row is a replica when ``d1/d2 < 1/3`` (strictly). The table below plants rows whose ratio
is *exactly* 1/3 in floating point (16 categorical columns: ``d = mismatches/16`` is exact, and a
correctly rounded division of 1/16 by 3/16 gives the double nearest 1/3, the default threshold), so
``<=`` instead of ``<`` changes the flags. The truth comes from the brute-force loops in
``brute.py`` and a plain Python count, never from the result's own ``is_replica`` column; it is
checked on the result object, the audit CLI's files and the tracker's per-epoch records.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from brute import brute_force

from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.generators.base import TabularGenerator
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.memorization.tracker import MemorizationTracker

M = 16
COLS = tuple(f"c{j}" for j in range(M))
SCHEMA = Schema(COLS, (), COLS)


def _row(base: str, changes: dict[int, str] | None = None) -> list[str]:
    row = [base] * M
    for j, v in (changes or {}).items():
        row[j] = v
    return row


def planted_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training rows and synthetic rows at ratios 1/3 and 1/4 (exactly), below and above them, and 0/0.

    Every synthetic value is a category seen in training (a generator can only produce those).
    """
    train = pd.DataFrame(
        [
            _row("a"),  # 0
            _row("a", {1: "e", 2: "e"}),  # 1: 2 mismatches from row 0
            _row("b"),  # 2
            _row("b", dict.fromkeys(range(8), "f")),  # 3: 8 mismatches from row 2
            _row("c"),  # 4
            _row("c"),  # 5: duplicate of 4 -> a copy of it has d1 = d2 = 0 (NaN ratio, not a replica)
            _row("d"),  # 6
            _row("d", {8: "a", 9: "a", 10: "a"}),  # 7: 3 mismatches from row 6
        ],
        columns=COLS,
    )
    syn = pd.DataFrame(
        [
            _row("a", {0: "d"}),  # 1 mismatch from row 0, 3 from row 1: ratio exactly 1/3 -> NOT a replica
            _row("a", {0: "d"}),  # the same again (a record with two boundary rows must count 0)
            _row("b", {15: "a"}),  # 1 from row 2, 9 from row 3: ratio 1/9 -> replica
            _row("a"),  # copy of row 0: d1 = 0 -> ratio 0 -> replica
            _row("c"),  # copy of the duplicated rows 4/5: 0/0 -> NaN -> not a replica
            _row("d", {0: "a"}),  # 1 from row 6, 4 from row 7: ratio exactly 1/4 -> replica
            _row("d", {0: "a", 1: "a"}),  # 2 from row 6, 5 from row 7: ratio 2/5 -> not a replica
            _row("b", {15: "a"}),  # second replica of row 2
        ],
        columns=COLS,
    )
    return train, syn


def reference(train: pd.DataFrame, syn: pd.DataFrame, distance: str) -> dict[str, object]:
    """Flags, per-record counts and aggregates from the brute-force neighbours, by plain loops."""
    bf = brute_force(train, syn, SCHEMA, distance)
    flags = [bool(r < 1 / 3) if not np.isnan(r) else False for r in bf.ratio]
    counts = [0] * len(train)
    for nn1, flag in zip(bf.nn1, flags):
        if flag:
            counts[nn1] += 1
    return {"bf": bf, "flags": np.array(flags), "counts": np.array(counts)}


@pytest.mark.parametrize("distance", ["fang2024", "gower"])
def test_the_table_really_plants_an_exact_one_third(distance: str) -> None:
    train, syn = planted_tables()
    ratio = reference(train, syn, distance)["bf"].ratio.to_numpy()
    assert ratio[0] == 1 / 3 and ratio[1] == 1 / 3  # exactly, not approximately
    res = ReplicaDetector(distance).fit(train, SCHEMA).score(syn)
    assert res.table.ratio.iloc[0] == 1 / 3


@pytest.mark.parametrize("distance", ["fang2024", "gower"])
def test_flags_counts_and_summary_equal_the_independent_count(distance: str) -> None:
    train, syn = planted_tables()
    ref = reference(train, syn, distance)
    flags, counts = ref["flags"], ref["counts"]
    assert flags.tolist() == [False, False, True, True, False, True, False, True]  # by hand, see the table
    assert counts.tolist() == [1, 0, 2, 0, 0, 0, 1, 0]
    res = ReplicaDetector(distance).fit(train, SCHEMA).score(syn)
    assert res.table.is_replica.tolist() == flags.tolist()
    assert res.record_counts.tolist() == counts.tolist()
    assert res.records().replica_count.tolist() == counts.tolist()
    s = res.summary().to_dict()
    assert s["n_replicas"] == int(flags.sum()) == 4
    assert s["memorization_rate"] == pytest.approx(flags.mean())
    assert s["n_nan_ratio"] == 1
    assert s["heavy_tail"]["n_records_with_replicas"] == 3
    # top-1 record holds 2 of the 4 replicas; Gini by the mean-difference formula
    assert s["heavy_tail"]["top_1pct_share"] == pytest.approx(2 / 4)
    v = np.array(sorted(counts))
    assert s["heavy_tail"]["gini"] == pytest.approx(np.abs(v[:, None] - v[None, :]).mean() / (2 * v.mean()))


def test_threshold_is_strict_for_any_value() -> None:
    train, syn = planted_tables()
    # with threshold 1/4 the row at ratio exactly 1/4 (synthetic row 5) is no longer a replica
    res = ReplicaDetector("gower", threshold=0.25).fit(train, SCHEMA).score(syn)
    assert res.table.ratio.iloc[5] == 0.25
    assert res.table.is_replica.tolist() == [False, False, True, True, False, False, False, True]
    assert res.summary().to_dict()["n_replicas"] == 3
    assert res.record_counts.tolist() == [1, 0, 2, 0, 0, 0, 0, 0]


def _run_cli(args: list[str], capsys) -> tuple[int, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_audit_files_equal_the_independent_count(tmp_path, capsys) -> None:
    train, syn = planted_tables()
    ref = reference(train, syn, "fang2024")
    train.to_csv(tmp_path / "train.csv", index=False)
    syn.to_csv(tmp_path / "syn.csv", index=False)
    out = tmp_path / "audit"
    code, text = _run_cli(
        [
            "audit",
            "--train",
            str(tmp_path / "train.csv"),
            "--synthetic",
            str(tmp_path / "syn.csv"),
            "--categorical",
            ",".join(COLS),
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, text
    replicas = pd.read_csv(out / "replicas.csv")
    assert replicas.is_replica.tolist() == ref["flags"].tolist()
    assert replicas.nn1.tolist() == ref["bf"].nn1.tolist()
    records = pd.read_csv(out / "records.csv")
    assert records.replica_count.tolist() == ref["counts"].tolist()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_replicas"] == int(ref["flags"].sum())
    assert summary["memorization_rate"] == pytest.approx(ref["flags"].mean())
    assert "aaaa" not in text  # private by default: no training values printed


class _FixedSampleGenerator(TabularGenerator):
    """A "generator" whose samples are always the planted synthetic table (no learning)."""

    def __init__(self, *, epochs: int = 2, random_state=None, device="cpu", rows: pd.DataFrame | None = None):
        self.epochs, self.random_state, self.device, self.rows = epochs, random_state, device, rows

    def _build(self, train_clean, schema):
        self.net = torch.nn.Linear(1, 1)

    def _train_epoch(self, epoch):
        return {"loss": 0.0}

    def _sample_clean(self, n, generator):
        return self.rows.iloc[np.arange(n) % len(self.rows)].reset_index(drop=True)

    def _state_dict(self):
        return {"net": self.net.state_dict()}

    def _load_state_dict(self, state):
        self.net.load_state_dict(state["net"])


def test_tracker_records_equal_the_independent_count(tmp_path) -> None:
    train, syn = planted_tables()
    ref = reference(train, syn, "fang2024")
    tracker = MemorizationTracker(every=1, n_samples=len(syn), path=tmp_path / "tracking")
    _FixedSampleGenerator(rows=syn, random_state=0).fit(train, SCHEMA, callbacks=[tracker])
    hist = tracker.history_
    assert hist.epoch.tolist() == [1, 2]
    assert hist.n_replicas.tolist() == [int(ref["flags"].sum())] * 2
    assert hist.n_records_memorized.tolist() == [int((ref["counts"] > 0).sum())] * 2
    assert hist.memorization_rate.tolist() == pytest.approx([ref["flags"].mean()] * 2)
    recs = tracker.records_
    for epoch in (1, 2):
        got = recs[recs.epoch == epoch].set_index("train_row").replica_count.reindex(range(len(train)), fill_value=0)
        assert got.tolist() == ref["counts"].tolist()
    # the records on disk say the same
    from tabmem.memorization.store import load_tracking

    epochs, on_disk, _ = load_tracking(tmp_path / "tracking")
    assert epochs.n_replicas.tolist() == hist.n_replicas.tolist()
    last = on_disk[on_disk.epoch == 2].set_index("train_row").replica_count.reindex(range(len(train)), fill_value=0)
    assert last.tolist() == ref["counts"].tolist()
