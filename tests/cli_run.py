"""Run a tabmem command in process the way the tests do: its exit code and everything it printed."""

from __future__ import annotations

from tabmem.cli import main


def run(args: list, capsys) -> tuple[int, str]:
    """``tabmem ARGS`` in this process: (exit code, stdout + stderr)."""
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err
