"""``tabmem datasets``: list the registered datasets, their sizes and whether they are on this machine."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from tabmem.data.datasets import list_datasets, resolve_cache_dir, resolve_data_dir, verify_local_files


def _fmt(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


@click.command("datasets")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory laid out like ../shared/datasets (<dir>/<dataset>/<file>); default $TABMEM_DATA_DIR.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Download cache; default $TABMEM_CACHE_DIR or ~/.cache/tabmem.",
)
@click.option("--verify", is_flag=True, help="Also check the sha256 of every local file (slower).")
def datasets(data_dir: Path | None, cache_dir: Path | None, verify: bool) -> None:
    """List the datasets: task, target, rows per split, columns and local availability."""
    infos = list_datasets(data_dir=data_dir, cache_dir=cache_dir)
    table = Table(
        title="tabmem datasets",
        header_style="bold",
        caption="num/cat: numerical/categorical features (target excluded)",
    )
    table.add_column("name", no_wrap=True)
    table.add_column("task", no_wrap=True)
    table.add_column("target", overflow="fold")
    table.add_column("rows (train/val/test)", justify="right", no_wrap=True)
    table.add_column("columns", justify="right", no_wrap=True)
    table.add_column("num/cat", justify="right", no_wrap=True)
    table.add_column("local", no_wrap=True)
    if verify:
        table.add_column("sha256", overflow="fold")
    for info in infos:
        rows = "/".join(_fmt(n) for n in (info.n_train, info.n_val, info.n_test))
        local = "[green]yes[/green]" if info.available_locally else "[yellow]no[/yellow]"
        kinds = f"{info.n_numerical}/{info.n_categorical}"
        cells = [info.name, info.task, info.target, rows, str(info.n_columns), kinds, local]
        if verify:
            checks = verify_local_files(info.name, data_dir=data_dir, cache_dir=cache_dir)
            bad = [path for path, ok in checks.items() if ok is False]
            checked = sum(ok is not None for ok in checks.values())
            if bad:
                cells.append("[red]MISMATCH: " + ", ".join(bad) + "[/red]")
            else:
                cells.append(f"ok ({checked} file{'s' if checked != 1 else ''})" if checked else "-")
        table.add_row(*cells)
    console = Console()
    if not console.is_terminal:  # pipes and files: do not squeeze the table into 80 columns
        console = Console(width=max(console.width, 132))
    console.print(table)
    data = resolve_data_dir(data_dir)
    cache = resolve_cache_dir(cache_dir)
    console.print(
        f"Data dir: {data if data is not None else '(none: set $TABMEM_DATA_DIR or pass --data-dir)'}; "
        f"cache: {cache}. Missing files are downloaded on first load where a public source exists.",
        highlight=False,
        soft_wrap=True,
    )
