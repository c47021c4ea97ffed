"""``quality``: fidelity and utility of the cell's synthetic table (:func:`quality_report`).

Real = the original training rows; ``test`` = the test split (enables MLE); the DCR share's holdout
is the test split capped at as many rows as the training table (seeded subsample). Writes the
``tabmem quality`` layout (summary.json, ``<metric>_breakdown.csv``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabmem.studies._fields import Field, choice, integer, string_list
from tabmem.studies.estimate import quality_seconds
from tabmem.studies.inputs import subsample_rows
from tabmem.studies.steps.base import CellInfo, Step, StepContext, register_step
from tabmem.studies.store import MetricRow, metric


def _metric_names() -> list[str]:
    from tabmem.metrics.report import SUMMARY_KEYS

    return list(SUMMARY_KEYS)


@register_step("quality")
class QualityStep(Step):
    """Shape, Trend, MLE, MMD, Wasserstein, alpha/beta, C2ST and DCR share."""

    options = {
        "metrics": Field(None, string_list(_metric_names), "metrics to compute (default: all)"),
        "pair_filter": Field("all", choice(["all", "sdmetrics"]), "Trend pairs"),
        "mle_grid": Field("tabsyn", choice(["tabsyn", "tiny"]), "XGBoost grid of MLE"),
        "mmd_max_samples": Field(5000, integer(1, none=True), "MMD subsample"),
        "test": Field("test", choice(["test", "none"]), "real rows for MLE and the DCR share"),
    }
    needs = ("synthetic",)

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        config = dict(options)
        config["metrics"] = list(options["metrics"] or _metric_names())
        if cell.dataset.path is not None and cell.dataset.test is None:
            config["test"] = "none"  # a file dataset without a test file: MLE and DCR share are skipped
        return config

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.metrics.report import quality_report

        c = self.config
        real = ctx.data.train
        test = ctx.data.test if c["test"] == "test" else None
        holdout = None
        if test is not None:
            rows = subsample_rows(len(test), len(real), ctx.seed_for("dcr-holdout"))
            holdout = test if len(rows) == len(test) else test.iloc[rows].reset_index(drop=True)
        report = quality_report(
            real,
            ctx.read_table("synthetic"),
            ctx.data.schema,
            test=test,
            holdout=holdout,
            metrics=c["metrics"],
            pair_filter=c["pair_filter"],
            mle_grid=c["mle_grid"],
            mmd_max_samples=c["mmd_max_samples"],
            random_state=ctx.seed_for("quality"),
            n_jobs=ctx.threads,
        )
        report.save(ctx.out)
        out: list[MetricRow] = []
        for name in c["metrics"]:
            r = report.results.get(name)
            if r is None:
                continue
            baseline, component = None, ""
            if name == "mle":
                component = str(r.details.get("score", ""))  # roc_auc, f1_macro or rmse
                if r.details.get("real"):
                    baseline = r.details["real"].get(r.details.get("score"))
            elif name == "dcr_share":
                baseline = r.details.get("ideal")
            out.append(metric(name, r.value, component=component, goal=r.goal, baseline=baseline))
        return out

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        return quality_seconds(list(config["metrics"]), cell, config["mle_grid"])
