"""CTGAN / TVAE hot kernels: throughput next to a naive baseline measured in the same run, and the ceiling.

1. Mode-specific normalisation ``transform`` (posterior + mode sampling, vectorised) versus the naive
   per-row loop (scikit-learn ``predict_proba`` row by row + ``rng.choice``), rows/s;
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
    ap.add_argument("--data-dir", default="/work/shared/datasets")
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
    from sklearn.mixture import BayesianGaussianMixture  # naive baseline: a fitted sklearn mixture per column

    m = min(n, 2000)
    col = schema.numerical[0]
    x = clean[col].to_numpy()
    bgm = BayesianGaussianMixture(n_components=norm.modes_[col], max_iter=5, random_state=0).fit(x[:500, None])
    rng = np.random.default_rng(0)

    def naive():
        for v in x[:m]:
            p = bgm.predict_proba(np.array([[v]]))[0]
            rng.choice(len(p), p=p)

    t_naive = _t(naive) * (n / m) * len(schema.numerical)  # per-row loop scaled to all rows and columns
    print(
        f"[transformer] BGM fit {fit_s:.1f}s for {len(schema.numerical)} columns; transform {n / t_vec:,.0f} rows/s "
        f"vs naive per-row loop {n / t_naive:,.0f} rows/s (x{t_naive / t_vec:.0f})"
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
    print(
        f"[sampler] conditions+rows {reps * 500 / t_v:,.0f} rows/s vs per-row loop {500 / t_n:,.0f} rows/s "
        f"(x{(t_n / 500) / (t_v / (reps * 500)):.0f})"
    )

    # 3./4. one epoch with the reference defaults (model built once; the timed epoch excludes the build)
    d = norm.output_dim_
    cond = sum(len(v) for v in norm.categories_.values())
    for name in ("ctgan", "tvae"):
        gen = get_generator(name, epochs=1, random_state=0).fit(train, schema)
        epoch_s = gen.history_[-1]["epoch_time"]
        t2 = _t(lambda gen=gen: gen._train_epoch(2))  # a second epoch, warm
        epoch_s = min(epoch_s, t2)
        if name == "ctgan":
            rows = (n // 500) * 500
            g_dims = [128 + cond, 128 + cond + 256, 128 + cond + 512, d]
            d_dims = [10 * (d + cond), 256, 256, 1]
            # G forward/backward twice (critic and generator steps), critic on real + fake + penalty (~4 passes)
            flops = 3 * (mlp_flops(g_dims) * 2 + mlp_flops(d_dims) / 10 * 4) * rows
            base_dims = [128 + cond, 256, 256, d]
        else:
            rows = n
            flops = 3 * (mlp_flops([d, 128, 128, 256]) + mlp_flops([128, 128, 128, d])) * rows
            base_dims = [d, 128, 128, 128, 128, 128, d]
        steps = max(rows // 500, 1)
        base_s = plain_mlp_step_seconds(base_dims, 500) * steps
        t_s = _t(lambda gen=gen: gen.sample(n, random_state=1))
        print(
            f"[train] {name} (reference defaults): {rows / epoch_s:,.0f} rows/s ({epoch_s:.2f}s/epoch, "
            f"{flops / epoch_s / 1e9:.1f} GFLOP/s = {flops / epoch_s / 1e9 / ceiling:.0%} of ceiling); plain MLP "
            f"{base_dims} step: {rows / base_s:,.0f} rows/s (ours x{epoch_s / base_s:.1f} its time)"
        )
        print(f"[sample] {name}: {n / t_s:,.0f} rows/s")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
