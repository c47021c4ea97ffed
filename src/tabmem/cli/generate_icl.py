"""``tabmem generate-icl``: in-context generation with a local HF model or an OpenAI-compatible endpoint.

Every option is checked before the training table is read or the backend is called. Time is
bounded (``--timeout`` per attempt, ``--max-retries``; see :mod:`tabmem.generators.llm.icl`) and
every request prints one progress line (valid rows so far, rows parsed, malformed lines,
retries). HTTP error bodies are not printed (they may echo the prompt, i.e. training rows)
unless ``--show-http-body`` asks for them. Next to the output table, ``<out>.meta.json`` records
the settings, the inferred schema and the request counts.
"""

from __future__ import annotations

import click

from tabmem.cli._options import (
    FiniteRange,
    columns_option,
    count_option,
    echo_schema,
    encoding_option,
    file_option,
    infer_schema,
    out_file_option,
    prepare_out_file,
    read_user_table,
    seed_option,
    set_torch_threads,
    threads_option,
)
from tabmem.errors import TabmemError


@click.command("generate-icl")
@file_option("--train", "train_path", "Training table (CSV/Parquet).", required=True)
@count_option("--n-context", "Training rows shown in the prompt (the paper: 8-128).", default=32)
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
@count_option("--n", "Valid rows to generate.", dest="n_rows", required=True)
@count_option("--rows-per-request", "Rows asked for in each request.", default=32)
@click.option("--temperature", default=1.0, show_default=True, type=FiniteRange(min=0.0), help="Sampling temperature.")
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=FiniteRange(min=0.0, min_open=True),
    help="Seconds an attempt waits for an openai backend's answer.",
)
@count_option("--max-retries", "Retries of a request after a timeout, 429, 5xx or network error.", default=3, min=0)
@click.option(
    "--show-http-body",
    is_flag=True,
    help="Debugging: include HTTP error bodies in messages (they may echo the prompt, i.e. training rows).",
)
@click.option("--no-stats", is_flag=True, help="Leave summary statistics out of the prompt.")
@columns_option("categorical")
@columns_option("numerical")
@encoding_option("Text encoding of a CSV training table.")
@threads_option("torch CPU threads of an hf backend")
@seed_option("Seed of the context choice and request seeds.")
@out_file_option("Output table (CSV/Parquet).", path_type=None)
def generate_icl(
    train_path: str,
    n_context: int,
    backend: str,
    model_name: str,
    api_key_env: str,
    n_rows: int,
    rows_per_request: int,
    temperature: float,
    timeout: float,
    max_retries: int,
    show_http_body: bool,
    no_stats: bool,
    categorical: tuple[str, ...],
    numerical: tuple[str, ...],
    encoding: str,
    threads: int | None,
    seed: int,
    out_path: str,
) -> None:
    """Prompt an LLM with N_CONTEXT training rows and write N validated synthetic rows."""
    import os

    from tabmem._io import write_json
    from tabmem.data.io import write_table
    from tabmem.generators.llm.icl import ICLGenerator, make_backend

    kind, _, target = backend.partition(":")
    if kind not in ("hf", "openai"):
        raise TabmemError(f"--backend must be hf:PATH or openai:URL, got {backend!r}")
    if kind == "openai" and target and not target.startswith(("http://", "https://")):
        raise TabmemError(f"--backend: the URL must start with http:// or https://, got {backend!r}")
    if kind == "hf" and temperature == 0:
        raise TabmemError("--temperature must be above 0 for a local (hf) model, which samples")
    out = prepare_out_file(out_path, suffixes=(".csv", ".parquet", ".pq"))
    train = read_user_table(train_path, encoding=encoding, option="--train")
    schema = infer_schema(train, categorical, numerical)
    echo_schema(schema, train_path)
    if n_context > len(train):
        raise TabmemError(f"--n-context {n_context} exceeds the {len(train)} rows of the training table")
    kwargs: dict = {}
    if kind == "openai":

        def on_retry(attempt: int, attempts: int, reason: str) -> None:
            click.echo(f"generate-icl: {reason}; retrying (attempt {attempt} of {attempts})", err=True)

        kwargs = {
            "api_key": os.environ.get(api_key_env, ""),
            "model": model_name,
            "max_retries": max_retries,
            "timeout": timeout,
            "show_body": show_http_body,
            "on_retry": on_retry,
            "random_state": seed,
        }
    else:
        set_torch_threads(threads)

    def progress(s: dict) -> None:
        click.echo(
            f"generate-icl: request {s['requests']}: {s['rows_valid']}/{s['n']} valid rows "
            f"({s['rows_parsed']} parsed, {s['invalid_lines']} malformed lines, {s['retries']} retries)",
            err=True,
        )

    gen = ICLGenerator(
        make_backend(backend, **kwargs),
        n_context=n_context,
        rows_per_request=rows_per_request,
        temperature=temperature,
        summary_stats=not no_stats,
        random_state=seed,
    ).fit(train, schema)
    table = gen.sample(n_rows, progress=progress)
    write_table(table, out)
    s = gen.last_sample_stats_
    write_json(
        out.with_name(out.stem + ".meta.json"),
        {
            "backend": kind,
            "model_name": model_name if kind == "openai" else target,
            "n": n_rows,
            "n_context": n_context,
            "rows_per_request": rows_per_request,
            "temperature": temperature,
            "seed": seed,
            "context_rows": [int(i) for i in gen.context_index_],
            "schema": schema.to_dict(),
            "stats": s,
        },
    )
    click.echo(
        f"wrote {len(table)} rows to {out} ({s['requests']} requests, {s['invalid_lines']} malformed lines dropped)"
    )
