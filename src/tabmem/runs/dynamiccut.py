"""DynamicCut into a resumable directory (``tabmem dynamiccut``); the pure steps live in :mod:`tabmem.mitigation`.

Layout of ``DIR``::

    DIR/config.json     the run's settings (a resumed run must use the same)
    DIR/warmup/         stage 1: a ``tabmem train`` run directory (first warmup_epochs of the full
                        schedule, tracked every track_every epochs); absent with a given ranking or
                        prune_by="random"; the full schedule for the count oracle
    DIR/ranking.csv     train_row, score, rank, pruned (+ ranking.json: method, fingerprint, params)
    DIR/retrain/        stage 2: a ``tabmem train`` run directory on the pruned (possibly mixed) table
    DIR/synthetic.csv   |original train| rows from the retrained model
    DIR/summary.json    memorization vs the original and the pruned table, holdout baseline, quality

``resume=True`` continues at the stage where an interrupted run stopped: a finished stage
(its ``summary.json`` written) is skipped, an unfinished one resumes from its checkpoint. Stages
are deterministic given the seed (the ranking, the pruned set and the augmented rows are
recomputed, never stored as records). Nothing here prints or writes raw training values except
what the generators' own ``synthetic.csv`` files hold.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import read_json, write_frame, write_json
from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import Schema, ValidatedTable, validate
from tabmem.errors import TabmemError
from tabmem.generators import get_generator, load_generator
from tabmem.mitigation.dynamiccut import check_dynamiccut, needs_warmup, retrain_table, warmup_length
from tabmem.mitigation.evaluation import mitigation_report
from tabmem.mitigation.ranking import Ranking, random_ranking, rank_records
from tabmem.mitigation.summary import SUMMARY_KEYS, DynamicCutSummary, MitigationReport
from tabmem.runs.train import train_to_dir

__all__ = ["dynamiccut_to_dir", "evaluate_run_dir", "SUMMARY_KEYS"]

_SETTINGS = (
    "model",
    "preset",
    "params",
    "epochs",
    "warmup_epochs",
    "track_every",
    "top_k",
    "prune",
    "prune_by",
    "ranking",
    "mix",
    "mix_ratio",
    "mix_params",
    "distance",
    "seed",
    "fingerprint",
)


def _stage_dir(path: Path, resume: bool) -> tuple[bool, bool]:
    """(done, resume_from_checkpoint) for a ``train_to_dir`` stage directory of this run."""
    if not path.exists():
        return False, False
    if not resume:
        raise TabmemError(f"{str(path)!r} already exists: pass --resume to continue that run or choose another --out")
    if (path / "summary.json").is_file():
        return True, False
    if (path / "checkpoint.pt").is_file() and (path / "config.json").is_file():
        return False, True
    shutil.rmtree(path)  # interrupted before its first checkpoint: start the stage again
    return False, False


def evaluate_run_dir(
    run_dir: str | Path,
    original: pd.DataFrame | ValidatedTable,
    schema: Schema,
    *,
    n_samples: int | None = None,
    pruned_rows: np.ndarray | None = None,
    holdout: pd.DataFrame | None = None,
    test: pd.DataFrame | None = None,
    distance: str = "fang2024",
    seed: int = 0,
    quality: bool = True,
    mle_grid: str = "tabsyn",
    synthetic_path: str | Path | None = None,
    n_jobs: int | None = None,
) -> MitigationReport:
    """Sample ``n_samples`` (default |original|) rows from ``run_dir/model.pt`` and judge them with
    :func:`~tabmem.mitigation.evaluation.mitigation_report` against the ``original`` table."""
    gen = load_generator(Path(run_dir) / "model.pt", device="cpu")
    n = int(n_samples or len(original))
    synthetic = gen.sample(n, random_state=int(np.random.SeedSequence([seed, 2024]).generate_state(1)[0]))
    if synthetic_path is not None:
        write_frame(synthetic_path, synthetic)
    return mitigation_report(
        synthetic,
        original,
        schema,
        pruned_rows=pruned_rows,
        holdout=holdout,
        test=test,
        distance=distance,
        quality=quality,
        mle_grid=mle_grid,
        random_state=seed,
        n_jobs=n_jobs,
    )


def dynamiccut_to_dir(
    train: pd.DataFrame,
    schema: Schema,
    out_dir: str | Path,
    *,
    model: str = "tabddpm",
    preset: str | None = "small",
    params: dict[str, Any] | None = None,
    warmup_epochs: int | None = None,
    track_every: int | None = None,
    top_k: int = 3,
    prune: float = 0.10,
    prune_by: str = "intensity",
    ranking: str | Path | Ranking | None = None,
    mix: str | None = None,
    mix_ratio: float = 0.3,
    mix_params: dict[str, Any] | None = None,
    distance: str = "fang2024",
    holdout: pd.DataFrame | None = None,
    test: pd.DataFrame | None = None,
    seed: int = 0,
    resume: bool = False,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    source: dict[str, Any] | None = None,
    dataset: str | None = None,
    quality: bool = True,
    mle_grid: str = "tabsyn",
    baseline: str | Path | None = None,
    n_jobs: int | None = None,
) -> DynamicCutSummary:
    """Run DynamicCut (warm-up, rank, prune, retrain from scratch, evaluate) into ``out_dir``; returns the summary.

    Parameters are those of :class:`~tabmem.mitigation.dynamiccut.DynamicCut` plus: ``holdout``
    (real rows never trained on: the baseline), ``test`` (real test rows: MLE), ``baseline`` (a
    ``tabmem train`` run directory of the same model on the whole table, shown as "before"),
    ``log`` (called with one line per stage), ``progress`` (training progress bars).
    """
    say = log or (lambda _msg: None)
    out = Path(out_dir)
    params = dict(params or {})
    epochs = int(get_generator(model, preset=preset, dataset=dataset, **params).epochs)
    given = Ranking.load(ranking) if isinstance(ranking, (str, Path)) else ranking
    check_dynamiccut(
        epochs=epochs,
        warmup_epochs=warmup_epochs,
        track_every=track_every,
        top_k=top_k,
        prune=prune,
        prune_by=prune_by,
        ranking=given,
        mix=mix,
        mix_ratio=mix_ratio,
        schema=schema,
    )
    table = validate(train, schema, name="training", nan="error")
    fingerprint = table_fingerprint(table)
    n_train = len(table)
    if given is not None:
        given.check_table(
            fingerprint, n_train, what=f"ranking {str(ranking)!r}" if isinstance(ranking, (str, Path)) else "ranking"
        )
    if prune_by == "count" and given is None:
        warmup_epochs = epochs  # the oracle ranks by the fully trained model
    config = {
        "model": model,
        "preset": preset,
        "params": params,
        "epochs": epochs,
        "warmup_epochs": warmup_epochs if needs_warmup(prune_by, given) else None,
        "track_every": track_every,
        "top_k": int(top_k),
        "prune": float(prune),
        "prune_by": prune_by if given is None else given.method,
        "ranking": str(ranking) if isinstance(ranking, (str, Path)) else (None if given is None else "object"),
        "mix": mix,
        "mix_ratio": float(mix_ratio) if mix else None,
        "mix_params": mix_params or {},
        "distance": distance,
        "seed": int(seed),
        "fingerprint": fingerprint,
        "source": source or {},
        "schema": schema.to_dict(),
    }
    cfg_path = out / "config.json"
    if cfg_path.is_file():
        if not resume:
            raise TabmemError(
                f"{str(out)!r} already holds a dynamiccut run: pass --resume to continue it or choose another --out"
            )
        old = read_json(cfg_path)
        diff = [k for k in _SETTINGS if old.get(k) != config.get(k)]
        if diff:
            raise TabmemError(f"--resume: settings differ from the run in {str(out)!r}: {', '.join(diff)}")
    out.mkdir(parents=True, exist_ok=True)
    write_json(cfg_path, config)
    timings: dict[str, float] = {}
    common = {
        "model": model,
        "preset": preset,
        "params": params,
        "seed": seed,
        "distance": distance,
        "dataset": dataset,
    }

    # ------------------------------------------------------------------ stage 1
    warm_summary: dict[str, Any] | None = None
    if given is not None:
        rk, ranking_source = given, str(ranking) if isinstance(ranking, (str, Path)) else "given"
        say(f"[1/3] ranking given ({rk.method}, {n_train} records): no warm-up")
    elif prune_by == "random":
        rk, ranking_source = random_ranking(n_train, fingerprint=fingerprint, random_state=seed), "random"
        say("[1/3] random ranking (the control): no warm-up")
    else:
        stop = warmup_length(prune_by, warmup_epochs, epochs)
        every = int(track_every or stop)
        wdir = out / "warmup"
        done, cont = _stage_dir(wdir, resume)
        what = "full run (count oracle)" if prune_by == "count" else f"warm-up: epochs 1-{stop} of {epochs}"
        if done:
            say(f"[1/3] {what}: already done")
            warm_summary = read_json(wdir / "summary.json")
        else:
            say(f"[1/3] {what}, tracking every {every} epochs" + (" (resumed)" if cont else ""))
            t0 = time.perf_counter()
            warm_summary = train_to_dir(
                table, schema, wdir, **common, track_every=every, holdout=holdout, resume=cont,
                progress=progress, source=source, stop_after=stop,
            )  # fmt: skip
            timings["warmup_seconds"] = time.perf_counter() - t0
        rk = rank_records(wdir, prune_by, top_k=top_k, warmup_epochs=stop, random_state=seed)
        if rk.fingerprint is not None and rk.fingerprint != fingerprint:
            raise TabmemError(f"{str(wdir)!r} tracked another training table (fingerprints differ)")
        ranking_source = "warmup"
    pruned = rk.top(prune)
    rk.save(out / "ranking.csv", extra={"pruned": rk.pruned_mask(prune)})

    # ------------------------------------------------------------------ stage 2
    rt = retrain_table(table, schema, rk, prune, mix=mix, mix_ratio=mix_ratio, mix_params=mix_params, random_state=seed)
    rdir = out / "retrain"
    done, cont = _stage_dir(rdir, resume)
    mixed = f" + {rt.n_new} {mix} rows" if mix else ""
    if done:
        say("[2/3] retrain: already done")
    else:
        say(
            f"[2/3] retrain from scratch for {epochs} epochs on {rt.n_kept} records "
            f"({len(pruned)} pruned by {rk.method}){mixed}" + (" (resumed)" if cont else "")
        )
        t0 = time.perf_counter()
        train_to_dir(rt.table, schema, rdir, **common, track_every=0, resume=cont, progress=progress, source=source)
        timings["retrain_seconds"] = time.perf_counter() - t0

    # ------------------------------------------------------------------ stage 3
    say(f"[3/3] evaluate: {n_train} rows from the retrained model vs the original and the pruned table")
    t0 = time.perf_counter()
    report = evaluate_run_dir(
        rdir, table, schema, pruned_rows=pruned, holdout=holdout,
        test=test, distance=distance, seed=seed, quality=quality, mle_grid=mle_grid,
        synthetic_path=out / "synthetic.csv", n_jobs=n_jobs,
    )  # fmt: skip
    timings["evaluate_seconds"] = time.perf_counter() - t0
    before = None
    if baseline is not None:
        before = _baseline_report(
            Path(baseline), table, schema, fingerprint,
            holdout=holdout, test=test, distance=distance, seed=seed, quality=quality, mle_grid=mle_grid, n_jobs=n_jobs,
        )  # fmt: skip
    summary: dict[str, Any] = {
        **report.to_dict(),
        "model": model,
        "preset": preset,
        "epochs": epochs,
        "seed": int(seed),
        "n_train": n_train,
        "n_pruned": len(pruned),
        "n_retrain": len(rt.table),
        "n_new": rt.n_new,
        "prune": float(prune),
        "prune_by": rk.method,
        "top_k": int(top_k) if rk.method == "intensity" else None,
        "warmup_epochs": config["warmup_epochs"],
        "track_every": track_every,
        "ranking_source": ranking_source,
        "mix": mix,
        "mix_ratio": float(mix_ratio) if mix else None,
        "warmup": _stage_numbers(warm_summary),
        "baseline": before,
        "timings_s": timings,
    }
    typed = DynamicCutSummary.from_dict(summary)
    write_json(out / "summary.json", typed.to_dict())
    return typed


def _stage_numbers(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    keys = (
        "epochs",
        "memorization_rate",
        "mem_auc",
        "holdout_memorization_rate",
        "excess_memorization",
        "train_seconds",
    )
    return {k: summary.get(k) for k in keys}


def _baseline_report(
    path: Path, original: ValidatedTable, schema: Schema, fingerprint: str, **kwargs: Any
) -> MitigationReport:
    """The unpruned model of ``path`` (a ``tabmem train`` run directory) judged like the retrained one."""
    model_path = path / "model.pt"
    if not model_path.is_file():
        raise TabmemError(f"--baseline: {str(path)!r} holds no trained model (model.pt)")
    import torch

    theirs = torch.load(model_path, map_location="cpu", weights_only=True).get("fingerprint")
    if theirs != fingerprint:
        raise TabmemError(f"--baseline: {str(path)!r} was trained on another training table (fingerprints differ)")
    return evaluate_run_dir(path, original, schema, **kwargs)
