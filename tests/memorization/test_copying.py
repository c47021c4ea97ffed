"""The data-copying test and authenticity against their definitions, on tables built to copy or to underfit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu, norm

from tabmem.data.schema import Schema
from tabmem.errors import NotFittedError, ParameterError, TabmemError
from tabmem.memorization.authenticity import authenticity, nearest_other_distance, nndr_summary
from tabmem.memorization.copies import ExactCopies
from tabmem.memorization.copying import DataCopyingTest, mann_whitney_z
from tabmem.memorization.evidence import distance_evidence
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.neighbors import NeighborIndex


def _gauss(n: int, seed: int, scale: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(0, scale, n), "b": rng.normal(0, scale, n)})


SCHEMA = Schema(("a", "b"), ("a", "b"), ())


def test_mann_whitney_u_and_z_by_definition():
    rng = np.random.default_rng(0)
    q, p = np.round(rng.normal(size=30), 1), np.round(rng.normal(size=20), 1)  # ties
    u_loop = sum((a > b) + 0.5 * (a == b) for a in q for b in p)
    u, z = mann_whitney_z(q, p)
    assert u == pytest.approx(u_loop) == pytest.approx(mannwhitneyu(q, p).statistic)
    assert z == pytest.approx((u_loop - 300) / np.sqrt(30 * 20 * 51 / 12))
    _, zc = mann_whitney_z(q, p, continuity_correction=True)
    assert zc == pytest.approx(z + 0.5 / np.sqrt(30 * 20 * 51 / 12))


def _brute_c_t(test: DataCopyingTest, train, synthetic, holdout):
    """C_T of Meehan et al. written out: k-means labels, in-cell Euclidean nearest distances by numpy, a U loop."""
    sd = train.to_numpy().std(0)
    mu = train.to_numpy().mean(0)
    t = (train.to_numpy() - mu) / sd
    q = (synthetic.to_numpy() - mu) / sd
    p = (holdout.to_numpy() - mu) / sd
    tc, qc, pc = test.kmeans_.predict(t), test.kmeans_.predict(q), test.kmeans_.predict(p)
    m, n = len(q), len(p)
    num = den = 0.0
    for c in range(test.n_cells):
        tq, tp, tt = q[qc == c], p[pc == c], t[tc == c]
        if len(tq) / m <= 20 / m or len(tp) == 0:
            continue
        lq = np.sqrt(((tq[:, None] - tt[None]) ** 2).sum(-1)).min(1)
        lp = np.sqrt(((tp[:, None] - tt[None]) ** 2).sum(-1)).min(1)
        u = sum((a > b) + 0.5 * (a == b) for a in lq for b in lp)
        mc, nc = len(lq), len(lp)
        z = (u - mc * nc / 2) / np.sqrt(mc * nc * (mc + nc + 1) / 12)
        w = len(tp) / n
        num, den = num + w * z, den + w
    return num / den


def test_copying_test_equals_its_definition_and_detects_copies():
    train, holdout = _gauss(600, 0), _gauss(300, 1)
    rng = np.random.default_rng(2)
    copies = train.iloc[rng.choice(600, 300, replace=False)].reset_index(drop=True) + rng.normal(0, 1e-3, (300, 2))
    test = DataCopyingTest(n_cells=5, distance="l2", random_state=0).fit(train, SCHEMA)
    res = test.test(copies, holdout)
    assert res.c_t == pytest.approx(_brute_c_t(test, train, copies, holdout), rel=1e-9)
    assert res.z < -10 and res.p_value < 1e-20 and res.c_t < -5  # Z << 0: copying
    assert len(res.summary()["cells_flagged"]) == res.summary()["n_cells_used"]
    w = res.cells.loc[res.cells.used, "holdout_share"].to_numpy()
    zc = res.cells.loc[res.cells.used, "z"].to_numpy()
    assert res.z == pytest.approx(w @ zc / np.sqrt((w**2).sum()))
    assert res.p_value == pytest.approx(norm.cdf(res.z))


def test_large_tables_fit_the_cells_on_a_sample_and_assign_in_chunks(monkeypatch):
    """Above FIT_ROWS the k-means is fitted on a seeded sample; every row gets its nearest centre,
    chunk by chunk, the same labels as one call; the test still equals its definition."""
    import tabmem.memorization.copying as copying

    monkeypatch.setattr(copying, "FIT_ROWS", 300)
    monkeypatch.setattr(copying, "CHUNK_ROWS", 256)
    train, holdout = _gauss(1000, 0), _gauss(700, 1)
    rng = np.random.default_rng(2)
    copies = train.iloc[rng.choice(1000, 600, replace=False)].reset_index(drop=True) + rng.normal(0, 1e-3, (600, 2))
    test = DataCopyingTest(n_cells=5, distance="l2", random_state=0).fit(train, SCHEMA)
    assert len(test.kmeans_.labels_) == 300
    t = (train - train.mean()) / train.std(ddof=0)
    assert (test.train_cells_ == test.kmeans_.predict(t.to_numpy())).all()
    again = DataCopyingTest(n_cells=5, distance="l2", random_state=0).fit(train, SCHEMA)
    assert (again.kmeans_.cluster_centers_ == test.kmeans_.cluster_centers_).all()  # same seed, same cells
    res = test.test(copies, holdout)
    assert res.c_t == pytest.approx(_brute_c_t(test, train, copies, holdout), rel=1e-9)
    assert res.z < -10


def test_copying_test_sees_underfitting_and_stays_calm_on_fresh_rows():
    train, holdout = _gauss(600, 0), _gauss(300, 1)
    test = DataCopyingTest(n_cells=5, distance="l2", random_state=0).fit(train, SCHEMA)
    wide = test.test(_gauss(300, 3, scale=3.0), holdout)
    assert wide.z > 5 and wide.p_value > 0.999  # Z >> 0: underfitting, no copying
    assert wide.c_t == pytest.approx(_brute_c_t(test, train, _gauss(300, 3, scale=3.0), holdout), rel=1e-9)
    fresh = test.test(_gauss(300, 4), holdout)
    assert abs(fresh.z) < 3 and not fresh.summary()["cells_flagged"]
    # same seed, same cells and numbers; the global-neighbour variant agrees in sign
    again = DataCopyingTest(n_cells=5, distance="l2", random_state=0).fit(train, SCHEMA).test(_gauss(300, 4), holdout)
    assert again.z == fresh.z
    glob = DataCopyingTest(n_cells=5, distance="l2", neighbors="global").fit(train, SCHEMA)
    assert glob.test(_gauss(300, 3, scale=3.0), holdout).z > 5


def test_copying_test_errors():
    with pytest.raises(NotFittedError):
        DataCopyingTest().test(_gauss(5, 0), _gauss(5, 1))
    with pytest.raises(ParameterError, match="n_cells=50 exceeds"):
        DataCopyingTest(n_cells=50).fit(_gauss(10, 0), SCHEMA)
    with pytest.raises(ParameterError, match="neighbors"):
        DataCopyingTest(neighbors="all").fit(_gauss(10, 0), SCHEMA)
    with pytest.raises(TabmemError, match="empty"):
        DataCopyingTest(n_cells=2).fit(_gauss(10, 0), SCHEMA).test(_gauss(5, 1), _gauss(0, 1))


def test_authenticity_on_constructed_copies_and_brute_force():
    train = _gauss(200, 0)
    loo = nearest_other_distance(NeighborIndex("l2").fit(train, SCHEMA), train)
    x = (train.to_numpy() - train.to_numpy().mean(0)) / train.to_numpy().std(0)
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    np.testing.assert_allclose(loo, d.min(1), rtol=1e-9)
    # exact copies: every row is closer (0) than its training row's own neighbour
    det = ReplicaDetector("l2").fit(train, SCHEMA)
    copies = det.score(train.iloc[:50])
    a = authenticity(copies.table.d1.to_numpy(), copies.table.nn1.to_numpy(), loo)
    assert a == {"closer_share": 1.0, "authenticity": 0.0}
    far = det.score(train.iloc[:50] + 100.0)
    assert authenticity(far.table.d1.to_numpy(), far.table.nn1.to_numpy(), loo)["closer_share"] == 0.0
    # random rows: the share equals a loop over the definition
    fresh = _gauss(80, 5)
    r = det.score(fresh).table
    want = np.mean([r.d1[i] < loo[r.nn1[i]] for i in range(80)])
    assert authenticity(r.d1.to_numpy(), r.nn1.to_numpy(), loo)["closer_share"] == pytest.approx(want)


def test_duplicate_training_rows_have_zero_nearest_other_distance():
    train = pd.concat([_gauss(20, 0), _gauss(20, 0).iloc[:3]], ignore_index=True)
    loo = nearest_other_distance(NeighborIndex("gower").fit(train, SCHEMA), train)
    assert (loo[[0, 1, 2, 20, 21, 22]] == 0).all() and (loo[3:20] > 0).all()


def test_identical_matches_and_nndr():
    train = _gauss(100, 0)
    half = pd.concat([train.iloc[:25], _gauss(25, 9)], ignore_index=True)
    assert ExactCopies().fit(train, SCHEMA).match(half).mean() == 0.5  # distance_evidence's identical_matches
    d1, d2 = np.array([0.0, 1.0, 2.0, 0.0]), np.array([0.0, 2.0, 4.0, 3.0])
    s = nndr_summary(d1, d2, quantiles=(0.5,))
    assert s["quantiles"]["0.5"] == pytest.approx(np.median([0, 0.5, 0.5, 0])) and s["mean"] == pytest.approx(0.25)
    # the curve the report draws: 21 quantiles from the minimum to the maximum, the median among them
    assert len(s["curve"]) == 21 and (s["curve"]["0.0"], s["curve"]["1.0"]) == (0.0, 0.5)
    assert s["curve"]["0.5"] == s["quantiles"]["0.5"] and s["curve"]["0.15"] == pytest.approx(
        np.quantile([0, 0.5, 0.5, 0], 0.15)
    )


def test_distance_evidence_keys_next_to_the_holdout():
    train, holdout = _gauss(300, 0), _gauss(150, 1)
    synthetic = pd.concat([train.iloc[:75], _gauss(75, 2)], ignore_index=True)
    det = ReplicaDetector("l2").fit(train, SCHEMA)
    res = det.score(synthetic, holdout=holdout)
    ev = distance_evidence(det, res, synthetic, holdout, n_cells=3).to_dict()
    assert ev["identical_matches"] == {"synthetic_share": 0.5, "holdout_share": 0.0}
    assert ev["authenticity"]["synthetic_closer_share"] > ev["authenticity"]["holdout_closer_share"]
    assert ev["data_copying"]["z"] < -3 and ev["data_copying"]["n_cells"] == 3
    assert set(ev["nndr"]) == {"synthetic", "holdout", "distance"}
    assert distance_evidence(det, det.score(synthetic), synthetic).data_copying is None
