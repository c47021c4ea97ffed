"""``tabmem sample``: draw rows from a model saved by ``tabmem train`` (or ``TabularGenerator.save``)."""

from __future__ import annotations

from pathlib import Path

import click

from tabmem.cli._options import (
    FiniteRange,
    count_option,
    distance_option,
    file_option,
    n_jobs_option,
    out_file_option,
    prepare_out_file,
    read_user_table,
    seed_option,
    set_torch_threads,
    threshold_option,
    torch_options,
)
from tabmem.errors import TabmemError


@click.command("sample")
@click.option(
    "--model",
    "model_path",
    type=click.Path(exists=True, path_type=Path),
    required=True,
    help="A `tabmem train` output directory or a model .pt file.",
)
@count_option("--n", "Number of rows to draw.", dest="n_rows", required=True)
@seed_option("Random seed (same seed, same rows on CPU).")
@count_option("--batch-size", "Rows generated at once (bounds memory; default 10,000).")
@click.option(
    "--tlp",
    "tendency",
    type=FiniteRange(min=1.0),
    default=None,
    help="LLM models only: Tendency-based Logit Processor with tendency T >= 1 (LevAtt paper defence).",
)
@click.option(
    "--digit-modifier",
    "digit_modifier",
    default=None,
    metavar="PMIN,PMAX",
    help="Post-process numerical cells with the Digit Modifier (LevAtt paper), e.g. 0.05,0.1.",
)
@file_option(
    "--reject-replicas",
    "reject_train",
    "Training table (CSV or Parquet): drop sampled rows that are replicas of one of its rows "
    "(d1/d2 < --threshold with --distance, exact copies included) and draw more until N rows are kept.",
    path_type=Path,
)
@distance_option("--reject-replicas: the replica distance (default gower, the audit's).")
@threshold_option("--reject-replicas: a row is a replica when d1/d2 < threshold (0 < threshold <= 1).")
@count_option("--max-rounds", "--reject-replicas: the most draws from the model.", default=10)
@n_jobs_option("--reject-replicas: worker threads of the neighbour search (default: every CPU available).")
@torch_options
@out_file_option("Output table (.csv or .parquet).")
def sample(
    model_path: Path,
    n_rows: int,
    seed: int,
    batch_size: int | None,
    tendency: float | None,
    digit_modifier: str | None,
    reject_train: Path | None,
    distance: str,
    threshold: float,
    max_rounds: int,
    n_jobs: int | None,
    device: str | None,
    threads: int | None,
    out_path: Path,
) -> None:
    """Sample N synthetic rows with the training columns and dtypes."""
    from tabmem.data.io import write_table
    from tabmem.generators import load_generator

    out_path = prepare_out_file(out_path, suffixes=(".csv", ".parquet", ".pq"))
    dm_range = None
    if digit_modifier is not None:
        try:
            dm_range = tuple(float(x) for x in digit_modifier.split(","))
            if len(dm_range) != 2:
                raise ValueError
        except ValueError:
            raise TabmemError(f"--digit-modifier expects PMIN,PMAX (e.g. 0.05,0.1), got {digit_modifier!r}") from None
    set_torch_threads(threads)
    gen = load_generator(model_path, device=device)
    options = {}
    if tendency is not None:
        if "tendency" not in gen.sampling_options:
            raise TabmemError(f"--tlp applies to generators that decode tokens (llm); this model is {gen.name!r}")
        options["tendency"] = tendency
    if reject_train is None:
        table = gen.sample(n_rows, random_state=seed, batch_size=batch_size, **options)
    else:
        from tabmem.mitigation.rejection import RejectionSampler

        train = read_user_table(reject_train, option="--reject-replicas")
        sampler = RejectionSampler(distance, threshold, max_rounds=max_rounds, n_jobs=n_jobs).fit(train, gen.schema_)
        table, report = sampler.sample(gen, n_rows, random_state=seed, batch_size=batch_size, **options)
        click.echo(
            f"rejected {report.n_rejected:,} of {report.n_drawn:,} rows drawn ({100 * report.rejection_rate:.1f}%) "
            f"as replicas ({report.distance}, d1/d2 < {report.threshold:.4g}) in {report.rounds} round(s)"
        )
    if dm_range is not None:
        from tabmem.defenses import DigitModifier

        p_min, p_max = dm_range
        dm = DigitModifier(p_min, p_max, columns=list(gen.schema_.numerical), random_state=seed)
        table = dm.transform(table)
    write_table(table, out_path)
    click.echo(f"wrote {len(table):,} rows from {gen.name} (epoch {gen.epoch_}) to {out_path}")
