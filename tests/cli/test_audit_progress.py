"""``tabmem audit``'s progress bar: rows done, rows per second and the time left, on a terminal only."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from tabmem.cli.audit import PROGRESS_MIN_CELLS, RowsPerSecond, progress_bar


def test_rate_column_reads_rich_speed_and_its_final_value():
    column = RowsPerSecond()
    assert column.render(SimpleNamespace(finished_speed=None, speed=None)).plain == "? rows/s"  # type: ignore[arg-type]
    assert column.render(SimpleNamespace(finished_speed=None, speed=12345.4)).plain == "12,345 rows/s"  # type: ignore[arg-type]
    assert column.render(SimpleNamespace(finished_speed=99.6, speed=5.0)).plain == "100 rows/s"  # type: ignore[arg-type]


def test_bar_counts_rows_on_a_terminal_and_stays_silent_elsewhere():
    big = int(PROGRESS_MIN_CELLS) + 1
    buf = io.StringIO()
    terminal = Console(file=buf, force_terminal=True, width=160)
    with progress_bar(terminal, 1000, big) as advance:
        assert advance is not None
        for _ in range(4):
            advance(250)
    assert "1,000/1,000 rows" in buf.getvalue() and "rows/s" in buf.getvalue()
    with progress_bar(Console(file=io.StringIO(), force_terminal=False), 1000, big) as advance:
        assert advance is None  # piped output: no bar
    with progress_bar(terminal, 10, 10) as advance:
        assert advance is None  # a small job: no bar
