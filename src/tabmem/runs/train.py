"""Train a generator into a directory with tracking, checkpoints and the final audit (``tabmem train``).

:func:`train_to_dir` is the library call behind ``tabmem train``; :func:`demo_train` is a
short call for a tracked TabDDPM ``small`` run (``tabmem demo`` runs a study instead:
:mod:`tabmem.studies.demo`). Directory layout::

    DIR/config.json      the run's settings (model, params, seed, data source, schema)
    DIR/checkpoint.pt    resumable checkpoint (``resume=True`` / ``--resume`` continues from it)
    DIR/model.pt         the final model (``tabmem sample --model DIR``)
    DIR/history.csv      per-epoch losses (and memorization rate at tracked epochs)
    DIR/tracking/        per-record memorization records (MemorizationTracker)
    DIR/synthetic.csv    |train| rows from the final model
    DIR/records.csv      per training record (position): replicas in synthetic.csv and Mem-AUC share
    DIR/summary.json     final memorization rate / Mem-AUC next to the holdout baseline, bootstrap CIs
    DIR/dynamics.json    Top vs Non-top training-dynamics comparison (when tracking)
    DIR/trajectories.csv per tracked epoch, Top vs Non-top Mem-AUC and memorized fractions
    DIR/selection/       with ``stop_excess``: selection.csv (per tracked epoch: excess vs the selection
                         holdout, its interval, Shape, eligible) and the chosen epoch's snapshot
    DIR/last_model.pt    with ``stop_excess``: the model of the last trained epoch (model.pt is the chosen one)

A run directory is always resumable or restartable. The tables are validated before anything is
written; every file is written atomically (a kill leaves the old file or the whole new one).
``config.json`` is written before the first checkpoint, so a run killed before it leaves a
directory with a config and no checkpoint: ``resume=True`` then starts from scratch (same seed,
same result as an uninterrupted run), and ``overwrite=True`` always starts from scratch,
deleting only the files of a training run (:data:`RUN_FILES`), never anything else in the
directory. Without either, a directory holding a run is an error that says which to pass.

``summary.json`` holds the replica figures of the final synthetic table (``memorization_rate``,
``exact_copy_rate``, ``rare_value_leakage``, ``n_undefined_ratio``, ``warnings``...) and, with a
holdout, the same figures for the holdout rows (``holdout_memorization_rate``,
``holdout_exact_copy_rate``, ``holdout_rare_value_leakage``) and the excesses, and the distance
evidence of ``tabmem audit`` (``data_copying``, ``authenticity``, ``identical_matches``, ``nndr``).
A DP-SGD run (``dp_epsilon``) also records ``dp_epsilon_spent`` and ``dp_delta`` (opacus' accountant).

Nothing here prints or logs raw training records.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import write_frame, write_json
from tabmem.callbacks import Callback, StopAtEpoch
from tabmem.data.schema import Schema, validate
from tabmem.errors import TabmemError, suggest
from tabmem.generators import DEFAULT_PRESET, get_generator, resolve_preset
from tabmem.generators._weights import check_sample_weight, weight_fingerprint
from tabmem.memorization.evidence import distance_evidence
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.runs.protocol import RUN_FILES, TRAIN_RUN, RunDirectory, flag_text

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
    "selection",
    "sample_weight",
)

#: files and folders of a training run (:data:`RUN_FILES`, what ``overwrite=True`` deletes) and its run
#: type (:data:`TRAIN_RUN`) are declared with the other run types in :mod:`tabmem.runs.protocol`

__all__ = ["train_to_dir", "demo_train", "RUN_FILES", "TRAIN_RUN"]


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
    preset: str | None = DEFAULT_PRESET,
    params: dict[str, Any] | None = None,
    seed: int = 0,
    track_every: int = 0,
    track_samples: int | None = None,
    distance: str = DEFAULT_DISTANCE,
    holdout: pd.DataFrame | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    progress: bool = False,
    source: dict[str, Any] | None = None,
    q: float = 0.10,
    dataset: str | None = None,
    stop_after: int | None = None,
    overwrite: bool = False,
    duplicates: str = "papers",
    on_warning: Any = None,
    evidence: bool = True,
    stop_excess: float | None = None,
    quality_floor: float | None = None,
    choose: str = "last",
    stop_early: bool = False,
    patience: int = 1,
    selection_holdout: pd.DataFrame | None = None,
    keep_snapshots: bool = False,
    sample_weight: Any = None,
) -> dict[str, Any]:
    """Train ``model`` on ``train`` into ``out_dir`` (layout in the module docstring); returns the summary.

    ``track_every = 0`` disables tracking (then ``dynamics.json`` is not written). ``holdout``
    (real rows not trained on) gives the baseline memorization rate. With ``resume=True`` the run
    continues from ``out_dir/checkpoint.pt`` and must use the same settings (with no checkpoint
    yet it starts from scratch); ``overwrite=True`` replaces a previous run. ``dataset`` (a
    registered name) selects the preset's per-dataset settings (``DATASET_PRESETS``).
    ``stop_after`` stops after that many epochs of the full schedule (a warm-up:
    :class:`~tabmem.callbacks.StopAtEpoch`; a learning rate decaying over the full run is kept).
    ``duplicates`` is the replica detector's rule for undefined ratios; ``on_warning(message)``
    receives warnings (a message is also kept in the summary's ``warnings``). With a holdout and
    ``evidence`` the summary also holds ``tabmem audit``'s distance evidence of the final table
    (:func:`~tabmem.memorization.evidence.distance_evidence`; a study's audit step computes its
    own, so the study's train step leaves it out). ``sample_weight`` (one per training row) is passed to
    the generator's ``fit``; config.json keeps a hash of it (a resumed run must use the same weights).

    ``stop_excess`` (a fraction) turns on memorization-aware checkpoint choice
    (:class:`~tabmem.mitigation.stopping.MemorizationStopping`): at every tracked epoch the excess of
    the tracked sample over ``selection_holdout`` (real rows used for nothing else: not the
    ``holdout`` that judges the result) and its Shape are recorded; ``model.pt``, ``synthetic.csv``
    and the audit are those of the chosen epoch (``choose``: the last or the best-Shape epoch whose
    excess upper bound is <= ``stop_excess`` and Shape >= ``quality_floor``), ``last_model.pt`` is the
    last trained epoch, and ``summary["selection"]`` says which epoch and why. ``stop_early`` also ends
    training after ``patience`` tracked epochs in a row above the limit. ``keep_snapshots`` keeps every
    tracked epoch's snapshot in ``selection/snapshots`` (to judge other rules afterwards), not only the chosen one.
    """
    if resume and overwrite:
        raise TabmemError(flag_text("resume", "overwrite") + " exclude each other")
    gen = get_generator(model, preset=preset, dataset=dataset, **dict(params or {})).check_params()
    preset = resolve_preset(model, preset)  # recorded as resolved: None for the class defaults
    table, holdout = validated_tables(train, holdout, schema)
    weights = check_sample_weight(sample_weight, len(table))
    if weights is not None and not gen.supports_sample_weight:
        raise TabmemError(f"sample_weight: the {model} generator does not support per-record weights")
    if stop_after is not None and not 1 <= int(stop_after) <= int(gen.epochs):
        raise TabmemError(f"stop_after must be in [1, epochs={gen.epochs}], got {stop_after!r}")
    if checkpoint_every is None:
        checkpoint_every = track_every if track_every else max(1, int(gen.epochs) // 10)
    selection = selection_config(stop_excess, quality_floor, choose, stop_early, patience, selection_holdout,
                                 track_every, holdout, schema)  # fmt: skip
    config = {"model": model, "preset": preset, "params": _json_params(gen), "seed": int(seed),
              "track_every": int(track_every), "track_samples": track_samples, "distance": distance,
              "checkpoint_every": int(checkpoint_every), "source": source or {}, "schema": schema.to_dict(),
              "stop_after": None if stop_after is None else int(stop_after), "selection": selection}  # fmt: skip
    if weights is not None:
        config["sample_weight"] = weight_fingerprint(weights)
    run = RunDirectory(out_dir, TRAIN_RUN)
    warn = Warnings(on_warning)
    with run.lock():
        resuming = run.start(config, resume=resume, overwrite=overwrite, compare=_settings_differ, warn=warn)
        tracker = _tracker(run.path, track_every, track_samples, distance, seed)
        chooser = _stopping(run.path, tracker, selection, selection_holdout, seed)
        seconds = _fit(gen, table, schema, run.path, tracker, stop_after=stop_after, progress=progress, seed=seed,
                       resuming=resuming, checkpoint_every=int(checkpoint_every), chooser=chooser,
                       sample_weight=weights)  # fmt: skip
        trained = int(gen.epoch_)
        if chooser is not None:
            gen, chosen = _chosen_model(gen, chooser, run.path, keep_snapshots)
        synthetic, result = _final_sample(gen, len(table), tracker, seed)
        summary, counts = final_audit(run.path, synthetic, result, table, schema, tracker, holdout, distance=distance,
                                      seed=seed, duplicates=duplicates, evidence=evidence)  # fmt: skip
        summary.update(model=model, preset=preset, epochs=int(gen.epoch_), seed=int(seed), train_seconds=seconds,
                       n_train=int(gen.n_train_), final_loss=gen.history_[-1].get("loss") if gen.history_ else None)  # fmt: skip
        spent = getattr(gen, "privacy_spent_", None)
        if spent is not None:  # DP-SGD: the budget opacus' accountant says was spent
            summary.update(dp_epsilon_spent=float(spent[0]), dp_delta=float(spent[1]))
        for message in summary.get("warnings", []):
            warn(message)
        summary["warnings"] = warn.messages
        if chooser is not None:
            summary.update(epochs_trained=trained, selection=chosen)
        write_dynamics(run.path, tracker, summary, counts, q)
        write_json(run.path / "summary.json", summary)
    return summary


def _json_params(gen: Any) -> dict[str, Any]:
    """The generator's resolved parameters as config.json holds them (tuples as lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in gen.get_params().items()}


def _fit(
    gen: Any,
    table: Any,
    schema: Schema,
    out: Path,
    tracker: MemorizationTracker | None,
    *,
    stop_after: int | None,
    progress: bool,
    seed: int,
    resuming: bool,
    checkpoint_every: int,
    chooser: Any = None,
    sample_weight: Any = None,
) -> float:
    """Train (or resume) ``gen`` with its callbacks, checkpointing into ``out``; save model.pt and history.csv.
    Returns the training seconds."""
    extra = (tracker, chooser, StopAtEpoch(int(stop_after)) if stop_after else None)
    callbacks: list[Any] = [c for c in extra if c is not None]
    callbacks.append(_Progress(int(stop_after or gen.epochs), enabled=progress))
    ckpt = out / TRAIN_RUN.progress
    t0 = time.perf_counter()
    gen.fit(table, schema, callbacks=callbacks, random_state=seed, resume_from=ckpt if resuming else None,
            checkpoint_every=checkpoint_every, checkpoint_path=ckpt, sample_weight=sample_weight)  # fmt: skip
    seconds = time.perf_counter() - t0
    gen.save(out / "model.pt")
    write_frame(out / "history.csv", pd.DataFrame(gen.history_))
    return seconds


def validated_tables(train: pd.DataFrame, holdout: pd.DataFrame | None, schema: Schema) -> tuple[Any, Any]:
    """The training (and holdout) table validated once, before anything is written."""
    table = validate(train, schema, name="training", nan="error")
    if len(table) < 2:
        raise TabmemError(f"training table: needs at least 2 rows, got {len(table)}")
    if holdout is not None:  # structural problems of the holdout surface now, not after training
        holdout = validate(holdout, schema, name="holdout", nan="error")
    return table, holdout


def _settings_differ(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The settings of a resumed run that differ (``epochs`` may grow and ``device`` change)."""
    diff = [k for k in CONFIG_KEYS if k != "params" and old.get(k) != new.get(k)]
    free = ("epochs", "device")
    old_params = {k: v for k, v in old.get("params", {}).items() if k not in free}
    if old_params != {k: v for k, v in new["params"].items() if k not in free}:
        diff.append("params")
    return diff


def _name(parameter: str) -> str:
    """A parameter as the caller knows it: ``--stop-excess`` under the command line, ``stop_excess`` in the library."""
    return suggest(parameter, "--" + parameter.replace("_", "-")) or parameter


def check_selection(
    limit: float | None,
    quality_floor: float | None,
    choose: str,
    stop_early: bool,
    patience: int,
    track_every: int,
    has_selection_holdout: bool,
) -> None:
    """The settings of memorization-aware checkpoint choice, checked before any table is read."""
    from tabmem.mitigation.stopping import CHOICES

    if limit is None:
        if has_selection_holdout or quality_floor is not None or stop_early:
            raise TabmemError(
                _name("stop_excess") + " is needed for a selection holdout, a quality floor or an early stop"
            )
        return
    if not isinstance(limit, (int, float)) or not -1.0 <= float(limit) <= 1.0:
        raise TabmemError(f"{_name('stop_excess')} must be a fraction in [-1, 1] (0.02 = 2 points), got {limit!r}")
    if quality_floor is not None and not 0.0 <= float(quality_floor) <= 1.0:
        raise TabmemError(f"{_name('quality_floor')} must be a Shape in [0, 1], got {quality_floor!r}")
    if choose not in CHOICES:
        raise TabmemError(f"{_name('choose')} must be one of {', '.join(CHOICES)}, got {choose!r}")
    if int(patience) < 1:
        raise TabmemError(f"{_name('patience')} must be >= 1, got {patience!r}")
    if not track_every:
        raise TabmemError(_name("stop_excess") + " needs tracking: " + _name("track_every") + " > 0")
    if not has_selection_holdout:
        raise TabmemError(
            _name("stop_excess") + " needs " + _name("selection_holdout")
            + " (real rows never trained on, other than the evaluation holdout)"
        )  # fmt: skip


def selection_config(
    limit: float | None,
    quality_floor: float | None,
    choose: str,
    stop_early: bool,
    patience: int,
    selection_holdout: Any,
    track_every: int,
    holdout: Any,
    schema: Schema,
) -> dict[str, Any] | None:
    """The checked settings of memorization-aware checkpoint choice as config.json records them (None: off)."""
    from tabmem.data.fingerprint import table_fingerprint

    check_selection(limit, quality_floor, choose, stop_early, patience, track_every, selection_holdout is not None)
    if limit is None:
        return None
    sel = validate(selection_holdout, schema, name="selection holdout", nan="error")
    fingerprint = table_fingerprint(sel)
    if holdout is not None and fingerprint == table_fingerprint(holdout):
        raise TabmemError(
            _name("selection_holdout") + " is the evaluation holdout: choosing and judging on the "
            "same rows biases the result (give other unseen rows)"
        )  # fmt: skip
    return {"stop_excess": float(limit), "quality_floor": None if quality_floor is None else float(quality_floor),
            "choose": choose, "stop_early": bool(stop_early), "patience": int(patience),
            "selection_holdout": {"n_rows": len(sel), "fingerprint": fingerprint}}  # fmt: skip


def _stopping(out: Path, tracker: Any, selection: dict[str, Any] | None, selection_holdout: Any, seed: int) -> Any:
    if selection is None:
        return None
    from tabmem.mitigation.stopping import MemorizationStopping

    return MemorizationStopping(
        tracker, selection_holdout, limit=selection["stop_excess"], quality_floor=selection["quality_floor"],
        choose=selection["choose"], stop=selection["stop_early"], patience=selection["patience"],
        path=out / "selection", random_state=seed,
    )  # fmt: skip


def _chosen_model(gen: Any, chooser: Any, out: Path, keep_snapshots: bool) -> tuple[Any, dict[str, Any]]:
    """Keep the last model as last_model.pt, make the chosen epoch's model model.pt; the summary's record."""
    epoch, met, reason = chooser.choice()
    gen.save(out / "last_model.pt")
    chosen = chooser.load_chosen(device=None)  # on the device it was trained on, as the tracker sampled it
    chosen.save(out / "model.pt")
    if not keep_snapshots:
        chooser.prune_snapshots()
    rows = chooser.history_
    row = rows[rows["epoch"] == epoch].iloc[0].to_dict()
    record = {
        "chosen_epoch": int(epoch), "rule_met": bool(met), "reason": reason,
        "stopped_early": chooser.stopped_epoch_ is not None, "epochs_trained": int(gen.epoch_),
        "stop_excess": chooser.limit, "quality_floor": chooser.quality_floor, "choose": chooser.choose,
        "selection_holdout_rate": float(row["selection_holdout_rate"]),
        "excess_vs_selection_holdout": float(row["excess"]),
        "excess_vs_selection_holdout_ci": [float(row["excess_lo"]), float(row["excess_hi"])],
        "tracked_shape": float(row["shape"]), "n_tracked_epochs": len(rows),
    }  # fmt: skip
    return chosen, record


def _tracker(
    out: Path, track_every: int, track_samples: int | None, distance: str, seed: int
) -> MemorizationTracker | None:
    if not track_every:
        return None
    return MemorizationTracker(
        every=track_every,
        n_samples=track_samples,
        distance=distance,
        path=out / "tracking",
        keep_last_sample=True,
        random_state=seed,
    )


def _final_sample(gen: Any, n: int, tracker: MemorizationTracker | None, seed: int) -> tuple[pd.DataFrame, Any]:
    """|train| rows from the final model, and their replica result when the tracker already scored them."""
    epoch = int(gen.epoch_)
    if tracker is not None and tracker.last_sample_ is not None and tracker.epochs_[-1]["epoch"] == epoch:
        if len(tracker.last_sample_) == n:
            return tracker.last_sample_, tracker.last_result_
    if tracker is not None and tracker.tracks(epoch, int(gen.epochs)) and int(tracker.n_samples or n) == n:
        # a run resumed at its last checkpoint trains no epoch, so the tracker drew nothing: draw what it drew
        return gen.sample(n, random_state=tracker.sample_seed(epoch)), None
    return gen.sample(n, random_state=int(np.random.SeedSequence([seed, 99]).generate_state(1)[0])), None


def final_audit(
    out: Path,
    synthetic: pd.DataFrame,
    result: Any,
    table: Any,
    schema: Schema,
    tracker: MemorizationTracker | None,
    holdout: Any,
    *,
    distance: str,
    seed: int,
    duplicates: str,
    evidence: bool,
    name: str = "synthetic",
) -> tuple[dict[str, Any], np.ndarray]:
    """The final audit of a tracked run (``tabmem train``; ``tabmem track``'s last snapshot): write
    ``synthetic`` as synthetic.csv and its records.csv; the summary of its replicas (and the holdout's)
    and the per-record replica counts. ``result`` is the tracker's score of ``synthetic`` when it has one."""
    if tracker is not None and duplicates == "papers":
        det = tracker.detector_
    else:
        det = ReplicaDetector(distance, duplicates=duplicates).fit(table, schema)
    clean = None
    if result is None or duplicates != "papers":
        clean = det.validate(synthetic, name=name)  # once, for the search and the distance evidence
        result = det.score(clean)
    write_frame(out / "synthetic.csv", synthetic)
    write_frame(out / "records.csv", result.records())
    extra: dict[str, Any] = {}
    if holdout is not None:
        holdout = det.validate(holdout, name="holdout", unseen="mismatch")  # a recheck of the categories only
        result = replace(result, holdout=det.score(holdout, name="holdout", unseen="mismatch"))
        if evidence:
            syn = clean if clean is not None else det.validate(synthetic, unseen="mismatch")
            extra = distance_evidence(det, result, syn, holdout, random_state=seed).to_dict()
    summary = result.summary(random_state=seed).to_dict()
    summary.update(extra)
    return summary, result.record_counts


def write_dynamics(
    out: Path, tracker: MemorizationTracker | None, summary: dict[str, Any], counts: np.ndarray, q: float
) -> None:
    """dynamics.json and trajectories.csv of a tracked run (Top vs Non-top records)."""
    if tracker is None or not tracker.epochs_:
        return
    dyn = tracker.dynamics()
    comparison = dyn.compare(q=q, final_counts=counts)
    write_json(out / "dynamics.json", comparison)
    write_frame(out / "trajectories.csv", dyn.trajectories(q=q, final_counts=counts))
    summary["dynamics_findings"] = comparison["findings"]


class Warnings:
    """Collects warnings for the summary and passes each to a callback (the command line prints them)."""

    def __init__(self, callback: Any = None) -> None:
        self.callback, self.messages = callback, []

    def __call__(self, message: str) -> None:
        self.messages.append(message)
        if self.callback is not None:
            self.callback(message)


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
    """Train ``model`` (TabDDPM ``small``) with tracking and audit its output, into ``out_dir`` (replaced).

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
        overwrite=True,  # the demo's own output folder: a second demo replaces the first
    )
