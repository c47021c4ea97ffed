"""Side by side: tabmem's CTGAN/TVAE against the reference ``ctgan`` package, same data, seeds and epochs.

A script, not a study: the reference ``ctgan`` package runs in a virtualenv of its own (never a
tabmem dependency), which the study engine cannot run as a component.

The ``ctgan`` package (BUSL-1.1) is never a dependency of tabmem. It lives in a virtual environment of its
own (``--ref-python``, default ``$TABMEM_CTGAN_REF_PYTHON``), and
this script runs it there in a subprocess (``--worker``, which imports only the package, pandas, numpy
and torch). Set that environment up with::

    python3.11 -m venv ../venvs/ctgan-ref          # any directory outside the checkout
    ../venvs/ctgan-ref/bin/pip install torch==2.13.0   # first: an unpinned torch pulls a CUDA build
    ../venvs/ctgan-ref/bin/pip install ctgan==0.12.1
    export TABMEM_CTGAN_REF_PYTHON=$(realpath ../venvs/ctgan-ref/bin/python)

For each seed, every implementation is trained on the Adult training split (one torch thread), samples
|train| rows and is scored with the same tabmem code: memorization rate (``fang2024``, ratio 1/3) next
to the holdout baseline (real Adult test rows), Shape, Trend, the total variation distance of every
categorical marginal, means and standard deviations of the numericals, the share of every target class,
losses per epoch and wall time. One JSON per run is cached under ``--out`` (an existing one is reused,
so an interrupted comparison resumes), and a markdown table of all runs there is printed at the end.

Quick check (a few minutes)::

    python studies/ctgan_tvae/ctgan_tvae_reference.py --model ctgan --epochs 5 --seeds 0 --out runs/cmp_quick

LONG RUN (about 20-25 minutes per 300-epoch CTGAN fit on a quiet core, an hour or more on a loaded
one, so 1.5 hours at best for this one; run it under ``nice`` in the background)::

    python studies/ctgan_tvae/ctgan_tvae_reference.py --model ctgan --epochs 300 --seeds 0 1 \\
        --tabmem paper default --out runs/cmp_ctgan_300

``--tabmem`` takes tabmem variants ``PRESET[:key=value,key=value]`` (``default`` = the class defaults,
values parsed as JSON, else kept as strings), e.g. ``paper:sample_batch_norm=running`` for a one-change
ablation; ``--reference`` takes ``package`` (as shipped) and reference-side ablations of its sampling:
``package:bn=eval`` (generator in eval mode when sampling) and ``package:cond=frequency`` (generation
conditions with the empirical category frequencies); all reference variants of a seed share one fit of the
package. Tabmem variants that differ only in sampling options (``sample_conditions``, ``sample_batch_norm``,
``numerical_decoding``, ``discrete_sampling``) share one saved fit; tabmem fits checkpoint every 10 epochs
and a rerun of the same command resumes them. ``--reference`` or ``--tabmem`` with no value skips that side.

Rescoring never refits: delete (or move) a run's JSON and rerun; the saved tabmem fit and the package's
samples (CSV, with its fitted model pickled next to them) are reused. ``--track-every K`` (CTGAN) records
the label share and condition fidelity of ``--track-rows`` generated rows every K epochs during both fits
(``ctgan_condition_fidelity.py``; training is unchanged).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


# ---------------------------------------------------------------------------------------------------------
# Worker: runs inside the reference package's environment (imports nothing from tabmem)
# ---------------------------------------------------------------------------------------------------------
def _worker(spec_path: str) -> None:
    """Train the reference package once as ``spec`` says; write one sample (CSV) per sampling variant and a
    JSON of losses and timings."""
    import numpy as np
    import pandas as pd
    import torch

    spec = json.loads(Path(spec_path).read_text())
    torch.set_num_threads(1)
    train = pd.read_csv(spec["train_csv"], dtype={c: str for c in spec["discrete"]}, keep_default_na=False)
    if spec["model"] == "ctgan":
        from ctgan import CTGAN as Model
    else:
        from ctgan import TVAE as Model
    model = Model(epochs=spec["epochs"], enable_gpu=False)
    model.set_random_state(spec["seed"])
    track: list[dict] = []
    if spec.get("track_every") and spec["model"] == "ctgan":
        # condition fidelity every k epochs: stands in for the package's tqdm, measures after each k-th epoch
        # (RNG states and BatchNorm buffers restored, so training is unchanged); imports nothing from tabmem
        import ctgan.synthesizers.ctgan as ctgan_module
        from ctgan_condition_fidelity import reference_measure

        def tracked(iterable, disable=True):
            for epoch in iterable:
                yield epoch
                if (epoch + 1) % spec["track_every"] == 0:
                    rec = reference_measure(model, spec["track_rows"], spec["seed"] + 1)
                    track.append({"epoch": epoch + 1, **rec})

        ctgan_module.tqdm = tracked
    t0 = time.perf_counter()
    model.fit(train, spec["discrete"])
    fit_s = time.perf_counter() - t0
    if spec.get("save"):  # the fitted package model (its own pickle), for later sampling
        model.save(spec["save"])

    sample_s = {}
    for variant in spec["samples"]:
        options = variant["options"]
        if spec["model"] == "ctgan":
            # ablation bn=eval: BatchNorm with running averages when sampling (the package never calls eval())
            model._generator.train(options.get("bn") != "eval")
            sampler = model._data_sampler
            if not hasattr(sampler, "_shipped_prob"):
                sampler._shipped_prob = sampler._discrete_column_category_prob
            sampler._discrete_column_category_prob = sampler._shipped_prob
            if options.get("cond") == "frequency":  # ablation: generation conditions with empirical frequencies
                matrix = model._transformer.transform(train)
                probs = np.zeros_like(sampler._shipped_prob)
                start, row = 0, 0
                for info in model._transformer.output_info_list:
                    width = sum(span.dim for span in info)
                    if len(info) == 1 and info[0].activation_fn == "softmax":  # a discrete column
                        freq = matrix[:, start : start + width].sum(axis=0)
                        probs[row, :width] = freq / freq.sum()
                        row += 1
                    start += width
                sampler._discrete_column_category_prob = probs
        model.set_random_state(spec["seed"] + 1)
        t0 = time.perf_counter()
        with torch.no_grad():
            synth = model.sample(spec["n_sample"])
        sample_s[variant["csv"]] = time.perf_counter() - t0
        synth.to_csv(variant["csv"], index=False)
    losses = model.loss_values
    if spec["model"] == "ctgan":  # the package logs the last batch of each epoch
        per_epoch = {
            "loss_g": losses["Generator Loss"].astype(float).tolist(),
            "loss_d": losses["Discriminator Loss"].astype(float).tolist(),
        }
    else:  # the package logs every batch: mean per epoch
        per_epoch = {"loss": losses.groupby("Epoch")["Loss"].mean().astype(float).tolist()}
    import ctgan

    out = {
        "package_version": ctgan.__version__,
        "torch_version": torch.__version__,
        "fit_seconds": fit_s,
        "sample_seconds": sample_s,
        "losses": per_epoch,
        "track": track,
    }
    Path(spec["result_json"]).write_text(json.dumps(out))


# ---------------------------------------------------------------------------------------------------------
# Driver: runs in tabmem's environment
# ---------------------------------------------------------------------------------------------------------
def _parse_variant(text: str) -> tuple[str, dict]:
    from ctgan_condition_fidelity import parse_variant

    return parse_variant(text)


def _label(impl: str, variant: str, epochs: int, seed: int) -> str:
    safe = variant.replace(":", "_").replace(",", "_").replace("=", "-")
    return f"{impl}_{safe}_e{epochs}_s{seed}"


def _score(synth, ds, detector, hold_result) -> dict:
    """Memorization, fidelity and marginals of ``synth`` against the training table, with tabmem's code."""
    import numpy as np

    from tabmem.metrics import Shape, Trend

    train, schema = ds.train, ds.schema
    res = detector.score(synth)
    tvd = {}
    for c in schema.categorical:
        p = train[c].astype(str).value_counts(normalize=True)
        q = synth[c].astype(str).value_counts(normalize=True)
        tvd[c] = 0.5 * float(p.sub(q, fill_value=0.0).abs().sum())
    num = {
        c: {
            "mean": float(np.mean(synth[c])),
            "std": float(np.std(synth[c])),
            "real_mean": float(np.mean(train[c])),
            "real_std": float(np.std(train[c])),
        }
        for c in schema.numerical
    }
    target = {}
    if schema.target is not None and schema.target in schema.categorical:
        target = {str(k): float(v) for k, v in synth[schema.target].astype(str).value_counts(normalize=True).items()}
    return {
        "memorization_rate_pct": 100 * res.memorization_rate,
        "holdout_rate_pct": 100 * hold_result.memorization_rate,
        "shape": Shape().evaluate(train, synth, schema).value,
        "trend": Trend().evaluate(train, synth, schema).value,
        # bins on the real table's edges: not moved by a handful of generated values outside the real range
        "trend_real_edges": Trend(binning="real_edges").evaluate(train, synth, schema).value,
        "outside_real_range": {
            c: float(((synth[c] < train[c].min()) | (synth[c] > train[c].max())).mean()) for c in schema.numerical
        },
        "tvd": tvd,
        "max_tvd": max(tvd.values()) if tvd else 0.0,
        "numerical": num,
        "target_share": target,
    }


def _run_reference(args, ds, variants: list[str], seed: int, workdir: Path) -> list[tuple[object, dict]]:
    """One fit of the package for ``seed``, one sample per variant (variants only change the sampling)."""
    import pandas as pd

    train_csv = workdir / "train.csv"
    if not train_csv.exists():
        ds.train.to_csv(train_csv, index=False)
    base = _label("reference", "fit", args.epochs, seed)
    csvs = [str(workdir / f"{_label('reference', v, args.epochs, seed)}.csv") for v in variants]
    spec = {
        "model": args.model,
        "epochs": args.epochs,
        "seed": seed,
        "train_csv": str(train_csv),
        "discrete": list(ds.schema.categorical),
        "n_sample": len(ds.train),
        "track_every": args.track_every,
        "track_rows": args.track_rows,
        "samples": [
            {"options": {k: str(v) for k, v in _parse_variant(v)[1].items()}, "csv": c} for v, c in zip(variants, csvs)
        ],
        "result_json": str(workdir / f"{args.model}_{base}.worker.json"),
        "save": str(workdir / f"{args.model}_{base}.model.pkl"),
    }
    spec_path = workdir / f"{args.model}_{base}.spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    t0 = time.perf_counter()
    if not (Path(spec["result_json"]).exists() and all(Path(c).exists() for c in csvs)):
        # else: rescoring (a run's JSON was deleted) reuses the package's samples instead of refitting
        subprocess.run([args.ref_python, __file__, "--worker", str(spec_path)], check=True, env=env)
    wall = time.perf_counter() - t0
    info = json.loads(Path(spec["result_json"]).read_text())
    wall = info.setdefault("wall_seconds", wall)
    Path(spec["result_json"]).write_text(json.dumps(info))
    # keyed by file name: a folder of cached runs can be moved or copied and rescored
    sample_s = {Path(k).name: v for k, v in info["sample_seconds"].items()}
    runs = []
    for csv in csvs:
        synth = pd.read_csv(csv, dtype={c: str for c in ds.schema.categorical}, keep_default_na=False)
        for c in ds.schema.numerical:  # the package returns the training dtype; CSV may turn ints to floats
            synth[c] = synth[c].astype(ds.train[c].dtype) if synth[c].notna().all() else synth[c]
        runs.append((synth, {**info, "sample_seconds": sample_s[Path(csv).name], "wall_seconds": wall}))
    return runs


SAMPLING_PARAMS = {
    "sample_conditions",
    "sample_batch_norm",
    "discrete_sampling",
    "numerical_decoding",
}  # no effect on training


def _run_tabmem(args, ds, variant: str, seed: int, workdir: Path) -> tuple[object, dict]:
    """Fit (or reuse the fit of a variant that differs only in sampling options), then sample.

    Fits checkpoint every 10 epochs and resume from the checkpoint, so a killed long run continues.
    """
    import hashlib

    import torch

    from tabmem.generators import get_generator, load_generator

    torch.set_num_threads(1)
    preset, params = _parse_variant(variant)
    gen = get_generator(
        args.model, preset=None if preset == "default" else preset, epochs=args.epochs, random_state=seed, **params
    )
    all_params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in gen.get_params().items()}
    training = {k: v for k, v in all_params.items() if k not in SAMPLING_PARAMS and k != "device"}
    key = hashlib.sha1(json.dumps(training, sort_keys=True, default=str).encode()).hexdigest()[:10]
    model_path = workdir / f"{args.model}_tabmem_fit_{key}.pt"
    info_path = workdir / f"{args.model}_tabmem_fit_{key}.fit.json"
    if model_path.exists() and info_path.exists():
        sampling = {k: v for k, v in all_params.items() if k in SAMPLING_PARAMS}
        gen = load_generator(model_path)
        gen.set_params(**sampling)
        fit_info = json.loads(info_path.read_text())
    else:
        ckpt = workdir / f"{args.model}_tabmem_fit_{key}.ckpt.pt"
        resume = {"resume_from": ckpt} if ckpt.exists() else {}
        callbacks = []
        if args.track_every and args.model == "ctgan":
            from ctgan_condition_fidelity import FidelityTracker

            track_path = workdir / f"{args.model}_tabmem_fit_{key}.track.json"
            callbacks.append(FidelityTracker(args.track_every, args.track_rows, seed + 1, track_path))
        t0 = time.perf_counter()
        gen.fit(ds.train, ds.schema, callbacks=callbacks, checkpoint_every=10, checkpoint_path=ckpt, **resume)
        keys = ("loss_g", "loss_d", "cond_loss") if args.model == "ctgan" else ("loss",)
        fit_info = {
            "fit_seconds": time.perf_counter() - t0,
            "epoch_seconds": float(sum(h["epoch_time"] for h in gen.history_)),
            "resumed": bool(resume),
            "losses": {k: [float(h[k]) for h in gen.history_] for k in keys},
            "model_file": str(model_path),
            "track": callbacks[0].track if callbacks else [],
        }
        gen.save(model_path)
        info_path.write_text(json.dumps(fit_info))
        ckpt.unlink(missing_ok=True)
    t0 = time.perf_counter()
    synth = gen.sample(len(ds.train), random_state=seed + 1)
    sample_s = time.perf_counter() - t0
    return synth, {**fit_info, "sample_seconds": sample_s, "params": all_params}


def _table(results: list[dict], target_class: str) -> str:
    head = (
        "| run | seed | epochs | memorization % | holdout % | Shape | Trend | Trend (real edges) | "
        f"`{target_class}` share | max TVD | fit s |\n|---|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = [head]
    for r in sorted(results, key=lambda r: (r["impl"], r["variant"], r["epochs"], r["seed"])):
        rows.append(
            f"| {r['impl']} {r['variant']} | {r['seed']} | {r['epochs']} | {r['memorization_rate_pct']:.2f} | "
            f"{r['holdout_rate_pct']:.2f} | {r['shape']:.3f} | {r['trend']:.3f} | {r.get('trend_real_edges', float('nan')):.3f} | "
            f"{r['target_share'].get(target_class, 0.0):.3f} | {r['max_tvd']:.3f} | {r['epoch_seconds'] if r.get('resumed') else r['fit_seconds']:.0f} |"
        )
    return "\n".join(rows)


def main() -> None:
    from ctgan_condition_fidelity import adult_and_out, reference_args, reference_parser

    ap = reference_parser(__doc__)
    ap.add_argument("--model", choices=["ctgan", "tvae"], default="ctgan")
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--tabmem", nargs="*", default=["paper", "default"], help="tabmem variants PRESET[:k=v,...]")
    ap.add_argument("--reference", nargs="*", default=["package"], help="reference variants (package[:bn=eval,...])")
    ap.add_argument(
        "--track-every",
        type=int,
        default=0,
        help="CTGAN: every k epochs, the label share and condition fidelity (ctgan_condition_fidelity.py)",
    )
    ap.add_argument("--track-rows", type=int, default=10_000, help="rows generated per tracked epoch")
    args = reference_args(ap, _worker, "folder for the cached runs (JSON, samples); required")
    if args is None:
        return
    from tabmem.memorization.replicas import ReplicaDetector

    ds, out = adult_and_out(args)
    detector = ReplicaDetector("fang2024", n_jobs=1).fit(ds.train, ds.schema)
    hold = detector.score(ds.test, unseen="mismatch", name="holdout")

    def record(impl: str, variant: str, seed: int, synth, info: dict) -> None:
        rec = {"model": args.model, "impl": impl, "variant": variant, "epochs": args.epochs, "seed": seed, **info}
        rec.update(_score(synth, ds, detector, hold))
        if rec.get("track"):
            from ctgan_condition_fidelity import summarise

            rec["track"] = [
                {"epoch": t["epoch"], **summarise(t, ds.train, ds.schema)} if "cells" in t else t for t in rec["track"]
            ]
        path = out / f"{args.model}_{_label(impl, variant, args.epochs, seed)}.json"
        path.write_text(json.dumps(rec, indent=1))
        print(
            f"  {impl} {variant}: memorization {rec['memorization_rate_pct']:.2f}% "
            f"(holdout {rec['holdout_rate_pct']:.2f}%), Shape {rec['shape']:.3f}, Trend {rec['trend']:.3f}, "
            f"fit {rec['fit_seconds']:.0f}s",
            flush=True,
        )

    def done(impl: str, variant: str, seed: int) -> bool:
        return (out / f"{args.model}_{_label(impl, variant, args.epochs, seed)}.json").exists()

    for seed in args.seeds:
        todo = [v for v in args.reference if not done("reference", v, seed)]
        if todo:
            print(f"[{time.strftime('%H:%M:%S')}] {args.model} reference seed {seed}: {todo} ...", flush=True)
            for variant, (synth, info) in zip(todo, _run_reference(args, ds, todo, seed, out)):
                record("reference", variant, seed, synth, info)
        for variant in args.tabmem:
            if not done("tabmem", variant, seed):
                print(f"[{time.strftime('%H:%M:%S')}] {args.model} tabmem {variant} seed {seed} ...", flush=True)
                synth, info = _run_tabmem(args, ds, variant, seed, out)
                record("tabmem", variant, seed, synth, info)
    results = [
        json.loads(p.read_text())
        for p in sorted(out.glob(f"{args.model}_*.json"))
        if not any(t in p.name for t in (".worker", ".spec", ".fit", ".track"))
    ]
    target_class = ">50K"
    print(_table(results, target_class))


if __name__ == "__main__":
    sys.exit(main())
