"""Mutation checking of the core modules with mutmut: do the tests notice a small bug?

mutmut (3.x) rewrites one operator, constant or call at a time in a module ("mutants") and runs the
tests that cover the mutated function; a mutant is *killed* when a test fails. A surviving mutant is
either a hole in the tests (add a test) or *equivalent* (no observable behaviour changes, e.g.
``x < 0`` vs ``x <= 0`` where x is never 0): those are listed with the reason in
``benchmarks/mutation_equivalent.json`` and left out of the kill rate. Target: >= 90 % of the
non-equivalent mutants killed on every module.

Run it from a separate virtualenv (mutmut is not a project dependency; an unpinned torch pulls CUDA)::

    python3 -m venv /work/venvs/mutation
    /work/venvs/mutation/bin/pip install torch==2.13.0
    /work/venvs/mutation/bin/pip install -e ".[all,test]" mutmut
    nice -n 10 /work/venvs/mutation/bin/python benchmarks/mutation.py --modules digit_modifier tlp
    /work/venvs/mutation/bin/python benchmarks/mutation.py --report-only      # tables from earlier runs
    /work/venvs/mutation/bin/python benchmarks/mutation.py --modules tlp --recheck  # after adding tests

Each module runs in its own copy of the work tree under ``--work`` (mutmut writes a ``mutants/``
folder there), one module at a time, with only that module's test files, one torch/BLAS thread
and ``--max-children`` test processes. mutmut remembers finished mutants: a run stopped by
``--time-limit`` continues where it left off when started again (without ``--fresh``). CPU-heavy:
hundreds of mutants per module, each running the module's tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: module -> (source files to mutate, test files that guard them, extra pytest arguments)
MODULES: dict[str, tuple[list[str], list[str], list[str]]] = {
    "replicas": (
        ["src/tabmem/memorization/replicas.py"],
        [
            "tests/memorization/test_replicas.py",
            "tests/memorization/test_replica_threshold.py",
            "tests/memorization/test_replica_summary_edges.py",
        ],
        [],
    ),
    "distances": (
        ["src/tabmem/neighbors/distances.py"],
        ["tests/neighbors/test_index.py", "tests/memorization/test_replicas.py"],
        [],
    ),
    "blocked": (
        ["src/tabmem/neighbors/blocked.py", "src/tabmem/neighbors/index.py"],
        ["tests/neighbors/test_index.py", "tests/memorization/test_replicas.py"],
        [],
    ),
    "levenshtein": (["src/tabmem/neighbors/levenshtein.py"], ["tests/attacks/test_levenshtein.py"], []),
    "evaluation": (["src/tabmem/attacks/evaluation.py"], ["tests/attacks/test_evaluation.py"], []),
    "tlp": (
        ["src/tabmem/defenses/tlp.py", "src/tabmem/defenses/tlp_search.py"],
        ["tests/defenses/test_tlp.py", "tests/defenses/test_tlp_search.py"],
        [],
    ),
    "digit_modifier": (["src/tabmem/defenses/digit_modifier.py"], ["tests/defenses/test_digit_modifier.py"], []),
    "metrics": (
        [
            "src/tabmem/metrics/shape.py",
            "src/tabmem/metrics/trend.py",
            "src/tabmem/metrics/mmd.py",
            "src/tabmem/metrics/wasserstein.py",
            "src/tabmem/metrics/alpha_beta.py",
            "src/tabmem/metrics/dcr_share.py",
            "src/tabmem/metrics/detection.py",
            "src/tabmem/metrics/mle.py",
        ],
        [
            "tests/metrics/test_metric_references.py",
            "tests/metrics/test_metric_protocols.py",
            "tests/metrics/test_shape_trend_scipy.py",
        ],
        [],
    ),
    # the mitigation augmenters (issue 10) join here once they are on main
}

#: mutmut exit code -> status (mutmut.stats.status_by_exit_code; a timeout counts as killed, as mutmut counts it)
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout"}
STATUS.update({-24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "killed", None: "not checked"})
EQUIVALENT_FILE = ROOT / "benchmarks" / "mutation_equivalent.json"


def _copy_tree(dest: Path) -> None:
    """The work tree's tracked and untracked-but-not-ignored files that the tests need."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "src", "tests", "pyproject.toml", "README.md"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / f).is_file():
            shutil.copy2(ROOT / f, target)


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _write_config(name: str, pyproject: Path) -> None:
    """(Re)write the ``[tool.mutmut]`` section of a copy's pyproject.toml for module ``name``."""
    sources, tests, extra = MODULES[name]
    text = pyproject.read_text().split("\n[tool.mutmut]\n")[0]
    pyproject.write_text(
        text + "\n[tool.mutmut]\n"
        'source_paths = ["src/"]\n'
        f"only_mutate = {_toml_list(sources)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
        f"pytest_add_cli_args = {_toml_list(['-p', 'no:cacheprovider', '-q', *extra])}\n"
    )


def prepare(name: str, work: Path, fresh: bool) -> Path:
    dest = work / name
    if fresh and dest.exists():
        shutil.rmtree(dest)
    if not (dest / "pyproject.toml").exists():
        _copy_tree(dest)
        _write_config(name, dest / "pyproject.toml")
    return dest


def sync_tests(name: str, work: Path) -> None:
    """Copy the current test files into an earlier run's copy (and mutmut's), to re-check survivors."""
    dest = work / name
    for sub in (dest, dest / "mutants"):
        if sub.exists():
            shutil.rmtree(sub / "tests", ignore_errors=True)
            shutil.copytree(ROOT / "tests", sub / "tests", ignore=shutil.ignore_patterns("__pycache__"))
            if (sub / "pyproject.toml").exists():
                _write_config(name, sub / "pyproject.toml")  # the module's test selection may have grown


def run_module(
    name: str, work: Path, max_children: int, time_limit: float | None, fresh: bool, only: list[str] | None = None
) -> None:
    dest = prepare(name, work, fresh)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = [str(mutmut), "run", "--max-children", str(max_children), *(only or [])]
    print(f"[{name}] {' '.join(cmd)} in {dest}", flush=True)
    t0 = time.perf_counter()
    with open(dest / "mutmut-run.log", "a") as log:
        try:
            subprocess.run(cmd, cwd=dest, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=time_limit)
        except subprocess.TimeoutExpired:
            print(f"[{name}] stopped after {time_limit:.0f} s (run again to continue)", flush=True)
    print(f"[{name}] {time.perf_counter() - t0:.0f} s", flush=True)


def results(name: str, work: Path) -> dict[str, str]:
    """mutant name -> status, from mutmut's per-file ``.meta`` records."""
    out: dict[str, str] = {}
    for meta in sorted((work / name / "mutants").rglob("*.meta")):
        data = json.loads(meta.read_text())
        for key, code in data.get("exit_code_by_key", {}).items():
            out[key] = STATUS.get(code, "suspicious")
    return out


def summarise(name: str, statuses: dict[str, str], equivalent: dict[str, str]) -> dict[str, object]:
    counts = Counter(statuses.values())
    checked = {k: s for k, s in statuses.items() if s != "not checked"}
    eq = [k for k in checked if k in equivalent and checked[k] != "killed"]
    killed = sum(1 for s in checked.values() if s in ("killed", "timeout"))
    denominator = len(checked) - len(eq)
    return {
        "module": name,
        "mutants": len(statuses),
        "checked": len(checked),
        "killed": killed,
        "equivalent": len(eq),
        "survived": sorted(k for k, s in checked.items() if s not in ("killed", "timeout") and k not in eq),
        "kill_rate": killed / denominator if denominator else float("nan"),
        "statuses": dict(counts),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modules", nargs="+", default=list(MODULES), choices=list(MODULES))
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "tabmem-mutation")
    ap.add_argument("--max-children", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per module (resumable)")
    ap.add_argument("--fresh", action="store_true", help="start over instead of continuing earlier runs")
    ap.add_argument("--report-only", action="store_true", help="only print the tables of earlier runs")
    ap.add_argument(
        "--recheck", action="store_true", help="copy the current tests in and re-run only the surviving mutants"
    )
    ap.add_argument("--json", type=Path, help="also write the summary here")
    ap.add_argument("--target", type=float, default=0.9)
    args = ap.parse_args()
    equivalent = json.loads(EQUIVALENT_FILE.read_text()) if EQUIVALENT_FILE.exists() else {}
    summaries = []
    for name in args.modules:
        if args.recheck:
            sync_tests(name, args.work)
            survivors = [k for k, v in results(name, args.work).items() if v in ("survived", "no tests")]
            if survivors:
                run_module(name, args.work, args.max_children, args.time_limit, False, survivors)
        elif not args.report_only:
            run_module(name, args.work, args.max_children, args.time_limit, args.fresh)
        statuses = results(name, args.work)
        if statuses:
            summaries.append(summarise(name, statuses, equivalent))
    print(f"\n{'module':16s} {'mutants':>7s} {'checked':>7s} {'killed':>6s} {'equiv.':>6s} {'kill rate':>9s}")
    for s in summaries:
        print(
            f"{s['module']:16s} {s['mutants']:7d} {s['checked']:7d} {s['killed']:6d} {s['equivalent']:6d} "
            f"{s['kill_rate']:9.1%}"
        )
    for s in summaries:
        if s["survived"]:
            print(f"\n[{s['module']}] survivors (mutmut show NAME in {args.work / s['module']}):")
            for k in s["survived"]:
                print(f"  {k}  ({[v for m, v in results(s['module'], args.work).items() if m == k][0]})")
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=2))
    done = [s for s in summaries if s["checked"] == s["mutants"]]
    if any(s["kill_rate"] < args.target for s in done):
        sys.exit(1)


if __name__ == "__main__":
    main()
