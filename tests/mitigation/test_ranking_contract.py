"""Rankings from a hand-made tracking (no model is trained): every method's scores worked out by hand,
every source ``rank_records`` accepts, the files and their sidecar, and the one-line refusals
(``tabmem.mitigation.ranking`` docstring)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tabmem.errors import ParameterError, TabmemError
from tabmem.memorization.dynamics import TrainingDynamics
from tabmem.memorization.replicas import ReplicaResult
from tabmem.mitigation import Ranking, n_to_prune, rank_records
from tabmem.mitigation.ranking import count_ranking, random_ranking

EPOCHS = [2, 4, 6]
COUNTS = np.array([[0, 1, 0, 0, 2], [1, 0, 0, 0, 3], [2, 0, 3, 0, 0]], dtype=np.int32)
AUC = np.array([[0.0, 0.4, 0.0, 0.0, 0.2], [0.1, 0.0, 0.0, 0.0, 0.5], [0.3, 0.0, 0.9, 0.0, 0.0]])
FINGERPRINT = "f" * 64


def _dynamics() -> TrainingDynamics:
    return TrainingDynamics(np.array(EPOCHS), COUNTS.copy(), AUC.copy())


class _Tracker:
    """What rank_records needs of a fitted MemorizationTracker."""

    def __init__(self, epochs=EPOCHS):
        self.epochs_ = list(epochs)
        self.fingerprint_ = FINGERPRINT

    def dynamics(self) -> TrainingDynamics:
        return _dynamics()


def _write_tracking(path, epochs=EPOCHS):
    path.mkdir(parents=True)
    (path / "tracker.json").write_text(json.dumps({"n_train": 5, "fingerprint": FINGERPRINT}))
    if epochs:
        pd.DataFrame({"epoch": epochs}).to_csv(path / "epochs.csv", index=False)
        (path / "records").mkdir()
        for e_idx, e in enumerate(epochs):
            rows = np.flatnonzero((COUNTS[e_idx] > 0) | (AUC[e_idx] > 0))
            pd.DataFrame(
                {"train_row": rows, "replica_count": COUNTS[e_idx, rows], "mem_auc": AUC[e_idx, rows]}
            ).to_parquet(path / "records" / f"epoch={e:06d}.parquet", index=False)
    return path


def _ranks(r: Ranking) -> list[int]:
    return r.table["rank"].tolist()


# ------------------------------------------------------------------ the methods, by hand
def test_intensity_scores_and_params_by_hand():
    r = rank_records(_Tracker(), "intensity", top_k=2, warmup_epochs=4)
    # epochs 2 and 4: mean of the two largest Mem-AUC_e per record
    np.testing.assert_allclose(r.table.score, [0.05, 0.2, 0.0, 0.0, 0.35])
    assert _ranks(r)[:2] == [3, 2] and _ranks(r)[4] == 1 and sorted(_ranks(r)[2:4]) == [4, 5]
    assert r.method == "intensity" and r.fingerprint == FINGERPRINT
    assert r.params == {"top_k": 2, "warmup_epochs": 4, "tracked_epochs": [2, 4], "tie_break_seed": 0}
    every = rank_records(_Tracker(), "intensity", top_k=1)  # no warm-up limit: the peak over all epochs
    np.testing.assert_allclose(every.table.score, [0.3, 0.4, 0.9, 0.0, 0.5])
    assert _ranks(every) == [4, 3, 1, 5, 2]
    assert every.params["tracked_epochs"] == [2, 4, 6] and every.params["warmup_epochs"] is None


def test_first_memorization_scores_by_hand():
    r = rank_records(_Tracker(), "first-memorization", warmup_epochs=4)
    np.testing.assert_allclose(r.table.score, [1 / 4, 1 / 2, 0.0, 0.0, 1 / 2])  # row 2 first at 6: outside
    assert r.params == {"warmup_epochs": 4, "tracked_epochs": [2, 4], "tie_break_seed": 0}
    whole = rank_records(_Tracker(), "first-memorization")
    np.testing.assert_allclose(whole.table.score, [1 / 4, 1 / 2, 1 / 6, 0.0, 1 / 2])
    assert whole.method == "first-memorization" and whole.fingerprint == FINGERPRINT


def test_count_from_dynamics_replica_result_and_array():
    r = rank_records(_Tracker(), "count", random_state=3)
    np.testing.assert_array_equal(r.table.score, [2, 0, 3, 0, 0])  # the last tracked epoch, 6
    assert r.params == {"epoch": 6, "tie_break_seed": 3} and r.method == "count"
    assert _ranks(r)[0] == 2 and _ranks(r)[2] == 1
    table = pd.DataFrame({"synthetic_row": [0, 1, 2, 3], "nn1": [0, 2, 2, 1], "is_replica": [True, True, True, False]})
    res = ReplicaResult(table=table, n_train=4, threshold=1 / 3, distance="fang2024")
    from_result = count_ranking(res, fingerprint="x")
    np.testing.assert_array_equal(from_result.table.score, [1, 0, 2, 0])  # replicas per NN1, non-replicas not
    assert from_result.fingerprint == "x" and from_result.params == {"tie_break_seed": 0}
    np.testing.assert_array_equal(count_ranking([5, 1, 3]).table["rank"], [1, 3, 2])
    empty = TrainingDynamics(np.array([], dtype=np.int64), np.zeros((0, 3), np.int32), np.zeros((0, 3)))
    with pytest.raises(TabmemError, match=r"^count ranking: the tracking holds no tracked epoch$"):
        count_ranking(empty)


def test_random_ranking_from_an_int_or_a_tracker():
    a = rank_records(5, "random", random_state=4)
    assert a.method == "random" and a.fingerprint is None and a.params == {"seed": 4, "tie_break_seed": 4}
    assert sorted(_ranks(a)) == [1, 2, 3, 4, 5] and len(set(a.table.score)) == 5
    b = rank_records(_Tracker(), "random", random_state=4)
    assert b.fingerprint == FINGERPRINT and _ranks(b) == _ranks(a)  # the same scores for the same seed and size
    with pytest.raises(ParameterError, match=r"^n_train must be a positive integer, got 0$"):
        random_ranking(0)


# ------------------------------------------------------------------ sources
def test_tracking_and_run_directories_give_the_trackers_ranking(tmp_path):
    track = _write_tracking(tmp_path / "run" / "tracking")
    expected = rank_records(_Tracker(), "intensity", top_k=2, warmup_epochs=4)
    for source in (track, tmp_path / "run", str(tmp_path / "run")):
        got = rank_records(source, "intensity", top_k=2, warmup_epochs=4)
        pd.testing.assert_frame_equal(got.table, expected.table)
        assert got.fingerprint == FINGERPRINT
    count = rank_records(tmp_path / "run", "count")
    np.testing.assert_array_equal(count.table.score, [2, 0, 3, 0, 0])


def test_sources_without_tracked_epochs_and_bad_sources_are_refused(tmp_path):
    with pytest.raises(TabmemError, match=r"^rank_records: the tracker has not tracked any epoch \(fit a generator"):
        rank_records(_Tracker(epochs=[]), "intensity")
    empty = _write_tracking(tmp_path / "empty", epochs=[])
    with pytest.raises(TabmemError, match=r"^rank_records: '.*empty' holds no tracked epoch$"):
        rank_records(empty, "count")
    for bad in (3.5, 10):
        with pytest.raises(ParameterError, match=r"^rank_records: source must be a MemorizationTracker or a tracking"):
            rank_records(bad, "intensity")
    with pytest.raises(ParameterError, match=r"^method must be one of 'intensity', 'count', 'first-memorization', "):
        rank_records(_Tracker(), "loss")


def test_warmup_window_is_checked():
    with pytest.raises(ParameterError, match=r"^warmup_epochs must be a positive integer, got 0$"):
        rank_records(_Tracker(), "first-memorization", warmup_epochs=0)
    msg = r"^no tracked epoch <= warmup_epochs=1 \(tracked: \[2, 4, 6\]\); track more often \(track_every\)"
    with pytest.raises(TabmemError, match=msg):
        rank_records(_Tracker(), "first-memorization", warmup_epochs=1)
    assert rank_records(_Tracker(), "intensity", warmup_epochs=2).params["tracked_epochs"] == [2]
    with pytest.raises(ParameterError, match=r"^top_k must be a positive integer, got 0$"):
        rank_records(_Tracker(), "intensity", top_k=0)


# ------------------------------------------------------------------ pruning counts and scores
def test_n_to_prune_bounds():
    with pytest.raises(ParameterError, match=r"^prune=0\.9 removes all 3 training records; choose a smaller fraction$"):
        n_to_prune(3, 0.9)  # ceil(2.7) = 3 = N
    assert n_to_prune(3, 0.6) == 2  # ceil(1.8)
    assert n_to_prune(10, 1e-12) == 1  # a positive fraction prunes at least one record
    assert n_to_prune(10, 0.7) == 7  # 0.7 * 10 is 7.000000000000001 in float64
    assert n_to_prune(700_000, 0.55) == 385_000  # 385000.00000000006 in float64: noise at the 1e-10 scale
    with pytest.raises(ParameterError, match=r"^prune must be in \(0, 1\), got 1\.5$"):
        n_to_prune(100, 1.5)


def test_from_scores_needs_a_vector_of_two_or_more():
    for bad, shape in (([1.0], r"\(1,\)"), ([[1.0, 2.0], [3.0, 4.0]], r"\(2, 2\)")):
        with pytest.raises(
            ParameterError, match=rf"^a ranking needs one score per training record \(at least 2\), got shape {shape}$"
        ):
            Ranking.from_scores(np.array(bad), method="x")
    two = Ranking.from_scores(np.array([0.1, 0.9]), method="x", params={"a": 1}, random_state=5)
    assert _ranks(two) == [2, 1] and two.params == {"a": 1, "tie_break_seed": 5}


def test_from_scores_takes_plain_lists_and_defaults_to_tie_break_seed_0(tmp_path):
    r = Ranking.from_scores([3, 1, None, 2], method="count")  # ints and a missing score (None: ranked last)
    assert r.table.score.dtype == np.float64 and _ranks(r) == [1, 3, 4, 2]
    r.save(tmp_path / "r.csv")
    pd.testing.assert_frame_equal(Ranking.load(tmp_path / "r.csv").table, r.table)
    tied = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    default = Ranking.from_scores(tied, method="x")
    assert default.params == {"tie_break_seed": 0}
    pd.testing.assert_frame_equal(default.table, Ranking.from_scores(tied, method="x", random_state=0).table)
    # rank_records' default (random_state=0) and from_scores' default break ties alike
    pd.testing.assert_frame_equal(count_ranking(tied).table, default.table)


def test_overlap_refuses_rankings_of_different_tables_and_check_table_skips_unknown_identity():
    a = Ranking.from_scores(np.arange(5.0), method="x", fingerprint=FINGERPRINT)
    with pytest.raises(ParameterError, match=r"^rankings of different tables \(5 vs 4 records\)$"):
        a.overlap(Ranking.from_scores(np.arange(4.0), method="x"), 0.2)
    a.check_table(FINGERPRINT, 5)
    a.check_table(None, 5)  # the caller does not know the table's identity: only the size is checked
    Ranking.from_scores(np.arange(5.0), method="x").check_table("0" * 64, 5)  # nor does the ranking
    with pytest.raises(TabmemError, match=r"^ranking ranks 5 records but the training table has 6 rows$"):
        a.check_table(None, 6)
    with pytest.raises(TabmemError, match=r"^transfer ranks 5 records but the training table has 6 rows$"):
        a.check_table(FINGERPRINT, 6, what="transfer")
    with pytest.raises(
        TabmemError,
        match=r"^transfer was computed on another training table \(fingerprint ffffffffffff\.\.\. vs 000000000000\.\.\.\)",
    ):
        a.check_table("0" * 64, 5, what="transfer")


# ------------------------------------------------------------------ files
def test_save_writes_the_documented_sidecar(tmp_path):
    r = rank_records(_Tracker(), "intensity", top_k=2, warmup_epochs=4)
    path = r.save(tmp_path / "ranking.csv", extra={"pruned": r.pruned_mask(0.2)})
    assert path == tmp_path / "ranking.csv"
    meta = json.loads((tmp_path / "ranking.json").read_text())
    assert meta == {
        "format": "tabmem-ranking",
        "version": 1,
        "method": "intensity",
        "n_train": 5,
        "fingerprint": FINGERPRINT,
        "params": {"top_k": 2, "warmup_epochs": 4, "tracked_epochs": [2, 4], "tie_break_seed": 0},
    }
    mask = r.pruned_mask(0.2)
    assert mask.dtype == bool and mask.tolist() == [False, False, False, False, True]  # a boolean mask
    csv = pd.read_csv(path)
    assert list(csv.columns) == ["train_row", "score", "rank", "pruned"]
    assert csv.pruned.tolist() == [False, False, False, False, True]  # ceil(0.2 x 5) = 1: the top record
    back = Ranking.load(path)
    assert (back.method, back.fingerprint, back.params) == (r.method, r.fingerprint, r.params)


def _csv(path, **cols):
    pd.DataFrame(cols).to_csv(path, index=False)
    return path


def test_load_refuses_malformed_files_with_one_line(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("")
    with pytest.raises(TabmemError, match=r"^'.*r\.csv' is not a readable ranking CSV \("):
        Ranking.load(p)
    _csv(p, train_row=[0, 1], score=[1.0, 2.0])
    with pytest.raises(TabmemError, match=r"lacks column\(s\) \['rank'\] \(expected train_row, score, rank\)$"):
        Ranking.load(p)
    _csv(p, train_row=[0], score=[1.0], rank=[1])
    with pytest.raises(TabmemError, match=r"train_row must list every row 0\.\.N-1 exactly once$"):
        Ranking.load(p)
    _csv(p, train_row=[0.0, np.nan, 2.0], score=[1.0, 2.0, 3.0], rank=[1, 2, 3])
    with pytest.raises(TabmemError, match=r"train_row must list every row 0\.\.N-1 exactly once$"):
        Ranking.load(p)
    _csv(p, train_row=["0", "x", "2"], score=[1.0, 2.0, 3.0], rank=[1, 2, 3])  # not numbers: one line too
    with pytest.raises(TabmemError, match=r"train_row must list every row 0\.\.N-1 exactly once$"):
        Ranking.load(p)
    _csv(p, train_row=[0, 1, 2], score=[1.0, 2.0, 3.0], rank=["1", "two", "3"])
    with pytest.raises(TabmemError, match=r": rank must be a permutation of 1\.\.N$"):
        Ranking.load(p)
    _csv(p, train_row=[0, 1, 2], score=[1.0, 2.0, 3.0], rank=[1, 1, 3])
    with pytest.raises(TabmemError, match=r": rank must be a permutation of 1\.\.N$"):
        Ranking.load(p)
    _csv(p, train_row=[0, 1, 2], score=[1.0, 2.0, 3.0], rank=[1.0, np.nan, 3.0])
    with pytest.raises(TabmemError, match=r": rank must be a permutation of 1\.\.N$"):
        Ranking.load(p)


def test_load_reads_the_sidecar_or_records_its_absence(tmp_path):
    p = _csv(tmp_path / "r.csv", train_row=[1, 0, 2], score=[0.5, 0.9, 0.1], rank=[2, 1, 3])
    bare = Ranking.load(p)
    assert (bare.method, bare.fingerprint, bare.params) == ("file", None, {"source": str(p)})
    assert bare.table.train_row.tolist() == [0, 1, 2] and bare.table["rank"].tolist() == [1, 2, 3]
    (tmp_path / "r.json").write_text(json.dumps({"n_train": 7, "method": "count"}))
    with pytest.raises(TabmemError, match=r"^'.*r\.json' describes 7 records but the CSV has 3$"):
        Ranking.load(p)
    (tmp_path / "r.json").write_text(json.dumps({"fingerprint": FINGERPRINT}))  # n_train, method, params absent
    sparse = Ranking.load(p)
    assert (sparse.method, sparse.fingerprint, sparse.params) == ("unknown", FINGERPRINT, {})
    (tmp_path / "r.json").write_text(json.dumps({"n_train": 3, "method": "count", "params": {"epoch": 6}}))
    full = Ranking.load(p)
    assert (full.method, full.fingerprint, full.params) == ("count", None, {"epoch": 6})


def test_inclusion_without_ties_is_the_top_indicator():
    r = Ranking.from_scores(np.array([0.5, 9.0, 3.0, 7.0, 1.0, 8.0, 2.0, 6.0, 4.0, 5.0]), method="x")
    # ceil(0.3 x 10) = 3: the rows of 9, 8 and 7 are in for sure, the others out
    np.testing.assert_array_equal(r.inclusion(0.3), [0, 1, 0, 1, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(r.inclusion(0.1), [0, 1, 0, 0, 0, 0, 0, 0, 0, 0])
