"""Evidence for docs/ctgan_tvae.md: CTGAN / TVAE trained on Adult on this CPU, memorization rate with the
papers' ``fang2024`` distance next to the published figures and the holdout baseline.

A script, not a study: it stops training at a wall-time budget (``--budget-min``) and resumes from a
checkpoint file, which the study engine's train step does not do; the same models as a study, at a
fixed epoch count: ``studies/memorization/*.toml``.

For each model: train on the full Adult training table (32,561 rows) with ``--preset`` (default ``paper``,
the reference code's behaviour; ``none`` = the class defaults, which the figures in docs/ctgan_tvae.md's
evidence section used) for ``--epochs`` epochs (or until ``--budget-min`` minutes of wall time, whichever comes first; the epochs run
are reported), one torch thread, tracking memorization every ``--track-every`` epochs with the
``MemorizationTracker``; then sample |train| rows from the final model and score them and the real Adult
test rows (holdout baseline) with ``ReplicaDetector(distance="fang2024")``.

Usage::

    python studies/ctgan_tvae/ctgan_tvae_evidence.py --model tvae --epochs 300 --budget-min 14 --out runs/ev_tvae.json
    python studies/ctgan_tvae/ctgan_tvae_evidence.py --model ctgan --epochs 300 --budget-min 14 --out runs/ev_ctgan.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

PUBLISHED = {"ctgan": 21.68, "tvae": 30.78}  # % at 300 epochs (TabCutMix paper, Table 9; ctgan package)


def default_data_dir() -> str | None:
    """``$TABMEM_DATA_DIR``, else ``../shared/datasets`` next to the checkout, else None (the dataset cache)."""
    import os
    from pathlib import Path

    sibling = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return os.environ.get("TABMEM_DATA_DIR") or (str(sibling) if sibling.is_dir() else None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["ctgan", "tvae"], required=True)
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--budget-min", type=float, default=14.0)
    ap.add_argument("--track-every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--preset", default="paper", help="generator preset; 'none' for the class defaults")
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    ap.add_argument("--out", default=None)
    ap.add_argument("--save", default=None, help="save the trained model here")
    ap.add_argument("--checkpoint", default=None, help="checkpoint file (written every epoch)")
    ap.add_argument("--resume", action="store_true", help="resume from --checkpoint")
    args = ap.parse_args()
    torch.set_num_threads(1)

    from tabmem.data.datasets import load_dataset
    from tabmem.generators import LambdaCallback, get_generator
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.memorization.tracker import MemorizationTracker

    ds = load_dataset("adult", data_dir=args.data_dir)
    train, test, schema = ds.train, ds.test, ds.schema
    preset = None if args.preset.lower() == "none" else args.preset
    gen = get_generator(args.model, preset=preset, epochs=args.epochs, random_state=args.seed)
    tracker = MemorizationTracker(
        every=args.track_every,
        random_state=args.seed,
        n_jobs=1,
        path=args.checkpoint + ".track" if args.checkpoint else None,
    )
    t_start = time.perf_counter()
    deadline = t_start + args.budget_min * 60

    def stop_on_budget(g, epoch, logs):
        print(
            f"epoch {epoch:3d}  loss {logs['loss']:.4f}  {logs['epoch_time']:.2f}s  mem_rate {logs.get('mem_rate', float('nan'))}",
            flush=True,
        )
        return time.perf_counter() > deadline

    fit_kw = {}
    if args.checkpoint:  # checkpoint every epoch; --resume continues a run stopped on its time budget
        fit_kw = {"checkpoint_every": 1, "checkpoint_path": args.checkpoint}
        if args.resume:
            fit_kw["resume_from"] = args.checkpoint
    gen.fit(train, schema, callbacks=[tracker, LambdaCallback(on_epoch_end=stop_on_budget, order=20)], **fit_kw)
    wall = time.perf_counter() - t_start
    hist = gen.history_
    epoch_time = float(sum(h["epoch_time"] for h in hist))
    rows_per_epoch = (len(train) // gen.batch_size) * gen.batch_size if args.model == "ctgan" else len(train)
    t = time.perf_counter()
    synth = gen.sample(len(train), random_state=args.seed + 1)
    sample_s = time.perf_counter() - t
    det = ReplicaDetector("fang2024", n_jobs=1).fit(train, schema)
    res = det.score(synth)
    hold = det.score(test, unseen="mismatch", name="holdout")

    def max_tvd(synthetic) -> float:
        gaps = []
        for c in schema.categorical:
            p = train[c].value_counts(normalize=True)
            q = synthetic[c].value_counts(normalize=True).reindex(p.index, fill_value=0.0)
            gaps.append(0.5 * float((p - q).abs().sum()))
        return max(gaps)

    extra = {}
    if args.model == "tvae":  # same model, the paper's decoding (draw categories from the softmax)
        gen.set_params(discrete_sampling="sample")
        alt = gen.sample(len(train), random_state=args.seed + 1)
        gen.set_params(discrete_sampling="argmax")
        extra = {
            "memorization_rate_pct_softmax_decoding": 100 * det.score(alt).memorization_rate,
            "max_marginal_tvd_softmax_decoding": max_tvd(alt),
        }
    if args.save:
        gen.save(args.save)
    out = {
        "model": args.model,
        "max_marginal_tvd": max_tvd(synth),
        **extra,
        "epochs_run": gen.epoch_,
        "epochs_requested": args.epochs,
        "stopped_on_budget": bool(gen.stopped_early_),
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in gen.get_params().items()},
        "n_train": len(train),
        "wall_seconds_fit": wall,
        "train_rows_per_s": rows_per_epoch * len(hist) / epoch_time,
        "seconds_per_epoch": epoch_time / len(hist),
        "sample_rows_per_s": len(train) / sample_s,
        "memorization_rate_pct": 100 * res.memorization_rate,
        "mem_auc": res.mem_auc,
        "holdout_memorization_rate_pct": 100 * hold.memorization_rate,
        "published_pct_300_epochs": PUBLISHED[args.model],
        "tracked": tracker.history_[["epoch", "memorization_rate", "mem_auc"]].to_dict("records"),
        "final_loss": hist[-1]["loss"],
    }
    print(json.dumps(out, indent=2))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
