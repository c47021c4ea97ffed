"""Command-line interface: a thin shell over the library (one module per command).

Sub-commands are imported lazily so that ``tabmem --help`` stays fast and a command whose
optional dependencies are missing fails alone, with a message saying which extra to install.
"""

from __future__ import annotations

import importlib
import sys

import click

from tabmem.errors import TabmemError, set_option_lookup

# command name -> "module:attribute"; each module defines one click command.
COMMANDS: dict[str, str] = {
    "audit": "tabmem.cli.audit:audit",
    "check": "tabmem.cli.check:check",
    "datasets": "tabmem.cli.datasets:datasets",
    "demo": "tabmem.cli.demo:demo",
    "train": "tabmem.cli.train:train",
    "sample": "tabmem.cli.sample:sample",
    "attack": "tabmem.cli.attack:attack",
    "quality": "tabmem.cli.quality:quality",
    "risk": "tabmem.cli.risk:risk",
    "generate-icl": "tabmem.cli.generate_icl:generate_icl",
    "augment": "tabmem.cli.augment:augment",
    "dynamiccut": "tabmem.cli.dynamiccut:dynamiccut",
    "rank": "tabmem.cli.rank:rank",
    "track": "tabmem.cli.track:track",
    "prune": "tabmem.cli.prune:prune",
    "reject": "tabmem.cli.reject:reject",
    "run": "tabmem.cli.run:run",
    "report": "tabmem.cli.report:report",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, target in COMMANDS.items() if _module_exists(target))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("tabmem"):
                return None
            raise click.ClickException(
                f"`tabmem {name}` needs the optional dependency {exc.name!r}: pip install 'tabmem[all]'"
            ) from None
        return getattr(module, attr)


def _module_exists(target: str) -> bool:
    return importlib.util.find_spec(target.split(":")[0]) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tabmem")
def cli() -> None:
    """tabmem: find, measure and remove memorization in synthetic tabular data."""


def has_option(flag: str, value: str | None = None) -> bool:
    """Whether the running command has option ``flag`` (accepting ``value`` when it is a choice)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    for param in ctx.command.params:
        if flag in getattr(param, "opts", ()) or flag in getattr(param, "secondary_opts", ()):
            if value is None or not isinstance(param.type, click.Choice):
                return True
            return value in param.type.choices
    return False


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors (bad input, missing data) print one clear message and exit 2.

    While a command runs, library messages that suggest a setting name this command's flag for
    it, or word the advice without a flag when the command has none (:func:`tabmem.errors.suggest`).
    """
    set_option_lookup(has_option)
    try:
        cli.main(args=argv, prog_name="tabmem", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except TabmemError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    finally:
        set_option_lookup(None)
