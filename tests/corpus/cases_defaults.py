"""Corpus cases of two failure classes: a default that cannot discriminate, options that cannot be used.

* ``2 defaults``: the papers' ``fang2024`` distance gives every row of an all-numerical table
  ``d1 = 0`` (a 100% "memorization rate" for real unseen rows too). ``gower`` is the default now,
  and any distance that cannot discriminate on the data is a ``warning:`` line.
* ``8 options``: ``tabmem attack --model noisy_resample`` (a generator without presets) with the
  default ``--preset small`` or with ``--preset none``; an online-only attack with
  ``--shadow-design offline`` (refused up front, naming the attack and the option).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from corpus_runner import Case, Result
from corpus_tables import _draw


def _numeric_tables(tmp: Path, out: Path) -> None:
    """An all-numerical training table, a holdout and a synthetic table of fresh rows (no copies)."""
    rng = np.random.default_rng(5)
    for name, n in (("num_train", 240), ("num_holdout", 160), ("num_synthetic", 160)):
        pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd")).to_csv(tmp / f"{name}.csv", index=False)


def _population(tmp: Path, out: Path) -> None:
    """Real rows of the corpus' population that are not targets: the shadows' training data."""
    _draw(np.random.default_rng(99), 300).to_csv(tmp / "population.csv", index=False)


NUMERIC = ("--train", "{tmp}/num_train.csv", "--holdout", "{tmp}/num_holdout.csv")
NUMERIC_AUDIT = (*NUMERIC, "--synthetic", "{tmp}/num_synthetic.csv")
SHADOWS = ("--attacks", "lira", "--population", "{tmp}/population.csv", "--n-shadows", "4", "--model", "noisy_resample")
TVAE_ONE_EPOCH = ("--model", "tvae", "--epochs", "1", "--threads", "1")  # a generator with the default preset


def degenerate(r: Result) -> None:
    """The summary says the distance cannot discriminate, next to the 100% figures."""
    s = r.json()
    assert s["distance"] == "fang2024" and s["memorization_rate"] == 1.0 and s["holdout_memorization_rate"] == 1.0
    assert s.get("distance_discriminates") is False
    assert any("cannot discriminate" in w and "--distance gower" in w for w in s["warnings"])


def discriminates(r: Result) -> None:
    """The default distance is gower; real unseen rows are not replicas; no warning."""
    s = r.json()
    assert s["distance"] == "gower" and s["distance_discriminates"] is True
    assert s["holdout_memorization_rate"] < 0.1 and not any("cannot discriminate" in w for w in s["warnings"])


def leak_found_with_gower(r: Result) -> None:
    """The corpus' planted copies (60 of 120 synthetic rows) read as a leak under the default distance."""
    s = r.json()
    assert s["distance"] == "gower" and s["distance_discriminates"] is True
    assert math.isclose(s["exact_copy_rate"], 0.5) and s["memorization_rate"] >= 0.5
    assert s["excess_memorization_ci"][0] > 0.3


def shadow_attack_ran(r: Result) -> None:
    """LiRA ran on noisy_resample shadows (the class defaults: no preset recorded)."""
    s = r.json()
    assert 0.0 <= s["lira"]["auc"] <= 1.0
    plan = json.loads((r.out_dir / "shadows" / "plan.json").read_text())
    assert plan["settings"]["model"] == "noisy_resample" and plan["settings"]["preset"] is None


# fmt: off
CASES = [
    Case("audit_fang2024_all_numerical", "2 defaults", ("audit",), "warn",
         args=(*NUMERIC_AUDIT, "--distance", "fang2024"), setup=_numeric_tables,
         match=r"the fang2024 distance cannot discriminate on this data: 100\.0% of real rows.*--distance gower",
         check=degenerate, note="before: ok, memorization rate 100.00% and holdout 100.00%, no warning"),
    Case("audit_default_gower_all_numerical", "2 defaults", ("audit",), "ok",
         args=NUMERIC_AUDIT, drop=("--distance",), setup=_numeric_tables, check=discriminates,
         note="before: fang2024 by default, 100% for real unseen rows"),
    Case("audit_default_gower_planted_leak", "2 defaults", ("audit",), "ok",
         drop=("--distance",), check=leak_found_with_gower),
    Case("train_fang2024_all_numerical", "2 defaults", ("train",), "warn",
         args=(*NUMERIC, "--distance", "fang2024"), setup=_numeric_tables, check=degenerate,
         match=r"the fang2024 distance cannot discriminate on this data.*--distance gower",
         note="before: ok, 'memorization rate 100.00% (holdout baseline 100.00%)', no warning"),
    Case("attack_noisy_resample_default_preset", "8 options", ("attack",), "ok",
         args=SHADOWS, setup=_population, check=shadow_attack_ran,
         note="before: error 'noisy_resample: unknown preset 'small'; available: none'"),
    Case("attack_noisy_resample_preset_none", "8 options", ("attack",), "ok",
         args=(*SHADOWS, "--preset", "none"), setup=_population, check=shadow_attack_ran,
         note="before: error 'unknown preset 'none'; available: none'"),
    Case("attack_unknown_preset_lists_none", "8 options", ("attack",), "error",
         args=(*SHADOWS, "--preset", "big"), setup=_population,
         match=r"noisy_resample: unknown preset 'big'; available: none \(the class defaults\)"),
    Case("attack_online_only_offline_design", "8 options", ("attack",), "error",
         args=(*SHADOWS, *TVAE_ONE_EPOCH, "--shadow-design", "offline"), setup=_population,
         match=r"Error: lira works with online shadows only, not with --shadow-design offline",
         note="before: trained every shadow, then 'Error: risk_table: no attack scores'"),
    Case("attack_groundhog_offline_design", "8 options", ("attack",), "error",
         args=(*SHADOWS, *TVAE_ONE_EPOCH, "--attacks", "groundhog", "--shadow-design", "offline"), setup=_population,
         match=r"Error: groundhog works with online shadows only, not with --shadow-design offline"),
]
# fmt: on
