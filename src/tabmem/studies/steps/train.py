"""``train``: the cell's generator trained into a ``tabmem train`` run directory (:func:`train_to_dir`).

Configured by the ``[[generators]]`` entry (``name``, ``preset``, ``epochs``, ``params``) and the
``[train]`` table; the key covers the generator's fully resolved parameters (preset, per-dataset
preset and overrides), so editing a preset makes new cells. Trains on ``train_table`` when a
mitigation step produced one, else on the cell's training rows; the seed is the cell seed, so a
cell reproduces ``tabmem train --seed N`` exactly. Resumes an interrupted attempt from its
checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.studies._fields import Field, boolean, choice, integer, string
from tabmem.studies.estimate import train_seconds
from tabmem.studies.steps.base import CellInfo, Step, StepContext, register_step
from tabmem.studies.store import MetricRow, metric


def _distances() -> list[str]:
    from tabmem.neighbors.distances import DISTANCES

    return DISTANCES.names()


def _tuples(params: Mapping[str, Any]) -> dict[str, Any]:
    """TOML arrays as the tuples generator constructors expect (as ``tabmem train --param`` does)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}


def _lists(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}


@register_step("train")
class TrainStep(Step):
    """Train the cell's generator with ``train_to_dir`` (model.pt, synthetic.csv, summary.json, tracking)."""

    options = {
        "track_every": Field(0, integer(0), "track per-record memorization every K epochs (0: off)"),
        "track_samples": Field(None, integer(1, none=True), "rows sampled per tracked epoch (default |train|)"),
        "distance": Field(DEFAULT_DISTANCE, choice(_distances), "distance of tracking and of the run's own audit"),
        "checkpoint_every": Field(None, integer(1, none=True), "epochs between checkpoints"),
        "device": Field(None, string(), "cpu, cuda or auto (default: the generator's)"),
        "holdout": Field(True, boolean, "audit the test split as the holdout baseline in summary.json"),
    }
    axis = "generators"
    produces = {"model": "model.pt", "synthetic": "synthetic.csv"}
    resumable = True

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        from tabmem.generators import GENERATORS

        g = cell.generator
        gen_cls = GENERATORS.get(g["name"])
        overrides = dict(g["params"])
        if g["epochs"] is not None:
            overrides["epochs"] = g["epochs"]
        if options["device"] is not None:
            overrides["device"] = options["device"]
        dataset = cell.dataset.name
        resolved = gen_cls.from_preset(g["preset"], dataset=dataset, **_tuples(overrides)).get_params()
        return {
            "model": g["name"],
            "preset": g["preset"],
            "dataset_preset": dataset if (g["preset"], dataset or "") in gen_cls.DATASET_PRESETS else None,
            "params": overrides,
            "resolved": _lists(resolved),
            **{k: v for k, v in options.items() if k != "device"},
        }

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.runs.train import train_to_dir

        c = self.config
        summary = train_to_dir(
            ctx.training_rows(),
            ctx.data.schema,
            ctx.out,
            model=c["model"],
            preset=c["preset"],
            params=_tuples(c["params"]),
            seed=ctx.seed,
            track_every=c["track_every"],
            track_samples=c["track_samples"],
            distance=c["distance"],
            holdout=ctx.data.test if c["holdout"] else None,
            checkpoint_every=c["checkpoint_every"],
            resume=ctx.resume,  # an attempt killed before its first checkpoint starts again (run protocol)
            progress=False,
            source={"study_dataset": ctx.cell.dataset.identity},
            dataset=c["dataset_preset"],
            evidence=False,  # the audit step computes the distance evidence, per distance
        )
        return [
            metric("final_loss", summary.get("final_loss")),
            metric("epochs_trained", summary["epochs"]),
        ]

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        return train_seconds(config, cell)
