"""Evidence for docs/generators.md: the real REaLTabFormer package memorizes, tracked per epoch, and
DynamicCut / random 10% pruning on it, judged by excess memorization and LevAtt.

Per dataset and seed, three arms (one process, seed-major, finished arms are skipped):

* ``none``    ``--model realtabformer`` trained for ``--epochs`` with a ``MemorizationTracker`` (gower,
  every ``--track-every`` epochs, holdout baseline); every tracked epoch's sample is also attacked
  with LevAtt (``curve.csv``): memorization over epochs. Its intensity ranking over the tracked epochs
  <= ``--warmup`` (top-k 3) is DynamicCut's warm-up ranking: tabmem's warm-up trains the first
  ``warmup`` epochs of the same schedule with the same seed, so it is this run's prefix.
* ``dc10``    ``dynamiccut_to_dir`` with that ranking: the top 10% pruned, retrained from scratch.
* ``rand10``  ``dynamiccut_to_dir(prune_by="random")``: 10% pruned at random, retrained (same seed).

Each final model is judged on one sample of 4|train| rows (seeded per seed): its first |train| rows are
the 1x sample (excess memorization over the holdout with gower, exact copies, LevAtt), all rows the
4x sample (LevAtt). LevAtt's members are the ORIGINAL training rows (pruned ones included), its
non-members the holdout. Regime: ``mitigation_evidence.data`` (``--n-train`` rows of the train
split and as many other rows of it as the holdout; ``--n-train 0``: the whole split, holdout = test).

Usage (one torch thread; ``--report`` prints the Markdown tables of docs/generators.md)::

    python studies/defences/rtf_evidence.py --dataset california --n-train 600 --out runs/rtf_evidence
    python studies/defences/rtf_evidence.py --dataset diabetes --n-train 0 --out runs/rtf_evidence
    python studies/defences/rtf_evidence.py --report --out runs/rtf_evidence
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mitigation"))
from mitigation_evidence import data, default_data_dir, fmt, t_ci  # noqa: E402

SERIALIZERS = ("paper_sft", "canonical")


def levatt(train, hold, synthetic, schema, seed: int) -> dict[str, float]:
    """LevAtt AUC, its bootstrap 95% interval and TPR@FPR 0.1 per row format; members = ``train``."""
    from tabmem.attacks import evaluate_membership, get_attack

    targets = pd.concat([train, hold], ignore_index=True)
    labels = np.r_[np.ones(len(train), bool), np.zeros(len(hold), bool)]
    out: dict[str, float] = {}
    for fmt_ in SERIALIZERS:
        attack = get_attack("levatt", serializer=fmt_, n_jobs=1).fit(synthetic, schema)
        res = evaluate_membership(attack.score(targets), labels, n_bootstrap=200, random_state=seed)
        out.update({f"{fmt_}_auc": res.auc, f"{fmt_}_auc_lo": res.auc_ci[0], f"{fmt_}_auc_hi": res.auc_ci[1],
                    f"{fmt_}_tpr01": res.tpr_at_fpr[0.1]})  # fmt: skip
    return out


def judge(gen, train, hold, schema, seed: int, pruned) -> dict[str, Any]:
    """Excess memorization (gower) and exact copies of the 1x sample; LevAtt at 1x and 4x."""
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.mitigation import mitigation_report

    n = len(train)
    t0 = time.perf_counter()
    big = gen.sample(4 * n, random_state=int(np.random.SeedSequence([seed, 2024]).generate_state(1)[0]))
    one = big.iloc[:n].reset_index(drop=True)
    sample_s = time.perf_counter() - t0
    rep = mitigation_report(one, train, schema, pruned_rows=pruned, holdout=hold, distance="gower", quality=False,
                            random_state=seed, n_jobs=1).to_dict()  # fmt: skip
    det = ReplicaDetector("gower", n_jobs=1).fit(train, schema)
    exact = det.score(one, unseen="mismatch").exact_copy_rate
    exact_hold = det.score(hold, name="holdout", unseen="mismatch").exact_copy_rate
    return {"gower": rep, "exact_copy_rate": exact, "holdout_exact_copy_rate": exact_hold,
            "levatt_1x": levatt(train, hold, one, schema, seed), "levatt_4x": levatt(train, hold, big, schema, seed),
            "sample_seconds": sample_s}  # fmt: skip


def params_of(args) -> dict[str, Any]:
    """The generator's parameters: ``--params`` (JSON) over the preset, with ``--epochs``."""
    return {**json.loads(args.params), "epochs": args.epochs}


def run_none(args, run: Path, seed, train, hold, schema) -> tuple[Any, None]:
    from tabmem.generators import get_generator
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.memorization.tracker import MemorizationTracker
    from tabmem.mitigation import rank_records

    tracker = MemorizationTracker(every=args.track_every, distance="gower", path=run / "tracking", holdout=hold,
                                  random_state=seed, keep_samples=True, n_jobs=1)  # fmt: skip
    gen = get_generator("realtabformer", preset=args.preset, **params_of(args), device="cpu")
    gen.fit(train, schema, callbacks=[tracker], random_state=seed)
    gen.save(run / "model.pt")
    pd.DataFrame(gen.history_).to_csv(run / "history.csv", index=False)
    det = ReplicaDetector("gower", n_jobs=1).fit(train, schema)
    rows = []
    for line in tracker.history_.to_dict("records"):
        syn = tracker.samples_[int(line["epoch"])]
        rows.append({"epoch": int(line["epoch"]), "replica_rate": line["memorization_rate"],
                     "holdout_rate": tracker.holdout_memorization_rate_,
                     "exact_copy_rate": det.score(syn, unseen="mismatch").exact_copy_rate,
                     **levatt(train, hold, syn, schema, seed)})  # fmt: skip
    pd.DataFrame(rows).to_csv(run / "curve.csv", index=False)
    rank_records(run / "tracking", "intensity", top_k=3, warmup_epochs=args.warmup, random_state=seed).save(
        run / "intensity_ranking.csv"
    )
    rank_records(run / "tracking", "count", random_state=seed).save(run / "count_ranking.csv")
    return gen, None


def run_pruned(args, arm: str, run: Path, seed, train, hold, schema) -> tuple[Any, np.ndarray]:
    from tabmem.generators import load_generator
    from tabmem.runs.dynamiccut import dynamiccut_to_dir

    cut: dict[str, Any] = {"prune": 0.10}
    if arm == "dc10":
        cut["ranking"] = run.parent.parent / "none" / f"seed{seed}" / "intensity_ranking.csv"
    else:
        cut["prune_by"] = "random"
    dynamiccut_to_dir(train, schema, run / "dc", model="realtabformer", preset=args.preset,
                      params=params_of(args), seed=seed, distance="gower", holdout=hold, quality=False,
                      resume=(run / "dc" / "config.json").is_file(), n_jobs=1,
                      log=lambda m: print("  " + m, flush=True), **cut)  # fmt: skip
    pruned = np.flatnonzero(pd.read_csv(run / "dc" / "ranking.csv")["pruned"].to_numpy())
    return load_generator(run / "dc" / "retrain" / "model.pt", device="cpu"), pruned


def run_arm(args, arm: str, seed: int, train, hold, schema) -> None:
    run = Path(args.out) / args.tag / arm / f"seed{seed}"
    if (run / "result.json").is_file():
        print(f"skip {run} (done)", flush=True)
        return
    run.mkdir(parents=True, exist_ok=True)
    print(f"run {run} (load {os.getloadavg()[0]:.1f})", flush=True)
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    if arm == "none":
        gen, pruned = run_none(args, run, seed, train, hold, schema)
    else:
        gen, pruned = run_pruned(args, arm, run, seed, train, hold, schema)
    trained = time.perf_counter() - t0
    result = judge(gen, train, hold, schema, seed, pruned)
    result.update(arm=arm, seed=seed, epochs=args.epochs, params=params_of(args), n_train=len(train), n_holdout=len(hold),
                  train_seconds=trained, wall_seconds=time.perf_counter() - t0,
                  load=[load0, os.getloadavg()[0]])  # fmt: skip
    (run / "result.json").write_text(json.dumps(result, indent=2, default=float))
    lev = result["levatt_1x"]
    print(f"  done {arm} seed {seed}: excess {result['gower']['excess_memorization']:+.3f} exact "
          f"{result['exact_copy_rate']:.3f} LevAtt AUC 1x {lev['paper_sft_auc']:.3f} 4x "
          f"{result['levatt_4x']['paper_sft_auc']:.3f} ({result['wall_seconds']:.0f}s)", flush=True)  # fmt: skip


# ---------------------------------------------------------------------- report
def report(out: Path) -> None:
    for tag_dir in sorted(p for p in out.iterdir() if p.is_dir()):
        rows = []
        for f in sorted(tag_dir.glob("*/seed*/result.json")):
            r = json.loads(f.read_text())
            rows.append({"arm": r["arm"], "seed": r["seed"], "excess": r["gower"]["excess_memorization"],
                         "rate": r["gower"]["memorization_rate"], "hold": r["gower"]["holdout_memorization_rate"],
                         "exact": r["exact_copy_rate"], "exact_hold": r["holdout_exact_copy_rate"],
                         **{f"{k}_{x}": r[f"levatt_{x}"][k] for x in ("1x", "4x")
                            for k in ("paper_sft_auc", "paper_sft_tpr01", "canonical_auc")},
                         "wall": r["wall_seconds"], "epochs": r["epochs"], "n": r["n_train"],
                         "n_hold": r["n_holdout"]})  # fmt: skip
        if not rows:
            continue
        df = pd.DataFrame(rows)
        cols = [("rate", 100, 1), ("hold", 100, 1), ("excess", 100, 1), ("exact", 100, 1),
                ("paper_sft_auc_1x", 1, 3), ("paper_sft_tpr01_1x", 1, 3), ("paper_sft_auc_4x", 1, 3),
                ("paper_sft_tpr01_4x", 1, 3), ("canonical_auc_1x", 1, 3), ("canonical_auc_4x", 1, 3)]  # fmt: skip
        print(
            f"\n### {tag_dir.name}: {df.n.iloc[0]} members, {df.n_hold.iloc[0]} holdout, {df.epochs.iloc[0]} epochs\n"
        )
        print("| arm | seeds | replica % | holdout % | excess (pts) | exact copies % | LevAtt AUC 1x | TPR@0.1 1x "
              "| LevAtt AUC 4x | TPR@0.1 4x | AUC 1x (canonical) | AUC 4x (canonical) | wall s/run |")  # fmt: skip
        print("|---" * 13 + "|")
        for arm in ("none", "dc10", "rand10"):
            a = df[df.arm == arm]
            if len(a):
                cells = [fmt(*t_ci(a[c].tolist())[:2], scale=s, digits=d) for c, s, d in cols]
                print(f"| {arm} | {', '.join(map(str, sorted(a.seed)))} | {' | '.join(cells)} | {a.wall.mean():.0f} |")
        print("\nPaired changes over seeds (mean ± 95% t-interval):\n")
        print("| comparison | seeds | excess (pts) | exact copies (pts) | LevAtt AUC 1x | TPR@0.1 1x | LevAtt AUC 4x "
              "| TPR@0.1 4x |")  # fmt: skip
        print("|---" * 8 + "|")
        for a_, b_ in (("dc10", "none"), ("rand10", "none"), ("dc10", "rand10")):
            p = df[df.arm == a_].merge(df[df.arm == b_], on="seed", suffixes=("", "_b"))
            if len(p):
                cells = [fmt(*t_ci((p[c] - p[c + "_b"]).tolist())[:2], scale=s, digits=d)
                         for c, s, d in [cols[2], cols[3], *cols[4:8]]]  # fmt: skip
                print(f"| {a_} − {b_} | {len(p)} | {' | '.join(cells)} |")
        curves = [
            pd.read_csv(f).assign(seed=int(f.parent.name[4:])) for f in sorted(tag_dir.glob("none/seed*/curve.csv"))
        ]
        if curves:
            c = pd.concat(curves)
            print(f"\nPer tracked epoch (arm none, {c.seed.nunique()} seeds, one |train|-row sample each):\n")
            print("| epoch | replica % (holdout %) | exact copies % | LevAtt AUC | TPR@0.1 |")
            print("|---|---|---|---|---|")
            for e, g in c.groupby("epoch"):
                print(f"| {e} | {fmt(*t_ci(g.replica_rate.tolist())[:2])} ({100 * g.holdout_rate.mean():.1f}) | "
                      f"{fmt(*t_ci(g.exact_copy_rate.tolist())[:2])} | "
                      f"{fmt(*t_ci(g.paper_sft_auc.tolist())[:2], scale=1, digits=3)} | "
                      f"{fmt(*t_ci(g.paper_sft_tpr01.tolist())[:2], scale=1, digits=3)} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="california")
    ap.add_argument("--n-train", type=int, default=600, help="rows of the train split; 0 = all, holdout = test split")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--params", default="{}", help="JSON generator parameters over the preset")
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--track-every", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=25, help="DynamicCut's warm-up: tracked epochs <= this rank")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=["none", "dc10", "rand10"])
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--out", default="runs/rtf_evidence")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    if args.report:
        report(Path(args.out))
        return
    import torch

    torch.set_num_threads(1)
    args.tag = f"{args.dataset}{args.n_train if args.n_train > 0 else 'full'}"
    train, hold, _, schema = data(args.dataset, args.n_train, args.data_dir)
    for seed in args.seeds:
        for arm in args.arms:
            run_arm(args, arm, seed, train, hold, schema)


if __name__ == "__main__":
    main()
