"""Membership evaluation: AUC vs scikit-learn, the paper's TPR@FPR interpolation, tie-aware variant, worst cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from tabmem.attacks.evaluation import (
    auc_score,
    evaluate_membership,
    top_k_worst_case,
    tpr_at_fpr,
    tpr_at_fpr_strict,
    worst_case_records,
)
from tabmem.errors import TabmemError


def test_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.random(300) < 0.4
        s = rng.integers(0, 6, size=300).astype(float) + y * rng.integers(0, 2, size=300)  # many ties
        assert auc_score(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_tpr_at_fpr_is_the_papers_interp():
    rng = np.random.default_rng(1)
    y = rng.random(500) < 0.5
    s = -rng.integers(0, 20, size=500) + 3 * y
    res = evaluate_membership(s, y, n_bootstrap=0)
    fpr, tpr, _ = roc_curve(y, s)
    for f in (0.0, 0.001, 0.01, 0.1):
        assert res.tpr_at_fpr[f] == pytest.approx(float(np.interp(f, fpr, tpr)))
    # a worked example: TPR@0 = the last vertex with FPR 0
    assert tpr_at_fpr(np.array([0, 0, 0, 0.2, 1]), np.array([0, 0.4, 0.6, 0.8, 1]), 0.0) == 0.6


def test_tie_block_semantics():
    # a non-member tied with members at the top score: no deterministic threshold has FPR 0 and TPR > 0
    s = np.array([0, 0, 0, -1, -5, -5, -7, -9])
    y = np.array([1, 1, 0, 1, 0, 0, 0, 1], bool)
    res = evaluate_membership(s, y, n_bootstrap=0)
    assert res.tpr_at_fpr[0.0] == 0.0 and res.tpr_at_fpr_strict[0.0] == 0.0
    # FPR 0.1 lies inside the first tie block (FPR 0 -> 0.25): interpolation credits a randomised threshold
    assert res.tpr_at_fpr[0.1] == pytest.approx(0.5 * 0.1 / 0.25)
    assert res.tpr_at_fpr_strict[0.1] == 0.0
    assert res.tpr_at_fpr_strict[0.01] <= res.tpr_at_fpr[0.01]
    # strict = max TPR over thresholds with FPR <= f, brute force
    thr = np.unique(s)
    for f in (0.25, 0.5):
        best = max(((s >= t) & y).sum() / y.sum() for t in thr if ((s >= t) & ~y).sum() / (~y).sum() <= f)
        assert tpr_at_fpr_strict(res.roc.fpr.to_numpy(), res.roc.tpr.to_numpy(), f) == pytest.approx(best)


def test_balanced_accuracy_brute_force():
    rng = np.random.default_rng(2)
    y = rng.random(200) < 0.3
    s = rng.normal(size=200) + y
    res = evaluate_membership(s, y, n_bootstrap=0)
    best = max(((s >= t) & y).sum() / y.sum() / 2 + ((s < t) & ~y).sum() / (~y).sum() / 2 for t in np.unique(s))
    assert res.balanced_accuracy == pytest.approx(best)
    pred = s >= res.threshold
    assert (pred[y].mean() + (~pred[~y]).mean()) / 2 == pytest.approx(best)


def test_bootstrap_ci_reproducible_and_covers():
    rng = np.random.default_rng(3)
    y = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    s = rng.normal(size=600) + 0.5 * y
    a = evaluate_membership(s, y, n_bootstrap=100, random_state=7)
    b = evaluate_membership(s, y, n_bootstrap=100, random_state=7)
    assert a.auc_ci == b.auc_ci
    assert a.auc_ci[0] < a.auc < a.auc_ci[1]
    assert 0.02 < a.auc_ci[1] - a.auc_ci[0] < 0.15
    d = a.to_dict()
    assert set(d["tpr_at_fpr"]) == {"0", "0.001", "0.01", "0.1"} and len(d["auc_ci"]) == 2


def test_bad_input():
    with pytest.raises(TabmemError, match="same length"):
        evaluate_membership([1, 2], [True])
    with pytest.raises(TabmemError, match="at least one member and one non-member"):
        evaluate_membership([1, 2], [True, True])
    with pytest.raises(TabmemError, match="NaN"):
        evaluate_membership([1, np.nan], [True, False])
    with pytest.raises(TabmemError, match="0/1"):
        evaluate_membership([1, 2], [2, 3])
    with pytest.raises(TabmemError, match="FPR"):
        evaluate_membership([1, 2], [1, 0], fprs=[1.5])


def test_top_k_worst_case_matches_pandas_nlargest():
    rng = np.random.default_rng(4)
    runs = pd.DataFrame(
        {"generator": rng.choice(["a", "b", "c"], 90), "tpr_at_fpr_0.1": rng.random(90), "auc": rng.random(90)}
    )
    top = top_k_worst_case(runs, k=5)
    ref = runs.groupby("generator")["tpr_at_fpr_0.1"].nlargest(5)
    assert sorted(top.index) == sorted(ref.index.get_level_values(1))
    assert top.groupby("generator").size().tolist() == [5, 5, 5]
    with pytest.raises(TabmemError, match="not in the runs table"):
        top_k_worst_case(runs, by="nope")


def test_worst_case_records():
    s = np.array([-3.0, 0.0, -1.0, 0.0, -7.0])
    out = worst_case_records(s, [1, 1, 0, 0, 1], k=3)
    assert out.target_row.tolist() == [1, 3, 2]
    assert out["rank"].tolist() == [1, 1, 3]
    assert out.is_member.tolist() == [True, False, False]


def test_summary_is_strict_json():
    import json

    res = evaluate_membership([1.0, 0.0, 1.0, 0.0], [1, 0, 1, 0], n_bootstrap=0)
    d = res.to_dict()
    assert d["auc_ci"] == [None, None]
    json.dumps(d, allow_nan=False)


def test_bootstrap_ci_equals_a_direct_resampling_loop():
    """Stratified percentile bootstrap written out: resample members, then non-members, AUC by scikit-learn."""
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(40, bool), np.zeros(70, bool)]
    s = rng.integers(0, 8, size=110) + 1.5 * y  # ties, like edit distances
    for seed, conf in ((11, 0.95), (12, 0.8)):
        res = evaluate_membership(s, y, n_bootstrap=150, confidence=conf, random_state=seed)
        draw = np.random.default_rng(seed)
        pos, neg = s[y], s[~y]
        aucs = []
        for _ in range(150):
            p = pos[draw.integers(len(pos), size=len(pos))]
            q = neg[draw.integers(len(neg), size=len(neg))]
            aucs.append(roc_auc_score(np.r_[np.ones(len(p)), np.zeros(len(q))], np.r_[p, q]))
        tail = (1 - conf) / 2 * 100
        lo, hi = np.percentile(aucs, [tail, 100 - tail])
        assert res.auc_ci == pytest.approx((lo, hi), abs=1e-12)
        assert res.auc == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_tpr_intervals_match_a_naive_bootstrap_and_resolution():
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(200, bool), np.zeros(150, bool)]
    s = rng.normal(size=350) + 0.8 * y
    res = evaluate_membership(s, y, n_bootstrap=200, random_state=11)
    # the naive loop: the same stratified resamples, scikit-learn's ROC, the paper's interpolation
    boot = np.random.default_rng(11)
    pos, neg = s[y], s[~y]
    tprs = []
    for _ in range(200):
        sp = pos[boot.integers(pos.size, size=pos.size)]
        sn = neg[boot.integers(neg.size, size=neg.size)]
        fpr, tpr, _ = roc_curve(np.r_[np.ones(sp.size), np.zeros(sn.size)], np.r_[sp, sn])
        tprs.append([np.interp(f, fpr, tpr) for f in (0.0, 0.001, 0.01, 0.1)])
    lo, hi = np.quantile(np.array(tprs), [0.025, 0.975], axis=0)
    for i, f in enumerate((0.0, 0.001, 0.01, 0.1)):
        assert res.tpr_at_fpr_ci[f] == pytest.approx((lo[i], hi[i]), abs=1e-12)
    assert res.tpr_at_fpr_ci[0.1][0] <= res.tpr_at_fpr[0.1] <= res.tpr_at_fpr_ci[0.1][1]
    # the AUC interval comes from the same resamples as before (unchanged by the TPR intervals)
    assert res.auc_ci == evaluate_membership(s, y, n_bootstrap=200, random_state=11).auc_ci
    assert res.min_resolved_fpr == pytest.approx(1 / 150)
    d = res.to_dict()
    assert d["min_resolved_fpr"] == pytest.approx(1 / 150) and set(d["tpr_at_fpr_ci"]) == {"0", "0.001", "0.01", "0.1"}
    assert evaluate_membership(s, y, n_bootstrap=0).to_dict()["tpr_at_fpr_ci"]["0.1"] == [None, None]


def test_summary_keys_and_values_are_the_documented_contract():
    rng = np.random.default_rng(6)
    y = np.r_[np.ones(30, bool), np.zeros(50, bool)]
    s = rng.normal(size=80) + y
    res = evaluate_membership(s, y, n_bootstrap=20, random_state=1)
    d = res.to_dict()
    assert d == {
        "auc": res.auc,
        "auc_ci": [res.auc_ci[0], res.auc_ci[1]],
        "tpr_at_fpr": {"0": res.tpr_at_fpr[0.0], "0.001": res.tpr_at_fpr[0.001], "0.01": res.tpr_at_fpr[0.01],
                       "0.1": res.tpr_at_fpr[0.1]},
        "tpr_at_fpr_strict": {"0": res.tpr_at_fpr_strict[0.0], "0.001": res.tpr_at_fpr_strict[0.001],
                              "0.01": res.tpr_at_fpr_strict[0.01], "0.1": res.tpr_at_fpr_strict[0.1]},
        "balanced_accuracy": res.balanced_accuracy,
        "threshold": res.threshold,
        "n_members": 30,
        "n_non_members": 50,
        "tpr_at_fpr_ci": {_k: list(ci) for _k, ci in zip(["0", "0.001", "0.01", "0.1"], res.tpr_at_fpr_ci.values())},
        "min_resolved_fpr": pytest.approx(1 / 50),
    }  # fmt: skip
    assert all(isinstance(v, float) for v in d["auc_ci"]) and np.isfinite(d["threshold"])


def test_strict_tpr_on_curves_without_a_zero_fpr_point():
    # a curve that never reaches FPR <= target: no deterministic threshold qualifies -> TPR 0
    assert tpr_at_fpr_strict(np.array([0.2, 1.0]), np.array([0.5, 1.0]), 0.1) == 0.0
    assert tpr_at_fpr_strict(np.array([0.0, 0.1, 0.2]), np.array([0.3, 0.5, 0.9]), 0.1) == 0.5  # FPR = f counts


def test_top_k_worst_case_defaults_order_ties_and_validation():
    rng = np.random.default_rng(7)
    runs = pd.DataFrame({"generator": np.repeat(["z", "a", "m"], 25), "tpr_at_fpr_0.1": rng.random(75)})
    top = top_k_worst_case(runs)  # default k = 20 per generator, groups in sorted order
    assert top.groupby("generator", sort=False).size().to_dict() == {"a": 20, "m": 20, "z": 20}
    assert list(dict.fromkeys(top["generator"])) == ["a", "m", "z"]
    # ties keep the original order (stable), whatever the group size
    tied = pd.DataFrame({"generator": ["g"] * 200, "tpr_at_fpr_0.1": np.zeros(200)})
    assert top_k_worst_case(tied, k=7).index.tolist() == list(range(7))
    many = pd.DataFrame({"generator": ["g"] * 600, "tpr_at_fpr_0.1": rng.integers(0, 3, 600) / 10})
    v = many["tpr_at_fpr_0.1"].to_numpy()
    by_hand = sorted(range(600), key=lambda i: (-v[i], i))[:250]  # highest first, ties by position
    assert top_k_worst_case(many, k=250).index.tolist() == by_hand
    assert len(top_k_worst_case(runs, k=1)) == 3
    for bad in (0, 1.5):
        with pytest.raises(TabmemError, match=f"top_k_worst_case: k must be a positive integer, got {bad!r}"):
            top_k_worst_case(runs, k=bad)
    assert top_k_worst_case(runs.assign(generator=np.nan)).empty  # no group: nothing to rank


def test_worst_case_records_ranks_ids_and_columns():
    s = [5, 3, 3, 3, 1] + [0] * 30  # integer scores, a three-way tie
    out = worst_case_records(s)
    assert len(out) == 20 and list(out.columns) == ["target_row", "score", "rank"]  # default k = 20
    assert out["score"].dtype == np.float64 and out["rank"].dtype == np.int64
    assert out["rank"].tolist()[:5] == [1, 2, 2, 2, 5]  # ties share the best rank
    assert out.index.tolist() == list(range(20))
    ids = [f"r{i}" for i in range(35)]
    named = worst_case_records(s, k=3, ids=ids)
    assert named["target_row"].tolist() == ["r0", "r1", "r2"]
    assert worst_case_records(s, k=0).empty


def test_defaults_roc_points_and_argument_edges():
    rng = np.random.default_rng(8)
    y = np.r_[np.ones(40, bool), np.zeros(60, bool)]
    s = rng.integers(0, 10, size=100) + 2 * y
    res = evaluate_membership(s, y)
    assert res.auc_ci == evaluate_membership(s, y, n_bootstrap=200, random_state=0).auc_ci  # documented defaults
    fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)  # every ROC point, not the plotted subset
    pd.testing.assert_frame_equal(res.roc, pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": thr}))
    # collinear points (three members, then three non-members, in score order) are kept too
    line = evaluate_membership([6, 5, 4, 3, 2, 1], [1, 1, 1, 0, 0, 0], n_bootstrap=0).roc
    assert line["tpr"].tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1, 1, 1, 1])
    assert evaluate_membership(s, y, fprs=(0.0, 1.0), n_bootstrap=0).tpr_at_fpr[1.0] == 1.0  # both ends allowed
    for bad in (0, 1, 2):
        with pytest.raises(TabmemError, match=rf"confidence must be in \(0, 1\), got {bad}"):
            evaluate_membership(s, y, confidence=bad)
    with pytest.raises(TabmemError, match="n_bootstrap must be a non-negative integer, got -1"):
        evaluate_membership(s, y, n_bootstrap=-1)


def test_score_errors_name_the_problem_and_positions():
    with pytest.raises(TabmemError, match="is_member must hold booleans or 0/1 values"):
        evaluate_membership([1, 2], [2, 3])
    scores = [0.5, np.nan, 0.1, np.nan, np.nan, np.nan, np.nan, np.nan]
    with pytest.raises(TabmemError, match=r"6 score\(s\) are NaN \(first positions: \[1, 3, 4, 5, 6\]\)"):
        evaluate_membership(scores, [1, 0] * 4)
    for missing in ([1.0, None], pd.Series([1.0, None], dtype=object)):  # None is a missing score too
        with pytest.raises(TabmemError, match=r"1 score\(s\) are NaN \(first positions: \[1\]\)"):
            evaluate_membership(missing, [1, 0])
