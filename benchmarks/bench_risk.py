"""Benchmark of ``tabmem.risk.evaluate_risk`` against the anonymeter package, same data, same attacks.

Data: Adult (train + test files, 48,842 rows) shuffled (seed 0) and cut in three: training,
control and "fresh" rows, ``--rows`` each (default 16,280: all of Adult); the synthetic table is
the training rows jittered (``--synthetic leak``, numericals moved by 1% of a standard deviation)
or the fresh rows (``--synthetic fresh``). Both tools run the four anonymeter attacks
(singling out univariate and multivariate, linkability on the columns' two halves, inference of
``income``) with ``--n-attacks`` each (default 2,000), one run each, one worker each.

anonymeter runs in its own virtualenv (``.venv-anon``, ``tests/run_reference.sh``; it pins
numpy < 1.27) through ``tests/reference/anonymeter_ref.py`` (CSV in, JSON out; its CSV reading is
left out of its time, and numba's kernels are compiled before it). Printed: seconds per attack for both, the ratio, and the machine's
ceiling for the searches: one numpy pass computing every target-synthetic Gower distance of the
linkability and inference searches (the work any exact search must at least stream through).

    python benchmarks/bench_risk.py
    python benchmarks/bench_risk.py --rows 4000 --n-attacks 500     # quick
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _paths import REPO, default_data_dir, require_data_dir
from tabmem.data.datasets import load_dataset
from tabmem.risk import evaluate_risk

ATTACKS = ("singling_out_univariate", "singling_out_multivariate", "linkability", "inference")


def tables(data_dir: Path, rows: int, synthetic: str):
    ds = load_dataset("adult", data_dir=data_dir, download=False)
    full = pd.concat([ds.train, ds.test], ignore_index=True)
    perm = np.random.default_rng(0).permutation(len(full))
    train, control, fresh = (full.iloc[perm[i * rows : (i + 1) * rows]].reset_index(drop=True) for i in range(3))
    if synthetic == "fresh":
        return train, fresh, control, ds.schema
    rng = np.random.default_rng(1)
    leak = train.copy()
    for c in ds.schema.numerical:
        leak[c] = leak[c].astype(float) + rng.normal(0.0, 0.01 * float(leak[c].std()), len(leak))
    return train, leak, control, ds.schema


def tabmem_seconds(train, synthetic, control, schema, n_attacks: int) -> tuple[dict[str, float], dict]:
    """Per-attack seconds of tabmem (each attack alone, as anonymeter times them) and the full summary."""
    import tabmem.risk.evaluate as ev

    times: dict[str, float] = {}
    originals = {name: getattr(ev, f"_{name}") for name in ("singling_out", "linkability", "inference")}

    def timed(name, fn):
        def run(*args, **kw):
            t = time.perf_counter()
            out = fn(*args, **kw)
            key = f"singling_out_{args[0]}" if name == "singling_out" else name
            times[key] = times.get(key, 0.0) + time.perf_counter() - t
            return out

        return run

    for name, fn in originals.items():
        setattr(ev, f"_{name}", timed(name, fn))
    try:
        t = time.perf_counter()
        summary = evaluate_risk(train, synthetic, control, schema=schema, n_attacks=n_attacks, n_jobs=1)
        times["total"] = time.perf_counter() - t
    finally:
        for name, fn in originals.items():
            setattr(ev, f"_{name}", fn)
    return times, summary.to_dict()


def anonymeter_seconds(python: str, train, synthetic, control, schema, aux, secrets, n_attacks: int):
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, table in (("train", train), ("synthetic", synthetic), ("control", control)):
            paths[name] = os.path.join(tmp, f"{name}.csv")
            table.to_csv(paths[name], index=False)
        config = {
            **paths,
            "numerical": list(schema.numerical),
            "categorical": list(schema.categorical),
            "secrets": secrets,
            "aux": aux,
            "n_attacks": n_attacks,
            "n_cols": 3,
            "n_neighbors": 1,
            "seed": 0,
            "n_jobs": 1,
            "warmup": True,
        }
        cfg = os.path.join(tmp, "config.json")
        out = os.path.join(tmp, "out.json")
        Path(cfg).write_text(json.dumps(config))
        script = REPO / "tests" / "reference" / "anonymeter_ref.py"
        subprocess.run([python, str(script), cfg, out], check=True)
        res = json.loads(Path(out).read_text())
    times = {k: res[k]["seconds"] for k in ATTACKS[:3]}
    times["inference"] = sum(v["seconds"] for v in res["inference"].values())
    times["total"] = sum(times.values())
    return times, res


def ceiling_seconds(train, synthetic, schema, aux, n_attacks: int) -> float:
    """One float32 numpy pass over every Gower term of the searches (2 linkability halves x train/control,
    inference on all but the secret x train/control), on ``n_attacks`` targets x all synthetic rows."""
    enc_cols = [c for c in schema.columns]
    syn = synthetic.iloc[:, :0].copy()
    for c in enc_cols:
        if c in schema.numerical:
            v = synthetic[c].to_numpy(np.float32)
            syn[c] = (v - v.min()) / max(float(v.max() - v.min()), 1e-12)
        else:
            syn[c] = pd.factorize(synthetic[c])[0].astype(np.float32)
    s = syn.to_numpy(np.float32)
    q = s[np.random.default_rng(0).choice(len(s), n_attacks, replace=False)]
    n_terms = 2 * (len(aux[0]) + len(aux[1])) + 2 * (len(enc_cols) - 1)
    block = 32  # 32 x n_synthetic x columns float32 at a time: memory stays bounded
    t = time.perf_counter()
    for i in range(0, n_attacks, block):
        np.abs(q[i : i + block, None, :] - s[None, :, :]).sum(axis=2).argmin(axis=1)
    return (time.perf_counter() - t) * n_terms / len(enc_cols)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--rows", type=int, default=16_280)
    ap.add_argument("--n-attacks", type=int, default=2000)
    ap.add_argument("--synthetic", choices=("leak", "fresh"), default="leak")
    ap.add_argument(
        "--anonymeter-python", default=os.environ.get("TABMEM_ANONYMETER_PYTHON", str(REPO / ".venv-anon/bin/python"))
    )
    ap.add_argument("--skip-anonymeter", action="store_true")
    args = ap.parse_args()
    train, synthetic, control, schema = tables(require_data_dir(args.data_dir), args.rows, args.synthetic)
    print(f"Adult, {args.rows:,} rows each (train/control/synthetic={args.synthetic}), n_attacks={args.n_attacks:,}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (shared; read the ratios)")
    ours, summary = tabmem_seconds(train, synthetic, control, schema, args.n_attacks)
    ceiling = ceiling_seconds(train, synthetic, schema, summary["aux"], args.n_attacks)
    theirs = None
    if not args.skip_anonymeter:
        theirs, _ = anonymeter_seconds(
            args.anonymeter_python,
            train,
            synthetic,
            control,
            schema,
            summary["aux"],
            summary["secrets"],
            args.n_attacks,
        )
    print(f"{'attack':28s} {'tabmem s':>9s} {'anonymeter s':>13s} {'ratio':>7s}")
    for k in (*ATTACKS, "total"):
        a = theirs[k] if theirs else float("nan")
        print(f"{k:28s} {ours[k]:9.2f} {a:13.2f} {a / ours[k]:7.1f}x")
    search = ours["linkability"] + ours["inference"]
    print(
        f"ceiling: numpy float32 pass over every Gower term of the searches: {ceiling:.2f} s "
        f"(tabmem's linkability + inference: {search:.2f} s = {ceiling / search:.0%} of ceiling speed)"
    )


if __name__ == "__main__":
    main()
