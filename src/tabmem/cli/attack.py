"""``tabmem attack``: no-box membership inference on a synthetic table (LevAtt, DCR, MC, density, DOMIAS).

Writes ``summary.json``, ``scores.csv``, ``risk.csv`` (per-record worst case: every attack's rank,
records with the strongest evidence first) and ``roc.csv`` (every attack's ROC corners) to
``--out``; the terminal shows aggregate metrics only, never a record's values.
"""

from __future__ import annotations

import click

from tabmem.cli._options import NJOBS, column_names, prepare_out_dir, read_user_table, schema_options, seed_option
from tabmem.errors import TabmemError


@click.command("attack")
@click.option(
    "--members", "members_path", required=True, type=click.Path(dir_okay=False), help="Training rows (CSV/Parquet)."
)
@click.option(
    "--non-members", "non_members_path", required=True, type=click.Path(dir_okay=False), help="Held-out rows."
)
@click.option("--synthetic", "synthetic_path", required=True, type=click.Path(dir_okay=False), help="Synthetic table.")
@click.option("--reference", "reference_path", type=click.Path(dir_okay=False), help="Real non-member rows for DOMIAS.")
@click.option("--attacks", default="levatt,dcr,mc,density,domias", show_default=True, help="Comma-separated attacks.")
@click.option(
    "--serializer", default="canonical", show_default=True, help="Row format of LevAtt (canonical, paper_sft, ...)."
)
@click.option("--distance", default="l2", show_default=True, help="Distance of DCR and MC (l2, gower, fang2024).")
@schema_options
@click.option(
    "--nan", type=click.Choice(["error", "match"]), default="error", show_default=True, help="Missing values."
)
@click.option("--ignore-extra", is_flag=True, help="Drop columns that are not in the members table.")
@click.option(
    "--n-bootstrap",
    default=200,
    show_default=True,
    type=click.IntRange(min=0),
    help="Bootstrap resamples of the AUC CI (0: no CI).",
)
@seed_option("Seed of the bootstrap.")
@click.option("--n-jobs", default=2, show_default=True, type=NJOBS, help="Workers of the neighbour searches (-1: all).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
def attack(
    members_path: str,
    non_members_path: str,
    synthetic_path: str,
    reference_path: str | None,
    attacks: str,
    serializer: str,
    distance: str,
    categorical: tuple[str, ...],
    numerical: tuple[str, ...],
    target: str | None,
    encoding: str,
    nan: str,
    ignore_extra: bool,
    n_bootstrap: int,
    seed: int,
    n_jobs: int,
    out_dir: str,
) -> None:
    """Membership inference with only the synthetic table: can it tell who was in the training data?"""
    from rich.console import Console
    from rich.table import Table

    from tabmem.attacks import ATTACKS
    from tabmem.attacks.runner import run_attacks
    from tabmem.data.schema import Schema

    names = column_names(attacks)
    if not names:
        raise TabmemError("--attacks: give at least one attack name")
    unknown = [a for a in names if a not in ATTACKS]
    if unknown:
        raise TabmemError(f"--attacks: unknown attack(s) {unknown}; available: {', '.join(ATTACKS.names())}")
    out = prepare_out_dir(out_dir)
    members = read_user_table(members_path, encoding=encoding, option="--members")
    non_members = read_user_table(non_members_path, encoding=encoding, option="--non-members")
    synthetic = read_user_table(synthetic_path, encoding=encoding, option="--synthetic")
    reference = read_user_table(reference_path, encoding=encoding, option="--reference") if reference_path else None
    schema = Schema.infer(
        members, categorical=column_names(categorical), numerical=column_names(numerical), target=target or None
    )
    params = {
        "levatt": {"serializer": serializer, "n_jobs": n_jobs},
        "dcr": {"distance": distance, "n_jobs": n_jobs},
        "mc": {"distance": distance, "n_jobs": n_jobs},
    }
    report = run_attacks(
        members,
        non_members,
        synthetic,
        schema,
        reference=reference,
        attacks=names,
        attack_params=params,
        nan=nan,
        extra="ignore" if ignore_extra else "error",
        n_bootstrap=n_bootstrap,
        random_state=seed,
    )
    report.save(out)
    table = Table(title="Membership inference (higher AUC = more leakage; 0.5 = chance)")
    for col in ("attack", "AUC", "95% CI", "TPR@FPR=0", "TPR@0.001", "TPR@0.01", "TPR@0.1"):
        table.add_column(col)
    for name, r in report.results.items():
        t = r.tpr_at_fpr
        table.add_row(
            name,
            f"{r.auc:.3f}",
            f"[{r.auc_ci[0]:.3f}, {r.auc_ci[1]:.3f}]",
            *(f"{t[f]:.3f}" for f in (0.0, 0.001, 0.01, 0.1)),
        )
    console = Console()
    console.print(table)
    for name, why in report.skipped.items():
        console.print(f"skipped {name}: {why}")
    if report.n_overlap:
        console.print(f"warning: {report.n_overlap} member row(s) also appear among the non-members")
    console.print(
        f"wrote {out / 'summary.json'}, {out / 'scores.csv'}, {out / 'risk.csv'} (records by strongest evidence) "
        f"and {out / 'roc.csv'}"
    )
