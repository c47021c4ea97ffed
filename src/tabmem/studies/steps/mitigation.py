"""Issue 10's mitigation steps, placed by a ``[[mitigations]]`` entry: ``augment``, ``dynamiccut``, ``memstop``, ``dpsgd``, ``reject``.

* ``augment`` (before ``train``): a registered augmenter (``tabcutmix``, ``smote``, ...) appends
  new rows to the training rows; the train step trains on ``augmented.csv`` (the ``tabmem
  augment --seed N`` layout and bytes).
* ``dynamiccut`` (instead of ``train``): :func:`~tabmem.runs.dynamiccut.dynamiccut_to_dir` with the
  cell's generator: warm-up (or the count oracle's full run), ranking, pruning, retraining from
  scratch, optionally mixed (DynamicCutMix), or with ``reweight = w`` keeping the top records at
  training weight ``w`` instead of pruning them; its directory is the ``tabmem dynamiccut`` layout and
  its ``model`` is the retrained generator.
* ``memstop`` (instead of ``train``): ``train_to_dir`` with memorization-aware checkpoint choice
  (:class:`~tabmem.mitigation.stopping.MemorizationStopping`); its ``model`` is the chosen epoch's,
  chosen on a selection holdout of test rows the audit step does not use.
* ``dpsgd`` (instead of ``train``): ``train_to_dir`` with the cell's generator trained by DP-SGD
  (``dp_epsilon``/``dp_delta``/``dp_max_grad_norm``; generators that have them: ``tabddpm``, ``llm``),
  optionally for other ``epochs``; records the budget opacus' accountant spent.
* ``reject`` (instead of ``sample``): sampling-time rejection of replicas of training rows, with top-up
  draws (:class:`~tabmem.mitigation.rejection.RejectionSampler`, ``tabmem sample --reject-replicas``).

The evaluation steps that follow are the same for every arm: they measure memorization against
the cell's original training rows (everyone who contributed data) with the holdout baseline, so
arms compare side by side in ``results.parquet``. The ``dynamiccut`` step adds what only it knows:
the rate against the pruned table and the sizes (its own sample of |train| rows, no quality).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabmem.errors import ParameterError
from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.studies._fields import REQUIRED, Field, boolean, choice, integer, number, string, table
from tabmem.studies.estimate import train_seconds
from tabmem.studies.steps.base import CellInfo, Step, StepContext, register_step
from tabmem.studies.steps.train import TrainStep
from tabmem.studies.store import MetricRow, metric


def _augmenters() -> list[str]:
    from tabmem.mitigation import AUGMENTERS

    return AUGMENTERS.names()


def _augmenters_or_none() -> list[str]:
    return ["none", *_augmenters()]


def _rankings() -> list[str]:
    from tabmem.mitigation import RANKING_METHODS

    return list(RANKING_METHODS)


def _weight_or_none(key: str, v: Any) -> Any:
    """``reweight``: none (prune) or a weight, checked with the other settings by ``check_dynamiccut``."""
    if v is None or v == "none":
        return None
    return number(0, 1)(key, v)


def _distances() -> list[str]:
    from tabmem.neighbors.distances import DISTANCES

    return DISTANCES.names()


def _check_augmenter(method: str, params: Mapping[str, Any], key: str, where: str) -> None:
    """Unknown or bad augmenter parameters fail when the study is read, not in a worker."""
    from tabmem.mitigation import get_augmenter

    try:
        get_augmenter(method, **params)._check_params()
    except ParameterError as exc:
        raise ParameterError(f"{where}{key}: {exc}") from None


def _generator(cell: CellInfo, device: str | None, where: str) -> dict[str, Any]:
    """The cell's generator resolved as the train step resolves it (preset, per-dataset preset, overrides)."""
    options = {k: f.default for k, f in TrainStep.options.items()} | {"device": device}
    c = TrainStep.configure(options, cell, where)
    return {k: c[k] for k in ("model", "preset", "dataset_preset", "params", "resolved")}


@register_step("augment")
class AugmentStep(Step):
    """Append a registered augmenter's new rows to the training rows (the train step trains on them)."""

    options = {
        "method": Field("tabcutmix", choice(_augmenters), "a registered augmenter (tabmem.mitigation.AUGMENTERS)"),
        "ratio": Field(0.3, number(0, None, low_open=True), "new rows as a share of the training rows"),
        "params": Field({}, table, "the augmenter's parameters, e.g. { mode = 'paper' }"),
    }
    axis = "mitigations"
    placement = ("before", "train")
    produces = {"train_table": "augmented.csv"}

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        _check_augmenter(options["method"], options["params"], "params", where)
        return dict(options)

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem._io import write_frame, write_json
        from tabmem.mitigation import augmented_table, get_augmenter

        c = self.config
        train, schema = ctx.data.train, ctx.data.schema
        aug = get_augmenter(c["method"], **c["params"]).fit(train, schema)
        new = aug.augment(ratio=c["ratio"], random_state=ctx.seed)  # = tabmem augment --seed N
        write_frame(ctx.out / "augmented.csv", augmented_table(train, new))
        write_json(
            ctx.out / "summary.json",
            {
                "method": c["method"],
                "ratio": c["ratio"],
                "n_original": len(train),
                "n_new": len(new),
                "seed": ctx.seed,
                "params": aug.get_params(),
                "target": schema.target,
            },
        )
        return [metric("n_original", len(train)), metric("n_new", len(new))]


@register_step("dynamiccut")
class DynamicCutStep(Step):
    """DynamicCut (or a control / the count oracle / DynamicCutMix) in place of the train step."""

    options = {
        "prune": Field(0.10, number(0, 1, low_open=True), "share of training records removed (⌈p·N⌉)"),
        "prune_by": Field("intensity", choice(_rankings), "intensity | count | first-memorization | random"),
        "warmup_epochs": Field(None, integer(1, none=True), "warm-up epochs (intensity, first-memorization)"),
        "track_every": Field(None, integer(1, none=True), "tracking interval of the warm-up"),
        "top_k": Field(3, integer(1), "intensity: mean of each record's k largest per-epoch Mem-AUCs"),
        "mix": Field("none", choice(_augmenters_or_none), "augmenter applied to the pruned table (DynamicCutMix)"),
        "mix_ratio": Field(0.3, number(0, None, low_open=True), "new rows of the mix, as a share of the pruned table"),
        "mix_params": Field({}, table, "the mix augmenter's parameters"),
        "reweight": Field(None, _weight_or_none, "keep the top records at this training weight (0 <= w < 1) instead"),
        "reweight_shape": Field("step", choice(("step", "linear")), "reweight: step, or linear in the rank up to 1"),
        "distance": Field(
            DEFAULT_DISTANCE, choice(_distances), "distance of the tracking and of the rate vs the pruned table"
        ),
        "device": Field(None, string(), "cpu, cuda or auto (default: the generator's)"),
    }
    axis = "mitigations"
    placement = ("instead", "train")
    produces = {"model": "retrain/model.pt", "synthetic": "synthetic.csv"}
    resumable = True

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        from tabmem.mitigation import check_dynamiccut

        gen = _generator(cell, options["device"], where)
        mix = None if options["mix"] == "none" else options["mix"]
        try:
            check_dynamiccut(
                epochs=int(gen["resolved"]["epochs"]),
                warmup_epochs=options["warmup_epochs"],
                track_every=options["track_every"],
                top_k=options["top_k"],
                prune=options["prune"],
                prune_by=options["prune_by"],
                mix=mix,
                mix_ratio=options["mix_ratio"],
                reweight=options["reweight"],
                reweight_shape=options["reweight_shape"],
            )
            if options["reweight"] is not None:
                from tabmem.generators import GENERATORS

                if not GENERATORS.get(gen["model"]).supports_sample_weight:
                    raise ParameterError(f"reweight: the {gen['model']} generator does not support per-record weights")
        except ParameterError as exc:
            raise ParameterError(f"{where}{exc}") from None
        if mix is not None:
            _check_augmenter(mix, options["mix_params"], "mix_params", where)
        return {**gen, **{k: v for k, v in options.items() if k not in ("device", "ema_decay")}}

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.mitigation.dynamiccut import DynamicCut
        from tabmem.runs.dynamiccut import dynamiccut_to_dir
        from tabmem.studies.steps.train import _tuples

        c = self.config
        cut = DynamicCut(
            c["model"],
            preset=c["preset"],
            params=_tuples(c["params"]),
            warmup_epochs=c["warmup_epochs"],
            track_every=c["track_every"],
            top_k=c["top_k"],
            prune=c["prune"],
            prune_by=c["prune_by"],
            mix=None if c["mix"] == "none" else c["mix"],
            mix_ratio=c["mix_ratio"],
            mix_params=c["mix_params"],
            distance=c["distance"],
            random_state=ctx.seed,
            dataset=c["dataset_preset"],
            reweight=c.get("reweight"),
            reweight_shape=c.get("reweight_shape", "step"),
        )
        s = dynamiccut_to_dir(
            ctx.data.train, ctx.data.schema, ctx.out, cut, resume=ctx.resume,
            source={"study_dataset": ctx.cell.dataset.identity},
            quality=False,  # the quality step judges every arm alike
            n_jobs=ctx.threads,
        )  # fmt: skip
        d = c["distance"]
        return [
            metric("memorization_rate_vs_pruned", s.memorization_rate_vs_pruned, component=d, goal="minimize"),
            metric("n_pruned", s.n_pruned),
            metric("n_retrain", s.n_retrain),
            metric("n_new", s.n_new),
            metric("warmup_epochs", s.warmup_epochs),
        ]

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        one = train_seconds({**config, "holdout": False}, cell)
        epochs = float(config["resolved"].get("epochs") or 1)
        if config["prune_by"] == "random":
            warm = 0.0
        elif config["prune_by"] == "count":
            warm = 1.0
        else:
            warm = float(config["warmup_epochs"] or epochs) / epochs
        return one * (1.0 + warm)


def _open_unit_or_none(key: str, v: Any) -> Any:
    if v is None or v == "none":
        return None
    v = number(0, 1, low_open=True)(key, v)
    if v >= 1:
        raise ParameterError(f"{key} must be a number in (0, 1), got {v!r}")
    return v


@register_step("memstop")
class MemStopStep(Step):
    """Memorization-aware checkpoint choice (``tabmem train --stop-excess``) in place of the train step.

    The selection holdout is ``n_selection`` rows (default |train|) of the test split that the audit
    step never uses: the audit's holdout is the seeded subsample of ``audit_n_holdout`` rows (set it
    to the ``[audit] n_holdout`` of the study), and the selection rows are drawn from the rest. The
    epoch is chosen on other rows than those that judge it (docs/mitigation.md: selection bias).
    """

    options = {
        "stop_excess": Field(0.05, number(-1, 1), "largest allowed upper end of the excess interval (fraction)"),
        "quality_floor": Field(0.0, number(0, 1), "smallest allowed Shape of the tracked sample (0: none)"),
        "choose": Field("last", choice(["last", "best-quality"]), "last | best-quality eligible tracked epoch"),
        "stop_early": Field(False, boolean, "end training after `patience` tracked epochs above the limit"),
        "patience": Field(1, integer(1), "tracked epochs in a row above the limit before an early stop"),
        "track_every": Field(100, integer(1), "tracking (and checkpoint choice) interval"),
        "track_samples": Field(None, integer(1, none=True), "rows sampled per tracked epoch (default |train|)"),
        "distance": Field(DEFAULT_DISTANCE, choice(_distances), "distance of tracking and the choice"),
        "n_selection": Field(None, integer(1, none=True), "selection holdout rows (default |train|)"),
        "audit_n_holdout": Field(None, integer(1, none=True), "the [audit] n_holdout (its rows are excluded)"),
        "ema_decay": Field(None, _open_unit_or_none, "track, choose and sample an EMA of the weights (tabddpm)"),
        "device": Field(None, string(), "cpu, cuda or auto (default: the generator's)"),
    }
    axis = "mitigations"
    placement = ("instead", "train")
    produces = {"model": "model.pt", "synthetic": "synthetic.csv"}
    resumable = True

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        gen = _generator(cell, options["device"], where)
        if options["ema_decay"] is not None:  # docs/mitigation.md part 10: the rule on the EMA keeps later epochs
            if "ema_decay" not in gen["resolved"]:
                raise ParameterError(f"{where}ema_decay: the {gen['model']} generator keeps no EMA of its weights")
            gen = {
                **gen,
                "params": {**gen["params"], "ema_decay": options["ema_decay"]},
                "resolved": {**gen["resolved"], "ema_decay": options["ema_decay"]},
            }
        if options["track_every"] > int(gen["resolved"]["epochs"]):
            raise ParameterError(
                f"{where}track_every is larger than the generator's {gen['resolved']['epochs']} epochs"
            )
        n_test, n_sel = cell.dataset.n_test, options["n_selection"] or cell.dataset.n_rows
        if options["audit_n_holdout"] is None:
            raise ParameterError(f"{where}audit_n_holdout: set it to the [audit] n_holdout (its rows are not reused)")
        if n_test is not None and n_sel is not None and options["audit_n_holdout"] + n_sel > n_test:
            raise ParameterError(
                f"{where}n_selection + audit_n_holdout = {n_sel + options['audit_n_holdout']} rows, "
                f"but the test split has {n_test}"
            )
        return {**gen, **{k: v for k, v in options.items() if k != "device"}}

    def run(self, ctx: StepContext) -> list[MetricRow]:
        import numpy as np

        from tabmem.runs.train import train_to_dir
        from tabmem.studies.inputs import subsample_rows
        from tabmem.studies.steps.train import _tuples

        c = self.config
        test = ctx.data.test
        if test is None:
            raise ParameterError("memstop: the dataset has no test split to draw a selection holdout from")
        used = subsample_rows(len(test), c["audit_n_holdout"], ctx.seed_for("holdout"))  # the audit's rows
        rest = np.setdiff1d(np.arange(len(test)), used)
        n_sel = int(c["n_selection"] or len(ctx.data.train))
        if n_sel > len(rest):
            raise ParameterError(f"memstop: {len(rest)} test rows are left for the selection holdout, not {n_sel}")
        pick = rest[subsample_rows(len(rest), n_sel, ctx.seed_for("selection"))]
        from tabmem._io import write_json

        write_json(ctx.out / "selection_rows.json", {"test_rows": pick.tolist(), "audit_rows": used.tolist()})
        summary = train_to_dir(
            ctx.training_rows(), ctx.data.schema, ctx.out, model=c["model"], preset=c["preset"],
            params=_tuples(c["params"]), seed=ctx.seed, track_every=c["track_every"],
            track_samples=c["track_samples"], distance=c["distance"], resume=ctx.resume, progress=False,
            source={"study_dataset": ctx.cell.dataset.identity}, dataset=c["dataset_preset"], evidence=False,
            stop_excess=c["stop_excess"], quality_floor=c["quality_floor"] or None, choose=c["choose"],
            stop_early=c["stop_early"], patience=c["patience"],
            selection_holdout=test.iloc[pick].reset_index(drop=True),
        )  # fmt: skip
        s = summary["selection"]
        return [
            metric("chosen_epoch", s["chosen_epoch"]),
            metric("epochs_trained", s["epochs_trained"]),
            metric("rule_met", float(s["rule_met"])),
            metric("excess_vs_selection_holdout", s["excess_vs_selection_holdout"], component=c["distance"]),
        ]

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        return train_seconds({**config, "holdout": False}, cell)


@register_step("dpsgd")
class DPSGDStep(Step):
    """DP-SGD (opacus) in place of the train step: the reference point of issue 25's frontier."""

    options = {
        "epsilon": Field(REQUIRED, number(0, None, low_open=True), "target epsilon over the whole schedule"),
        "delta": Field(None, _open_unit_or_none, "target delta (default 1/(10 n))"),
        "max_grad_norm": Field(1.0, number(0, None, low_open=True), "per-sample gradient clipping norm"),
        "epochs": Field(None, integer(1, none=True), "epochs of the private training (default: the generator's)"),
        "device": Field(None, string(), "cpu, cuda or auto (default: the generator's)"),
    }
    axis = "mitigations"
    placement = ("instead", "train")
    produces = {"model": "model.pt", "synthetic": "synthetic.csv"}
    resumable = True

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        gen = _generator(cell, options["device"], where)
        if "dp_epsilon" not in gen["resolved"]:
            raise ParameterError(f"{where}step: the {gen['model']} generator has no DP-SGD training (tabddpm, llm do)")
        dp = {
            "dp_epsilon": options["epsilon"],
            "dp_delta": options["delta"],
            "dp_max_grad_norm": options["max_grad_norm"],
        }
        if options["epochs"] is not None:
            dp["epochs"] = options["epochs"]
        params = {**gen["params"], **dp}
        resolved = {**gen["resolved"], **dp}
        return {**gen, "params": params, "resolved": resolved}

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.runs.train import train_to_dir
        from tabmem.studies.steps.train import _tuples

        c = self.config
        summary = train_to_dir(
            ctx.training_rows(), ctx.data.schema, ctx.out, model=c["model"], preset=c["preset"],
            params=_tuples(c["params"]), seed=ctx.seed, resume=ctx.resume, progress=False,
            source={"study_dataset": ctx.cell.dataset.identity}, dataset=c["dataset_preset"], evidence=False,
        )  # fmt: skip
        return [
            metric("dp_epsilon_spent", summary["dp_epsilon_spent"]),
            metric("dp_delta", summary["dp_delta"]),
            metric("epochs_trained", summary["epochs"]),
        ]

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        return DP_COST_FACTOR * train_seconds({**config, "holdout": False}, cell)


#: DP-SGD's per-sample gradients cost about 5x a plain step (TabDDPM small on Adult, one thread, measured)
DP_COST_FACTOR = 5.0


@register_step("reject")
class RejectStep(Step):
    """Sampling-time rejection of replicas (``tabmem sample --reject-replicas``) in place of the sample step.

    Draws with the sample step's seed (round 0 is the plain sample, so the ``none`` arm's rows are the
    rejected arm's before rejection), drops the rows that the replica criterion flags against the cell's
    training rows and draws more until ``n`` are kept (:class:`~tabmem.mitigation.rejection.RejectionSampler`).
    """

    options = {
        "distance": Field(DEFAULT_DISTANCE, choice(_distances), "replica distance of the rejection"),
        "threshold": Field(1 / 3, number(0, 1, low_open=True), "a row is a replica when d1/d2 < threshold"),
        "max_rounds": Field(10, integer(1), "the most draws from the model"),
        "n": Field(None, integer(1, none=True), "rows to keep (default: as many as the training rows)"),
        "device": Field(None, string(), "cpu, cuda or auto (default: the model's)"),
    }
    axis = "mitigations"
    placement = ("instead", "sample")
    needs = ("model",)
    produces = {"synthetic": "synthetic.csv"}

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        return dict(options)

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem._io import write_frame, write_json
        from tabmem.generators import load_generator
        from tabmem.mitigation.rejection import RejectionSampler

        c = self.config
        gen = load_generator(ctx.artifact("model"), device=c["device"])
        n = int(c["n"] or len(ctx.data.train))
        sampler = RejectionSampler(c["distance"], c["threshold"], max_rounds=c["max_rounds"], n_jobs=ctx.threads)
        table, report = sampler.fit(ctx.data.train, ctx.data.schema).sample(
            gen, n, random_state=ctx.seed_for("sample-0")
        )
        write_frame(ctx.out / "synthetic.csv", table)
        write_json(ctx.out / "summary.json", {"n": n, "rejection": report.to_dict()})
        return [
            metric("n_rows", len(table)),
            metric("rejection_rate", report.rejection_rate, component=c["distance"]),
            metric("rejection_rounds", report.rounds),
        ]

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        from tabmem.studies.estimate import sample_seconds

        n = float(config["n"] or cell.dataset.n_rows or 10_000)
        return 2 * sample_seconds(cell.generator["name"], cell.generator["preset"], n, float(cell.dataset.n_columns))
