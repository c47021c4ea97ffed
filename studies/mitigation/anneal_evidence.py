"""Evidence for docs/mitigation.md part 9: does annealing the learning rate close mstop's quality gap?

Part 5's ``mstop`` keeps a mid-schedule checkpoint (epochs 200-500 of 2,000, the learning rate still at
75-90% of its start). Hypothesis: its quality gap is the un-annealed rate, not the training length.
Arms, judged exactly as part 5 judges ``mstop`` (``mitigation_evidence.evaluate`` on the evaluation
holdout, ``more_samples`` for 4 more samples, the DCR attack), paired with the same seed's ``none``:

* ``mstop+anneal``   the chosen epoch-E checkpoint (weights AND AdamW state) trained A = round(0.25 E)
  more epochs, the learning rate falling linearly from its value at E to 0 (TabDDPM ``anneal_from=E``,
  ``schedule_epochs`` = the run's epochs, resumed from the checkpoint).
* ``mstop+anneal100``  the same with A = E (added after the first table: exploratory).
* ``mstop+ema``      an exponential moving average of the weights (decay 0.999 per step, zero-initialised and
  bias-corrected) over a fresh training of the same seed on the run's own 2,000-epoch schedule, stopped at E
  (the raw weights at E equal the chosen snapshot's: checked per seed).
* ``mstop+retrain``  a fresh training of the same seed whose schedule ends at E (``epochs=E``).

Every model's rule is re-checked on one more sample against the selection holdout (``recheck`` in its
eval.json). Inputs (read-only): part 5's ``mstop/seedN`` and ``none/seedN`` directories (``--src``) with
their ``eval.json``/``eval_k.json``; they and the models are copied into ``--out`` first (the copied
checkpoint gets the constructor defaults of TabDDPM parameters added since it was written, which a
resume compares). Usage::

    python studies/mitigation/anneal_evidence.py --src ../i25-stop/runs/i25/adult1000-mstop/tabddpm \\
        --arms mstop+anneal mstop+retrain mstop+ema --seeds 0 1 2 3 4 --out runs/i25anneal/adult1000-mstop/tabddpm
    python studies/mitigation/anneal_evidence.py --quality-k --out runs/i25anneal/adult1000-mstop/tabddpm
    python studies/mitigation/anneal_evidence.py --report --out runs/i25anneal/adult1000-mstop/tabddpm

(``--dataset shoppers`` for Shoppers; the commands that produced docs/mitigation.md part 9 are there.)
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
from mitigation_evidence import (
    data,
    dcr_attack_on_model,
    default_data_dir,
    evaluate,
    more_samples,
    selection_rows,
    t_ci,
)

#: anneal length as a fraction of the chosen epoch: 0.25 fixed before any result was seen; 1.0 added after
#: (exploratory: does a longer anneal close the MLE gap that the 0.25 one left?)
ANNEAL_ARMS = {"mstop+anneal": 0.25, "mstop+anneal100": 1.0}


def copy_inputs(src: Path, out: Path, seed: int) -> None:
    """Part 5's judged files and the chosen model (model.pt, summary.json) of one seed, copied once."""
    for arm in ("none", "mstop"):
        dst = out / arm / f"seed{seed}"
        (dst / "train").mkdir(parents=True, exist_ok=True)
        for f in ("eval.json", "eval_k.json"):
            if not (dst / f).is_file():
                shutil.copyfile(src / arm / f"seed{seed}" / f, dst / f)
    for f in ("model.pt", "summary.json", "config.json"):
        if not (out / "mstop" / f"seed{seed}" / "train" / f).is_file():
            shutil.copyfile(src / "mstop" / f"seed{seed}" / "train" / f, out / "mstop" / f"seed{seed}" / "train" / f)
    complete_params(out / "mstop" / f"seed{seed}" / "train" / "model.pt")
    none_model = out / "none" / f"seed{seed}" / "train" / "model.pt"
    if not none_model.is_file():  # the last epoch of the same run (part 5's none arm)
        shutil.copyfile(src / "mstop" / f"seed{seed}" / "train" / "last_model.pt", none_model)


def complete_params(path: Path) -> None:
    """Add the constructor defaults of parameters added since the file was written (resume compares them)."""
    import inspect

    import torch

    from tabmem.generators.tabddpm import TabDDPM

    payload = torch.load(path, map_location="cpu", weights_only=True)
    defaults = {k: p.default for k, p in inspect.signature(TabDDPM).parameters.items()}
    missing = {k: v for k, v in defaults.items() if k not in payload["params"]}
    if missing:
        payload["params"].update(missing)
        torch.save(payload, path)


def recheck(model_dir: Path, train, selection, schema, seed: int, limit: float = 0.05) -> dict:
    """The rule's figures for a model: one |train|-row sample vs the selection holdout (excess, interval, Shape)."""
    from tabmem.generators import load_generator
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.memorization.uncertainty import proportion_difference_ci
    from tabmem.metrics.shape import Shape

    gen = load_generator(model_dir / "model.pt", device="cpu")
    sample = gen.sample(len(train), random_state=int(np.random.SeedSequence([seed, 4000]).generate_state(1)[0]))
    det = ReplicaDetector("fang2024", n_jobs=1).fit(train, schema)
    k = int(det.score(sample, unseen="mismatch").table["is_replica"].sum())
    kh = int(det.score(selection, name="holdout", unseen="mismatch").table["is_replica"].sum())
    lo, hi = proportion_difference_ci(k, len(sample), kh, len(selection), random_state=seed)
    shape = float(Shape().compute(train, sample, schema))
    return {"excess": k / len(sample) - kh / len(selection), "excess_lo": lo, "excess_hi": hi, "shape": shape,
            "within_limit": hi <= limit, "shape_floor_met": shape >= 0.95}  # fmt: skip


EMA_DECAY = 0.999  # per optimizer step (TabDDPM's reference code), fixed before any result was seen


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


class _EMA:
    """Exponential moving average of the denoiser's weights, updated once per epoch with decay**steps.

    Zero-initialised and bias-corrected (divided by 1 - decay**t), so the average is a weighted mean of
    the trained iterates only: with a few hundred epochs the reference code's average started from the
    random initial weights would still give them 30-45% of the weight.
    """

    order = 10

    def __init__(self, decay: float):
        self.decay, self.steps, self.avg = decay, 0, None

    def on_epoch_end(self, gen, epoch, logs) -> None:
        import torch

        d = self.decay**gen.steps_per_epoch_
        state = {k: v.detach().clone().double() for k, v in gen.model_.state_dict().items()}
        self.avg = {k: torch.zeros_like(v) for k, v in state.items()} if self.avg is None else self.avg
        for k, v in state.items():
            self.avg[k].mul_(d).add_(v, alpha=1 - d)
        self.steps += gen.steps_per_epoch_

    def averaged(self) -> dict:
        corr = 1 - self.decay**self.steps
        return {k: (v / corr).float() for k, v in self.avg.items()}


def train_arm(arm: str, out: Path, seed: int, train, schema) -> tuple[Path, dict]:
    """Train one arm's model into ``out/arm/seedN/train/model.pt``; returns the dir and what was done."""
    from tabmem.generators import get_generator, load_generator

    chosen_dir = out / "mstop" / f"seed{seed}" / "train"
    summary = json.loads((chosen_dir / "summary.json").read_text())
    epoch, total = int(summary["epochs"]), int(summary["selection"]["epochs_trained"])
    cfg = json.loads((chosen_dir / "config.json").read_text())
    model_dir = out / arm / f"seed{seed}" / "train"
    model_dir.mkdir(parents=True, exist_ok=True)
    if arm in ANNEAL_ARMS:
        extra = max(1, round(ANNEAL_ARMS[arm] * epoch))
        gen = load_generator(chosen_dir / "model.pt", device="cpu")
        assert gen.epoch_ == epoch, (gen.epoch_, epoch)
        gen.set_params(epochs=epoch + extra, anneal_from=epoch, schedule_epochs=total)
        gen.fit(train, schema, resume_from=chosen_dir / "model.pt")
        info = {"chosen_epoch": epoch, "anneal_epochs": extra, "lr_at_chosen": gen.lr_at(gen.steps_per_epoch_ * epoch),
                "last_lr": gen.history_[-1]["lr"], "adam_state": "carried over from the checkpoint"}  # fmt: skip
    elif arm == "mstop+retrain":
        params = {**cfg["params"], "epochs": epoch}
        gen = get_generator("tabddpm", **params)
        gen.fit(train, schema, random_state=seed)
        info = {"chosen_epoch": epoch, "epochs": epoch, "last_lr": gen.history_[-1]["lr"]}
    elif arm == "mstop+ema":
        from tabmem.callbacks import StopAtEpoch

        gen = get_generator("tabddpm", **cfg["params"])  # the run's own schedule (epochs = 2,000)
        ema = _EMA(EMA_DECAY)
        gen.fit(train, schema, random_state=seed, callbacks=[ema, StopAtEpoch(epoch)])
        chosen = load_generator(chosen_dir / "model.pt", device="cpu")
        same = all(
            torch_equal(a, b) for a, b in zip(gen.model_.state_dict().values(), chosen.model_.state_dict().values())
        )
        gen.model_.load_state_dict(ema.averaged())
        info = {"chosen_epoch": epoch, "ema_decay_per_step": EMA_DECAY, "steps_per_epoch": gen.steps_per_epoch_,
                "raw_weights_equal_chosen_snapshot": bool(same)}  # fmt: skip
    else:
        raise SystemExit(f"unknown arm {arm!r}")
    gen.save(model_dir / "model.pt")
    return model_dir, info


def run(args) -> None:
    from tabmem._io import write_json

    out, src = Path(args.out), Path(args.src)
    train, hold, test, schema = data(args.dataset, args.n_train, args.data_dir)
    selection = selection_rows(args.dataset, args.n_train, args.data_dir)
    for seed in args.seeds:
        copy_inputs(src, out, seed)
        for arm in args.arms:
            run_dir = out / arm / f"seed{seed}"
            if (run_dir / "eval.json").is_file():
                print(f"skip {run_dir} (done)", flush=True)
                continue
            t0 = time.perf_counter()
            model_dir, info = train_arm(arm, out, seed, train, schema)
            trained = time.perf_counter() - t0
            result = evaluate(model_dir, train, schema, hold, test, seed, None, args.mle_grid)
            write_json(run_dir / "eval_k.json", more_samples(model_dir, train, hold, schema, seed, args.samples - 1))
            result["attack"] = dcr_attack_on_model(model_dir, train, hold, schema, seed)
            result["recheck"] = recheck(model_dir, train, selection, schema, seed)
            result.update(arm=arm, seed=seed, train_seconds=trained, wall_seconds=time.perf_counter() - t0, info=info)
            write_json(run_dir / "eval.json", result)
            f, q = result["fang2024"], result["fang2024"]["quality"]
            print(f"done {arm} seed {seed} {info}: excess {f['excess_memorization']:+.3f} shape {q['shape']:.4f} "
                  f"mle {q['mle']:.4f} DCR {result['attack']['auc']:.3f} recheck {result['recheck']} "
                  f"({result['wall_seconds']:.0f} s)", flush=True)  # fmt: skip


def quality_k(out: Path, dataset: str, n_train: int, data_dir: str, seeds: list[int], k: int, grid: str) -> None:
    """Shape, Trend and MLE of the ``k`` more samples ``more_samples`` scored (same seeds), every arm: quality_k.json.

    Added after the first table was seen: one sample's MLE (tiny grid) moves by about a point, the size of
    the criterion, so the quality changes are also given as means over the 5 samples of each model.
    """
    from tabmem._io import write_json
    from tabmem.generators import load_generator
    from tabmem.mitigation.evaluation import quality_scores

    train, hold, test, schema = data(dataset, n_train, data_dir)
    for arm_dir in sorted(p for p in out.iterdir() if p.is_dir()):
        for seed in seeds:
            run_dir = arm_dir / f"seed{seed}"
            if not (run_dir / "eval.json").is_file() or (run_dir / "quality_k.json").is_file():
                continue
            gen = load_generator(run_dir / "train" / "model.pt", device="cpu")
            rows = []
            for j in range(k):
                syn = gen.sample(
                    len(train), random_state=int(np.random.SeedSequence([seed, 3000 + j]).generate_state(1)[0])
                )
                q = quality_scores(train, syn, schema, test=test, mle_grid=grid, random_state=seed)  # as eval.json's
                rows.append({m: float(getattr(q, m)) for m in ("shape", "trend", "mle")})
            write_json(run_dir / "quality_k.json", {"k": k, "seed": seed, "samples": rows})
            print(f"quality_k {run_dir}: {rows}", flush=True)


def pooled_quality(run_dir: Path, metric: str) -> float:
    """``metric`` averaged over eval.json's sample and quality_k.json's (nan without quality_k.json)."""
    q = json.loads((run_dir / "eval.json").read_text())["fang2024"]["quality"][metric]
    if not (run_dir / "quality_k.json").is_file():
        return float("nan")
    more = json.loads((run_dir / "quality_k.json").read_text())["samples"]
    return float(np.mean([q, *(r[metric] for r in more)]))


def pooled_excess(run_dir: Path, distance: str) -> float:
    """Excess over the 5 samples (eval.json's first + eval_k.json's), as part 5's ``--use-k`` table."""
    r = json.loads((run_dir / "eval.json").read_text())
    k = json.loads((run_dir / "eval_k.json").read_text())
    d = r[distance]
    return float(np.mean([d["memorization_rate"], *k[distance]["rates"]])) - d["holdout_memorization_rate"]


def report(out: Path) -> None:
    """Per-arm table: excess (5 samples), paired change and share removed vs none, Shape/Trend/MLE, DCR AUC."""
    arms = [a.name for a in sorted(out.iterdir()) if a.is_dir() and a.name != "none"]
    fmt = lambda m, h, s=100.0: f"{s * m:.1f} ± {s * h:.1f}" if h == h else f"{s * m:.1f}"  # noqa: E731
    print("| arm | seeds | excess fang2024 (pts) | change vs none (pts) | removed fang2024 % | removed gower % "
          "| ΔShape (pts) | ΔTrend (pts) | ΔMLE (pts) | DCR AUC | ΔDCR AUC |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for arm in ["none", *arms]:
        seeds = sorted(int(p.name[4:]) for p in (out / arm).glob("seed*") if (p / "eval.json").is_file())
        seeds = [s for s in seeds if (out / "none" / f"seed{s}" / "eval.json").is_file()]
        if not seeds:
            continue
        ev = {s: json.loads((out / arm / f"seed{s}" / "eval.json").read_text()) for s in seeds}
        ev0 = {s: json.loads((out / "none" / f"seed{s}" / "eval.json").read_text()) for s in seeds}
        exc = {d: [pooled_excess(out / arm / f"seed{s}", d) for s in seeds] for d in ("fang2024", "gower")}
        exc0 = {d: [pooled_excess(out / "none" / f"seed{s}", d) for s in seeds] for d in ("fang2024", "gower")}
        q = {m: [ev[s]["fang2024"]["quality"][m] - ev0[s]["fang2024"]["quality"][m] for s in seeds]
             for m in ("shape", "trend", "mle")}  # fmt: skip
        auc = [ev[s]["attack"]["auc"] for s in seeds]
        dauc = [ev[s]["attack"]["auc"] - ev0[s]["attack"]["auc"] for s in seeds]
        if arm == "none":
            auc_cell = "{:.3f} ± {:.3f}".format(*t_ci(auc)[:2])
            print(
                f"| none | {len(seeds)} | {fmt(*t_ci(exc['fang2024'])[:2])} | - | - | - | - | - | - | {auc_cell} | - |"
            )
            continue
        rem = {d: [(b - a) / b for a, b in zip(exc[d], exc0[d])] for d in exc}
        change = [a - b for a, b in zip(exc["fang2024"], exc0["fang2024"])]
        cells = [fmt(*t_ci(exc["fang2024"])[:2]), fmt(*t_ci(change)[:2]), fmt(*t_ci(rem["fang2024"])[:2]),
                 fmt(*t_ci(rem["gower"])[:2]), *(fmt(*t_ci(q[m])[:2]) for m in ("shape", "trend", "mle")),
                 "{:.3f} ± {:.3f}".format(*t_ci(auc)[:2]), "{:+.3f} ± {:.3f}".format(*t_ci(dauc)[:2])]  # fmt: skip
        print(f"| {arm} | {len(seeds)} | " + " | ".join(cells) + " |")
    print("\nQuality over the 5 samples of each model (paired change vs none, points):\n")
    print("| arm | seeds | Shape % | ΔShape | Trend % | ΔTrend | MLE % | ΔMLE |\n|---|---|---|---|---|---|---|---|")
    for arm in ["none", *arms]:
        seeds = [int(p.name[4:]) for p in sorted((out / arm).glob("seed*")) if (p / "quality_k.json").is_file()]
        seeds = [s for s in seeds if (out / "none" / f"seed{s}" / "quality_k.json").is_file()]
        if not seeds:
            continue
        cells = []
        for m in ("shape", "trend", "mle"):
            v = [pooled_quality(out / arm / f"seed{s}", m) for s in seeds]
            v0 = [pooled_quality(out / "none" / f"seed{s}", m) for s in seeds]
            cells += [fmt(*t_ci(v)[:2]), "-" if arm == "none" else fmt(*t_ci([a - b for a, b in zip(v, v0)])[:2])]
        print(f"| {arm} | {len(seeds)} | " + " | ".join(cells) + " |")
    print()
    for arm in arms:
        for s in sorted(int(p.name[4:]) for p in (out / arm).glob("seed*") if (p / "eval.json").is_file()):
            r = json.loads((out / arm / f"seed{s}" / "eval.json").read_text())
            extra = {k: r[k] for k in ("info", "recheck") if k in r}
            print(f"- {arm} seed {s}: {json.dumps(extra)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--src", default=None, help="part 5's <tag>/<model> directory (none/, mstop/)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--arms", nargs="+", default=["mstop+anneal", "mstop+retrain", "mstop+ema"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--mle-grid", default="tiny")
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--quality-k", action="store_true", help="Shape/Trend/MLE of the other samples, every arm")
    args = ap.parse_args()
    if args.report:
        report(Path(args.out))
    elif args.quality_k:
        quality_k(
            Path(args.out), args.dataset, args.n_train, args.data_dir, args.seeds, args.samples - 1, args.mle_grid
        )
    else:
        run(args)


if __name__ == "__main__":
    main()
