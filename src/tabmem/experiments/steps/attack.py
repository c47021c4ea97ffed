"""``attack``: no-box membership inference on the cell's synthetic table (:func:`run_attacks`).

Members are the original training rows (capped at ``n_members`` by a seeded subsample); non-members
are the test split (capped at ``n_non_members``). With ``reference = "test"`` the test split is
cut in two seeded halves: non-members and DOMIAS's reference of real non-member rows (without a
reference DOMIAS is skipped, as ``tabmem attack`` does). Writes the ``tabmem attack`` layout
(summary.json, scores.csv, risk.csv, roc.csv) and, per attack, AUC and TPR at low FPR with bootstrap
intervals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tabmem.errors import ParameterError
from tabmem.experiments._fields import Field, choice, integer, string, string_list, table
from tabmem.experiments.estimate import attack_seconds
from tabmem.experiments.inputs import subsample_rows
from tabmem.experiments.steps.base import CellInfo, Step, StepContext, register_step, require_test
from tabmem.experiments.store import MetricRow, metric


def _attacks() -> list[str]:
    from tabmem.attacks import ATTACKS

    return ATTACKS.names()


def _default_attacks() -> list[str]:
    from tabmem.attacks.runner import DEFAULT_ATTACKS

    return list(DEFAULT_ATTACKS)


def _fpr_key(f: float) -> str:
    return "0" if f == 0 else repr(float(f))


@register_step("attack")
class AttackStep(Step):
    """Membership-inference attacks: AUC and TPR at FPR 0, 0.001, 0.01, 0.1 with intervals."""

    options = {
        "attacks": Field(None, string_list(_attacks), "attacks to run (default: levatt, dcr, mc, density, domias)"),
        "serializer": Field("canonical", string(), "row format of LevAtt"),
        "distance": Field("l2", string(), "distance of DCR and MC"),
        "params": Field({}, table, "per-attack parameters: { levatt = { ... }, dcr = { ... } }"),
        "n_members": Field(None, integer(1, none=True), "cap on members (seeded subsample)"),
        "n_non_members": Field(None, integer(1, none=True), "cap on non-members (seeded subsample)"),
        "non_members": Field("test", choice(["test"]), "where non-members come from"),
        "reference": Field("none", choice(["none", "test"]), "DOMIAS reference: none, or half of the test split"),
        "nan": Field("error", choice(["error", "match"]), "missing values"),
        "n_bootstrap": Field(200, integer(0), "bootstrap resamples of the AUC and TPR intervals (0: none)"),
    }
    needs = ("synthetic",)

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        require_test(cell, "non_members", options["non_members"], where)
        config = dict(options)
        config["attacks"] = list(options["attacks"] or _default_attacks())
        unknown = sorted(set(config["params"]) - set(config["attacks"]))
        if unknown:
            raise ParameterError(
                f"{where}params.{unknown[0]}: not one of the attacks run ({', '.join(config['attacks'])})"
            )
        for name, p in config["params"].items():
            if not isinstance(p, Mapping):
                raise ParameterError(f"{where}params.{name} must be a table of parameters, got {p!r}")
        return config

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.attacks.evaluation import DEFAULT_FPRS, bootstrap_tpr_ci
        from tabmem.attacks.runner import run_attacks

        c = self.config
        train, test = ctx.data.train, ctx.data.test
        assert test is not None
        members = _cap(train, c["n_members"], ctx.seed_for("members"))
        reference = None
        if c["reference"] == "test":
            order = np.random.default_rng(ctx.seed_for("reference-split")).permutation(len(test))
            half = len(test) // 2
            reference = test.iloc[np.sort(order[half:])].reset_index(drop=True)
            test = test.iloc[np.sort(order[:half])].reset_index(drop=True)
        non_members = _cap(test, c["n_non_members"], ctx.seed_for("non-members"))
        defaults = {
            "levatt": {"serializer": c["serializer"], "n_jobs": ctx.threads},
            "dcr": {"distance": c["distance"], "n_jobs": ctx.threads},
            "mc": {"distance": c["distance"], "n_jobs": ctx.threads},
        }
        params = {name: {**defaults.get(name, {}), **dict(c["params"].get(name, {}))} for name in c["attacks"]}
        report = run_attacks(
            members,
            non_members,
            ctx.read_table("synthetic"),
            ctx.data.schema,
            reference=reference,
            attacks=c["attacks"],
            attack_params=params,
            nan=c["nan"],
            n_bootstrap=c["n_bootstrap"],
            random_state=ctx.seed_for("attack"),
        )
        report.save(ctx.out)
        is_member = report.scores["is_member"].to_numpy()
        rows: list[MetricRow] = []
        for name, r in report.results.items():
            tci = bootstrap_tpr_ci(
                report.scores[name].to_numpy(),
                is_member,
                fprs=DEFAULT_FPRS,
                n_bootstrap=c["n_bootstrap"],
                random_state=ctx.seed_for(f"tpr-{name}"),
            )
            rows.append(metric("auc", r.auc, component=name, ci=r.auc_ci, goal="minimize", baseline=0.5))
            for f in DEFAULT_FPRS:
                key = _fpr_key(f)
                rows.append(
                    metric(f"tpr_at_fpr_{key}", r.tpr_at_fpr[f], component=name, ci=tci[f], goal="minimize", baseline=f)
                )
            for f in DEFAULT_FPRS:
                key = _fpr_key(f)
                rows.append(
                    metric(
                        f"tpr_strict_at_fpr_{key}", r.tpr_at_fpr_strict[f], component=name, goal="minimize", baseline=f
                    )
                )
            rows += [
                metric("balanced_accuracy", r.balanced_accuracy, component=name, goal="minimize", baseline=0.5),
                metric("n_members", r.n_members, component=name),
                metric("n_non_members", r.n_non_members, component=name),
                metric("min_resolved_fpr", 1.0 / r.n_non_members, component=name),
            ]
        return rows

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        n = float(cell.dataset.n_rows or 10_000)
        members = min(n, float(config["n_members"] or n))
        non_members = float(config["n_non_members"] or n / 4)
        return attack_seconds(list(config["attacks"]), members + non_members, n, cell, config["n_bootstrap"])


def _cap(frame, cap: int | None, seed: int):
    rows = subsample_rows(len(frame), cap, seed)
    return frame if len(rows) == len(frame) else frame.iloc[rows].reset_index(drop=True)
