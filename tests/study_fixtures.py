"""The tiny study every runner test starts from (a file dataset, TabDDPM for 2 epochs, every built-in step)."""

from __future__ import annotations

BASE = """
[study]
name = "tiny"
steps = ["train", "audit", "attack", "quality"]
seeds = [0]
threads = 1

[[datasets]]
label = "toy"
path = "data/train.csv"
test = "data/test.csv"
target = "y"
categorical = ["c", "y"]

[[generators]]
name = "tabddpm"
preset = "small"
epochs = 2
label = "ddpm"

[train]
holdout = false

[audit]
distances = ["fang2024", "gower"]
n_bootstrap = 50

[attack]
attacks = ["levatt", "dcr"]
n_bootstrap = 20

[quality]
metrics = ["shape", "trend"]
"""
