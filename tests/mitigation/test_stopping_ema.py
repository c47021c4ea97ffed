"""Checkpoint choice on TabDDPM with ``ema_decay``: the tracker, the rule and the kept model use the average."""

from __future__ import annotations

import pandas as pd
import torch
from mitigation_tables import TINY_DDPM, mixed_table

from tabmem.generators import load_generator
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.runs.train import train_to_dir


def test_directory_run_tracks_and_keeps_the_average(tmp_path):
    df, schema = mixed_table(n=60, seed=2)
    hold, _ = mixed_table(n=60, seed=3)
    sel, _ = mixed_table(n=60, seed=4)
    summary = train_to_dir(df, schema, tmp_path, params={**TINY_DDPM, "epochs": 6, "ema_decay": 0.9}, track_every=2,
                           holdout=hold, stop_excess=0.5, selection_holdout=sel, seed=0)  # fmt: skip
    epoch = summary["selection"]["chosen_epoch"]
    model = load_generator(tmp_path / "model.pt")
    assert model.epoch_ == epoch and model.ema_decay == 0.9 and model.ema_ is not None
    # synthetic.csv is the tracker's sample of the chosen epoch: drawn from the averaged weights
    seed = MemorizationTracker(every=2).sample_seed(epoch)
    ema_sample = model.sample(len(df), random_state=seed)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "synthetic.csv"), ema_sample, check_dtype=False)
    averaged = model.ema_weights()
    assert not all(torch.equal(averaged[k], v) for k, v in model.model_.state_dict().items())
    model.ema_ = None  # the raw weights of the same epoch sample something else
    assert not model.sample(len(df), random_state=seed).equals(ema_sample)
