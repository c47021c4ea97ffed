"""``attack``: membership inference on the cell's synthetic table (:func:`run_attacks`).

Members are the original training rows (capped at ``n_members`` by a seeded subsample); non-members
are the test split (capped at ``n_non_members``). With ``reference = "test"`` the test split is
cut in two seeded halves: non-members and DOMIAS's reference of real non-member rows (without a
reference DOMIAS is skipped, as ``tabmem attack`` does). Writes the ``tabmem attack`` layout
(summary.json, scores.csv, risk.csv, roc.csv) and, per attack, AUC and TPR at low FPR with bootstrap
intervals, MIDST's TPR at FPR 0.1 / 0.01 and the signed ε lower bound.

Shadow-model attacks (``lira``, ``groundhog``...) need ``shadows >= 4``: that many copies of the
cell's generator (its model, preset and parameters, as ``train`` resolved them) are trained on
halves of the targets (:mod:`tabmem.runs.shadows`, under the step's ``shadows/``; an
interrupted step resumes them), topped up from the population: the test rows that are neither
non-members nor the reference. The step is a thin adapter over :func:`tabmem.runs.attack.attack_to_dir`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from tabmem.errors import ParameterError
from tabmem.studies._fields import Field, choice, integer, string, string_list, table
from tabmem.studies.estimate import attack_seconds
from tabmem.studies.inputs import subsample_rows
from tabmem.studies.steps.base import CellInfo, Step, StepContext, register_step, require_test
from tabmem.studies.store import MetricRow, metric

if TYPE_CHECKING:
    from tabmem.attacks.summary import AttackSummary


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
        "shadows": Field(0, integer(0), "shadow generators for the shadow-model attacks (lira, groundhog; 0: none)"),
        "shadow_design": Field("online", choice(["online", "offline"]), "online: targets in half the shadows"),
    }
    needs = ("synthetic",)
    resumable = True  # shadows already trained are kept; the attacks themselves are recomputed

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
        from tabmem.attacks import ATTACKS

        shadow_attacks = [a for a in config["attacks"] if ATTACKS[a].needs_shadows]
        if shadow_attacks and config["shadows"] < 4:
            raise ParameterError(
                f"{where}shadows: {', '.join(shadow_attacks)} need shadow generators: set shadows >= 4, got {config['shadows']}"
            )
        if config["shadows"]:
            require_test(cell, "shadows", "test", where)  # the population comes from the test split
            _check_shadow_population(config, cell, where)
            from tabmem.studies.steps.train import TrainStep

            gen = TrainStep.configure({"device": None}, cell, where)
            config["generator"] = {k: gen[k] for k in ("model", "preset", "dataset_preset", "params", "resolved")}
        return config

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.attacks.runner import AttackReport
        from tabmem.runs.attack import attack_to_dir

        c = self.config
        members, non_members, population, reference = self._tables(ctx)
        from tabmem.attacks import ATTACKS

        # the no-box attacks take the step's serializer/distance and threads as their classes list them;
        # shadow-model attacks take [attack] params only
        options = {"serializer": c["serializer"], "distance": c["distance"], "n_jobs": ctx.threads}
        defaults = {a: ATTACKS[a].run_params(options) for a in c["attacks"] if not ATTACKS[a].needs_shadows}
        params = {name: {**defaults.get(name, {}), **dict(c["params"].get(name, {}))} for name in c["attacks"]}
        captured: list[AttackReport] = []
        summary = attack_to_dir(
            members,
            non_members,
            ctx.read_table("synthetic"),
            ctx.data.schema,
            ctx.out,
            attacks=c["attacks"],
            attack_params=params,
            reference=reference,
            population=population if c["shadows"] else None,
            shadows=self._shadow_config(ctx),
            nan=c["nan"],
            n_bootstrap=c["n_bootstrap"],
            seed=ctx.seed_for("attack"),
            on_report=captured.append,
        )
        return self._rows(ctx, captured[0], summary)

    def _tables(self, ctx: StepContext) -> tuple[Any, Any, Any, Any]:
        """Members (capped), non-members (capped) and the population from the test split, and DOMIAS's reference
        (half of the test split, with ``reference = "test"``)."""
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
        keep = subsample_rows(len(test), c["n_non_members"], ctx.seed_for("non-members"))
        population = test.drop(index=test.index[keep]).reset_index(drop=True)
        return members, test.iloc[keep].reset_index(drop=True), population, reference

    def _shadow_config(self, ctx: StepContext) -> Any:
        """The cell's generator (as ``train`` resolved it) as the shadows' settings; ``None`` without shadows."""
        from tabmem.runs.attack import ShadowConfig

        c = self.config
        if not c["shadows"]:
            return None
        g = c["generator"]
        return ShadowConfig(
            model=g["model"],
            preset=g["preset"],
            params=g["params"],
            dataset=g["dataset_preset"],
            n_shadows=c["shadows"],
            design=c["shadow_design"],
            threads=ctx.threads,
            overlap="drop",
        )

    def _rows(self, ctx: StepContext, report: Any, summary: AttackSummary) -> list[MetricRow]:
        from tabmem.attacks.evaluation import DEFAULT_FPRS

        rows: list[MetricRow] = []
        for name, r in report.results.items():
            tci = r.tpr_at_fpr_ci  # same stratified resamples as the AUC interval
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
            audit = summary[name]
            for f in ("0.1", "0.01"):
                m = (audit.midst_tpr_at_fpr or {})[f]
                rows.append(
                    metric(
                        f"midst_tpr_at_fpr_{f}",
                        m["tpr"],
                        component=name,
                        ci=m["tpr_ci"],
                        goal="minimize",
                        baseline=float(f),
                    )
                )
            rows.append(
                metric(
                    "epsilon_lower_bound",
                    (audit.epsilon_lower_bound or {})["epsilon"],
                    component=name,
                    goal="minimize",
                    baseline=0.0,
                )
            )
        return rows

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        n = float(cell.dataset.n_rows or 10_000)
        members = min(n, float(config["n_members"] or n))
        non_members = float(config["n_non_members"] or n / 4)
        total = attack_seconds(list(config["attacks"]), members + non_members, n, cell, config["n_bootstrap"])
        if config["shadows"]:  # each shadow: the cell's training cost on a training table of the same size
            from tabmem.studies.estimate import train_seconds

            total += config["shadows"] * train_seconds({**config["generator"], "holdout": False}, cell)
        return total


def _check_shadow_population(config: Mapping[str, Any], cell: CellInfo, where: str) -> None:
    """Refuse, when the study is read, shadow settings whose population (or shadow training set) is too small.

    The shadows train on halves of the targets topped up from the population: the test rows left once
    the reference (``reference = "test"``: half of them) and the non-members are taken. With
    ``n_non_members`` unset every remaining test row is a non-member and the population is empty.
    The sizes are those known before loading (a file's rows; a registered dataset's catalogue sizes);
    rows dropped later for equalling a target can still make a run fail.
    """
    k, design = config["shadows"], config["shadow_design"]
    if config["n_non_members"] is None:
        n_test = cell.dataset.n_test
        hint = f" (e.g. n_non_members = {max(1, _split_test(n_test, config) // 2)})" if n_test else ""
        raise ParameterError(
            f"{where}shadows = {k}: the shadow population is the test rows that are not non-members, and with "
            f"n_non_members unset every test row is a non-member (population empty): set n_non_members{hint}"
        )
    n_rows, n_test = cell.dataset.n_rows, cell.dataset.n_test
    if n_rows is None or n_test is None:
        return
    available = _split_test(n_test, config)
    members = min(n_rows, config["n_members"] or n_rows)
    non_members = min(available, config["n_non_members"])
    population = available - non_members
    targets = members + non_members
    if design == "online":
        need = members - targets // 2  # each shadow trains on as many rows as there are members
        if (targets + 1) // 2 > members:
            raise ParameterError(
                f"{where}shadows: online shadows train on half of the {targets} targets ({(targets + 1) // 2} rows), "
                f"more than the {members} members each shadow trains on: lower n_non_members (at most {members}) "
                'or set shadow_design = "offline"'
            )
    else:
        need = members
    if need > population:
        raise ParameterError(
            f"{where}shadows: each {design} shadow needs {need} population rows but the population holds {population} "
            f"(the {available} test rows{' left by the reference' if config['reference'] == 'test' else ''} minus "
            f"n_non_members = {non_members}): lower n_non_members or n_members"
        )


def _split_test(n_test: int | None, config: Mapping[str, Any]) -> int:
    """Test rows left for non-members and population (``reference = "test"`` keeps half of them)."""
    n = int(n_test or 0)
    return n // 2 if config["reference"] == "test" else n


def _cap(frame, cap: int | None, seed: int):
    rows = subsample_rows(len(frame), cap, seed)
    return frame if len(rows) == len(frame) else frame.iloc[rows].reset_index(drop=True)
