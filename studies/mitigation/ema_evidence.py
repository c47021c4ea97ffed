"""Evidence for docs/mitigation.md part 10: the checkpoint rule applied to an EMA of the weights.

Part 9's ``mstop+ema`` sampled an EMA of TabDDPM's weights at the epoch part 5's rule chose on the RAW
weights: it removed more than all of the excess (133%) and closed the Shape gap, not the MLE one.
Hypothesis: EMA weights memorize less than the raw weights of the same epoch, so the same rule run on
the EMA weights (tracked, snapshotted and chosen on them) keeps a LATER epoch within the same 5-point
limit, and buys back MLE while still removing >= 70% of the excess.

Arm ``ema+mstop``: per seed, one training with part 5's settings (Adult-1000, data seed 0, TabDDPM
``small``, 2,000 epochs, tracked every 100 epochs with fang2024 against the selection holdout, limit 0.05
on the upper end of the excess interval, Shape floor 0.95, ``choose="last"``, the revised rule of part 5)
plus ``ema_decay=0.999`` (per optimizer step, zero start, bias-corrected): the tracker, the rule and every
snapshot see the EMA weights. The chosen model is judged exactly as part 5/9 judge their arms
(``mitigation_evidence.evaluate``, ``more_samples``, the DCR attack, ``anneal_evidence.recheck`` and
``--quality-k``), paired with the same seed's ``none`` (part 5's last epoch, raw weights). Part 5's and
part 9's judged files (``none``, ``mstop``, ``mstop+ema``) are copied into ``--out`` for the report (read-only
sources). Per seed it also checks that the raw weights of epoch 2,000 equal part 5's ``last_model.pt`` bit
for bit (the EMA does not change training). Usage::

    python ema_evidence.py --seeds 0 1 2 3 4 --out ../../runs/i25ema/adult1000/tabddpm
    python anneal_evidence.py --quality-k --seeds 0 1 2 3 4 --out ../../runs/i25ema/adult1000/tabddpm
    python anneal_evidence.py --report --out ../../runs/i25ema/adult1000/tabddpm

Shoppers-1000 (part 10's second dataset; ``--part5`` is then the Shoppers ``none``/``mstop`` runs of part 9)::

    python ema_evidence.py --dataset shoppers --seeds 0 1 2 3 4 --out ../../runs/i25ema2/shoppers1000/tabddpm \
        --part5 ../../../i25-reject/runs/i25rej/shoppers1000-mstop/tabddpm \
        --part9 ../../../i25-anneal/runs/i25anneal/shoppers1000-mstop/tabddpm
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from anneal_evidence import recheck
from mitigation_evidence import data, dcr_attack_on_model, default_data_dir, evaluate, more_samples, selection_rows

EMA_DECAY = 0.999  # per optimizer step, as part 9; fixed before any result of this part was seen
ARM = "ema+mstop"
PART5 = "../../../i25-stop/runs/i25/adult1000-mstop/tabddpm"  # none/, mstop/ (eval.json, eval_k.json, models)
PART9 = "../../../i25-anneal/runs/i25anneal/adult1000-mstop/tabddpm"  # none/, mstop/, mstop+ema/ (quality_k.json)


def copy_judged(part5: Path, part9: Path, out: Path, seed: int) -> None:
    """Copy the judged files of none/mstop (part 5) and mstop+ema (part 9), plus quality_k.json (part 9)."""
    for arm, src in (("none", part5), ("mstop", part5), ("mstop+ema", part9)):
        dst = out / arm / f"seed{seed}"
        (dst / "train").mkdir(parents=True, exist_ok=True)
        for f in ("eval.json", "eval_k.json"):
            if not (dst / f).is_file():
                shutil.copyfile(src / arm / f"seed{seed}" / f, dst / f)
        q = part9 / arm / f"seed{seed}" / "quality_k.json"
        if q.is_file() and not (dst / "quality_k.json").is_file():
            shutil.copyfile(q, dst / "quality_k.json")


def raw_equals(run_train: Path, reference: Path) -> bool:
    """The raw weights of ``run_train/last_model.pt`` equal those of ``reference`` bit for bit."""
    import torch

    a = torch.load(run_train / "last_model.pt", map_location="cpu", weights_only=True)["state"]["model"]
    b = torch.load(reference, map_location="cpu", weights_only=True)["state"]["model"]
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def run(args) -> None:
    from tabmem._io import write_json
    from tabmem.runs.train import train_to_dir

    out, part5, part9 = Path(args.out), Path(args.part5), Path(args.part9)
    train, hold, test, schema = data(args.dataset, args.n_train, args.data_dir)
    selection = selection_rows(args.dataset, args.n_train, args.data_dir)
    for seed in args.seeds:
        copy_judged(part5, part9, out, seed)
        run_dir = out / ARM / f"seed{seed}"
        if (run_dir / "eval.json").is_file():
            print(f"skip {run_dir} (done)", flush=True)
            continue
        t0 = time.perf_counter()
        summary = train_to_dir(
            train, schema, run_dir / "train", model="tabddpm", preset="small",
            params={"epochs": 2000, "ema_decay": EMA_DECAY}, seed=seed, distance="fang2024", track_every=100,
            holdout=hold, resume=(run_dir / "train" / "config.json").is_file(), stop_excess=0.05,
            quality_floor=0.95, choose="last", selection_holdout=selection, keep_snapshots=True,
        )  # fmt: skip
        trained = time.perf_counter() - t0
        model_dir = run_dir / "train"
        result = evaluate(model_dir, train, schema, hold, test, seed, None, "tiny")
        write_json(run_dir / "eval_k.json", more_samples(model_dir, train, hold, schema, seed, 4))
        result["attack"] = dcr_attack_on_model(model_dir, train, hold, schema, seed)
        result["recheck"] = recheck(model_dir, train, selection, schema, seed)
        sel = summary["selection"]
        info = {"chosen_epoch": sel["chosen_epoch"], "rule_met": sel["rule_met"], "ema_decay_per_step": EMA_DECAY,
                "raw_last_equals_part5": raw_equals(model_dir, part5 / "mstop" / f"seed{seed}" / "train" /
                                                    "last_model.pt")}  # fmt: skip
        result.update(arm=ARM, seed=seed, train_seconds=trained, wall_seconds=time.perf_counter() - t0, info=info,
                      selection=sel)  # fmt: skip
        write_json(run_dir / "eval.json", result)
        f, q = result["fang2024"], result["fang2024"]["quality"]
        print(f"done {ARM} seed {seed} {info}: excess {f['excess_memorization']:+.3f} shape {q['shape']:.4f} "
              f"mle {q['mle']:.4f} DCR {result['attack']['auc']:.3f} recheck {result['recheck']} "
              f"({result['wall_seconds']:.0f} s)", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--part5", default=PART5, help="part 5's adult1000-mstop/tabddpm directory (read-only)")
    ap.add_argument("--part9", default=PART9, help="part 9's adult1000-mstop/tabddpm directory (read-only)")
    ap.add_argument("--data-dir", default=default_data_dir())
    run(ap.parse_args())


if __name__ == "__main__":
    main()
