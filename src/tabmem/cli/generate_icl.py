"""``tabmem generate-icl``: in-context generation with a local HF model or an OpenAI-compatible endpoint."""

from __future__ import annotations

import click

from tabmem.cli._options import seed_option
from tabmem.errors import TabmemError


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


@click.command("generate-icl")
@click.option(
    "--train", "train_path", required=True, type=click.Path(dir_okay=False), help="Training table (CSV/Parquet)."
)
@click.option("--n-context", default=32, show_default=True, type=int, help="Training rows shown in the prompt (8-128).")
@click.option(
    "--backend",
    required=True,
    help="hf:PATH (local Hugging Face model) or openai:URL (OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1).",
)
@click.option("--model-name", default="gpt-4o-mini", show_default=True, help="Model name sent to an openai backend.")
@click.option(
    "--api-key-env",
    default="OPENAI_API_KEY",
    show_default=True,
    help="Environment variable holding the API key (the key is never printed).",
)
@click.option("--n", "n_rows", required=True, type=int, help="Valid rows to generate.")
@click.option("--rows-per-request", default=32, show_default=True, type=int)
@click.option("--temperature", default=1.0, show_default=True, type=float)
@click.option("--max-retries", default=5, show_default=True, type=int, help="HTTP retries (429/5xx/network).")
@click.option("--no-stats", is_flag=True, help="Leave summary statistics out of the prompt.")
@click.option("--categorical", multiple=True, help="Columns to treat as categorical (comma-separated or repeated).")
@click.option("--numerical", multiple=True, help="Columns to treat as numerical.")
@seed_option("Seed of the context choice and request seeds.")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False), help="Output table (CSV/Parquet).")
def generate_icl(
    train_path: str,
    n_context: int,
    backend: str,
    model_name: str,
    api_key_env: str,
    n_rows: int,
    rows_per_request: int,
    temperature: float,
    max_retries: int,
    no_stats: bool,
    categorical: tuple[str, ...],
    numerical: tuple[str, ...],
    seed: int,
    out_path: str,
) -> None:
    """Prompt an LLM with N_CONTEXT training rows and write N validated synthetic rows."""
    import os

    from tabmem.data.io import read_table, write_table
    from tabmem.data.schema import Schema
    from tabmem.generators.llm.icl import ICLGenerator, make_backend

    if n_rows < 1:
        raise TabmemError(f"--n must be a positive integer, got {n_rows}")
    train = read_table(train_path)
    schema = Schema.infer(train, categorical=_split(categorical), numerical=_split(numerical))
    kwargs = {}
    if backend.startswith("openai"):
        kwargs = {
            "api_key": os.environ.get(api_key_env, ""),
            "model": model_name,
            "max_retries": max_retries,
            "random_state": seed,
        }
    gen = ICLGenerator(
        make_backend(backend, **kwargs),
        n_context=n_context,
        rows_per_request=rows_per_request,
        temperature=temperature,
        summary_stats=not no_stats,
        random_state=seed,
    ).fit(train, schema)
    out = gen.sample(n_rows)
    write_table(out, out_path)
    s = gen.last_sample_stats_
    click.echo(
        f"wrote {len(out)} rows to {out_path} ({s['requests']} requests, {s['invalid_lines']} malformed lines dropped)"
    )
