"""CTGAN / TVAE hot kernels: throughput next to a naive baseline measured in the same run, and the ceiling.

1. Mode-specific normalisation ``transform`` (posterior + mode sampling, vectorised) versus the naive
   per-row loop (Bayes' rule over the same modes row by row + ``rng.choice``), rows/s, both over every
   row of every numerical column (nothing extrapolated); the posteriors are checked equal;
2. training-by-sampling (conditions + matching rows, vectorised) versus a per-row Python loop, rows/s;
3. one training epoch of CTGAN and TVAE with the reference defaults on Adult, rows/s, next to a plain
   torch MLP train step with the same Linear shapes (a lower bound: one forward/backward, no Gumbel,
   no gradient penalty), and the machine's float32 GEMM ceiling with the GFLOP/s both reach;
4. sampling throughput (rows/s) of both models.

Usage::

    python benchmarks/bench_ctgan_tvae.py            # full Adult (32,561 rows)
    python benchmarks/bench_ctgan_tvae.py --quick    # 4,000-row slice
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from _paths import default_data_dir


def gemm_ceiling(n: int = 1024, repeats: int = 5) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_t(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def _t(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def mlp_flops(dims: list[int]) -> int:
    return sum(2 * a * b for a, b in zip(dims[:-1], dims[1:]))


def linears(module: torch.nn.Module) -> list[torch.nn.Linear]:
    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


def linear_flops(module: torch.nn.Module) -> float:
    """Forward FLOPs per input row of every Linear layer in ``module``."""
    return float(sum(2 * lin.in_features * lin.out_features for lin in linears(module)))


def plain_mlp_step_seconds(dims: list[int], batch: int, repeats: int = 5) -> float:
    layers: list[torch.nn.Module] = []
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    x, y = torch.randn(batch, dims[0]), torch.randn(batch, dims[-1])

    def step():
        loss = ((net(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()
    return min(_t(step) for _ in range(repeats))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from tabmem.data.datasets import load_dataset
    from tabmem.data.schema import validate_table
    from tabmem.generators import get_generator
    from tabmem.generators._conditional import ConditionalSampler
    from tabmem.generators._transformer import ModeSpecificNormalizer

    ds = load_dataset("adult", data_dir=args.data_dir)
    train, schema = ds.train, ds.schema
    if args.quick:
        train = train.sample(4000, random_state=0).reset_index(drop=True)
    n = len(train)
    ceiling = gemm_ceiling()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); Adult rows {n:,}")
    print(f"[ceiling] float32 GEMM 1024^3: {ceiling:.1f} GFLOP/s")

    # 1. transformer
    t = time.perf_counter()
    norm = ModeSpecificNormalizer(random_state=0).fit(train, schema)
    fit_s = time.perf_counter() - t
    clean = validate_table(train, schema, name="training")
    t_vec = _t(lambda: norm.transform(clean, random_state=1))
    # naive baseline, measured whole (every row of every numerical column): the per-row loop of a plain
    # implementation, Bayes' rule over the same fitted modes then rng.choice; its posteriors must equal ours
    rng = np.random.default_rng(0)

    def naive():
        out = {}
        for col in schema.numerical:
            info = norm.numeric_[col]
            w = np.exp(info.log_weights)
            posts = []
            for v in clean[col].to_numpy(dtype=float):
                dens = w * np.exp(-0.5 * ((v - info.means) / info.stds) ** 2) / info.stds
                p = dens / dens.sum()
                rng.choice(len(p), p=p)
                posts.append(p)
            out[col] = np.array(posts)
        return out

    t = time.perf_counter()
    posts = naive()
    t_naive = time.perf_counter() - t
    for col in schema.numerical:  # correctness: the same posterior P(mode | x) row by row
        ours = norm.mode_posterior(col, clean[col].to_numpy(dtype=float))
        ok = np.allclose(ours, posts[col], rtol=1e-9, atol=1e-12)
        if not ok:
            raise SystemExit(f"CHECK FAILED: mode posterior of {col!r} differs from the naive loop")
    print(
        f"[transformer] BGM fit {fit_s:.1f}s for {len(schema.numerical)} columns; transform {n / t_vec:,.0f} rows/s "
        f"vs naive per-row loop {n / t_naive:,.0f} rows/s (x{t_naive / t_vec:.0f}; both over all {n:,} rows x "
        f"{len(schema.numerical)} columns, posteriors checked equal)"
    )

    # 2. training-by-sampling
    codes = norm.category_codes(clean)
    sampler = ConditionalSampler(codes, [len(norm.categories_[c]) for c in schema.categorical])
    g = np.random.default_rng(0)
    reps = 200

    def vec():
        for _ in range(reps):
            sampler.sample_rows(sampler.sample_condition(500, g), g)

    t_v = _t(vec)
    by_cat = [[np.flatnonzero(c == k) for k in range(c.max() + 1)] for c in codes]
    probs = [sampler.probabilities(j) for j in range(len(codes))]

    def naive_cond():
        for _ in range(500):
            j = g.integers(len(codes))
            k = g.choice(len(probs[j]), p=probs[j])
            g.choice(by_cat[j][k])

    t_n = _t(naive_cond)
    cond = sampler.sample_condition(20_000, g)  # correctness: every drawn row carries its condition
    rows = sampler.sample_rows(cond, g)
    carried = np.array([codes[j][r] for j, r in zip(cond.column, rows)]) == cond.category
    if not carried.all():
        raise SystemExit("CHECK FAILED: training-by-sampling drew rows that do not carry their condition")
    print(
        f"[sampler] conditions+rows {reps * 500 / t_v:,.0f} rows/s vs per-row loop {500 / t_n:,.0f} rows/s "
        f"(x{(t_n / 500) / (t_v / (reps * 500)):.0f})"
    )

    # 3./4. one epoch with the reference defaults (model built once; the timed epoch excludes the build)
    for name in ("ctgan", "tvae"):
        gen = get_generator(name, epochs=1, random_state=0).fit(train, schema)
        epoch_s = gen.history_[-1]["epoch_time"]
        t2 = _t(lambda gen=gen: gen._train_epoch(2))  # a second epoch, warm
        epoch_s = min(epoch_s, t2)
        if name == "ctgan":
            rows = (n // 500) * 500
            f_g, f_c = linear_flops(gen.generator_), linear_flops(gen.critic_) / gen.pac  # per data row, forward
            # approximate: critic step = G fwd + critic fwd/bwd on real and fake (6C) + gradient penalty
            # (fwd, create_graph bwd, bwd of that: ~7C); generator step = G fwd/bwd (3G) + critic fwd/bwd (3C)
            flops = (4 * f_g + 16 * f_c) * rows
            base_dims = [lin.in_features for lin in linears(gen.generator_)] + [gen.normalizer_.output_dim_]
            base_dims = [base_dims[0], 256, 256, base_dims[-1]]
        else:
            rows = n
            flops = 3 * (linear_flops(gen.encoder_net_) + linear_flops(gen.decoder_net_)) * rows
            base_dims = [gen.normalizer_.output_dim_, 128, 128, 128, 128, 128, gen.normalizer_.output_dim_]
        base_step = plain_mlp_step_seconds(base_dims, 500)
        base_gflops = 3 * mlp_flops(base_dims) * 500 / base_step / 1e9
        t_s = _t(lambda gen=gen: gen.sample(n, random_state=1))
        print(
            f"[train] {name} (reference defaults): {rows / epoch_s:,.0f} rows/s ({epoch_s:.2f}s/epoch), ~{flops / epoch_s / 1e9:.1f} "
            f"GFLOP/s = {flops / epoch_s / 1e9 / ceiling:.0%} of ceiling; baseline plain MLP step {base_dims} at batch 500: "
            f"{base_gflops:.1f} GFLOP/s = {base_gflops / ceiling:.0%} of ceiling (ours at {flops / epoch_s / 1e9 / base_gflops:.0%} of it)"
        )
        print(f"[sample] {name}: {n / t_s:,.0f} rows/s")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
