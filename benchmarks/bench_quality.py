"""Benchmark of the quality-metric kernels against their reference implementations.

Run: ``python benchmarks/bench_quality.py [--sizes 32000 100000] [--skip-sdmetrics]``;
``python benchmarks/bench_quality.py --evidence`` prints the evidence docs/quality.md cites (see ``evidence``);
``python benchmarks/bench_quality.py --report`` times whole reports (see ``report_timings``).

1. Shape + Trend (every column pair scored) on Adult-like tables (Adult's training split,
   resampled with jitter to the requested size) - tabmem vs sdmetrics' single-table
   QualityReport with the thresholds set to 0 (all pairs, as in the papers). sdmetrics is run
   twice at sizes above 50,000 rows: with its default contingency subsample of 50,000 rows
   (approximate, unseeded) and with ``num_rows_subsample=None`` (exact, what tabmem computes).
2. DCR share (exact L1 nearest-neighbour distances, TabSyn encoding) - tabmem's blocked kernel
   vs scikit-learn ``NearestNeighbors(metric="manhattan", algorithm="brute")``.
3. alpha/beta neighbour searches - the project's exact blocked search vs scikit-learn brute force.
4. MMD (unbiased, RBF) - tabmem's blocked kernel sum vs scikit-learn ``rbf_kernel`` on the full
   matrices, next to the machine's float64 GEMM ceiling (the kernel is GEMM-bound).

Timings are wall-clock on a shared machine: ratios measured in the same run are what counts.
Every kernel comparison also checks that tabmem's result equals the reference's (within the
stated tolerance) and stops otherwise; nothing is extrapolated.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "metrics"))

from metric_tables import load_adult, perturbed_resample, sdmetrics_metadata  # noqa: E402

from _paths import default_data_dir, require_data_dir
from tabmem.data.encoding import TableEncoder  # noqa: E402
from tabmem.metrics.dcr_share import nearest_l1  # noqa: E402
from tabmem.metrics.mmd import kernel_sum  # noqa: E402
from tabmem.metrics.report import quality_report  # noqa: E402


def timed(fn, repeat: int = 1):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def bench_shape_trend(train, schema, n: int, skip_sdmetrics: bool) -> None:
    real = perturbed_resample(train, schema, n=n, seed=1, noise=0.02, flip=0.0)
    syn = perturbed_resample(train, schema, n=n, seed=2)

    def run():
        rep = quality_report(real, syn, schema, metrics=["shape", "trend"])
        return rep.results["shape"], rep.results["trend"], rep.timings

    t_ours, (shape, trend, timings) = timed(run)
    print(
        f"\n[shape+trend] n={n:,} rows x {len(schema.columns)} columns, {trend.details['n_pairs_scored']} pairs scored"
    )
    print(f"  tabmem quality_report        {t_ours:8.2f} s   shape={shape.value:.6f} trend={trend.value:.6f}")
    kernels = timings["shape"] + timings["trend"]
    print(f"    of which validation {timings['validation']:.2f} s, shape+trend kernels {kernels:.2f} s")
    if skip_sdmetrics:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from sdmetrics.reports.single_table import QualityReport

        variants = [("sdmetrics (default subsample)", 50_000)] if n > 50_000 else []
        variants.append(("sdmetrics (exact)", None))
        for label, sub in variants:
            rep = QualityReport()
            rep.real_correlation_threshold = 0
            rep.real_association_threshold = 0
            rep.num_rows_subsample = sub
            t_ref, _ = timed(lambda: rep.generate(real, syn, sdmetrics_metadata(schema), verbose=False))  # noqa: B023
            props = rep.get_properties().set_index("Property")["Score"]
            d_shape = abs(props["Column Shapes"] - shape.value)
            d_trend = abs(props["Column Pair Trends"] - trend.value)
            print(
                f"  {label:28s} {t_ref:8.2f} s   |d shape|={d_shape:.1e} |d trend|={d_trend:.1e}   speed-up x{t_ref / t_ours:.1f}"
            )
            if sub is None:  # the exact reference must agree; the subsampled one is approximate by design
                check("shape+trend vs sdmetrics (exact)", max(d_shape, d_trend) < 1e-9, f"{d_shape:.1e}, {d_trend:.1e}")


def bench_dcr(train, schema, n: int, n_queries: int = 4000) -> None:
    from sklearn.neighbors import NearestNeighbors

    enc = TableEncoder(schema).fit(train)
    ref = enc.validate(perturbed_resample(train, schema, n=n, seed=3), unseen="mismatch")
    q = enc.validate(perturbed_resample(train, schema, n=n_queries, seed=4), unseen="mismatch")
    t_ours, d = timed(lambda: nearest_l1(enc, ref, q))
    rng = np.where(enc.range_ > 0, enc.range_, 1.0)
    r_mat = np.hstack([enc.numeric(ref) / rng, enc.one_hot(ref)])
    q_mat = np.hstack([enc.numeric(q) / rng, enc.one_hot(q)])
    nn = NearestNeighbors(n_neighbors=1, metric="manhattan", algorithm="brute", n_jobs=1).fit(r_mat)
    t_ref, (d_ref, _) = timed(lambda: nn.kneighbors(q_mat))
    pairs = len(q) * len(ref)
    print(
        f"\n[dcr kernel] {len(q):,} queries x {len(ref):,} reference rows ({len(schema.numerical)} num + {r_mat.shape[1] - len(schema.numerical)} one-hot)"
    )
    print(
        f"  tabmem exact blocked L1      {t_ours:8.2f} s   {pairs / t_ours / 1e6:8.1f} M pairs/s   max |diff| {np.abs(d - d_ref[:, 0]).max():.1e}"
    )
    print(
        f"  sklearn brute manhattan      {t_ref:8.2f} s   {pairs / t_ref / 1e6:8.1f} M pairs/s   ratio x{t_ref / t_ours:.1f}"
    )
    check("DCR nearest L1 vs sklearn", np.allclose(d, d_ref[:, 0], rtol=0, atol=1e-9), "max |diff| above 1e-9")


def bench_alpha_beta(train, schema, n: int) -> None:
    from tabmem.metrics.alpha_beta import _blocked_neighbors, _sklearn_neighbors

    enc = TableEncoder(schema).fit(train)
    real = enc.validate(perturbed_resample(train, schema, n=n, seed=5, noise=0.02, flip=0.0), unseen="mismatch")
    syn = enc.validate(perturbed_resample(train, schema, n=n, seed=6), unseen="mismatch")
    rng = np.where(enc.range_ > 0, enc.range_, 1.0)
    x = np.hstack([(enc.numeric(real) - enc.min_) / rng, enc.one_hot(real)])
    y = np.hstack([(enc.numeric(syn) - enc.min_) / rng, enc.one_hot(syn)])
    t_ours, ours = timed(lambda: _blocked_neighbors(enc, real, syn, 1))
    t_ref, ref = timed(lambda: _sklearn_neighbors(x, y, 1))
    diff = max(np.abs(ours[0] - ref[0]).max(), np.abs(ours[1] - ref[1]).max())
    print(f"\n[alpha/beta neighbours] real->real 2-NN + real->synthetic 1-NN, {n:,} x {n:,} rows, {x.shape[1]} dims")
    print(f"  tabmem blocked (float32 + exact refinement) {t_ours:7.2f} s   max |diff| {diff:.1e}")
    print(f"  sklearn NearestNeighbors brute (float64)    {t_ref:7.2f} s   ratio x{t_ref / t_ours:.1f}")
    check("alpha/beta neighbours vs sklearn", diff < 1e-9, f"max |diff| {diff:.1e}")


def bench_mmd(n: int, d: int = 100) -> None:
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    t_ours, s = timed(lambda: kernel_sum(x, y, 0.01), repeat=2)
    t_ref, s_ref = timed(lambda: float(rbf_kernel(x, y, gamma=0.01).sum()), repeat=2)
    a, b = rng.normal(size=(n, d)), rng.normal(size=(d, n))
    t_gemm, _ = timed(lambda: a @ b, repeat=2)
    flops = 2.0 * n * n * d
    print(f"\n[mmd kernel sum] {n:,} x {n:,} rows, {d} dims (float64)")
    print(
        f"  tabmem blocked               {t_ours:8.3f} s   {n * n / t_ours / 1e6:8.1f} M kernel evals/s   rel diff {abs(s - s_ref) / s_ref:.1e}"
    )
    print(
        f"  sklearn rbf_kernel (full)    {t_ref:8.3f} s   {n * n / t_ref / 1e6:8.1f} M kernel evals/s   ratio x{t_ref / t_ours:.2f}"
    )
    print(
        f"  ceiling: GEMM alone          {t_gemm:8.3f} s   {flops / t_gemm / 1e9:8.1f} GFLOP/s (tabmem reaches {flops / t_ours / 1e9:.1f} GFLOP/s)"
    )
    check(
        "MMD kernel sum vs sklearn rbf_kernel", abs(s - s_ref) / s_ref < 1e-9, f"rel diff {abs(s - s_ref) / s_ref:.1e}"
    )


def check(what: str, ok: bool, detail: str) -> None:
    """Stop the benchmark when the fast kernel's result differs from its reference's."""
    if not ok:
        raise SystemExit(f"CHECK FAILED: {what}: {detail}")
    print(f"  check: {what}: equal")


def report_timings(data_dir: Path) -> None:
    """Whole quality reports, timed per metric: full Adult and scikit-learn's diabetes table.

    Adult: real = the 32,561 training rows, synthetic = a perturbed resample of them (same size),
    holdout = test = the 16,281 test rows, MLE with the tiny grid; then MLE alone with the full
    36-configuration TabSyn grid. Diabetes (as ``tabmem demo`` loads it): the whole report with the
    TabSyn grid and with the tiny grid.
    """
    from tabmem.data.datasets import load_dataset

    train, test, schema = load_adult(data_dir)
    syn = perturbed_resample(train, schema, seed=7)
    t0 = time.perf_counter()
    rep = quality_report(train, syn, schema, test=test, holdout=test, mle_grid="tiny")
    total = time.perf_counter() - t0
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(rep.timings.items(), key=lambda kv: -kv[1]))
    print(
        f"\n[report] Adult {len(train):,} real / {len(syn):,} synthetic / {len(test):,} holdout+test rows, tiny MLE grid:"
    )
    print(f"  {total:.1f} s in all: {parts}")
    t0 = time.perf_counter()
    quality_report(train, syn, schema, test=test, metrics=["mle"], mle_grid="tabsyn")
    print(f"  MLE alone, full TabSyn grid (36 configs, real and synthetic models): {time.perf_counter() - t0:.1f} s")
    ds = load_dataset("diabetes")
    syn = perturbed_resample(ds.train, ds.schema, seed=7)
    for grid in ("tabsyn", "tiny"):
        t0 = time.perf_counter()
        rep = quality_report(ds.train, syn, ds.schema, test=ds.test, mle_grid=grid)
        print(
            f"[report] diabetes {len(ds.train)} train / {len(ds.test)} test rows, MLE grid {grid}: "
            f"{time.perf_counter() - t0:.1f} s (MLE {rep.timings.get('mle', float('nan')):.1f} s)"
        )


def evidence(data_dir: Path, mle_grid: str) -> None:
    """Evidence of docs/quality.md: Shape/Trend next to sdmetrics on Adult and Shoppers, MLE real vs synthetic."""
    from metric_tables import load_shoppers
    from sdmetrics.reports.single_table import QualityReport

    for loader in (load_adult, load_shoppers):
        train, test, schema = loader(data_dir)
        syn = perturbed_resample(train, schema, seed=7)
        print(f"\n[{schema.name}] real train {len(train):,} rows, synthetic = perturbed resample ({len(syn):,} rows)")
        for pair_filter, thr in (("all", 0.0), ("sdmetrics", None)):
            t0 = time.perf_counter()
            rep = quality_report(train, syn, schema, metrics=["shape", "trend"], pair_filter=pair_filter)
            t_ours = time.perf_counter() - t0
            ref = QualityReport()
            if thr is not None:
                ref.real_correlation_threshold = thr
                ref.real_association_threshold = thr
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                ref.generate(train, syn, sdmetrics_metadata(schema), verbose=False)
                t_ref = time.perf_counter() - t0
            props = ref.get_properties().set_index("Property")["Score"]
            tr = rep.results["trend"]
            print(
                f"  pairs={pair_filter:9s} tabmem shape={rep.results['shape'].value:.6f} trend={tr.value:.6f} "
                f"({tr.details['n_pairs_scored']}/{tr.details['n_pairs_total']} pairs) {t_ours:6.2f} s | "
                f"sdmetrics shape={props['Column Shapes']:.6f} trend={props['Column Pair Trends']:.6f} {t_ref:6.2f} s"
            )
        t0 = time.perf_counter()
        rep = quality_report(train, syn, schema, test=test, metrics=["mle"], mle_grid=mle_grid)
        mle = rep.results["mle"]
        print(
            f"  MLE ({mle.details['n_configs']} configs, {mle.details['score']} on the real test split): "
            f"train on real {mle.details['real'][mle.details['score']]:.4f} | train on synthetic {mle.value:.4f} "
            f"({time.perf_counter() - t0:.0f} s)"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[32_000, 100_000])
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    ap.add_argument("--skip-sdmetrics", action="store_true")
    ap.add_argument(
        "--evidence", action="store_true", help="Adult/Shoppers Shape/Trend vs sdmetrics and MLE real vs synthetic"
    )
    ap.add_argument("--mle-grid", default="tabsyn", choices=["tabsyn", "tiny"])
    ap.add_argument("--report", action="store_true", help="time whole reports (full Adult, diabetes)")
    args = ap.parse_args()
    if args.evidence:
        evidence(require_data_dir(args.data_dir), args.mle_grid)
        return
    if args.report:
        report_timings(require_data_dir(args.data_dir))
        return
    train, _, schema = load_adult(require_data_dir(args.data_dir))
    for n in args.sizes:
        bench_shape_trend(train, schema, n, args.skip_sdmetrics)
    bench_dcr(train, schema, 32_000)
    bench_alpha_beta(train, schema, 10_000)
    bench_mmd(5_000)


if __name__ == "__main__":
    main()
