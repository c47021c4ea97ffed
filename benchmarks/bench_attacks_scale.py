"""LevAtt, density and DOMIAS at 10k-100k targets x synthetic rows: time, peak memory, baselines (``docs/scale.md``).

Usage (from the repo root; one thread, niced, on a shared machine)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_attacks_scale.py --sizes 10000,30000,100000

Data (N = the size): members = N Adult training rows resampled with their numerical cells jittered
(``bench_replicas.noisy_resample``, seed 1); targets = N/2 members + N/2 jittered Adult *test* rows
(non-members); DOMIAS' reference = N jittered test rows (seed 4). Synthetic tables of N rows, two regimes:

* ``jitter`` (tabular generator-like): the members resampled and jittered again (seed 2);
* ``llm`` (many near copies): 70 % one-digit leaks of members (``attacks.leaks.one_digit_leak``),
  30 % jittered resamples: where pruning matters (a near copy ends its target's search early).

Every point runs in a fresh process (its peak resident memory, ``ru_maxrss``, is its own) with
``--memory-gb`` as the working-memory budget (``tabmem.neighbors.settings.working_memory``).
LevAtt points larger than ``--full-max`` score a stratified prefix (``--probe`` / 2 members and as many
non-members) and extrapolate the scoring time linearly in the targets (marked ``extrapolated``;
exact: every target is searched independently). Baselines, same run, same strings, on a prefix
of ``--baseline-queries`` targets (their cost is linear in the targets; extrapolated, minima
checked equal to ours):

* ``before``: LevAtt's previous search (the bag bound, then the LCS bound against *every*
  synthetic string), from git revision ``--before`` (default: the commit before this work);
* ``cdist``: RapidFuzz's brute force ``process.cdist`` + row minimum, one thread (the naive exact path;
  with all of RapidFuzz's SIMD, it is also the ceiling of an unpruned search on this machine).

Density / DOMIAS: fit + score of all N targets (blocked KDE); baselines: ``before``, the previous
evaluation (4M-cell blocks, ``scipy.special.logsumexp``; scores checked equal to the bit) on
``--before-queries`` targets; ``scipy.stats.gaussian_kde``
(``logpdf``) on ``--baseline-queries`` targets at the sizes up to ``--scipy-max``, equal to ours up to
the normalising constant; floor: one ``exp`` per (target, data row) pair at numpy's rate, timed
in the same process (``exp floor``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import default_data_dir  # noqa: E402

GIB = 2**30
BEFORE = "8f514c4"  # the last commit with the previous LevAtt search


def tables(n: int, regime: str, data_dir: str):
    import pandas as pd

    from bench_replicas import noisy_resample
    from tabmem.attacks.leaks import one_digit_leak
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=data_dir)
    members = noisy_resample(ds.train, ds.schema, n, seed=1)
    if regime == "jitter":
        syn = noisy_resample(members, ds.schema, n, seed=2)
    else:
        k = int(0.7 * n)
        leaks = one_digit_leak(members.iloc[:k], ds.schema, random_state=2)
        syn = pd.concat([leaks, noisy_resample(members, ds.schema, n - k, seed=2)], ignore_index=True)
    half = n // 2
    targets = pd.concat([members.iloc[:half], noisy_resample(ds.test, ds.schema, n - half, seed=3)], ignore_index=True)
    reference = noisy_resample(ds.test, ds.schema, n, seed=4)
    return targets, syn, reference, ds.schema, half


def stratified(n_targets: int, half: int, k: int) -> np.ndarray:
    """The first k/2 members and the first k/2 non-members (all targets when k >= n_targets)."""
    if k >= n_targets:
        return np.arange(n_targets)
    return np.r_[np.arange(k // 2), half + np.arange(k - k // 2)]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn):
    w, c = time.perf_counter(), cpu()
    out = fn()
    return time.perf_counter() - w, cpu() - c, out


def old_search_module(rev: str):
    """LevAtt's search module as of git revision ``rev`` (imported under another name)."""
    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(
        ["git", "show", f"{rev}:src/tabmem/neighbors/levenshtein.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "levenshtein_before.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("levenshtein_before", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


# ------------------------------------------------------------------ one point (child process)
def child_levatt(n: int, regime: str, args: argparse.Namespace) -> dict:
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    from tabmem.attacks import get_attack
    from tabmem.neighbors.settings import working_memory

    targets, syn, _, schema, half = tables(n, regime, args.data_dir)
    rss_tables = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    probe = stratified(len(targets), half, len(targets) if n <= args.full_max else args.probe)
    with working_memory(int(args.memory_gb * GIB)):
        attack = get_attack("levatt", n_jobs=1)
        fit_w, fit_c, _ = timed(lambda: attack.fit(syn, schema))
        score_w, score_c, res = timed(lambda: attack.distances(targets.iloc[probe]))
    scale = len(targets) / len(probe)
    out = {
        "attack": "levatt",
        "regime": regime,
        "n": n,
        "probe": len(probe),
        "extrapolated": bool(scale > 1),
        "fit_cpu": fit_c,
        "score_cpu": score_c * scale,
        "score_wall": score_w * scale,
        "cpu": fit_c + score_c * scale,
        "exact_share": res.n_exact / res.n_pairs,
        "median_member": float(np.median(res.distance[: min(half, len(probe) // 2 or 1)])),
        "median_non_member": float(np.median(res.distance[len(probe) // 2 :])),
        "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB,
        "tables_gib": rss_tables / GIB,
    }
    # baselines on a prefix of the probed targets, the same strings
    base = stratified(len(probe), len(probe) // 2, args.baseline_queries)
    strings_s = attack.index_.strings_
    strings_q = attack._serialize(targets.iloc[probe[base]], "targets")
    ours = res.distance[base]
    old = old_search_module(args.before)
    w, c, found = timed(lambda: old.LevenshteinIndex(n_jobs=1).fit(strings_s).query(strings_q))
    assert np.array_equal(found.distance, ours), "the previous search disagrees"
    out["before_cpu"] = c * len(targets) / len(base)
    chunk = max(1, (64 << 20) // (4 * len(strings_s)))

    def cdist_min():
        return np.concatenate(
            [
                process.cdist(strings_q[a : a + chunk], strings_s, scorer=Levenshtein.distance, dtype=np.int32).min(1)
                for a in range(0, len(strings_q), chunk)
            ]
        )

    w, c, found = timed(cdist_min)
    assert np.array_equal(found, ours), "cdist disagrees"
    out["cdist_cpu"] = c * len(targets) / len(base)
    out["ours_cpu_per_target"] = score_c / len(probe)
    return out


def child_density(n: int, name: str, args: argparse.Namespace) -> dict:
    from scipy.stats import gaussian_kde

    from tabmem.attacks import get_attack
    from tabmem.neighbors.settings import working_memory

    targets, syn, reference, schema, _ = tables(n, "jitter", args.data_dir)
    with working_memory(int(args.memory_gb * GIB)):
        attack = get_attack(name)
        fit_w, fit_c, _ = timed(lambda: attack.fit(syn, schema, reference if name == "domias" else None))
        score_w, score_c, scores = timed(lambda: attack.score(targets))
    out = {
        "attack": name,
        "regime": "jitter",
        "n": n,
        "extrapolated": False,
        "fit_cpu": fit_c,
        "score_cpu": score_c,
        "score_wall": score_w,
        "cpu": fit_c + score_c,
        "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB,
    }
    # before: the previous evaluation (4M-cell blocks, scipy's logsumexp on a copy) on a prefix of the targets
    k = min(args.before_queries, len(targets))
    x = attack._features(targets.iloc[:k], "targets")
    kdes = [attack.kde_] + ([attack.reference_kde_] if name == "domias" else [])
    w, c, old = timed(lambda: before_logpdf(kdes[0], x) - (before_logpdf(kdes[1], x) if len(kdes) > 1 else 0.0))
    assert np.array_equal(old, scores[:k]), "the previous evaluation disagrees"
    out["before_cpu"] = c * len(targets) / k
    w, c, _ = timed(lambda: kdes[0].logpdf(x) - (kdes[1].logpdf(x) if len(kdes) > 1 else 0.0))
    out["kde_cpu"] = c * len(targets) / k  # ours on the same prefix: the ratios' denominator
    # the floor: one exp per (target, data row) pair, at this machine's numpy exp rate (same process)
    cells = np.random.default_rng(0).normal(size=4_000_000)
    _, c_exp, _ = timed(lambda: [np.exp(cells) for _ in range(5)])
    n_data = len(syn) + (len(reference) if name == "domias" else 0)
    out["exp_floor_cpu"] = c_exp / (5 * cells.size) * len(targets) * n_data
    if n <= args.scipy_max:
        k = min(args.baseline_queries, len(targets))
        x = attack._features(targets.iloc[:k], "targets")
        kde_s = gaussian_kde(attack.kde_.z_.T, bw_method=attack.kde_.factor_)  # the same whitened data and factor

        def scipy_scores():
            s = kde_s.logpdf(((x - attack.kde_.center_) @ attack.kde_.proj_).T)
            if name == "domias":
                r = attack.reference_kde_
                s = s - gaussian_kde(r.z_.T, bw_method=r.factor_).logpdf(((x - r.center_) @ r.proj_).T)
            return s

        w, c, ref = timed(scipy_scores)
        # whitened coordinates change the normalising constant only: compare up to that constant
        diff = scores[:k] - ref
        assert np.ptp(diff) < 1e-8, f"scipy disagrees: spread {np.ptp(diff)}"
        out["scipy_cpu"] = c * len(targets) / k
    return out


def before_logpdf(kde, points: np.ndarray) -> np.ndarray:
    """The KDE's log density as computed before this work: 4M-cell blocks, ``scipy.special.logsumexp``."""
    from scipy.special import logsumexp

    zq = (points - kde.center_) @ kde.proj_
    q_sq = np.einsum("ij,ij->i", zq, zq)
    out = np.empty(len(points))
    step = max(1, 4_000_000 // kde.n_)
    for a in range(0, len(points), step):
        b = min(a + step, len(points))
        d2 = q_sq[a:b, None] + kde.z_sq_[None, :] - 2.0 * (zq[a:b] @ kde.z_.T)
        np.maximum(d2, 0.0, out=d2)
        out[a:b] = logsumexp(-0.5 * d2, axis=1)
    return out - kde.log_norm_


# ------------------------------------------------------------------ driver
def run_point(kind: str, n: int, what: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--n", str(n), "--what", what]
    for flag in (
        "memory_gb",
        "probe",
        "full_max",
        "before_queries",
        "baseline_queries",
        "before",
        "scipy_max",
        "data_dir",
    ):
        cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        name = "levatt" if kind == "levatt" else what
        return {
            "attack": name,
            "regime": what if kind == "levatt" else "",
            "n": n,
            "error": proc.stderr.strip().splitlines()[-1:],
        }
    point = json.loads(proc.stdout.strip().splitlines()[-1])
    point["process_wall"] = time.perf_counter() - t
    return point


def show(p: dict) -> str:
    if "error" in p:
        return f"| {p['attack']} | {p['regime']} | {p['n']:,} | failed: {p['error']} |"
    ext = " (extrapolated)" if p.get("extrapolated") else ""
    base = []
    for key, label in (
        ("before_cpu", "before"),
        ("cdist_cpu", "cdist"),
        ("scipy_cpu", "scipy"),
        ("exp_floor_cpu", "exp floor"),
    ):
        if key in p:
            ours = p.get("kde_cpu", p["score_cpu"])  # density: our KDE on the same targets
            base.append(f"{label} {p[key]:,.0f} s = {p[key] / ours:.2f}x")
    extra = f"exact {p['exact_share']:.3%}" if "exact_share" in p else f"KDE {p['kde_cpu']:,.1f} s"
    return (
        f"| {p['attack']} | {p.get('regime', '')} | {p['n']:,} x {p['n']:,}{ext} | {p['fit_cpu']:.1f} | "
        f"{p['score_cpu']:,.1f} | {p['n'] / p['score_cpu']:,.0f} | {p['peak_gib']:.2f} GiB | {extra} | "
        f"{'; '.join(base)} |"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="10000,30000,100000")
    p.add_argument("--attacks", default="levatt,density,domias")
    p.add_argument("--regimes", default="jitter,llm")
    p.add_argument("--memory-gb", type=float, default=1.0)
    p.add_argument("--probe", type=int, default=4000, help="LevAtt targets scored at most (the rest extrapolated)")
    p.add_argument("--full-max", type=int, default=10000, help="LevAtt sizes up to this are scored whole")
    p.add_argument("--baseline-queries", type=int, default=100)
    p.add_argument("--before", default=BEFORE)
    p.add_argument("--scipy-max", type=int, default=30000)
    p.add_argument("--before-queries", type=int, default=2000, help="density targets timed on the previous path")
    p.add_argument("--data-dir", default=default_data_dir())
    p.add_argument("--child", default=None)
    p.add_argument("--n", type=int)
    p.add_argument("--what")
    args = p.parse_args()
    if args.child:
        fn = child_levatt if args.child == "levatt" else child_density
        print(json.dumps(fn(args.n, args.what, args)))
        return
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; memory budget {args.memory_gb} GiB")
    print(
        "| attack | regime | targets x synthetic | fit CPU s | score CPU s | targets/CPU s | peak memory | pruning | baselines (CPU s, x ours) |"
    )
    print("|---|---|---|---:|---:|---:|---:|---|---|")
    for n in [int(x) for x in args.sizes.split(",")]:
        for attack in args.attacks.split(","):
            whats = [(attack, r) for r in args.regimes.split(",")] if attack == "levatt" else [(attack, "")]
            for a, regime in whats:
                kind = "levatt" if a == "levatt" else "density"
                point = run_point(kind, n, regime if a == "levatt" else a, args)
                point["load"] = os.getloadavg()[0]
                print(show(point) + f" load {point['load']:.1f}", flush=True)
                print("  " + json.dumps(point), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
