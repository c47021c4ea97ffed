"""How CTGAN's generated rows follow their conditions, per epoch: tabmem against the reference ``ctgan`` package.

A script, not a study: it compares with the reference ``ctgan`` package, which runs in a virtualenv of
its own (``--ref-python``) and is never a tabmem dependency; the study engine runs tabmem components only.

The label share of a CTGAN sample is ``sum_j (1/J) sum_k w_jk P_gen(label | column j = k)`` under the
generation law (column ``j`` uniform, category ``k`` with weight ``w_jk``). This script measures each
factor on both implementations, on the Adult training split, with conditions recorded row by row:

* ``honour``: share of rows whose generated value of the conditioned column equals the condition;
* ``cond_ce``: the conditional cross-entropy on the raw logits (the generator's training term);
* per conditioned column: the generated positive-label share against the share the real data give
  for the same conditions (``expected``), and the honour rate;
* the label share under the training law (what the ``paper`` preset and the package generate) and,
  reweighted from the same rows, under the data's frequencies.

Each generated batch has ``batch_size`` rows and BatchNorm uses the batch's statistics (the package's
sampling, tabmem's ``sample_batch_norm="batch"``). Tracking never changes training: tabmem's sampling
uses a private RNG; in the package the global numpy/torch RNG states and the BatchNorm buffers are saved
and restored around each measurement.

The package (BUSL-1.1, never a tabmem dependency) runs in its own environment as a subprocess
(``--ref-python``), as in ``ctgan_tvae_reference.py``; the worker imports only the package, numpy,
pandas and torch.

    # per-epoch trajectories, 30 epochs, both sides (about 10 minutes per side on a quiet core)
    python studies/ctgan_tvae/ctgan_condition_fidelity.py --side reference tabmem --epochs 30 --seed 0 \\
        --track-every 3 --out runs/fidelity30
    # a saved tabmem model (e.g. a fit of ctgan_tvae_reference.py)
    python studies/ctgan_tvae/ctgan_condition_fidelity.py --model-file runs/cmp_ctgan_300/ctgan_tabmem_fit_X.pt \\
        --out runs/fidelity_saved
    # the two normalisers' encodings of the training table (no training, a minute)
    python studies/ctgan_tvae/ctgan_condition_fidelity.py --encoding --out runs/encoding
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_REF_PYTHON = os.environ.get("TABMEM_CTGAN_REF_PYTHON")  # the reference package's interpreter
TARGET, POSITIVE = "income", ">50K"


# ---------------------------------------------------------------------------------------------------------
# Shared by both sides (numpy/pandas only)
# ---------------------------------------------------------------------------------------------------------
def default_data_dir() -> str | None:
    """``$TABMEM_DATA_DIR``, else ``../shared/datasets`` next to the checkout, else None (the dataset cache)."""
    import os
    from pathlib import Path

    sibling = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return os.environ.get("TABMEM_DATA_DIR") or (str(sibling) if sibling.is_dir() else None)


def cell_counts(frame, cond_column, cond_value, ce) -> dict:
    """Per (conditioned column, category): rows, rows honouring the condition, rows with the positive label."""
    import numpy as np
    import pandas as pd

    cond_column = np.asarray(cond_column, dtype=object)
    cond_value = np.asarray(cond_value, dtype=object).astype(str)
    honoured = np.zeros(len(frame), dtype=bool)
    for col in np.unique(cond_column):
        sel = cond_column == col
        honoured[sel] = frame[col].astype(str).to_numpy()[sel] == cond_value[sel]
    cells = pd.DataFrame(
        {
            "column": cond_column,
            "value": cond_value,
            "honoured": honoured,
            "positive": frame[TARGET].astype(str).to_numpy() == POSITIVE,
        }
    )
    agg = cells.groupby(["column", "value"]).agg(
        n=("honoured", "size"), honoured=("honoured", "sum"), positive=("positive", "sum")
    )
    return {
        "n": len(frame),
        "positive_share": float(cells["positive"].mean()),
        "cond_ce": float(ce),
        "cells": [
            {"column": c, "value": v, "n": int(r.n), "honoured": int(r.honoured), "positive": int(r.positive)}
            for (c, v), r in agg.iterrows()
        ],
    }


# ---------------------------------------------------------------------------------------------------------
# Worker: runs inside the reference package's environment (imports nothing from tabmem)
# ---------------------------------------------------------------------------------------------------------
def reference_measure(model, n: int, seed: int) -> dict:
    """``n`` rows generated as the package does (training-law conditions, train-mode BatchNorm), conditions kept."""
    import numpy as np
    import pandas as pd
    import torch

    gen = model._generator
    # the package draws from the global RNGs: saved here and restored below
    np_state, torch_state = np.random.get_state(), torch.get_rng_state()  # noqa: NPY002
    buffers = {k: v.clone() for k, v in gen.state_dict().items()}
    np.random.seed(seed)  # noqa: NPY002
    torch.manual_seed(seed)
    names, values, starts = [], [], []
    out_starts, st = [], 0
    for info in model._transformer._column_transform_info_list:
        if info.column_type == "discrete":
            names.append(info.column_name)
            values.append([str(v) for v in info.transform.dummies])
            starts.append(sum(len(v) for v in values[:-1]))
            out_starts.append(st)
        st += info.output_dimensions
    bs = model._batch_size
    frames, cols, vals, ces = [], [], [], []
    try:
        with torch.no_grad():
            for _ in range(-(-n // bs)):
                z = torch.randn(bs, model._embedding_dim)
                cond = model._data_sampler.sample_original_condvec(bs)
                raw = gen(torch.cat([z, torch.from_numpy(cond)], dim=1))
                act = model._apply_activate(raw)
                frames.append(model._transformer.inverse_transform(act.numpy()))
                hot = cond.argmax(1)
                j = np.searchsorted(starts, hot, side="right") - 1
                k = hot - np.asarray(starts)[j]
                cols += [names[i] for i in j]
                vals += [values[i][kk] for i, kk in zip(j, k)]
                for i in np.unique(j):
                    sel = j == i
                    w = len(values[i])
                    logits = raw[torch.from_numpy(sel)][:, out_starts[i] : out_starts[i] + w]
                    ces.append(
                        float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(k[sel]), reduction="sum"))
                    )
    finally:
        gen.load_state_dict(buffers)
        np.random.set_state(np_state)  # noqa: NPY002
        torch.set_rng_state(torch_state)
    frame = pd.concat(frames, ignore_index=True).iloc[:n]
    n_rows = len(frames) * bs
    return cell_counts(frame, cols[:n], vals[:n], sum(ces) / n_rows)


def _worker(spec_path: str) -> None:
    import numpy as np
    import pandas as pd
    import torch

    spec = json.loads(Path(spec_path).read_text())
    torch.set_num_threads(1)
    train = pd.read_csv(spec["train_csv"], dtype={c: str for c in spec["discrete"]}, keep_default_na=False)
    if spec.get("encoding"):
        from ctgan.data_transformer import DataTransformer

        np.random.seed(spec["seed"])  # noqa: NPY002  (the package samples modes from the global RNG)
        tr = DataTransformer()
        tr.fit(train, spec["discrete"])
        matrix = tr._synchronous_transform(train, tr._column_transform_info_list)
        out = {}
        for info, block in zip(tr._column_transform_info_list, matrix):
            if info.column_type != "continuous":
                continue
            bgm, valid = info.transform._bgm_transformer, info.transform.valid_component_indicator
            comp = block[:, 1:].argmax(1)
            out[info.column_name] = {
                "means": bgm.means_.ravel()[valid].tolist(),
                "stds": np.sqrt(bgm.covariances_.ravel()[valid]).tolist(),
                "weights": bgm.weights_[valid].tolist(),
                "component_share": np.bincount(comp, minlength=int(valid.sum())).tolist(),
                "alpha_at_bound": float(np.mean(np.abs(block[:, 0]) >= 0.985)),
                "alpha_mean": float(block[:, 0].mean()),
                "alpha_std": float(block[:, 0].std()),
            }
        Path(spec["result_json"]).write_text(json.dumps(out))
        return

    import ctgan.synthesizers.ctgan as ctgan_module
    from ctgan import CTGAN

    model = CTGAN(epochs=spec["epochs"], enable_gpu=False)
    model.set_random_state(spec["seed"])
    every, track = spec["track_every"], []

    def tracked(iterable, disable=True):  # stands in for tqdm: measure after every ``every`` epochs
        for epoch in iterable:
            yield epoch
            if every and (epoch + 1) % every == 0:
                t0 = time.perf_counter()
                rec = reference_measure(model, spec["n_sample"], spec["seed"] + 1)
                track.append({"epoch": epoch + 1, "seconds": time.perf_counter() - t0, **rec})
                Path(spec["result_json"]).write_text(json.dumps({"track": track}))

    ctgan_module.tqdm = tracked
    t0 = time.perf_counter()
    model.fit(train, spec["discrete"])
    fit_s = time.perf_counter() - t0
    if spec.get("save"):
        model.save(spec["save"])
    Path(spec["result_json"]).write_text(json.dumps({"track": track, "fit_seconds": fit_s}))


# ---------------------------------------------------------------------------------------------------------
# Driver: runs in tabmem's environment
# ---------------------------------------------------------------------------------------------------------
def tabmem_measure(gen, n: int, seed: int) -> dict:
    """``n`` rows of a tabmem CTGAN with the recorded condition of each row (its own sampling options)."""
    import numpy as np
    import pandas as pd
    import torch

    norm = gen.normalizer_
    cat_cols = [s.column for s in norm.spans_ if s.role == "category"]
    bs = int(gen.batch_size)
    modes = [(m, m.training) for m in gen._torch_modules()]
    parts, cols, vals, ce_sum = [], [], [], 0.0
    try:
        for m, _ in modes:
            m.eval()
        torch_gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for _ in range(-(-n // bs)):
                raw, _, cond = gen._fake(bs, torch_gen, training=False, batch_stats=gen.sample_batch_norm == "batch")
                act = gen._ops.activate(raw, gen.tau, torch_gen)
                part = gen._decode_categories(gen._decode_sample(act.numpy(), None, 0))
                parts.append(part)
                cols += [cat_cols[j] for j in cond.column]
                vals += [str(norm.categories_[cat_cols[j]][k]) for j, k in zip(cond.column, cond.category)]
                ce = gen._ops.conditional_loss(raw, torch.from_numpy(cond.column), torch.from_numpy(cond.category))
                ce_sum += float(ce) * bs
    finally:
        for m, mode in modes:
            m.train(mode)
    frame = pd.concat(parts, ignore_index=True).iloc[:n]
    return cell_counts(frame, np.asarray(cols[:n]), np.asarray(vals[:n]), ce_sum / (len(parts) * bs))


class FidelityTracker:
    """Callback: :func:`tabmem_measure` every ``every`` epochs (sampling never touches the training RNG)."""

    def __init__(self, every: int, n: int, seed: int, path: Path) -> None:
        self.every, self.n, self.seed, self.path = every, n, seed, Path(path)
        # a resumed fit continues the records of the interrupted one
        self.track = json.loads(self.path.read_text())["track"] if self.path.exists() else []

    def on_fit_start(self, gen) -> None:
        self.track = [r for r in self.track if r["epoch"] <= gen.epoch_]

    def on_epoch_end(self, gen, epoch: int, logs: dict) -> bool:
        if self.every and epoch % self.every == 0:
            t0 = time.perf_counter()
            rec = tabmem_measure(gen, self.n, self.seed)
            self.track.append(
                {"epoch": epoch, "seconds": time.perf_counter() - t0, "train_cond_loss": logs.get("cond_loss"), **rec}
            )
            self.path.write_text(json.dumps({"track": self.track}))
        return False


def summarise(rec: dict, train, schema) -> dict:
    """Honour rate, label share (training law, and reweighted to the data's frequencies) and, per
    conditioned column, generated against expected positive share."""
    import numpy as np
    import pandas as pd

    cells = pd.DataFrame(rec["cells"])
    y = train[TARGET].astype(str) == POSITIVE
    real = {c: train.assign(_y=y).groupby(train[c].astype(str))["_y"].agg(["mean", "size"]) for c in schema.categorical}
    cells["real_pos"] = [real[c].loc[v, "mean"] for c, v in zip(cells["column"], cells["value"])]
    cells["freq"] = [real[c].loc[v, "size"] / len(train) for c, v in zip(cells["column"], cells["value"])]
    per_col = {}
    for c, g in cells.groupby("column"):
        per_col[c] = {
            "n": int(g.n.sum()),
            "generated": float(g.positive.sum() / g.n.sum()),
            "expected": float((g.n * g.real_pos).sum() / g.n.sum()),
            "honour": float(g.honoured.sum() / g.n.sum()),
        }
    gen_pos = cells.positive / cells.n
    # frequency law: column uniform, category with its frequency; cells never drawn fall back to the real share
    freq_share = float(np.mean([(g.freq * gen_pos[g.index]).sum() / g.freq.sum() for _, g in cells.groupby("column")]))
    return {
        "positive_share": rec["positive_share"],
        "expected_share": float((cells.n * cells.real_pos).sum() / cells.n.sum()),
        "frequency_law_share": freq_share,
        "honour": float(cells.honoured.sum() / cells.n.sum()),
        "cond_ce": rec["cond_ce"],
        "per_column": per_col,
    }


def _print(label: str, s: dict) -> None:
    cols = " ".join(f"{c[:6]} {v['generated'] - v['expected']:+.3f}" for c, v in sorted(s["per_column"].items()))
    print(
        f"{label}: share {s['positive_share']:.3f} (expected {s['expected_share']:.3f}, frequency law "
        f"{s['frequency_law_share']:.3f}), honour {s['honour']:.3f}, CE {s['cond_ce']:.3f} | gen-exp per column: {cols}",
        flush=True,
    )


def parse_variant(text: str) -> tuple[str, dict]:
    """``PRESET[:k=v,...]`` as the preset and its parameters (values read as JSON when they parse)."""
    name, _, rest = text.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return name, params


def reference_parser(doc: str) -> argparse.ArgumentParser:
    """The parser of a script that compares with the reference package (this one, ctgan_tvae_reference.py);
    its own options follow ``--worker``, and :func:`reference_args` adds the shared ones last."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # the reference side, run under --ref-python
    return ap


def reference_args(ap: argparse.ArgumentParser, worker, out_help: str | None = None) -> argparse.Namespace | None:
    """Add ``--ref-python``, ``--data-dir`` and ``--out``, parse; in a worker process run ``worker(spec)``
    and return None."""
    ap.add_argument(
        "--ref-python", default=DEFAULT_REF_PYTHON, help="python of the ctgan venv (default: $TABMEM_CTGAN_REF_PYTHON)"
    )
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    ap.add_argument("--out", help=out_help)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return None
    if not args.out:
        ap.error("--out is required")
    if not args.ref_python:
        ap.error("--ref-python (or $TABMEM_CTGAN_REF_PYTHON) is required: the python of the ctgan venv")
    return args


def adult_and_out(args: argparse.Namespace):
    """Adult (train/test, from ``--data-dir``) and the created ``--out`` folder; numpy warnings off."""
    import numpy as np

    from tabmem.data.datasets import load_dataset

    np.seterr(all="ignore")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return load_dataset("adult", data_dir=args.data_dir), out


def main() -> None:
    ap = reference_parser(__doc__)
    ap.add_argument("--side", nargs="*", default=[], choices=["reference", "tabmem"])
    ap.add_argument("--tabmem", default="paper", help="tabmem variant PRESET[:k=v,...] (default: paper)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--track-every", type=int, default=3)
    ap.add_argument("--n-sample", type=int, default=20_000)
    ap.add_argument("--model-file", help="a saved tabmem CTGAN to measure (no training)")
    ap.add_argument("--save-reference", help="save the package's fitted model to this file")
    ap.add_argument("--encoding", action="store_true", help="compare the normalisers' encodings (no training)")
    args = reference_args(ap, _worker)
    if args is None:
        return
    ds, out = adult_and_out(args)
    train, schema = ds.train, ds.schema
    train_csv = out / "train.csv"
    if not train_csv.exists():
        train.to_csv(train_csv, index=False)

    def run_worker(name: str, **spec) -> dict:
        spec = {"train_csv": str(train_csv), "discrete": list(schema.categorical), "seed": args.seed, **spec}
        spec["result_json"] = str(out / f"{name}.worker.json")
        spec_path = out / f"{name}.spec.json"
        spec_path.write_text(json.dumps(spec))
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        env.pop("PYTHONPATH", None)
        subprocess.run([args.ref_python, __file__, "--worker", str(spec_path)], check=True, env=env)
        return json.loads(Path(spec["result_json"]).read_text())

    if args.encoding:
        _compare_encodings(run_worker("encoding", encoding=True), train, schema, args.seed, out)
        return
    if args.model_file:
        from tabmem.generators import load_generator

        gen = load_generator(args.model_file)
        s = summarise(tabmem_measure(gen, args.n_sample, args.seed + 1), train, schema)
        (out / f"{Path(args.model_file).stem}.summary.json").write_text(json.dumps(s, indent=1))
        _print(Path(args.model_file).name, s)
        return
    for side in args.side:
        name = f"{side}_{args.tabmem if side == 'tabmem' else 'package'}_e{args.epochs}_s{args.seed}".replace(":", "_")
        t0 = time.perf_counter()
        if side == "reference":
            track = run_worker(
                name,
                epochs=args.epochs,
                track_every=args.track_every,
                n_sample=args.n_sample,
                save=args.save_reference,
            )["track"]
        else:
            import torch

            from tabmem.generators import get_generator

            torch.set_num_threads(1)
            preset, params = parse_variant(args.tabmem)
            gen = get_generator(
                "ctgan",
                preset=None if preset == "default" else preset,
                epochs=args.epochs,
                random_state=args.seed,
                **params,
            )
            tracker = FidelityTracker(args.track_every, args.n_sample, args.seed + 1, out / f"{name}.track.json")
            gen.fit(train, schema, callbacks=[tracker])
            track = tracker.track
        summary = [{"epoch": r["epoch"], **summarise(r, train, schema)} for r in track]
        (out / f"{name}.summary.json").write_text(
            json.dumps({"wall_seconds": time.perf_counter() - t0, "track": summary}, indent=1)
        )
        for s in summary:
            _print(f"{name} epoch {s['epoch']:>3}", s)


def _compare_encodings(ref: dict, train, schema, seed: int, out: Path) -> None:
    import numpy as np

    from tabmem.generators._rng import derive_seed
    from tabmem.generators._transformer import ModeSpecificNormalizer

    norm = ModeSpecificNormalizer(10, 0.005, random_state=derive_seed(seed, 21)).fit(train, schema)
    matrix = norm.transform(train, random_state=derive_seed(seed, 22))
    mine = {}
    for i, s in enumerate(norm.spans_):
        if s.role != "scalar":
            continue
        info, modes = norm.numeric_[s.column], norm.spans_[i + 1]
        alpha = matrix[:, s.start]
        mine[s.column] = {
            "means": info.means.tolist(),
            "stds": info.stds.tolist(),
            "weights": np.exp(info.log_weights).tolist(),
            "component_share": matrix[:, modes.start : modes.end].sum(0).astype(int).tolist(),
            "alpha_at_bound": float(np.mean(np.abs(alpha) >= 0.985)),
            "alpha_mean": float(alpha.mean()),
            "alpha_std": float(alpha.std()),
        }
    (out / "encoding.json").write_text(json.dumps({"reference": ref, "tabmem": mine}, indent=1))
    for col in ref:
        for side, d in (("package", ref[col]), ("tabmem ", mine[col])):
            order = np.argsort(d["means"])
            modes = ", ".join(f"{d['means'][k]:.4g}~{d['stds'][k]:.3g} (n={d['component_share'][k]})" for k in order)
            print(
                f"{col:>15} {side}: {len(order)} modes, alpha at +-0.99: {d['alpha_at_bound']:.4f}, "
                f"alpha mean {d['alpha_mean']:+.3f} std {d['alpha_std']:.3f} | {modes}"
            )


if __name__ == "__main__":
    sys.exit(main())
