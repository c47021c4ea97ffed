"""Evidence (issue 13): shadow-model attacks, ε lower bounds, the copying test and authenticity on real data.

Two regimes of TabDDPM ``small`` on a 1,000-row Adult subsample (members), with 1,000 held-out rows of
the same split as non-members and 2,000 further rows as the population (DOMIAS reference, shadow top-up):

* ``mem``: trained long (``--epochs-mem``, default 1,000): memorizes above the holdout baseline;
* ``nomem``: trained briefly (``--epochs-nomem``, default 200): memorization near the baseline.

``train`` trains the released generator (``tabmem.studies.train_to_dir``, with the replica audit
next to the holdout baseline) and ``--n-shadows`` shadows (``tabmem.runs.shadows``), all cached
and resumable under ``--out/<regime>/``. ``attack`` runs ``tabmem.runs.attack.attack_to_dir`` (LiRA
online/offline with DCR, DOMIAS and LevAtt statistics, Groundhog, and the no-box attacks) and the audit
additions on each regime, and prints the tables of ``docs/attacks.md``.

Usage (niced, one torch thread; about 5 CPU-minutes per ``mem`` shadow on this machine)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/privacy_evidence.py train --regime nomem --out runs/privacy
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/privacy_evidence.py train --regime mem --out runs/privacy
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/privacy_evidence.py attack --regime mem --out runs/privacy
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd


def tables(data_dir: str, n: int, n_pop: int, data_seed: int):
    from tabmem.data.datasets import load_dataset

    ds = load_dataset("adult", data_dir=data_dir)
    perm = np.random.default_rng(data_seed).permutation(len(ds.train))
    pick = lambda a, b: ds.train.iloc[perm[a:b]].reset_index(drop=True)  # noqa: E731
    return pick(0, n), pick(n, 2 * n), pick(2 * n, 2 * n + n_pop), ds.schema


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["train", "attack", "table"])
    ap.add_argument("--regime", choices=["mem", "nomem"], default="mem")
    ap.add_argument("--epochs-mem", type=int, default=1000)
    ap.add_argument("--epochs-nomem", type=int, default=200)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--n-pop", type=int, default=2000)
    ap.add_argument("--n-shadows", type=int, default=16)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default="/work/shared/datasets")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.step == "table":
        print_tables(Path(args.out))
        return
    import torch

    torch.set_num_threads(1)
    members, non_members, population, schema = tables(args.data_dir, args.n, args.n_pop, args.data_seed)
    epochs = args.epochs_mem if args.regime == "mem" else args.epochs_nomem
    root = Path(args.out) / args.regime
    released = root / "released"
    attack_dir = root / "attack"
    params = {"epochs": epochs}
    if args.step == "train":
        from tabmem.runs.train import train_to_dir

        t0 = time.perf_counter()
        if not (released / "summary.json").is_file():
            resume = (released / "checkpoint.pt").is_file()
            train_to_dir(
                members,
                schema,
                released,
                model="tabddpm",
                preset="small",
                params=params,
                seed=args.seed,
                holdout=non_members,
                resume=resume,
                track_every=max(1, epochs // 10),
            )
        print(f"released model: {time.perf_counter() - t0:.0f} s", flush=True)
        from tabmem.attacks.shadows import row_keys
        from tabmem.data.schema import concat_validated, validate
        from tabmem.runs.shadows import train_shadows

        targets = concat_validated(
            [validate(members, schema, name="members"), validate(non_members, schema, name="non-members")],
            name="targets",
        )
        keys = row_keys(targets)
        print(f"targets {len(keys)}, distinct {len(np.unique(keys))}", flush=True)
        t0 = time.perf_counter()
        train_shadows(
            targets,
            population,
            schema,
            attack_dir / "shadows",
            model="tabddpm",
            preset="small",
            params=params,
            n_shadows=args.n_shadows,
            n_train=len(members),
            n_synthetic=len(members),
            seed=args.seed,
            overlap="drop",
            progress=lambda line: print(line, flush=True),
        )
        print(f"shadows: {time.perf_counter() - t0:.0f} s", flush=True)
        return
    evidence = attack_step(args, members, non_members, population, schema, released, attack_dir, params)
    (root / "evidence.json").write_text(json.dumps(evidence, indent=2, default=float))
    print(json.dumps(evidence, indent=2, default=float))


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def print_tables(out: Path) -> None:
    """The markdown tables of docs/attacks.md from ``<out>/<regime>/evidence.json``."""
    regimes = {
        r: json.loads((out / r / "evidence.json").read_text())
        for r in ("mem", "nomem")
        if (out / r / "evidence.json").is_file()
    }
    print(
        "| regime | attack | AUC [95% CI] | TPR@FPR 0.1 [exact CI] | TPR@FPR 0.01 [exact CI] | ε lower bound (signed / all thresholds) |"
    )
    print("|---|---|---|---|---|---|")
    for r, e in regimes.items():
        for name, b in e["attacks"].items():
            t1, t2, eps = b["tpr_at_0.1"], b["tpr_at_0.01"], b["epsilon"]
            print(
                f"| {r} | `{name}` | {b['auc']:.3f} [{b['auc_ci'][0]:.3f}, {b['auc_ci'][1]:.3f}] "
                f"| {t1['tpr']:.3f} [{t1['tpr_ci'][0]:.3f}, {t1['tpr_ci'][1]:.3f}] "
                f"| {t2['tpr']:.3f} [{t2['tpr_ci'][0]:.3f}, {t2['tpr_ci'][1]:.3f}] "
                f"| {eps['epsilon']:.2f} / {eps['epsilon_all_thresholds']:.2f} |"
            )
    print()
    print(
        "| regime | memorization rate (holdout) | DCR share (no-copy 0.5) | copying test z, p (cells flagged) | authenticity: closer share (holdout) | identical matches (holdout) | NNDR 10% quantile (holdout) | best ε lower bound (attack) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r, e in regimes.items():
        for d in ("fang2024", "gower"):
            a = e[f"audit_{d}"]
            c = a["data_copying"]
            print(
                f"| {r}, {d} | {_pct(a['memorization_rate'])} % ({_pct(a['holdout_memorization_rate'])} %) "
                f"| {e['dcr_share']['value']:.3f} | {c['z']:.2f}, {c['p_value']:.2g} ({len(c['cells_flagged'])}/{c['n_cells_used']}) "
                f"| {_pct(a['authenticity']['synthetic_closer_share'])} % ({_pct(a['authenticity']['holdout_closer_share'])} %) "
                f"| {_pct(a['identical_matches']['synthetic_share'])} % ({_pct(a['identical_matches']['holdout_share'])} %) "
                f"| {a['nndr']['synthetic']['quantiles']['0.1']:.3f} ({a['nndr']['holdout']['quantiles']['0.1']:.3f}) "
                f"| {e['privacy']['epsilon_lower_bound']:.2f} ({e['privacy']['attack']}) |"
            )


ATTACKS = ["lira", "lira_offline", "lira_levatt", "lira_domias", "groundhog", "dcr", "domias", "levatt"]


def attack_step(args, members, non_members, population, schema, released: Path, attack_dir: Path, params) -> dict:
    from tabmem.memorization.evidence import distance_evidence
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.metrics.dcr_share import DCRShare
    from tabmem.runs.attack import attack_to_dir

    synthetic = pd.read_csv(released / "synthetic.csv")
    t0 = time.perf_counter()
    summary = attack_to_dir(
        members,
        non_members,
        synthetic,
        schema,
        attack_dir,
        attacks=ATTACKS,
        population=population,
        model="tabddpm",
        preset="small",
        params=params,
        n_shadows=args.n_shadows,
        population_overlap="drop",
        run_dir=released,
        intensity_k=3,
        seed=args.seed,
        n_bootstrap=200,
        progress=lambda line: print(line, flush=True),
    )
    attack_seconds = time.perf_counter() - t0
    out: dict = {"regime": args.regime, "epochs": params["epochs"], "attack_seconds": attack_seconds}
    audit = json.loads((released / "summary.json").read_text())
    out["memorization_rate"] = audit["memorization_rate"]
    out["holdout_memorization_rate"] = audit["holdout_memorization_rate"]
    out["attacks"] = {
        name: {
            "auc": b["auc"],
            "auc_ci": b["auc_ci"],
            "tpr_at_0.1": b["midst_tpr_at_fpr"]["0.1"],
            "tpr_at_0.01": b["midst_tpr_at_fpr"]["0.01"],
            "tpr_boot_ci": b.get("tpr_at_fpr_ci", {}),
            "epsilon": b["epsilon_lower_bound"],
        }
        for name, b in summary.items()
        if not name.startswith("_")
    }
    out["privacy"] = summary["_privacy"]
    out["shadow_seconds"] = summary["_meta"]["shadows"]["shadow_seconds"]
    dcr = DCRShare().evaluate(members, synthetic, schema, holdout=non_members)
    out["dcr_share"] = {"value": dcr.value, **dcr.details}
    for distance in ("fang2024", "gower"):
        det = ReplicaDetector(distance, n_jobs=1).fit(members, schema)
        res = det.score(synthetic, holdout=non_members, unseen="mismatch")
        ev = distance_evidence(det, res, synthetic, non_members, n_cells=10, random_state=args.seed)
        ev["data_copying"] = {k: v for k, v in ev["data_copying"].items() if k != "per_cell"}
        out[f"audit_{distance}"] = {
            "memorization_rate": res.memorization_rate,
            "holdout_memorization_rate": res.holdout.memorization_rate,
            **ev,
        }
    return out


if __name__ == "__main__":
    main()
