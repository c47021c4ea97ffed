"""LiRA offline on part 10's ``ema+mstop`` models (docs/mitigation.md part 10; issue 25's strongest attack).

Design of ``lira_evidence.py`` (part 5), with the targets and the shadows of part 10's arm:

* targets: the 5 chosen models of ``ema_evidence.py`` (Adult-1000, seeds 0-4, the rule run on the EMA weights,
  ``model.pt``), each on its first evaluation sample (``synthetic_of``); members = the 1,000 training rows,
  non-members = the evaluation holdout.
* OUT shadows: part 5's shadows (same population rows, same training seeds: ``lira_evidence.shadow_rows``,
  ``shadow_seed`` with base seed 0) trained as the targets were: 2,000 epochs with the rule (limit 0.05, floor
  0.95, choose last, tracked every 100 with fang2024) and ``ema_decay=0.999``, so the rule sees, snapshots and
  keeps the EMA weights; each shadow's chosen ``model.pt`` samples 1,000 rows (seed as in part 5).
* count rule (fixed before any result): shadows 0, 1, 2, ... one at a time; none is started at or after
  ``--until`` (UTC ``HH:MM``); the attack uses every finished shadow and is run only with >= 4.
* attack: ``lira_offline`` and ``dcr`` (the cross-check: it must reproduce part 10's DCR AUCs), AUC with a
  1,000-resample interval, TPR at 1% / 0.1% FPR; compared per seed with part 5's ``none`` LiRA result files
  (``attack_8.json``, ``attack_28.json``, copied read-only from ``--none-lira``).

Usage (one torch thread)::

    python lira_ema_evidence.py --copy-targets ../../../i25-ema/runs/i25ema/adult1000/tabddpm \\
        --none-lira ../../../i25-lira/runs/i25lira --out ../../runs/i25ema2/lira
    nice -n 10 python lira_ema_evidence.py --train-shadows 32 --until 07:37 --attack --out ../../runs/i25ema2/lira
    python lira_ema_evidence.py --report --out ../../runs/i25ema2/lira
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pandas as pd
from lira_evidence import RULE, N, sample_seed, score, shadow_rows, shadow_seed, split
from mitigation_evidence import default_data_dir, synthetic_of, t_ci

ARM = "ema+mstop"
EMA_DECAY = 0.999  # part 10's


def train_one_shadow(i: int, population: pd.DataFrame, schema: Any, out: Path) -> dict[str, Any]:
    """Shadow ``i`` of part 5 trained with the rule on the EMA; its chosen model's sample; returns done.json."""
    from tabmem._io import read_json, write_frame, write_json
    from tabmem.generators import load_generator
    from tabmem.runs.train import train_to_dir

    d = out / "shadows" / f"{i:03d}"
    if (d / "done.json").is_file():
        return read_json(d / "done.json", require=("shadow",))
    tr, ho, se = shadow_rows(len(population), i, 0)
    seed = shadow_seed(0, i)
    t0 = time.perf_counter()
    train_to_dir(
        population.iloc[tr].reset_index(drop=True), schema, d / "train", model="tabddpm", preset="small",
        params={"epochs": 2000, "ema_decay": EMA_DECAY}, seed=seed, track_every=RULE["track_every"],
        distance=RULE["distance"], holdout=population.iloc[ho].reset_index(drop=True),
        resume=(d / "train" / "config.json").is_file(), stop_excess=RULE["stop_excess"],
        quality_floor=RULE["quality_floor"], choose=RULE["choose"],
        selection_holdout=population.iloc[se].reset_index(drop=True), keep_snapshots=True,
    )  # fmt: skip
    selection = json.loads((d / "train" / "summary.json").read_text())["selection"]
    s_seed = sample_seed(seed)
    gen = load_generator(d / "train" / "model.pt", device="cpu")
    write_frame(d / f"synthetic_{ARM}.parquet", gen.sample(N, random_state=s_seed))
    info = {"shadow": i, "train_seed": seed, "sample_seed": s_seed, "chosen_epoch": selection["chosen_epoch"],
            "rule_met": selection["rule_met"], "seconds": time.perf_counter() - t0}  # fmt: skip
    shutil.rmtree(d / "train" / "selection" / "snapshots", ignore_errors=True)
    for f in ("checkpoint.pt", "last_model.pt"):
        (d / "train" / f).unlink(missing_ok=True)
    write_json(d / "done.json", info)
    return info


def copy_inputs(targets: Path, none_lira: Path, out: Path) -> None:
    """Part 10's chosen models and eval.json; part 5's none LiRA result files (read-only sources)."""
    for seed_dir in sorted((targets / ARM).glob("seed*")):
        d = out / "targets" / ARM / seed_dir.name
        (d / "train").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed_dir / "train" / "model.pt", d / "train" / "model.pt")
        shutil.copyfile(seed_dir / "eval.json", d / "eval.json")
        n = out / "targets" / "none" / seed_dir.name
        n.mkdir(parents=True, exist_ok=True)
        for f in sorted((none_lira / "targets" / "none" / seed_dir.name).glob("attack_*.json")):
            shutil.copyfile(f, n / f.name)


def attack(out: Path, data_dir: str, seeds: list[int]) -> None:
    """``lira_offline`` and ``dcr`` on each seed's target with every finished shadow: attack_S.json."""
    from lira_evidence import load_shadow_set

    from tabmem._io import write_json

    members, hold, _, schema = split(data_dir)
    targets = pd.concat([members, hold], ignore_index=True)
    shadows = load_shadow_set(out, ARM, targets, schema)
    if shadows.n_shadows < 4:
        print(f"only {shadows.n_shadows} shadows finished (>= 4 needed): no attack", flush=True)
        return
    for seed in seeds:
        run = out / "targets" / ARM / f"seed{seed}"
        synthetic = synthetic_of(run / "train", N, seed)
        res = {"arm": ARM, "seed": seed, "n_shadows": shadows.n_shadows, "shadow_meta": shadows.meta}
        for a in ("lira_offline", "dcr"):
            res[a] = score(a, synthetic, targets, schema, shadows, seed)
        write_json(run / f"attack_{shadows.n_shadows}.json", res)
        print(f"{ARM} seed {seed}: LiRA offline {res['lira_offline']['auc']:.3f} DCR {res['dcr']['auc']:.3f}",
              flush=True)  # fmt: skip


def report(out: Path) -> None:
    """Per seed and paired (ema+mstop - none, mean ± 95% t half-width) for each none shadow count."""
    ema = {}
    for f in sorted((out / "targets" / ARM).glob("seed*/attack_*.json")):
        r = json.loads(f.read_text())
        ema[r["seed"]] = r
    if not ema:
        print("no attack results")
        return
    s = next(iter(ema.values()))["n_shadows"]
    print(f"ema+mstop: {s} shadows, chosen epochs {next(iter(ema.values()))['shadow_meta']['chosen_epochs']}")
    for seed, r in sorted(ema.items()):
        dcr10 = json.loads((out / "targets" / ARM / f"seed{seed}" / "eval.json").read_text())["attack"]["auc"]
        a = r["lira_offline"]
        print(f"seed {seed}: LiRA {a['auc']:.3f} [{a['auc_ci'][0]:.3f}, {a['auc_ci'][1]:.3f}] TPR@1% "
              f"{a['tpr_at_1pct_fpr']:.3f} TPR@0.1% {a['tpr_at_0.1pct_fpr']:.3f}; DCR {r['dcr']['auc']:.4f} "
              f"(part 10: {dcr10:.4f})")  # fmt: skip
    for none_s in (8, 28):
        rows = []
        for seed, r in sorted(ema.items()):
            f = out / "targets" / "none" / f"seed{seed}" / f"attack_{none_s}.json"
            if f.is_file():
                rows.append((json.loads(f.read_text())["lira_offline"], r["lira_offline"]))
        if not rows:
            continue
        cells = [t_ci([float(v) for v in x]) for x in (
            [n["auc"] for n, _ in rows], [e["auc"] for _, e in rows], [e["auc"] - n["auc"] for n, e in rows],
            [n["tpr_at_1pct_fpr"] for n, _ in rows], [e["tpr_at_1pct_fpr"] for _, e in rows])]  # fmt: skip
        below = sum(e["auc_ci"][1] < n["auc_ci"][0] for n, e in rows)
        print(f"none {none_s} shadows vs ema+mstop {s}: AUC none {cells[0][0]:.3f} ± {cells[0][1]:.3f}, ema+mstop "
              f"{cells[1][0]:.3f} ± {cells[1][1]:.3f}, paired {cells[2][0]:+.3f} ± {cells[2][1]:.3f}; TPR@1% "
              f"{cells[3][0]:.3f} ± {cells[3][1]:.3f} -> {cells[4][0]:.3f} ± {cells[4][1]:.3f}; "
              f"interval below none's in {below} of {len(rows)}; "
              f"lower end > 0.5 in {sum(e['auc_ci'][0] > 0.5 for _, e in rows)}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--copy-targets", default=None, help="part 10's adult1000/tabddpm directory (read-only)")
    ap.add_argument("--none-lira", default=None, help="part 5's runs/i25lira (read-only)")
    ap.add_argument("--train-shadows", type=int, default=0)
    ap.add_argument("--until", default=None, help="UTC HH:MM: start no shadow at or after it")
    ap.add_argument("--attack", action="store_true")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    if args.copy_targets:
        copy_inputs(Path(args.copy_targets), Path(args.none_lira), out)
    if args.report:
        report(out)
        return
    import torch

    torch.set_num_threads(1)
    if args.train_shadows:
        _, _, population, schema = split(args.data_dir)
        for i in range(args.train_shadows):
            now = dt.datetime.now(dt.UTC).strftime("%H:%M")
            if args.until and now >= args.until and not (out / "shadows" / f"{i:03d}" / "done.json").is_file():
                print(f"{now} UTC >= {args.until}: no more shadows ({i} finished)", flush=True)
                break
            info = train_one_shadow(i, population, schema, out)
            print(f"shadow {i}: chosen epoch {info['chosen_epoch']} ({info['seconds']:.0f} s)", flush=True)
    if args.attack:
        attack(out, args.data_dir, args.seeds)


if __name__ == "__main__":
    main()
