"""``audit``: replica detection of the cell's synthetic table, next to the holdout baseline.

For each distance of ``[audit] distances`` it fits a :class:`ReplicaDetector` on the training rows
(the original ones, before any mitigation: memorization is measured against everyone who
contributed data) and writes the ``tabmem audit`` layout into ``audit/<distance>/`` (summary.json,
replicas.csv, records.csv). The holdout is the test split (``holdout = "test"``, capped at
``n_holdout`` rows by a seeded subsample), or none. Rates get percentile-bootstrap intervals
(:mod:`tabmem.memorization.uncertainty`).

With a holdout, each ``summary.json`` also holds the distance evidence of ``tabmem audit``
(:func:`tabmem.memorization.evidence.distance_evidence`: the data-copying test, authenticity,
identical matches, NNDR, each next to the holdout's figure), computed on the tables validated
once for the replica search; its headline numbers become metric rows too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabmem.memorization.summary import EXCESS_MEMORIZATION, AuditSummary, DistanceEvidence
from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.studies._fields import Field, choice, integer, number, string_list
from tabmem.studies.estimate import audit_seconds
from tabmem.studies.inputs import subsample_rows
from tabmem.studies.steps.base import CellInfo, Step, StepContext, register_step, require_test
from tabmem.studies.store import MetricRow, metric


def _distances() -> list[str]:
    from tabmem.neighbors.distances import DISTANCES

    return DISTANCES.names()


@register_step("audit")
class AuditStep(Step):
    """Memorization rate, Mem-AUC and per-record counts per distance, with the holdout baseline and CIs."""

    options = {
        "distances": Field([DEFAULT_DISTANCE], string_list(_distances), "replica distances, one audit each"),
        "threshold": Field(1 / 3, number(0, 1, low_open=True), "replica when d1/d2 < threshold"),
        "holdout": Field("test", choice(["test", "none"]), "real rows not trained on: the baseline"),
        "n_holdout": Field(None, integer(1, none=True), "cap on holdout rows (seeded subsample)"),
        "nan": Field("error", choice(["error", "drop", "match"]), "missing numerical values"),
        "unseen": Field("mismatch", choice(["error", "drop", "mismatch"]), "categories absent from training"),
        "n_bootstrap": Field(1000, integer(0), "bootstrap resamples of the rate intervals (0: none)"),
        "memory_gb": Field(1.0, number(1 / 64, 1024), "working memory of the neighbour search (GiB)"),
        "copying_cells": Field(10, integer(1), "k-means cells of the data-copying test (with a holdout)"),
    }
    needs = ("synthetic",)

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        require_test(cell, "holdout", options["holdout"], where)
        return dict(options)

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.runs.audit import validate_audit_tables

        c = self.config
        # validated once (the categories are the training table's, whatever the distance), then shared
        # by every distance's replica search and distance evidence
        train, synthetic, holdout = validate_audit_tables(
            ctx.data.train,
            ctx.read_table("synthetic"),
            ctx.data.schema,
            holdout=_holdout(ctx, c["holdout"], c["n_holdout"]),
            nan=c["nan"],
            unseen=c["unseen"],
        )
        rows: list[MetricRow] = []
        for distance in c["distances"]:
            rows += self._audit(ctx, distance, train, synthetic, holdout)
        return rows

    def _audit(self, ctx: StepContext, distance: str, train: Any, synthetic: Any, holdout: Any) -> list[MetricRow]:
        """``tabmem audit`` with one distance into ``audit/<distance>/``; its metric rows."""
        from tabmem.memorization.replicas import ReplicaDetector
        from tabmem.runs.audit import audit_to_dir

        c = self.config
        detector = ReplicaDetector(
            distance, c["threshold"], nan=c["nan"], n_jobs=ctx.threads, memory_budget=int(c["memory_gb"] * 2**30)
        )
        # the intervals in results.parquet are those of summary.json (one computation)
        s = audit_to_dir(
            detector,
            train,
            synthetic,
            ctx.data.schema,
            ctx.out / distance,
            holdout=holdout,
            unseen=c["unseen"],
            evidence=holdout is not None,
            copying_cells=c["copying_cells"],
            seed=ctx.seed_for(f"copying-{distance}"),
            n_bootstrap=c["n_bootstrap"],
            bootstrap_seed=ctx.seed_for(f"audit-{distance}"),
        )
        return _rows(s, distance)

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        n = float(cell.dataset.n_rows or 10_000)
        n_hold = 0.0 if config["holdout"] == "none" else float(config["n_holdout"] or n)
        return audit_seconds(len(config["distances"]), n, n_hold, cell)


def _rows(s: AuditSummary, distance: str) -> list[MetricRow]:
    """The metric rows of one distance's summary: rates with their intervals, Mem-AUC, the heavy tail, the evidence."""

    def m(name: str, value: Any, **kw: Any) -> MetricRow:
        return metric(name, value, component=distance, **kw)

    hold_rate = s.holdout_memorization_rate
    rows = [m("memorization_rate", s.memorization_rate, ci=tuple(s.memorization_rate_ci), goal="minimize",
              baseline=hold_rate)]  # fmt: skip
    if s.has_holdout:
        rows.append(m("holdout_memorization_rate", hold_rate, ci=tuple(s.holdout_memorization_rate_ci or ())))
        rows.append(m(EXCESS_MEMORIZATION, s.excess_memorization, ci=tuple(s.excess_memorization_ci or ()),
                      goal="minimize", baseline=0.0))  # fmt: skip
    rows.append(m("mem_auc", s.mem_auc, goal="minimize", baseline=s.holdout_mem_auc))
    rows.append(m("mem_auc_trapz10", s.mem_auc_trapz10, goal="minimize"))
    if s.has_holdout:
        rows.append(m("holdout_mem_auc", s.holdout_mem_auc))
    tail = s.heavy_tail
    rows += [
        m("n_replicas", s.n_replicas),
        m("n_synthetic", s.n_synthetic),
        m("n_holdout", s.n_holdout),
        m("n_records_with_replicas", tail.n_records_with_replicas),
        m("top_1pct_share", tail.top_1pct_share),
        m("top_10pct_share", tail.top_10pct_share),
        m("gini", tail.gini),
    ]
    if s.evidence is not None:
        rows += _evidence_rows(s.evidence, m)
    return rows


def _evidence_rows(ev: DistanceEvidence, m: Any) -> list[MetricRow]:
    """The headline numbers of the distance evidence, each with its holdout figure as the baseline."""
    auth, ident, nndr = ev.authenticity, ev.identical_matches, ev.nndr
    rows = [
        m(
            "authenticity_closer_share",
            auth["synthetic_closer_share"],
            goal="minimize",
            baseline=auth.get("holdout_closer_share"),
        ),
        m("holdout_authenticity_closer_share", auth.get("holdout_closer_share")),
        m("identical_match_share", ident["synthetic_share"], goal="minimize", baseline=ident.get("holdout_share")),
        m("holdout_identical_match_share", ident.get("holdout_share")),
    ]
    hold_q = (nndr.get("holdout") or {}).get("quantiles", {})
    for part, prefix in (("synthetic", ""), ("holdout", "holdout_")):
        q = (nndr.get(part) or {}).get("quantiles", {})
        for key, value in q.items():
            kw = {"goal": "maximize", "baseline": hold_q.get(key)} if part == "synthetic" else {}
            rows.append(m(f"{prefix}nndr_q{key}", value, **kw))
        rows.append(m(f"{prefix}nndr_mean", (nndr.get(part) or {}).get("mean")))
    copying = ev.data_copying
    if copying:
        rows += [
            m("data_copying_z", copying["z"], goal="maximize", baseline=0.0),
            m("data_copying_p_value", copying["p_value"]),
            m("data_copying_cells_flagged", len(copying["cells_flagged"])),
            m("data_copying_cells_used", copying["n_cells_used"]),
        ]
    return rows


def _holdout(ctx: StepContext, which: str, cap: int | None):
    """The test split (or None), capped at ``cap`` rows by a seeded subsample."""
    if which == "none" or ctx.data.test is None:
        return None
    test = ctx.data.test
    rows = subsample_rows(len(test), cap, ctx.seed_for("holdout"))
    return test if len(rows) == len(test) else test.iloc[rows].reset_index(drop=True)
