"""On-disk layout of per-record memorization tracking, shared by the tracker that writes it and
the dynamics analysis that reads it (so neither imports the other).

A tracking directory holds ``tracker.json`` (settings, |train|), ``epochs.csv`` (one line per
tracked epoch, :data:`EPOCH_COLUMNS`) and ``records/epoch=EEEEEE.parquet`` (the non-zero
per-record entries of that epoch: ``train_row``, ``replica_count``, ``mem_auc``). Only row
positions are stored, never training values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import read_frame, read_json, reading
from tabmem.errors import TabmemError

__all__ = ["EPOCH_COLUMNS", "RECORD_COLUMNS", "load_tracking", "concat_records"]

EPOCH_COLUMNS = [
    "epoch",
    "n_samples",
    "memorization_rate",
    "mem_auc",
    "mem_auc_trapz10",
    "n_replicas",
    "n_records_memorized",
    "sample_seconds",
    "score_seconds",
    "tracker_seconds",
]
RECORD_COLUMNS = ["epoch", "train_row", "replica_count", "mem_auc"]


def load_tracking(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Read a tracking directory: (epochs table, long records table, tracker.json settings)."""
    p = Path(path)
    meta_path = p / "tracker.json"
    if not meta_path.is_file():
        raise TabmemError(f"{str(p)!r} holds no memorization tracking (tracker.json missing)")
    meta = read_json(meta_path, require=("n_train",))
    ep_path = p / "epochs.csv"
    epochs = read_frame(ep_path) if ep_path.is_file() else pd.DataFrame(columns=EPOCH_COLUMNS)
    with reading(ep_path):
        tracked = set(epochs["epoch"].astype(int)) if len(epochs) else set()
    recs = {int(f.stem.split("=")[1]): read_frame(f) for f in sorted((p / "records").glob("epoch=*.parquet"))}
    recs = {e: r for e, r in recs.items() if e in tracked}
    return epochs, concat_records(recs), meta


def concat_records(recs: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """One long table (:data:`RECORD_COLUMNS`) from per-epoch record frames."""
    if not recs:
        dtypes = ["int64", "int64", "int32", "float64"]
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(RECORD_COLUMNS, dtypes)})
    frames = [r.assign(epoch=np.int64(e))[RECORD_COLUMNS] for e, r in sorted(recs.items())]
    return pd.concat(frames, ignore_index=True)
