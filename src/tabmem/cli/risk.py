"""``tabmem risk``: the three WP29 anonymisation risks of a synthetic table (singling out, linkability, inference).

Each risk is anonymeter's: an attack run with the synthetic table against the training rows, set
against the same attack against real control rows never trained on (what the synthetic table
reveals about anyone) and a random-guess baseline; risk = (attack - control) / (1 - control), with
its interval. Writes ``OUT/summary.json`` and ``OUT/inference.csv`` (:func:`tabmem.runs.risk.risk_to_dir`);
prints rates only, never a record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tabmem.cli._options import (
    column_names,
    count_option,
    echo_schema,
    echo_warning,
    file_option,
    infer_schema,
    out_dir_option,
    prepare_out_dir,
    read_user_table,
    schema_options,
    seed_option,
)
from tabmem.errors import TabmemError
from tabmem.risk import N_ATTACKS
from tabmem.runs.protocol import RISK_RUN

RISK_LABELS = {
    "singling_out_univariate": "singling out, univariate",
    "singling_out_multivariate": "singling out, multivariate",
    "linkability": "linkability",
}


def aux_columns(values: tuple[str, ...] | list[str]) -> list[list[str]] | None:
    """The two column sets of ``--aux`` (given twice, each comma-separated), or None when not given."""
    if not values:
        return None
    if len(values) != 2:
        raise TabmemError(
            f"--aux: give it twice, once per column set that linkability links (--aux a,b --aux c,d), "
            f"not {'once' if len(values) == 1 else f'{len(values)} times'}"
        )
    sets = [column_names(v) for v in values]
    for i, cols in enumerate(sets):
        if not cols:
            raise TabmemError(f"--aux: column set {i + 1} ({values[i]!r}) names no column")
    both = sorted(set(sets[0]) & set(sets[1]))
    if both:
        raise TabmemError(f"--aux: column {both[0]!r} is in both column sets; linkability links two disjoint sets")
    return sets


def _check_columns(option: str, names: list[str], columns: tuple[str, ...]) -> None:
    twice = [c for c in dict.fromkeys(names) if names.count(c) > 1]
    if twice:
        raise TabmemError(f"{option}: column {twice[0]!r} is named twice")
    for name in names:
        if name not in columns:
            shown = ", ".join(columns[:20]) + (f" and {len(columns) - 20:,} more" if len(columns) > 20 else "")
            raise TabmemError(f"{option}: column {name!r} is not in the training table (its columns: {shown})")


def _fmt(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if v != v else f"{v:.3f}"


def _ci(ci: Any) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or "n/a" in (_fmt(ci[0]), _fmt(ci[1])):
        return "n/a"
    return f"{_fmt(ci[0])}-{_fmt(ci[1])}"  # clipped to [0, 1]: never negative


def risk_rows(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, estimate) per reported risk of a risk ``summary.json`` object: the three risks, then one per secret."""
    rows = [(label, doc[key]) for key, label in RISK_LABELS.items() if isinstance(doc.get(key), dict)]
    per_column = (doc.get("inference") or {}).get("per_column") or {}
    rows += [(f"inference: {col}", est) for col, est in per_column.items()]
    return rows


def summary_table(doc: dict[str, Any]) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    conf = doc.get("confidence")
    ci_head = f"{round(100 * float(conf))}% CI" if isinstance(conf, (int, float)) else "CI"
    n = doc.get("n_attacks")
    title = "WP29 anonymisation risks" + (f" ({n:,} attacks each)" if isinstance(n, int) else "")
    table = Table(title=title, show_header=True, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("risk", "value", ci_head, "attack", "control", "baseline"):
        table.add_column(col, justify="left" if col == "risk" else "right", no_wrap=col != "risk")
    for label, est in risk_rows(doc):
        table.add_row(
            Text(label),
            _fmt(est.get("risk")),
            _ci(est.get("risk_ci")),
            _fmt(est.get("attack_rate")),
            _fmt(est.get("control_rate")),
            _fmt(est.get("baseline_rate")),
        )
    return table


@click.command("risk")
@file_option("--train", "train_path", "Training table (CSV or Parquet): the rows the generator saw.", required=True)
@file_option("--synthetic", "synthetic_path", "Synthetic table.", required=True)
@file_option(
    "--control", "control_path", "Real rows never trained on (same population as --train): the control.", required=True
)
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    metavar="COL",
    help="Column an attacker infers (repeatable or comma-separated; default: chosen, printed under 'defaults').",
)
@click.option(
    "--aux",
    multiple=True,
    metavar="COLS",
    help="Linkability: give it twice, each a comma-separated column set (--aux a,b --aux c,d); default: chosen.",
)
@count_option("--n-attacks", "Attacks per risk (anonymeter's n_attacks).", default=N_ATTACKS)
@schema_options
@seed_option("Seed of the attacks (same seed, same risks).")
@out_dir_option("Output directory (summary.json, inference.csv).", path_type=None)
def risk(
    train_path: str,
    synthetic_path: str,
    control_path: str,
    secrets: tuple[str, ...],
    aux: tuple[str, ...],
    n_attacks: int,
    categorical: tuple[str, ...],
    numerical: tuple[str, ...],
    target: str | None,
    encoding: str,
    seed: int,
    out_dir: str,
) -> None:
    """Singling out, linkability and inference risks of SYNTHETIC (anonymeter's WP29 risks, with intervals).

    Each attack's success on the training rows is set against its success on the control rows and
    against random guessing; writes OUT/summary.json and OUT/inference.csv (per secret column).
    """
    from rich.console import Console

    from tabmem.runs.risk import risk_to_dir

    aux_sets = aux_columns(aux)
    secret_cols = column_names(secrets) or None
    out = prepare_out_dir(out_dir, kind=RISK_RUN)
    train = read_user_table(train_path, encoding=encoding, option="--train")
    synthetic = read_user_table(synthetic_path, encoding=encoding, option="--synthetic")
    control = read_user_table(control_path, encoding=encoding, option="--control")
    for table, path, what in ((train, train_path, "training"), (synthetic, synthetic_path, "synthetic"),
                              (control, control_path, "control")):  # fmt: skip
        if table.shape[0] == 0:
            raise TabmemError(f"{path}: the {what} table is empty")
    schema = infer_schema(train, categorical, numerical, target, name=Path(train_path).stem)
    echo_schema(schema, train_path)
    _check_columns("--secret", secret_cols or [], schema.columns)
    for cols in aux_sets or []:
        _check_columns("--aux", cols, schema.columns)
    summary = risk_to_dir(
        train, synthetic, control, schema, out, secrets=secret_cols, aux=aux_sets, n_attacks=n_attacks, seed=seed
    )
    doc = summary.to_dict()
    console = Console()
    console.print(summary_table(doc))
    for key, why in (doc.get("chosen") or {}).items():
        console.print(f"defaults: {key}: {why}", markup=False, highlight=False)
    for message in doc.get("warnings") or []:
        echo_warning(message)
    seconds = doc.get("seconds")
    took = f"{float(seconds):.1f} s. " if isinstance(seconds, (int, float)) else ""
    console.print(f"[dim]{took}Outputs: {out}/summary.json, inference.csv (one row per secret column).[/dim]")
