"""The split recipes of the papers, re-implemented exactly (see ``docs/datasets.md``).

* :func:`tabcutmix_split`: TabCutMix's 90/10 split with the legacy numpy seed 82 (default, shoppers);
* :func:`derive_tabddpm_split`: which record went to which TabDDPM split, recovered by matching the
  records against TabDDPM's ``X_num_<split>.npy`` / ``y_<split>.npy`` (wilt, california);
* :func:`split_by_map`: a stored ``row, split`` map (``split_tabddpm.csv``);
* :func:`sklearn_split`: ``train_test_split(train_size=0.8, random_state=42)`` (casp, diabetes).

Every recipe returns positions in the papers' row order and never touches a global RNG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from tabmem.data.datasets.files import DatasetFiles, load_npy, read_csv
from tabmem.errors import TabmemError

__all__ = [
    "check_split_file",
    "derive_tabddpm_split",
    "sklearn_split",
    "split_by_map",
    "tabcutmix_parts",
    "tabcutmix_split",
    "tabddpm_split_map",
]


# --------------------------------------------------------------------------- TabCutMix (seed 82)
def tabcutmix_split(
    table: pd.DataFrame, categorical: Sequence[str], *, seed: int = 82, train_fraction: float = 0.9
) -> tuple[np.ndarray, np.ndarray, int]:
    """TabCutMix's 90/10 split (``process_dataset.py`` of Fang et al. 2024, TabSyn convention).

    ``idx = arange(n)`` is shuffled in place with the legacy numpy generator seeded ``seed``;
    train = ``idx[:int(0.9 n)]``, test = the last ``n - int(0.9 n)``; when some categorical
    column lacks a category in train, the seed grows by 1 and the *already shuffled* ``idx`` is
    shuffled again. Uses a private ``RandomState`` (no global RNG side effect). Returns
    (train positions, test positions, seed used), positions in the papers' row order.
    """
    n = len(table)
    n_train = int(train_fraction * n)
    n_test = n - n_train
    idx = np.arange(n)
    full_levels = {c: table[c].nunique(dropna=False) for c in categorical}
    for attempt in range(1000):
        used = seed + attempt
        np.random.RandomState(used).shuffle(idx)
        train = idx[:n_train]
        if all(table[c].iloc[train].nunique(dropna=False) == k for c, k in full_levels.items()):
            return train.copy(), idx[n - n_test :].copy(), used
    raise TabmemError("tabcutmix_split: no seed in 1000 tries keeps every category in the training split")


def check_split_file(files: DatasetFiles, rel: str, parts: Mapping[str, np.ndarray]) -> None:
    """When the stored split map ``rel`` is present, check that the derived split agrees with it."""
    found = files.local(rel)
    if found is None:
        return
    files.path(rel)  # checksum when verify=True
    stored = read_csv(found)
    for split, positions in parts.items():
        expected = np.sort(stored.loc[stored["split"] == split, "row"].to_numpy())
        if not np.array_equal(expected, np.sort(positions)):
            raise TabmemError(
                f"{found}: its {split} rows differ from the re-derived split; the file is corrupted or stale"
            )


def tabcutmix_parts(files: DatasetFiles, table: pd.DataFrame, split_file: str) -> dict[str, pd.DataFrame]:
    """``table`` cut by :func:`tabcutmix_split` (seed 82), checked against the stored ``split_file`` if present."""
    train, test, _ = tabcutmix_split(table, files.spec.categorical, seed=82)
    check_split_file(files, split_file, {"train": train, "test": test})
    return {"train": table.iloc[train], "test": table.iloc[test]}


# --------------------------------------------------------------------------- stored split maps
def split_by_map(table: pd.DataFrame, split_map: pd.DataFrame, source: str) -> dict[str, pd.DataFrame]:
    """Cut ``table`` by a ``row, split`` map holding every record once (``source`` names it in errors)."""
    if len(split_map) != len(table) or not np.array_equal(np.sort(split_map["row"].to_numpy()), np.arange(len(table))):
        raise TabmemError(
            f"{source}: expected one line per record (rows 0..{len(table) - 1}), got {len(split_map)} lines"
        )
    out = {}
    for split in ("train", "val", "test"):
        rows = np.sort(split_map.loc[split_map["split"] == split, "row"].to_numpy())
        if len(rows):
            out[split] = table.iloc[rows]
    return out


# --------------------------------------------------------------------------- TabDDPM
def derive_tabddpm_split(
    table: pd.DataFrame,
    features: Sequence[str],
    target: str,
    arrays: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    target_offset: float = 0.0,
    decimals: int | None = 5,
    as_float32: bool = False,
) -> pd.DataFrame:
    """Map each record of ``table`` to the TabDDPM split (``X_num_<split>.npy`` / ``y_<split>.npy``).

    A record matches a split row when its features and target (minus ``target_offset``) agree,
    rounded to ``decimals`` or compared as float32 (``as_float32``: the TabDDPM California files
    are float32). Identical records are assigned one-to-one in record order. Returns a frame
    ``row, split, ambiguous`` like ``split_tabddpm.csv`` (``ambiguous``: its group of identical
    keys spans several splits, so which copy went where is arbitrary).
    """

    def keys(x: np.ndarray, y: np.ndarray) -> pd.DataFrame:
        m = np.column_stack([x, y]).astype(np.float64)
        m = m.astype(np.float32).astype(np.float64) if as_float32 else np.round(m, decimals)
        return pd.DataFrame(m, columns=[f"k{i}" for i in range(m.shape[1])])

    record_keys = keys(
        table[list(features)].to_numpy(dtype=np.float64), table[target].to_numpy(dtype=np.float64) - target_offset
    )
    key_cols = list(record_keys.columns)
    record_keys["row"] = np.arange(len(table))
    record_keys["occurrence"] = record_keys.groupby(key_cols, sort=False).cumcount()
    split_keys = []
    for split, (x, y) in arrays.items():
        k = keys(np.asarray(x), np.asarray(y).reshape(-1))
        k["split"] = split
        split_keys.append(k)
    all_split = pd.concat(split_keys, ignore_index=True)
    all_split["occurrence"] = all_split.groupby(key_cols, sort=False).cumcount()
    merged = record_keys.merge(all_split, on=[*key_cols, "occurrence"], how="left", validate="one_to_one")
    if merged["split"].isna().any() or len(all_split) != len(table):
        n_bad = int(merged["split"].isna().sum())
        raise TabmemError(
            f"TabDDPM split files ({len(all_split):,} rows) do not match the table ({len(table):,} records): "
            f"{n_bad:,} record(s) have no counterpart"
        )
    n_splits = merged.groupby(key_cols, sort=False)["split"].transform("nunique")
    merged["ambiguous"] = (n_splits > 1).astype(int)
    return merged.sort_values("row")[["row", "split", "ambiguous"]].reset_index(drop=True)


def tabddpm_split_map(
    files: DatasetFiles, table: pd.DataFrame, features: Sequence[str], target: str, **kwargs
) -> pd.DataFrame:
    """The stored ``split_tabddpm.csv`` when present, else :func:`derive_tabddpm_split` from the ``.npy`` files."""
    found = files.local("split_tabddpm.csv")
    if found is not None:
        return read_csv(files.path("split_tabddpm.csv"))
    arrays = {}
    for split in ("train", "val", "test"):
        arrays[split] = tuple(load_npy(files.path(f"tabddpm_split/{stem}_{split}.npy")) for stem in ("X_num", "y"))
    return derive_tabddpm_split(table, features, target, arrays, **kwargs)


# --------------------------------------------------------------------------- scikit-learn
def sklearn_split(table: pd.DataFrame, train_size: float = 0.8, random_state: int = 42) -> dict[str, pd.DataFrame]:
    """``train_test_split(table, train_size=0.8, random_state=42)`` (the LevAtt paper's split)."""
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(table, train_size=train_size, random_state=random_state)
    return {"train": train, "test": test}
