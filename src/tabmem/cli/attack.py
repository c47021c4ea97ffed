"""``tabmem attack``: membership inference on a synthetic table.

No-box attacks (LevAtt, DCR, MC, density, DOMIAS) need only the tables; shadow-model attacks
(``lira``, ``lira_offline``, ``lira_levatt``, ``lira_domias``, ``groundhog``) also need
``--population`` and ``--model``: shadow generators are trained under ``--out/shadows/`` (cached,
resumable). A thin shell over :func:`tabmem.runs.attack.attack_to_dir`, which writes
``summary.json``, ``scores.csv``, ``risk.csv`` (per-record evidence, strongest first) and
``roc.csv`` (every attack's ROC corners) to
``--out``; the terminal shows aggregate metrics only, never a record's values.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tabmem.cli._options import (
    address_option,
    choice_option,
    column_names,
    count_option,
    dir_option,
    distance_option,
    echo_schema,
    echo_threads,
    echo_warning,
    epochs_option,
    executor_option,
    file_option,
    generator_params,
    infer_schema,
    memory_gb_option,
    model_option,
    n_jobs_option,
    out_dir_option,
    params_option,
    prepare_out_dir,
    preset_option,
    read_user_table,
    schema_options,
    search_device_option,
    seed_option,
    shards_option,
    threads_option,
)
from tabmem.errors import TabmemError
from tabmem.runs.protocol import ATTACK_RUN

if TYPE_CHECKING:
    import pandas as pd

    from tabmem.attacks.summary import AttackSummary, PrivacyHeadline
    from tabmem.runs.attack import ShadowConfig


@click.command("attack")
@file_option("--members", "members_path", "Training rows (CSV/Parquet).", required=True)
@file_option("--non-members", "non_members_path", "Held-out rows.", required=True)
@file_option("--synthetic", "synthetic_path", "Synthetic table.", required=True)
@file_option("--reference", "reference_path", "Real non-member rows for DOMIAS.")
@click.option("--attacks", default="levatt,dcr,mc,density,domias", show_default=True, help="Comma-separated attacks.")
@click.option(
    "--serializer", default="canonical", show_default=True, help="Row format of LevAtt (canonical, paper_sft, ...)."
)
@distance_option("Distance of DCR and MC.", default="l2")
@schema_options
@choice_option("--nan", ["error", "match"], "Missing values.", default="error")
@click.option("--ignore-extra", is_flag=True, help="Drop columns that are not in the members table.")
@count_option("--n-bootstrap", "Bootstrap resamples of the AUC CI (0: no CI).", default=200, min=0)
@seed_option("Seed of the bootstrap, the shadows and the ε bound's split.")
@n_jobs_option("Workers of the neighbour searches (default: the CPUs available; -1: all).")
@search_device_option(
    "Where the no-box attacks' exact searches compute their dense blocks (LevAtt's bag bounds, the nearest "
    "neighbours of DCR and MC): cpu (numpy) or cuda / cuda:N (torch; the same results, docs/neighbors.md)."
)
@file_option(
    "--population",
    "population_path",
    "Real rows from the same population, none of them a target: shadow training data (and DOMIAS' default reference).",
)
@model_option("Generator of the shadows (as the released one: tabddpm, ctgan, tvae, llm).", default=None)
@preset_option("Preset of the shadow generator; 'none' for the class defaults.")
@epochs_option("Epochs of the shadows (default: the preset's).")
@params_option("Shadow generator parameter (JSON values), repeatable.")
@count_option("--n-shadows", "Shadow generators.", default=16)
@choice_option(
    "--shadow-design",
    ["online", "offline"],
    "online: every target in half of the shadows; offline: shadows on population rows only (default: online "
    "unless every shadow attack asked works offline).",
)
@count_option("--shadow-train-size", "Training rows per shadow (default: as many as the members).", min=2)
@executor_option(
    "Where the shadows train and large neighbour searches run (DCR's): local worker processes, or Ray "
    "(a local instance starts if none runs)."
)
@n_jobs_option(
    "Shadows trained (local: search shards searched) at once (-1: one per available CPU).", default=1, flag="--jobs"
)
@address_option("Ray cluster the shadows train on (auto, or ray://host:port); default: start a local one.")
@shards_option()
@memory_gb_option(
    "Working memory of LevAtt's edit-distance search and the density attacks' KDE blocks, all workers "
    "together (GiB; default: 256 MiB a search worker; KDE blocks never exceed 4M cells, about 100 MB)."
)
@threads_option("BLAS threads of the density estimates; torch threads per shadow (shared among --jobs)")
@choice_option(
    "--population-overlap",
    ["error", "drop"],
    "Population rows equal to a target: refuse them, or drop them.",
    default="error",
)
@dir_option(
    "--run",
    "run_dir",
    "Tracked `tabmem train` (or `tabmem track`) directory of the released generator: adds DynamicCut intensities "
    "to risk.csv.",
    default=None,
)
@click.option(
    "--delta",
    type=click.FloatRange(0, 1, max_open=True),
    default=None,
    help="δ of the ε lower bound (default: the generator's DP δ, else 1e-5).",
)
@click.option(
    "--claimed-epsilon",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="ε the generator claims (DP); default: --param dp_epsilon. The audited lower bound is shown next to it.",
)
@click.option(
    "--claimed-delta",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="δ of the claim (default: --param dp_delta, else the generator's default).",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence of the exact intervals and of the ε lower bound.",
)
@out_dir_option(path_type=None)
def attack(
    attacks: str,
    serializer: str,
    distance: str,
    nan: str,
    ignore_extra: bool,
    n_bootstrap: int,
    seed: int,
    n_jobs: int | None,
    threads: int | None,
    run_dir: str | None,
    delta: float | None,
    claimed_epsilon: float | None,
    claimed_delta: float | None,
    confidence: float,
    out_dir: str,
    device: str,
    memory_gb: float | None,
    **options: Any,
) -> None:
    """Membership inference: can the synthetic table (and shadow generators) tell who was in the training data?"""
    from rich.console import Console

    from tabmem._checks import limit_threads, resolve_n_jobs, threads_per_worker
    from tabmem.cli.audit import progress_bar
    from tabmem.neighbors.device import use_device
    from tabmem.runs.attack import attack_to_dir
    from tabmem.runs.pool import check_pool

    check_pool(options["executor"], options["address"])
    names = _attack_names(attacks, serializer)
    out = prepare_out_dir(out_dir, kind=ATTACK_RUN)
    members, non_members, synthetic, reference, population = _read_tables(**options)
    options["jobs"] = resolve_n_jobs(options["jobs"], "--jobs")
    shadows = _shadow_config(threads=threads, **options)
    schema = infer_schema(members, options["categorical"], options["numerical"], options["target"])
    echo_schema(schema, options["members_path"])
    workers = resolve_n_jobs(n_jobs, "--n-jobs")
    density_threads = threads or threads_per_worker(1)
    echo_threads(
        workers,
        1,
        f"each in neighbour searches, {density_threads} thread{'s' if density_threads != 1 else ''} for densities",
    )
    console = Console()
    with limit_threads(density_threads):
        summary = use_device(device)(attack_to_dir)(  # the no-box attacks' searches on --device
            members,
            non_members,
            synthetic,
            schema,
            out,
            attacks=names,
            attack_params=_attack_params(distance, serializer, workers),
            reference=reference,
            population=population,
            shadows=shadows,
            run_dir=run_dir,
            nan=nan,
            extra="ignore" if ignore_extra else "error",
            n_bootstrap=n_bootstrap,
            delta=delta,
            confidence=confidence,
            claimed_epsilon=claimed_epsilon,
            claimed_delta=claimed_delta,
            seed=seed,
            progress=lambda line: console.print(f"[dim]{line}[/dim]"),
            shards=options["shards"],
            memory_budget=None if memory_gb is None else int(memory_gb * 2**30),
            search_progress_bar=lambda rows, n: progress_bar(console, rows, n, "LevAtt edit distances"),
        )
    _print_summary(console, summary, out)


def _attack_names(attacks: str, serializer: str) -> list[str]:
    """The --attacks list, checked (and --serializer when an attack takes it)."""
    from tabmem.attacks import ATTACKS, check_attack_names
    from tabmem.data.serialization import SERIALIZERS

    names = check_attack_names(column_names(attacks), "--attacks")
    takes_serializer = any("serializer" in ATTACKS[a].run_options + ATTACKS[a].statistic_options for a in names)
    if takes_serializer and serializer not in SERIALIZERS.names():
        raise TabmemError(
            f"--serializer: unknown serializer {serializer!r}; available: {', '.join(SERIALIZERS.names())}"
        )
    return names


def _read_tables(
    *,
    members_path: str,
    non_members_path: str,
    synthetic_path: str,
    reference_path: str | None,
    population_path: str | None,
    encoding: str,
    **_: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None]:
    """Members, non-members, synthetic, reference and population tables (the last two when given)."""

    def read(path: str | None, option: str) -> pd.DataFrame | None:
        return read_user_table(path, encoding=encoding, option=option) if path else None

    return (
        read(members_path, "--members"),
        read(non_members_path, "--non-members"),
        read(synthetic_path, "--synthetic"),
        read(reference_path, "--reference"),
        read(population_path, "--population"),
    )  # type: ignore[return-value]


def _shadow_config(
    *,
    model: str | None,
    preset: str,
    epochs: int | None,
    params: tuple[str, ...],
    n_shadows: int,
    shadow_design: str | None,
    shadow_train_size: int | None,
    executor: str,
    jobs: int,
    address: str | None,
    threads: int | None,
    population_overlap: str,
    **_: Any,
) -> ShadowConfig:
    """The shadow generators' settings: --model, --preset, --epochs and --param as the released generator."""
    from tabmem._checks import threads_per_worker
    from tabmem.runs.attack import ShadowConfig

    return ShadowConfig(
        model=model,
        preset=preset,
        params=generator_params(params, epochs=epochs),
        n_shadows=n_shadows,
        design=shadow_design,
        train_size=shadow_train_size,
        executor=executor,
        jobs=jobs,
        threads=threads or threads_per_worker(jobs),
        address=address,
        overlap=population_overlap,
    )


def _attack_params(distance: str, serializer: str, workers: int) -> dict[str, dict[str, Any]]:
    """Per-attack parameters: each attack takes the run-wide options its class lists (run_options, statistic_options)."""
    from tabmem.attacks import ATTACKS

    options = {"serializer": serializer, "distance": distance, "n_jobs": workers}
    return {a.name: p for a in ATTACKS.in_order() if (p := a.run_params(options))}


def _print_summary(console: Any, summary: AttackSummary, out: Path) -> None:
    """The per-attack table, the privacy line, the resolution note, skipped attacks, warnings, the outputs."""
    console.print(_results_table(summary))
    priv = _privacy_line(summary.privacy) if summary.privacy is not None else ""
    if priv:
        console.print(priv)
    meta = summary.meta
    resolved = meta.min_resolved_fpr or 0.0
    if resolved:
        console.print(
            f"smallest FPR that {meta.n_non_members} non-member(s) resolve: {resolved:.4g}"
            + (" (* = below it: interpolated towards TPR@FPR=0, not measured)" if resolved > 0.01 else "")
        )
    for name, why in meta.skipped.items():
        console.print(f"skipped {name}: {why}")
    for message in meta.warnings:
        echo_warning(message)
    if meta.n_member_rows_also_in_non_members:
        echo_warning(f"{meta.n_member_rows_also_in_non_members} member row(s) also appear among the non-members")
    console.print(
        f"wrote {out / 'summary.json'}, {out / 'scores.csv'}, {out / 'risk.csv'} (records by strongest evidence) "
        f"and {out / 'roc.csv'}"
    )


def _results_table(summary: AttackSummary) -> Any:
    """One row per attack: AUC with its interval, TPR at FPR 0.01 and 0.1, MIDST's TPR, the ε lower bound."""
    from rich.table import Table

    table = Table(title="Membership inference (higher AUC = more leakage; 0.5 = chance)")
    for col in ("attack", "AUC", "95% CI", "TPR@0.01", "TPR@0.1", "MIDST TPR@0.1 [exact CI]", "ε lower bound"):
        table.add_column(col)
    resolved = summary.meta.min_resolved_fpr or 0.0
    for name, r in summary.attacks.items():
        t, ci = r.tpr_at_fpr, r.auc_ci
        midst = (r.midst_tpr_at_fpr or {})["0.1"]
        table.add_row(
            name,
            f"{r.auc:.3f}",
            "n/a" if ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
            *(f"{t[f]:.3f}" + ("*" if 0 < float(f) < resolved else "") for f in ("0.01", "0.1")),
            f"{midst['tpr']:.3f} [{midst['tpr_ci'][0]:.3f}, {midst['tpr_ci'][1]:.3f}]",
            f"{(r.epsilon_lower_bound or {})['epsilon']:.2f}",
        )
    return table


def _privacy_line(p: PrivacyHeadline) -> str:
    """One line: the audited ε lower bound (best attack), next to the claimed ε when there is one."""
    if p.attack is None:
        return ""
    line = (
        f"empirical ε lower bound {p.epsilon_lower_bound:.2f} at δ={p.delta:.2g} ({p.attack}; holds with "
        f"probability {p.confidence:.2f} over all attacks)"
    )
    if p.claimed_epsilon is not None:
        verdict = "EXCEEDS the claim: the DP training is broken" if p.exceeds_claim else "consistent with the claim"
        line += f"; claimed ε = {p.claimed_epsilon}: {verdict}"
    return line
