"""Generator performance: training/sampling throughput, denoiser GFLOP/s vs the matmul ceiling, tracking cost.

Prints, all measured in the same run (the machine is shared and noisy, so compare ratios), with one
check of like-with-like: the plain MLP baseline has exactly the denoiser's Linear FLOPs minus its
time-embedding MLP (asserted):

1. the machine's float32 matmul ceiling (GFLOP/s of one large GEMM) and a plain torch MLP
   train step of the paper's denoiser shapes (the baseline docs/generators.md quotes);
2. TabDDPM's denoiser train step (paper network, batch 4096) in GFLOP/s and as a fraction of both;
3. training throughput (rows/s) of every registered generator on Adult (one epoch each);
4. sampling throughput (rows/s and denoiser GFLOP/s) of TabDDPM small (the whole chain) and paper
   (**extrapolated**: a 20-step chain is timed and scaled linearly to the 1,000 steps; the output says so);
5. the tracker's own cost beyond sampling and one replica-detection pass, and the overall
   overhead (wall time with tracking)/(without) for TabDDPM small at every = 1, 5 and 10.

Usage::

    python benchmarks/bench_generators.py                 # full (Adult, tens of minutes on 2 cores)
    python benchmarks/bench_generators.py --quick         # a 4,000-row slice of Adult, a few minutes
    python benchmarks/bench_generators.py --threads 1     # torch threads (default 1: shared machine)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from _paths import default_data_dir


def gemm_ceiling(n: int = 2048, repeats: int = 5) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def timed(fn, repeats: int = 3) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_denoiser(batch: int, d_in: int, cat_sizes: list[int], repeats: int) -> None:
    from tabmem.generators._diffusion import MixedDiffusion, MLPDenoiser

    layers, dim_t = [1024, 2048, 2048, 1024], 1024
    model = MLPDenoiser(d_in, layers, dim_t)
    n_num = d_in - sum(cat_sizes)
    diff = MixedDiffusion(n_num, cat_sizes, 1000)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(0)
    x_num = torch.randn(batch, n_num)
    codes = torch.stack([torch.randint(0, k, (batch,), generator=g) for k in cat_sizes], 1)

    def step():
        lm, lg = diff.loss(model, x_num, codes, g)
        opt.zero_grad()
        (lm + lg).backward()
        opt.step()

    flops = 3 * model.flops_per_row(shared_t=False) * batch
    t_ddpm = timed(step, repeats)
    # baseline: a plain torch MLP step with the same Linear shapes and MSE loss
    dims = [d_in, dim_t, *layers, d_in]
    plain = torch.nn.Sequential(
        *[m for i in range(len(dims) - 1) for m in (torch.nn.Linear(dims[i], dims[i + 1]), torch.nn.ReLU())][:-1]
    )
    popt = torch.optim.AdamW(plain.parameters(), lr=1e-4)
    xin, target = torch.randn(batch, d_in), torch.randn(batch, d_in)

    def plain_step():
        loss = ((plain(xin) - target) ** 2).mean()
        popt.zero_grad()
        loss.backward()
        popt.step()

    plain_flops = 3 * sum(2 * m.in_features * m.out_features for m in plain if isinstance(m, torch.nn.Linear)) * batch
    # like with like: the plain MLP has the denoiser's Linear shapes, only the time-embedding MLP is extra
    time_mlp = 2 * (2 * dim_t * dim_t)
    assert flops == plain_flops + 3 * time_mlp * batch, "FLOP counts of the denoiser and its baseline disagree"
    assert model.flops_per_row(shared_t=True) == model.flops_per_row(shared_t=False) - time_mlp
    t_plain = timed(plain_step, repeats)
    ceiling = gemm_ceiling()
    g_ddpm, g_plain = flops / t_ddpm / 1e9, plain_flops / t_plain / 1e9
    print(
        f"[denoiser] paper net, batch {batch}: TabDDPM train step {g_ddpm:.1f} GFLOP/s; plain torch MLP step {g_plain:.1f} GFLOP/s; matmul ceiling {ceiling:.1f} GFLOP/s"
    )
    print(
        f"[denoiser] TabDDPM / ceiling = {g_ddpm / ceiling:.0%}   plain MLP / ceiling = {g_plain / ceiling:.0%}   TabDDPM / plain = {g_ddpm / g_plain:.0%}"
    )


def bench_sampling(gen, n: int, steps_cap: int | None, label: str, ceiling: float) -> None:
    T = int(gen.num_timesteps)
    if steps_cap and steps_cap < T:  # time a shortened chain, extrapolate linearly per step
        diff = gen.diffusion_
        saved = diff.T
        diff.T = steps_cap
        try:
            t = timed(lambda: gen.sample(n, random_state=0), 1)
        finally:
            diff.T = saved
        t = t * T / steps_cap
        label = f"{label}, EXTRAPOLATED from {steps_cap} of {T} steps"
    else:
        t = timed(lambda: gen.sample(n, random_state=0), 1)
    flops = gen.flops_per_sample_row() * n
    print(
        f"[sample] {label}: {n / t:,.0f} rows/s with {T} steps ({flops / t / 1e9:.1f} GFLOP/s, {flops / t / 1e9 / ceiling:.0%} of ceiling); |train|={gen.n_train_:,} rows would take {gen.n_train_ / (n / t):.0f}s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    ap.add_argument("--overhead-epochs", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from tabmem.data.datasets import load_dataset
    from tabmem.generators import available_generators, get_generator
    from tabmem.memorization.tracker import MemorizationTracker

    ds = load_dataset("adult", data_dir=args.data_dir, download=False)
    train, schema = ds.train, ds.schema
    if args.quick:
        train = train.sample(4000, random_state=0).reset_index(drop=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); Adult train rows: {len(train):,}")
    ceiling = gemm_ceiling()
    print(f"[ceiling] float32 GEMM 2048^3: {ceiling:.1f} GFLOP/s")

    sizes = [len(set(train[c].astype(str))) for c in schema.categorical]
    d_in = len(schema.numerical) + sum(sizes)
    bench_denoiser(1024 if args.quick else 4096, d_in, sizes, 2 if args.quick else 3)

    # training throughput: one epoch of each registered generator
    for name in available_generators():
        if name.startswith("_") or name == "llm":
            continue
        try:
            gen = get_generator(name, preset="small", epochs=1, random_state=0)
        except Exception as exc:  # noqa: BLE001 - report and continue
            print(f"[train] {name}: skipped ({exc})")
            continue
        t = time.perf_counter()
        gen.fit(train, schema)
        dt = time.perf_counter() - t
        print(f"[train] {name} (preset small): {len(train) / dt:,.0f} rows/s (1 epoch in {dt:.1f}s incl. build)")

    small = get_generator("tabddpm", preset="small", epochs=1, random_state=0).fit(train, schema)
    bench_sampling(small, min(len(train), 4000), None, "TabDDPM small", ceiling)
    paper = get_generator("tabddpm", preset="paper", epochs=1, batch_size=1024, random_state=0)
    paper.fit(train.iloc[:2048], schema)
    paper.n_train_ = len(ds.train)
    bench_sampling(paper, 2000 if args.quick else 4096, 20, "TabDDPM paper", ceiling)

    # tracking overhead at every = 1, 5, 10
    E = args.overhead_epochs
    t = time.perf_counter()
    get_generator("tabddpm", preset="small", epochs=E, random_state=0).fit(train, schema)
    base = time.perf_counter() - t
    print(f"[track] TabDDPM small, {E} epochs without tracking: {base:.1f}s")
    for every in (1, 5, 10):
        tr = MemorizationTracker(every=every)
        t = time.perf_counter()
        get_generator("tabddpm", preset="small", epochs=E, random_state=0).fit(train, schema, callbacks=[tr])
        wall = time.perf_counter() - t
        h = tr.history_
        own = h["tracker_seconds"].sum()
        print(
            f"[track] every={every}: wall {wall:.1f}s, overhead x{wall / base:.2f}; per tracked epoch: sample {h['sample_seconds'].mean():.1f}s, "
            f"replica pass {h['score_seconds'].mean():.1f}s, tracker's own work {own / len(h) * 1e3:.1f} ms "
            f"({own / (h['sample_seconds'].sum() + h['score_seconds'].sum()):.2%} of sampling + scoring)"
        )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
