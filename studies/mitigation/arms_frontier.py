"""The report's frontier by arm (``tabmem.report.plots.arms_frontier_figure``) from the evidence script's runs.

Each ``OUT/TAG/MODEL/ARM/seedN/eval.json`` becomes one report cell: its excess memorization (fang2024,
pooled over eval.json's sample and eval_k.json's, as ``--report --use-k``), Shape and MLE of the first
sample, and the DCR attack's AUC. The SVG is the figure ``tabmem report`` draws for a study's arms::

    python studies/mitigation/arms_frontier.py --out runs/i25dp --tag adult1000-mstop \\
        --arms none mstop dc10 dp10 dp1 --svg docs/images/dp-frontier.svg
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def cells(root: Path, arms: list[str]) -> list:
    from tabmem.report.model import Attacks, Audit, Cell, Quality

    out = []
    for arm in arms:
        for ev in sorted((root / arm).glob("seed*/eval.json")):
            r = json.loads(ev.read_text())
            f = dict(r["fang2024"])
            k = ev.parent / "eval_k.json"
            if k.is_file():
                rates = [f["memorization_rate"], *json.loads(k.read_text())["fang2024"]["rates"]]
                f["excess_memorization"] = float(np.mean(rates)) - f["holdout_memorization_rate"]
            attack = r.get("dcr") or r.get("attack") or {}
            audit = Audit({"excess_memorization": f["excess_memorization"]})
            out.append(
                Cell(
                    name=f"{arm}/{ev.parent.name}",
                    path=str(ev.parent),
                    axes={"mitigation": arm, "seed": r["seed"]},
                    audit=audit,
                    audits={"fang2024": audit},
                    quality=Quality(dict(f.get("quality") or {})),
                    attacks=Attacks({"dcr": {"auc": attack["auc"]}}) if "auc" in attack else None,
                )
            )
    return out


def main() -> None:
    from tabmem.report.plots import arms_frontier_figure

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="runs/i25dp")
    ap.add_argument("--tag", default="adult1000-mstop")
    ap.add_argument("--model", default="tabddpm")
    ap.add_argument("--arms", nargs="+", required=True)
    ap.add_argument("--svg", required=True)
    args = ap.parse_args()
    svg = arms_frontier_figure(cells(Path(args.out) / args.tag / args.model, args.arms))
    if svg is None:
        raise SystemExit("fewer than two arms with finished runs")
    Path(args.svg).write_text(svg + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
