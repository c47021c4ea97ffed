"""LiRA offline on the ``none`` and ``mstop`` arms of docs/mitigation.md part 5 (issue 25).

The targets of part 5 (``mitigation_evidence.py --arms mstop --tag adult1000-mstop``): TabDDPM
``small`` on rows 0-999 of Adult's permuted training split (data seed 0), rows 1,000-1,999 the
evaluation holdout (the non-members), rows 2,000-2,999 the selection holdout; one training per seed,
``none`` = its epoch-2000 model, ``mstop`` = the epoch the memorization-aware rule chose.

Shadows (``--train-shadows S``): each trains on 1,000 rows drawn from the same split *without* rows
0-2,999 (so no member and no holdout row; the offline design), exactly as the targets were trained
(``train_to_dir`` with the rule: 2,000 epochs tracked every 100, limit 0.05, floor 0.95, choose last,
its own evaluation and selection holdouts of 1,000 other rows each). One training yields the
shadow of ``none`` (``last_model.pt``) and the shadow of ``mstop`` (``model.pt``, the epoch the rule
chose for that shadow): the attacker knows the training procedure, rule included. Each model samples
1,000 rows with the seed derivation of the targets' first evaluation sample.

Attack (``--attack``): ``lira_offline`` (DCR statistic) with a :class:`~tabmem.attacks.shadows.ShadowSet`
of the arm's shadow samples, and ``dcr`` as the cross-check of part 5's numbers, on the targets' first
evaluation sample; members = the 1,000 training rows, non-members = the evaluation holdout; AUC with a
1,000-resample bootstrap interval and TPR at 1% / 0.1% FPR (``evaluate_membership``).

Usage (one torch thread; resumable: finished shadows and finished attack files are reused)::

    python studies/mitigation/lira_evidence.py --copy-targets /work/wt/i25-stop/runs/i25/adult1000-mstop/tabddpm \
        --out runs/i25lira
    nice -n 10 python studies/mitigation/lira_evidence.py --train-shadows 8 --out runs/i25lira   # then 32 (reuses 0-7)
    nice -n 10 python studies/mitigation/lira_evidence.py --attack --out runs/i25lira
    python studies/mitigation/lira_evidence.py --report --out runs/i25lira
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from mitigation_evidence import default_data_dir, synthetic_of, t_ci

ARMS = ("none", "mstop")
#: the rule and schedule of part 5's targets
RULE = {"stop_excess": 0.05, "quality_floor": 0.95, "choose": "last", "track_every": 100, "distance": "fang2024"}
N = 1000


def split(data_dir: str | None, dataset: str = "adult") -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Any]:
    """(members, evaluation holdout, shadow population, schema): the permutation of part 5; the population is
    every training-split row after the first 3n (members, evaluation and selection holdouts excluded), less the rows
    equal to a member or a non-member (2 on Adult)."""
    from tabmem.attacks.shadows import row_keys
    from tabmem.data.datasets import load_dataset

    ds = load_dataset(dataset, data_dir=data_dir)
    perm = np.random.default_rng(0).permutation(len(ds.train))
    members, hold, population = (
        ds.train.iloc[p].reset_index(drop=True) for p in (perm[:N], perm[N : 2 * N], perm[3 * N :])
    )
    # a population row equal to a target would put that target into an "out" shadow (tabmem.runs.shadows drops them too)
    clash = np.isin(row_keys(population), row_keys(pd.concat([members, hold], ignore_index=True)))
    return members, hold, population[~clash].reset_index(drop=True), ds.schema


def shadow_rows(n_population: int, i: int, base_seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint (train, evaluation holdout, selection holdout) population positions of shadow ``i``."""
    rng = np.random.default_rng(np.random.SeedSequence([base_seed, 7, i]))
    pick = rng.choice(n_population, size=3 * N, replace=False)
    return np.sort(pick[:N]), np.sort(pick[N : 2 * N]), np.sort(pick[2 * N :])


def shadow_seed(base_seed: int, i: int) -> int:
    return int(np.random.SeedSequence([base_seed, 1, i]).generate_state(1, np.uint32)[0])


def sample_seed(train_seed: int) -> int:
    """The targets' first evaluation sample's derivation (``synthetic_of``), applied to the shadow's seed."""
    return int(np.random.SeedSequence([train_seed, 2024]).generate_state(1)[0])


def train_one_shadow(
    i: int, population: pd.DataFrame, schema: Any, out: Path, *, epochs: int, base_seed: int
) -> dict[str, Any]:
    """Train shadow ``i`` with the rule (resumable) and sample both of its models; returns done.json."""
    from tabmem._io import read_json, write_frame, write_json
    from tabmem.generators import load_generator
    from tabmem.runs.train import train_to_dir

    d = out / "shadows" / f"{i:03d}"
    if (d / "done.json").is_file():
        return read_json(d / "done.json", require=("shadow",))
    tr, ho, se = shadow_rows(len(population), i, base_seed)
    seed = shadow_seed(base_seed, i)
    t0 = time.perf_counter()
    if not (d / "train" / "summary.json").is_file():
        train_to_dir(
            population.iloc[tr].reset_index(drop=True), schema, d / "train", model="tabddpm", preset="small",
            params={"epochs": epochs}, seed=seed, track_every=RULE["track_every"], distance=RULE["distance"],
            holdout=population.iloc[ho].reset_index(drop=True), resume=(d / "train" / "config.json").is_file(),
            stop_excess=RULE["stop_excess"], quality_floor=RULE["quality_floor"], choose=RULE["choose"],
            selection_holdout=population.iloc[se].reset_index(drop=True), keep_snapshots=True,
        )  # fmt: skip
    selection = json.loads((d / "train" / "summary.json").read_text())["selection"]
    s_seed = sample_seed(seed)
    for arm, model in (("none", "last_model.pt"), ("mstop", "model.pt")):
        gen = load_generator(d / "train" / model, device="cpu")
        write_frame(d / f"synthetic_{arm}.parquet", gen.sample(N, random_state=s_seed))
    info = {
        "shadow": i,
        "train_seed": seed,
        "sample_seed": s_seed,
        "population_positions": {"train": tr.tolist(), "holdout": ho.tolist(), "selection": se.tolist()},
        "chosen_epoch": selection["chosen_epoch"],
        "rule_met": selection["rule_met"],
        "reason": selection["reason"],
        "seconds": time.perf_counter() - t0,
    }
    shutil.rmtree(d / "train" / "selection" / "snapshots", ignore_errors=True)  # 48 MB each; model.pt is kept
    write_json(d / "done.json", info)
    return info


def load_shadow_set(out: Path, arm: str, targets: pd.DataFrame, schema: Any):
    """The offline :class:`ShadowSet` of ``arm`` from every finished shadow (none holds a target)."""
    from tabmem._io import read_frame
    from tabmem.attacks.shadows import ShadowSet, row_keys
    from tabmem.data.schema import validate

    dirs = sorted(p.parent for p in (out / "shadows").glob("*/done.json"))
    infos = [json.loads((p / "done.json").read_text()) for p in dirs]
    keys = row_keys(validate(targets, schema, name="targets", nan="match", extra="ignore"))
    return ShadowSet(
        tuple(read_frame(p / f"synthetic_{arm}.parquet") for p in dirs),
        np.zeros((len(dirs), len(targets)), dtype=bool),
        keys,
        design="offline",
        meta={"arm": arm, "shadows": [i["shadow"] for i in infos], "chosen_epochs": [i["chosen_epoch"] for i in infos]},
    )


def score(attack: str, synthetic: pd.DataFrame, targets: pd.DataFrame, schema: Any, shadows, seed: int) -> dict:
    """``attack`` fitted on ``synthetic`` (with ``shadows`` for LiRA), judged on members + non-members."""
    from tabmem.attacks import get_attack
    from tabmem.attacks.evaluation import evaluate_membership

    atk = get_attack(attack, n_jobs=1)
    atk.fit(synthetic, schema, shadows=shadows if atk.needs_shadows else None)
    is_member = np.r_[np.ones(N, dtype=bool), np.zeros(len(targets) - N, dtype=bool)]
    res = evaluate_membership(atk.score(targets), is_member, n_bootstrap=1000, random_state=seed)
    return {"attack": attack, "auc": res.auc, "auc_ci": list(res.auc_ci),
            "tpr_at_1pct_fpr": res.tpr_at_fpr.get(0.01), "tpr_at_0.1pct_fpr": res.tpr_at_fpr.get(0.001)}  # fmt: skip


def attack_all(out: Path, data_dir: str | None, seeds: list[int]) -> None:
    """``lira_offline`` and ``dcr`` on each seed's none and mstop targets; ``attack_S.json`` per (arm, seed), S = the number of finished shadows."""
    from tabmem._io import write_json

    members, hold, _, schema = split(data_dir)
    targets = pd.concat([members, hold], ignore_index=True)
    sets = {arm: load_shadow_set(out, arm, targets, schema) for arm in ARMS}
    for seed in seeds:
        for arm in ARMS:
            run = out / "targets" / arm / f"seed{seed}"
            f = run / f"attack_{sets[arm].n_shadows}.json"
            if f.is_file():
                continue
            synthetic = synthetic_of(run / "train", N, seed)
            res = {"arm": arm, "seed": seed, "n_shadows": sets[arm].n_shadows, "shadow_meta": sets[arm].meta}
            for attack in ("lira_offline", "dcr"):
                res[attack] = score(attack, synthetic, targets, schema, sets[arm], seed)
            write_json(f, res)
            print(f"{arm} seed {seed}: LiRA offline {res['lira_offline']['auc']:.3f} DCR {res['dcr']['auc']:.3f}",
                  flush=True)  # fmt: skip


def copy_targets(src: Path, out: Path) -> None:
    """The models and eval.json of part 5's runs (read-only source), ``none`` = the run's last_model.pt."""
    for seed_dir in sorted((src / "mstop").glob("seed*")):
        for arm, model in (("mstop", "model.pt"), ("none", "last_model.pt")):
            d = out / "targets" / arm / seed_dir.name
            (d / "train").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(seed_dir / "train" / model, d / "train" / "model.pt")
            shutil.copyfile(src / arm / seed_dir.name / "eval.json", d / "eval.json")
        shutil.copyfile(seed_dir / "train" / "summary.json", out / "targets" / "mstop" / seed_dir.name / "summary.json")


def report(out: Path) -> None:
    """Per-seed table and the paired change mstop - none (mean ± 95% t half-width over seeds)."""
    rows = []
    for f in sorted((out / "targets").glob("*/seed*/attack_*.json")):
        r = json.loads(f.read_text())
        part5 = json.loads((f.parent / "eval.json").read_text())["attack"]
        for attack in ("lira_offline", "dcr"):
            a = r[attack]
            epochs = r["shadow_meta"]["chosen_epochs"] if r["arm"] == "mstop" else None
            rows.append({"arm": r["arm"], "seed": r["seed"], "S": r["n_shadows"], "attack": attack, "auc": a["auc"],
                         "lo": a["auc_ci"][0], "hi": a["auc_ci"][1], "tpr1": a["tpr_at_1pct_fpr"],
                         "tpr01": a["tpr_at_0.1pct_fpr"], "part5_dcr": part5["auc"], "epochs": epochs})  # fmt: skip
    if not rows:
        print("no attack results yet")
        return
    df = pd.DataFrame(rows)
    for n_shadows, by_s in df.groupby("S"):
        report_shadows(by_s, int(n_shadows))


def report_shadows(df: pd.DataFrame, n_shadows: int) -> None:
    """The tables of one shadow count."""
    print(f"\n### {n_shadows} shadows per arm\n")
    epochs = df.epochs.dropna()
    if len(epochs):
        print(f"epochs the rule chose for the shadows (their mstop models): {epochs.iloc[0]}\n")
    print(
        "| seed | attack | AUC none [95% CI] | AUC mstop [95% CI] | TPR@1% FPR none / mstop | TPR@0.1% none / mstop |"
    )
    print("|---|---|---|---|---|---|")
    for (seed, attack), g in df.groupby(["seed", "attack"]):
        n, m = g[g.arm == "none"], g[g.arm == "mstop"]
        if n.empty or m.empty:
            continue
        n, m = n.iloc[0], m.iloc[0]
        print(f"| {seed} | {attack} | {n.auc:.3f} [{n.lo:.3f}, {n.hi:.3f}] | {m.auc:.3f} [{m.lo:.3f}, {m.hi:.3f}] "
              f"| {n.tpr1:.3f} / {m.tpr1:.3f} | {n.tpr01:.3f} / {m.tpr01:.3f} |")  # fmt: skip
    print("\n(mean ± 95% t half-width over the seeds; the DCR row's last column: its largest deviation from part 5)\n")
    print("| attack | seeds | AUC none | AUC mstop | AUC change (paired) | TPR@1% none | TPR@1% mstop "
          "| TPR@1% change (paired) | seeds with mstop's interval below none's |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for attack, g in df.groupby("attack"):
        p = g[g.arm == "mstop"].merge(g[g.arm == "none"], on="seed", suffixes=("", "_none"))
        if p.empty:
            continue
        cells = [
            t_ci(list(v)) for v in (p.auc_none, p.auc, p.auc - p.auc_none, p.tpr1_none, p.tpr1, p.tpr1 - p.tpr1_none)
        ]
        text = [f"{m:+.3f} ± {h:.3f}" if k in (2, 5) else f"{m:.3f} ± {h:.3f}" for k, (m, h, _) in enumerate(cells)]
        below = int((p.hi < p.lo_none).sum())
        extra = ""
        if attack == "dcr":
            dev = np.r_[(p.auc - p.part5_dcr).abs(), (p.auc_none - p.part5_dcr_none).abs()].max()
            extra = f" (max deviation from part 5: {dev:.4f})"
        print(f"| {attack} | {len(p)} | {' | '.join(text)} | {below} of {len(p)}{extra} |")
    for attack, g in df.groupby("attack"):
        for arm in ARMS:
            a = g[g.arm == arm]
            print(
                f"\n{attack} {arm}: the 95% interval lies above 0.5 in {int((a.lo > 0.5).sum())} of {len(a)} seeds",
                end="",
            )
    print()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="runs/i25lira")
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--copy-targets", default=None, help="part 5's adult1000-mstop/tabddpm directory (read only)")
    ap.add_argument("--train-shadows", type=int, default=0, help="train shadows 0..S-1 (finished ones are kept)")
    ap.add_argument("--epochs", type=int, default=2000)
    ap.add_argument("--shadow-seed", type=int, default=0)
    ap.add_argument("--attack", action="store_true")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    if args.copy_targets:
        copy_targets(Path(args.copy_targets), out)
    if args.report:
        report(out)
        return
    import torch

    torch.set_num_threads(1)
    if args.train_shadows:
        _, _, population, schema = split(args.data_dir)
        for i in range(args.train_shadows):
            info = train_one_shadow(i, population, schema, out, epochs=args.epochs, base_seed=args.shadow_seed)
            print(f"shadow {i}: chosen epoch {info['chosen_epoch']} ({info['seconds']:.0f} s)", flush=True)
    if args.attack:
        attack_all(out, args.data_dir, args.seeds)


if __name__ == "__main__":
    main()
