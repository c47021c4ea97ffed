"""``tabmem train``: train a registered generator with checkpoints and per-record memorization tracking.

A thin shell over the library: :func:`run_training` below (importable, e.g. by ``tabmem demo``)
chains ``get_generator(...).fit(callbacks=[MemorizationTracker, CheckpointCallback])``, sampling,
``ReplicaDetector`` and ``TrainingDynamics``. The output directory::

    DIR/config.json      the run's settings (model, params, seed, data source, schema)
    DIR/checkpoint.pt    resumable checkpoint (``--resume`` continues from it)
    DIR/model.pt         the final model (``tabmem sample --model DIR``)
    DIR/history.csv      per-epoch losses (and memorization rate at tracked epochs)
    DIR/tracking/        per-record memorization records (MemorizationTracker)
    DIR/synthetic.csv    |train| rows from the final model
    DIR/summary.json     final memorization rate / Mem-AUC next to the holdout baseline
    DIR/dynamics.json    Top vs Non-top training-dynamics comparison

Nothing here prints or logs raw training records.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators.callbacks import Callback

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
)


def _parse_params(items: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise TabmemError(f"--param expects KEY=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if isinstance(value, list):
            value = tuple(value)
        out[key.strip()] = value
    return out


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


def run_training(
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
) -> dict[str, Any]:
    """Train ``model`` on ``train`` into ``out_dir`` (layout in the module docstring); returns the summary.

    ``track_every = 0`` disables tracking (then ``dynamics.json`` is not written). ``holdout``
    (real rows not trained on) gives the baseline memorization rate. With ``resume=True`` the run
    continues from ``out_dir/checkpoint.pt`` and must use the same settings.
    """
    from tabmem.generators import get_generator
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.memorization.tracker import MemorizationTracker

    out = Path(out_dir)
    params = dict(params or {})
    gen = get_generator(model, preset=preset, **params)
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
    (out / "config.json").write_text(json.dumps(config, indent=2, default=str))

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
    callbacks.append(_Progress(int(gen.epochs), enabled=progress))
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
    pd.DataFrame(gen.history_).to_csv(out / "history.csv", index=False)

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
    synthetic.to_csv(out / "synthetic.csv", index=False)
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
        (out / "dynamics.json").write_text(json.dumps(_jsonable(comparison), indent=2))
        dyn.trajectories(q=q, final_counts=result.record_counts).to_csv(out / "trajectories.csv", index=False)
        summary["dynamics_findings"] = comparison["findings"]
    (out / "summary.json").write_text(json.dumps(_jsonable(summary), indent=2))
    return summary


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


@click.command("train")
@click.option(
    "--dataset", default=None, help="Registered dataset name (see `tabmem datasets`); trains on its train split."
)
@click.option(
    "--train",
    "train_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Training table (CSV/Parquet).",
)
@click.option(
    "--holdout",
    "holdout_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Real rows not trained on, for the holdout baseline (default with --dataset: its test split).",
)
@click.option("--categorical", default=None, help="With --train: comma-separated columns to treat as categorical.")
@click.option("--numerical", default=None, help="With --train: comma-separated columns to treat as numerical.")
@click.option("--target", default=None, help="With --train: the target column (modelled as one more column).")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Dataset directory (default $TABMEM_DATA_DIR).",
)
@click.option(
    "--model",
    default="tabddpm",
    show_default=True,
    help="Generator name from the registry (tabddpm, tvae, ctgan, ...).",
)
@click.option(
    "--preset",
    default="small",
    show_default=True,
    help="Named preset of the model (e.g. small, paper); 'none' for the class defaults.",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a generator parameter (JSON values), repeatable: --param lr=1e-3 --param layers=[512,512].",
)
@click.option("--epochs", type=click.IntRange(min=1), default=None, help="Number of epochs (default: the preset's).")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Random seed (same seed, same model and samples on CPU).",
)
@click.option(
    "--track-every",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Track per-record memorization every K epochs (0 = off).",
)
@click.option(
    "--track-samples",
    type=click.IntRange(min=1),
    default=None,
    help="Rows sampled per tracked epoch (default |train|).",
)
@click.option("--distance", default="fang2024", show_default=True, help="Replica distance (fang2024, gower, l2).")
@click.option(
    "--checkpoint-every",
    type=click.IntRange(min=1),
    default=None,
    help="Checkpoint every N epochs (default: --track-every, else epochs/10).",
)
@click.option("--threads", type=click.IntRange(min=1), default=None, help="torch CPU threads (default: torch's).")
@click.option("--device", default=None, help="cpu, cuda or auto (default auto: cuda when present).")
@click.option(
    "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output directory."
)
@click.option("--resume", is_flag=True, help="Continue the run in --out from its checkpoint.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def train(
    dataset: str | None,
    train_path: Path | None,
    holdout_path: Path | None,
    categorical: str | None,
    numerical: str | None,
    target: str | None,
    data_dir: Path | None,
    model: str,
    preset: str,
    params: tuple[str, ...],
    epochs: int | None,
    seed: int,
    track_every: int,
    track_samples: int | None,
    distance: str,
    checkpoint_every: int | None,
    threads: int | None,
    device: str | None,
    out_dir: Path,
    resume: bool,
    quiet: bool,
) -> None:
    """Train a generator, tracking per-record memorization; write the model, synthetic.csv and dynamics.json."""
    import torch

    from tabmem.data.io import read_table

    if (dataset is None) == (train_path is None):
        raise TabmemError("pass exactly one of --dataset NAME or --train FILE")
    if threads:
        torch.set_num_threads(threads)
    holdout = None
    if dataset is not None:
        if categorical or numerical or target:
            raise TabmemError(
                "--categorical/--numerical/--target only apply to --train (registered datasets have a schema)"
            )
        from tabmem.data.datasets import load_dataset

        ds = load_dataset(dataset, data_dir=data_dir)
        train_df, schema = ds.train, ds.schema
        holdout = ds.test
        source: dict[str, Any] = {"dataset": dataset}
    else:
        from tabmem.data.datasets import load_table_with_schema

        train_df, schema = load_table_with_schema(
            train_path, categorical=categorical, numerical=numerical, target=target
        )
        source = {"train": str(train_path)}
    if holdout_path is not None:
        holdout = read_table(holdout_path)
        source["holdout"] = str(holdout_path)
    p = _parse_params(params)
    if epochs is not None:
        p["epochs"] = epochs
    if device is not None:
        p["device"] = device
    preset_name = None if preset.lower() == "none" else preset
    if model == "tabddpm" and preset_name == "paper" and dataset == "adult" and "weight_decay" not in p:
        p["weight_decay"] = 5e-4  # the papers' Adult setting (brief §4.1)
    summary = run_training(
        train_df,
        schema,
        out_dir,
        model=model,
        preset=preset_name,
        params=p,
        seed=seed,
        track_every=track_every,
        track_samples=track_samples,
        distance=distance,
        holdout=holdout,
        checkpoint_every=checkpoint_every,
        resume=resume,
        progress=not quiet,
        source=source,
    )
    rate = summary["memorization_rate"]
    line = (
        f"{model}: {summary['epochs']} epochs in {summary['train_seconds']:.0f}s; memorization rate {100 * rate:.2f}%"
    )
    if summary.get("holdout_memorization_rate") is not None:
        line += f" (holdout baseline {100 * summary['holdout_memorization_rate']:.2f}%)"
    click.echo(line)
    click.echo(f"wrote {out_dir}/model.pt, synthetic.csv, summary.json" + (", dynamics.json" if track_every else ""))
