"""Float64 brute-force references for the replica distances (naive per-row loops, as in the papers' code)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema, canonical_categories


def _cats(df: pd.DataFrame, schema: Schema) -> np.ndarray:
    if not schema.categorical:
        return np.zeros((len(df), 0), dtype=object)
    return np.column_stack([canonical_categories(df[c]) for c in schema.categorical])


def _nums(df: pd.DataFrame, schema: Schema) -> np.ndarray:
    if not schema.numerical:
        return np.zeros((len(df), 0))
    return np.column_stack([pd.to_numeric(df[c]).to_numpy(dtype=float) for c in schema.numerical])


def norm(diff: np.ndarray) -> np.ndarray:
    """Row-wise Euclidean norm that neither overflows nor underflows (``hypot``, one pair at a time)."""
    if diff.shape[1] == 0:
        return np.zeros(diff.shape[0])
    return np.hypot.reduce(diff, axis=1)


def distances_fang2024(x_num, x_cat, t_num, t_cat, m):
    """The papers' custom_distance for one synthetic row against all training rows (no NaN)."""
    e = norm(t_num - x_num)
    lo, hi = e.min(), e.max()
    ehat = (e - lo) / (hi - lo) if hi > lo else e - lo
    h = (t_cat != x_cat).sum(axis=1)
    return (ehat + h) / m


def distances_gower(x_num, x_cat, t_num, t_cat, m, rng, lo):
    part = np.zeros(len(t_num))
    for c in range(t_num.shape[1]):
        a, b = x_num[c], t_num[:, c]
        if rng[c] > 0:  # on range-scaled values (x - min) / range, as documented
            d = np.minimum(np.abs((a - lo[c]) / rng[c] - (b - lo[c]) / rng[c]), 1.0)
        else:
            d = np.zeros(len(b))
        if np.isnan(a):
            d = np.where(np.isnan(b), 0.0, 1.0)
        else:
            d = np.where(np.isnan(b), 1.0, d)
        part += d
    return (part + (t_cat != x_cat).sum(axis=1)) / m


def distances_l2(x_num, x_cat, t_num, t_cat, mean, std):
    z = (x_num - mean) / std
    tz = (t_num - mean) / std
    mism = (t_cat != x_cat).astype(float) / np.sqrt(2.0)  # one-hot/sqrt(2): a mismatch adds exactly 1 to d^2
    return norm(np.concatenate([tz - z, mism, mism], axis=1))


def all_distances(train: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, distance: str, std=None, mean=None):
    """Float64 distances of every synthetic row to every training row (n_syn x n_train)."""
    t_num, t_cat = _nums(train, schema), _cats(train, schema)
    s_num, s_cat = _nums(synthetic, schema), _cats(synthetic, schema)
    m = schema.n_columns
    lo = np.nanmin(t_num, axis=0) if t_num.shape[1] else np.zeros(0)
    rng = np.nanmax(t_num, axis=0) - lo if t_num.shape[1] else np.zeros(0)
    if mean is None:
        mean = t_num.mean(axis=0) if t_num.shape[1] else np.zeros(0)
    if std is None:
        std = t_num.std(axis=0) if t_num.shape[1] else np.zeros(0)
        std = np.where(std > 0, std, 1.0)
    std = np.asarray(std, dtype=float)
    rows = []
    for i in range(len(synthetic)):
        if distance == "fang2024":
            rows.append(distances_fang2024(s_num[i], s_cat[i], t_num, t_cat, m))
        elif distance == "gower":
            rows.append(distances_gower(s_num[i], s_cat[i], t_num, t_cat, m, rng, lo))
        else:
            rows.append(distances_l2(s_num[i], s_cat[i], t_num, t_cat, mean, std))
    return np.array(rows).reshape(len(synthetic), len(train))


def brute_force(train: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, distance: str, std=None, mean=None):
    """(nn1, nn2, d1, d2, ratio) for every synthetic row, lowest index on ties; ``.attrs["all"]`` keeps all distances."""
    dist = all_distances(train, synthetic, schema, distance, std, mean)
    out = []
    for d in dist:
        i1 = int(np.argmin(d))
        d1 = d[i1]
        d = d.copy()
        d[i1] = np.inf
        i2 = int(np.argmin(d))
        d2 = d[i2]
        ratio = np.nan if (d1 == 0 and d2 == 0) else d1 / d2
        out.append((i1, i2, d1, d2, ratio))
    frame = pd.DataFrame(out, columns=["nn1", "nn2", "d1", "d2", "ratio"])
    frame.attrs["all"] = dist
    return frame
