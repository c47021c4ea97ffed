"""The shared argument checks of tabmem._checks: one check_random_state, one check_positive_int, one n_jobs rule."""

from __future__ import annotations

import numpy as np
import pytest

import tabmem._checks as checks
from tabmem._checks import available_cpus, check_n_jobs, check_positive_int, check_random_state, resolve_n_jobs
from tabmem.errors import ParameterError


# ----------------------------------------------------------------------------- check_random_state
@pytest.mark.parametrize("value", [0, 7, 2**40, np.int64(3), np.uint8(5)])
def test_random_state_returns_the_seed_as_a_python_int(value) -> None:
    got = check_random_state(value)
    assert got == int(value) and type(got) is int


def test_random_state_none_stays_none() -> None:
    assert check_random_state(None) is None


@pytest.mark.parametrize("value", [-1, True, False, np.bool_(True), 1.0, "3", np.random.default_rng(0)])
def test_random_state_rejects_negative_bool_float_str_and_generators(value) -> None:
    with pytest.raises(ParameterError, match=r"^seed must be a non-negative integer or None, got "):
        check_random_state(value, "seed")


# ----------------------------------------------------------------------------- check_positive_int
@pytest.mark.parametrize("value", [1, 10**12, np.int32(4), np.uint64(2)])
def test_positive_int_returns_a_python_int(value) -> None:
    got = check_positive_int("k", value)
    assert got == int(value) and type(got) is int


@pytest.mark.parametrize("value", [0, -1, True, False, np.bool_(True), 1.0, "1", None])
def test_positive_int_rejects(value) -> None:
    with pytest.raises(ParameterError, match=rf"^k must be a positive integer, got {value!r}$".replace(".", r"\.")):
        check_positive_int("k", value)


def test_positive_int_allow_none() -> None:
    assert check_positive_int("k", None, allow_none=True) is None
    with pytest.raises(ParameterError, match=r"^k must be a positive integer or None, got 0$"):
        check_positive_int("k", 0, allow_none=True)


def test_there_is_one_of_each_check() -> None:
    import tabmem.metrics.base as metrics_base

    assert not hasattr(metrics_base, "check_random_state") and not hasattr(metrics_base, "check_positive_int")


# ----------------------------------------------------------------------------- n_jobs
def test_n_jobs_none_is_every_available_cpu() -> None:
    assert check_n_jobs(None) is None
    assert resolve_n_jobs(None) == available_cpus()


@pytest.mark.parametrize("value", [1, 3, np.int64(2)])
def test_positive_n_jobs_is_that_many_workers(value) -> None:
    assert resolve_n_jobs(value) == int(value) and type(resolve_n_jobs(value)) is int


def test_more_workers_than_cpus_are_given_as_asked() -> None:
    n = available_cpus() * 4 + 1
    assert resolve_n_jobs(n) == n


def test_negative_n_jobs_counts_back_from_all_cpus(monkeypatch) -> None:
    monkeypatch.setattr(checks, "available_cpus", lambda: 8)
    assert resolve_n_jobs(-1) == 8
    assert resolve_n_jobs(-2) == 7
    assert resolve_n_jobs(-8) == 1
    assert resolve_n_jobs(-100) == 1  # never fewer than one worker
    assert resolve_n_jobs(None) == 8


@pytest.mark.parametrize("value", [0, np.int64(0), True, False, np.bool_(False), 1.5, "2"])
def test_n_jobs_rejects_zero_bools_and_non_integers(value) -> None:
    with pytest.raises(ParameterError, match=r"^workers must be a non-zero integer or None"):
        check_n_jobs(value, "workers")
    with pytest.raises(ParameterError, match=r"^workers must be a non-zero integer or None"):
        resolve_n_jobs(value, "workers")


def test_components_follow_the_one_rule(monkeypatch) -> None:
    """LevenshteinIndex (processes) and the blocked search resolve n_jobs the same way."""
    from tabmem.neighbors.levenshtein import LevenshteinIndex

    idx = LevenshteinIndex(n_jobs=None).fit(["ab", "abc"])
    assert idx.query(["ab"]).distance.tolist() == [0]
    with pytest.raises(ParameterError, match=r"^n_jobs must be a non-zero integer or None"):
        LevenshteinIndex(n_jobs=0).fit(["ab"]).query(["ab"])
    with pytest.raises(ParameterError, match=r"^n_jobs must be a non-zero integer or None"):
        LevenshteinIndex(n_jobs=True).fit(["ab"]).query(["ab"])


def test_cli_n_jobs_option_converts_through_the_rule() -> None:
    import click

    from tabmem.cli._options import NJOBS

    assert NJOBS.convert("-3", None, None) == -3
    assert NJOBS.convert(" 2 ", None, None) == 2
    for bad in ("0", "many", "1.5"):
        with pytest.raises(click.BadParameter):
            NJOBS.convert(bad, None, None)


def test_study_jobs_follow_the_rule(monkeypatch) -> None:
    from types import SimpleNamespace

    import tabmem.studies.runner as runner

    monkeypatch.setattr(runner, "available_cpus", lambda: 8)
    monkeypatch.setattr(checks, "available_cpus", lambda: 8)
    auto = SimpleNamespace(threads="auto")
    assert runner._resolve_parallelism(auto, "local", -1, 20)[:2] == (8, 1)
    assert runner._resolve_parallelism(auto, "local", -5, 20)[:2] == (4, 2)
    pinned = SimpleNamespace(threads=2)
    jobs, threads, note = runner._resolve_parallelism(pinned, "local", 16, 20)
    assert (jobs, threads) == (4, 2) and note.startswith("jobs=16 x threads 2 would oversubscribe 8 CPU(s)")
    with pytest.raises(ParameterError, match=r"^jobs must be a non-zero integer or None"):
        runner._resolve_parallelism(auto, "local", 0, 20)
