"""README.md runs as printed.

* Its ```python blocks continue each other (the README says so): they run in order, in one
  namespace, in a temporary directory, each under a time limit (they are sized for seconds on the
  bundled diabetes table; a snippet that needs a name it does not define fails here, not for a
  reader).
* Every ``tabmem COMMAND --flag`` in its ```bash blocks names an existing command and option.
"""

from __future__ import annotations

import contextlib
import io
import re
import signal
import time
from pathlib import Path

import click
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK_SECONDS = 90  # per block, generous for a loaded 2-core machine (each takes ~1-15 s)


def blocks(language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def test_the_readme_has_python_snippets_and_says_they_continue_each_other() -> None:
    assert len(blocks("python")) >= 2
    assert "continue each other" in README.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def namespace() -> dict:
    return {"__name__": "__readme__"}


class _Timeout(Exception):
    pass


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_snippet_runs_as_printed(index, namespace, tmp_path_factory, monkeypatch) -> None:
    if index > 0 and not namespace.get(f"_ok_{index - 1}"):
        pytest.fail(f"README python block {index - 1} failed; block {index} continues it")
    code = blocks("python")[index]
    monkeypatch.chdir(tmp_path_factory.mktemp("readme"))

    def alarm(signum, frame):  # noqa: ANN001, ARG001
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(BLOCK_SECONDS)
    out = io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md python block {index}", "exec"), namespace)  # noqa: S102
    except _Timeout:
        pytest.fail(f"README python block {index} ran past {BLOCK_SECONDS} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    assert out.getvalue().strip(), f"README python block {index} printed nothing in {seconds:.1f} s"
    namespace[f"_ok_{index}"] = True


def _invocations() -> list[tuple[str, list[str]]]:
    """(command, flags) of every ``tabmem COMMAND ...`` line of the bash blocks (continuations joined)."""
    found = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" # ")[0]  # a trailing comment
            for part in re.split(r"&&|\|", line):
                words = part.split()
                if len(words) >= 2 and words[0] == "tabmem":
                    found.append(
                        (words[1], [w.strip("[]").split("=")[0] for w in words[2:] if w.strip("[").startswith("-")])
                    )
    return found


def test_readme_bash_commands_name_existing_commands_and_flags() -> None:
    from tabmem.cli import cli

    invocations = _invocations()
    assert len(invocations) >= 15
    ctx = click.Context(cli)
    problems = []
    for name, flags in invocations:
        command = cli.get_command(ctx, name)
        if command is None:
            problems.append(f"tabmem {name}: no such command")
            continue
        known = {"-h", "--help"}
        for param in command.params:
            known.update(getattr(param, "opts", ()), getattr(param, "secondary_opts", ()))
        problems += [f"tabmem {name} {flag}: no such option" for flag in flags if flag not in known]
    assert not problems, problems
