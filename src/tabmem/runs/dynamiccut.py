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

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import read_json, write_frame, write_json
from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import Schema, ValidatedTable, validate
from tabmem.errors import ParameterError, TabmemError, name_setting
from tabmem.generators import load_generator
from tabmem.mitigation.dynamiccut import DynamicCut, RetrainTable, needs_warmup, retrain_table
from tabmem.mitigation.evaluation import mitigation_report
from tabmem.mitigation.ranking import Ranking
from tabmem.mitigation.summary import SUMMARY_KEYS, DynamicCutSummary, MitigationReport
from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.runs.protocol import DYNAMICCUT_RUN, RunDirectory
from tabmem.runs.train import TRAIN_RUN, train_to_dir

__all__ = ["dynamiccut_to_dir", "evaluate_run_dir", "SUMMARY_KEYS", "DYNAMICCUT_RUN"]

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
    "reweight",
    "reweight_shape",
)

#: the DynamicCut run type: its settings in config.json make it resumable (each stage resumes itself)


def evaluate_run_dir(
    run_dir: str | Path,
    original: pd.DataFrame | ValidatedTable,
    schema: Schema,
    *,
    n_samples: int | None = None,
    pruned_rows: np.ndarray | None = None,
    holdout: pd.DataFrame | None = None,
    test: pd.DataFrame | None = None,
    distance: str = DEFAULT_DISTANCE,
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
    cut: DynamicCut | None = None,
    *,
    ranking: str | Path | Ranking | None = None,
    holdout: pd.DataFrame | None = None,
    test: pd.DataFrame | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    source: dict[str, Any] | None = None,
    quality: bool = True,
    mle_grid: str = "tabsyn",
    baseline: str | Path | None = None,
    n_jobs: int | None = None,
    seed: int | None = None,
    **settings: Any,
) -> DynamicCutSummary:
    """Run DynamicCut ``cut`` (warm-up, rank, prune, retrain from scratch, evaluate) into ``out_dir``; returns
    the summary.

    ``cut`` is an unfitted :class:`~tabmem.mitigation.dynamiccut.DynamicCut` (its settings are the
    run's); instead, its settings may be given as keywords (``seed`` is its ``random_state``).
    ``ranking`` is a :class:`Ranking` or a ``ranking.csv`` of this table (transfer: no warm-up).
    ``holdout`` (real rows never trained on: the baseline), ``test`` (real test rows: MLE),
    ``baseline`` (a ``tabmem train`` run directory of the same model on the whole table, shown as
    "before"), ``log`` (called with one line per stage), ``progress`` (training progress bars).
    """
    say = log or (lambda _msg: None)
    cut = _the_cut(cut, ranking, seed, settings)
    epochs = cut.check(schema)
    table = validate(train, schema, name="training", nan="error")
    fingerprint = table_fingerprint(table)
    what = f"ranking {str(ranking)!r}" if isinstance(ranking, (str, Path)) else "ranking"
    if cut.ranking is not None:
        cut.ranking.check_table(fingerprint, len(table), what=what)
    config = _config(cut, epochs, ranking, fingerprint, source, schema)
    run = RunDirectory(out_dir, DYNAMICCUT_RUN)
    with run.lock():
        run.start(
            config,
            resume=resume,
            overwrite=overwrite,
            compare=lambda old, new: [k for k in _SETTINGS if old.get(k) != new.get(k)],
        )
        common = {"model": cut.model, "preset": cut.preset, "params": dict(cut.params or {}),
                  "seed": int(cut.random_state), "distance": cut.distance, "dataset": cut.dataset,
                  "progress": progress, "source": source}  # fmt: skip
        timings: dict[str, float] = {}
        stage1 = _Warmup(run, table, schema, holdout, common, epochs, cut.prune_by, say, timings)
        rk, ranking_source = cut.rank(table, stage1, what=what)
        if ranking_source != "warmup":
            ranking_source = str(ranking) if isinstance(ranking, (str, Path)) else ranking_source
            say(f"[1/3] ranking given ({rk.method}, {len(table)} records): no warm-up" if cut.ranking is not None
                else "[1/3] random ranking (the control): no warm-up")  # fmt: skip
        rk.save(run.path / "ranking.csv", extra={"pruned": rk.pruned_mask(cut.prune)})
        rt = _retrain(run, cut, table, schema, rk, common, epochs, say, timings)
        say(f"[3/3] evaluate: {len(table)} rows from the retrained model vs the original and the pruned table")
        t0 = time.perf_counter()
        judge = {"holdout": holdout, "test": test, "distance": cut.distance, "seed": int(cut.random_state),
                 "quality": quality, "mle_grid": mle_grid, "n_jobs": n_jobs}  # fmt: skip
        report = evaluate_run_dir(run.path / "retrain", table, schema, pruned_rows=rt.pruned_rows,
                                  synthetic_path=run.path / "synthetic.csv", **judge)  # fmt: skip
        timings["evaluate_seconds"] = time.perf_counter() - t0
        before = None if baseline is None else _baseline_report(Path(baseline), table, schema, fingerprint, **judge)
        summary = _summary(report, cut, epochs, config, rk, rt, len(table), ranking_source, stage1.summary, before)
        summary = DynamicCutSummary.from_dict({**summary, "timings_s": timings})
        write_json(run.path / "summary.json", summary.to_dict())
    return summary


def _the_cut(cut: DynamicCut | None, ranking: Any, seed: int | None, settings: dict[str, Any]) -> DynamicCut:
    """The run's DynamicCut: the one given, or one built from keyword settings (``seed`` = ``random_state``)."""
    if cut is None:
        cut = DynamicCut(**settings, random_state=0 if seed is None else seed)
    elif settings or seed is not None:
        raise ParameterError(f"give DynamicCut's settings in the object, not as keywords: {sorted(settings)}")
    if ranking is not None:
        given = Ranking.load(ranking) if isinstance(ranking, (str, Path)) else ranking
        cut = DynamicCut(**{**cut.get_params(), "ranking": given})
    return cut


def _config(
    cut: DynamicCut, epochs: int, ranking: Any, fingerprint: str, source: Any, schema: Schema
) -> dict[str, Any]:
    """config.json of a DynamicCut run (a resumed run must have the same settings)."""
    given = cut.ranking
    return {
        "model": cut.model,
        "preset": cut.preset,
        "params": {k: list(v) if isinstance(v, tuple) else v for k, v in (cut.params or {}).items()},  # as JSON reads
        "epochs": epochs,
        "warmup_epochs": (epochs if cut.prune_by == "count" else cut.warmup_epochs)
        if needs_warmup(cut.prune_by, given)
        else None,
        "track_every": cut.track_every,
        "top_k": int(cut.top_k),
        "prune": float(cut.prune),
        "prune_by": cut.prune_by if given is None else given.method,
        "ranking": str(ranking) if isinstance(ranking, (str, Path)) else (None if given is None else "object"),
        "mix": cut.mix,
        "mix_ratio": float(cut.mix_ratio) if cut.mix else None,
        "mix_params": cut.mix_params or {},
        "distance": cut.distance,
        "seed": int(cut.random_state),
        "fingerprint": fingerprint,
        **({"reweight": float(cut.reweight), "reweight_shape": cut.reweight_shape} if cut.reweight is not None else {}),
        "source": source or {},
        "schema": schema.to_dict(),
    }


class _Warmup:
    """Stage 1 into ``DIR/warmup`` (a ``tabmem train`` run directory), reused when finished, else resumed."""

    def __init__(
        self,
        run: RunDirectory,
        table: ValidatedTable,
        schema: Schema,
        holdout: pd.DataFrame | None,
        common: dict[str, Any],
        epochs: int,
        prune_by: str,
        say: Callable[[str], None],
        timings: dict[str, float],
    ) -> None:
        self.run, self.table, self.schema, self.holdout, self.common = run, table, schema, holdout, common
        self.epochs, self.prune_by, self.say, self.timings = epochs, prune_by, say, timings
        self.summary: dict[str, Any] | None = None

    def __call__(self, stop: int, every: int) -> Path:
        state = self.run.stage("warmup", TRAIN_RUN)
        wdir = self.run.path / "warmup"
        what = "full run (count oracle)" if self.prune_by == "count" else f"warm-up: epochs 1-{stop} of {self.epochs}"
        if state.done:
            self.say(f"[1/3] {what}: already done")
            self.summary = read_json(wdir / "summary.json")
            return wdir
        self.say(f"[1/3] {what}, tracking every {every} epochs" + (" (resumed)" if state.resume else ""))
        t0 = time.perf_counter()
        self.summary = train_to_dir(self.table, self.schema, wdir, **self.common, track_every=every,
                                    holdout=self.holdout, resume=state.resume, stop_after=stop)  # fmt: skip
        self.timings["warmup_seconds"] = time.perf_counter() - t0
        return wdir


def _retrain(
    run: RunDirectory,
    cut: DynamicCut,
    table: ValidatedTable,
    schema: Schema,
    rk: Ranking,
    common: dict[str, Any],
    epochs: int,
    say: Callable[[str], None],
    timings: dict[str, float],
) -> RetrainTable:
    """Stage 2: the pruned (possibly mixed) table, trained from scratch into ``DIR/retrain``."""
    rt = retrain_table(table, schema, rk, cut.prune, mix=cut.mix, mix_ratio=cut.mix_ratio,
                       mix_params=cut.mix_params, random_state=int(cut.random_state), reweight=cut.reweight,
                       reweight_shape=cut.reweight_shape)  # fmt: skip
    state = run.stage("retrain", TRAIN_RUN)
    if state.done:
        say("[2/3] retrain: already done")
        return rt
    mixed = f" + {rt.n_new} {cut.mix} rows" if cut.mix else ""
    how = "pruned" if cut.reweight is None else f"down-weighted ({cut.reweight_shape}, weight {cut.reweight:g})"
    say(
        f"[2/3] retrain from scratch for {epochs} epochs on {rt.n_kept} records "
        f"({len(rt.pruned_rows)} {how} by {rk.method}){mixed}" + (" (resumed)" if state.resume else "")
    )
    t0 = time.perf_counter()
    train_to_dir(rt.table, schema, run.path / "retrain", **common, track_every=0, resume=state.resume,
                 sample_weight=rt.weights)  # fmt: skip
    timings["retrain_seconds"] = time.perf_counter() - t0
    return rt


def _summary(
    report: MitigationReport,
    cut: DynamicCut,
    epochs: int,
    config: dict[str, Any],
    rk: Ranking,
    rt: RetrainTable,
    n_train: int,
    ranking_source: str,
    warm: dict[str, Any] | None,
    before: MitigationReport | None,
) -> dict[str, Any]:
    """summary.json of a DynamicCut run: the judgement of the retrained model, then the run's settings."""
    return {
        **report.to_dict(),
        "model": cut.model,
        "preset": cut.preset,
        "epochs": epochs,
        "seed": int(cut.random_state),
        "n_train": n_train,
        "n_pruned": len(rt.pruned_rows),
        "n_retrain": len(rt.table),
        "n_new": rt.n_new,
        "prune": float(cut.prune),
        "prune_by": rk.method,
        "top_k": int(cut.top_k) if rk.method == "intensity" else None,
        "warmup_epochs": config["warmup_epochs"],
        "track_every": cut.track_every,
        "ranking_source": ranking_source,
        "mix": cut.mix,
        "mix_ratio": float(cut.mix_ratio) if cut.mix else None,
        "reweight": None if cut.reweight is None else float(cut.reweight),
        "reweight_shape": None if cut.reweight is None else cut.reweight_shape,
        "warmup": _stage_numbers(warm),
        "baseline": before,
    }


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
        raise TabmemError(f"{name_setting('baseline', '--baseline')}: {str(path)!r} holds no trained model (model.pt)")
    theirs = load_generator(model_path).fingerprint_  # a damaged model file: one line naming it
    if theirs != fingerprint:
        raise TabmemError(
            f"{name_setting('baseline', '--baseline')}: {str(path)!r} was trained on another training table (fingerprints differ)"
        )
    return evaluate_run_dir(path, original, schema, **kwargs)
