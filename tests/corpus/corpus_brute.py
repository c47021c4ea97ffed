"""Brute-force references for the corpus checks: plain Python loops, overflow-free, no tabmem code.

* :func:`fang2024_ratios`: the papers' distance (Fang et al. 2024 code: raw-unit Euclidean
  distance of the numericals, min-max normalised per synthetic row over the training rows, plus
  the number of categorical mismatches, over the number of columns) and ``d1/d2``. The Euclidean
  norm is :func:`math.hypot` of the differences (no overflow at any finite magnitude whose
  differences are finite); the normalisation divides differences of norms, never squares.
* :func:`exact_copies`: synthetic rows equal to some training row in every column.
* :func:`rare_value_rows`: rows holding a training value that occurs in fewer than ``k``
  training rows (per column; missing values are not values).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

NUMERICAL = ["age", "fnlwgt", "hours", "capital_gain", "score"]
CATEGORICAL = ["workclass", "education", "sex", "income"]


def _cell(value, numerical: bool):
    if numerical:
        return float(value)
    if isinstance(value, float) and math.isnan(value):
        return "<NA>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _rows(table: pd.DataFrame, numerical: list[str], categorical: list[str]) -> list[tuple[list, list]]:
    return [
        ([_cell(r[c], True) for c in numerical], [_cell(r[c], False) for c in categorical]) for _, r in table.iterrows()
    ]


def fang2024_ratios(
    train: pd.DataFrame, synthetic: pd.DataFrame, numerical=NUMERICAL, categorical=CATEGORICAL
) -> list[float]:
    """``d1/d2`` per synthetic row (NaN when d1 = d2 = 0 or there is one training row)."""
    t_rows = _rows(train, numerical, categorical)
    m = len(numerical) + len(categorical)
    out = []
    for x_num, x_cat in _rows(synthetic, numerical, categorical):
        e = [math.hypot(*[a - b for a, b in zip(x_num, t_num)]) for t_num, _ in t_rows]
        lo, hi = min(e), max(e)
        d = []
        for j, (_, t_cat) in enumerate(t_rows):
            ehat = (e[j] - lo) / (hi - lo) if hi > lo else e[j] - lo
            d.append((ehat + sum(a != b for a, b in zip(x_cat, t_cat))) / m)
        d.sort()
        if len(d) < 2 or (d[0] == 0 and d[1] == 0):
            out.append(float("nan"))
        else:
            out.append(d[0] / d[1])
    return out


def memorization_rate(ratios: list[float], threshold: float = 1 / 3) -> float:
    return sum(1 for r in ratios if r == r and r < threshold) / len(ratios)


def exact_copies(
    train: pd.DataFrame, synthetic: pd.DataFrame, numerical=NUMERICAL, categorical=CATEGORICAL
) -> list[bool]:
    keys = {(tuple(n), tuple(c)) for n, c in _rows(train, numerical, categorical)}
    return [(tuple(n), tuple(c)) in keys for n, c in _rows(synthetic, numerical, categorical)]


def rare_value_rows(
    train: pd.DataFrame, other: pd.DataFrame, k: int = 2, numerical=NUMERICAL, categorical=CATEGORICAL
) -> tuple[list[bool], int, int]:
    """(per row of ``other``: holds a rare training value; distinct rare values; distinct rare values in ``other``)."""
    rare: dict[str, set] = {}
    for c in [*numerical, *categorical]:
        counts: dict = {}
        for v in train[c]:
            if isinstance(v, float) and math.isnan(v):
                continue
            key = _cell(v, c in numerical)
            counts[key] = counts.get(key, 0) + 1
        rare[c] = {v for v, n in counts.items() if n < k}
    rows, seen = [], set()
    for _, r in other.iterrows():
        hit = False
        for c in rare:
            v = r[c]
            if isinstance(v, float) and math.isnan(v):
                continue
            key = _cell(v, c in numerical)
            if key in rare[c]:
                hit = True
                seen.add((c, key))
        rows.append(hit)
    return rows, sum(len(s) for s in rare.values()), len(seen)


def close(a: float, b: float, tol: float = 1e-12) -> bool:
    return bool(np.isclose(a, b, rtol=0, atol=tol))
