"""The result store of a study: ``DIR/results.parquet`` (tidy) and ``DIR/manifest.json``.

``tabmem run STUDY.toml --out DIR`` writes both after every finished task, so they are current
while a long study runs; :func:`load_results` reads the table back. Only numbers that are a
deterministic function of the study config are stored here (timings and host names live in
``status.json`` and the manifest), so the same study gives the same ``results.parquet`` under
every executor.

``results.parquet``: one row per cell x step x component x metric
------------------------------------------------------------------

=============  ========  ==========================================================================
column         dtype     meaning
=============  ========  ==========================================================================
study          string    the study name (``[study] name``)
cell           string    cell id: 12 hex digits of the hash of its resolved config; the cell's
                         directory is ``DIR/cells/<cell>/``
name           string    readable cell name: ``dataset/generator[/mitigation][/sampling]/seed=N``
dataset        string    dataset axis label (the registered name unless ``label`` is given)
generator      string    generator axis label (``name`` or ``name-preset`` unless ``label``)
mitigation     string    mitigation axis label; ``"none"`` when the study has no such axis
sampling       string    sampling axis label; ``"default"`` when the study has no such axis
seed           int64     the cell's seed (training, sampling, bootstraps all derive from it)
model          string    generator registry name (``tabddpm``, ``ctgan``, ``tvae``, ``llm``, ...)
preset         string    generator preset (``<NA>`` = the class defaults)
epochs         int64     training epochs of the cell's generator
n_train        int64     training rows the generator was given (after ``n_train`` subsampling;
                         before any mitigation)
step           string    pipeline step that produced the row: ``train``, ``sample``, ``audit``,
                         ``attack``, ``quality``, ``risk`` (and the mitigation steps)
component      string    what inside the step: the distance (audit), the attack (attack), the
                         risk (risk: ``singling_out_univariate``, ``linkability``,
                         ``inference:<column>``, ...);
                         ``""`` for steps with one component (train, sample, quality)
metric         string    metric name (list below)
value          float64   the number (NaN: not computable, e.g. a Gini of zero replicas)
ci_low         float64   lower end of its 95% confidence interval (NaN: none)
ci_high        float64   upper end (NaN: none)
goal           string    ``"minimize"`` / ``"maximize"`` from the data owner's side (less
                         memorization, less attack success, more fidelity); ``""`` for counts
baseline       float64   the reference the value should be read against (NaN: none): the
                         holdout rate for a memorization rate, 0.5 for an attack AUC, the FPR for
                         a TPR at that FPR, the real-data score for MLE, the ideal DCR share
=============  ========  ==========================================================================

Metrics per step (confidence intervals are percentile bootstraps with ``n_bootstrap`` resamples
seeded from the cell seed):

* ``train``: ``final_loss``, ``epochs_trained``.
* ``sample``: ``n_rows``, ``invalid_rows`` (malformed LLM generations that were resampled).
* ``audit`` (component = distance): ``memorization_rate`` (CI; baseline = the holdout rate),
  ``holdout_memorization_rate`` (CI), ``excess_memorization`` (CI of the difference; baseline 0),
  ``mem_auc``, ``mem_auc_trapz10``, ``holdout_mem_auc``, ``n_replicas``, ``n_synthetic``,
  ``n_holdout``, ``n_records_with_replicas``, ``top_1pct_share``, ``top_10pct_share``, ``gini``;
  with a holdout, the distance evidence of ``summary.json`` (each synthetic figure's baseline is the
  holdout's, which has its own ``holdout_`` row): ``authenticity_closer_share`` (share of rows
  closer to their nearest training row than that row is to its own nearest neighbour),
  ``identical_match_share``, ``nndr_q0.01`` ... ``nndr_q0.5`` and ``nndr_mean`` (quantiles and
  mean of d1/d2; goal maximize), ``data_copying_z`` (the three-sample test's aggregate Z; Z << 0:
  copying; baseline 0), ``data_copying_p_value``, ``data_copying_cells_flagged`` and
  ``data_copying_cells_used`` (counts of k-means cells).
* ``attack`` (component = attack name): ``auc`` (CI; baseline 0.5), ``tpr_at_fpr_0``,
  ``tpr_at_fpr_0.001``, ``tpr_at_fpr_0.01``, ``tpr_at_fpr_0.1`` (CIs; baseline = the FPR),
  ``tpr_strict_at_fpr_*`` (tie-aware), ``balanced_accuracy``, ``n_members``, ``n_non_members``,
  ``min_resolved_fpr`` (1 / non-members: smaller FPRs are not resolved), ``midst_tpr_at_fpr_0.1``
  and ``midst_tpr_at_fpr_0.01`` (MIDST's TPR at the threshold with FPR <= f; exact Clopper-Pearson
  CIs), ``epsilon_lower_bound`` (the empirical ε lower bound at the step's δ; baseline 0).
* ``quality``: ``shape``, ``trend``, ``mle`` (baseline = the model trained on real rows),
  ``mmd``, ``wasserstein``, ``alpha_precision``, ``beta_recall``, ``c2st``, ``dcr_share``
  (baseline = the ideal share); a metric that could not run has no row (its reason is in the
  cell's ``quality/summary.json``).

* ``risk`` (component = ``singling_out_univariate``, ``singling_out_multivariate``,
  ``linkability``, ``inference:<column>``): ``risk`` (CI; baseline 0), ``attack_rate`` (CI;
  baseline = the control rate), ``control_rate``, ``baseline_rate`` (CIs): Wilson-score
  intervals, as the cell's ``risk/summary.json`` holds them.

Per-epoch and per-record data stay in the cell directory (``train/history.csv``,
``train/trajectories.csv``, ``audit/<distance>/records.csv``, ``attack/scores.csv``...).

``manifest.json``
-----------------
``{"format": "tabmem-study", "version": 1, "study": {name, path, hash, description},
"versions": {tabmem, python, torch, numpy, pandas, ...}, "executor": {...}, "updated": ISO time,
"cells": [{id, name, labels, seed, status, error, seconds, dir}], "published": [...]}``; the
study hash covers the resolved configs of every cell. ``published`` holds the study file's
``[[published]]`` reference numbers (:func:`load_published` returns them as a table with the
columns ``dataset, generator, step, component, metric, value, source``).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import read_frame, read_json, reading, write_frame, write_json
from tabmem.errors import TabmemError

__all__ = [
    "AXIS_COLUMNS",
    "RESULT_COLUMNS",
    "MetricRow",
    "load_published",
    "load_results",
    "metric",
    "results_frame",
    "versions",
    "write_manifest",
    "write_results",
]

#: cell columns, in order (the axes and what identifies the generator run)
AXIS_COLUMNS: tuple[str, ...] = (
    "dataset",
    "generator",
    "mitigation",
    "sampling",
    "seed",
    "model",
    "preset",
    "epochs",
    "n_train",
)
#: every column of ``results.parquet``, in order
RESULT_COLUMNS: tuple[str, ...] = (
    "study",
    "cell",
    "name",
    *AXIS_COLUMNS,
    "step",
    "component",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "goal",
    "baseline",
)
_STRING = ("study", "cell", "name", "dataset", "generator", "mitigation", "sampling", "model", "preset")
_STRING += ("step", "component", "metric", "goal")
_INT = ("seed", "epochs", "n_train")
_FLOAT = ("value", "ci_low", "ci_high", "baseline")

MetricRow = dict[str, Any]
"""One metric of one step: ``{"component", "metric", "value", "ci_low", "ci_high", "goal", "baseline"}``."""


def metric(
    name: str,
    value: Any,
    *,
    component: str = "",
    ci: Iterable[Any] | None = None,
    goal: str = "",
    baseline: Any = None,
) -> MetricRow:
    """A metric row as steps return it (missing numbers become NaN)."""
    lo, hi = (None, None) if ci is None else tuple(ci)
    return {
        "component": component,
        "metric": name,
        "value": _num(value),
        "ci_low": _num(lo),
        "ci_high": _num(hi),
        "goal": goal,
        "baseline": _num(baseline),
    }


def _num(v: Any) -> float:
    if v is None or isinstance(v, (bool, np.bool_)):
        return float("nan") if v is None else float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def results_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows (cell columns + metric columns) as the typed results table, columns in schema order."""
    frame = pd.DataFrame(list(rows), columns=list(RESULT_COLUMNS))
    for col in _STRING:
        frame[col] = frame[col].astype("string")
    for col in _INT:
        frame[col] = pd.array(frame[col], dtype="Int64")
    for col in _FLOAT:
        frame[col] = frame[col].astype("float64")
    return frame


def write_results(out: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``out/results.parquet`` (atomic), sorted by cell name, step order as given, metric order as given."""
    frame = results_frame(rows)
    return write_frame(Path(out) / "results.parquet", frame)


def load_results(out: str | Path) -> pd.DataFrame:
    """The tidy results table of the study in ``out`` (schema in this module's docstring)."""
    path = Path(out) / "results.parquet"
    if not path.is_file():
        raise TabmemError(f"{str(out)!r} holds no study results (results.parquet is missing; run `tabmem run` first)")
    frame = read_frame(path)
    missing = [c for c in RESULT_COLUMNS if c not in frame.columns]
    if missing:
        raise TabmemError(f"{str(path)!r} is not a tabmem results table (missing columns {missing})")
    return frame


def load_published(out: str | Path) -> pd.DataFrame:
    """The study's published reference numbers (``[[published]]`` entries) from ``out/manifest.json``."""
    path = Path(out) / "manifest.json"
    manifest = read_json(path)
    cols = ["dataset", "generator", "step", "component", "metric", "value", "source"]
    with reading(path):
        rows = [
            {c: p.get(c, "" if c != "value" else float("nan")) for c in cols} for p in manifest.get("published", [])
        ]
    return pd.DataFrame(rows, columns=cols)


def versions() -> dict[str, str]:
    """Versions of Python and of the libraries that decide the numbers."""
    out = {"python": platform.python_version()}
    for pkg in ("tabmem", "numpy", "pandas", "scipy", "scikit-learn", "torch", "transformers", "xgboost", "ray"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            if pkg == "xgboost":
                try:
                    out[pkg] = importlib.metadata.version("xgboost-cpu")
                except importlib.metadata.PackageNotFoundError:
                    pass
    return out


def write_manifest(out: str | Path, content: Mapping[str, Any]) -> Path:
    """Write ``out/manifest.json`` (atomic) with the format tag, versions and the time added."""
    doc = {
        "format": "tabmem-study",
        "version": 1,
        **content,
        "versions": versions(),
        "updated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return write_json(Path(out) / "manifest.json", doc)
