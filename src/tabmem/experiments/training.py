"""Train a generator into a directory with tracking, checkpoints and the final audit (``tabmem train``).

:func:`train_to_dir` is the library call behind ``tabmem train``; :func:`demo_train` is the
short call the ``tabmem demo`` command uses. Directory layout::

    DIR/config.json      the run's settings (model, params, seed, data source, schema)
    DIR/checkpoint.pt    resumable checkpoint (``resume=True`` / ``--resume`` continues from it)
    DIR/model.pt         the final model (``tabmem sample --model DIR``)
    DIR/history.csv      per-epoch losses (and memorization rate at tracked epochs)
    DIR/tracking/        per-record memorization records (MemorizationTracker)
    DIR/synthetic.csv    |train| rows from the final model
    DIR/summary.json     final memorization rate / Mem-AUC next to the holdout baseline
    DIR/dynamics.json    Top vs Non-top training-dynamics comparison (when tracking)
    DIR/trajectories.csv per tracked epoch, Top vs Non-top Mem-AUC and memorized fractions

Nothing here prints or logs raw training records.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import write_frame, write_json
from tabmem.callbacks import Callback, StopAtEpoch
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import get_generator
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.memorization.tracker import MemorizationTracker

CONFIG_KEYS = (
    "model",
    "preset",
    "params",
    "seed",
    "track_every",
    "track_samples",
    "distance",
    "checkpoint_every",
    "source",
    "stop_after",
)

__all__ = ["train_to_dir", "demo_train"]


class _Progress(Callback):
    """Rich progress bar showing the loss and the latest memorization rate."""

    order = 50

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.enabled = total, enabled
        self._progress = None
        self._mem = float("nan")

    def on_fit_start(self, gen) -> None:
        if not self.enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}  mem-rate {task.fields[mem]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            f"train {gen.name}", total=self.total, completed=gen.epoch_, loss="-", mem="-"
        )

    def on_epoch_end(self, gen, epoch, logs) -> None:
        if "mem_rate" in logs:
            self._mem = logs["mem_rate"]
        if self._progress is not None:
            mem = "-" if np.isnan(self._mem) else f"{100 * self._mem:.2f}%"
            self._progress.update(self._task, completed=epoch, loss=f"{logs.get('loss', float('nan')):.4f}", mem=mem)
        return None

    def on_fit_end(self, gen) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def train_to_dir(
    train: pd.DataFrame,
    schema: Schema,
    out_dir: str | Path,
    *,
    model: str = "tabddpm",
    preset: str | None = "small",
    params: dict[str, Any] | None = None,
    seed: int = 0,
    track_every: int = 0,
    track_samples: int | None = None,
    distance: str = "fang2024",
    holdout: pd.DataFrame | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    progress: bool = False,
    source: dict[str, Any] | None = None,
    q: float = 0.10,
    dataset: str | None = None,
    stop_after: int | None = None,
) -> dict[str, Any]:
    """Train ``model`` on ``train`` into ``out_dir`` (layout in the module docstring); returns the summary.

    ``track_every = 0`` disables tracking (then ``dynamics.json`` is not written). ``holdout``
    (real rows not trained on) gives the baseline memorization rate. With ``resume=True`` the run
    continues from ``out_dir/checkpoint.pt`` and must use the same settings. ``dataset`` (a
    registered name) selects the preset's per-dataset settings (``DATASET_PRESETS``).
    ``stop_after`` stops after that many epochs of the full schedule (a warm-up:
    :class:`~tabmem.callbacks.StopAtEpoch`; a learning rate decaying over the full run is kept).
    """
    out = Path(out_dir)
    params = dict(params or {})
    gen = get_generator(model, preset=preset, dataset=dataset, **params)
    if stop_after is not None and not 1 <= int(stop_after) <= int(gen.epochs):
        raise TabmemError(f"stop_after must be in [1, epochs={gen.epochs}], got {stop_after!r}")
    if checkpoint_every is None:
        checkpoint_every = track_every if track_every else max(1, int(gen.epochs) // 10)
    config = {
        "model": model,
        "preset": preset,
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in gen.get_params().items()},
        "seed": int(seed),
        "track_every": int(track_every),
        "track_samples": track_samples,
        "distance": distance,
        "checkpoint_every": int(checkpoint_every),
        "source": source or {},
        "schema": schema.to_dict(),
        "stop_after": None if stop_after is None else int(stop_after),
    }
    ckpt = out / "checkpoint.pt"
    if resume:
        old_path = out / "config.json"
        if not old_path.is_file() or not ckpt.is_file():
            raise TabmemError(f"--resume: {str(out)!r} has no config.json/checkpoint.pt to resume from")
        old = json.loads(old_path.read_text())
        diff = [k for k in CONFIG_KEYS if k != "params" and old.get(k) != config.get(k)]
        old_params = {k: v for k, v in old.get("params", {}).items() if k not in ("epochs", "device")}
        new_params = {k: v for k, v in config["params"].items() if k not in ("epochs", "device")}
        if old_params != new_params:
            diff.append("params")
        if diff:
            raise TabmemError(f"--resume: settings differ from the run in {str(out)!r}: {', '.join(diff)}")
    elif (out / "config.json").exists() or ckpt.exists():
        raise TabmemError(
            f"{str(out)!r} already holds a training run: pass --resume to continue it or choose another --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "config.json", config)

    callbacks: list[Any] = []
    tracker = None
    if track_every:
        tracker = MemorizationTracker(
            every=track_every,
            n_samples=track_samples,
            distance=distance,
            path=out / "tracking",
            keep_last_sample=True,
            random_state=seed,
        )
        callbacks.append(tracker)
    if stop_after is not None:
        callbacks.append(StopAtEpoch(int(stop_after)))
    callbacks.append(_Progress(int(stop_after or gen.epochs), enabled=progress))
    t0 = time.perf_counter()
    gen.fit(
        train,
        schema,
        callbacks=callbacks,
        random_state=seed,
        resume_from=ckpt if resume else None,
        checkpoint_every=checkpoint_every,
        checkpoint_path=ckpt,
    )
    train_seconds = time.perf_counter() - t0
    gen.save(out / "model.pt")
    write_frame(out / "history.csv", pd.DataFrame(gen.history_))

    # |train| rows from the final model (reuse the tracker's sample of the final epoch when it has one)
    if (
        tracker is not None
        and tracker.last_sample_ is not None
        and tracker.epochs_[-1]["epoch"] == gen.epoch_
        and len(tracker.last_sample_) == len(train)
    ):
        synthetic, result = tracker.last_sample_, tracker.last_result_
    else:
        synthetic = gen.sample(len(train), random_state=int(np.random.SeedSequence([seed, 99]).generate_state(1)[0]))
        det = tracker.detector_ if tracker is not None else ReplicaDetector(distance).fit(train, schema)
        result = det.score(synthetic)
    write_frame(out / "synthetic.csv", synthetic)
    summary = {k: v for k, v in result.summary().items() if k != "heavy_tail"}
    summary.update(
        model=model,
        preset=preset,
        epochs=int(gen.epoch_),
        seed=int(seed),
        train_seconds=train_seconds,
        n_train=int(gen.n_train_),
        heavy_tail=result.heavy_tail(),
        final_loss=gen.history_[-1].get("loss") if gen.history_ else None,
    )
    if holdout is not None:
        det = tracker.detector_ if tracker is not None else ReplicaDetector(distance).fit(train, schema)
        hold = det.score(holdout, name="holdout", unseen="mismatch")
        summary["n_holdout"] = hold.n_synthetic
        summary["holdout_memorization_rate"] = hold.memorization_rate
        summary["holdout_mem_auc"] = hold.mem_auc
        summary["excess_memorization"] = result.memorization_rate - hold.memorization_rate
    if tracker is not None and tracker.epochs_:
        dyn = tracker.dynamics()
        comparison = dyn.compare(q=q, final_counts=result.record_counts)
        write_json(out / "dynamics.json", comparison)
        write_frame(out / "trajectories.csv", dyn.trajectories(q=q, final_counts=result.record_counts))
        summary["dynamics_findings"] = comparison["findings"]
    write_json(out / "summary.json", summary)
    return summary


def demo_train(
    train: pd.DataFrame,
    schema: Schema,
    out_dir: str | Path,
    *,
    epochs: int = 20,
    track_every: int = 5,
    holdout: pd.DataFrame | None = None,
    seed: int = 0,
    model: str = "tabddpm",
    preset: str = "small",
    progress: bool = False,
) -> dict[str, Any]:
    """Train ``model`` (TabDDPM ``small``) with tracking and audit its output: what ``tabmem demo`` runs.

    Returns the summary (memorization rate, holdout baseline, Mem-AUC, Top vs Non-top findings);
    ``out_dir`` gets the :func:`train_to_dir` layout (``synthetic.csv`` is ready for ``tabmem audit``).
    """
    return train_to_dir(
        train,
        schema,
        out_dir,
        model=model,
        preset=preset,
        params={"epochs": epochs},
        seed=seed,
        track_every=track_every,
        holdout=holdout,
        progress=progress,
        source={"demo": True},
    )
