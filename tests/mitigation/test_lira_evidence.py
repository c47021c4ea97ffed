"""The plumbing of studies/mitigation/lira_evidence.py (LiRA offline on part 5's none and mstop arms)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import mixed_table
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from tabmem._io import write_frame
from tabmem.attacks import get_attack

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies" / "mitigation"))
import lira_evidence as le  # noqa: E402


def test_shadow_rows_are_disjoint_seeded_and_differ_between_shadows():
    a = le.shadow_rows(5000, 0, 0)
    assert all(len(x) == le.N for x in a)
    assert len(np.unique(np.concatenate(a))) == 3 * le.N  # train, evaluation and selection holdouts disjoint
    assert all(np.array_equal(x, y) for x, y in zip(a, le.shadow_rows(5000, 0, 0)))
    assert not np.array_equal(a[0], le.shadow_rows(5000, 1, 0)[0])
    assert le.shadow_seed(0, 0) != le.shadow_seed(0, 1)


def test_split_is_part_5s_and_the_population_holds_no_target(shared_data_dir):
    from mitigation_evidence import data, selection_rows

    from tabmem.attacks.shadows import row_keys

    members, hold, population, _ = le.split(str(shared_data_dir))
    train5, hold5, _, _ = data("adult", le.N, str(shared_data_dir))
    pd.testing.assert_frame_equal(members, train5)
    pd.testing.assert_frame_equal(hold, hold5)
    pop = set(row_keys(population).tolist())
    for rows in (members, hold):
        assert not pop & set(row_keys(rows).tolist())
    # rows 0-2,999 of the permutation (members, evaluation and selection holdouts) are excluded by position
    from tabmem.data.datasets import load_dataset

    n_split = len(load_dataset("adult", data_dir=str(shared_data_dir)).train)
    assert n_split - 3 * le.N - 10 <= len(population) <= n_split - 3 * le.N
    sel = set(row_keys(selection_rows("adult", le.N, str(shared_data_dir))).tolist())
    assert len(pop & sel) <= 10  # only duplicates by value of a selection row (Adult has a few duplicate rows)


def _fake_shadows(out: Path, tables: list[pd.DataFrame]) -> None:
    for i, t in enumerate(tables):
        d = out / "shadows" / f"{i:03d}"
        d.mkdir(parents=True)
        for k, arm in enumerate(le.ARMS):  # the arms get different tables: the set must read its own
            write_frame(d / f"synthetic_{arm}.parquet", t.iloc[k::2].reset_index(drop=True))
        (d / "done.json").write_text(json.dumps({"shadow": i, "chosen_epoch": 100 * (i + 1)}))


def test_lira_offline_on_the_study_shadow_set_is_the_offline_formula(tmp_path, monkeypatch):
    """The attack on load_shadow_set's set equals LiRA offline computed by hand from dcr's raw scores."""
    monkeypatch.setattr(le, "N", 30)
    pool, schema = mixed_table(n=400, seed=1)
    targets = pool.iloc[:60].reset_index(drop=True)  # 30 "members" then 30 "non-members"
    shadows = [pool.iloc[60 + 60 * i : 120 + 60 * i].reset_index(drop=True) for i in range(5)]
    _fake_shadows(tmp_path, shadows)
    released = pd.concat([targets.iloc[:30:2], pool.iloc[360:]], ignore_index=True)  # copies of some members
    for arm in le.ARMS:
        sset = le.load_shadow_set(tmp_path, arm, targets, schema)
        assert sset.design == "offline" and sset.n_shadows == 5 and not sset.membership.any()
        assert sset.meta["chosen_epochs"] == [100, 200, 300, 400, 500]
        res = le.score("lira_offline", released, targets, schema, sset, seed=0)

        def raw(t):
            return get_attack("dcr", n_jobs=1).fit(t, schema).score(targets)

        k = le.ARMS.index(arm)
        d_obs = -raw(released)
        d_sh = np.stack([-raw(s.iloc[k::2].reset_index(drop=True)) for s in shadows])
        both = np.concatenate([d_obs, d_sh.ravel()])
        c = 0.01 * np.median(both[both > 0])
        obs, st = -np.log(d_obs + c), -np.log(d_sh + c)
        mu = st.mean(axis=0)
        sd = np.sqrt(((st - mu) ** 2).sum() / (st.shape[1] * (st.shape[0] - 1)))
        by_hand = -norm.logsf(obs, loc=mu, scale=sd)
        library = get_attack("lira_offline", n_jobs=1).fit(released, schema, shadows=sset).score(targets)
        np.testing.assert_allclose(library, by_hand, rtol=1e-9, atol=1e-9)
        is_member = np.r_[np.ones(30, bool), np.zeros(30, bool)]
        assert res["auc"] == pytest.approx(roc_auc_score(is_member, by_hand), abs=1e-9)
        assert res["auc_ci"][0] <= res["auc"] <= res["auc_ci"][1]
        assert res["auc"] > 0.6  # the copied members are found


@pytest.mark.slow
def test_one_shadow_trains_with_the_rule_and_samples_both_models(shared_data_dir, tmp_path):
    """A 100-epoch shadow end to end (~15 s): both samples written, seeds recorded, a rerun reuses it."""
    _, _, population, schema = le.split(str(shared_data_dir))
    info = le.train_one_shadow(0, population, schema, tmp_path, epochs=100, base_seed=0)
    d = tmp_path / "shadows" / "000"
    assert info["chosen_epoch"] == 100 and info["train_seed"] == le.shadow_seed(0, 0)
    assert info["sample_seed"] == le.sample_seed(info["train_seed"])
    for arm in le.ARMS:
        assert len(pd.read_parquet(d / f"synthetic_{arm}.parquet")) == le.N
    assert not (d / "train" / "selection" / "snapshots").exists()
    assert le.train_one_shadow(0, population, schema, tmp_path, epochs=100, base_seed=0) == json.loads(
        (d / "done.json").read_text()
    )
