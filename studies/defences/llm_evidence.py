"""Evidence for docs/llm.md: LevAtt on a from-scratch REaLTabFormer-style model, without defence,
with TLP at the calibrated tendency, and with the Digit Modifier, next to fidelity and utility.

The defences as a study: ``tabmem run studies/defences/quick.toml`` (TLP sweep and Digit Modifier on
the same model). This script is kept because docs/llm.md's figures were measured with it: it
calibrates the TLP tendency on the run and checkpoints the training every 25 epochs.

Members = the dataset's 80% split (seed 42), non-members = the other 20%. Usage::

    python studies/defences/llm_evidence.py --dataset diabetes --epochs 300 --out runs/llm_evidence

Training checkpoints every 25 epochs into ``OUT/DATASET/checkpoint.pt`` and resumes from it.
Results go to ``OUT/DATASET/results.json`` and a Markdown table on stdout (aggregates only).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tabmem.attacks import evaluate_membership, get_attack
from tabmem.data.datasets import load_dataset
from tabmem.defenses import DigitModifier, search_tendency
from tabmem.generators.llm import LLMGenerator
from tabmem.metrics import MLE, MMD, Wasserstein


def levatt(members: pd.DataFrame, non_members: pd.DataFrame, synthetic: pd.DataFrame, schema, serializer: str):
    attack = get_attack("levatt", serializer=serializer, n_jobs=1).fit(synthetic, schema)
    targets = pd.concat([members, non_members], ignore_index=True)
    labels = np.r_[np.ones(len(members), bool), np.zeros(len(non_members), bool)]
    res = evaluate_membership(attack.score(targets), labels, n_bootstrap=0)
    return res.auc, res.tpr_at_fpr[0.1]


def quality(members, non_members, synthetic, schema) -> dict[str, float]:
    out = {
        "mmd": MMD().evaluate(members, synthetic, schema).value,
        "wasserstein": Wasserstein().evaluate(members, synthetic, schema).value,
    }
    mle = MLE(grid="tiny", reference=True).evaluate(members, synthetic, schema, test=non_members)
    out["mle_" + mle.details["score"]] = mle.value
    out["mle_real_" + mle.details["score"]] = mle.details["real"][mle.details["score"]]
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", default="diabetes")
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--n-members", type=int, default=None, help="subsample members (default: all)")
    p.add_argument("--n-non-members", type=int, default=None)
    p.add_argument("--draws", type=int, default=3)
    p.add_argument("--n-layer", type=int, default=3)
    p.add_argument("--n-embd", type=int, default=96)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--serializer", default="paper_sft", help="LevAtt row format")
    p.add_argument("--criterion", default="auc")
    p.add_argument("--search-draws", type=int, default=3, help="synthetic draws averaged per t in the TLP search")
    p.add_argument("--dm", default="0.05,0.1;0.1,0.9", help="DigitModifier (p_min,p_max) settings, ';'-separated")
    p.add_argument("--train-only", action="store_true")
    p.add_argument("--out", default="runs/llm_evidence")
    args = p.parse_args()
    torch.set_num_threads(1)

    ds = load_dataset(args.dataset)
    schema = ds.schema
    members, non_members = ds.train.reset_index(drop=True), ds.test.reset_index(drop=True)
    if args.n_members:
        members = members.sample(args.n_members, random_state=0).reset_index(drop=True)
    if args.n_non_members:
        non_members = non_members.sample(args.n_non_members, random_state=0).reset_index(drop=True)
    out = Path(args.out) / args.dataset
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "checkpoint.pt"
    gen = LLMGenerator(
        n_layer=args.n_layer,
        n_head=4,
        n_embd=args.n_embd,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        random_state=0,
        device="cpu",
    )
    t0 = time.perf_counter()
    gen.fit(
        members,
        schema,
        resume_from=ckpt if ckpt.exists() else None,
        checkpoint_every=25,
        checkpoint_path=ckpt,
    )
    train_s = time.perf_counter() - t0
    print(f"trained {gen.epoch_} epochs in {train_s:.0f}s, final loss {gen.history_[-1]['loss']:.4f}", flush=True)
    if args.train_only:
        return
    n = len(members)
    results: dict[str, object] = {
        "dataset": args.dataset,
        "n_members": n,
        "n_non_members": len(non_members),
        "epochs": gen.epoch_,
        "final_loss": gen.history_[-1]["loss"],
        "levatt_format": args.serializer,
    }

    def attack_draws(make):
        rows = []
        for d in range(args.draws):
            syn = make(d)
            auc, tpr = levatt(members, non_members, syn, schema, args.serializer)
            rows.append(
                {"auc": auc, "tpr_at_0.1": tpr, **(quality(members, non_members, syn, schema) if d == 0 else {})}
            )
        df = pd.DataFrame(rows)
        summary = {k: float(df[k].mean()) for k in df.columns}
        summary.update({k + "_std": float(df[k].std(ddof=0)) for k in ("auc", "tpr_at_0.1")})
        return summary

    t0 = time.perf_counter()
    results["none"] = attack_draws(lambda d: gen.sample(n, random_state=1 + d))
    print("no defence", results["none"], f"({time.perf_counter() - t0:.0f}s)", flush=True)

    def evaluate(t: float):
        # calibration draws (seeds 100+) are disjoint from the reported draws (seeds 1..draws)
        runs = [
            levatt(members, non_members, gen.sample(n, random_state=100 + k, tendency=t), schema, args.serializer)
            for k in range(args.search_draws)
        ]
        auc, tpr = float(np.mean([r[0] for r in runs])), float(np.mean([r[1] for r in runs]))
        print(f"  TLP t={t}: auc={auc:.3f} tpr@0.1={tpr:.3f}", flush=True)
        return auc, tpr

    search = search_tendency(evaluate, args.criterion)
    results["tlp_search"] = search.trials.to_dict(orient="list")
    results["tlp_t"] = search.tendency
    results["tlp_met"] = search.met
    results["tlp"] = attack_draws(lambda d: gen.sample(n, random_state=1 + d, tendency=search.tendency))
    print("TLP", search.tendency, results["tlp"], flush=True)
    dm_names = []
    for setting in args.dm.split(";"):
        lo, hi = (float(x) for x in setting.split(","))
        name = f"dm_{lo}_{hi}"
        dm_names.append(name)
        results[name] = attack_draws(
            lambda d, lo=lo, hi=hi: DigitModifier(lo, hi, random_state=d).transform(gen.sample(n, random_state=1 + d))
        )
        print("DM", lo, hi, results[name], flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, default=float))
    keys = ["auc", "tpr_at_0.1", "mmd", "wasserstein"] + [k for k in results["none"] if k.startswith("mle")]
    print("| defence | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for name in ("none", "tlp", *dm_names):
        r = results[name]
        if name == "tlp":
            label = f"TLP t={results['tlp_t']}"
        elif name == "none":
            label = "none"
        else:
            label = "DM (" + ", ".join(name.split("_")[1:]) + ")"
        print(f"| {label} | " + " | ".join(f"{r.get(k, float('nan')):.4f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
