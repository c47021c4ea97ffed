"""How much memorization a mitigation removed, always next to the holdout baseline, and at what cost in quality.

A model trained on a pruned (and possibly augmented) table is judged by its output ``synthetic``:

* against the **original** training table (everyone who contributed data: a replica of a pruned
  record still leaks that record): ``memorization_rate``, ``mem_auc``;
* against the **pruned** table (what the model was trained on): ``memorization_rate_vs_pruned``;
* real rows never trained on (``holdout``) scored the same way give the baseline that fresh real
  data reaches (the papers' distance flags ~20-30% of unseen rows):
  ``holdout_memorization_rate`` and ``excess_memorization = memorization_rate - holdout rate``,
  with a bootstrap 95% interval (synthetic and holdout flags resampled independently);
* quality: Shape and Trend against the original table, and MLE (train on synthetic, test on real)
  when a target and a ``test`` table exist (:func:`tabmem.metrics.report.quality_report`).

Only aggregates are returned: no record values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tabmem.data.schema import Schema, ValidatedTable, raw_frame, validate
from tabmem.memorization.replicas import ReplicaDetector, discrimination_warning
from tabmem.metrics.report import quality_report
from tabmem.mitigation.summary import MitigationReport, QualityScores
from tabmem.neighbors.distances import DEFAULT_DISTANCE

__all__ = ["bootstrap_excess_ci", "mitigation_report"]


def bootstrap_excess_ci(
    synthetic_flags: np.ndarray, holdout_flags: np.ndarray, *, n_boot: int = 2000, random_state: int = 0
) -> tuple[float, float]:
    """Percentile 95% interval of ``mean(synthetic_flags) - mean(holdout_flags)`` (independent resampling)."""
    a = np.asarray(synthetic_flags, dtype=np.float64)
    b = np.asarray(holdout_flags, dtype=np.float64)
    if not len(a) or not len(b):
        return float("nan"), float("nan")
    rng = np.random.default_rng(random_state)
    # a resampled mean of 0/1 flags is a binomial draw / n: exact and O(n_boot) instead of O(n_boot * n)
    ma = rng.binomial(len(a), a.mean(), n_boot) / len(a) if _binary(a) else rng.choice(a, (n_boot, len(a))).mean(1)
    mb = rng.binomial(len(b), b.mean(), n_boot) / len(b) if _binary(b) else rng.choice(b, (n_boot, len(b))).mean(1)
    lo, hi = np.percentile(ma - mb, [2.5, 97.5])
    return float(lo), float(hi)


def _binary(x: np.ndarray) -> bool:
    return bool(np.isin(x, (0.0, 1.0)).all())


def mitigation_report(
    synthetic: pd.DataFrame,
    original: pd.DataFrame | ValidatedTable,
    schema: Schema,
    *,
    pruned_rows: np.ndarray | None = None,
    holdout: pd.DataFrame | None = None,
    test: pd.DataFrame | None = None,
    distance: str = DEFAULT_DISTANCE,
    quality: bool = True,
    mle_grid: str = "tabsyn",
    random_state: int = 0,
    n_jobs: int | None = None,
) -> MitigationReport:
    """Memorization of ``synthetic`` vs the original and the pruned table, holdout baseline and quality (module docstring)."""
    orig = validate(original, schema, name="training", nan="match")
    det = ReplicaDetector(distance, nan="match", n_jobs=n_jobs).fit(orig, schema)
    res = det.score(synthetic, unseen="mismatch")
    flags = res.table["is_replica"].to_numpy()
    hold = det.score(holdout, name="holdout", unseen="mismatch") if holdout is not None else None
    pruned = np.zeros(len(orig), dtype=bool)
    if pruned_rows is not None and len(pruned_rows):
        pruned[np.asarray(pruned_rows, dtype=np.int64)] = True
    rate_vs_pruned, hold_rate_vs_pruned = res.memorization_rate, None if hold is None else hold.memorization_rate
    if pruned.any():  # the same synthetic (and holdout) rows against the records the model was trained on
        kept = orig.data.loc[~pruned].reset_index(drop=True)
        det_kept = ReplicaDetector(distance, nan="match", n_jobs=n_jobs).fit(kept, schema)
        rate_vs_pruned = det_kept.score(synthetic, unseen="mismatch").memorization_rate
        if holdout is not None:
            hold_rate_vs_pruned = det_kept.score(holdout, name="holdout", unseen="mismatch").memorization_rate
    return MitigationReport(
        distance=distance,
        n_train=len(orig),
        n_synthetic=res.n_synthetic,
        memorization_rate=res.memorization_rate,
        mem_auc=res.mem_auc,
        n_replicas=int(flags.sum()),
        holdout_memorization_rate=None if hold is None else hold.memorization_rate,
        excess_memorization=None if hold is None else res.memorization_rate - hold.memorization_rate,
        excess_memorization_ci=None
        if hold is None
        else list(bootstrap_excess_ci(flags, hold.table["is_replica"].to_numpy(), random_state=random_state)),
        n_holdout=None if hold is None else hold.n_synthetic,
        holdout_mem_auc=None if hold is None else hold.mem_auc,
        n_pruned=int(pruned.sum()),
        # replicas (vs the original table) of records the model never saw
        replicas_of_pruned_records=int(res.record_counts[pruned].sum()),
        memorization_rate_vs_pruned=rate_vs_pruned,
        holdout_memorization_rate_vs_pruned=hold_rate_vs_pruned,
        excess_memorization_vs_pruned=None if hold_rate_vs_pruned is None else rate_vs_pruned - hold_rate_vs_pruned,
        quality=quality_scores(orig, synthetic, schema, test=test, mle_grid=mle_grid, random_state=random_state)
        if quality
        else None,
        warnings=[w for w in (discrimination_warning(res, hold),) if w] or None,
    )


def quality_scores(
    real: pd.DataFrame | ValidatedTable,
    synthetic: pd.DataFrame,
    schema: Schema,
    *,
    test: pd.DataFrame | None = None,
    mle_grid: str = "tabsyn",
    random_state: int = 0,
) -> QualityScores:
    """Shape, Trend (and MLE when a target and ``test`` exist) of ``synthetic`` against ``real``."""
    metrics = ["shape", "trend"]
    if schema.target is not None and test is not None:
        metrics.append("mle")
    real_frame = raw_frame(real)
    rep = quality_report(
        real_frame, synthetic, schema, test=test, metrics=metrics, mle_grid=mle_grid, random_state=random_state
    )
    s = rep.summary()
    out: dict[str, Any] = {k: s.value(k) for k in ("shape", "trend", "mle")}
    if "mle" in rep.results:
        out["mle_real"] = rep.results["mle"].details.get("real", {}).get(rep.results["mle"].details.get("score"))
    out["skipped"] = {k: v for k, v in s.skipped.items() if k in ("shape", "trend", "mle")}
    if "mle" not in metrics:
        out["skipped"]["mle"] = "no target" if schema.target is None else "no test table"
    return QualityScores.from_dict(out)
