"""``risk``: the three WP29 anonymisation risks of the cell's synthetic table (anonymeter's definitions).

Train = the original training rows (before any mitigation, as the audit measures them); control =
the holdout the ``audit`` step uses: the test split, capped at ``n_control`` rows by the same
seeded subsample as the audit's ``n_holdout`` (same cap, same rows). Writes the ``tabmem risk``
layout (:func:`tabmem.runs.risk.risk_to_dir`: ``summary.json``, ``inference.csv``) and one group
of result rows per risk: component ``singling_out_univariate``, ``singling_out_multivariate``,
``linkability`` and ``inference:<column>`` per secret column; metrics ``risk`` (its interval;
baseline 0), ``attack_rate`` (its interval; baseline = the control rate), ``control_rate`` and
``baseline_rate`` (their intervals).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabmem.errors import ParameterError, TabmemError
from tabmem.risk import N_ATTACKS
from tabmem.studies._fields import Field, integer, number, string_list
from tabmem.studies.estimate import search_seconds
from tabmem.studies.steps.audit import _holdout
from tabmem.studies.steps.base import CellInfo, Step, StepContext, register_step
from tabmem.studies.store import MetricRow, metric

#: the summary's single-estimate risks (components of the result rows), in order
RISKS = ("singling_out_univariate", "singling_out_multivariate", "linkability")


def _aux(key: str, v: Any) -> list[list[str]]:
    """Two column sets, each a non-empty list of column names: ``[["a", "b"], ["c", "d"]]``."""
    sets = v if isinstance(v, list) else None
    if sets is None or len(sets) != 2 or not all(isinstance(s, list) and s for s in sets):
        raise ParameterError(
            f'{key} must be two lists of column names, the sets linkability links ([["a", "b"], ["c", "d"]]), got {v!r}'
        )
    checked = [string_list()(key, s) for s in sets]
    both = sorted(set(checked[0]) & set(checked[1]))
    if both:
        raise ParameterError(f"{key}: column {both[0]!r} is in both column sets")
    return checked


@register_step("risk")
class RiskStep(Step):
    """Singling out, linkability and inference risks with their intervals, against the holdout as control."""

    options = {
        "secrets": Field(None, string_list(), "columns an attacker infers (default: chosen by evaluate_risk)"),
        "aux": Field(None, _aux, "the two column sets linkability links (default: chosen by evaluate_risk)"),
        "n_attacks": Field(N_ATTACKS, integer(1), "attacks per risk"),
        "n_neighbors": Field(1, integer(1), "neighbours an attacker links or infers from"),
        "n_cols": Field(3, integer(1), "columns of a multivariate singling-out predicate"),
        "confidence": Field(0.95, number(0, 1, low_open=True), "confidence of the intervals"),
        "n_control": Field(None, integer(1, none=True), "cap on control rows (the audit's seeded subsample)"),
    }
    needs = ("synthetic",)

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        if cell.dataset.path is not None and cell.dataset.test is None:
            raise ParameterError(
                f"{where}the risk step needs control rows (real rows never trained on): dataset "
                f'{cell.dataset.label!r} has no test file (add test = "FILE" to its [[datasets]] entry)'
            )
        config = dict(options)
        if config["confidence"] >= 1:
            raise ParameterError(f"{where}confidence must be a number in (0, 1), got {config['confidence']!r}")
        return config

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.runs.risk import risk_to_dir

        c = self.config
        control = _holdout(ctx, "test", c["n_control"])
        if control is None:
            raise TabmemError("the risk step needs control rows: the dataset has no test split")
        summary = risk_to_dir(
            ctx.data.train,
            ctx.read_table("synthetic"),
            control,
            ctx.data.schema,
            ctx.out,
            secrets=c["secrets"],
            aux=c["aux"],
            n_attacks=c["n_attacks"],
            n_neighbors=c["n_neighbors"],
            n_cols=c["n_cols"],
            confidence=c["confidence"],
            seed=ctx.seed_for("risk"),
            n_jobs=ctx.threads,
        )
        return risk_rows(summary.to_dict())

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        """Linkability and inference search the synthetic rows for each attack's targets (training and control
        rows): one search per secret column and two for linkability; singling out is negligible next to them."""
        n = float(cell.dataset.n_rows or 10_000)
        n_secrets = len(config["secrets"]) if config["secrets"] else 1
        return 2 * (2 + n_secrets) * search_seconds(float(config["n_attacks"]), n, max(cell.dataset.n_columns, 1))


def risk_rows(doc: Mapping[str, Any]) -> list[MetricRow]:
    """The result rows of a risk ``summary.json`` object (what ``summary.json`` holds, nothing recomputed)."""
    rows: list[MetricRow] = []
    per_column = (doc.get("inference") or {}).get("per_column") or {}
    estimates = [(key, doc.get(key)) for key in RISKS] + [(f"inference:{col}", est) for col, est in per_column.items()]
    for component, est in estimates:
        if isinstance(est, Mapping):
            rows += [
                _row(est, component, "risk", goal="minimize", baseline=0.0),
                _row(est, component, "attack_rate", goal="minimize", baseline=est.get("control_rate")),
                _row(est, component, "control_rate"),
                _row(est, component, "baseline_rate"),
            ]
    return rows


def _row(est: Mapping[str, Any], component: str, name: str, **kw: Any) -> MetricRow:
    """One rate of an estimate with its interval (``<name>_ci``)."""
    ci = est.get(f"{name}_ci")
    return metric(name, est.get(name), component=component, ci=ci if ci else None, **kw)
