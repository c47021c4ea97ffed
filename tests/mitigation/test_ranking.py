"""Rankings against a brute-force recomputation from the tracking records; ties, files, fingerprints."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import TINY_DDPM, mixed_table

from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import validate
from tabmem.errors import ParameterError, TabmemError
from tabmem.generators import get_generator
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.mitigation import Ranking, n_to_prune, rank_records


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """A tiny TabDDPM tracked every 2 epochs for 8 epochs, its records on disk."""
    import torch

    torch.set_num_threads(1)
    df, schema = mixed_table(n=60, seed=1)
    path = tmp_path_factory.mktemp("track")
    tracker = MemorizationTracker(every=2, path=path / "tracking", random_state=0)
    gen = get_generator("tabddpm", epochs=8, random_state=0, **TINY_DDPM)
    gen.fit(df, schema, callbacks=[tracker])
    return df, schema, tracker, path


def _brute_records(path):
    """Per-epoch dict {train_row: (count, mem_auc)} read straight from the Parquet files."""
    out = {}
    for f in sorted((path / "tracking" / "records").glob("epoch=*.parquet")):
        e = int(f.stem.split("=")[1])
        r = pd.read_parquet(f)
        out[e] = {int(t): (int(c), float(a)) for t, c, a in zip(r.train_row, r.replica_count, r.mem_auc)}
    return out


def test_intensity_equals_brute_force_mean_of_top_k(tracked):
    df, _, tracker, path = tracked
    recs = _brute_records(path)
    for k, warmup in [(1, 4), (2, 4), (3, 8), (5, 8)]:
        rk = rank_records(tracker, "intensity", top_k=k, warmup_epochs=warmup)
        epochs = [e for e in sorted(recs) if e <= warmup]
        for row in range(len(df)):
            vals = sorted((recs[e].get(row, (0, 0.0))[1] for e in epochs), reverse=True)
            expected = sum(vals[:k]) / min(k, len(vals))
            assert rk.table.score[row] == pytest.approx(expected)
        # ranks follow the scores (descending)
        s = rk.table.sort_values("rank").score.to_numpy()
        assert (np.diff(s) <= 1e-15).all()


def test_count_and_first_memorization_equal_brute_force(tracked):
    df, _, tracker, path = tracked
    recs = _brute_records(path)
    last = max(recs)
    count = rank_records(path, "count")  # from the directory
    for row in range(len(df)):
        assert count.table.score[row] == recs[last].get(row, (0, 0.0))[0]
    fm = rank_records(tracker, "first-memorization", warmup_epochs=6)
    for row in range(len(df)):
        first = next((e for e in sorted(recs) if e <= 6 and recs[e].get(row, (0, 0))[0] > 0), None)
        assert fm.table.score[row] == pytest.approx(0.0 if first is None else 1.0 / first)


def test_ranking_from_directory_equals_ranking_from_tracker(tracked):
    _, _, tracker, path = tracked
    a = rank_records(tracker, "intensity", top_k=2, warmup_epochs=6, random_state=4)
    b = rank_records(path, "intensity", top_k=2, warmup_epochs=6, random_state=4)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.fingerprint == b.fingerprint == tracker.fingerprint_


def test_fingerprint_is_the_generators(tracked):
    df, schema, tracker, _ = tracked
    assert tracker.fingerprint_ == table_fingerprint(validate(df, schema, name="training"))


def test_ties_broken_by_seeded_permutation_only():
    scores = np.array([3.0, 1.0, 1.0, 1.0, 1.0, 0.0, np.nan, 2.0])
    a = Ranking.from_scores(scores, method="x", random_state=0)
    b = Ranking.from_scores(scores, method="x", random_state=0)
    pd.testing.assert_frame_equal(a.table, b.table)  # same seed, same ranks
    ranks = {s: set() for s in range(6)}
    for seed in range(30):
        r = Ranking.from_scores(scores, method="x", random_state=seed).table["rank"].to_numpy()
        assert r[0] == 1 and r[7] == 2 and r[5] == 7 and r[6] == 8  # strict order kept, NaN last
        for i in (1, 2, 3, 4):
            ranks[i].add(int(r[i]))
    assert all(ranks[i] == {3, 4, 5, 6} for i in (1, 2, 3, 4))  # every tie order occurs


@pytest.mark.parametrize(("n", "p", "k"), [(30, 0.1, 3), (1000, 0.1, 100), (7, 0.1, 1), (10, 0.25, 3), (3, 0.5, 2)])
def test_n_to_prune_is_ceil_without_float_noise(n, p, k):
    assert n_to_prune(n, p) == k == math.ceil(round(p * n, 9))


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5])
def test_prune_outside_open_interval_is_refused(p):
    with pytest.raises(ParameterError, match="prune"):
        n_to_prune(100, p)


def test_top_and_overlap():
    rk = Ranking.from_scores(np.arange(20, 0, -1, dtype=float), method="x")
    np.testing.assert_array_equal(rk.top(0.1), [0, 1])
    other = Ranking.from_scores(np.arange(1, 21, dtype=float), method="y")
    assert rk.overlap(other, 0.1) == 0.0 and rk.overlap(rk, 0.25) == 1.0


def _tied_scores(rng, n):
    """Replica-count-like scores: most records 0, a few small counts (many ties at a 10% cut)."""
    return rng.choice([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0, np.nan], size=n)


def test_inclusion_and_expected_overlap_match_a_brute_force_over_random_tie_breaks():
    rng = np.random.default_rng(3)
    a_scores, b_scores = _tied_scores(rng, 40), _tied_scores(rng, 40)
    a = Ranking.from_scores(a_scores, method="count", random_state=0)
    b = Ranking.from_scores(b_scores, method="count", random_state=0)
    # brute force: the top 4 (ceil(0.1 x 40)) under many independent tie-breaks of each ranking
    hits_a, hits_b, overlaps = np.zeros(40), np.zeros(40), []
    for r in range(4000):
        ta = Ranking.from_scores(a_scores, method="count", random_state=10_000 + r).top(0.1)
        tb = Ranking.from_scores(b_scores, method="count", random_state=20_000 + r).top(0.1)
        hits_a[ta] += 1
        hits_b[tb] += 1
        overlaps.append(len(np.intersect1d(ta, tb)) / 4)
    np.testing.assert_allclose(a.inclusion(0.1), hits_a / 4000, atol=0.03)
    assert a.inclusion(0.1).sum() == pytest.approx(4.0)
    assert a.expected_overlap(b, 0.1) == pytest.approx(np.mean(overlaps), abs=0.02)
    # without ties the expectation is the overlap itself
    c = Ranking.from_scores(rng.random(40), method="x")
    d = Ranking.from_scores(rng.random(40), method="y")
    assert c.expected_overlap(d, 0.25) == pytest.approx(c.overlap(d, 0.25))


def test_a_shared_tie_break_inflates_overlap_but_not_the_expected_overlap():
    # two count rankings with no replicas at all: every record tied; the same seed breaks both ties alike
    a = Ranking.from_scores(np.zeros(1000), method="count", random_state=7)
    b = Ranking.from_scores(np.zeros(1000), method="count", random_state=7)
    assert a.overlap(b, 0.1) == 1.0
    assert a.expected_overlap(b, 0.1) == pytest.approx(0.1)  # chance
    with pytest.raises(ParameterError, match="different tables"):
        a.expected_overlap(Ranking.from_scores(np.zeros(10), method="count"), 0.1)


def test_save_load_roundtrip_and_refusal_for_another_table(tmp_path, tracked):
    df, schema, tracker, _ = tracked
    rk = rank_records(tracker, "intensity", top_k=2, warmup_epochs=4)
    path = rk.save(tmp_path / "ranking.csv", extra={"pruned": rk.pruned_mask(0.1)})
    loaded = Ranking.load(path)
    pd.testing.assert_frame_equal(loaded.table, rk.table)
    assert (loaded.method, loaded.fingerprint) == ("intensity", rk.fingerprint)
    loaded.check_table(tracker.fingerprint_, len(df))  # same table: accepted
    other = df.copy()
    other.loc[0, "income"] += 1.0
    with pytest.raises(TabmemError, match="another training table"):
        loaded.check_table(table_fingerprint(validate(other, schema, name="training")), len(df))
    with pytest.raises(TabmemError, match="ranks 60 records but the training table has 59"):
        loaded.check_table(None, 59)


def test_load_rejects_malformed_files(tmp_path):
    bad = tmp_path / "r.csv"
    pd.DataFrame({"train_row": [0, 0, 2], "score": [1, 2, 3], "rank": [1, 2, 3]}).to_csv(bad, index=False)
    with pytest.raises(TabmemError, match="every row 0..N-1"):
        Ranking.load(bad)
    pd.DataFrame({"train_row": [0, 1, 2], "score": [1, 2, 3]}).to_csv(bad, index=False)
    with pytest.raises(TabmemError, match="rank"):
        Ranking.load(bad)
    with pytest.raises(TabmemError, match="not found"):
        Ranking.load(tmp_path / "missing.csv")
    # a CSV without its sidecar loads (identity unknown: fingerprint None) and only the size is checked
    pd.DataFrame({"train_row": [2, 0, 1], "score": [0.1, 0.5, 0.3], "rank": [3, 1, 2]}).to_csv(bad, index=False)
    r = Ranking.load(bad)
    assert r.fingerprint is None and r.table["rank"].tolist() == [1, 2, 3]


def test_random_ranking_is_seeded_and_uniform():
    a = rank_records(1000, "random", random_state=1)
    b = rank_records(1000, "random", random_state=1)
    c = rank_records(1000, "random", random_state=2)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.overlap(c, 0.1) < 0.2  # independent draws overlap ~0.1


def test_warmup_without_tracked_epoch_is_refused(tracked):
    _, _, tracker, _ = tracked
    with pytest.raises(TabmemError, match="no tracked epoch <= warmup_epochs=1"):
        rank_records(tracker, "intensity", warmup_epochs=1)
    with pytest.raises(ParameterError, match="top_k"):
        rank_records(tracker, "intensity", top_k=0, warmup_epochs=4)
    with pytest.raises(ParameterError, match="method"):
        rank_records(tracker, "loss")
