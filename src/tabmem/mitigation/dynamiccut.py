"""DynamicCut: rank training records by early memorization, prune the top fraction, retrain from scratch.

Fang et al., "A Closer Look on Memorization in Tabular Diffusion Model: A Data-Centric Perspective"
(arXiv 2505.22322; only the abstract was available, so unpublished settings are parameters), a two-stage,
model-agnostic method:

1. **warm-up**: train the generator for the first ``warmup_epochs`` epochs of its full schedule
   (the learning-rate schedule is that of the full run) with the
   :class:`~tabmem.memorization.tracker.MemorizationTracker` every ``track_every`` epochs;
2. **rank and prune**: rank records (:mod:`tabmem.mitigation.ranking`; ``intensity`` = mean of the
   ``top_k`` largest per-epoch Mem-AUC_e), remove the ``ceil(prune * N)`` top records (ties broken by
   a seeded permutation), optionally add ``mix`` rows (DynamicCutMix = ``mix="tabcutmix"``, ratio
   0.3, made from the pruned table only), and **retrain from scratch** for the full schedule.
   ``reweight=w`` (tabmem's variant, not in the paper) keeps the top records at training weight ``w``
   instead of removing them (:mod:`tabmem.mitigation.reweight`): everyone's data stays in the table.

A given ranking (for example one computed with another generator on the same table: transfer)
skips stage 1, and so does ``prune_by="random"`` (the control needs no warm-up).
``prune_by="count"`` (the papers' sample-removal oracle) ranks by the replica counts of a *fully*
trained model, so its stage 1 is the full schedule.

:class:`DynamicCut` holds the settings and the stages (:meth:`DynamicCut.check`,
:meth:`DynamicCut.rank`, :func:`retrain_table`); :meth:`DynamicCut.fit` runs them in memory and
:func:`tabmem.runs.dynamiccut.dynamiccut_to_dir` runs the same stages into a resumable directory
(``tabmem dynamiccut``), training through its own run directories. The final model is judged with
:func:`~tabmem.mitigation.evaluation.mitigation_report` against the original table and the pruned
one, next to the holdout baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_number, check_positive_int, check_random_state
from tabmem._params import Params
from tabmem.callbacks import StopAtEpoch
from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import Schema, ValidatedTable, raw_frame, validate
from tabmem.errors import NotFittedError, ParameterError, TabmemError, suggest
from tabmem.generators import get_generator
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.mitigation.base import AUGMENTERS, augmented_table, get_augmenter, require_class_target
from tabmem.mitigation.evaluation import mitigation_report
from tabmem.mitigation.ranking import RANKING_METHODS, Ranking, n_to_prune, random_ranking, rank_records
from tabmem.mitigation.reweight import REWEIGHT_SHAPES, ranking_weights
from tabmem.mitigation.summary import MitigationReport
from tabmem.neighbors.distances import DEFAULT_DISTANCE

__all__ = ["DynamicCut", "RetrainTable", "check_dynamiccut", "needs_warmup", "retrain_table", "warmup_length"]


def needs_warmup(prune_by: str, ranking: Ranking | None) -> bool:
    """Whether stage 1 trains a generator: not with a given ranking, nor for the ``random`` control."""
    return ranking is None and prune_by != "random"


def warmup_length(prune_by: str, warmup_epochs: int | None, epochs: int) -> int:
    """Epochs of stage 1: ``warmup_epochs``, or the full schedule for the ``count`` oracle."""
    return int(epochs) if prune_by == "count" else int(warmup_epochs)  # type: ignore[arg-type]


def check_dynamiccut(
    *,
    epochs: int,
    warmup_epochs: int | None,
    track_every: int | None,
    top_k: int,
    prune: float,
    prune_by: str,
    ranking: Ranking | None = None,
    mix: str | None = None,
    mix_ratio: float = 0.3,
    schema: Schema | None = None,
    reweight: float | None = None,
    reweight_shape: str = "step",
) -> None:
    """Check DynamicCut's settings before any work (one error naming the argument, and its flag under the command line).

    With ``schema``, a label-conditioned ``mix`` on a table without a categorical target fails here,
    before the warm-up."""
    check_choice(_named("prune_by", "--prune-by"), prune_by, RANKING_METHODS)
    check_number(_named("prune", "--prune"), prune, low=0.0, high=1.0, low_open=True, high_open=True)
    check_positive_int(_named("top_k", "--top-k"), top_k)
    check_positive_int(_named("epochs", "--epochs"), epochs)
    if reweight is not None:
        check_number(_named("reweight", "--reweight"), reweight, low=0.0, high=1.0, high_open=True)
        check_choice(_named("reweight_shape", "--reweight-shape"), reweight_shape, REWEIGHT_SHAPES)
        if mix is not None:
            raise ParameterError(
                f"{_named('reweight', '--reweight')} keeps every record (down-weighted); it does not combine with "
                f"{_named('mix', '--mix')}"
            )
    if mix is not None:
        aug = AUGMENTERS.get(mix)  # unknown names fail here, listing the known ones
        check_number(_named("mix_ratio", "--mix-ratio"), mix_ratio, low=0.0, low_open=True)
        if schema is not None and aug.needs_target:
            require_class_target(schema, suggest(f"mix={mix!r}", "--mix", mix) or f"mix={mix!r}")
    if not needs_warmup(prune_by, ranking) or prune_by == "count":
        if track_every is not None:
            check_positive_int(_named("track_every", "--track-every"), track_every)
        return
    if warmup_epochs is None or track_every is None:
        raise ParameterError(
            f"prune_by={prune_by!r} ranks records from a tracked warm-up: give "
            f"{_named('warmup_epochs', '--warmup-epochs')} and {_named('track_every', '--track-every')}, "
            f"or a ranking{_flag('--ranking')}"
        )
    check_positive_int(_named("warmup_epochs", "--warmup-epochs"), warmup_epochs)
    check_positive_int(_named("track_every", "--track-every"), track_every)
    if warmup_epochs > epochs:
        raise ParameterError(
            f"{_named('warmup_epochs', '--warmup-epochs')} = {warmup_epochs} is longer than the run: "
            f"{_named('epochs', '--epochs')} = {epochs}"
        )
    if track_every > warmup_epochs:
        raise ParameterError(
            f"{_named('track_every', '--track-every')} = {track_every} tracks no epoch within the warm-up of "
            f"{warmup_epochs} epochs"
        )


def _named(parameter: str, flag: str) -> str:
    """``parameter`` in the library; ``parameter (--flag)`` under a command that has the flag."""
    return parameter + _flag(flag)


def _flag(flag: str) -> str:
    """`` (--flag)`` under a command that has the flag, else nothing."""
    shown = suggest("", flag)
    return f" ({shown})" if shown else ""


@dataclass(frozen=True)
class RetrainTable:
    """The table stage 2 trains on: the kept records (original order), then ``n_new`` augmented rows.

    With ``reweight`` every record is kept, ``pruned_rows`` are the down-weighted ones and ``weights``
    holds one training weight per row of ``table`` (else ``None``)."""

    table: pd.DataFrame
    pruned_rows: np.ndarray  # positions in the original table, sorted
    n_kept: int
    n_new: int
    weights: np.ndarray | None = None


def retrain_table(
    train: pd.DataFrame | ValidatedTable,
    schema: Schema,
    ranking: Ranking,
    prune: float,
    *,
    mix: str | None = None,
    mix_ratio: float = 0.3,
    mix_params: dict[str, Any] | None = None,
    random_state: int | None = 0,
    reweight: float | None = None,
    reweight_shape: str = "step",
) -> RetrainTable:
    """Remove the top ``prune`` records of ``ranking`` from ``train``; with ``mix``, append ``int(mix_ratio * kept)``
    rows of that augmenter fitted on the kept records only. With ``reweight``, keep every record and give
    the top ``prune`` the weights of :func:`~tabmem.mitigation.reweight.ranking_weights` instead."""
    table = validate(train, schema, name="training", nan="match")
    ranking.check_table(table_fingerprint(table), len(table))
    n_to_prune(len(table), prune)  # checks prune
    pruned = ranking.top(prune)
    if reweight is not None:
        weights = ranking_weights(ranking, prune, reweight, reweight_shape)
        full = raw_frame(table).rename(columns=str).reset_index(drop=True)
        return RetrainTable(full, pruned, len(table), 0, weights)
    keep = np.ones(len(table), dtype=bool)
    keep[pruned] = False
    kept = raw_frame(table).rename(columns=str).iloc[np.flatnonzero(keep)].reset_index(drop=True)
    n_new = 0
    out = kept
    if mix is not None:
        aug = get_augmenter(mix, **(mix_params or {})).fit(kept, schema)
        seed = check_random_state(random_state)
        new = aug.augment(ratio=mix_ratio, random_state=None if seed is None else seed + 1)
        n_new = len(new)
        out = augmented_table(kept, new)
    return RetrainTable(out, pruned, int(keep.sum()), n_new)


class DynamicCut(Params):
    """DynamicCut in memory (module docstring): ``fit(train, schema)`` runs both stages.

    Args:
        model, preset, params: the generator (``get_generator(model, preset=preset, **params)``);
            the full schedule is its ``epochs``.
        warmup_epochs, track_every: stage 1 (not needed with ``ranking`` or ``prune_by="random"``).
        top_k: the intensity score averages each record's ``top_k`` largest Mem-AUC_e.
        prune: fraction of records removed (``ceil(prune * N)``), in (0, 1).
        prune_by: ``intensity`` (DynamicCut), ``count`` (oracle), ``first-memorization`` or ``random``.
        ranking: a precomputed :class:`Ranking` of this table (transfer); skips stage 1.
        mix, mix_ratio, mix_params: an augmenter applied to the pruned table (DynamicCutMix).
        reweight, reweight_shape: keep the top ``prune`` records at this training weight instead of
            removing them (``step``: all at ``reweight``; ``linear``: rising with the rank to 1 at the
            cut; :mod:`tabmem.mitigation.reweight`); the generator must support ``sample_weight``.
        distance: replica distance of the tracker and of :meth:`evaluate`.
        random_state: seed of training, tracking, tie-breaks and augmentation.
        dataset: a registered dataset name selecting the preset's per-dataset settings.

    Learned: ``ranking_``, ``pruned_rows_``, ``warmup_generator_`` and ``warmup_tracker_`` (when stage 1
    ran), ``generator_`` (the retrained model), ``n_train_``, ``n_retrain_``, ``n_new_``.
    """

    def __init__(
        self,
        model: str = "tabddpm",
        *,
        preset: str | None = "small",
        params: dict[str, Any] | None = None,
        warmup_epochs: int | None = None,
        track_every: int | None = None,
        top_k: int = 3,
        prune: float = 0.10,
        prune_by: str = "intensity",
        ranking: Ranking | None = None,
        mix: str | None = None,
        mix_ratio: float = 0.3,
        mix_params: dict[str, Any] | None = None,
        distance: str = DEFAULT_DISTANCE,
        random_state: int = 0,
        dataset: str | None = None,
        reweight: float | None = None,
        reweight_shape: str = "step",
    ) -> None:
        self.model = model
        self.preset = preset
        self.params = params
        self.warmup_epochs = warmup_epochs
        self.track_every = track_every
        self.top_k = top_k
        self.prune = prune
        self.prune_by = prune_by
        self.ranking = ranking
        self.mix = mix
        self.mix_ratio = mix_ratio
        self.mix_params = mix_params
        self.distance = distance
        self.random_state = random_state
        self.dataset = dataset
        self.reweight = reweight
        self.reweight_shape = reweight_shape

    def generator(self) -> Any:
        """A new, unfitted generator with the settings of both stages."""
        return get_generator(self.model, preset=self.preset, dataset=self.dataset, **dict(self.params or {}))

    def check(self, schema: Schema | None = None) -> int:
        """Check every setting before any work (:func:`check_dynamiccut`); returns the full schedule's epochs."""
        epochs = int(self.generator().epochs)
        check_dynamiccut(
            epochs=epochs, warmup_epochs=self.warmup_epochs, track_every=self.track_every, top_k=self.top_k,
            prune=self.prune, prune_by=self.prune_by, ranking=self.ranking, mix=self.mix, mix_ratio=self.mix_ratio,
            schema=schema, reweight=self.reweight, reweight_shape=self.reweight_shape,
        )  # fmt: skip
        if self.reweight is not None and not self.generator().supports_sample_weight:
            raise ParameterError(
                f"{_named('reweight', '--reweight')}: the {self.model} generator does not support per-record weights"
            )
        return epochs

    def rank(
        self, table: ValidatedTable, warm_up: Callable[[int, int], Any], *, what: str = "ranking"
    ) -> tuple[Ranking, str]:
        """Stage 1: the ranking of ``table``'s records and where it came from (``given``, ``random``, ``warmup``).

        ``warm_up(stop, every)`` trains the first ``stop`` epochs tracked every ``every`` epochs and
        returns what :func:`~tabmem.mitigation.ranking.rank_records` ranks from (a tracker, or a
        tracked run directory); it is called only when the ranking needs a warm-up."""
        seed = check_random_state(self.random_state)
        fingerprint = table_fingerprint(table)
        if self.ranking is not None:
            self.ranking.check_table(fingerprint, len(table), what=what)
            return self.ranking, "given"
        if self.prune_by == "random":
            return random_ranking(len(table), fingerprint=fingerprint, random_state=seed), "random"
        stop = warmup_length(self.prune_by, self.warmup_epochs, int(self.generator().epochs))
        source = warm_up(stop, int(self.track_every or stop))
        ranking = rank_records(source, self.prune_by, top_k=self.top_k, warmup_epochs=stop, random_state=seed)
        if ranking.fingerprint is not None and ranking.fingerprint != fingerprint:
            raise TabmemError("the warm-up tracked another training table (fingerprints differ)")
        return ranking, "warmup"

    def fit(self, train: pd.DataFrame | ValidatedTable, schema: Schema | None = None) -> DynamicCut:
        """Stage 1 (warm-up and ranking, unless skipped) and stage 2 (prune, mix, retrain from scratch)."""
        seed = check_random_state(self.random_state)
        if schema is None:
            schema = train.schema if isinstance(train, ValidatedTable) else Schema.infer(train)
        self.check(schema)
        table = validate(train, schema, name="training", nan="error")
        self.n_train_ = len(table)
        n_to_prune(self.n_train_, self.prune)
        self.warmup_generator_ = self.warmup_tracker_ = None

        def warm_up(stop: int, every: int) -> MemorizationTracker:
            tracker = MemorizationTracker(every=every, distance=self.distance, random_state=seed or 0)
            gen = self.generator()
            gen.fit(table, schema, callbacks=[tracker, StopAtEpoch(stop)], random_state=seed)
            self.warmup_generator_, self.warmup_tracker_ = gen, tracker
            return tracker

        self.ranking_, _ = self.rank(table, warm_up)
        rt = retrain_table(
            table,
            schema,
            self.ranking_,
            self.prune,
            mix=self.mix,
            mix_ratio=self.mix_ratio,
            mix_params=self.mix_params,
            random_state=seed,
            reweight=self.reweight,
            reweight_shape=self.reweight_shape,
        )
        self.pruned_rows_, self.n_retrain_, self.n_new_ = rt.pruned_rows, len(rt.table), rt.n_new
        self.weights_ = rt.weights
        self.schema_ = schema
        self._original = table
        self.generator_ = self.generator().fit(rt.table, schema, random_state=seed, sample_weight=rt.weights)
        return self

    def evaluate(
        self,
        holdout: pd.DataFrame | None = None,
        *,
        test: pd.DataFrame | None = None,
        n_samples: int | None = None,
        quality: bool = True,
        random_state: int = 0,
    ) -> MitigationReport:
        """Sample ``n_samples`` (default |original train|) rows from the retrained model and report
        memorization vs the original and the pruned table, the holdout baseline and quality."""
        if not hasattr(self, "generator_"):
            raise NotFittedError("DynamicCut is not fitted: call fit(train, schema) first")
        n = check_positive_int("n_samples", n_samples if n_samples is not None else self.n_train_)
        synthetic = self.generator_.sample(n, random_state=random_state)
        return mitigation_report(
            synthetic,
            self._original,
            self.schema_,
            pruned_rows=self.pruned_rows_,
            holdout=holdout,
            test=test,
            distance=self.distance,
            quality=quality,
            random_state=random_state,
        )
