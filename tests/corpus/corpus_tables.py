"""The input tables of the bad-input corpus, built in code (no dataset download, a few hundred rows).

``base_tables()`` gives a small Adult-like training table (integer, float and string columns, a
binary target), a holdout drawn from the same distribution and a synthetic table of
``N_COPIES`` exact copies of training rows followed by holdout rows, so that the replica figures
have a known brute-force value. One training row holds :data:`SECRET`, a one-off category that no
output may print unless asked (``--show-records``). ``VARIANTS`` maps a variant name to a function
that derives a table from the base ones: one bad or adversarial input each.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

SECRET = "SECRET-7f3a9c"  # a one-off training value: never printed by default
N_TRAIN = 240
N_COPIES = 60
N_FRESH = 60

WORKCLASS = ["Private", "Self-emp", "Federal-gov", "Local-gov", "State-gov"]
EDUCATION = ["Bachelors", "HS-grad", "Masters", "Some-college", "Doctorate", "Assoc"]


def _draw(rng: np.random.Generator, n: int) -> pd.DataFrame:
    table = pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "workclass": rng.choice(WORKCLASS, n),
            "fnlwgt": rng.integers(20_000, 900_000, n),
            "education": rng.choice(EDUCATION, n),
            "hours": rng.integers(10, 80, n),
            "capital_gain": np.where(rng.random(n) < 0.85, 0, rng.integers(100, 20_000, n)),
            "score": np.round(rng.normal(50.0, 12.0, n), 3),
            "sex": rng.choice(["Female", "Male"], n),
            "income": rng.choice(["<=50K", ">50K"], n, p=[0.7, 0.3]),
        }
    )
    # every category appears in the first rows, so a holdout never holds one unseen in training
    table.loc[: len(WORKCLASS) - 1, "workclass"] = WORKCLASS
    table.loc[: len(EDUCATION) - 1, "education"] = EDUCATION
    return table


def base_tables() -> dict[str, pd.DataFrame]:
    """``train``, ``holdout`` and ``synthetic`` (copies of training rows 0..N_COPIES-1, then holdout rows)."""
    rng = np.random.default_rng(12)
    train = _draw(rng, N_TRAIN)
    train.loc[N_TRAIN - 1, "workclass"] = SECRET  # outside the copied rows: never in the synthetic table
    holdout = _draw(rng, N_TRAIN)
    synthetic = pd.concat([train.iloc[:N_COPIES], holdout.iloc[:N_FRESH]], ignore_index=True)
    return {"train": train, "holdout": holdout, "synthetic": synthetic}


# --------------------------------------------------------------------------- variants
def _set(table: pd.DataFrame, row: int, col: str, value) -> pd.DataFrame:
    out = table.copy()
    if isinstance(value, float) and pd.api.types.is_integer_dtype(out[col].dtype):
        out[col] = out[col].astype(np.float64)
    elif isinstance(value, str) and not pd.api.types.is_object_dtype(out[col].dtype):
        out[col] = out[col].astype(object)
    out.loc[row, col] = value
    return out


def _scaled(table: pd.DataFrame, col: str, factor: float) -> pd.DataFrame:
    out = table.copy()
    out[col] = out[col].astype(np.float64) * factor
    return out


def _columns(role: str, cols: list[str]) -> Callable[[dict[str, pd.DataFrame]], pd.DataFrame]:
    return lambda t: t[role][cols]


def _identical(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([t["train"].iloc[[0]]] * 40, ignore_index=True)


def _duplicated_train(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    train = t["train"].copy()
    train.iloc[1] = train.iloc[0]  # rows 0 and 1 identical: a copy of either has d1 = d2 = 0
    train.iloc[3] = train.iloc[2]
    return train


#: variant name -> (role, function of the base tables). The role says which input it replaces.
VARIANTS: dict[str, tuple[str, Callable[[dict[str, pd.DataFrame]], pd.DataFrame]]] = {
    # group 1: extreme magnitudes
    "train_1e160": ("train", lambda t: _set(t["train"], N_COPIES + 5, "fnlwgt", 1e160)),
    "train_1e308": ("train", lambda t: _set(t["train"], N_COPIES + 5, "fnlwgt", 1e308)),
    "train_neg_1e308": ("train", lambda t: _set(t["train"], N_COPIES + 5, "score", -1e308)),
    "synthetic_1e20": ("synthetic", lambda t: _set(t["synthetic"], N_COPIES + 3, "fnlwgt", 1e20)),
    "synthetic_1e308": ("synthetic", lambda t: _set(t["synthetic"], N_COPIES + 3, "fnlwgt", 1e308)),
    "train_scaled_1e12": ("train", lambda t: _scaled(t["train"], "fnlwgt", 1e12)),
    "synthetic_scaled_1e12": ("synthetic", lambda t: _scaled(t["synthetic"], "fnlwgt", 1e12)),
    "train_tiny_1e-300": ("train", lambda t: _scaled(t["train"], "score", 1e-300)),
    "synthetic_tiny_1e-300": ("synthetic", lambda t: _scaled(t["synthetic"], "score", 1e-300)),
    # the value domain's edges (0 or 1e-100 <= |x| <= 1e15): exact, not refused
    "train_1e15": ("train", lambda t: _set(t["train"], N_COPIES + 5, "fnlwgt", 1e15)),
    "train_neg_1e15": ("train", lambda t: _set(t["train"], N_COPIES + 5, "score", -1e15)),
    "synthetic_1e15": ("synthetic", lambda t: _set(t["synthetic"], N_COPIES + 3, "fnlwgt", 1e15)),
    "train_scaled_1e9": ("train", lambda t: _scaled(t["train"], "fnlwgt", 1e9)),
    "synthetic_scaled_1e9": ("synthetic", lambda t: _scaled(t["synthetic"], "fnlwgt", 1e9)),
    "train_tiny_1e-98": ("train", lambda t: _scaled(t["train"], "score", 1e-98)),
    "synthetic_tiny_1e-98": ("synthetic", lambda t: _scaled(t["synthetic"], "score", 1e-98)),
    # group 2: duplicates and undefined ratios
    "train_identical": ("train", _identical),
    "synthetic_identical": ("synthetic", _identical),
    "train_one_row": ("train", lambda t: t["train"].iloc[[0]].reset_index(drop=True)),
    "train_two_rows": ("train", lambda t: t["train"].iloc[[0, 1]].reset_index(drop=True)),
    "train_duplicated": ("train", _duplicated_train),
    # group 3: one bad cell
    "train_forty": ("train", lambda t: _set(t["train"], 7, "age", "forty")),
    "synthetic_forty": ("synthetic", lambda t: _set(t["synthetic"], 7, "age", "forty")),
    # group 6: validation
    "synthetic_nan_numeric": ("synthetic", lambda t: _set(t["synthetic"], 4, "hours", np.nan)),
    "train_nan_numeric": ("train", lambda t: _set(t["train"], 4, "hours", np.nan)),
    "synthetic_empty_category": ("synthetic", lambda t: _set(t["synthetic"], 9, "workclass", np.nan)),
    "synthetic_unseen_category": ("synthetic", lambda t: _set(t["synthetic"], 9, "workclass", "Never-worked")),
    "synthetic_inf": ("synthetic", lambda t: _set(t["synthetic"], 11, "score", np.inf)),
    "synthetic_extra_column": ("synthetic", lambda t: t["synthetic"].assign(extra=1)),
    "synthetic_missing_column": ("synthetic", lambda t: t["synthetic"].drop(columns=["hours"])),
    "synthetic_header_only": ("synthetic", lambda t: t["synthetic"].iloc[:0]),
    "synthetic_bool_in_numeric": ("synthetic", lambda t: t["synthetic"].assign(hours=t["synthetic"].hours > 40)),
    "train_spaces_unicode": (
        "train",
        lambda t: t["train"].rename(columns={"capital_gain": "capital gain €", "hours": "heures/semaine"}),
    ),
    "synthetic_spaces_unicode": (
        "synthetic",
        lambda t: t["synthetic"].rename(columns={"capital_gain": "capital gain €", "hours": "heures/semaine"}),
    ),
    "holdout_spaces_unicode": (
        "holdout",
        lambda t: t["holdout"].rename(columns={"capital_gain": "capital gain €", "hours": "heures/semaine"}),
    ),
    "synthetic_reordered": ("synthetic", lambda t: t["synthetic"][list(reversed(t["synthetic"].columns))]),
    "synthetic_renamed_case": ("synthetic", lambda t: t["synthetic"].rename(columns={"age": "Age"})),
    "train_all_nan_column": ("train", lambda t: t["train"].assign(score=np.nan)),
    "holdout_small": ("holdout", lambda t: t["holdout"].iloc[:10].reset_index(drop=True)),
    "train_constant_column": ("train", lambda t: t["train"].assign(capital_gain=0)),
    "synthetic_constant_column": ("synthetic", lambda t: t["synthetic"].assign(capital_gain=0)),
    "holdout_constant_column": ("holdout", lambda t: t["holdout"].assign(capital_gain=0)),
    # one kind of column only, one column
    **{
        f"{role}_{name}": (role, _columns(role, cols))
        for role in ("train", "synthetic", "holdout")
        for name, cols in (
            ("only_categorical", ["workclass", "education", "sex", "income"]),
            ("only_numerical", ["age", "fnlwgt", "hours", "capital_gain", "score"]),
            ("one_column", ["score"]),
        )
    },
    # group 4: degenerate evaluations
    "members_one": ("train", lambda t: t["train"].iloc[[0]].reset_index(drop=True)),
    "non_members_one": ("holdout", lambda t: t["holdout"].iloc[[0]].reset_index(drop=True)),
    "members_ten": ("train", lambda t: t["train"].iloc[:10].reset_index(drop=True)),
    "non_members_ten": ("holdout", lambda t: t["holdout"].iloc[:10].reset_index(drop=True)),
    "holdout_same_as_train": ("holdout", lambda t: t["train"]),
}
