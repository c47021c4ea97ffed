"""Sampling-time rejection arms of ``mitigation_evidence.py`` (issue 25, item 3), and the attacks that judge them.

Rejection changes no training: each arm draws from a model an ``mstop`` run already trained (same
seed, same tag), through :class:`tabmem.mitigation.RejectionSampler`, with the seeds the unmitigated
arm's samples used (round 0 of a rejected sample IS that arm's sample, so the arms are paired row
for row before rejection):

* ``rej``        the last epoch's model (``none``), replicas by fang2024 (the criterion the evidence measures)
* ``rejg``       the same model, replicas by gower (the audit's default; fang2024 then judges it)
* ``mstop+rej``  the chosen epoch's model (``mstop``), replicas by fang2024

``attack_suite`` scores every arm (``none`` and ``mstop`` too) with the same attacks: DCR (l2 and the two
replica distances), the rejection-aware attacker (:func:`tabmem.mitigation.rejection_aware_scores`, modes
``hole`` and ``edge``, fang2024 and gower), the density (KDE) attack and DOMIAS. Members: the training
rows; non-members: the evaluation holdout; the attacker's reference rows (DOMIAS, rejection-aware): the
selection rows (rows 2n..3n of the permutation, never trained on, disjoint from both).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: arm -> (the model it samples: an arm of the same tag, the rejection distance)
REJECT_ARMS = {"rej": ("none", "fang2024"), "rejg": ("none", "gower"), "mstop+rej": ("mstop", "fang2024")}
#: the attacks of :func:`attack_suite`, in report order
ATTACKS = ("dcr_l2", "dcr_fang2024", "dcr_gower", "hole_fang2024", "edge_fang2024", "hole_gower", "edge_gower",
           "density", "domias")  # fmt: skip


def seed_of(seed: int, j: int) -> int:
    """The sampling seeds of ``mitigation_evidence``: j = -1 the judged sample, j >= 0 the eval_k ones."""
    return int(np.random.SeedSequence([seed, 2024 if j < 0 else 3000 + j]).generate_state(1)[0])


def rejected_sample(model_dir: Path, train, schema, distance: str, n: int, random_state: int):
    from tabmem.generators import load_generator
    from tabmem.mitigation import RejectionSampler

    gen = load_generator(model_dir / "model.pt", device="cpu")
    sampler = RejectionSampler(distance, max_rounds=20, nan="match", n_jobs=1).fit(train, schema)
    return sampler.sample(gen, n, random_state=random_state)


def attack_suite(synthetic, train, hold, reference, schema, seed: int) -> dict[str, Any]:
    """Every attack of :data:`ATTACKS` on one synthetic sample: AUC with a 1,000-resample 95% interval."""
    from tabmem.attacks import evaluate_membership, get_attack
    from tabmem.mitigation import rejection_aware_scores

    targets = pd.concat([train, hold], ignore_index=True)
    member = np.r_[np.ones(len(train), bool), np.zeros(len(hold), bool)]
    scores: dict[str, np.ndarray] = {}
    for d in ("l2", "fang2024", "gower"):
        scores[f"dcr_{d}"] = get_attack("dcr", distance=d, n_jobs=1).fit(synthetic, schema).score(targets)
    for d in ("fang2024", "gower"):
        for mode in ("hole", "edge"):
            scores[f"{mode}_{d}"] = rejection_aware_scores(synthetic, targets, reference, schema, distance=d,
                                                           mode=mode, n_jobs=1)  # fmt: skip
    scores["density"] = get_attack("density").fit(synthetic, schema).score(targets)
    scores["domias"] = get_attack("domias").fit(synthetic, schema, reference=reference).score(targets)
    out = {}
    for name, s in scores.items():
        s = np.where(np.isfinite(s), s, np.sign(s) * 1e300)
        r = evaluate_membership(s, member, n_bootstrap=1000, random_state=seed)
        out[name] = {"auc": r.auc, "auc_ci": list(r.auc_ci), "tpr_at_1pct_fpr": r.tpr_at_fpr.get(0.01)}
    return out


def run_rejection(args, arm: str, seed: int, train, hold, test, schema, reference) -> None:
    """One rejection arm x seed: the judged sample (eval.json, as the other arms), k more (eval_k.json), attacks."""
    from tabmem._io import write_json
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.mitigation import mitigation_report

    root = Path(args.out) / args.tag / args.model
    run = root / arm / f"seed{seed}"
    source, distance = REJECT_ARMS[arm]
    model_dir = root / source / f"seed{seed}" / "train"
    if (run / "eval.json").is_file():
        print(f"skip {run} (done)", flush=True)
        return
    if not (model_dir / "model.pt").is_file():
        print(f"  waiting: {model_dir / 'model.pt'} does not exist yet; skipping {run}", flush=True)
        return
    run.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    syn, rep = rejected_sample(model_dir, train, schema, distance, len(train), seed_of(seed, -1))
    sample_s = time.perf_counter() - t0
    result: dict[str, Any] = {"arm": arm, "seed": seed, "source": source, "rejection": rep.to_dict(),
                              "sample_seconds": sample_s}  # fmt: skip
    for d in ("fang2024", "gower"):
        result[d] = mitigation_report(syn, train, schema, holdout=hold, test=test, distance=d, quality=d == "fang2024",
                                      mle_grid=args.mle_grid, random_state=seed, n_jobs=1).to_dict()  # fmt: skip
    result["attacks"] = attack_suite(syn, train, hold, reference, schema, seed)
    result["dcr"] = result["attack"] = {"attack": "dcr", "distance": "l2", **result["attacks"]["dcr_l2"]}
    more: dict[str, Any] = {"k": args.samples - 1, "seed": seed, "rejection": []}
    dets = {d: ReplicaDetector(d, n_jobs=1).fit(train, schema) for d in ("fang2024", "gower")}
    samples = []
    for j in range(args.samples - 1):
        s, r = rejected_sample(model_dir, train, schema, distance, len(train), seed_of(seed, j))
        samples.append(s)
        more["rejection"].append(r.to_dict())
    for d, det in dets.items():
        h = det.score(hold, name="holdout", unseen="mismatch").memorization_rate
        rates = [det.score(s, unseen="mismatch").memorization_rate for s in samples]
        more[d] = {"rates": rates, "memorization_rate": float(np.mean(rates)), "holdout_memorization_rate": h,
                   "excess_memorization": float(np.mean(rates)) - h}  # fmt: skip
    write_json(run / "eval_k.json", more)
    result["wall_seconds"] = time.perf_counter() - t0
    write_json(run / "eval.json", result)
    f = result["fang2024"]
    print(f"  done {arm} seed {seed}: rejected {100 * rep.rejection_rate:.1f}% in {rep.rounds} rounds, excess "
          f"{f['excess_memorization']:+.3f} (gower {result['gower']['excess_memorization']:+.3f}), "
          f"DCR {result['attacks']['dcr_l2']['auc']:.3f} hole {result['attacks']['hole_' + distance]['auc']:.3f} "
          f"({result['wall_seconds']:.0f}s)", flush=True)  # fmt: skip


def attacks_of_unmitigated(args, seed: int, train, hold, schema, reference) -> None:
    """The same attack suite on the judged sample of the ``none`` and ``mstop`` arms (attacks.json)."""
    from tabmem._io import write_json
    from tabmem.generators import load_generator

    root = Path(args.out) / args.tag / args.model
    for arm in ("none", "mstop"):
        run = root / arm / f"seed{seed}"
        if (run / "attacks.json").is_file() or not (run / "eval.json").is_file():
            continue
        t0 = time.perf_counter()
        gen = load_generator(run / "train" / "model.pt", device="cpu")
        syn = gen.sample(len(train), random_state=seed_of(seed, -1))
        write_json(run / "attacks.json", attack_suite(syn, train, hold, reference, schema, seed))
        print(f"  attacks {run} ({time.perf_counter() - t0:.0f}s)", flush=True)


def load_rows(out: Path, use_k: bool = True) -> pd.DataFrame:
    """One row per tag x arm x seed: rates, excess (both distances), quality, rejection rate, every attack AUC."""
    rows = []
    for ev in sorted(out.glob("*/*/*/seed*/eval.json")):
        tag, arm = ev.parts[-5], ev.parts[-3]
        r = json.loads(ev.read_text())
        att = r.get("attacks")
        if att is None and (ev.parent / "attacks.json").is_file():
            att = json.loads((ev.parent / "attacks.json").read_text())
        if att is None:
            continue
        k = json.loads((ev.parent / "eval_k.json").read_text()) if (ev.parent / "eval_k.json").is_file() else None
        row: dict[str, Any] = {"tag": tag, "arm": arm, "seed": r["seed"]}
        for d in ("fang2024", "gower"):
            rate, hold = r[d]["memorization_rate"], r[d]["holdout_memorization_rate"]
            if use_k and k is not None:
                rate = float(np.mean([rate, *k[d]["rates"]]))
            row.update({f"rate_{d}": rate, f"excess_{d}": rate - hold, f"hold_{d}": hold})
        q = r["fang2024"].get("quality") or {}
        row.update(shape=q.get("shape"), trend=q.get("trend"), mle=q.get("mle"))
        row["rejected"] = (r.get("rejection") or {}).get("rejection_rate")
        row.update({a: att[a]["auc"] for a in ATTACKS if a in att})
        rows.append(row)
    return pd.DataFrame(rows)


def rejection_report(out: Path) -> None:
    """Markdown: per tag, every arm against ``none`` (paired over seeds): excess removed, quality, attacks."""
    from mitigation_evidence import fmt, t_ci

    df = load_rows(out)
    if df.empty:
        print("no runs with attacks")
        return
    order = ["none", "mstop", "rej", "rejg", "mstop+rej"]
    for tag, g in df.groupby("tag"):
        base = g[g.arm == "none"].set_index("seed")
        arms = sorted(g.arm.unique(), key=lambda a: order.index(a) if a in order else 99)
        print(f"\n### {tag}: sampling-time rejection (issue 25 item 3), paired with `none` over seeds\n")
        print("| arm | seeds | rejected % | raw fang2024 % | excess fang2024 (pts) | removed fang2024 % | raw gower % "
              "| excess gower (pts) | removed gower % | Shape % | MLE % | Shape change | MLE change |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for arm in arms:
            a = g[g.arm == arm].set_index("seed")
            seeds = a.index.intersection(base.index)
            cells = [arm, str(len(a)), fmt(*t_ci(a.rejected.dropna().tolist())[:2])]
            for d in ("fang2024", "gower"):
                cells += [fmt(*t_ci(a[f"rate_{d}"].tolist())[:2]), fmt(*t_ci(a[f"excess_{d}"].tolist())[:2])]
                if arm == "none":
                    cells.append("-")
                else:
                    b = base.loc[seeds, f"excess_{d}"]
                    cells.append(fmt(*t_ci(((b - a.loc[seeds, f"excess_{d}"]) / b).tolist())[:2]))
            cells += [fmt(*t_ci(a["shape"].tolist())[:2]), fmt(*t_ci(a["mle"].tolist())[:2])]
            for q in ("shape", "mle"):
                cells.append("-" if arm == "none" else fmt(*t_ci((a.loc[seeds, q] - base.loc[seeds, q]).tolist())[:2]))
            print("| " + " | ".join(cells) + " |")
        print(f"\n### {tag}: membership attacks, AUC (mean ± 95% t over seeds; paired change vs `none` below)\n")
        present = [x for x in ATTACKS if x in g]
        print("| arm | " + " | ".join(present) + " |")
        print("|---|" + "---|" * len(present))
        for arm in arms:
            a = g[g.arm == arm].set_index("seed")
            print(
                f"| {arm} | " + " | ".join(fmt(*t_ci(a[x].tolist())[:2], scale=1.0, digits=3) for x in present) + " |"
            )
        for arm in arms:
            if arm == "none":
                continue
            a = g[g.arm == arm].set_index("seed")
            seeds = a.index.intersection(base.index)
            print(f"| {arm} - none | " + " | ".join(
                fmt(*t_ci((a.loc[seeds, x] - base.loc[seeds, x]).tolist())[:2], scale=1.0, digits=3) for x in present
            ) + " |")  # fmt: skip
        mstop = g[g.arm == "mstop"].set_index("seed")
        for arm in (a for a in arms if a.startswith("mstop+")):
            a = g[g.arm == arm].set_index("seed")
            seeds = a.index.intersection(mstop.index)
            print(f"| {arm} - mstop | " + " | ".join(
                fmt(*t_ci((a.loc[seeds, x] - mstop.loc[seeds, x]).tolist())[:2], scale=1.0, digits=3) for x in present
            ) + " |")  # fmt: skip
        for arm in (a for a in arms if a.startswith("mstop+")):
            a = g[g.arm == arm].set_index("seed")
            seeds = a.index.intersection(mstop.index)
            changes = {q: fmt(*t_ci((a.loc[seeds, q] - mstop.loc[seeds, q]).tolist())[:2]) for q in ("shape", "mle")}
            print(
                f"\n{tag}: {arm} - mstop over {len(seeds)} seeds: Shape {changes['shape']}, MLE {changes['mle']} (pts)"
            )
