"""``tabmem demo``: the whole job on the diabetes table bundled with scikit-learn, as a study.

It writes the demo study (:mod:`tabmem.studies.demo`: a leaky positive control, TabDDPM with
memorization tracking, and TabDDPM after DynamicCut; each cell audited against the holdout
baseline, attacked and scored for quality) into ``--out``, runs it with the ``tabmem run``
machinery (resumable: a second run reuses finished cells), writes ``--out/report.html`` and
prints the numbers that matter with their units, the Top vs Non-top findings that hold, a
verdict in plain words and the commands to run on your own table. No training record's values
are printed.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tabmem._io import write_json
from tabmem.cli._options import distance_option, epochs_option, n_jobs_option, prepare_out_dir, seed_option
from tabmem.errors import TabmemError
from tabmem.runs.protocol import STUDY_RUN


def _attack_name(name: str | None) -> str:
    """An attack's name in the demo's table (its class's ``short_name``); "-" for none."""
    if not name:
        return "-"
    from tabmem.attacks import ATTACKS

    return ATTACKS[name].terse_label() if name in ATTACKS else name


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="tabmem-demo", show_default=True)
@distance_option()
@epochs_option("TabDDPM training epochs (default: 300; fewer run faster and memorize less).")
@click.option("--no-generator", is_flag=True, help="Only the positive control: no TabDDPM and no DynamicCut.")
@click.option("--no-quality", is_flag=True, help="Skip the quality metrics.")
@n_jobs_option("Cells run in parallel (default: the available CPUs; -1: all).", flag="--jobs")
@seed_option("Seed of the study's cells (training, sampling, bootstraps).")
def demo(out, distance, epochs, no_generator, no_quality, jobs, seed) -> None:
    """Find, measure and remove memorization on the embedded diabetes dataset; writes a report."""
    from tabmem.studies.demo import DEMO_EPOCHS, DEMO_TRACK_EVERY, run_demo

    if importlib.util.find_spec("torch") is None:
        raise TabmemError("tabmem demo trains generators and needs torch: pip install 'tabmem[all]' torch==2.13.0")
    console = Console(highlight=False)
    t0 = time.perf_counter()
    out_dir = prepare_out_dir(out, kind=STUDY_RUN)
    epochs = epochs or DEMO_EPOCHS
    every = min(DEMO_TRACK_EVERY, epochs)
    console.print(
        f"[bold]tabmem demo[/bold]: diabetes (scikit-learn; 353 training rows, 89 held-out rows, 11 columns), "
        f"run as a study in {escape(str(out_dir))}/ (its file: {escape(str(out_dir / 'demo.toml'))}).\n"
        "  noisy-resample  a positive control, NOT a generative model: training rows drawn again, 30% exact "
        "copies, the rest jittered; it leaks by construction"
    )
    if not no_generator:
        console.print(
            f"  tabddpm         TabDDPM (small preset, {epochs} epochs), memorization of every training record "
            f"tracked every {every} epochs\n"
            "  dynamiccut-10   the same TabDDPM after DynamicCut: rank records by their memorization in the "
            "warm-up, remove the top 10%, retrain"
        )
    console.print(
        f"  every cell: replica audit ({distance}, d1/d2 < 1/3) next to the holdout baseline (the 89 real rows "
        "never trained on, scored the same way); attacks LevAtt, DCR, Monte Carlo, density (DOMIAS needs "
        "a reference set that 89 held-out rows cannot spare)" + ("" if no_quality else "; quality metrics")
    )
    console.rule("running the study")
    try:
        result = run_demo(
            out_dir,
            epochs=epochs,
            generator=not no_generator,
            quality=not no_quality,
            distance=distance,
            seed=seed,
            jobs=jobs,
            echo=lambda line: console.print(line, markup=False),
        )
    except KeyboardInterrupt:
        click.echo("interrupted: finished cells are kept; run tabmem demo again to resume", err=True)
        sys.exit(130)
    write_json(out_dir / "demo_summary.json", result.rows)
    console.print(headline_table(result.rows))
    console.print(units_note(result.rows), markup=False, style="dim")
    for cell in result.cells:
        if cell.axes.get("generator") == "noisy-resample":
            continue  # nothing is learned over epochs: one tracked epoch
        if cell.training is not None and cell.training.dynamics:
            print_dynamics(console, cell.name, cell.training.dynamics)
    console.rule("verdict")
    for line in verdict_lines(result.rows, result.cells):
        console.print(line, markup=False)
    console.print(
        f"\nReport (open it in a browser; it needs no network): {result.report}\n"
        f"Every number: {out_dir / 'results.parquet'} (tabmem.studies.store.load_results); the cells: {out_dir / 'cells'}/",
        markup=False,
    )
    console.print(
        "\n[bold]Run it on your own table[/bold] (train.csv: the generator's training rows; holdout.csv: real rows it never saw):"
    )
    for line in own_table_lines(out_dir / "demo.toml"):
        console.print(f"  {line}", markup=False)
    print_check(console, out_dir)
    console.print(f"Done in {time.perf_counter() - t0:.0f} s.")
    if result.outcome.failed:
        for name, cid, error in result.outcome.failed:
            click.echo(f"cell {name} ({cid}) failed: {error}", err=True)
        sys.exit(1)


def print_check(console: Any, out_dir: Path) -> None:
    """The release gate on the demo's output: what ``tabmem check OUT`` prints, and what its exit code means."""
    from tabmem.gate import load_policy
    from tabmem.gate.text import scorecard_lines
    from tabmem.report.decision import check_dirs

    console.rule("release check")
    console.print(f"$ tabmem check {shlex.quote(str(out_dir))}", markup=False)
    card = check_dirs([out_dir], load_policy("standard"))
    for line in scorecard_lines(card):
        console.print(line, markup=False, soft_wrap=True)  # as tabmem check prints them, unwrapped
    console.print(
        f"exit code {card.exit_code}: {'every rule passes' if card.passed else 'the gate is closed'} "
        "(the leaky control fails by construction; an unresolved rule needs more rows to be shown within its limit). "
        "In CI this step stops a release: docs/gate.md.",
        markup=False,
    )


def own_table_lines(study: Path) -> list[str]:
    """The commands that do the same on the user's files."""
    return [
        "tabmem audit --train train.csv --synthetic synthetic.csv --holdout holdout.csv --out audit/",
        "tabmem attack --members train.csv --non-members holdout.csv --synthetic synthetic.csv --out attack/",
        f'cp {shlex.quote(str(study))} mine.toml    # then its [[datasets]] entry: path = "train.csv"  test = "holdout.csv"  target = "y"',
        "tabmem run mine.toml --out runs/mine && tabmem report runs/mine",
        "tabmem check audit/ attack/    # exit 0: every rule of the standard policy passes (docs/gate.md)",
    ]


def _ci(ci: list[float] | None, fmt: str = "{:+.1f}") -> str:
    return "" if not ci else " [" + fmt.format(ci[0]) + ", " + fmt.format(ci[1]) + "]"


NAMES = {"noisy-resample": "noisy resample", "tabddpm": "TabDDPM", "dynamiccut-10": "DynamicCut 10%"}


def _name(row: dict[str, Any]) -> str:
    gen = NAMES.get(row["generator"], row["generator"])
    mit = row.get("mitigation")
    return gen if mit in (None, "none") else f"{gen} + {NAMES.get(mit, mit)}"


def headline_table(rows: list[dict[str, Any]]) -> Table:
    """One column per cell, one row per measure; every row names its unit."""
    real_rmse = next((r.get("mle_rmse_real") for r in rows if r.get("mle_rmse_real") is not None), None)
    no_copy = next((r.get("dcr_share_no_copy") for r in rows if r.get("dcr_share_no_copy") is not None), None)
    table = Table(title="Headline", header_style="bold", title_style="bold")
    table.add_column("measure")
    for r in rows:
        table.add_column(_name(r), justify="right")

    def add(label: str, fmt: Any) -> None:
        values = [fmt(r) for r in rows]
        if any(v not in ("", "-") for v in values):
            table.add_row(label, *values)

    def num(key: str, spec: str) -> Any:
        return lambda r: "-" if r.get(key) is None else format(r[key], spec)

    def ci(key: str, spec: str) -> Any:
        return lambda r: "" if not r.get(key) else f"{format(r[key][0], spec)} to {format(r[key][1], spec)}"

    add("replicas, %", num("memorization_pct", ".1f"))
    add("  95% CI", ci("memorization_ci_pct", ".1f"))
    add("holdout baseline, %", num("holdout_pct", ".1f"))
    add("excess, points", num("excess_points", "+.1f"))
    add("  95% CI", ci("excess_ci_points", "+.1f"))
    add("strongest attack", lambda r: _attack_name(r.get("attack")))
    add("  AUC (chance 0.5)", num("attack_auc", ".3f"))
    add("  95% CI", ci("attack_auc_ci", ".3f"))
    add("  TPR at FPR 0.1", num("attack_tpr_at_fpr_0.1", ".3f"))
    add("Shape (0-1)", num("shape", ".3f"))
    add("Trend (0-1)", num("trend", ".3f"))
    add("MLE RMSE" + ("" if real_rmse is None else f" (real {real_rmse:.1f})"), num("mle_rmse", ".1f"))
    add("DCR share" + ("" if no_copy is None else f" (no-copy {no_copy:.2f})"), num("dcr_share", ".3f"))
    return table


def units_note(rows: list[dict[str, Any]]) -> str:
    """What the headline's units mean (only those of the rows shown)."""
    text = (
        "replicas: % of the synthetic rows whose nearest training row is closer than 1/3 of the second nearest; "
        "holdout baseline: % of the real "
        "rows never trained on, scored the same way; excess: the difference, in percentage points. AUC and TPR: "
        "fractions from 0 to 1"
    )
    if any(r.get("shape") is not None for r in rows):
        text += (
            "; Shape, Trend: 0 to 1, 1 = the real table's column distributions and correlations; MLE RMSE: "
            "XGBoost trained on the table, tested on the real held-out rows, in the target's units (lower is "
            "better); DCR share: fraction of synthetic rows closer to a training row than to a held-out row"
        )
    return text + "."


def print_dynamics(console: Console, name: str, dyn: dict[str, Any]) -> None:
    """The Top vs Non-top findings that hold, in words with effect sizes, then those that did not."""
    from tabmem.report.tables import dynamics_sentences

    held, not_held = dynamics_sentences(dyn)
    epochs = dyn.get("tracked_epochs") or []
    console.print(
        f"\n[bold]Training dynamics[/bold] of {name} ({len(epochs)} tracked epochs; Top = the "
        f"{dyn.get('n_top', '?')} records with the most replicas at the end, vs the other {dyn.get('n_nontop', '?')}):"
    )
    if not held:
        console.print("  no Top vs Non-top difference holds (two-sided Mann-Whitney, p < 0.05)", markup=False)
    for line in held + not_held:
        console.print(f"  {line}", markup=False)


def verdict_lines(rows: list[dict[str, Any]], cells: list[Any]) -> list[str]:
    """Plain words per cell (excess interval above 0; the strongest attack's AUC interval above 0.5, corrected
    for choosing it), each with the standard policy's badge."""
    from tabmem.report.verdict import cell_verdict

    verdicts = {c.name: cell_verdict(c) for c in cells}
    badges = {name: v.badge for name, v in verdicts.items()}
    lines = []
    plain = next((r for r in rows if r["generator"] == "tabddpm" and r.get("mitigation") in (None, "none")), None)
    for r in rows:
        who = _name(r)
        mem, hold, ex = r.get("memorization_pct"), r.get("holdout_pct"), r.get("excess_points")
        if mem is None or hold is None or ex is None:
            lines.append(f"- {who}: no audit result (see the report).")
            continue
        ci = r.get("excess_ci_points")
        text = (
            f"- {who}: {mem:.1f}% of its synthetic rows are replicas of a training row, against {hold:.1f}% for real "
            f"rows it never saw: excess {ex:+.1f} points" + _ci(ci) + " -> " + _excess_words(ci)
        )
        if r.get("attack_auc") is not None:
            aci = r.get("attack_auc_ci")
            att = _attack_name(r["attack"])
            text += (
                f"; the strongest attack ({att}) reached AUC {r['attack_auc']:.3f}"
                + _ci(aci, "{:.3f}")
                + " -> "
                + _auc_words(aci, verdicts.get(r["cell"]))
            )
        if r.get("mitigation") not in (None, "none") and plain is not None and plain.get("excess_points") is not None:
            text += f"; without it: excess {plain['excess_points']:+.1f} points"
            if plain.get("attack_auc") is not None:
                text += f", attack AUC {plain['attack_auc']:.3f}"
            if r.get("shape") is not None and plain.get("shape") is not None:
                text += f"; Shape {r['shape']:.3f} vs {plain['shape']:.3f}"
            pci = plain.get("excess_ci_points")
            if pci and pci[0] <= 0:
                text += (
                    " (TabDDPM does not memorize beyond the baseline here, so there is little for a mitigation to "
                    "remove; docs/mitigation.md shows the regime where it does)"
                )
        if r["generator"] == "noisy-resample":
            text += " (as built: the control leaks, and the audit and the attacks see it)"
        badge = badges.get(r["cell"])
        lines.append(text + "." + (f"  [{badge}]" if badge else ""))
    return lines


def _excess_words(ci: list[float] | None) -> str:
    if not ci:
        return "no interval"
    if ci[0] > 0:
        return "memorization beyond the baseline"
    if ci[1] < 0:
        return "fewer replicas than real unseen rows"
    return "no memorization beyond the baseline"


def _auc_words(ci: list[float] | None, verdict: Any = None) -> str:
    """What the strongest attack's AUC says, corrected for choosing it among the attacks (the report's finding)."""
    if not ci:
        return "no interval"
    finding = next((f for f in verdict.findings if f.topic == "Membership inference"), None) if verdict else None
    leaks = finding.level == "alert" if finding is not None else ci[0] > 0.5
    corrected = " (corrected for choosing the strongest)" if finding is not None and "corrected" in finding.text else ""
    return ("it tells members from non-members" if leaks else "chance level") + corrected


__all__ = ["demo", "headline_table", "own_table_lines", "print_check", "print_dynamics", "units_note", "verdict_lines"]
