"""Cost of shadow generators: shadows per minute on this CPU, and the papers' TabDDPM preset.

Measures, in CPU seconds of one torch thread (``time.process_time``: on a shared machine wall time
mostly measures the other users):

* the ``small`` preset on ``--n`` Adult rows: CPU seconds per epoch and per |train| sampled rows,
  hence CPU minutes per shadow at ``--epochs`` and shadows per CPU-minute;
* the ``paper`` preset (layers 1024-2048-2048-1024, batch 4096, 1,000 timesteps) on the full Adult
  training split: CPU seconds per optimizer step, hence one shadow of 100k steps (12,500 epochs, the
  papers' budget) on this CPU; and a GPU estimate from its FLOPs at a stated sustained throughput.

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_shadows.py --epochs 1000 --gpu-tflops 50
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _paths import default_data_dir


def cpu_time(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=1000, help="epochs of the small-preset shadows")
    ap.add_argument("--measure-epochs", type=int, default=100)
    ap.add_argument("--paper-steps", type=int, default=3)
    ap.add_argument("--paper-total-steps", type=int, default=100_000)
    ap.add_argument("--gpu-tflops", type=float, default=50.0, help="assumed sustained GPU throughput (TFLOP/s)")
    ap.add_argument("--gpu-step-overhead-ms", type=float, default=2.0, help="assumed per-step launch overhead")
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    from tabmem.data.datasets import load_dataset
    from tabmem.generators import get_generator

    ds = load_dataset("adult", data_dir=args.data_dir)
    perm = np.random.default_rng(0).permutation(len(ds.train))
    train = ds.train.iloc[perm[: args.n]].reset_index(drop=True)

    one = get_generator("tabddpm", preset="small", epochs=1)
    fixed = cpu_time(lambda: one.fit(train, ds.schema, random_state=0))  # build + one epoch
    small = get_generator("tabddpm", preset="small", epochs=args.measure_epochs)
    fit_s = cpu_time(lambda: small.fit(train, ds.schema, random_state=0))
    sample_s = cpu_time(lambda: small.sample(args.n, random_state=0))
    per_epoch = (fit_s - fixed) / (args.measure_epochs - 1)
    shadow_min = (fixed + per_epoch * (args.epochs - 1) + sample_s) / 60
    print(
        f"small preset, {args.n} rows: {per_epoch * 1000:.1f} CPU-ms/epoch ({small.steps_per_epoch_} steps; "
        f"build + first epoch {fixed:.1f} CPU-s), "
        f"sampling {args.n} rows {sample_s:.1f} CPU-s -> one {args.epochs}-epoch shadow = {shadow_min:.2f} CPU-min, "
        f"{1 / shadow_min:.2f} shadows per CPU-minute"
    )

    paper = get_generator("tabddpm", preset="paper", dataset="adult", epochs=1)
    full = ds.train
    steps = args.paper_steps
    paper.set_params(epochs=1, batch_size=4096)
    # one epoch of the full split = ceil(n / 4096) steps; time the first `steps` of them
    sub = full.iloc[: 4096 * steps].reset_index(drop=True)
    t = cpu_time(lambda: paper.fit(sub, ds.schema, random_state=0))
    per_step = t / paper.steps_per_epoch_
    flops_step = paper.flops_per_train_row() * 4096
    print(
        f"paper preset: {per_step:.2f} CPU-s per optimizer step (batch 4096, {flops_step / 1e9:.0f} GFLOP, "
        f"{flops_step / per_step / 1e9:.1f} GFLOP/s) -> {args.paper_total_steps:,} steps = "
        f"{per_step * args.paper_total_steps / 3600:.0f} CPU-hours per shadow"
    )
    sample_flops = paper.flops_per_sample_row() * len(full)
    gpu_s = args.paper_total_steps * (flops_step / (args.gpu_tflops * 1e12) + args.gpu_step_overhead_ms / 1e3)
    gpu_s += sample_flops / (args.gpu_tflops * 1e12)
    print(
        f"GPU estimate at {args.gpu_tflops:g} TFLOP/s sustained and {args.gpu_step_overhead_ms:g} ms/step overhead: "
        f"{gpu_s / 60:.0f} min per paper-preset shadow (training {args.paper_total_steps * flops_step / 1e15:.1f} PFLOP, "
        f"sampling {len(full):,} rows x 1,000 steps {sample_flops / 1e15:.2f} PFLOP); 16 shadows = {16 * gpu_s / 3600:.1f} GPU-hours"
    )


if __name__ == "__main__":
    main()
