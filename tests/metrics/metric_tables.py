"""Tables for the quality-metric tests: Adult and Shoppers read straight from the shared CSVs.

A "synthetic" table here is a *perturbed resample* of the real one (:func:`perturbed_resample`):
rows drawn with replacement, numerical values jittered by a fraction of their std (and rounded
back for integer columns), and a share of categorical cells replaced by a random category of
that column. It has the right columns and realistic imperfections, which is all the metric
comparisons need.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education.num", "marital.status", "occupation",
    "relationship", "race", "sex", "capital.gain", "capital.loss", "hours.per.week", "native.country", "income",
]  # fmt: skip
ADULT_NUM = ["age", "fnlwgt", "education.num", "capital.gain", "capital.loss", "hours.per.week"]


def load_adult(data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    kw = dict(header=None, names=ADULT_COLUMNS, skipinitialspace=True)
    train = pd.read_csv(data_dir / "adult" / "adult.data", **kw)
    test = pd.read_csv(data_dir / "adult" / "adult.test", skiprows=1, **kw)
    test["income"] = test["income"].str.rstrip(".")
    cat = [c for c in ADULT_COLUMNS if c not in ADULT_NUM]
    schema = Schema(tuple(ADULT_COLUMNS), tuple(ADULT_NUM), tuple(cat), "income", "binclass", "adult")
    return train, test, schema


def load_shoppers(data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    df = pd.read_csv(data_dir / "shoppers" / "online_shoppers_intention.csv")
    split = pd.read_csv(data_dir / "shoppers" / "split_tabcutmix_seed82.csv")
    train = df.iloc[split.loc[split["split"] == "train", "row"].to_numpy()].reset_index(drop=True)
    test = df.iloc[split.loc[split["split"] == "test", "row"].to_numpy()].reset_index(drop=True)
    cols = list(df.columns)
    num = cols[:10]
    cat = cols[10:]
    schema = Schema(tuple(cols), tuple(num), tuple(cat), "Revenue", "binclass", "shoppers")
    return train, test, schema


def perturbed_resample(
    df: pd.DataFrame, schema: Schema, n: int | None = None, seed: int = 0, noise: float = 0.1, flip: float = 0.05
) -> pd.DataFrame:
    """Resample ``df`` with replacement and perturb it (module docstring)."""
    rng = np.random.default_rng(seed)
    n = len(df) if n is None else n
    out = df.iloc[rng.integers(0, len(df), n)].reset_index(drop=True).copy()
    for c in schema.numerical:
        v = out[c].to_numpy(np.float64)
        v = v + rng.normal(0, noise * np.nanstd(v), n)
        if pd.api.types.is_integer_dtype(df[c].dtype):
            v = np.round(v)
            out[c] = v.astype(np.int64)
        else:
            out[c] = v
    for c in schema.categorical:
        levels = df[c].dropna().unique()
        mask = rng.random(n) < flip
        vals = out[c].to_numpy(object).copy()
        vals[mask] = levels[rng.integers(0, len(levels), mask.sum())]
        out[c] = pd.Series(vals, dtype=df[c].dtype) if df[c].dtype == bool else vals
    return out


def sdmetrics_metadata(schema: Schema) -> dict:
    return {
        "columns": {
            c: {"sdtype": "numerical" if schema.kind(c) == "numerical" else "categorical"} for c in schema.columns
        }
    }
