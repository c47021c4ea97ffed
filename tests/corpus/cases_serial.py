"""Corpus cases of failure class 9: LevAtt's row strings format a value as Python prints it (ties included)."""

from __future__ import annotations

import pandas as pd
from corpus_runner import Case, Result
from corpus_tables import VARIANTS


def _tie_members(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    out = t["train"].copy()
    out["score"] = out["score"].astype(float)
    out.loc[0, "score"] = 1.20625  # a tie at 4 decimals: Python prints 1.2063, np.round gives 1.2062
    return out


def _tie_synthetic(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    out = t["synthetic"].copy()  # row 0 is a copy of training row 0, written as Python prints it
    out["score"] = out["score"].astype(float)
    out.loc[0, "score"] = float(format(1.20625, ".4f"))
    out.loc[1, "score"] = 12.3456  # four decimals in the synthetic table: LevAtt formats with 4
    return out


VARIANTS["train_score_tie"] = ("train", _tie_members)
VARIANTS["synthetic_score_tie_copy"] = ("synthetic", _tie_synthetic)


def _copy_scores_zero(r: Result) -> None:
    scores = pd.read_csv(r.out_dir / "scores.csv")
    row = scores[(scores["target_row"] == 0) & scores["is_member"]].iloc[0]
    assert float(row["levatt"]) == 0.0, scores.head()  # LevAtt's score is minus the edit distance


CASES: list[Case] = [
    Case("levatt_tie_exact_copy_distance_0", "9 serialization", ("attack",), "ok",
         inputs={"train": "train_score_tie", "synthetic": "synthetic_score_tie_copy"},
         args=("--attacks", "levatt"), check=_copy_scores_zero,
         note="the copied row scored distance 1 (1.2062 against 1.2063)"),
]  # fmt: skip
