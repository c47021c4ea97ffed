"""``dynamiccut``: a mitigation arm that replaces ``train`` with DynamicCut (:func:`dynamiccut_to_dir`).

Named by a ``[[mitigations]]`` entry (``step = "dynamiccut"``), it takes the cell's generator
(as ``train`` resolves it), trains the warm-up with tracking, ranks the training records, prunes
the top ``prune`` share, retrains from scratch on the rest and samples |train| rows: the
``model`` and ``synthetic`` artifacts. The evaluations that follow (audit, attack, quality) are
the study's own and judge those rows against the *original* training rows, like every other
cell. Its own directory is the ``tabmem dynamiccut`` layout (warmup/, ranking.csv, retrain/,
synthetic.csv, summary.json); an interrupted attempt resumes at the stage where it stopped.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

from tabmem.experiments._fields import Field, choice, integer, number, string
from tabmem.experiments.estimate import train_seconds
from tabmem.experiments.steps.base import CellInfo, Step, StepContext, register_step
from tabmem.experiments.store import MetricRow, metric


def _rankings() -> list[str]:
    from tabmem.mitigation.ranking import RANKING_METHODS

    return list(RANKING_METHODS)


def _distances() -> list[str]:
    from tabmem.neighbors.distances import DISTANCES

    return DISTANCES.names()


@register_step("dynamiccut")
class DynamicCutStep(Step):
    """Warm-up with tracking, rank, prune the top ``prune`` share, retrain from scratch (Fang et al. 2025)."""

    options = {
        "warmup_epochs": Field(
            None, integer(1, none=True), "epochs of the tracked warm-up (first of the full schedule)"
        ),
        "track_every": Field(None, integer(1, none=True), "tracking interval of the warm-up"),
        "top_k": Field(3, integer(1), "intensity ranking: the k strongest tracked epochs per record"),
        "prune": Field(0.10, number(0, 1, low_open=True), "share of training records removed"),
        "prune_by": Field("intensity", choice(_rankings), "ranking of the records"),
        "mix": Field(None, string(), "augmenter applied to the pruned table (DynamicCutMix), e.g. tabcutmix"),
        "mix_ratio": Field(0.3, number(0, low_open=True), "new rows of the mix, as a share of the pruned table"),
        "distance": Field("fang2024", choice(_distances), "distance of the warm-up's tracking"),
    }
    axis = "mitigations"
    placement = ("instead", "train")
    produces = {"model": "retrain/model.pt", "synthetic": "synthetic.csv"}
    resumable = True

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        from tabmem.experiments.steps.train import TrainStep
        from tabmem.mitigation.dynamiccut import check_dynamiccut

        gen = TrainStep.configure(TrainStep.check_options({}, where), cell, where)
        epochs = int(gen["resolved"]["epochs"])
        try:
            check_dynamiccut(
                epochs=epochs,
                warmup_epochs=options["warmup_epochs"],
                track_every=options["track_every"],
                top_k=options["top_k"],
                prune=options["prune"],
                prune_by=options["prune_by"],
                mix=options["mix"],
                mix_ratio=options["mix_ratio"],
            )
        except Exception as exc:  # one line naming the entry
            raise type(exc)(f"{where}{exc}") from None
        keep = ("model", "preset", "dataset_preset", "params", "resolved")
        return {**{k: gen[k] for k in keep}, **dict(options)}

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.experiments.dynamiccut import dynamiccut_to_dir
        from tabmem.experiments.steps.train import _tuples

        c = self.config
        out = ctx.out
        resume = ctx.resume and (out / "config.json").is_file()
        if ctx.resume and not resume and out.exists():  # interrupted before it wrote its config
            shutil.rmtree(out)
        summary = dynamiccut_to_dir(
            ctx.data.train,
            ctx.data.schema,
            out,
            model=c["model"],
            preset=c["preset"],
            params=_tuples(c["params"]),
            warmup_epochs=c["warmup_epochs"],
            track_every=c["track_every"],
            top_k=c["top_k"],
            prune=c["prune"],
            prune_by=c["prune_by"],
            mix=c["mix"],
            mix_ratio=c["mix_ratio"],
            distance=c["distance"],
            holdout=ctx.data.test,
            seed=ctx.seed,
            resume=resume,
            source={"study_dataset": ctx.cell.dataset.identity},
            dataset=c["dataset_preset"],
            quality=False,  # the study's quality step judges the same rows
            n_jobs=ctx.threads,
        )
        return [
            metric("n_pruned", summary["n_pruned"]),
            metric("n_retrain", summary["n_retrain"]),
            metric("memorization_rate_vs_pruned", summary.get("memorization_rate_vs_pruned"), goal="minimize"),
            metric("replicas_of_pruned_records", summary.get("replicas_of_pruned_records")),
        ]

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        full = train_seconds(config, cell)  # the retrain (|train| x (1 - prune) rows, same schedule)
        epochs = max(1, int(config["resolved"]["epochs"]))
        warm = (config["warmup_epochs"] or 0) / epochs if config["prune_by"] != "count" else 1.0
        return full * (warm + 1.0 - float(config["prune"]))
