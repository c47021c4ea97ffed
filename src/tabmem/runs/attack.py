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

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_fraction, check_number, check_positive_int
from tabmem._io import read_json, write_frame, write_json
from tabmem.attacks.auditing import epsilon_lower_bound
from tabmem.attacks.base import ATTACKS, check_attack_names
from tabmem.attacks.runner import DEFAULT_ATTACKS, AttackReport, run_attacks
from tabmem.attacks.summary import AttackSummary, PrivacyHeadline
from tabmem.data.schema import Schema, concat_validated, validate
from tabmem.errors import ParameterError, TabmemError

__all__ = ["attack_to_dir", "risk_ledger"]


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
    model: str | None = None,
    preset: str | None = "small",
    params: dict[str, Any] | None = None,
    dataset: str | None = None,
    n_shadows: int = 16,
    shadow_design: str | None = None,
    shadow_train_size: int | None = None,
    executor: str = "local",
    jobs: int = 1,
    threads: int = 1,
    address: str | None = None,
    population_overlap: str = "error",
    run_dir: str | Path | None = None,
    intensity_k: int = 1,
    replica_distance: str = "fang2024",
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
) -> AttackSummary:
    """Run ``attacks`` on (members, non-members, synthetic) into ``out_dir`` (layout in the module docstring).

    Shadow-model attacks need ``population`` (real rows, none of them a target) and ``model``
    (a registered generator, with ``preset``/``params``/``dataset`` as the released generator was
    trained); ``n_shadows`` shadows train on ``shadow_train_size`` rows each (default: as many as
    the members) through ``executor`` (``"local"`` or ``"ray"``, :func:`~tabmem.runs.pool.run_pool`;
    ``address``: a Ray cluster to join) with ``jobs`` workers of ``threads`` torch threads. ``shadow_design`` defaults to ``"online"`` unless every requested
    shadow attack works offline. ``delta`` defaults to the generator's DP delta when it has one,
    else ``1e-5``. ``claimed_epsilon``/``claimed_delta`` state a DP claim of a generator that tabmem
    did not train (default: ``params``' ``dp_epsilon``/``dp_delta``). ``run_dir`` is the ``tabmem train`` directory of the released generator, when
    it was tracked: its records' DynamicCut intensity goes into ``risk.csv``. Returns the
    :class:`~tabmem.attacks.summary.AttackSummary` (``.to_dict()`` is what ``summary.json`` holds); ``on_report`` receives the :class:`AttackReport` (per-record scores).
    """
    attacks = check_attack_names(attacks)
    check_positive_int("jobs", jobs)
    check_fraction("confidence", confidence)
    params = dict(params or {})
    claimed_eps = claimed_epsilon if claimed_epsilon is not None else params.get("dp_epsilon")
    claimed_delta = claimed_delta if claimed_delta is not None else params.get("dp_delta")
    if claimed_eps is not None:
        check_number("claimed epsilon", claimed_eps, low=0.0, low_open=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    nan_policy = "match" if nan == "match" else "error"
    m = validate(members, schema, name="members", nan=nan_policy, extra=extra)  # type: ignore[arg-type]
    n = validate(non_members, schema, name="non-members", nan=nan_policy, extra=extra)  # type: ignore[arg-type]
    s = validate(synthetic, schema, name="synthetic", nan=nan_policy, extra=extra)  # type: ignore[arg-type]
    shadow_attacks = [a for a in attacks if ATTACKS[a].needs_shadows]
    shadows = None
    pop = None
    if population is not None:
        pop = validate(population, schema, name="population", nan="error", extra=extra)  # type: ignore[arg-type]
    if shadow_attacks:
        if pop is None or model is None:
            raise ParameterError(
                f"{', '.join(shadow_attacks)}: shadow-model attacks need --population (real rows that are not targets) "
                "and --model (the released generator's model)"
            )
        if shadow_design is None:
            offline_ok = all("offline" in ATTACKS[a].shadow_designs for a in shadow_attacks)
            shadow_design = "offline" if offline_ok else "online"
        check_choice("shadow_design", shadow_design, ("online", "offline"))
        from tabmem.runs.shadows import train_shadows

        targets = concat_validated([m, n], name="targets")
        shadows = train_shadows(
            targets,
            pop,
            schema,
            out / "shadows",
            model=model,
            preset=preset,
            params=params,
            dataset=dataset,
            n_shadows=n_shadows,
            design=shadow_design,
            n_train=shadow_train_size or len(m),
            n_synthetic=len(s),
            seed=seed,
            executor=executor,
            jobs=jobs,
            threads=threads,
            address=address,
            overlap=population_overlap,
            progress=progress,
        )
    if delta is None:
        delta = (
            float(claimed_delta)
            if claimed_delta is not None
            else (1.0 / (10 * len(m)) if claimed_eps is not None else 1e-5)
        )
    check_number("delta", delta, low=0.0, high=1.0, high_open=True)
    if reference is None and pop is not None:
        reference = pop  # type: ignore[assignment]
    report = run_attacks(
        m,
        n,
        s,
        schema,
        reference=reference,
        attacks=attacks,
        attack_params=attack_params,
        nan=nan,
        extra=extra,
        n_bootstrap=n_bootstrap,
        random_state=seed,
        shadows=shadows,
        delta=delta,
        confidence=confidence,
    )
    if on_report is not None:
        on_report(report)
    summary = report.summary().with_run(
        shadows=shadows.meta if shadows is not None else None,
        privacy=PrivacyHeadline.from_dict(
            _privacy_headline(report, delta, confidence, seed, claimed_eps, claimed_delta)
        ),
    )
    write_json(out / "summary.json", summary.to_dict())
    write_frame(out / "scores.csv", report.scores)
    write_frame(out / "roc.csv", report.roc())
    write_frame(
        out / "risk.csv",
        risk_ledger(report, m, s, schema, run_dir=run_dir, intensity_k=intensity_k, distance=replica_distance),
    )
    return summary


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
    distance: str = "fang2024",
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
    """DynamicCut intensity of every training record of a tracked run whose training table is ``members``."""
    from tabmem.data.fingerprint import table_fingerprint
    from tabmem.generators import load_generator
    from tabmem.memorization.dynamics import TrainingDynamics

    if not (run_dir / "tracking" / "tracker.json").is_file():
        raise TabmemError(f"--run: {str(run_dir)!r} holds no tracking (train with --track-every to get intensities)")
    gen = load_generator(run_dir)
    run_schema = Schema.from_dict(read_json(run_dir / "config.json")["schema"])
    clean = validate(members, run_schema, name="members", extra="ignore").data
    if getattr(gen, "fingerprint_", None) != table_fingerprint(clean):
        raise TabmemError(
            f"--run: {str(run_dir)!r} was trained on another table than --members (fingerprints differ; the members "
            "must be the run's training rows in the same order)"
        )
    dyn = TrainingDynamics.load(run_dir / "tracking")
    if dyn.n_records != len(clean):
        raise TabmemError(f"--run: the tracked run has {dyn.n_records} training records, --members {len(clean)}")
    return dyn.intensity_score(k)
