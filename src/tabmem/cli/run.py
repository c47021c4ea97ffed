"""``tabmem run``: run a study file (TOML) into a directory, locally or on Ray (a shell over :func:`run_study`).

Study files, the grid, the step pipeline and the results table: ``docs/studies.md`` and
:mod:`tabmem.studies.study` / :mod:`tabmem.studies.store`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tabmem.cli._options import (
    address_option,
    choice_option,
    data_dir_option,
    executor_option,
    n_jobs_option,
    out_dir_option,
)


@click.command("run")
@click.argument("study_path", metavar="STUDY.toml", type=click.Path(dir_okay=False, path_type=Path))
@executor_option("local: worker processes on this machine; ray: Ray tasks (a cluster with --address).")
@n_jobs_option(
    "Parallel tasks (default: available CPUs / the study's threads; ray: no limit; -1: all CPUs).", flag="--jobs"
)
@address_option()
@choice_option(
    "--storage",
    ["shared", "gather"],
    "ray: workers write into --out (shared path), or send their outputs back to it (gather).",
    default="shared",
)
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="PATTERN",
    help="Run only the cells whose name matches the glob (adult/*/seed=0) or whose id starts with it; repeatable.",
)
@click.option("--dry-run", is_flag=True, help="Print the cells, their state and the cost estimate; run nothing.")
@data_dir_option("Dataset directory (default: the study's data_dir, then $TABMEM_DATA_DIR, then the cache).")
@out_dir_option("Study directory.")
def run(
    study_path: Path,
    executor: str,
    jobs: int | None,
    address: str | None,
    storage: str,
    only: tuple[str, ...],
    dry_run: bool,
    data_dir: str | None,
    out_dir: Path,
) -> None:
    """Run every cell of STUDY.toml into --out; finished cells are skipped, interrupted ones resume."""
    from tabmem.runs.pool import check_pool
    from tabmem.studies.runner import plan_study, run_study
    from tabmem.studies.study import load_study

    study = load_study(study_path)
    check_pool(executor, address)
    if dry_run:
        plan = plan_study(study, out_dir, only=only, executor=executor, jobs=jobs)
        for line in plan.describe():
            click.echo(line)
        return
    try:
        outcome = run_study(
            study,
            out_dir,
            executor=executor,
            jobs=jobs,
            address=address,
            only=only,
            storage=storage,
            data_dir=data_dir,
            echo=lambda line: click.echo(line),
        )
    except KeyboardInterrupt:
        click.echo("interrupted: finished cells are kept; run the same command again to resume the others", err=True)
        sys.exit(130)
    if outcome.failed:
        click.echo(f"{len(outcome.failed)} cell(s) failed; run the same command again to retry them:", err=True)
        for name, cid, error in outcome.failed:
            click.echo(f"  {name} ({cid}): {error}", err=True)
        sys.exit(1)
