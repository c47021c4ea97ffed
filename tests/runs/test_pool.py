"""The one pool of the studies and the shadows: local (in this process, spawned workers) and Ray."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from pathlib import Path

import pytest
from pool_tasks import task

from tabmem._checks import available_cpus
from tabmem.errors import ParameterError, TabmemError
from tabmem.runs.pool import POOLS, check_pool, run_pool

HERE = str(Path(__file__).resolve().parent)


def _run(payloads, **kw):
    done, failed, ticks = {}, {}, []
    run_pool(
        task,
        payloads,
        on_done=done.__setitem__,
        on_failed=failed.__setitem__,
        on_tick=lambda: ticks.append(1),
        **kw,
    )
    return done, failed, ticks


def _squares(n):
    return [{"op": "square", "x": x, "parent": os.getpid()} for x in range(n)]


def test_in_process_runs_in_order_and_reports_a_raising_task_in_one_line():
    order = []
    payloads = _squares(3) + [{"op": "raise", "x": 7}]
    run_pool(
        lambda p: order.append(p["x"]) or task(p),  # a closure: jobs=1 never pickles
        payloads,
        on_done=lambda i, r: order.append(("done", i, r["y"], r["pid"] == os.getpid())),
        on_failed=lambda i, why: order.append(("failed", i, why)),
    )
    assert order == [
        0,
        ("done", 0, 0, True),
        1,
        ("done", 1, 1, True),
        2,
        ("done", 2, 4, True),
        7,
        ("failed", 3, "ValueError: bad x=7"),
    ]


def test_spawned_workers_give_the_in_process_results_and_a_dying_worker_fails_only_its_task():
    payloads = _squares(5)
    payloads[1] = {"op": "die", "x": 1, "parent": os.getpid()}
    payloads[3] = {"op": "raise", "x": 3}
    done, failed, ticks = _run(payloads, jobs=2)
    assert sorted(done) == [0, 2, 4] and {i: done[i]["y"] for i in done} == {0: 0, 2: 4, 4: 16}
    assert all(r["pid"] != os.getpid() for r in done.values())
    assert failed[1] == "worker process died (exit code -9: killed, or out of memory)"
    assert failed[3] == "ValueError: bad x=3"
    assert ticks and not mp.active_children()  # every worker is stopped


def test_an_error_in_a_callback_stops_the_workers_and_propagates():
    def stop(i, result):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_pool(task, _squares(6), on_done=stop, on_failed=stop, jobs=2)
    assert not mp.active_children()


def test_names_and_address_are_checked():
    assert POOLS == ("local", "ray")
    with pytest.raises(ParameterError, match="executor"):
        check_pool("dask")
    with pytest.raises(ParameterError, match="address applies to executor='ray'"):  # the library names parameters
        run_pool(task, _squares(1), on_done=print, on_failed=print, address="auto")
    run_pool(task, [], on_done=print, on_failed=print, executor="ray")  # nothing to run: Ray is not needed


def test_ray_missing_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(TabmemError) as err:
        _run(_squares(2), executor="ray")
    assert str(err.value) == "executor='ray' needs Ray: pip install 'tabmem[ray]'"


@pytest.fixture()
def ray_env(monkeypatch):
    """No Ray running, and PYTHONPATH reaching pool_tasks: the local instance's workers inherit it."""
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p))
    return ray


def test_ray_local_instance_gives_the_local_results_and_is_shut_down(ray_env):
    payloads = _squares(4) + [{"op": "raise", "x": 9}, {"op": "die", "x": 5, "parent": os.getpid()}]
    local_done, local_failed, _ = _run(payloads, jobs=2)
    done, failed, ticks = _run(payloads, executor="ray", jobs=2, num_cpus=1)
    strip = lambda d: {i: {k: v for k, v in r.items() if k != "pid"} for i, r in d.items()}  # noqa: E731
    assert strip(done) == strip(local_done) and sorted(done) == [0, 1, 2, 3]
    assert failed[4] == local_failed[4] == "ValueError: bad x=9"
    assert failed[5].startswith("ray task failed (") and "\n" not in failed[5]
    assert not ray_env.is_initialized()  # the instance the pool started is shut down


def test_ray_refuses_a_task_no_node_can_hold(ray_env):
    cpus = available_cpus()
    with pytest.raises(TabmemError) as err:
        _run(_squares(2), executor="ray", num_cpus=cpus + 1, resources_from="--threads")
    assert str(err.value) == (
        f"no Ray node has the {cpus + 1} CPU(s) and 0 GPU(s) a task asks for "
        f"(--threads; the largest node has {cpus} CPU(s), 0 GPU(s))"
    )
    assert not ray_env.is_initialized()
