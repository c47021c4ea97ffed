"""How much of the Adult memorization rate comes from output post-processing (rounding, clipping)?

A script, not a study: it samples a saved model twice from the same latent draws with the output
post-processing switched off, a generator internal no step exposes.

Loads models saved by ``ctgan_tvae_evidence.py`` (``--checkpoint``/``--save`` files), samples |train| rows
twice from the same latent draws: as ``sample()`` returns them (integer columns rounded, numericals clipped
to the training range, as tabmem and SDV do) and raw (no rounding, no clipping, as the ``ctgan`` package's
defaults return them), and scores both with ``ReplicaDetector("fang2024")``.

Usage::

    python studies/ctgan_tvae/ctgan_tvae_rounding.py runs/ev_tvae2.pt runs/ev_ctgan3.pt
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch


def default_data_dir() -> str | None:
    """``$TABMEM_DATA_DIR``, else ``../shared/datasets`` next to the checkout, else None (the dataset cache)."""
    import os
    from pathlib import Path

    sibling = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return os.environ.get("TABMEM_DATA_DIR") or (str(sibling) if sibling.is_dir() else None)


def raw_sample(gen, n: int, seed: int, *, post: bool) -> pd.DataFrame:
    norm = gen.normalizer_
    norm.round_integers, norm.clip = post, post
    modules = gen._torch_modules()
    for m in modules:
        m.eval()
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(), torch.inference_mode():
        torch.manual_seed(seed)
        part = gen._sample_clean(n, g)
    norm.round_integers, norm.clip = True, True
    for c in gen.schema_.categorical:
        part[c] = gen.encoder_.categories_[c][part[c].to_numpy()]
    return part


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="saved generators (ctgan_tvae_evidence.py --checkpoint/--save)")
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    args = ap.parse_args()
    torch.set_num_threads(1)
    from tabmem.data.datasets import load_dataset
    from tabmem.generators import load_generator
    from tabmem.memorization.replicas import ReplicaDetector

    ds = load_dataset("adult", data_dir=args.data_dir)
    det = ReplicaDetector("fang2024", n_jobs=1).fit(ds.train, ds.schema)
    for path in args.models:
        gen = load_generator(path)
        n = len(ds.train)
        rates = {}
        for post in (True, False):
            synth = raw_sample(gen, n, seed=1, post=post)
            rates[post] = 100 * det.score(synth).memorization_rate
        print(
            f"{gen.name} ({gen.epoch_} epochs): memorization rate {rates[True]:.2f}% rounded+clipped (tabmem), "
            f"{rates[False]:.2f}% raw (no rounding, no clipping), same latent draws"
        )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
