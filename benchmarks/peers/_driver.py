"""What every peer driver shares: read the config and the three CSV tables, time the call, write JSON.

A driver runs in its peer's own virtualenv (no tabmem there)::

    PYTHON benchmarks/peers/<peer>.py CONFIG.json OUT.json

``CONFIG.json``: ``{"train": csv, "holdout": csv, "synthetic": csv, "numerical": [...],
"categorical": [...], "seed": int}``. ``OUT.json``: ``{"seconds": the call alone, "result": ...}``
(aggregate numbers only, never rows).
"""

from __future__ import annotations

import json
import logging
import sys
import time
import warnings


def read_tables(cfg: dict):
    """(train, holdout, synthetic) as pandas DataFrames, categoricals as strings."""
    import pandas as pd

    def read(path: str):
        df = pd.read_csv(path, dtype={c: str for c in cfg["categorical"]}, keep_default_na=False, na_values=[""])
        for c in cfg["numerical"]:
            df[c] = pd.to_numeric(df[c])
        return df

    return read(cfg["train"]), read(cfg["holdout"]), read(cfg["synthetic"])


def main(run) -> None:  # noqa: ANN001
    """``run(cfg, train, holdout, synthetic) -> dict`` timed and written to argv[2]."""
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    cfg = json.loads(open(sys.argv[1]).read())
    train, holdout, synthetic = read_tables(cfg)
    t0 = time.perf_counter()
    result = run(cfg, train, holdout, synthetic)
    seconds = time.perf_counter() - t0
    with open(sys.argv[2], "w") as fh:
        json.dump({"seconds": seconds, "result": result}, fh, default=float)
