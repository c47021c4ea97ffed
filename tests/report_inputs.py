"""Real outputs of the tabmem commands on a tiny table, for the report tests (about ten seconds, once).

``build(root)`` writes, with the CLI itself:

* ``root/runs/tabddpm``: ``tabmem train`` (tiny TabDDPM, tracked every epoch, holdout) with
  ``attack/`` and ``quality/`` sub-directories (the layout of a study cell);
* ``root/runs/copies``: a leaky table (most rows copied from the training rows) with ``audit/``,
  ``attack/`` and ``quality/`` sub-directories;
* ``root/study``: the two as cells of a ``tabmem run`` study (``docs/studies.md``: ``manifest.json``,
  ``cells/<id>/`` holding ``config.json``, ``status.json`` and relative links to step outputs,
  ``audit/<distance>/`` per distance: fang2024 and gower for TabDDPM) plus a failed cell.

The training table holds the marker value ``SECRET`` in a categorical column, so that a test can
check that no training value reaches the report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tabmem.cli import main

SECRET = "Zzsecretville"
TINY = ["--param", "layers=[16]", "--param", "dim_t=8", "--param", "num_timesteps=4", "--param", "batch_size=32"]


def tables(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = 160
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "income": rng.normal(1e4, 3e3, n).round(2),
            "hours": rng.normal(40, 8, n).round(1),
            "city": rng.choice([SECRET, "Paris", "Oslo", "Lima"], n),
            "label": rng.choice(["yes", "no"], n),
        }
    )
    return df.iloc[:100].reset_index(drop=True), df.iloc[100:].reset_index(drop=True)


def _run(argv: list[str]) -> None:
    try:
        main(argv)
    except SystemExit as exc:
        if exc.code:
            raise RuntimeError(f"tabmem {' '.join(argv)} exited with {exc.code}") from None


def build(root: Path) -> Path:
    """Write the example outputs under ``root`` (see the module docstring); returns ``root / "runs"``."""
    import torch

    runs = root / "runs"
    train, hold = tables()
    train_csv, hold_csv = root / "train.csv", root / "holdout.csv"
    train.to_csv(train_csv, index=False)
    hold.to_csv(hold_csv, index=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ddpm = runs / "tabddpm"
        _run(
            ["train", "--train", str(train_csv), "--holdout", str(hold_csv), "--categorical", "city,label"]
            + ["--epochs", "4", "--track-every", "1", "--seed", "1", "--threads", "1", "--quiet", "--out", str(ddpm)]
            + ["--distance", "fang2024"]  # the layout below: audit/fang2024 is this run's distance
            + TINY
        )
    finally:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(3)
    copies = train.sample(100, replace=True, random_state=3).reset_index(drop=True)
    jitter = rng.random(100) < 0.3
    copies.loc[jitter, "income"] = (copies.loc[jitter, "income"] + rng.normal(0, 900, jitter.sum())).round(2)
    copies_dir = runs / "copies"
    copies_dir.mkdir(parents=True)
    copies_csv = root / "copies.csv"
    copies.to_csv(copies_csv, index=False)
    for name, syn in (("tabddpm", ddpm / "synthetic.csv"), ("copies", copies_csv)):
        cell = runs / name
        if name == "copies":
            _run(
                ["audit", "--train", str(train_csv), "--synthetic", str(syn), "--holdout", str(hold_csv)]
                + ["--categorical", "city,label", "--unseen", "mismatch", "--n-jobs", "1", "--distance", "fang2024"]
                + ["--out", str(cell / "audit")]
            )
        _run(
            ["attack", "--members", str(train_csv), "--non-members", str(hold_csv), "--synthetic", str(syn)]
            + ["--attacks", "levatt,dcr,mc", "--categorical", "city,label", "--n-bootstrap", "50", "--n-jobs", "1"]
            + ["--out", str(cell / "attack")]
        )
        _run(
            ["quality", "--real", str(train_csv), "--synthetic", str(syn), "--test", str(hold_csv), "--holdout"]
            + [
                str(hold_csv),
                "--categorical",
                "city,label",
                "--target",
                "label",
                "--metrics",
                "shape,trend,mle,dcr_share",
            ]
            + ["--mle-grid", "tiny", "--out", str(cell / "quality")]
        )
    extra = root / "ddpm-audits"
    for distance in ("fang2024", "gower"):
        _run(
            ["audit", "--train", str(train_csv), "--synthetic", str(ddpm / "synthetic.csv"), "--holdout", str(hold_csv)]
            + ["--categorical", "city,label", "--unseen", "mismatch", "--distance", distance, "--n-jobs", "1"]
            + ["--out", str(extra / distance)]
        )
    _study(root, runs, extra)
    return runs


STUDY_CELLS = {
    "a1b2c3d4e5f6": ("tiny/tabddpm-small/seed=1", "tabddpm-small", "done"),
    "0f1e2d3c4b5a": ("tiny/copies/seed=0", "copies", "done"),
    "99aa88bb77cc": ("tiny/ctgan/seed=0", "ctgan", "failed"),
}


def _study(root: Path, runs: Path, ddpm_audits: Path) -> Path:
    """A study directory in the documented layout, its step outputs linked from the runs above."""
    import json
    import os

    study = root / "study"
    links = {
        "a1b2c3d4e5f6": {
            "train": runs / "tabddpm",
            "audit": ddpm_audits,
            "attack": runs / "tabddpm" / "attack",
            "quality": runs / "tabddpm" / "quality",
        },
        "0f1e2d3c4b5a": {
            "audit/fang2024": runs / "copies" / "audit",
            "attack": runs / "copies" / "attack",
            "quality": runs / "copies" / "quality",
        },
        "99aa88bb77cc": {},
    }
    cells = []
    for cid, (name, generator, status) in STUDY_CELLS.items():
        cdir = study / "cells" / cid
        cdir.mkdir(parents=True)
        labels = {"dataset": "tiny", "generator": generator, "mitigation": "none", "sampling": "default"}
        seed = int(name.rsplit("=", 1)[1])
        error = "TabmemError: ctgan: training diverged (loss is NaN at epoch 3)" if status == "failed" else None
        (cdir / "config.json").write_text(json.dumps({"id": cid, "name": name, "labels": labels, "seed": seed}))
        (cdir / "status.json").write_text(json.dumps({"status": status, "error": error}))
        for rel, target in links[cid].items():
            link = cdir / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(target, link.parent), target_is_directory=True)
        cells.append(
            {"id": cid, "name": name, "labels": labels, "seed": seed, "status": status, "error": error}
            | {"seconds": 1.0, "dir": f"cells/{cid}"}
        )
    manifest = {
        "format": "tabmem-study",
        "version": 1,
        "study": {"name": "tiny", "path": "tiny.toml", "hash": "0123456789ab", "description": "report test"},
        "versions": {"tabmem": "0.1.0", "python": "3.11.7", "numpy": "2.4.6", "pandas": "3.1.1"},
        "executor": "local",
        "updated": "2026-11-30T00:00:00+00:00",
        "cells": cells,
        "published": [],
    }
    (study / "manifest.json").write_text(json.dumps(manifest, indent=2))
    # the results table (docs/studies.md): its intervals are the ones the report shows for a study
    rows = [
        ("0f1e2d3c4b5a", "audit", "fang2024", "excess_memorization", 0.51, 0.3333, 0.6666),
        ("0f1e2d3c4b5a", "attack", "dcr", "tpr_at_fpr_0.1", 0.62, 0.4444, 0.7777),
        ("0f1e2d3c4b5a", "train", "", "final_loss", 1.0, np.nan, np.nan),
    ]
    cols = ["cell", "step", "component", "metric", "value", "ci_low", "ci_high"]
    pd.DataFrame(rows, columns=cols).to_parquet(study / "results.parquet")
    return study


_BUILT: dict[int, Path] = {}


def cached_build(tmp_path_factory) -> Path:
    """:func:`build` once per test session (both report test modules share the outputs)."""
    import os

    if os.getpid() not in _BUILT:
        _BUILT[os.getpid()] = build(tmp_path_factory.mktemp("report-inputs"))
    return _BUILT[os.getpid()]


_HTML: dict[Path, str] = {}


def cached_report(runs: Path) -> str:
    """The report of the study next to ``runs`` (three cells, one failed), rendered once per session."""
    from tabmem.report import load_report_data, render_report

    if runs not in _HTML:
        _HTML[runs] = render_report(load_report_data(runs.parent / "study"))
    return _HTML[runs]
