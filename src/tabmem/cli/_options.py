"""Options shared by the commands, with one rule each.

* **Declarations**: an option that two commands have is declared once here (:func:`count_option`,
  :func:`choice_option`, :func:`file_option`, :func:`out_dir_option`, :func:`model_option`, ...);
  a command passes only what the option means to it (its help, sometimes its default), so flag,
  destination, type, range and default display cannot drift apart between commands.
* **Reading a table**: ``--encoding`` on every command that reads a file; ``--sep``,
  ``--decimal`` and ``--exclude`` on every command with :func:`schema_options`: these three are
  kept in the click context (not passed to the command) and applied by :func:`read_user_table`
  to every table the command reads (``--exclude`` leaves the named columns out of each, and
  :func:`infer_schema` checks that the training table had them); column kinds from
  ``--categorical``/``--numerical`` (comma-separated or repeated: ``--categorical a,b`` equals
  ``--categorical a --categorical b``) and ``--target``; the same flags refine a registered
  dataset's schema (``--dataset adult --categorical age``). :func:`training_table_options`
  adds ``--train FILE | --dataset NAME`` and ``--data-dir``.
* **Numbers**: every numeric option has a range, checked before any work starts; an error is one
  line naming the option and the value (click's ``Invalid value for '--threshold'``).
* **Output**: :func:`prepare_out_dir` creates ``--out`` (or fails with one line naming it).
* **Inferred schemas** are printed in one line (:func:`echo_schema`) and written to the
  command's output; **warnings** are one ``warning:`` line each on stderr (:func:`echo_warning`);
  the **thread settings** of a run are printed in one ``threads:`` line (:func:`echo_threads`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pandas as pd

from tabmem._checks import available_cpus, check_n_jobs
from tabmem.data.schema import Schema
from tabmem.errors import ParameterError, TabmemError
from tabmem.runs.protocol import RunDirectory, RunKind, check_out_file

__all__ = [
    "address_option",
    "choice_option",
    "column_names",
    "columns_option",
    "count_option",
    "data_dir_option",
    "decimal_option",
    "default_threads",
    "dir_option",
    "distance_option",
    "echo_schema",
    "echo_threads",
    "echo_warning",
    "encoding_option",
    "epochs_option",
    "exclude_option",
    "executor_option",
    "file_option",
    "FiniteRange",
    "generator_params",
    "infer_schema",
    "load_training_table",
    "LoadedTable",
    "MEMORY_GB",
    "mle_grid_option",
    "model_option",
    "memory_gb_option",
    "n_jobs_option",
    "NJOBS",
    "out_dir_option",
    "out_file_option",
    "params_option",
    "parse_params",
    "prepare_out_dir",
    "prepare_out_file",
    "preset_option",
    "ratio_option",
    "read_user_table",
    "schema_options",
    "search_device_option",
    "seed_option",
    "shards_option",
    "sep_option",
    "set_torch_threads",
    "threads_option",
    "torch_options",
    "training_table_options",
]


def column_names(values: tuple[str, ...] | list[str] | str | None) -> list[str]:
    """Column names from repeated and/or comma-separated option values (empty parts ignored)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [part.strip() for item in values for part in str(item).split(",") if part.strip()]


def parse_params(items: tuple[str, ...] | list[str], option: str = "--param") -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict; values are read as JSON when they parse (lists become tuples)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise TabmemError(f"{option} expects KEY=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if isinstance(value, list):
            value = tuple(value)
        out[key.strip()] = value
    return out


def generator_params(
    params: tuple[str, ...] | list[str], *, epochs: int | None = None, device: str | None = None
) -> dict[str, Any]:
    """A generator's parameters: the ``--param`` items, then ``--epochs`` and ``--device`` when given."""
    out = parse_params(params)
    if epochs is not None:
        out["epochs"] = epochs
    if device is not None:
        out["device"] = device
    return out


class _NJobs(click.ParamType):
    """``--n-jobs``/``--jobs``: the library's one ``n_jobs`` rule (:func:`tabmem._checks.check_n_jobs`):
    a positive number of workers, -1 for every available CPU, -k for all but k-1 (0 is an error)."""

    name = "N"
    _USE = "use a positive count, -1 for all CPUs or -k for all but k-1"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        else:
            try:
                n = int(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not an integer ({self._USE})", param, ctx)
        try:
            return int(check_n_jobs(n))  # type: ignore[arg-type]
        except ParameterError:
            self.fail(f"{n} is not a worker count ({self._USE})", param, ctx)


NJOBS = _NJobs()


class FiniteRange(click.FloatRange):
    """``click.FloatRange`` that also refuses ``nan`` and ``inf`` (a plain FloatRange lets ``nan`` through)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return v


#: working memory in GiB: at least 16 MiB (below that the search would run row by row), at most 1 TiB
MEMORY_GB = FiniteRange(min=1 / 64, max=1024)


# Option declarations, one each: a command names the options it has and says what they mean to it
# (the help); the flag, destination, type, range and default live here. A default is shown in
# --help whenever there is one.


def _show(default: Any) -> bool | None:
    return None if default is None else True


def count_option(
    flag: str, help: str, *, default: int | None = None, min: int = 1, dest: str | None = None, **kwargs: Any
) -> Callable[[Callable], Callable]:
    """A whole-number option of at least ``min`` (``click.IntRange``); a required one has no default."""
    decls = (flag, dest) if dest else (flag,)
    if not kwargs.get("required"):
        kwargs["default"] = default
    return click.option(*decls, type=click.IntRange(min=min), show_default=_show(default), help=help, **kwargs)


def choice_option(
    flag: str, choices: Any, help: str, *, default: str | None = None, dest: str | None = None
) -> Callable[[Callable], Callable]:
    """An option taking one of ``choices``."""
    decls = (flag, dest) if dest else (flag,)
    return click.option(
        *decls, type=click.Choice(list(choices)), default=default, show_default=_show(default), help=help
    )


def seed_option(help: str) -> Callable[[Callable], Callable]:
    """``--seed`` (a non-negative integer, default 0): same seed, same output."""
    return count_option("--seed", help, default=0, min=0)


def memory_gb_option(help: str, default: float | None = None) -> Callable[[Callable], Callable]:
    """``--memory-gb``: a working-memory budget in GiB (:data:`MEMORY_GB`)."""
    return click.option("--memory-gb", type=MEMORY_GB, default=default, show_default=_show(default), help=help)


def threads_option(what: str) -> Callable[[Callable], Callable]:
    """``--threads N`` (default: the CPUs this process may use, shared among side-by-side workers)."""
    return count_option("--threads", f"{what} (default: the CPUs this process may use).")


def n_jobs_option(help: str, default: int | None = None, flag: str = "--n-jobs") -> Callable[[Callable], Callable]:
    """``--n-jobs`` (or ``flag``): workers, -1 for every CPU, -k for all but k-1 (:data:`NJOBS`)."""
    return click.option(flag, type=NJOBS, default=default, show_default=_show(default), help=help)


def distance_option(
    help: str = "Replica distance (fang2024: the papers' distance, to reproduce their numbers; docs/neighbors.md).",
    default: str | None = None,
) -> Callable[[Callable], Callable]:
    """``--distance``: a registered distance (default: the library's, gower; fang2024 reproduces the papers)."""
    from tabmem.neighbors.distances import DEFAULT_DISTANCE, DISTANCES

    return choice_option("--distance", DISTANCES.names(), help, default=default or DEFAULT_DISTANCE)


def threshold_option(
    help: str = "A synthetic row is a replica when d1/d2 < threshold (0 < threshold <= 1).", flag: str = "--threshold"
) -> Callable[[Callable], Callable]:
    """``--threshold`` of the replica criterion d1/d2 < threshold (default 1/3, the papers')."""
    return click.option(flag, "threshold", type=FiniteRange(0, 1, min_open=True), default=1 / 3,
                        show_default="0.3333", help=help)  # fmt: skip


def _search_device(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from tabmem.neighbors.device import check_device, torch_device

    torch_device(value, "--device")  # checked before any work: one line when CUDA (or torch) is absent
    return check_device(value, "--device")


def search_device_option(
    help: str = "Where the exact neighbour search computes its distance blocks: cpu (numpy) or cuda / cuda:N "
    "(torch; the same neighbours and distances, docs/neighbors.md).",
) -> Callable[[Callable], Callable]:
    """``--device`` of the exact neighbour searches (:func:`tabmem.neighbors.device.use_device`); default cpu."""
    return click.option(
        "--device", default="cpu", show_default=True, callback=_search_device, metavar="cpu|cuda|cuda:N", help=help
    )


def executor_option(help: str) -> Callable[[Callable], Callable]:
    """``--executor local|ray``."""
    return choice_option("--executor", ["local", "ray"], help, default="local")


def address_option(
    help: str = "Ray cluster to join (auto, or ray://host:port); default: start a local one.",
) -> Callable[[Callable], Callable]:
    """``--address``: the Ray cluster of ``--executor ray`` (checked by :func:`tabmem.runs.pool.check_pool`)."""
    return click.option("--address", default=None, help=help)


def shards_option(
    help: str = "Shards of each large neighbour search (default: 4 per task slot; results do not depend on it).",
) -> Callable[[Callable], Callable]:
    """``--shards N``: the query rows of a neighbour search split over at most N tasks
    (:func:`tabmem.runs.searches.sharded_searches`)."""
    return count_option("--shards", help)


def mle_grid_option(help: str = "XGBoost grid of MLE.") -> Callable[[Callable], Callable]:
    """``--mle-grid``: the hyper-parameter grid of the MLE metric."""
    return choice_option("--mle-grid", ["tabsyn", "tiny"], help, default="tabsyn")


def model_option(help: str, default: str | None = "tabddpm") -> Callable[[Callable], Callable]:
    """``--model NAME``: a registered generator."""
    return click.option("--model", default=default, show_default=_show(default), help=help)


def preset_option(help: str) -> Callable[[Callable], Callable]:
    """``--preset NAME`` of a generator (default small: ``tabmem.generators.DEFAULT_PRESET``; a generator
    without it, such as noisy_resample, takes its class defaults, and so does ``none``)."""
    help = f"{help} A generator without a small preset (noisy_resample) takes its class defaults."
    return click.option("--preset", default="small", show_default=True, help=help)


def params_option(help: str, flag: str = "--param", dest: str = "params") -> Callable[[Callable], Callable]:
    """``--param KEY=VALUE``, repeatable (read by :func:`parse_params`)."""
    return click.option(flag, dest, multiple=True, metavar="KEY=VALUE", help=help)


def epochs_option(help: str) -> Callable[[Callable], Callable]:
    """``--epochs N`` (default: the preset's)."""
    return count_option("--epochs", help)


def out_dir_option(help: str = "Output directory.", path_type: type | None = Path) -> Callable[[Callable], Callable]:
    """``--out DIR`` (required), created by :func:`prepare_out_dir`."""
    return click.option(
        "--out", "out_dir", type=click.Path(file_okay=False, path_type=path_type), required=True, help=help
    )


def out_file_option(help: str, path_type: type | None = Path) -> Callable[[Callable], Callable]:
    """``--out FILE`` (required), checked by :func:`prepare_out_file`."""
    return click.option(
        "--out", "out_path", type=click.Path(dir_okay=False, path_type=path_type), required=True, help=help
    )


def file_option(flag: str, dest: str | None, help: str, **kwargs: Any) -> Callable[[Callable], Callable]:
    """An input file (a table, usually; read by :func:`read_user_table`); ``path_type`` as in ``click.Path``."""
    path_type = kwargs.pop("path_type", None)
    decls = (flag, dest) if dest else (flag,)
    return click.option(*decls, type=click.Path(dir_okay=False, path_type=path_type), help=help, **kwargs)


def dir_option(flag: str, dest: str | None, help: str, **kwargs: Any) -> Callable[[Callable], Callable]:
    """An input directory (a run, a study); ``exists`` and ``path_type`` as in ``click.Path``."""
    path_type = kwargs.pop("path_type", None)
    exists = kwargs.pop("exists", False)
    decls = (flag, dest) if dest else (flag,)
    return click.option(
        *decls, type=click.Path(file_okay=False, exists=exists, path_type=path_type), help=help, **kwargs
    )


def ratio_option(flag: str, help: str) -> Callable[[Callable], Callable]:
    """New rows of an augmenter as a fraction (> 0, default 0.3) of the table it augments."""
    return click.option(flag, type=click.FloatRange(min=0, min_open=True), default=0.3, show_default=True, help=help)


def data_dir_option(help: str, path_type: type | None = None) -> Callable[[Callable], Callable]:
    """``--data-dir DIR`` of the registered datasets."""
    return click.option("--data-dir", type=click.Path(file_okay=False, path_type=path_type), default=None, help=help)


def encoding_option(
    help: str = "Text encoding of CSV inputs (e.g. latin-1, cp1252).",
) -> Callable[[Callable], Callable]:
    """``--encoding`` of CSV inputs (default utf-8)."""
    return click.option("--encoding", default="utf-8", show_default=True, help=help)


def columns_option(kind: str, help: str = "") -> Callable[[Callable], Callable]:
    """``--categorical`` or ``--numerical``: column names, comma-separated or repeated (:func:`column_names`)."""
    return click.option(
        f"--{kind}", multiple=True, help=help or f"Columns to treat as {kind} (comma-separated or repeated)."
    )


def _device(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or value in ("auto", "cpu") or value == "cuda" or value.startswith("cuda:") or value == "mps":
        return value
    raise click.BadParameter(f"{value!r} is not a device (use cpu, cuda, cuda:N or auto)", ctx, param)


def torch_options(f: Callable) -> Callable:
    """``--threads`` and ``--device`` of the commands that run a torch model."""
    f = click.option(
        "--device", default=None, callback=_device, help="cpu, cuda or auto (default auto: cuda when present)."
    )(f)
    f = threads_option("torch CPU threads")(f)
    return f


#: ``ctx.meta`` key of the table-reading settings (``sep``, ``decimal``, ``exclude``) and of what was read
READING = "tabmem.reading"


def _reading(ctx: click.Context | None = None) -> dict[str, Any]:
    """The table-reading state of the running command (empty outside a command)."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return {}
    return ctx.meta.setdefault(READING, {"notes": {}, "warned": set()})


def _keep_setting(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    _reading(ctx)[param.name] = value
    return value


def sep_option() -> Callable[[Callable], Callable]:
    """``--sep`` of CSV inputs (default: the separator that fits the file); kept for :func:`read_user_table`."""
    return click.option(
        "--sep",
        type=click.Choice([",", ";", "tab", "|"]),
        default=None,
        expose_value=False,
        callback=_keep_setting,
        help="Field separator of CSV inputs (default: the one among , ; tab | that fits the file).",
    )


def decimal_option() -> Callable[[Callable], Callable]:
    """``--decimal`` of CSV inputs (default: ``,`` where a ``;``/tab file holds decimal commas)."""
    return click.option(
        "--decimal",
        type=click.Choice([".", ","]),
        default=None,
        expose_value=False,
        callback=_keep_setting,
        help="Decimal mark of CSV inputs (default: ',' where a file not separated by ',' holds decimal commas).",
    )


def exclude_option() -> Callable[[Callable], Callable]:
    """``--exclude COLS``: columns left out of every input table (an identifier, for instance)."""
    return click.option(
        "--exclude",
        multiple=True,
        expose_value=False,
        callback=_keep_setting,
        help="Columns to leave out of every input table, e.g. an identifier (comma-separated or repeated).",
    )


def schema_options(f: Callable) -> Callable:
    """``--categorical``, ``--numerical``, ``--target`` and ``--encoding``; ``--sep``, ``--decimal`` and
    ``--exclude`` (kept in the context, applied by :func:`read_user_table`)."""
    f = exclude_option()(f)
    f = decimal_option()(f)
    f = sep_option()(f)
    f = encoding_option()(f)
    f = click.option("--target", default=None, help="Target column (classification or regression label).")(f)
    f = columns_option("numerical")(f)
    f = columns_option("categorical")(f)
    return f


def training_table_options(f: Callable) -> Callable:
    """``--train FILE | --dataset NAME``, ``--data-dir`` and :func:`schema_options`.

    The command takes these seven as ``**table`` and reads the table with
    ``load_training_table(**table)``.
    """
    f = schema_options(f)
    f = data_dir_option("Dataset directory (default $TABMEM_DATA_DIR, then the cache).")(f)
    f = click.option(
        "--dataset",
        default=None,
        help="A registered dataset (`tabmem datasets`): its train split; its test split is the default holdout.",
    )(f)
    f = file_option("--train", "train", "Training table (CSV or Parquet).")(f)
    return f


@dataclass(frozen=True)
class LoadedTable:
    """A training table, its schema, the dataset's test split (a natural holdout) and where it came from.

    ``inferred`` is True when column kinds were inferred from a file (not declared by a dataset).
    """

    table: pd.DataFrame
    schema: Schema
    test: pd.DataFrame | None
    source: dict[str, Any]
    inferred: bool = False


def echo_schema(schema: Schema, source: str) -> None:
    """One line on stderr with the column kinds inferred from ``source`` and how the file was read
    (separator, decimal comma, codes read as text, ``NA``-like categories kept, columns left out)."""
    from tabmem.data.io import describe_read

    def names(cols: tuple[str, ...], shown: int = 50) -> str:  # a name holding a separator is quoted
        listed = ", ".join(repr(c) if any(ch in c for ch in ",;:") else c for c in cols[:shown]) or "none"
        return listed + (f" and {len(cols) - shown:,} more" if len(cols) > shown else "")

    num, cat = names(schema.numerical), names(schema.categorical)
    target = f"; target: {schema.target} ({schema.task})" if schema.target else ""
    notes = _reading().get("notes", {}).get(str(source), {})
    read = describe_read(notes)
    if notes.get("excluded"):
        read = "; ".join(filter(None, [read, f"left out: {', '.join(notes['excluded'])} (--exclude)"]))
    read = f" (read: {read})" if read else ""
    click.echo(f"schema inferred from {source}{read}: numerical: {num}; categorical: {cat}{target}", err=True)


def echo_warning(message: str) -> None:
    """One ``warning:`` line on stderr (a message already printed by this command is not repeated)."""
    warned = _reading().get("warned")
    if warned is not None:
        if message in warned:
            return
        warned.add(message)
    click.echo(f"warning: {message}", err=True)


def echo_threads(workers: int, threads: int, what: str = "") -> None:
    """The run's thread settings in one line: workers side by side x threads each, out of the CPUs available."""
    cpus = available_cpus()
    w = f"{workers} worker{'s' if workers != 1 else ''} x " if workers != 1 else ""
    t = f"{threads} thread{'s' if threads != 1 else ''}"
    click.echo(
        f"threads: {w}{t}{' ' + what if what else ''} ({cpus} CPU{'s' if cpus != 1 else ''} available)", err=True
    )


def read_user_table(path: str | os.PathLike, *, encoding: str = "utf-8", option: str = "") -> pd.DataFrame:
    """Read a CSV/Parquet file given on the command line (errors name the option).

    The command's ``--sep`` and ``--decimal`` apply; the ``--exclude`` columns are left out when
    the table has them (``table.attrs["tabmem.excluded"]`` lists those it had).
    """
    from tabmem.data.io import read_notes, read_table

    state = _reading()
    sep = state.get("sep")
    try:
        table = read_table(
            path, encoding=encoding, sep="\t" if sep == "tab" else sep, decimal=state.get("decimal") or None
        )
    except LookupError:
        raise TabmemError(f"--encoding: unknown text encoding {encoding!r}") from None
    except IsADirectoryError:
        raise TabmemError(f"{option or 'input'}: {str(path)!r} is a directory, not a table file") from None
    except PermissionError:
        raise TabmemError(f"{option or 'input'}: {str(path)!r} cannot be read (permission denied)") from None
    notes = read_notes(table)
    exclude = column_names(state.get("exclude"))
    present = [c for c in exclude if c in table.columns]
    if present:
        table = table.drop(columns=present)
        notes["excluded"] = present
    table.attrs["tabmem.read"] = notes
    table.attrs["tabmem.excluded"] = present
    if state:
        state["notes"][str(path)] = notes
    return table


def infer_schema(
    table: pd.DataFrame,
    categorical: tuple[str, ...] | list[str] | str | None,
    numerical: tuple[str, ...] | list[str] | str | None,
    target: str | None = None,
    name: str | None = None,
) -> Schema:
    """The column kinds of a table read from a file, with the ``--categorical``/``--numerical``/``--target`` flags.

    A column named by ``--exclude`` that the table did not have is an error; columns that look
    like identifiers (:func:`~tabmem.data.schema.key_like_columns`) give one ``warning:`` line.
    """
    from tabmem.data.schema import key_columns_warning, key_like_columns

    excluded = set(table.attrs.get("tabmem.excluded", ()))
    absent = [c for c in column_names(_reading().get("exclude")) if c not in excluded]
    if absent:
        raise TabmemError(f"--exclude: column {absent[0]!r} is not in the training table")
    schema = Schema.infer(
        table,
        categorical=column_names(categorical),
        numerical=column_names(numerical),
        target=target or None,
        name=name,
    )
    keys = key_like_columns(table, schema)
    if keys:
        echo_warning(key_columns_warning(keys))
    return schema


def load_training_table(
    *,
    train: str | None,
    dataset: str | None,
    data_dir: str | None,
    categorical: tuple[str, ...] | list[str] | str | None,
    numerical: tuple[str, ...] | list[str] | str | None,
    target: str | None,
    encoding: str = "utf-8",
) -> LoadedTable:
    """The training table from ``--train FILE`` or ``--dataset NAME`` with the column-kind flags applied."""
    if bool(train) == bool(dataset):
        raise click.UsageError("give exactly one of --train FILE or --dataset NAME")
    cat, num = column_names(categorical), column_names(numerical)
    if dataset:
        from tabmem.data.datasets import load_dataset

        ds = load_dataset(dataset, data_dir=data_dir)
        schema, train_df, test_df = ds.schema, ds.train, ds.test
        exclude = column_names(_reading().get("exclude"))
        if exclude:
            schema, train_df, test_df = _without(exclude, schema, train_df, test_df, dataset)
        if cat or num or target:
            schema = schema.with_overrides(categorical=cat, numerical=num, target=target or None)
        return LoadedTable(train_df, schema, test_df, {"dataset": dataset})
    assert train is not None
    table = read_user_table(train, encoding=encoding, option="--train")
    schema = infer_schema(table, cat, num, target, name=Path(train).stem)
    return LoadedTable(table, schema, None, {"train": str(train)}, inferred=True)


def _without(
    exclude: list[str], schema: Schema, train: pd.DataFrame, test: pd.DataFrame | None, dataset: str
) -> tuple[Schema, pd.DataFrame, pd.DataFrame | None]:
    """A registered dataset's schema and splits without the ``--exclude`` columns."""
    absent = [c for c in exclude if c not in schema.columns]
    if absent:
        raise TabmemError(f"--exclude: column {absent[0]!r} is not in the dataset {dataset!r}")
    if schema.target in exclude:
        raise TabmemError(f"--exclude: column {schema.target!r} is the dataset's target")
    keep = lambda cols: tuple(c for c in cols if c not in exclude)  # noqa: E731
    schema = Schema(keep(schema.columns), keep(schema.numerical), keep(schema.categorical), schema.target,
                    schema.task, schema.name)  # fmt: skip
    drop = [c for c in exclude if c in train.columns]
    test = test.drop(columns=[c for c in exclude if c in test.columns]) if test is not None else None
    return schema, train.drop(columns=drop), test


def prepare_out_dir(path: str | os.PathLike, option: str = "--out", kind: RunKind | None = None) -> Path:
    """Create the output directory (and its parents); one clear line when that is impossible, when it
    holds a tabmem run of another type than ``kind`` (:meth:`RunDirectory.check_kind`), or files of
    ``kind``'s names that no run of it wrote (:meth:`RunDirectory.check_own`)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise TabmemError(f"{option}: {str(out)!r} exists and is not a directory")
    if kind is not None:
        try:
            RunDirectory(out, kind).check_kind()
            RunDirectory(out, kind).check_own()
        except TabmemError as exc:
            raise TabmemError(f"{option}: {exc}") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".tabmem-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise TabmemError(f"{option}: cannot write to {str(out)!r} ({exc.strerror or exc})") from None
    return out


def prepare_out_file(path: str | os.PathLike, option: str = "--out", suffixes: tuple[str, ...] = ()) -> Path:
    """Check an output file before any work: its suffix, that it would not replace a file of the run
    directory it sits in (:func:`check_out_file`), and that its folder can be created and written."""
    out = Path(path)
    if suffixes and out.suffix.lower() not in suffixes:
        raise TabmemError(f"{option} must end in {' or '.join(suffixes)}, got {str(out)!r}")
    if out.is_dir():
        raise TabmemError(f"{option}: {str(out)!r} is a directory, not a file")
    check_out_file(out, option)
    prepare_out_dir(out.parent if str(out.parent) else ".", option)
    return out


def set_torch_threads(threads: int | None) -> int:
    """Give torch ``--threads`` CPU threads (default: every CPU available) and say so in one line."""
    import torch

    n = threads or default_threads()
    torch.set_num_threads(n)
    echo_threads(1, n, "(torch)")
    return n


def default_threads() -> int:
    """CPUs this process may use (the default thread count of every command)."""
    return available_cpus()
