"""The peer benchmark's own logic with fake peers (no peer installed): caps, outcomes, skips, the table."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_peers import fill, format_table, run_matrix  # noqa: E402
from peercap import classify, run_capped  # noqa: E402

PY = sys.executable
MIB = 2**20


@pytest.mark.parametrize(
    ("rc", "tail", "timed_out", "expected"),
    [
        (0, "", False, "ok"),
        (0, "", True, "timeout"),
        (1, "Traceback ...\nMemoryError", False, "out of memory"),
        (1, "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 7.45 GiB", False, "out of memory"),
        (-signal.SIGABRT, "terminate called after throwing an instance of 'std::bad_alloc'", False, "out of memory"),
        (-signal.SIGKILL, "", False, "out of memory"),
        (-signal.SIGSEGV, "some message", False, "error: signal 11"),
        (2, "Traceback\n  File x\nValueError: bad column 'a'\n\n", False, "error: ValueError: bad column 'a'"),
        (3, "", False, "error: exit status 3"),
    ],
)
def test_classify(rc, tail, timed_out, expected):
    assert classify(rc, tail, timed_out) == expected


def test_an_allocation_beyond_the_cap_is_out_of_memory(tmp_path):
    rec = run_capped([PY, "-c", "b = bytearray(1 << 30); print(len(b))"], 256 * MIB, 60, tmp_path / "log")
    assert rec["outcome"] == "out of memory"
    assert rec["returncode"] == 1
    # the child never held the gigabyte: its peak is that of a child doing nothing (a forked child's peak
    # counts the resident pages it inherits, so it grows with this process: the full suite's is ~0.4 GiB)
    idle = run_capped([PY, "-c", "pass"], 256 * MIB, 60, tmp_path / "idle")
    assert rec["peak_gib"] < idle["peak_gib"] + 0.1
    # the same call without a cap holds it, and its peak says so
    rec = run_capped([PY, "-c", "b = bytearray(1 << 28); b[::4096] = b'x' * len(b[::4096])"], None, 60, tmp_path / "l2")
    assert rec["outcome"] == "ok"
    assert rec["peak_gib"] >= 0.25


def test_timeout_kills_the_process_group(tmp_path):
    # a child that starts a grandchild: both must die at the limit, and the call returns at once
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    rec = run_capped([PY, "-c", code], None, 1.0, tmp_path / "log")
    assert rec["outcome"] == "timeout"
    assert 1.0 <= rec["wall_s"] < 10


def test_error_line_and_cpu_seconds(tmp_path):
    rec = run_capped(
        [PY, "-c", "import sys; print('working'); sys.exit('bad input: column x')"], None, 60, tmp_path / "log"
    )
    assert rec["outcome"] == "error: bad input: column x"
    assert "working" in (tmp_path / "log").read_text()
    busy = run_capped(
        [PY, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"],
        None,
        60,
        tmp_path / "l",
    )
    assert busy["outcome"] == "ok" and busy["cpu_s"] >= 0.5 and busy["wall_s"] >= busy["cpu_s"] * 0.5


def test_fill_puts_paths_and_config_values_in(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"train": "/t.csv", "numerical": ["a", "b"]}))
    args = fill(["x", "{cfg:train}", "--num", "{cfg:numerical}", "{config}", "{out}/r.json"], cfg, tmp_path / "o")
    assert args == ["x", "/t.csv", "--num", "a,b", str(cfg), f"{tmp_path / 'o'}/r.json"]


def test_matrix_interleaves_skips_after_failure_and_tabulates(tmp_path):
    configs = {}
    for n in (10, 20, 30):
        configs[n] = tmp_path / f"n{n}.json"
        configs[n].write_text(json.dumps({"n": n}))
    # "fast" reports its own figure; "hungry" needs n MiB x 20 (over the 512 MiB cap from n = 30);
    # "missing" has no interpreter
    fast = [PY, "-c", "import json, sys; json.dump({'n': json.load(open(sys.argv[1]))['n']}, open(sys.argv[2], 'w'))",
            "{config}", "{out}/result.json"]  # fmt: skip
    hungry = [
        PY,
        "-c",
        "import json, sys; n = json.load(open(sys.argv[1]))['n']; b = bytearray(n * 20 << 20)",
        "{config}",
    ]
    tools = {"fast": fast, "hungry": hungry, "missing": ["/nonexistent/python", "x"]}
    calls = []
    results = run_matrix(tools, configs, tmp_path / "out", 512 * MIB, 60, echo=calls.append)
    assert [(r["tool"], r["n"]) for r in results] == [(t, n) for n in (10, 20, 30) for t in tools]
    by = {(r["tool"], r["n"]): r for r in results}
    assert [by["fast", n]["inner"]["n"] for n in (10, 20, 30)] == [10, 20, 30]  # its own JSON, per size
    assert by["hungry", 10]["outcome"] == by["hungry", 20]["outcome"] == "ok"
    assert by["hungry", 30]["outcome"] == "out of memory"
    assert by["missing", 10]["outcome"] == "not installed"
    assert all("load_before" in by["fast", n] for n in (10, 20, 30))
    assert len(calls) == 9

    # a failure at one size: the larger sizes are not run
    results = run_matrix({"hungry": hungry}, {30: configs[30], 40: configs[20]}, tmp_path / "o2", 512 * MIB, 60)
    assert [r["outcome"] for r in results] == ["out of memory", "not run: out of memory at 30 rows"]

    table = format_table(results, [30, 40, 50]).splitlines()
    assert table[0] == "| tool | 30 rows | 40 rows | 50 rows |"
    assert table[2].startswith("| hungry | **out of memory** after ")
    assert table[2].endswith(" | not run: out of memory at 30 rows | not run |")
