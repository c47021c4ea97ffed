"""Evidence for the mitigation docs: every arm x seed is one run directory; finished ones are skipped.

As a study: ``tabmem run studies/mitigation/full.toml`` runs the arms none, random10, dc10, count10,
tcm30, dcm and smote30 on TabDDPM, TVAE and CTGAN (3 seeds), and ``studies/mitigation/papers.toml``
the full-Adult arms (none, tcm30, tcmp30, smote30). The study engine cannot express the rest,
so this script stays for it: the transfer arms ``xfer-<model>-<arm>`` (a ranking from another cell),
``--reeval`` (more samples of every final model), a holdout from the training split, and the
``--report`` table docs/mitigation.md cites.

Regime (part 1, see ``studies/mitigation/mitigation_regime.py``): ``--n-train`` rows drawn from the dataset's
training split (data seed 0) and ``--n-train`` other rows of the same split as the holdout (same
population, same size); the dataset's test split for MLE. Arms (``--arms``), each trained from
scratch for the full schedule, each judged by :func:`tabmem.runs.dynamiccut.evaluate_run_dir` on
|train| rows sampled from the final model against the ORIGINAL training rows, with ``fang2024``
(and quality) and ``gower``:

* ``none``          no pruning (tracked every ``--track-every`` epochs: gives the count oracle)
* ``random10``      random 10% pruned (``tabmem dynamiccut --prune-by random``)
* ``dc10``          DynamicCut: intensity (top-k ``--top-k``) over a warm-up of ``--warmup`` epochs
* ``count10``       the count oracle: the 10% with most replicas in ``none``'s final model
* ``tcm30``         TabCutMix (code mode), 30% new rows
* ``dcm``           DynamicCutMix: ``dc10``'s ranking (the same warm-up) + TabCutMix 30% of the pruned table
* ``smote30``       SMOTE (imbalanced-learn SMOTENC), 30% new rows of the minority class
* ``tcmp30``, ``mixup30``, ``ijf30``  the other baselines (part 4)
* ``mstop``         memorization-aware checkpoint choice (``tabmem train --stop-excess``): ONE training
  per seed, tracked every ``--track-every`` epochs against a *selection* holdout (another
  ``--n-train`` rows of the training split, disjoint from the evaluation holdout); ``mstop`` is the
  chosen epoch's model and ``none`` the last epoch's model of the SAME run (so this arm writes both
  ``mstop/seedN`` and ``none/seedN``: run it under its own ``--tag``). Each is judged on ``--samples``
  samples (``eval_k.json``, as ``--reeval``) and by the DCR membership attack (``attack.json``).
* ``xfer-<model>-<arm>``  transfer: prune this model's table with ``<model>``'s ``<arm>`` ranking
  (same seed), e.g. ``xfer-tabddpm-dc10`` for TVAE.
* ``rw10``, ``rwl30``, ``rwl50``  reweighting (issue 25): keep every record and retrain with the top
  10% at weight 0.1 (``step``) / the top 30% or 50% at a weight rising linearly with the rank from
  0 to 1 (``linear``); the ranking is ``none``'s intensity ranking at epochs <= ``--warmup``, which
  is the dc10 warm-up ranking itself (same seed, same first epochs), so no second warm-up is trained.
* ``dp1``, ``dp10``  DP-SGD (issue 25's reference point; ``dp1000``: the same with almost no noise, a
  diagnostic): the generator trained with ``dp_epsilon`` 1 / 10
  (opacus; delta 1/(10n)) for ``--dp-epochs`` epochs (default ``--epochs``), untracked; judged like every arm
  plus ``--samples - 1`` more samples (eval_k.json).
* ``rej``, ``rejg``, ``mstop+rej``  sampling-time rejection of replicas (issue 25; ``rejection_evidence.py``):
  no training, samples of an ``mstop`` run's models (run under its ``--tag``); ``attacks`` scores the
  ``none`` and ``mstop`` arms with the same attack suite. ``--rejection-report`` prints their tables.

Every arm's eval.json also holds the DCR attack (``dcr``: l2 distance to the closest synthetic row of
the same sample; members = the 1,000 training rows, non-members = the holdout): AUC and its bootstrap
interval. Runs finished before it existed get it on the next call (same sample, same seed).

Usage (one torch thread; resumable; ``--report`` aggregates what exists)::

    python studies/mitigation/mitigation_evidence.py --dataset adult --model tabddpm --epochs 1500 --seeds 0 1 2 \
        --arms none random10 dc10 count10 tcm30 dcm smote30 --out runs/mitigation
    python studies/mitigation/mitigation_evidence.py --report --out runs/mitigation > runs/mitigation/report.md
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rejection_evidence import REJECT_ARMS, attacks_of_unmitigated, rejection_report, run_rejection

#: reweighting arms: (fraction of top records, weight of the top record, shape)
REWEIGHT_ARMS = {"rw10": (0.10, 0.1, "step"), "rwl30": (0.30, 0.0, "linear"), "rwl50": (0.50, 0.0, "linear")}

#: DP-SGD arms: target epsilon (delta: the generator's default 1/(10n)); dp1000 is a diagnostic (clipping,
#: almost no noise: what the clipping and Poisson sampling alone cost)
DP_ARMS = {"dp1": 1.0, "dp10": 10.0, "dp1000": 1000.0}

AUG_ARMS = {
    "tcm30": ("tabcutmix", {}),
    "tcmp30": ("tabcutmix-plus", {}),
    "smote30": ("smote", {}),
    "mixup30": ("mixup", {}),
    "ijf30": ("ijf", {}),
}


def default_data_dir() -> str | None:
    """``$TABMEM_DATA_DIR``, else ``../shared/datasets`` next to the checkout, else None (the dataset cache)."""
    import os
    from pathlib import Path

    sibling = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return os.environ.get("TABMEM_DATA_DIR") or (str(sibling) if sibling.is_dir() else None)


def data(dataset: str, n_train: int, data_dir: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Any]:
    from tabmem.data.datasets import load_dataset

    ds = load_dataset(dataset, data_dir=data_dir)
    if n_train <= 0:  # the full training split; the test split is both the holdout and the MLE test
        return ds.train, ds.test, ds.test, ds.schema
    perm = np.random.default_rng(0).permutation(len(ds.train))
    train = ds.train.iloc[perm[:n_train]].reset_index(drop=True)
    hold = ds.train.iloc[perm[n_train : 2 * n_train]].reset_index(drop=True)
    return train, hold, ds.test, ds.schema


def evaluate(model_dir: Path, train, schema, hold, test, seed, pruned, mle_grid) -> dict[str, Any]:
    """``evaluate_run_dir`` for fang2024 (with quality), then the same sampled rows scored with gower."""
    from tabmem.generators import load_generator
    from tabmem.mitigation import mitigation_report
    from tabmem.runs.dynamiccut import evaluate_run_dir

    t0 = time.perf_counter()
    out = {
        "fang2024": evaluate_run_dir(
            model_dir,
            train,
            schema,
            pruned_rows=pruned,
            holdout=hold,
            test=test,
            distance="fang2024",
            seed=seed,
            mle_grid=mle_grid,
            n_jobs=1,
        ).to_dict()  # fmt: skip
    }
    out["fang2024"]["eval_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # the rows evaluate_run_dir sampled (same seed derivation), scored with the other distance
    gen = load_generator(model_dir / "model.pt", device="cpu")
    synthetic = gen.sample(len(train), random_state=int(np.random.SeedSequence([seed, 2024]).generate_state(1)[0]))
    out["gower"] = mitigation_report(
        synthetic, train, schema, pruned_rows=pruned, holdout=hold, distance="gower", quality=False, random_state=seed,
        n_jobs=1,
    ).to_dict()  # fmt: skip
    out["gower"]["eval_seconds"] = time.perf_counter() - t0
    out["dcr"] = dcr_attack(synthetic, train, hold, schema, seed)
    return out


def selection_rows(dataset: str, n_train: int, data_dir: str) -> pd.DataFrame:
    """Rows 2n..3n of the permutation ``data`` uses: unseen by training and by the evaluation holdout."""
    from tabmem.data.datasets import load_dataset

    ds = load_dataset(dataset, data_dir=data_dir)
    perm = np.random.default_rng(0).permutation(len(ds.train))
    return ds.train.iloc[perm[2 * n_train : 3 * n_train]].reset_index(drop=True)


def more_samples(model_dir: Path, train, hold, schema, seed: int, k: int) -> dict[str, Any]:
    """``k`` more |train|-row samples of the model, scored with both distances (eval_k.json's format)."""
    from tabmem.generators import load_generator
    from tabmem.memorization.replicas import ReplicaDetector

    gen = load_generator(model_dir / "model.pt", device="cpu")
    samples = [
        gen.sample(len(train), random_state=int(np.random.SeedSequence([seed, 3000 + j]).generate_state(1)[0]))
        for j in range(k)
    ]
    out: dict[str, Any] = {"k": k, "seed": seed}
    for d in ("fang2024", "gower"):
        det = ReplicaDetector(d, n_jobs=1).fit(train, schema)
        h = det.score(hold, name="holdout", unseen="mismatch").memorization_rate
        rates = [det.score(s, unseen="mismatch").memorization_rate for s in samples]
        out[d] = {"rates": rates, "memorization_rate": float(np.mean(rates)), "holdout_memorization_rate": h,
                  "excess_memorization": float(np.mean(rates)) - h}  # fmt: skip
    return out


def dcr_attack_on_model(model_dir: Path, train, hold, schema, seed: int) -> dict[str, Any]:
    """:func:`dcr_attack` on the sample ``evaluate`` judged, with a 1,000-resample interval (the mstop arm's)."""
    return dcr_attack(synthetic_of(model_dir, len(train), seed), train, hold, schema, seed, n_bootstrap=1000)


def run_mstop(args, seed: int, train, hold, test, schema) -> None:
    """The ``mstop`` arm: one tracked training, the chosen and the last epoch judged alike."""
    import shutil

    from tabmem._io import write_json
    from tabmem.runs.train import train_to_dir

    root = Path(args.out) / args.tag / args.model
    run, none = root / "mstop" / f"seed{seed}", root / "none" / f"seed{seed}"
    if (run / "eval.json").is_file() and (none / "eval.json").is_file():
        print(f"skip {run} (done)", flush=True)
        return
    run.mkdir(parents=True, exist_ok=True)
    params = {"epochs": args.epochs, **json.loads(args.params)}
    t0 = time.perf_counter()
    print(f"run {run}", flush=True)
    if not (run / "train" / "summary.json").is_file():
        selection = selection_rows(args.dataset, args.n_train, args.data_dir)
        train_to_dir(
            train, schema, run / "train", model=args.model, preset=args.preset, params=params, seed=seed,
            distance="fang2024", track_every=args.track_every, holdout=hold,
            resume=(run / "train" / "config.json").is_file(), stop_excess=args.stop_excess,
            quality_floor=args.quality_floor, choose=args.choose, selection_holdout=selection, keep_snapshots=True,
        )  # fmt: skip
    trained = time.perf_counter() - t0
    (none / "train").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run / "train" / "last_model.pt", none / "train" / "model.pt")
    chosen = json.loads((run / "train" / "summary.json").read_text())["selection"]
    for arm_dir in (run, none):
        t1 = time.perf_counter()
        model_dir = arm_dir / "train"
        result = evaluate(model_dir, train, schema, hold, test, seed, None, args.mle_grid)
        write_json(arm_dir / "eval_k.json", more_samples(model_dir, train, hold, schema, seed, args.samples - 1))
        result["attack"] = dcr_attack_on_model(model_dir, train, hold, schema, seed)
        result["arm"], result["seed"] = arm_dir.parts[-2], seed
        result["wall_seconds"] = trained + time.perf_counter() - t1
        result["selection"] = chosen
        write_json(arm_dir / "eval.json", result)
        f = result["fang2024"]
        print(
            f"  done {result['arm']} seed {seed} (epoch {chosen['chosen_epoch'] if arm_dir == run else args.epochs}): "
            f"excess {f['excess_memorization']:+.3f} DCR AUC {result['attack']['auc']:.3f}",
            flush=True,
        )


def frontier(out: Path, data_dir: str, mle_grid: str, seeds: list[int] | None = None) -> None:
    """Judge EVERY tracked epoch's snapshot of every ``mstop`` run (one sample each) on the evaluation
    holdout: ``frontier.csv`` (epoch, rates and excesses with both distances, Shape, Trend, MLE, DCR AUC).
    With ``selection.csv`` it shows what any other rule would have chosen, without training again."""
    from tabmem._io import write_frame
    from tabmem.attacks.dcr import DCR
    from tabmem.attacks.evaluation import evaluate_membership
    from tabmem.generators import load_generator
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.mitigation import quality_scores

    for run in sorted(out.glob("*/*/mstop/seed*")):
        snaps = sorted((run / "train" / "selection" / "snapshots").glob("epoch=*.pt"))
        if (run / "frontier.csv").is_file() or not (run / "eval.json").is_file() or len(snaps) < 2:
            continue
        if seeds is not None and int(run.name[4:]) not in seeds:
            continue
        tag = run.parts[-4]
        n_train = int(tag.split("-")[0][len("adult") :]) if tag.startswith("adult") else 1000
        train, hold, test, schema = data("adult", n_train, data_dir)
        dets = {d: ReplicaDetector(d, n_jobs=1).fit(train, schema) for d in ("fang2024", "gower")}
        hold_rates = {
            d: det.score(hold, name="holdout", unseen="mismatch").memorization_rate for d, det in dets.items()
        }
        seed = int(json.loads((run / "eval.json").read_text())["seed"])
        rows = []
        for f in snaps:
            epoch = int(f.stem.split("=")[1])
            gen = load_generator(f, device="cpu")
            syn = gen.sample(
                len(train), random_state=int(np.random.SeedSequence([seed, 5000 + epoch]).generate_state(1)[0])
            )
            row: dict[str, Any] = {"epoch": epoch}
            for d, det in dets.items():
                rate = det.score(syn, unseen="mismatch").memorization_rate
                row.update({f"{d}_rate": rate, f"{d}_excess": rate - hold_rates[d]})
            q = quality_scores(train, syn, schema, test=test, mle_grid=mle_grid, random_state=seed)
            row.update(shape=q.shape, trend=q.trend, mle=q.mle)
            attack = DCR(n_jobs=1).fit(syn, schema)
            scores = np.concatenate([attack.score(train), attack.score(hold)])
            member = np.r_[np.ones(len(train), bool), np.zeros(len(hold), bool)]
            row["dcr_auc"] = evaluate_membership(scores, member, n_bootstrap=0).auc
            rows.append(row)
            print(
                f"  frontier {run} epoch {epoch}: excess {row['fang2024_excess']:+.3f} shape {q.shape:.3f}", flush=True
            )
        write_frame(run / "frontier.csv", pd.DataFrame(rows))


def frontier_report(out: Path) -> None:
    """Mean over seeds of every tracked epoch (frontier.csv), and what other rules would have chosen."""
    from tabmem.mitigation import choose_epoch

    frames = []
    for f in sorted(out.glob("*/*/mstop/seed*/frontier.csv")):
        fr = pd.read_csv(f)
        sel = pd.read_csv(f.parent / "train" / "selection" / "selection.csv")
        fr = fr.merge(sel[["epoch", "excess", "excess_hi", "shape"]].rename(columns={"shape": "tracked_shape",
                      "excess": "sel_excess"}), on="epoch")  # fmt: skip
        fr["tag"], fr["seed"] = f.parts[-5], int(f.parts[-2][4:])
        frames.append(fr)
    if not frames:
        return
    df = pd.concat(frames)
    for tag, g in df.groupby("tag"):
        last = g[g.epoch == g.epoch.max()].set_index("seed")
        print(f"\n### {tag}: every tracked epoch on the evaluation holdout (one sample per epoch and seed)\n")
        print("| epoch | seeds | excess fang2024 (pts) | excess gower (pts) | Shape % | Trend % | MLE % | DCR AUC "
              "| excess vs selection holdout (pts) |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        for epoch, e in g.groupby("epoch"):
            cells = [
                fmt(*t_ci(e[c].tolist())[:2]) for c in ("fang2024_excess", "gower_excess", "shape", "trend", "mle")
            ]
            auc = fmt(*t_ci(e.dcr_auc.tolist())[:2], scale=1.0, digits=3)
            print(f"| {epoch} | {len(e)} | {' | '.join(cells)} | {auc} | {fmt(*t_ci(e.sel_excess.tolist())[:2])} |")
        print(f"\n### {tag}: other rules on the same runs (chosen on the selection holdout, judged on one sample)\n")
        print("| limit (pts) | Shape floor | choose | chosen epochs | excess fang2024 (pts) | paired change vs last "
              "| % of excess removed | Shape change | MLE change | DCR AUC change |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|")
        for limit in (0.02, 0.03, 0.05, 0.08, 0.10):
            for floor in (None, 0.95):
                for how in ("last", "best-quality"):
                    picks = []
                    for seed, s in g.groupby("seed"):
                        rows = s.rename(columns={"shape": "q"}).rename(columns={"tracked_shape": "shape"})
                        epoch, _, _ = choose_epoch(rows.to_dict("records"), limit, floor, how)
                        p = s[s.epoch == epoch].iloc[0]
                        b = last.loc[seed]
                        picks.append((epoch, p.fang2024_excess, p.fang2024_excess - b.fang2024_excess,
                                      (b.fang2024_excess - p.fang2024_excess) / b.fang2024_excess,
                                      p["shape"] - b["shape"], p.mle - b.mle, p.dcr_auc - b.dcr_auc))  # fmt: skip
                    cols = list(zip(*picks))
                    print(f"| {100 * limit:g} | {floor if floor else '-'} | {how} | {', '.join(map(str, cols[0]))} | "
                          + " | ".join(fmt(*t_ci(list(c))[:2], scale=100.0 if i != 5 else 1.0,
                                           digits=1 if i != 5 else 3) for i, c in enumerate(cols[1:]))
                          + " |")  # fmt: skip


def frontier_plot(out: Path, path: Path) -> None:
    """Excess memorization (fang2024) against Shape and MLE at every tracked epoch (mean over seeds), with
    the chosen epochs of the mstop arm: the frontier of docs/mitigation.md part 5 (an SVG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fr = pd.concat(pd.read_csv(f) for f in sorted(out.glob("*/*/mstop/seed*/frontier.csv")))
    mean = fr.groupby("epoch").mean(numeric_only=True).reset_index()
    chosen = []
    for ev in sorted(out.glob("*/*/mstop/seed*/eval.json")):
        r = json.loads(ev.read_text())
        none = json.loads((ev.parents[2] / "none" / ev.parent.name / "eval.json").read_text())
        chosen.append((r, none))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, q, label in ((axes[0], "shape", "Shape %"), (axes[1], "mle", "MLE % (tiny grid)")):
        ax.plot(
            100 * mean[q],
            100 * mean.fang2024_excess,
            "-o",
            color="0.6",
            ms=3,
            label="every 100 epochs (mean of 5 seeds)",
        )
        for e in (100, 500, 1000, 2000):
            row = mean[mean.epoch == e].iloc[0]
            ax.annotate(
                str(e), (100 * row[q], 100 * row.fang2024_excess), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
        for i, (r, none) in enumerate(chosen):
            ax.plot(100 * r["fang2024"]["quality"][q], 100 * r["fang2024"]["excess_memorization"], "o", color="C0",
                    label="chosen epoch (per seed)" if i == 0 else None)  # fmt: skip
            ax.plot(100 * none["fang2024"]["quality"][q], 100 * none["fang2024"]["excess_memorization"], "s",
                    color="C3", label="no mitigation: epoch 2000 (per seed)" if i == 0 else None)  # fmt: skip
        ax.axhline(0, color="0.8", lw=0.8)
        ax.set_xlabel(label)
        ax.set_ylabel("excess memorization, fang2024 (pts)")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle("TabDDPM small, 1,000 Adult rows: excess vs quality over training", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)  # the format from the suffix (.svg, .png)


def synthetic_of(model_dir: Path, n: int, seed: int) -> pd.DataFrame:
    """The rows ``evaluate_run_dir`` samples from the final model (same seed derivation)."""
    from tabmem.generators import load_generator

    gen = load_generator(model_dir / "model.pt", device="cpu")
    return gen.sample(n, random_state=int(np.random.SeedSequence([seed, 2024]).generate_state(1)[0]))


def dcr_attack(synthetic, train, hold, schema, seed, n_bootstrap: int = 200) -> dict[str, Any]:
    """DCR membership attack (l2): members = the training rows, non-members = the holdout; AUC and 95% CI."""
    from tabmem.attacks import get_attack
    from tabmem.attacks.evaluation import evaluate_membership

    attack = get_attack("dcr", n_jobs=1).fit(synthetic, schema)
    targets = pd.concat([train, hold], ignore_index=True)
    scores = attack.score(targets)
    is_member = np.r_[np.ones(len(train), dtype=bool), np.zeros(len(hold), dtype=bool)]
    res = evaluate_membership(scores, is_member, n_bootstrap=n_bootstrap, random_state=seed)
    return {"attack": "dcr", "distance": attack.distance, "auc": res.auc, "auc_ci": list(res.auc_ci),
            "tpr_at_1pct_fpr": res.tpr_at_fpr.get(0.01)}  # fmt: skip


def model_dir_of(run: Path) -> Path:
    return run / "dc" / "retrain" if (run / "dc").is_dir() else run / "train"


def run_arm(args, arm: str, seed: int, train, hold, test, schema) -> None:
    from tabmem._io import write_json
    from tabmem.mitigation import augmented_table, get_augmenter, rank_records
    from tabmem.runs.dynamiccut import dynamiccut_to_dir
    from tabmem.runs.train import train_to_dir

    root = Path(args.out) / args.tag / args.model
    run = root / arm / f"seed{seed}"
    if arm == "mstop":
        run_mstop(args, seed, train, hold, test, schema)
        return
    if arm in REJECT_ARMS or arm == "attacks":  # sampling-time rejection (rejection_evidence.py)
        reference = selection_rows(args.dataset, args.n_train, args.data_dir)
        if arm == "attacks":
            attacks_of_unmitigated(args, seed, train, hold, schema, reference)
        else:
            run_rejection(args, arm, seed, train, hold, test, schema, reference)
        return
    if (run / "eval.json").is_file():
        done = json.loads((run / "eval.json").read_text())
        if "dcr" not in done:  # finished before the DCR attack was added: same sample, same seed
            done["dcr"] = dcr_attack(synthetic_of(model_dir_of(run), len(train), seed), train, hold, schema, seed)
            write_json(run / "eval.json", done)
            print(f"  added dcr to {run}: AUC {done['dcr']['auc']:.3f}", flush=True)
        print(f"skip {run} (done)", flush=True)
        return
    run.mkdir(parents=True, exist_ok=True)
    params = {"epochs": args.epochs, **json.loads(args.params)}
    common = {"model": args.model, "preset": args.preset, "params": params, "seed": seed, "distance": "fang2024"}
    t0 = time.perf_counter()
    pruned = None
    print(f"run {run}", flush=True)
    if arm == "none":
        resume = (run / "train" / "checkpoint.pt").is_file() and not (run / "train" / "summary.json").is_file()
        if not (run / "train" / "summary.json").is_file():
            if (run / "train").exists() and not resume:
                import shutil

                shutil.rmtree(run / "train")
            train_to_dir(
                train, schema, run / "train", **common, track_every=args.track_every, holdout=hold, resume=resume
            )
        model_dir = run / "train"
        rank_records(model_dir, "count", random_state=seed).save(run / "count_ranking.csv")
        rank_records(model_dir, "intensity", top_k=args.top_k, warmup_epochs=args.warmup, random_state=seed).save(
            run / "intensity_ranking.csv"
        )
    elif arm in DP_ARMS:
        model_dir = run / "train"
        if not (model_dir / "summary.json").is_file():
            dp = {**params, "epochs": args.dp_epochs or args.epochs, "dp_epsilon": DP_ARMS[arm]}
            train_to_dir(train, schema, model_dir, **{**common, "params": dp}, track_every=0, holdout=hold,
                         evidence=False, resume=(model_dir / "config.json").is_file())  # fmt: skip
        write_json(run / "eval_k.json", more_samples(model_dir, train, hold, schema, seed, args.samples - 1))
    elif arm in AUG_ARMS:
        method, p = AUG_ARMS[arm]
        model_dir = run / "train"
        if not (model_dir / "summary.json").is_file():
            new = get_augmenter(method, **p).fit(train, schema).augment(ratio=0.3, random_state=seed + 1)
            table = augmented_table(train, new)
            resume = (model_dir / "checkpoint.pt").is_file()
            if model_dir.exists() and not resume:
                import shutil

                shutil.rmtree(model_dir)
            train_to_dir(table, schema, model_dir, **common, track_every=0, resume=resume)
    else:
        dc: dict[str, Any] = {"prune": 0.10}
        if arm == "random10":
            dc["prune_by"] = "random"
        elif arm == "dc10":
            dc.update(prune_by="intensity", warmup_epochs=args.warmup, track_every=args.track_every, top_k=args.top_k)
        elif arm == "count10":
            dc["ranking"] = root / "none" / f"seed{seed}" / "count_ranking.csv"
        elif arm in REWEIGHT_ARMS:
            frac, weight, shape = REWEIGHT_ARMS[arm]
            dc.update(prune=frac, reweight=weight, reweight_shape=shape)
            dc["ranking"] = root / "none" / f"seed{seed}" / "intensity_ranking.csv"
        elif arm == "dcm":
            dc.update(ranking=root / "dc10" / f"seed{seed}" / "dc" / "ranking.csv", mix="tabcutmix", mix_ratio=0.3)
        elif arm.startswith("xfer-"):
            _, src_model, src_arm = arm.split("-", 2)
            src = Path(args.out) / args.tag / src_model
            files = {
                "dc10": src / "dc10" / f"seed{seed}" / "dc" / "ranking.csv",
                "count10": src / "none" / f"seed{seed}" / "count_ranking.csv",
                "int10": src / "none" / f"seed{seed}" / "intensity_ranking.csv",
            }
            dc["ranking"] = files[src_arm]
        else:
            raise SystemExit(f"unknown arm {arm!r}")
        if "ranking" in dc and not Path(dc["ranking"]).is_file():
            print(f"  waiting: {dc['ranking']} does not exist yet; skipping {run}", flush=True)
            return
        resume = (run / "dc" / "config.json").is_file()
        summary = dynamiccut_to_dir(
            train, schema, run / "dc", **common, holdout=hold, test=test, resume=resume, quality=False,
            log=lambda m: print("  " + m, flush=True), n_jobs=1, **dc,
        )  # fmt: skip
        pruned = np.flatnonzero(pd.read_csv(run / "dc" / "ranking.csv")["pruned"].to_numpy())
        assert len(pruned) == summary.n_pruned
        model_dir = run / "dc" / "retrain"
    result = evaluate(model_dir, train, schema, hold, test, seed, pruned, args.mle_grid)
    result["arm"], result["seed"], result["wall_seconds"] = arm, seed, time.perf_counter() - t0
    write_json(run / "eval.json", result)
    f = result["fang2024"]
    print(
        f"  done {arm} seed {seed}: rate {f['memorization_rate']:.3f} holdout {f['holdout_memorization_rate']:.3f} "
        f"excess {f['excess_memorization']:+.3f} ({result['wall_seconds']:.0f}s)",
        flush=True,
    )


# ---------------------------------------------------------------------- report
def t_ci(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval half-width over seeds."""
    from scipy import stats

    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan"), 0
    if len(v) == 1:
        return float(v[0]), float("nan"), 1
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean()), float(half), len(v)


def fmt(mean: float, half: float, scale: float = 100.0, digits: int = 1) -> str:
    if math.isnan(mean):
        return "-"
    if math.isnan(half):
        return f"{scale * mean:.{digits}f}"
    return f"{scale * mean:.{digits}f} ± {scale * half:.{digits}f}"


def report(out: Path, use_k: bool = False) -> None:
    rows = []
    for ev in sorted(out.glob("*/*/*/seed*/eval.json")):
        tag, model, arm = ev.parts[-5], ev.parts[-4], ev.parts[-3]
        r = json.loads(ev.read_text())
        rk = (
            json.loads((ev.parent / "eval_k.json").read_text())
            if use_k and (ev.parent / "eval_k.json").is_file()
            else None
        )
        for distance in ("fang2024", "gower"):
            d = dict(r[distance])
            if rk is not None:  # the mean over this sample and the k more ones (same model)
                pooled = float(np.mean([d["memorization_rate"], *rk[distance]["rates"]]))
                d.update(memorization_rate=pooled, excess_memorization=pooled - d["holdout_memorization_rate"])
            q = r["fang2024"].get("quality") or {}
            rows.append(
                {
                    "tag": tag, "model": model, "arm": arm, "seed": r["seed"], "distance": distance,
                    "rate": d["memorization_rate"], "holdout": d["holdout_memorization_rate"],
                    "excess": d["excess_memorization"], "vs_pruned": d.get("memorization_rate_vs_pruned"),
                    "replicas_of_pruned": d.get("replicas_of_pruned_records"),
                    "shape": q.get("shape"), "trend": q.get("trend"), "mle": q.get("mle"),
                    "wall_s": r.get("wall_seconds"), "dcr_auc": (r.get("dcr") or r.get("attack") or {}).get("auc"),
                }
            )  # fmt: skip
    df = pd.DataFrame(rows)
    if df.empty:
        print("no finished runs")
        return
    order = ["none", "mstop", "random10", "dc10", "count10", "tcm30", "dcm", "smote30", "tcmp30", "mixup30", "ijf30",
             *REWEIGHT_ARMS, *DP_ARMS]  # fmt: skip
    for (tag, model, distance), g in df.groupby(["tag", "model", "distance"], sort=False):
        print(f"\n### {tag} / {model} / {distance}\n")
        print(
            "| arm | seeds | raw rate % | holdout % | excess (pts) | change of excess vs none (pts, paired) "
            "| vs random10 (pts, paired) | rel. reduction of raw | rel. reduction of excess | Shape % | Trend % "
            "| MLE % | DCR AUC % | DCR AUC change vs none (pts, paired) | wall s/run |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        base = g[g.arm == "none"]
        control = g[g.arm == "random10"]
        arms = sorted(g.arm.unique(), key=lambda a: (order.index(a) if a in order else 99, a))
        for arm in arms:
            a = g[g.arm == arm]
            m_rate, h_rate, n = t_ci(a.rate.tolist())
            red_raw = red_exc = delta = vs_random = dcr_delta = "-"
            if len(control) and arm not in ("none", "random10"):
                pc = a.merge(control[["seed", "excess"]], on="seed", suffixes=("", "_ctl"))
                if len(pc):
                    vs_random = fmt(*t_ci((pc.excess - pc.excess_ctl).tolist())[:2])
            if len(base) and arm != "none":
                paired = a.merge(base[["seed", "rate", "excess", "dcr_auc"]], on="seed", suffixes=("", "_base"))
                if len(paired):
                    dcr = (paired.dcr_auc.astype(float) - paired.dcr_auc_base.astype(float)).tolist()
                    dcr_delta = fmt(*t_ci(dcr)[:2])
                    dd = t_ci((paired.excess - paired.excess_base).tolist())
                    delta = fmt(dd[0], dd[1])
                    rr = t_ci(((paired.rate_base - paired.rate) / paired.rate_base).tolist())
                    red_raw = fmt(rr[0], rr[1])
                    if (paired.excess_base > 0).all():  # a relative reduction of a negative excess means nothing
                        re = t_ci(((paired.excess_base - paired.excess) / paired.excess_base).tolist())
                        red_exc = fmt(re[0], re[1])
                    else:
                        red_exc = "n/a (no excess)"
            print(
                f"| {arm} | {n} | {fmt(m_rate, h_rate)} | {fmt(*t_ci(a.holdout.tolist())[:2])} | "
                f"{fmt(*t_ci(a.excess.tolist())[:2])} | {delta} | {vs_random} | {red_raw} | {red_exc} | {fmt(*t_ci(a['shape'].tolist())[:2])} | "
                f"{fmt(*t_ci(a.trend.tolist())[:2])} | {fmt(*t_ci(a.mle.tolist())[:2])} | "
                f"{fmt(*t_ci(a.dcr_auc.tolist())[:2])} | {dcr_delta} | {np.nanmean(a.wall_s):.0f} |"
            )
    attack_report(out)
    frontier_report(out)
    overlap_report(out)


def attack_report(out: Path) -> None:
    """The ``mstop`` arms: chosen epochs, and the DCR attack's AUC of none vs the chosen epoch (paired)."""
    rows = []
    for ev in sorted(out.glob("*/*/*/seed*/eval.json")):
        r = json.loads(ev.read_text())
        if "attack" in r:
            a = r["attack"]
            rows.append({"tag": ev.parts[-5], "arm": ev.parts[-3], "seed": r["seed"], "auc": a["auc"],
                         "lo": a["auc_ci"][0], "hi": a["auc_ci"][1],
                         "epoch": r["selection"]["chosen_epoch"] if ev.parts[-3] == "mstop" else None,
                         **{k: (r["fang2024"].get("quality") or {}).get(k) for k in ("shape", "trend", "mle")}})  # fmt: skip
    if not rows:
        return
    df = pd.DataFrame(rows)
    print("\n### DCR membership attack (members: the training rows; non-members: the evaluation holdout)\n")
    print("| dataset | seed | chosen epoch | AUC none [95% CI] | AUC chosen [95% CI] |")
    print("|---|---|---|---|---|")
    for (tag, seed), g in df.groupby(["tag", "seed"]):
        n, m = g[g.arm == "none"], g[g.arm == "mstop"]
        if len(n) and len(m):
            n, m = n.iloc[0], m.iloc[0]
            print(f"| {tag} | {seed} | {int(m.epoch)} | {n.auc:.3f} [{n.lo:.3f}, {n.hi:.3f}] "
                  f"| {m.auc:.3f} [{m.lo:.3f}, {m.hi:.3f}] |")  # fmt: skip
    for tag, g in df.groupby("tag"):
        p = g[g.arm == "mstop"].merge(g[g.arm == "none"], on="seed", suffixes=("", "_none"))
        if len(p):
            print(
                f"\n{tag}: mean AUC none {fmt(*t_ci(p.auc_none.tolist())[:2], scale=1.0, digits=3)}, "
                f"chosen {fmt(*t_ci(p.auc.tolist())[:2], scale=1.0, digits=3)}, paired change "
                f"{fmt(*t_ci((p.auc - p.auc_none).tolist())[:2], scale=1.0, digits=3)} ({len(p)} seeds)"
            )
            for k in ("shape", "trend", "mle"):
                change = (p[k].astype(float) - p[k + "_none"].astype(float)).tolist()
                print(f"{tag}: paired change of {k} (chosen - none, points): {fmt(*t_ci(change)[:2])}")


def overlap_report(out: Path) -> None:
    from tabmem.mitigation.ranking import Ranking

    lines = []
    for none_dir in sorted(out.glob("*/*/none/seed*")):
        tag, model, seed = none_dir.parts[-4], none_dir.parts[-3], none_dir.parts[-1]
        count = none_dir / "count_ranking.csv"
        if not count.is_file():
            continue
        oracle = Ranking.load(count)
        entries = {"intensity (none run, epochs <= warm-up)": none_dir / "intensity_ranking.csv"}
        entries["dc10 warm-up ranking"] = out / tag / model / "dc10" / seed / "dc" / "ranking.csv"
        for other in sorted((out / tag).glob(f"*/dc10/{seed}/dc/ranking.csv")):
            if other.parts[-5] != model:
                entries[f"{other.parts[-5]} dc10 ranking"] = other
        for other in sorted((out / tag).glob(f"*/none/{seed}/count_ranking.csv")):
            if other.parts[-4] != model:
                entries[f"{other.parts[-4]} count ranking"] = other
        for name, path in entries.items():
            if path.is_file():
                rk = Ranking.load(path)
                lines.append((tag, model, seed, name, rk.overlap(oracle, 0.10), rk.expected_overlap(oracle, 0.10)))
        prefix, warm = entries["intensity (none run, epochs <= warm-up)"], entries["dc10 warm-up ranking"]
        if prefix.is_file() and warm.is_file():
            same = Ranking.load(prefix).table["rank"].equals(Ranking.load(warm).table["rank"])
            lines.append(
                (
                    tag,
                    model,
                    seed,
                    "dc10 warm-up ranking == none run's ranking at epochs <= T",
                    float(same),
                    float(same),
                )
            )
    if lines:
        print("\n### overlap of top 10% with the count oracle's top 10% (chance = 0.10)\n")
        print("| dataset | model (oracle) | seed | ranking | overlap | expected over random tie-breaks |")
        print("|---|---|---|---|---|---|")
        for tag, model, seed, name, v, e in lines:
            print(f"| {tag} | {model} | {seed} | {name} | {v:.3f} | {e:.3f} |")
        df = pd.DataFrame(lines, columns=["tag", "model", "seed", "ranking", "overlap", "expected"])
        print("\n### overlap with the count oracle, mean over seeds (95% t-interval; chance = 0.10)\n")
        print("Rankings of one seed share their tie-break permutation: `overlap` counts records tied at both")
        print("cuts as agreeing; `expected` averages over independent random tie-breaks (Ranking.expected_overlap).\n")
        print("| dataset | model (oracle) | ranking | seeds | overlap | expected over random tie-breaks |")
        print("|---|---|---|---|---|---|")
        for (tag, model, name), g in df.groupby(["tag", "model", "ranking"], sort=True):
            m, h, n = t_ci(g.overlap.tolist())
            me, he, _ = t_ci(g.expected.tolist())
            print(
                f"| {tag} | {model} | {name} | {n} | {fmt(m, h, scale=1.0, digits=3)} | {fmt(me, he, scale=1.0, digits=3)} |"
            )
    ties_report(out)


def ties_report(out: Path, p: float = 0.10) -> None:
    """How much of each count oracle's top p is decided by replica counts, and how much by the seeded tie-break."""
    from tabmem.mitigation.ranking import Ranking

    print(f"\n### count oracles: replica counts at the top {p:.0%} cut\n")
    print(
        "| dataset | model | seed | records with >= 1 replica | count at the cut | top records chosen by the tie-break |"
    )
    print("|---|---|---|---|---|---|")
    for path in sorted(out.glob("*/*/none/seed*/count_ranking.csv")):
        tag, model, seed = path.parts[-5], path.parts[-4], path.parts[-2]
        rk = Ranking.load(path)
        score = np.empty(rk.n_train)
        score[rk.table["train_row"].to_numpy()] = rk.table["score"].to_numpy(dtype=float)
        top = rk.top(p)
        cut = float(score[top].min())
        # records of the top p at the cut's count are drawn by the tie-break when more share that count
        tied = int((score[top] == cut).sum()) if (score == cut).sum() > (score[top] == cut).sum() else 0
        print(f"| {tag} | {model} | {seed} | {int((score > 0).sum())} | {cut:g} | {tied} of {len(top)} |")


def reevaluate(out: Path, k: int, data_dir: str) -> None:
    """Score ``k`` more independent |train|-row samples of every finished run (smaller sampling noise).

    Writes ``eval_k.json`` next to ``eval.json``: per distance the k rates and their mean, the holdout
    rate and the excess of the mean. Full-table tags are skipped (sampling 32k rows k times is costly).
    """
    from tabmem._io import write_json
    from tabmem.generators import load_generator
    from tabmem.memorization.replicas import ReplicaDetector

    cache: dict[str, Any] = {}
    for ev in sorted(out.glob("*/*/*/seed*/eval.json")):
        run = ev.parent
        tag = run.parts[-4]
        if (run / "eval_k.json").is_file() or tag.endswith("full"):
            continue
        dataset, n_train = tag.rstrip("0123456789"), int(tag[len(tag.rstrip("0123456789")) :])
        if tag not in cache:
            train, hold, _, schema = data(dataset, n_train, data_dir)
            dets = {d: ReplicaDetector(d, n_jobs=1).fit(train, schema) for d in ("fang2024", "gower")}
            hold_rates = {
                d: det.score(hold, name="holdout", unseen="mismatch").memorization_rate for d, det in dets.items()
            }
            cache[tag] = (dets, hold_rates)
        dets, hold_rates = cache[tag]
        model_dir = run / "dc" / "retrain" if (run / "dc").is_dir() else run / "train"
        gen = load_generator(model_dir / "model.pt", device="cpu")
        seed = int(json.loads(ev.read_text())["seed"])
        rates: dict[str, list[float]] = {d: [] for d in dets}
        for j in range(k):
            syn = gen.sample(n_train, random_state=int(np.random.SeedSequence([seed, 3000 + j]).generate_state(1)[0]))
            for d, det in dets.items():
                rates[d].append(det.score(syn, unseen="mismatch").memorization_rate)
        result = {
            d: {
                "rates": rates[d],
                "memorization_rate": float(np.mean(rates[d])),
                "holdout_memorization_rate": hold_rates[d],
                "excess_memorization": float(np.mean(rates[d])) - hold_rates[d],
            }
            for d in dets
        }
        write_json(run / "eval_k.json", {"k": k, "seed": seed, **result})
        print(f"reevaluated {run}: fang2024 {result['fang2024']['memorization_rate']:.3f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--tag", default=None, help="sub-directory name (default: dataset and n-train)")
    ap.add_argument("--n-train", type=int, default=1000, help="rows drawn from the train split; 0 = the whole split")
    ap.add_argument("--model", default="tabddpm")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--params", default="{}", help="JSON generator parameters")
    ap.add_argument("--epochs", type=int, default=1500)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--track-every", type=int, default=50)
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=["none", "random10", "dc10", "count10", "tcm30", "dcm", "smote30"])
    ap.add_argument("--mle-grid", default="tabsyn")
    ap.add_argument("--stop-excess", type=float, default=0.05, help="mstop: largest excess upper bound (fraction)")
    ap.add_argument("--quality-floor", type=float, default=None, help="mstop: smallest tracked Shape")
    ap.add_argument("--choose", default="last", help="mstop: last or best-quality")
    ap.add_argument("--samples", type=int, default=5, help="mstop, dp*: samples per judged model (eval_k.json)")
    ap.add_argument("--dp-epochs", type=int, default=None, help="dp*: epochs of the DP arms (default --epochs)")
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    ap.add_argument("--out", default="runs/mitigation")
    ap.add_argument("--report", action="store_true")
    ap.add_argument(
        "--use-k", action="store_true", help="--report: rates averaged over eval.json's sample and the eval_k.json ones"
    )
    ap.add_argument("--reeval", type=int, default=0, help="score K more samples of every finished run")
    ap.add_argument("--frontier", action="store_true", help="judge every tracked epoch of the mstop runs")
    ap.add_argument("--rejection-report", action="store_true", help="the rejection arms' tables (with attacks)")
    ap.add_argument("--plot", default=None, help="write the frontier plot (SVG) of the mstop runs to this file")
    args = ap.parse_args()
    if args.reeval:
        import torch

        torch.set_num_threads(1)
        reevaluate(Path(args.out), args.reeval, args.data_dir)
        return
    if args.plot:
        frontier_plot(Path(args.out), Path(args.plot))
        return
    if args.report:
        report(Path(args.out), use_k=args.use_k)
        return
    if args.rejection_report:
        rejection_report(Path(args.out))
        return
    if args.frontier:
        import torch

        torch.set_num_threads(1)
        frontier(Path(args.out), args.data_dir, args.mle_grid, args.seeds)
        return
    import torch

    torch.set_num_threads(1)
    args.tag = args.tag or f"{args.dataset}{args.n_train if args.n_train > 0 else 'full'}"
    train, hold, test, schema = data(args.dataset, args.n_train, args.data_dir)
    for seed in args.seeds:
        for arm in args.arms:
            run_arm(args, arm, seed, train, hold, test, schema)


if __name__ == "__main__":
    main()
