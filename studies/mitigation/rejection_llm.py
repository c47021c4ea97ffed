"""Sampling-time rejection in the LLM regime (issue 25 item 3): tabmem's from-scratch GPT-2 copies members exactly.

Diabetes (scikit-learn's 442 rows, all numerical, regression target), split once (permutation seed 0):
``--n-members`` members, as many non-members (the evaluation holdout), the rest the attacker's reference
(DOMIAS, rejection-aware) and the MLE test rows. One model per seed (``LLMGenerator``, digit format, from
scratch), judged on ``--samples`` samples of |members| rows each, three arms on the same model:

* ``none``      the plain samples;
* ``rejx``      exact copies of a member rejected (threshold 1e-12: only d1 = 0; duplicates count as copies);
* ``rej``       replicas rejected by the audit's default (gower, d1/d2 < 1/3).

Round 0 of a rejected sample is ``none``'s sample (same seed), so the arms are paired row for row before
rejection. Attacks on the first sample: LevAtt (the paper's ``paper_sft`` format; the attack of this
regime), DCR (l2, gower), the rejection-aware attacker (hole/edge, gower) and DOMIAS.

    python studies/mitigation/rejection_llm.py --seeds 0 1 2 --out runs/i25rej/llm
    python studies/mitigation/rejection_llm.py --report --out runs/i25rej/llm
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ARMS = {"none": None, "rejx": 1e-12, "rej": 1 / 3}
ATTACKS = ("levatt", "dcr_l2", "dcr_gower", "hole_gower", "edge_gower", "domias")


def split(n_members: int):
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("diabetes")
    full = pd.concat([ds.train, ds.test], ignore_index=True)
    perm = np.random.default_rng(0).permutation(len(full))
    members = full.iloc[perm[:n_members]].reset_index(drop=True)
    hold = full.iloc[perm[n_members : 2 * n_members]].reset_index(drop=True)
    reference = full.iloc[perm[2 * n_members :]].reset_index(drop=True)
    return members, hold, reference, ds.schema


def attacks(syn, members, hold, reference, schema, seed: int) -> dict[str, Any]:
    from tabmem.attacks import evaluate_membership, get_attack
    from tabmem.mitigation import rejection_aware_scores

    targets = pd.concat([members, hold], ignore_index=True)
    member = np.r_[np.ones(len(members), bool), np.zeros(len(hold), bool)]
    scores = {
        "levatt": get_attack("levatt", serializer="paper_sft", n_jobs=1).fit(syn, schema).score(targets),
        "dcr_l2": get_attack("dcr", distance="l2", n_jobs=1).fit(syn, schema).score(targets),
        "dcr_gower": get_attack("dcr", distance="gower", n_jobs=1).fit(syn, schema).score(targets),
        "domias": get_attack("domias").fit(syn, schema, reference=reference).score(targets),
    }
    for mode in ("hole", "edge"):
        scores[f"{mode}_gower"] = rejection_aware_scores(syn, targets, reference, schema, mode=mode, n_jobs=1)
    out = {}
    for name, s in scores.items():
        s = np.where(np.isfinite(s), s, np.sign(s) * 1e300)
        r = evaluate_membership(s, member, n_bootstrap=1000, random_state=seed)
        out[name] = {"auc": r.auc, "auc_ci": list(r.auc_ci)}
    return out


def run_seed(args, seed: int) -> None:
    import torch

    from tabmem._io import write_json
    from tabmem.generators import load_generator
    from tabmem.generators.llm import LLMGenerator
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.mitigation import RejectionSampler, quality_scores

    out = Path(args.out) / f"seed{seed}"
    if (out / "eval.json").is_file():
        print(f"skip {out}", flush=True)
        return
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    members, hold, reference, schema = split(args.n_members)
    t0 = time.perf_counter()
    if (out / "model.pt").is_file():
        gen = load_generator(out / "model.pt", device="cpu")
    else:
        gen = LLMGenerator(n_layer=args.n_layer, n_head=4, n_embd=args.n_embd, epochs=args.epochs, batch_size=32,
                           lr=1e-3, random_state=seed, device="cpu").fit(members, schema)  # fmt: skip
        gen.save(out / "model.pt")
    train_s = time.perf_counter() - t0
    det = ReplicaDetector("gower", n_jobs=1, duplicates="replica").fit(members, schema)
    hold_res = det.score(hold, name="holdout")
    result: dict[str, Any] = {"seed": seed, "train_seconds": train_s, "final_loss": gen.history_[-1]["loss"],
                              "n_members": len(members), "holdout_rate": hold_res.memorization_rate,
                              "holdout_exact": hold_res.exact_copy_rate}  # fmt: skip
    for arm, threshold in ARMS.items():
        t1 = time.perf_counter()
        sampler = (
            RejectionSampler("gower", threshold, max_rounds=30, n_jobs=1).fit(members, schema) if threshold else None
        )
        rates, exact, reports, first = [], [], [], None
        for j in range(args.samples):
            rs = int(np.random.SeedSequence([seed, 4000 + j]).generate_state(1)[0])
            if sampler is None:
                syn = gen.sample(len(members), random_state=rs)
            else:
                syn, rep = sampler.sample(gen, len(members), random_state=rs)
                reports.append(rep.to_dict())
            res = det.score(syn, unseen="mismatch")
            rates.append(res.memorization_rate)
            exact.append(res.exact_copy_rate)
            first = syn if first is None else first
        q = quality_scores(members, first, schema, test=reference, mle_grid="tiny", random_state=seed)
        result[arm] = {"rates": rates, "rate": float(np.mean(rates)), "excess": float(np.mean(rates)) - hold_res.memorization_rate,
                       "exact_copy_rate": float(np.mean(exact)), "rejection": reports, "shape": q.shape, "trend": q.trend,
                       "mle": q.mle, "attacks": attacks(first, members, hold, reference, schema, seed),
                       "seconds": time.perf_counter() - t1}  # fmt: skip
        a = result[arm]
        print(f"  seed {seed} {arm}: rate {a['rate']:.3f} exact {a['exact_copy_rate']:.3f} shape {q.shape:.3f} "
              f"levatt {a['attacks']['levatt']['auc']:.3f} edge {a['attacks']['edge_gower']['auc']:.3f}", flush=True)  # fmt: skip
    write_json(out / "eval.json", result)
    print(f"done seed {seed}: trained {train_s:.0f}s, loss {result['final_loss']:.3f}", flush=True)


def report(out: Path) -> None:
    from mitigation_evidence import fmt, t_ci

    runs = [json.loads(p.read_text()) for p in sorted(out.glob("seed*/eval.json"))]
    if not runs:
        print("no runs")
        return
    print(f"\n### LLM regime (diabetes, {runs[0]['n_members']} members), {len(runs)} seeds\n")
    print(f"Holdout replica rate (gower): {fmt(*t_ci([r['holdout_rate'] for r in runs])[:2])} %; "
          f"training {fmt(*t_ci([r['train_seconds'] for r in runs])[:2], scale=1.0, digits=0)} s per seed\n")  # fmt: skip
    print("| arm | rejected % | replica rate % | excess (pts) | removed % | exact copies % | Shape % | MLE | "
          + " | ".join(ATTACKS) + " |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|" + "---|" * len(ATTACKS))
    for arm in ARMS:
        rej = [np.mean([x["rejection_rate"] for x in r[arm]["rejection"]]) for r in runs if r[arm]["rejection"]]
        removed = [
            (r["none"]["excess"] - r[arm]["excess"]) / r["none"]["excess"] for r in runs if r["none"]["excess"] > 0
        ]
        cells = [arm, fmt(*t_ci(rej)[:2]) if rej else "-", fmt(*t_ci([r[arm]["rate"] for r in runs])[:2]),
                 fmt(*t_ci([r[arm]["excess"] for r in runs])[:2]), "-" if arm == "none" else fmt(*t_ci(removed)[:2]),
                 fmt(*t_ci([r[arm]["exact_copy_rate"] for r in runs])[:2]), fmt(*t_ci([r[arm]["shape"] for r in runs])[:2]),
                 fmt(*t_ci([r[arm]["mle"] for r in runs])[:2], scale=1.0, digits=3)]  # fmt: skip
        cells += [fmt(*t_ci([r[arm]["attacks"][a]["auc"] for r in runs])[:2], scale=1.0, digits=3) for a in ATTACKS]
        print("| " + " | ".join(cells) + " |")
    for arm in ARMS:
        if arm == "none":
            continue
        cells = [fmt(*t_ci([r[arm]["attacks"][a]["auc"] - r["none"]["attacks"][a]["auc"] for r in runs])[:2],
                     scale=1.0, digits=3) for a in ATTACKS]  # fmt: skip
        print(f"| {arm} - none (paired) | | | | | | | | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--n-members", type=int, default=120)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-embd", type=int, default=64)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--out", default="runs/i25rej/llm")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    if args.report:
        report(Path(args.out))
        return
    for seed in args.seeds:
        run_seed(args, seed)


if __name__ == "__main__":
    main()
