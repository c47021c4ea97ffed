"""Evidence: find a CPU-scale regime where a generator memorizes clearly above the
holdout baseline.

A script, not a study: it scores one training run at every ``--eval-every`` epochs (a curve over
epochs from one model), while a study cell samples and audits the final model only.

Draws ``--n-train`` training rows and ``--n-train`` holdout rows (disjoint, same population: both from
the dataset's training split, data seed ``--data-seed``), trains ``--model`` for ``--epochs`` epochs on
one torch thread and, every ``--eval-every`` epochs, samples |train| rows and scores them with each
``--distance`` against the training rows, next to the holdout rows scored the same way. Writes one
CSV line per (epoch, distance): rate, holdout rate, excess and a bootstrap 95% CI of the excess
(synthetic and holdout flags resampled independently, 2,000 draws).

Usage::

    python studies/mitigation/mitigation_regime.py --dataset adult --n-train 1000 --epochs 3000 --eval-every 250 \
        --seed 0 --out studies_out/regime_adult.csv
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch


def default_data_dir() -> str | None:
    """``$TABMEM_DATA_DIR``, else ``../shared/datasets`` next to the checkout, else None (the dataset cache)."""
    import os
    from pathlib import Path

    sibling = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return os.environ.get("TABMEM_DATA_DIR") or (str(sibling) if sibling.is_dir() else None)


def bootstrap_excess(syn: np.ndarray, hold: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% CI of mean(syn) - mean(hold), both resampled with replacement."""
    rng = np.random.default_rng(seed)
    a = rng.choice(syn.astype(float), size=(n_boot, len(syn))).mean(axis=1)
    b = rng.choice(hold.astype(float), size=(n_boot, len(hold))).mean(axis=1)
    lo, hi = np.percentile(a - b, [2.5, 97.5])
    return float(lo), float(hi)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--model", default="tabddpm")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--epochs", type=int, default=3000)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--distance", nargs="+", default=["fang2024", "gower"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)

    from tabmem.data.datasets import load_dataset
    from tabmem.generators import LambdaCallback, get_generator
    from tabmem.memorization.replicas import ReplicaDetector

    ds = load_dataset(args.dataset, data_dir=args.data_dir)
    perm = np.random.default_rng(args.data_seed).permutation(len(ds.train))
    train = ds.train.iloc[perm[: args.n_train]].reset_index(drop=True)
    hold = ds.train.iloc[perm[args.n_train : 2 * args.n_train]].reset_index(drop=True)
    dets = {d: ReplicaDetector(d, n_jobs=1).fit(train, ds.schema) for d in args.distance}
    hold_flags = {
        d: det.score(hold, name="holdout", unseen="mismatch").table["is_replica"].to_numpy() for d, det in dets.items()
    }
    rows: list[dict] = []
    t0 = time.perf_counter()

    def evaluate(gen, epoch, logs):
        if epoch % args.eval_every and epoch != args.epochs:
            return None
        syn = gen.sample(len(train), random_state=int(np.random.SeedSequence([args.seed, epoch]).generate_state(1)[0]))
        for d, det in dets.items():
            flags = det.score(syn).table["is_replica"].to_numpy()
            lo, hi = bootstrap_excess(flags, hold_flags[d], seed=epoch)
            rows.append(
                {
                    "dataset": args.dataset,
                    "model": args.model,
                    "n_train": args.n_train,
                    "seed": args.seed,
                    "epoch": epoch,
                    "distance": d,
                    "rate": flags.mean(),
                    "holdout_rate": hold_flags[d].mean(),
                    "excess": flags.mean() - hold_flags[d].mean(),
                    "excess_lo": lo,
                    "excess_hi": hi,
                    "loss": logs.get("loss"),
                    "wall_s": time.perf_counter() - t0,
                }
            )
            r = rows[-1]
            print(
                f"{args.dataset} {args.model} seed {args.seed} epoch {epoch} {d}: rate {r['rate']:.3f} "
                f"holdout {r['holdout_rate']:.3f} excess {r['excess']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({r['wall_s']:.0f}s)",
                flush=True,
            )
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(args.out, index=False)
        return None

    gen = get_generator(args.model, preset=args.preset, epochs=args.epochs)
    gen.fit(train, ds.schema, callbacks=[LambdaCallback(evaluate)], random_state=args.seed)


if __name__ == "__main__":
    main()
