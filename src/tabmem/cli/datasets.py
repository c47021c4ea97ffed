"""``tabmem datasets``: list the registered datasets, their sizes and whether they are on this machine."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from tabmem.cli._options import data_dir_option
from tabmem.data.datasets import (
    DatasetFiles,
    get_dataset_spec,
    list_datasets,
    resolve_cache_dir,
    resolve_data_dir,
    verify_local_files,
)


def _fmt(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


@click.command("datasets")
@data_dir_option(
    "Directory laid out like ../shared/datasets (<dir>/<dataset>/<file>); default $TABMEM_DATA_DIR.", path_type=Path
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Download cache; default $TABMEM_CACHE_DIR or ~/.cache/tabmem.",
)
@click.option("--verify", is_flag=True, help="Also check the sha256 of every local file (slower).")
@click.argument("name", required=False)
def datasets(name: str | None, data_dir: Path | None, cache_dir: Path | None, verify: bool) -> None:
    """List the datasets: task, target, rows per split, columns and local availability.

    With NAME, show that dataset's columns (kind, role) and its files (where found, checksum).
    No data values are printed.
    """
    if data_dir is not None and not Path(data_dir).is_dir():
        click.echo(f"warning: --data-dir {str(data_dir)!r} is not a directory; only the cache is searched", err=True)
    if name is not None:
        _show_one(name, data_dir, cache_dir, verify)
        return
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
    console = _console()
    console.print(table)
    data = resolve_data_dir(data_dir)
    cache = resolve_cache_dir(cache_dir)
    console.print(
        f"Data dir: {data if data is not None else '(none: set $TABMEM_DATA_DIR or pass --data-dir)'}; "
        f"cache: {cache}. Missing files are downloaded on first load where a public source exists.",
        highlight=False,
        soft_wrap=True,
    )


def _console() -> Console:
    console = Console()
    if not console.is_terminal:  # pipes and files: do not squeeze the tables into 80 columns
        console = Console(width=max(console.width, 132))
    return console


def _show_one(name: str, data_dir: Path | None, cache_dir: Path | None, verify: bool) -> None:
    spec = get_dataset_spec(name)  # TabmemError listing the known names if unknown
    info = next(i for i in list_datasets(data_dir=data_dir, cache_dir=cache_dir) if i.name == name)
    console = _console()
    console.print(f"[bold]{name}[/bold]: {spec.task}, target {spec.target!r}; split: {spec.split}", highlight=False)
    console.print(f"source: {spec.source}", highlight=False, soft_wrap=True)
    rows = "/".join(_fmt(n) for n in (info.n_train, info.n_val, info.n_test))
    console.print(f"rows (train/val/test): {rows}; available locally: {'yes' if info.available_locally else 'no'}")
    columns = Table(title="columns", header_style="bold")
    for header in ("#", "column", "kind", "role"):
        columns.add_column(header)
    for i, col in enumerate(spec.columns):
        kind = "categorical" if col in spec.categorical else "numerical"
        columns.add_row(str(i), col, kind, "target" if col == spec.target else "feature")
    console.print(columns)
    if not spec.files:
        console.print("files: none (bundled with a dependency)")
        return
    resolver = DatasetFiles(
        spec, data_dir=resolve_data_dir(data_dir), cache_dir=resolve_cache_dir(cache_dir), download=False, verify=False
    )
    checks = verify_local_files(name, data_dir=data_dir, cache_dir=cache_dir) if verify else {}
    files = Table(title="files", header_style="bold")
    for header in ("file", "needed", "found at", "download") + (("sha256",) if verify else ()):
        files.add_column(header, overflow="fold")
    for f in spec.files:
        found = resolver.local(f.path)
        feeds = [g.path for g in spec.files if f.path in g.derived_from]
        if f.required:
            needed = "required"
        elif f.derived_from:
            needed = "derived if absent"
        else:
            needed = f"to derive {feeds[0]}" if feeds else "optional"
        where = (
            "-"
            if found is None
            else ("cache" if resolver.data_dir is None or not found.is_relative_to(resolver.data_dir) else "data dir")
        )
        cells = [f.path, needed, where, "yes" if f.urls else "no"]
        if verify:
            ok = checks.get(f.path)
            cells.append("-" if ok is None else ("ok" if ok else "[red]MISMATCH[/red]"))
        files.add_row(*cells)
    console.print(files)
    console.print(
        f"data dir: {resolver.data_dir or '(none)'}; cache: {resolver.cache_dir}", highlight=False, soft_wrap=True
    )
