"""The step interface: one stage of a study cell's pipeline (train, sample, audit, attack, quality, ...).

A study file lists its pipeline (``[study] steps = ["train", "audit", "quality"]``); every name is a
key of :data:`STEPS`, and the runner never special-cases one. Adding a step is one class and one
registration::

    from tabmem.studies.steps import Step, register_step, metric
    from tabmem.studies._fields import Field, number

    @register_step("mystep")
    class MyStep(Step):
        '''What it does, in one line.'''

        options = {"alpha": Field(0.5, number(0, 1))}      # the keys of its [mystep] table
        needs = ("synthetic",)                              # artifacts of earlier steps it reads
        produces = {"scores": "scores.csv"}                 # artifacts it writes (name -> file)

        def run(self, ctx):
            syn = ctx.read_table("synthetic")
            ...                                             # write files under ctx.out
            return [metric("my_score", 0.42, goal="minimize")]

What the runner guarantees and asks
-----------------------------------
* **Config.** :meth:`Step.configure` turns the step's checked ``[name]`` table and the cell (its
  axis entries and seed) into the step's resolved config: a JSON-able dict that must hold
  everything the outputs depend on. The default takes the table as it is; a step configured by an
  axis entry sets ``axis`` (``"generators"``, ``"sampling"`` or ``"mitigations"``) and merges the
  entry in (the built-in ``train`` step resolves the generator's preset into full parameters).
* **Key and sharing.** A step's key hashes its config, the dataset identity, the seed and the
  keys of the steps that produced the artifacts available to it. Its outputs live in
  ``DIR/steps/<name>/<key>/``, linked from every cell that uses it as ``DIR/cells/<cell>/<name>``:
  cells that differ only downstream (two sampling variants of one model, two audit settings)
  share the upstream steps, which run once (cells sharing a step run in one task). So a step must
  be a deterministic function of its config, its inputs and ``ctx.seed`` (derive other seeds with
  :meth:`StepContext.seed_for`).
* **Artifacts.** ``needs`` names artifacts earlier steps must have produced (checked when the
  study is read); ``produces`` maps the artifacts this step provides to files in its directory.
  Inputs: ``ctx.data`` (training rows, test split, schema), ``ctx.artifacts`` (name -> path) with
  :meth:`StepContext.read_table`. Built-in artifacts: ``model`` (a saved generator),
  ``synthetic`` (the synthetic table the evaluations read: the last step that produced one
  wins) and ``train_table`` (a mitigation's replacement training table, read by ``train``).
* **Run.** :meth:`Step.run` writes its files under ``ctx.out`` (write atomically with
  :mod:`tabmem._io`) and returns metric rows (:func:`~tabmem.studies.store.metric`), which
  become rows of ``results.parquet``. Raising fails the cell (one line in ``status.json``, the
  traceback in ``error.log``); the other cells go on.
* **Resume.** A step directory without ``step.json`` is an interrupted attempt: steps with
  ``resumable = True`` get it back with ``ctx.resume = True`` (``train`` continues from its
  checkpoint); for the others the runner empties it first.
* **Placement.** Mitigation steps (``augment``, ``dynamiccut``) are not listed in
  ``[study] steps``: an entry of the ``[[mitigations]]`` axis names its step, and the step's
  ``placement`` says where it goes in that cell's pipeline: ``("before", "train")`` (e.g. an
  augmenter that writes ``train_table``) or ``("instead", "train")`` (e.g. DynamicCut, which
  trains itself and produces ``model`` and ``synthetic``).
* **Cost.** :meth:`Step.estimate` returns the expected seconds on one thread (``tabmem run
  --dry-run``); see :mod:`tabmem.studies.estimate` for the model.
* **Threads.** ``ctx.threads`` is the task's thread budget (torch and BLAS are already limited to
  it); pass it as ``n_jobs`` to tabmem components.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from tabmem._registry import Registry
from tabmem.errors import ParameterError, TabmemError
from tabmem.studies._fields import Field, check_table
from tabmem.studies.inputs import CellData, DatasetEntry
from tabmem.studies.store import MetricRow

__all__ = ["STEPS", "CellInfo", "Step", "StepContext", "register_step", "require_test"]


@dataclass(frozen=True)
class CellInfo:
    """What a step may know about its cell when it is configured: the axis entries and the seed."""

    dataset: DatasetEntry
    generator: dict[str, Any]
    mitigation: dict[str, Any] | None
    sampling: dict[str, Any] | None
    seed: int


class Step:
    """Base class of pipeline steps (module docstring: the interface and what the runner guarantees)."""

    name: ClassVar[str] = ""
    #: keys of the step's ``[name]`` table in a study file
    options: ClassVar[Mapping[str, Field]] = {}
    #: artifacts read from earlier steps
    needs: ClassVar[tuple[str, ...]] = ()
    #: artifacts written by this step: name -> file name in its directory
    produces: ClassVar[Mapping[str, str]] = {}
    #: the axis whose entry configures this step (``generators``, ``sampling``, ``mitigations``) or None
    axis: ClassVar[str | None] = None
    #: mitigation steps: where they go in a cell's pipeline, e.g. ``("before", "train")``
    placement: ClassVar[tuple[str, str] | None] = None
    #: an interrupted attempt is continued (``ctx.resume``) instead of started afresh
    resumable: ClassVar[bool] = False

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    @classmethod
    def check_options(cls, values: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The step's table with unknown keys rejected, defaults filled, values checked."""
        return check_table(values, cls.options, where=where)

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        """The resolved config of this step in ``cell`` (what its key hashes); default: the options."""
        return dict(options)

    def run(self, ctx: StepContext) -> list[MetricRow]:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        """Expected seconds on one thread (0 when the step is negligible)."""
        return 0.0


@dataclass
class StepContext:
    """Everything a running step sees (module docstring)."""

    out: Path
    data: CellData
    cell: CellInfo
    config: dict[str, Any]
    artifacts: dict[str, Path] = field(default_factory=dict)
    threads: int = 1
    resume: bool = False

    @property
    def seed(self) -> int:
        return self.cell.seed

    def seed_for(self, purpose: str) -> int:
        """A seed for ``purpose`` derived from the cell seed (stable across versions and machines)."""
        digest = hashlib.sha256(f"tabmem-step-seed:{self.cell.seed}:{purpose}".encode()).digest()
        return int.from_bytes(digest[:4], "little")

    def artifact(self, name: str) -> Path:
        """Path of an artifact of an earlier step (clear error when no step produced it)."""
        if name not in self.artifacts:
            raise TabmemError(
                f"no earlier step produced {name!r} (produced so far: {sorted(self.artifacts) or 'none'})"
            )
        return self.artifacts[name]

    def read_table(self, name: str) -> pd.DataFrame:
        """An artifact table (CSV/Parquet), read as ``tabmem audit --synthetic FILE`` would read it."""
        from tabmem.data.io import read_table

        return read_table(self.artifact(name))

    def training_rows(self) -> pd.DataFrame:
        """The rows the generator is trained on: a mitigation's ``train_table`` when present, else the data."""
        if "train_table" in self.artifacts:
            return self.read_table("train_table")
        return self.data.train


def require_test(cell: CellInfo, key: str, value: str, where: str) -> None:
    """Fail when ``key = "test"`` asks for the test split of a file dataset that has none."""
    if value == "test" and cell.dataset.path is not None and cell.dataset.test is None:
        raise ParameterError(
            f'{where}{key} = "test" but dataset {cell.dataset.label!r} has no test file '
            f'(add test = "FILE" to its [[datasets]] entry, or set {key} = "none")'
        )


#: name -> step class; the built-in steps are imported on first use.
STEPS: Registry[type[Step]] = Registry(
    "step",
    base=Step,
    modules=(
        "tabmem.studies.steps.train",
        "tabmem.studies.steps.sample",
        "tabmem.studies.steps.audit",
        "tabmem.studies.steps.attack",
        "tabmem.studies.steps.quality",
        "tabmem.studies.steps.risk",
        "tabmem.studies.steps.mitigation",
    ),
)
register_step = STEPS.register
