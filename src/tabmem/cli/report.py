"""``tabmem report DIR``: one self-contained HTML report from a study, a train run or audit/attack/quality outputs."""

from __future__ import annotations

import click

from tabmem.cli._options import data_dir_option, encoding_option, file_option, prepare_out_file, read_user_table


@click.command("report")
@click.argument("directory", metavar="DIR", type=click.Path(exists=True, file_okay=False))
@file_option("--out", "out", "HTML file to write (default: DIR/report.html).", default=None)
@click.option(
    "--show-records",
    is_flag=True,
    help="Also show the most-replicated training records WITH THEIR VALUES (default: positions and counts only).",
)
@file_option(
    "--train", "train", "With --show-records: the training table (default: the one the run recorded).", default=None
)
@click.option("--dataset", default=None, help="With --show-records: the registered dataset trained on.")
@data_dir_option("Dataset directory (default $TABMEM_DATA_DIR).")
@encoding_option("Text encoding of a CSV --train.")
@click.option(
    "--policy",
    default=None,
    help="The policy whose verdict the badges show: standard (default), strict, or a TOML policy file (as tabmem check).",
)
def report(directory, out, show_records, train, dataset, data_dir, encoding, policy) -> None:
    """Write a self-contained HTML report (verdict, plots, tables) from DIR.

    DIR is a study (tabmem run), a tabmem train run directory, an audit/attack/quality output
    directory, or a directory of those (tabmem demo's output). The report opens offline and
    shows positions and counts of training records only, unless --show-records.
    """
    from tabmem.errors import TabmemError
    from tabmem.gate import load_policy
    from tabmem.report import write_report

    chosen = load_policy(policy)  # a malformed policy: one line before any work
    if (train or dataset) and not show_records:
        raise TabmemError("--train/--dataset only serve --show-records (the report reads everything else from DIR)")
    if train and dataset:
        raise click.UsageError("give at most one of --train FILE or --dataset NAME")
    if out is not None:
        prepare_out_file(out)  # before any work: the folder can be created and written
    table = None
    if train:
        table = read_user_table(train, encoding=encoding, option="--train")
    elif dataset:
        from tabmem.data.datasets import load_dataset

        table = load_dataset(dataset, data_dir=data_dir).train
    path = write_report(directory, out, show_records=show_records, train=table, data_dir=data_dir, policy=chosen)
    size = path.stat().st_size
    click.echo(f"wrote {path} ({size / 1024:.0f} KiB, self-contained: open it in any browser, no network needed)")
