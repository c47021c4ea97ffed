"""Thread defaults that never oversubscribe, and advice that names only existing options."""

from __future__ import annotations

import click
import pytest

from tabmem._checks import available_cpus, limit_threads, threads_per_worker
from tabmem.errors import set_option_lookup, suggest


def test_threads_per_worker_divides_the_available_cpus() -> None:
    cpus = available_cpus()
    assert threads_per_worker(1) == cpus
    assert threads_per_worker(cpus) == 1
    assert threads_per_worker(10 * cpus) == 1  # never 0
    assert threads_per_worker(2) * 2 <= max(cpus, 2)


def test_limit_threads_sets_and_restores_blas_and_torch() -> None:
    torch = pytest.importorskip("torch")
    from threadpoolctl import threadpool_info

    before = torch.get_num_threads()
    with limit_threads(1):
        assert torch.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert torch.get_num_threads() == before


def test_suggest_in_the_library_and_under_a_command() -> None:
    assert suggest("nan='drop'", "--nan", "drop") == "nan='drop'"
    from tabmem.cli import has_option

    @click.command()
    @click.option("--nan", type=click.Choice(["error", "match"]))
    def cmd(nan):
        return suggest("nan='drop'", "--nan", "drop"), suggest("nan='match'", "--nan", "match"), suggest("x", "--x")

    set_option_lookup(has_option)
    try:
        result = cmd.main([], standalone_mode=False)
    finally:
        set_option_lookup(None)
    assert result == (None, "--nan match", None)  # 'drop' is not a choice, --x does not exist
