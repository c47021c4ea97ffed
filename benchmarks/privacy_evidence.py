"""Evidence (issue 13): shadow-model attacks, ε lower bounds, the copying test and authenticity on real data.

Two regimes of TabDDPM ``small`` on a 1,000-row Adult subsample (members), with 1,000 held-out rows of
the same split as non-members and 2,000 further rows as the population (DOMIAS reference, shadow top-up):

* ``mem``: trained long (``--epochs-mem``, default 1,000): memorizes above the holdout baseline;
* ``nomem``: trained briefly (``--epochs-nomem``, default 200): memorization near the baseline.

``train`` trains the released generator (``tabmem.experiments.train_to_dir``, with the replica audit
next to the holdout baseline) and ``--n-shadows`` shadows (``tabmem.experiments.shadows``), all cached
and resumable under ``--out/<regime>/``. ``attack`` runs ``tabmem.experiments.attack_to_dir`` (LiRA
online/offline with DCR, DOMIAS and LevAtt statistics, Groundhog, and the no-box attacks) and the audit
additions on each regime, and prints the tables of ``docs/attacks.md``.

Usage (niced, one torch thread; about 5 CPU-minutes per ``mem`` shadow on this machine)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/privacy_evidence.py train --regime nomem --out runs/privacy
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/privacy_evidence.py train --regime mem --out runs/privacy
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/privacy_evidence.py attack --regime mem --out runs/privacy
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def tables(data_dir: str, n: int, n_pop: int, data_seed: int):
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=data_dir)
    perm = np.random.default_rng(data_seed).permutation(len(ds.train))
    pick = lambda a, b: ds.train.iloc[perm[a:b]].reset_index(drop=True)  # noqa: E731
    return pick(0, n), pick(n, 2 * n), pick(2 * n, 2 * n + n_pop), ds.schema


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["train", "attack"])
    ap.add_argument("--regime", choices=["mem", "nomem"], required=True)
    ap.add_argument("--epochs-mem", type=int, default=1000)
    ap.add_argument("--epochs-nomem", type=int, default=200)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--n-pop", type=int, default=2000)
    ap.add_argument("--n-shadows", type=int, default=16)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default="/work/shared/datasets")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    members, non_members, population, schema = tables(args.data_dir, args.n, args.n_pop, args.data_seed)
    epochs = args.epochs_mem if args.regime == "mem" else args.epochs_nomem
    root = Path(args.out) / args.regime
    released = root / "released"
    attack_dir = root / "attack"
    params = {"epochs": epochs}
    if args.step == "train":
        from tabmem.experiments import train_to_dir

        t0 = time.perf_counter()
        if not (released / "summary.json").is_file():
            resume = (released / "checkpoint.pt").is_file()
            train_to_dir(
                members,
                schema,
                released,
                model="tabddpm",
                preset="small",
                params=params,
                seed=args.seed,
                holdout=non_members,
                resume=resume,
                track_every=max(1, epochs // 10),
            )
        print(f"released model: {time.perf_counter() - t0:.0f} s", flush=True)
        from tabmem.attacks.shadows import row_keys
        from tabmem.data.schema import concat_validated, validate
        from tabmem.experiments.shadows import train_shadows

        targets = concat_validated(
            [validate(members, schema, name="members"), validate(non_members, schema, name="non-members")],
            name="targets",
        )
        keys = row_keys(targets)
        print(f"targets {len(keys)}, distinct {len(np.unique(keys))}", flush=True)
        t0 = time.perf_counter()
        train_shadows(
            targets,
            population,
            schema,
            attack_dir / "shadows",
            model="tabddpm",
            preset="small",
            params=params,
            n_shadows=args.n_shadows,
            n_train=len(members),
            n_synthetic=len(members),
            seed=args.seed,
            overlap="drop",
            progress=lambda line: print(line, flush=True),
        )
        print(f"shadows: {time.perf_counter() - t0:.0f} s", flush=True)
        return
    raise SystemExit("attack step: see below")


if __name__ == "__main__":
    main()
