"""The demo study behind ``tabmem demo``: the whole job, on the diabetes table bundled with scikit-learn.

:func:`demo_study_text` writes a study file (``docs/studies.md``) with three cells on diabetes
(353 training rows, 89 held-out rows): a positive control that leaks by construction
(``noisy_resample``: training rows, 30% copied exactly, the rest jittered; not a generative
model), TabDDPM (``small`` preset) trained with per-record memorization tracking, and the same
TabDDPM after DynamicCut (the ``dynamiccut`` mitigation step: the 10% of records most memorized in a
tracked warm-up removed, then retrained from scratch). TabCutMix, the other mitigation the papers
compare, needs a categorical target and diabetes has a numerical one. Every cell runs the
replica audit with the holdout baseline, the default no-box attacks (DOMIAS is left out:
it needs a third set of real rows, which diabetes's 89 held-out rows cannot spare) and the
quality metrics. :func:`run_demo` runs it with :func:`run_study` into a directory, writes the
HTML report there, and returns the numbers the command prints. Being a study, it resumes: a
second run reuses every finished cell, and ``tabmem run DIR/demo.toml --out DIR`` runs the same
thing.

Nothing here prints or stores a training record's values beyond what the steps write.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from tabmem._io import write_text
from tabmem.memorization.summary import EXCESS_MEMORIZATION
from tabmem.report.model import Cell
from tabmem.studies.runner import StudyOutcome, run_study
from tabmem.studies.store import load_results

__all__ = ["DEMO_EPOCHS", "DEMO_TRACK_EVERY", "DemoOutcome", "demo_study_text", "headline", "run_demo"]

#: TabDDPM epochs and tracking interval of the demo (15-40 s of training on one core, by the machine's load)
DEMO_EPOCHS = 300
DEMO_TRACK_EVERY = 25

LABELS = {"noisy-resample": "noisy resample (leaks on purpose)", "tabddpm": "TabDDPM"}


def demo_study_text(
    *,
    epochs: int = DEMO_EPOCHS,
    track_every: int = DEMO_TRACK_EVERY,
    generator: bool = True,
    quality: bool = True,
    distance: str = "fang2024",
    seed: int = 0,
) -> str:
    """The demo's study file (TOML); ``generator=False`` keeps only the positive control."""
    steps = ["train", "audit", "attack"] + (["quality"] if quality else [])
    every = min(track_every, epochs)
    text = f"""# The study `tabmem demo` runs (written by it; run it again with
#   tabmem run {{this file}} --out {{its folder}}
# finished cells are reused). diabetes from scikit-learn: 353 training rows, 89 held-out rows.
# noisy-resample: training rows drawn with replacement, 30% kept as exact copies, the others
# jittered (Gaussian noise of 0.25 standard deviations on the numerical columns): a positive
# control that memorizes by construction, NOT a generative model.
# tabddpm: TabDDPM, small preset, with per-record memorization tracking every {every} epochs,
# without and with DynamicCut. Quality: every metric, MLE with the small XGBoost grid ("tiny").

[study]
name = "demo"
description = "tabmem demo: a leaky positive control, TabDDPM and TabDDPM after DynamicCut on diabetes; audit with holdout baseline, attacks, quality."
steps = {_toml_list(steps)}
seeds = [{int(seed)}]
threads = 1
estimate = "66 s (load average 5-7) to 88 s (load average 9) measured on a shared 2-core machine"

[[datasets]]
name = "diabetes"

[[generators]]
name = "noisy_resample"
label = "noisy-resample"
params = {{ copy_fraction = 0.3, noise = 0.25 }}
"""
    if generator:
        warmup = max(every, epochs // 4 // every * every)
        text += f"""
[[generators]]
name = "tabddpm"
preset = "small"
epochs = {int(epochs)}
label = "tabddpm"

# DynamicCut (Fang et al. 2025): rank the training records by their memorization during a tracked
# warm-up (the first quarter of the schedule), remove the top 10%, retrain TabDDPM from scratch.
[[mitigations]]
label = "none"

[[mitigations]]
label = "dynamiccut-10"
step = "dynamiccut"
warmup_epochs = {warmup}
track_every = {every}
prune = 0.10
distance = {_toml_str(distance)}

[[exclude]]   # the positive control has nothing to learn or unlearn
generator = "noisy-resample"
mitigation = "dynamiccut-10"
"""
    text += f"""
[train]
track_every = {every}
distance = {_toml_str(distance)}

[audit]
distances = [{_toml_str(distance)}]

[attack]
attacks = ["levatt", "dcr", "mc", "density"]   # DOMIAS needs a reference set diabetes cannot spare
"""
    if quality:
        text += """
[quality]
mle_grid = "tiny"
"""
    return text


def _toml_str(x: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's: quotes, backslashes, control characters)."""
    return json.dumps(str(x), ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(_toml_str(x) for x in items) + "]"


@dataclass
class DemoOutcome:
    """What :func:`run_demo` did: the study outcome, the report, the cells read back, the headline rows."""

    out: Path
    study: Path
    report: Path
    outcome: StudyOutcome
    cells: list[Cell] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def run_demo(
    out: str | Path,
    *,
    epochs: int = DEMO_EPOCHS,
    generator: bool = True,
    quality: bool = True,
    distance: str = "fang2024",
    seed: int = 0,
    jobs: int | None = None,
    echo: Callable[[str], None] = print,
) -> DemoOutcome:
    """Write the demo study into ``out``, run it (resumably), write ``out/report.html``; see the module docstring."""
    from tabmem.report import load_report_data, write_report

    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    study = write_text(
        out / "demo.toml",
        demo_study_text(epochs=epochs, generator=generator, quality=quality, distance=distance, seed=seed),
    )
    outcome = run_study(study, out, jobs=jobs, echo=echo)
    report = write_report(out, out / "report.html")
    cells = load_report_data(out).cells
    rows = headline(load_results(out))
    return DemoOutcome(out, study, report, outcome, cells, rows, time.perf_counter() - t0)


def headline(results: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per cell from ``results.parquet``: memorization, the strongest attack, fidelity and utility.

    Keys name their unit: ``*_pct`` are percentages, ``*_points`` percentage points, AUC, Shape,
    Trend and DCR share are fractions in [0, 1], ``mle_rmse`` is in the target's units.
    """
    rows = []
    for name, df in results.groupby("name", sort=False):

        def pick(step: str, metric: str, component: str | None = None, frame: pd.DataFrame = df) -> pd.Series | None:
            sel = frame[(frame.step == step) & (frame.metric == metric)]
            if component is not None:
                sel = sel[sel.component == component]
            return None if sel.empty else sel.iloc[0]

        first = df.iloc[0]
        row: dict[str, Any] = {
            "cell": str(name),
            "generator": str(first.generator),
            "mitigation": str(first.mitigation),
        }
        for key, metric in (("memorization", "memorization_rate"), ("holdout", "holdout_memorization_rate")):
            r = pick("audit", metric)
            row[f"{key}_pct"] = _scaled(r, "value", 100)
            row[f"{key}_ci_pct"] = _ci(r, 100)
        r = pick("audit", EXCESS_MEMORIZATION)
        row["excess_points"] = _scaled(r, "value", 100)
        row["excess_ci_points"] = _ci(r, 100)
        aucs = df[(df.step == "attack") & (df.metric == "auc")].sort_values("value", ascending=False, kind="stable")
        if not aucs.empty:
            best = aucs.iloc[0]
            row["attack"] = str(best.component)
            row["attack_auc"] = _scaled(best, "value", 1)
            row["attack_auc_ci"] = _ci(best, 1)
            tpr = pick("attack", "tpr_at_fpr_0.1", str(best.component))
            row["attack_tpr_at_fpr_0.1"] = _scaled(tpr, "value", 1)
        for metric in ("shape", "trend"):
            row[metric] = _scaled(pick("quality", metric), "value", 1)
        mle = df[(df.step == "quality") & (df.metric == "mle")]
        if not mle.empty:
            row[f"mle_{mle.iloc[0].component}"] = _scaled(mle.iloc[0], "value", 1)
            row[f"mle_{mle.iloc[0].component}_real"] = _scaled(mle.iloc[0], "baseline", 1)
        dcr = pick("quality", "dcr_share")
        row["dcr_share"] = _scaled(dcr, "value", 1)
        row["dcr_share_no_copy"] = _scaled(dcr, "baseline", 1)
        rows.append(row)
    return rows


def _scaled(r: pd.Series | None, col: str, k: float) -> float | None:
    if r is None:
        return None
    v = float(r[col])
    return None if math.isnan(v) else v * k


def _ci(r: pd.Series | None, k: float) -> list[float] | None:
    lo, hi = _scaled(r, "ci_low", k), _scaled(r, "ci_high", k)
    return None if lo is None or hi is None else [lo, hi]
