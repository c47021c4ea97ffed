"""Evidence for docs/attacks.md: every attack on CASP (or ``--dataset``) in scenarios with a known answer.

A script, not a study: its main scenarios are constructed synthetic tables (a one-digit leak of the
members, real held-out rows) that no generator produces, and the study engine's synthetic tables
come from a train/sample step. Generators attacked as a study: ``studies/levatt/*.toml``.

Members = 2,000 CASP training rows, non-members = 2,000 CASP test rows, DOMIAS reference =
2,000 other training rows (never members, never scored). Synthetic tables:

* ``one_digit_leak``: the members with one digit of one cell changed (LevAtt should be near 1);
* ``heldout``: 2,000 real training rows that are not members (every attack should be near 0.5);
* ``tvae`` / ``ctgan`` (``--generators``): trained on the members for ``--epochs`` epochs
  (one torch thread), 2,000 rows sampled.

Prints a table and writes JSON (``--out``) with AUC, its bootstrap CI, TPR@FPR 0 and 0.1 (paper
interpolation and the tie-aware strict variant) per attack and scenario, and the Spearman
correlation of per-record scores across attacks.

    python studies/attacks/attacks_evidence.py --out runs/attacks_evidence.json [--generators tvae,ctgan --epochs 30]
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd

from tabmem.attacks.compare import score_correlations
from tabmem.attacks.leaks import one_digit_leak
from tabmem.attacks.runner import run_attacks
from tabmem.data.datasets import load_dataset


def default_data_dir() -> str | None:
    """``$TABMEM_DATA_DIR``, else ``../shared/datasets`` next to the checkout, else None (the dataset cache)."""
    import os
    from pathlib import Path

    sibling = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return os.environ.get("TABMEM_DATA_DIR") or (str(sibling) if sibling.is_dir() else None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="casp")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--generators", default="")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="datasets directory (default: $TABMEM_DATA_DIR, else ../shared/datasets)",
    )
    ap.add_argument("--skip-constructed", action="store_true", help="only the generator scenarios")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ds = load_dataset(args.dataset, data_dir=args.data_dir)
    n = args.n
    train = ds.train.sample(frac=1.0, random_state=1).reset_index(drop=True)
    members, heldout, reference = train.iloc[:n], train.iloc[n : 2 * n], train.iloc[2 * n : 3 * n]
    non_members = ds.test.sample(n=n, random_state=2).reset_index(drop=True)
    members, heldout, reference = (t.reset_index(drop=True) for t in (members, heldout, reference))
    scenarios: dict[str, pd.DataFrame] = {}
    if not args.skip_constructed:
        scenarios["one_digit_leak"] = one_digit_leak(members, ds.schema, random_state=3)
        scenarios["heldout"] = heldout
    for name in [g for g in args.generators.split(",") if g]:
        import torch

        from tabmem.generators import get_generator

        torch.set_num_threads(1)
        t = time.perf_counter()
        gen = get_generator(name, epochs=args.epochs, random_state=0).fit(members, ds.schema)
        scenarios[name] = gen.sample(n, random_state=1)
        print(f"{name}: trained {args.epochs} epochs + sampled in {time.perf_counter() - t:.0f} s", flush=True)
    out: dict[str, dict] = {}
    print(
        f"{'scenario':16s} {'attack':18s} {'AUC':>6s} {'95% CI':>15s} {'TPR@0':>6s} {'TPR@.1':>7s} {'strict@.1':>9s} {'s':>6s}"
    )
    for scen, synthetic in scenarios.items():
        t = time.perf_counter()
        rep = run_attacks(
            members,
            non_members,
            synthetic,
            ds.schema,
            reference=reference,
            attacks=["levatt", "dcr", "mc", "density", "domias"],
            n_bootstrap=200,
        )
        # the paper's exact format as a second LevAtt column
        rep_p = run_attacks(
            members,
            non_members,
            synthetic,
            ds.schema,
            attacks=["levatt"],
            attack_params={"levatt": {"serializer": "paper_sft"}},
        )
        results = dict(rep.results)
        results["levatt_paper_sft"] = rep_p.results["levatt"]
        secs = time.perf_counter() - t
        out[scen] = {k: v.to_dict() for k, v in results.items()}
        scores = rep.scores.drop(columns=["target_row", "is_member"])
        out[scen]["spearman_scores"] = score_correlations(scores).round(3).to_dict()
        for k, r in results.items():
            print(
                f"{scen:16s} {k:18s} {r.auc:6.3f} [{r.auc_ci[0]:.3f}, {r.auc_ci[1]:.3f}] {r.tpr_at_fpr[0.0]:6.3f} "
                f"{r.tpr_at_fpr[0.1]:7.3f} {r.tpr_at_fpr_strict[0.1]:9.3f} {secs:6.0f}",
                flush=True,
            )
        print(f"{scen}: Spearman of per-record scores\n{score_correlations(scores).round(2)}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=2, default=float)


if __name__ == "__main__":
    main()
