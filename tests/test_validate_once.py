"""Each table is validated once: the entry points validate, everything below reuses the result.

The raw validator (``tabmem.data.schema._validate_raw``) is wrapped to count calls per table
name; a second full validation of the same table is a regression (before this rule, one table
went through about 11 validations for the five default attacks).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from tabmem.attacks.runner import run_attacks
from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.memorization.replicas import ReplicaDetector


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": np.round(rng.normal(50, 10, n), 3),
            "y": np.round(rng.exponential(1000, n), 2),
            "k": rng.choice(["a", "b", "c"], n).astype(object),
        }
    )


SCHEMA = Schema(("x", "y", "k"), ("x", "y"), ("k",))


def test_attack_runner_validates_each_table_once(counted):
    run_attacks(
        _table(80, 0), _table(80, 1), _table(100, 2), SCHEMA, reference=_table(100, 3), n_bootstrap=10
    )  # the five default attacks
    assert counted == Counter({"members": 1, "non-members": 1, "synthetic": 1, "reference": 1})


def test_replica_detector_validates_each_table_once(counted):
    det = ReplicaDetector("fang2024").fit(_table(200, 0), SCHEMA)
    det.score(_table(150, 1), holdout=_table(150, 2))
    assert counted == Counter({"training": 1, "synthetic": 1, "holdout": 1})


def test_audit_command_validates_each_table_once(counted, tmp_path):
    paths = {}
    for name, seed in (("train", 0), ("syn", 1), ("hold", 2)):
        paths[name] = tmp_path / f"{name}.csv"
        _table(150, seed).to_csv(paths[name], index=False)
    main(
        [
            "audit",
            "--train",
            str(paths["train"]),
            "--synthetic",
            str(paths["syn"]),
            "--holdout",
            str(paths["hold"]),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert (tmp_path / "out" / "summary.json").is_file()
    assert counted == Counter({"training": 1, "synthetic": 1, "holdout": 1})


def test_tracked_training_validates_the_training_table_once(counted):
    pytest.importorskip("torch")
    from tabmem.generators import get_generator
    from tabmem.memorization.tracker import MemorizationTracker

    gen = get_generator("tabddpm", preset="small", epochs=2, batch_size=64, num_timesteps=10)
    gen.fit(_table(120, 0), SCHEMA, callbacks=[MemorizationTracker(every=1)], random_state=0)
    assert counted["training"] == 1  # fit, encoder, model and tracker share one validation
    assert counted["synthetic"] == 2  # each tracked epoch's sample, once


def test_shadow_attacks_validate_each_table_once(counted):
    """Shadow tables are validated once per shadow set, whatever the number of attacks using them."""
    from tabmem.attacks.shadows import ShadowSet, row_keys
    from tabmem.data.schema import validate

    members, non_members = _table(60, 0), _table(60, 1)
    half = np.zeros((4, 120), dtype=bool)
    half[0::2, :60] = True
    half[1::2, 60:] = True
    keys = row_keys(validate(pd.concat([members, non_members], ignore_index=True), SCHEMA, name="targets"))
    shadows = ShadowSet(tuple(_table(80, 10 + s) for s in range(4)), half, keys)
    counted.clear()
    run_attacks(
        members, non_members, _table(80, 2), SCHEMA, attacks=["lira", "lira_offline", "groundhog"], shadows=shadows
    )
    want = {"members": 1, "non-members": 1, "synthetic": 1, **{f"shadow {i}": 1 for i in range(4)}}
    assert counted == Counter(want)
