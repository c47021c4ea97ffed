"""Load time of every registered dataset, with and without sha256 verification.

For each dataset it prints (best of ``--repeat`` runs, all measured in this run because the
machine is shared and noisy):

* ``load``: ``load_dataset(name)`` (parsing, exact floats, split, schema), seconds;
* ``baseline``: a bare ``pd.read_csv`` of the same data file(s) with pandas defaults, the
  least a user would do by hand, and ``load/baseline``;
* ``verify``: ``load_dataset(name, verify=True)``, ``verify/load``, and the sha256 rate of the
  dataset's files read from disk (``sha256_file``);
* the sha256 rate of this machine (``hashlib`` on an in-memory buffer: the ceiling of
  verification, since the files are in the page cache after the first run).

Usage: ``python benchmarks/bench_datasets.py [--data-dir DIR] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

import pandas as pd

from _paths import default_data_dir, require_data_dir
from tabmem.data.datasets import get_dataset_spec, list_datasets, load_dataset, sha256_file

# the data files a by-hand baseline reads (no split, no schema, default float parser)
BASELINE = {
    "adult": [
        ("adult.data", dict(header=None, skipinitialspace=True)),
        ("adult.test", dict(header=None, skiprows=1, skipinitialspace=True)),
    ],
    "default": [("default_of_credit_card_clients.csv", dict(header=1))],
    "shoppers": [("online_shoppers_intention.csv", {})],
    "cardio": [("cardio_train.csv", dict(sep=";"))],
    "wilt": [("wilt.csv", {})],
    "california": [("california.csv", {})],
    "casp": [("CASP.csv", {})],
}


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data_dir = require_data_dir(args.data_dir)

    buf = os.urandom(64 << 20)
    sha_rate = len(buf) / best_of(lambda: hashlib.sha256(buf).digest(), args.repeat) / 1e6
    print(f"sha256 ceiling on this machine (in-memory, 1 core): {sha_rate:,.0f} MB/s")
    load_dataset("casp", data_dir=data_dir)  # warm up imports (scikit-learn) and the page cache

    header = f"{'dataset':<11}{'MB':>6}{'rows':>9}{'load s':>9}{'baseline s':>12}{'load/base':>11}{'verify s':>10}{'verify/load':>12}{'sha MB/s':>11}"
    print(header)
    print("-" * len(header))
    for info in list_datasets(data_dir=data_dir):
        name = info.name
        spec = get_dataset_spec(name)
        local = [data_dir / name / f.path for f in spec.files if (data_dir / name / f.path).is_file()]
        mb = sum(p.stat().st_size for p in local) / 1e6
        t_load = best_of(lambda n=name: load_dataset(n, data_dir=data_dir, download=False), args.repeat)
        t_verify = best_of(lambda n=name: load_dataset(n, data_dir=data_dir, download=False, verify=True), args.repeat)
        if name in BASELINE:
            files = BASELINE[name]
            t_base = best_of(
                lambda fs=files, n=name: [pd.read_csv(data_dir / n / f, **kw) for f, kw in fs], args.repeat
            )
            base, ratio = f"{t_base:12.3f}", f"{t_load / t_base:10.2f}x"
        else:
            base, ratio = f"{'-':>12}", f"{'-':>11}"
        with_sha = [p for p in local if spec.file(str(p.relative_to(data_dir / name))).sha256]
        t_hash = best_of(lambda fs=with_sha: [sha256_file(p) for p in fs], args.repeat)
        hashed = sum(p.stat().st_size for p in with_sha) / 1e6
        rate = f"{hashed / t_hash:11,.0f}" if hashed else f"{'-':>11}"
        print(
            f"{name:<11}{mb:6.1f}{info.n_rows:9,}{t_load:9.3f}{base}{ratio}{t_verify:10.3f}{t_verify / t_load:11.2f}x{rate}"
        )
    print(
        "\nload/base: load_dataset (exactly rounded floats, split, schema, row-count checks) over a bare pd.read_csv;"
        "\nverify/load: the price of sha256-checking local files at every load (opt-in; always on for downloads)."
    )


if __name__ == "__main__":
    main()
