"""Corpus cases of the statistics' edges: one-class targets, intervals on one row, very wide tables.

The variants these cases need are registered here, next to the cases (``VARIANTS`` of
:mod:`corpus_tables` is the one lookup the runner uses).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from corpus_runner import Case, Result
from corpus_tables import VARIANTS


def _one_class(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    out = t["train"].copy()
    out["income"] = "<=50K"
    return out


def _wide(n_rows: int, n_cols: int, seed: int):
    def make(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        return pd.DataFrame(np.round(rng.normal(size=(n_rows, n_cols)), 6), columns=[f"c{j}" for j in range(n_cols)])

    return make


VARIANTS.update(
    {
        "train_one_class_target": ("train", _one_class),
        "synthetic_one_row": ("synthetic", lambda t: t["synthetic"].iloc[[0]].reset_index(drop=True)),
        "train_3x20000": ("train", _wide(3, 20_000, 0)),
        "synthetic_3x20000": ("synthetic", _wide(3, 20_000, 0)),
        "holdout_3x20000": ("holdout", _wide(3, 20_000, 1)),
        "train_5x1500": ("train", _wide(5, 1500, 0)),
        "synthetic_5x1500": ("synthetic", _wide(5, 1500, 2)),
        "holdout_5x1500": ("holdout", _wide(5, 1500, 1)),
    }
)


# ----------------------------------------------------------------------------- checks
def mle_null(r: Result) -> None:
    s = r.json()
    assert s["mle"] is None and "single class" in s["skipped"]["mle"], s["skipped"]


def audit_intervals_null(r: Result) -> None:
    s = r.json()
    for key in ("memorization_rate_ci", "holdout_memorization_rate_ci", "excess_memorization_ci"):
        assert s[key] == [None, None], (key, s[key])
    assert s["memorization_rate"] is not None  # the point estimate stays: only its interval is undefined


def attack_intervals_null(r: Result) -> None:
    s = r.json()
    for name, res in s.items():
        if name.startswith("_"):
            continue
        assert res["auc_ci"] == [None, None], (name, res["auc_ci"])


def wide_audit_exact(r: Result) -> None:
    s = r.json()
    assert s["exact_copy_rate"] == 1.0 and s["holdout_exact_copy_rate"] == 0.0, s
    assert r.seconds < 90, r.seconds


def trend_skipped(r: Result) -> None:
    s = r.json()
    assert s["trend"] is None and "max_pairs=1000000" in s["skipped"]["trend"]
    assert s["shape"] is not None


CASES: list[Case] = [
    Case("stats_one_class_target_mle", "7 statistics", ("quality",), "warn",
         inputs={"train": "train_one_class_target"},
         args=("--target", "income", "--metrics", "mle", "--mle-grid", "tiny", "--test", "{tmp}/holdout.csv"),
         match=r"mle not computed: the target column 'income' of the real table has a single class \('<=50K'\)",
         check=mle_null, note="mle null, reason 'mle is not a finite number on these tables (None)', no warning"),
    Case("stats_one_synthetic_one_holdout_row", "7 statistics", ("audit",), "warn",
         inputs={"synthetic": "synthetic_one_row", "holdout": "non_members_one"},
         match=r"excess_memorization_ci is null: a bootstrap interval needs at least 2 rows per table, "
               r"got 1 synthetic row and 1 holdout row",
         check=audit_intervals_null, note="memorization_rate_ci [1.0, 1.0], excess_memorization_ci [0.0, 0.0], no warning"),
    Case("stats_attack_auc_ci_one_and_one", "7 statistics", ("attack",), "warn",
         inputs={"train": "members_one", "holdout": "non_members_one"}, match=r"1 member.*1 non-member",
         check=attack_intervals_null),
    Case("stats_wide_3x20000_audit", "7 statistics", ("audit",), "ok",
         inputs={"train": "train_3x20000", "synthetic": "synthetic_3x20000", "holdout": "holdout_3x20000"},
         check=wide_audit_exact, time_limit=120.0,
         note="about 90 s at 3 x 20,000 and past 5 minutes at 3 x 100,000 (quadratic in the columns)"),
    Case("stats_trend_pairs_capped", "7 statistics", ("quality",), "warn",
         inputs={"train": "train_5x1500", "synthetic": "synthetic_5x1500", "holdout": "holdout_5x1500"},
         match=r"trend not computed: 1500 columns make 1124250 column pairs.*--trend-max-pairs 1124250",
         check=trend_skipped, time_limit=120.0, note="every one of the 1,124,250 pairs scored (minutes)"),
]  # fmt: skip
