"""Membership inference into a directory (``tabmem attack``): shadows when asked, every attack, the risk ledger.

:func:`attack_to_dir` validates the tables once, trains shadow generators when a shadow-model
attack is requested (:mod:`tabmem.runs.shadows`, cached under ``DIR/shadows/``), runs the
attacks (:func:`tabmem.attacks.runner.run_attacks`) and writes::

    DIR/summary.json  per attack: AUC, TPR@FPR, MIDST and conservative TPR at FPR 0.1 / 0.01,
                      min_resolved_fpr, the ε lower bound; "_meta" (sizes, skipped attacks, shadows);
                      "_privacy" (the best ε lower bound over the attacks, Bonferroni-corrected, next
                      to the generator's claimed ε when it is trained with DP)
    DIR/scores.csv    one row per target (members, then non-members), one score column per attack
    DIR/risk.csv      one row per target, the strongest evidence first: every attack's score and rank,
                      and per member its replica count, its DynamicCut intensity (with a tracked run),
                      its LevAtt distance and its LiRA score (positions only, never values)
    DIR/roc.csv       every attack's ROC corners (attack, fpr, tpr, threshold)
    DIR/shadows/      the shadow generators' synthetic tables and plan (resumable)

The DOMIAS reference defaults to the population (real rows from the same distribution that the
generator did not see).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_fraction, check_number, check_positive_int
from tabmem._io import read_json, reading, write_frame, write_json
from tabmem.attacks.auditing import epsilon_lower_bound
from tabmem.attacks.base import ATTACKS, check_attack_names
from tabmem.attacks.runner import DEFAULT_ATTACKS, AttackReport, run_attacks
from tabmem.attacks.summary import AttackSummary, PrivacyHeadline
from tabmem.data.schema import Schema, ValidatedTable, concat_validated, validate
from tabmem.errors import ParameterError, TabmemError, name_setting
from tabmem.neighbors.distances import DEFAULT_DISTANCE
from tabmem.neighbors.settings import ProgressFactory, search_progress, working_memory
from tabmem.runs.protocol import ATTACK_RUN, RunDirectory
from tabmem.runs.searches import sharded_searches

__all__ = ["ATTACK_RUN", "ShadowConfig", "attack_to_dir", "risk_ledger"]


# the ShadowConfig fields under the names attack_to_dir's keyword arguments have always had
_SHADOW_KEYWORDS = {
    "model": "model",
    "preset": "preset",
    "params": "params",
    "dataset": "dataset",
    "n_shadows": "n_shadows",
    "shadow_design": "design",
    "shadow_train_size": "train_size",
    "executor": "executor",
    "jobs": "jobs",
    "threads": "threads",
    "address": "address",
    "population_overlap": "overlap",
}


@dataclass(frozen=True)
class ShadowConfig:
    """How the shadow generators train (:func:`tabmem.runs.shadows.train_shadows`): as the released one was.

    ``model`` is a registered generator, with ``preset``/``params``/``dataset`` as the released
    generator was trained (``params``' ``dp_epsilon``/``dp_delta`` are also its DP claim);
    ``n_shadows`` shadows train on ``train_size`` rows each (default: as many as the members)
    through ``executor`` (``"local"`` or ``"ray"``, :func:`~tabmem.runs.pool.run_pool`; ``address``:
    a Ray cluster to join) with ``jobs`` workers of ``threads`` torch threads. ``design`` defaults to ``"online"`` unless every requested shadow attack works
    offline; ``overlap`` says what to do with population rows equal to a target (``"error"``,
    ``"drop"``).
    """

    model: str | None = None
    preset: str | None = "small"
    params: Mapping[str, Any] = field(default_factory=dict)
    dataset: str | None = None
    n_shadows: int = 16
    design: str | None = None
    train_size: int | None = None
    executor: str = "local"
    jobs: int = 1
    threads: int = 1
    address: str | None = None
    overlap: str = "error"


class _Tables(NamedTuple):
    """The attack's tables, each validated once."""

    members: ValidatedTable
    non_members: ValidatedTable
    synthetic: ValidatedTable
    population: ValidatedTable | None


def attack_to_dir(
    members: pd.DataFrame,
    non_members: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    out_dir: str | Path,
    *,
    attacks: Sequence[str] = DEFAULT_ATTACKS,
    attack_params: dict[str, dict[str, Any]] | None = None,
    reference: pd.DataFrame | None = None,
    population: pd.DataFrame | None = None,
    shadows: ShadowConfig | None = None,
    run_dir: str | Path | None = None,
    intensity_k: int = 1,
    replica_distance: str = DEFAULT_DISTANCE,
    nan: str = "error",
    extra: str = "error",
    n_bootstrap: int = 200,
    delta: float | None = None,
    confidence: float = 0.95,
    claimed_epsilon: float | None = None,
    claimed_delta: float | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    on_report: Callable[[AttackReport], None] | None = None,
    shards: int | None = None,
    memory_budget: int | None = None,
    search_progress_bar: ProgressFactory | None = None,
    **shadow_keywords: Any,
) -> AttackSummary:
    """Run ``attacks`` on (members, non-members, synthetic) into ``out_dir`` (layout in the module docstring).

    Shadow-model attacks need ``population`` (real rows, no target among them) and ``shadows``
    (:class:`ShadowConfig`; or its fields as keywords: ``model``, ``preset``, ``params``, ``dataset``,
    ``n_shadows``, ``shadow_design``, ``shadow_train_size``, ``executor``, ``jobs``, ``threads``,
    ``address``, ``population_overlap``). The ε bound's ``delta`` defaults to ``claimed_delta``, else
    1/(10 n_members) with a ``claimed_epsilon``, else 1e-5; the claim defaults to ``params``'
    ``dp_epsilon``/``dp_delta``.
    ``run_dir`` (a tracked ``tabmem train`` directory) adds DynamicCut intensities to ``risk.csv``.
    Holds the writer lock; returns the :class:`~tabmem.attacks.summary.AttackSummary` (``.to_dict()`` is
    what ``summary.json`` holds), ``on_report`` gets the :class:`AttackReport`. The large neighbour
    searches (DCR's, MC's ε, the ledger's replica counts) run sharded, in at most ``shards`` shards,
    on the shadows' executor: ``jobs`` worker processes, or on Ray every shard at once
    (:func:`tabmem.runs.searches.sharded_searches`); the files do not depend on it. ``memory_budget``
    (bytes, all workers together) bounds the blocks of LevAtt's edit-distance search and of the density
    attacks' KDE (:func:`tabmem.neighbors.settings.working_memory`; ``None``: their defaults);
    ``search_progress_bar(rows, synthetic_rows)`` opens the progress display of LevAtt's search. Neither
    changes the files.
    """
    attacks = check_attack_names(attacks)
    config = _shadow_config(shadows, shadow_keywords)
    _check_design(attacks, config.design)
    claim = _claim(config, confidence, claimed_epsilon, claimed_delta)
    jobs = config.jobs if config.executor == "local" else None  # Ray: every shard at once, placed by its CPUs
    searches = sharded_searches(config.executor, jobs=jobs, address=config.address, shards=shards)
    check_positive_int("memory_budget", memory_budget, allow_none=True)
    bounded, shown = working_memory(memory_budget), search_progress(search_progress_bar)
    with RunDirectory(out_dir, ATTACK_RUN).lock() as run, searches, bounded, shown:
        tables = _validate(members, non_members, synthetic, population, schema, nan=nan, extra=extra)
        shadow_set = _shadow_stage(tables, schema, run.path / "shadows", attacks, config, seed, progress)
        delta = _delta(delta, claim, len(tables.members))
        if reference is None:
            reference = tables.population  # DOMIAS's default reference: real rows the generator did not see
        report = run_attacks(
            tables.members,
            tables.non_members,
            tables.synthetic,
            schema,
            reference=reference,
            attacks=attacks,
            attack_params=attack_params,
            nan=nan,
            extra=extra,
            n_bootstrap=n_bootstrap,
            random_state=seed,
            shadows=shadow_set,
            delta=delta,
            confidence=confidence,
        )
        if on_report is not None:
            on_report(report)
        summary = _summary(report, shadow_set, delta, confidence, seed, claim)
        _write(run.path, report, summary, tables, schema, run_dir, intensity_k, replica_distance)
    return summary


def _shadow_config(config: ShadowConfig | None, keywords: dict[str, Any]) -> ShadowConfig:
    """``config``, or the one that the former keyword arguments (``model=``, ``n_shadows=``...) describe."""
    unknown = sorted(set(keywords) - set(_SHADOW_KEYWORDS))
    if unknown:
        raise TypeError(f"attack_to_dir() got an unexpected keyword argument {unknown[0]!r}")
    if config is not None and keywords:
        raise TypeError(
            f"attack_to_dir(): pass {', '.join(sorted(keywords))} in shadows=ShadowConfig(...), not next to it"
        )
    if config is None:
        config = ShadowConfig(**{_SHADOW_KEYWORDS[k]: v for k, v in keywords.items()})
    return replace(config, params=dict(config.params or {}))


def _check_design(attacks: Sequence[str], design: str | None) -> None:
    """Refuse, before any work, a shadow design that a requested shadow-model attack cannot use."""
    if design is None:
        return  # chosen from the attacks (_shadow_stage)
    check_choice("shadow_design", design, ("online", "offline"))
    for name in attacks:
        cls = ATTACKS[name]
        if cls.needs_shadows and design not in cls.shadow_designs:
            setting = name_setting(f"shadow_design={design!r}", "--shadow-design", design)
            works = " or ".join(cls.shadow_designs)
            offline = " (lira_offline works offline)" if name.startswith("lira") else ""
            raise ParameterError(f"{name} works with {works} shadows only, not with {setting}{offline}")


def _claim(
    config: ShadowConfig, confidence: float, claimed_epsilon: float | None, claimed_delta: float | None
) -> tuple[Any, Any]:
    """The DP claim (ε, δ): the arguments, else the generator parameters' ``dp_epsilon``/``dp_delta``
    (the shadow workers and the confidence checked first)."""
    check_positive_int("jobs", config.jobs)
    check_fraction("confidence", confidence)
    params = config.params
    eps = claimed_epsilon if claimed_epsilon is not None else params.get("dp_epsilon")
    claimed_delta = claimed_delta if claimed_delta is not None else params.get("dp_delta")
    if eps is not None:
        check_number("claimed epsilon", eps, low=0.0, low_open=True)
    return eps, claimed_delta


def _validate(
    members: Any, non_members: Any, synthetic: Any, population: Any, schema: Schema, *, nan: str, extra: str
) -> _Tables:
    """Each table validated once against ``schema`` (the population without missing values)."""
    policy = "match" if nan == "match" else "error"

    def one(table: Any, name: str, nan_policy: str = policy) -> ValidatedTable:
        return validate(table, schema, name=name, nan=nan_policy, extra=extra)  # type: ignore[arg-type]

    m, n, s = one(members, "members"), one(non_members, "non-members"), one(synthetic, "synthetic")
    return _Tables(m, n, s, None if population is None else one(population, "population", "error"))


def _shadow_stage(
    tables: _Tables,
    schema: Schema,
    out: Path,
    attacks: Sequence[str],
    config: ShadowConfig,
    seed: int,
    progress: Callable[[str], None] | None,
) -> Any:
    """The shadow generators' tables (:class:`~tabmem.attacks.shadows.ShadowSet`) when a shadow-model attack
    is requested, else ``None``."""
    shadow_attacks = [a for a in attacks if ATTACKS[a].needs_shadows]
    if not shadow_attacks:
        return None
    if tables.population is None or config.model is None:
        raise ParameterError(
            f"{', '.join(shadow_attacks)}: shadow-model attacks need {name_setting('population', '--population')} "
            f"(real rows that are not targets) and {name_setting('model', '--model')} (the released generator's model)"
        )
    design = config.design
    if design is None:
        offline_ok = all("offline" in ATTACKS[a].shadow_designs for a in shadow_attacks)
        design = "offline" if offline_ok else "online"
    check_choice("shadow_design", design, ("online", "offline"))
    from tabmem.runs.shadows import train_shadows

    m = tables.members
    targets = concat_validated([m, tables.non_members], name="targets")
    return train_shadows(
        targets,
        tables.population,
        schema,
        out,
        model=config.model,
        preset=config.preset,
        params=config.params,
        dataset=config.dataset,
        n_shadows=config.n_shadows,
        design=design,
        n_train=config.train_size or len(m),
        n_synthetic=len(tables.synthetic),
        seed=seed,
        executor=config.executor,
        jobs=config.jobs,
        threads=config.threads,
        address=config.address,
        overlap=config.overlap,
        progress=progress,
    )


def _delta(delta: float | None, claim: tuple[Any, Any], n_members: int) -> float:
    """δ of the ε lower bound: ``delta``, else the claimed δ, else 1/(10 n) for a DP claim, else 1e-5."""
    claimed_eps, claimed_delta = claim
    if delta is None:
        if claimed_delta is not None:
            delta = float(claimed_delta)
        else:
            delta = 1.0 / (10 * n_members) if claimed_eps is not None else 1e-5
    check_number("delta", delta, low=0.0, high=1.0, high_open=True)
    return delta


def _summary(
    report: AttackReport, shadow_set: Any, delta: float, confidence: float, seed: int, claim: tuple[Any, Any]
) -> AttackSummary:
    """``report.summary()`` with the shadows' plan (``_meta``) and the privacy headline (``_privacy``)."""
    return report.summary().with_run(
        shadows=shadow_set.meta if shadow_set is not None else None,
        privacy=PrivacyHeadline.from_dict(_privacy_headline(report, delta, confidence, seed, *claim)),
    )


def _write(
    out: Path,
    report: AttackReport,
    summary: AttackSummary,
    tables: _Tables,
    schema: Schema,
    run_dir: str | Path | None,
    intensity_k: int,
    distance: str,
) -> None:
    """summary.json, scores.csv, roc.csv, then risk.csv (:func:`risk_ledger`), each written atomically."""
    write_json(out / "summary.json", summary.to_dict())
    write_frame(out / "scores.csv", report.scores)
    write_frame(out / "roc.csv", report.roc())
    ledger = risk_ledger(
        report, tables.members, tables.synthetic, schema, run_dir=run_dir, intensity_k=intensity_k, distance=distance
    )
    write_frame(out / "risk.csv", ledger)


def _privacy_headline(
    report: AttackReport,
    delta: float,
    confidence: float,
    seed: int,
    claimed_eps: Any,
    claimed_delta: Any,
) -> dict[str, Any]:
    """The largest ε lower bound over the attacks, each at confidence ``1 - (1 - c)/k`` (Bonferroni over ``k``
    attacks), so that the maximum holds with probability ``confidence``."""
    y = report.scores["is_member"].to_numpy(bool)
    k = max(len(report.results), 1)
    adjusted = 1.0 - (1.0 - confidence) / k
    best: dict[str, Any] = {"epsilon_lower_bound": 0.0, "attack": None}
    for name in report.results:
        b = epsilon_lower_bound(report.scores[name].to_numpy(), y, delta=delta, confidence=adjusted, random_state=seed)
        if b["epsilon"] > best["epsilon_lower_bound"] or best["attack"] is None:
            best = {"epsilon_lower_bound": b["epsilon"], "attack": name}
    out = {
        "delta": delta,
        "confidence": confidence,
        "per_attack_confidence": adjusted,
        **best,
        "claimed_epsilon": claimed_eps,
        "claimed_delta": claimed_delta,
    }
    if claimed_eps is not None:
        out["exceeds_claim"] = bool(best["epsilon_lower_bound"] > float(claimed_eps))
    return out


def risk_ledger(
    report: AttackReport,
    members: Any,
    synthetic: Any,
    schema: Schema,
    *,
    run_dir: str | Path | None = None,
    intensity_k: int = 1,
    distance: str = DEFAULT_DISTANCE,
) -> pd.DataFrame:
    """Per-target risk (``report.risk()``) joined with each member's replica count, DynamicCut intensity,
    LevAtt distance and LiRA score; non-members have no replica count or intensity (empty cells)."""
    from tabmem.memorization.replicas import ReplicaDetector

    risk = report.risk()
    n_m = len(members)
    rows = risk["target_row"].to_numpy()
    is_m = rows < n_m
    # a missing or unseen category in a synthetic row matches no member's value: a mismatch, not an error
    detector = ReplicaDetector(distance, n_jobs=1, nan="match").fit(members, schema)
    counts = detector.score(synthetic, unseen="mismatch").record_counts
    risk.insert(1, "replica_count", pd.array(np.where(is_m, counts[np.minimum(rows, n_m - 1)], 0), dtype="Int64"))
    risk.loc[~is_m, "replica_count"] = pd.NA
    if run_dir is not None:
        intensity = _intensity(Path(run_dir), members, intensity_k)
        col = np.full(len(risk), np.nan)
        col[is_m] = intensity[rows[is_m]]
        risk.insert(2, "intensity", col)
    if "levatt" in risk.columns:
        risk["levatt_distance"] = -risk["levatt"]
    return risk


def _intensity(run_dir: Path, members: Any, k: int) -> np.ndarray:
    """DynamicCut intensity of every training record of a tracked run (``tabmem train --track-every`` or
    ``tabmem track``) whose training table is ``members``."""
    from tabmem.data.fingerprint import table_fingerprint
    from tabmem.generators import load_generator
    from tabmem.memorization.dynamics import TrainingDynamics

    if not (run_dir / "tracking" / "tracker.json").is_file():
        raise TabmemError(
            f"{name_setting('run_dir', '--run')}: {str(run_dir)!r} holds no tracking (train with "
            f"{name_setting('track_every', '--track-every')} to get intensities)"
        )
    config = read_json(run_dir / "config.json", require=("schema",))
    with reading(run_dir / "config.json"):
        run_schema = Schema.from_dict(config["schema"])
    clean = validate(members, run_schema, name="members", extra="ignore").data
    # the tracked table's identity: tracker.json's (a `tabmem track` run has no model), else the model's
    tracked = read_json(run_dir / "tracking" / "tracker.json", require=("n_train",)).get("fingerprint")
    if tracked is None:
        tracked = getattr(load_generator(run_dir), "fingerprint_", None)
    if tracked != table_fingerprint(clean):
        raise TabmemError(
            f"{name_setting('run_dir', '--run')}: {str(run_dir)!r} was trained on another table than "
            f"{name_setting('members', '--members')} (fingerprints differ; the members "
            "must be the run's training rows in the same order)"
        )
    dyn = TrainingDynamics.load(run_dir / "tracking")
    if dyn.n_records != len(clean):
        raise TabmemError(
            f"{name_setting('run_dir', '--run')}: the tracked run has {dyn.n_records} training records, "
            f"{name_setting('members', '--members')} {len(clean)}"
        )
    return dyn.intensity_score(k)
