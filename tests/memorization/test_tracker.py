"""MemorizationTracker: records equal a naive re-computation; tracking never changes training; crash + resume."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import Callback, CheckpointCallback, get_generator
from tabmem.memorization.dynamics import TrainingDynamics
from tabmem.memorization.tracker import MemorizationTracker, load_tracking


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models: one thread is faster and does not fight the other test processes for cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


TINY = dict(layers=(16,), dim_t=8, num_timesteps=5, batch_size=32, lr=3e-3)


@pytest.fixture
def table():
    rng = np.random.default_rng(3)
    n = 80
    df = pd.DataFrame(
        {
            "a": rng.normal(0, 1, n),
            "b": rng.integers(0, 1000, n),
            "c": rng.choice(["x", "y", "z"], n),
            "y": rng.choice(["0", "1"], n),
        }
    )
    return df, Schema.infer(df, numerical=["b"], target="y")


def naive_fang2024(train: pd.DataFrame, syn: pd.DataFrame, schema: Schema):
    """Independent loop re-derivation of the papers' distance, NN1/NN2 and ratio."""
    num, cat = list(schema.numerical), list(schema.categorical)
    T = train[num].to_numpy(float)
    Tc = train[cat].astype(str).to_numpy()
    M = len(schema.columns)
    out = []
    for i in range(len(syn)):
        x = syn[num].iloc[i].to_numpy(float)
        e = np.sqrt(((T - x) ** 2).sum(1))
        e_hat = (e - e.min()) / (e.max() - e.min()) if e.max() > e.min() else np.zeros_like(e)
        h = (Tc != syn[cat].astype(str).iloc[i].to_numpy()).sum(1)
        d = (e_hat + h) / M
        i1 = int(np.argmin(d))
        d1 = d[i1]
        d[i1] = np.inf
        d2 = d.min()
        r = np.nan if d1 == 0 and d2 == 0 else d1 / d2
        out.append((i1, r))
    return out


def test_records_match_naive_recomputation(table):
    df, schema = table
    tr = MemorizationTracker(every=2, keep_last_sample=True, distance="fang2024")  # the papers' distance
    gen = get_generator("tabddpm", epochs=4, random_state=0, **TINY)
    gen.fit(df, schema, callbacks=[tr])
    assert [e["epoch"] for e in tr.epochs_] == [2, 4]
    syn = tr.last_sample_
    assert len(syn) == len(df)  # |G| = |train| by default
    naive = naive_fang2024(df, syn, schema)
    counts = np.zeros(len(df), int)
    auc = np.zeros(len(df))
    for i1, r in naive:
        if not np.isnan(r):
            counts[i1] += r < 1 / 3
            auc[i1] += (1 - r) / len(syn)
    rec = tr.records_
    last = rec[rec["epoch"] == 4]
    got_counts = np.zeros(len(df), int)
    got_auc = np.zeros(len(df))
    got_counts[last["train_row"]] = last["replica_count"]
    got_auc[last["train_row"]] = last["mem_auc"]
    np.testing.assert_array_equal(got_counts, counts)
    np.testing.assert_allclose(got_auc, auc, atol=1e-12)
    h = tr.history_.set_index("epoch")
    rates = [r for _, r in naive]
    assert h.loc[4, "memorization_rate"] == pytest.approx(np.mean(np.nan_to_num(rates, nan=1.0) < 1 / 3))
    assert h.loc[4, "mem_auc"] == pytest.approx(auc.sum())  # per-record shares sum to the table's Mem-AUC
    assert h.loc[4, "n_replicas"] == counts.sum()
    # indicator derived from counts; zero rows are not stored
    assert (last["replica_count"] > 0).sum() == (counts > 0).sum()
    assert ((last["replica_count"] > 0) | (last["mem_auc"] > 0)).all()


def test_tracking_does_not_change_training(table):
    df, schema = table
    plain = get_generator("tabddpm", epochs=3, random_state=5, **TINY).fit(df, schema)
    tracked = get_generator("tabddpm", epochs=3, random_state=5, **TINY).fit(
        df, schema, callbacks=[MemorizationTracker(every=1, n_samples=50)]
    )
    for p, q in zip(plain.model_.parameters(), tracked.model_.parameters()):
        assert torch.equal(p, q)
    pd.testing.assert_frame_equal(plain.sample(30, random_state=1), tracked.sample(30, random_state=1))


def test_crash_then_resume_gives_same_records(table, tmp_path):
    df, schema = table
    full_dir = tmp_path / "full"
    get_generator("tabddpm", epochs=4, random_state=1, **TINY).fit(
        df, schema, callbacks=[MemorizationTracker(every=1, path=full_dir)]
    )

    class Crash(Callback):
        order = 200

        def on_epoch_end(self, gen, epoch, logs):
            if epoch == 3:
                raise RuntimeError("simulated crash")

    run = tmp_path / "run"
    with pytest.raises(RuntimeError, match="simulated crash"):
        get_generator("tabddpm", epochs=4, random_state=1, **TINY).fit(
            df,
            schema,
            callbacks=[
                MemorizationTracker(every=1, path=run / "tracking"),
                CheckpointCallback(2, run / "ck.pt"),
                Crash(),
            ],
        )
    # epoch 3 was tracked but the checkpoint is at epoch 2: resume must drop epoch 3 and redo it
    assert (run / "tracking" / "records" / "epoch=000003.parquet").exists()
    get_generator("tabddpm", epochs=4, **TINY).fit(
        df, schema, resume_from=run / "ck.pt", callbacks=[MemorizationTracker(every=1, path=run / "tracking")]
    )
    e_full, r_full, _ = load_tracking(full_dir)
    e_run, r_run, meta = load_tracking(run / "tracking")
    assert meta["n_train"] == len(df)
    assert e_run["epoch"].tolist() == [1, 2, 3, 4]
    cols = ["epoch", "memorization_rate", "mem_auc", "n_replicas"]
    pd.testing.assert_frame_equal(e_full[cols], e_run[cols])
    pd.testing.assert_frame_equal(r_full, r_run)
    dyn = TrainingDynamics.load(run / "tracking")
    assert dyn.counts.shape == (4, len(df))


def test_fresh_fit_clears_old_records_and_holdout_baseline(table, tmp_path):
    df, schema = table
    d = tmp_path / "t"
    tr = MemorizationTracker(every=1, path=d, holdout=df.iloc[:20])
    get_generator("tabddpm", epochs=2, random_state=0, **TINY).fit(df, schema, callbacks=[tr])
    get_generator("tabddpm", epochs=1, random_state=0, **TINY).fit(
        df, schema, callbacks=[MemorizationTracker(every=1, path=d)]
    )
    epochs, records, _ = load_tracking(d)
    assert epochs["epoch"].tolist() == [1] and set(records["epoch"]) <= {1}
    # holdout rows that ARE training rows are exact copies: ratio 0 -> all flagged
    assert tr.holdout_memorization_rate_ == 1.0


def test_bad_arguments():
    for kwargs, msg in [
        ({"every": 0}, "every"),
        ({"n_samples": 0}, "n_samples"),
        ({"threshold": 2}, "threshold"),
        ({"random_state": -1}, "random_state"),
    ]:
        with pytest.raises(TabmemError, match=msg):
            MemorizationTracker(**kwargs)
    with pytest.raises(TabmemError, match="tracker.json missing"):
        load_tracking("/nonexistent")


def test_observe_from_any_loop_writes_what_the_callback_writes(table, tmp_path):
    """start + observe (no callback protocol) on the samples the callback drew: the same records and epochs."""
    df, schema = table
    cb = MemorizationTracker(every=2, path=tmp_path / "cb", keep_samples=True)
    get_generator("tabddpm", epochs=4, random_state=2, **TINY).fit(df, schema, callbacks=[cb])
    assert sorted(cb.samples_) == [2, 4]
    loop = MemorizationTracker(every=2, path=tmp_path / "loop").start(df, schema)
    for epoch, sample in cb.samples_.items():
        row = loop.observe(epoch, sample)
        assert row["epoch"] == epoch and row["sample_seconds"] == 0.0
    e_cb, r_cb, m_cb = load_tracking(tmp_path / "cb")
    e_loop, r_loop, m_loop = load_tracking(tmp_path / "loop")
    cols = ["epoch", "n_samples", "memorization_rate", "mem_auc", "mem_auc_trapz10", "n_replicas"]
    pd.testing.assert_frame_equal(e_cb[cols], e_loop[cols])
    pd.testing.assert_frame_equal(r_cb, r_loop)
    assert m_cb["fingerprint"] == m_loop["fingerprint"] and m_cb["n_train"] == m_loop["n_train"]


def test_observe_needs_a_bound_table_and_increasing_epochs(table):
    df, schema = table
    tr = MemorizationTracker()
    with pytest.raises(TabmemError, match=r"tracker\.start\(train, schema\)"):
        tr.observe(1, df)
    tr.start(df, schema)
    tr.observe(3, df.iloc[:40])
    with pytest.raises(TabmemError, match="epoch 3 is not after the last tracked epoch 3"):
        tr.observe(3, df)
    with pytest.raises(TabmemError, match="epoch must be an integer"):
        tr.observe(4.5, df)
    with pytest.raises(TabmemError, match=r"snap\.csv table: missing column\(s\): .c."):
        tr.observe(5, df.drop(columns=["c"]), name="snap.csv")
    assert [e["epoch"] for e in tr.epochs_] == [3] and tr.history_.loc[0, "memorization_rate"] == 1.0
