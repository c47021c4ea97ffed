"""Training, synthetic and holdout Parquet tables of N rows, as ``bench_scale.py`` builds them (``docs/scale.md``).

Usage (from the repo root; the files are outputs: write them outside the repository, never commit them)::

    python benchmarks/make_scale_tables.py 1000000 /tmp/i26

training = Adult's train split resampled to N (seed 1), synthetic = the training table resampled
(seed 2), holdout = Adult's test split resampled (seed 3), each with about half of the numerical
cells jittered by 5% of a standard deviation (``bench_replicas.noisy_resample``):
``<out>/{train,synthetic,holdout}_<N>.parquet``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replicas import noisy_resample  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("out")
    parser.add_argument("--data-dir", default=os.environ.get("TABMEM_DATA_DIR", "../shared/datasets"))
    args = parser.parse_args()
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=args.data_dir)
    train = noisy_resample(ds.train, ds.schema, args.n, seed=1)
    tables = {
        "train": train,
        "synthetic": noisy_resample(train, ds.schema, args.n, seed=2),
        "holdout": noisy_resample(ds.test, ds.schema, args.n, seed=3),
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        table.to_parquet(Path(args.out) / f"{name}_{args.n}.parquet", index=False)


if __name__ == "__main__":
    main()
