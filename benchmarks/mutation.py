"""Mutation checking of the core modules with mutmut: do the tests notice a small bug?

mutmut (3.x) rewrites one operator, constant or call at a time in a module ("mutants") and runs the
tests that cover the mutated function; a mutant is *killed* when a test fails. A surviving mutant is
either a hole in the tests (add a test) or *equivalent* (no observable behaviour changes, e.g.
``x < 0`` vs ``x <= 0`` where x is never 0). Mark a line judged equivalent in the source itself,
``...  # pragma: no mutate  (reason)``: mutmut does not mutate it, and the mark survives edits
(mutmut's positional mutant names do not). Run this after changing a core module and read the
survivors; there is no kill-rate target.

Run it from a separate virtualenv (mutmut is not a project dependency; an unpinned torch pulls CUDA)::

    python3 -m venv ../venvs/mutation
    ../venvs/mutation/bin/pip install torch==2.13.0
    ../venvs/mutation/bin/pip install -e ".[all,test]" mutmut
    nice -n 10 ../venvs/mutation/bin/python benchmarks/mutation.py --modules digit_modifier tlp
    ../venvs/mutation/bin/python benchmarks/mutation.py --report-only      # tables from earlier runs
    ../venvs/mutation/bin/python benchmarks/mutation.py --modules tlp --recheck  # after adding tests

Each module runs in its own copy of the work tree under ``--work`` (mutmut writes a ``mutants/``
folder there), one module at a time, with only that module's test files, one torch/BLAS thread
and ``--max-children`` test processes. mutmut remembers finished mutants: a run stopped by
``--time-limit`` continues where it left off when started again (without ``--fresh``). CPU-heavy:
hundreds of mutants per module, each running the module's tests.

``--recheck`` (after adding tests) re-runs the survivors and the timeouts (on a busy machine a
timeout may be a slow test rather than a kill). Adding a test file to a module's selection makes
mutmut forget every verdict, so the script keeps them in ``<work>/<module>/verdicts.json``; a run
stopped before the end and then rechecked continues with ``--unchecked`` (the mutants never run)::

    nice -n 10 ../venvs/mutation/bin/python benchmarks/mutation.py --modules replicas --unchecked
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: module -> (source files to mutate, test files that guard them, extra pytest arguments)
MODULES: dict[str, tuple[list[str], list[str], list[str]]] = {
    "replicas": (
        [
            "src/tabmem/memorization/replicas.py",
            "src/tabmem/memorization/uncertainty.py",
            "src/tabmem/memorization/copies.py",
        ],
        [
            "tests/memorization/test_replicas.py",
            "tests/memorization/test_replica_threshold.py",
            "tests/memorization/test_replica_summary_edges.py",
            "tests/memorization/test_replica_reporting.py",
            "tests/memorization/test_uncertainty.py",
            "tests/memorization/test_copies.py",
        ],
        [],
    ),
    "distances": (
        ["src/tabmem/neighbors/distances.py"],
        [
            "tests/neighbors/test_index.py",
            "tests/neighbors/test_norms.py",
            "tests/memorization/test_replicas.py",
            "tests/memorization/test_extreme_magnitudes.py",
            "tests/neighbors/test_fang2024_kernel.py",
            "tests/neighbors/test_fang2024_pruned.py",
            "tests/neighbors/test_gower_l2_kernels.py",
            "tests/neighbors/test_distance_helpers.py",
            "tests/neighbors/test_far_values.py",
        ],
        [],
    ),
    "blocked": (
        ["src/tabmem/neighbors/blocked.py", "src/tabmem/neighbors/index.py"],
        [
            "tests/neighbors/test_index.py",
            "tests/memorization/test_replicas.py",
            "tests/neighbors/test_blocked_search_contract.py",
            "tests/neighbors/test_index_contract.py",
        ],
        [],
    ),
    "levenshtein": (
        ["src/tabmem/neighbors/levenshtein.py"],
        [
            "tests/attacks/test_levenshtein.py",
            "tests/neighbors/test_levenshtein_bag_bound.py",
            "tests/neighbors/test_levenshtein_contract.py",
            "tests/neighbors/test_levenshtein_workers.py",
        ],
        [],
    ),
    "evaluation": (
        ["src/tabmem/attacks/evaluation.py"],
        ["tests/attacks/test_evaluation.py", "tests/attacks/test_edge_cases.py", "tests/attacks/test_tpr_ci.py"],
        [],
    ),
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
            "tests/metrics/test_shape_trend.py",
            "tests/metrics/test_extreme_values.py",
            "tests/metrics/test_shape_contract.py",
            "tests/metrics/test_trend_contract.py",
            "tests/metrics/test_wasserstein_contract.py",
            "tests/metrics/test_mmd_contract.py",
            "tests/metrics/test_alpha_beta_contract.py",
            "tests/metrics/test_dcr_share_contract.py",
            "tests/metrics/test_dcr_share_margins.py",
            "tests/metrics/test_detection_contract.py",
            "tests/metrics/test_detection_options.py",
            "tests/metrics/test_mle_contract.py",
        ],
        [],
    ),
    "mitigation": (
        [
            "src/tabmem/mitigation/association.py",
            "src/tabmem/mitigation/tabcutmix.py",
            "src/tabmem/mitigation/smote.py",
            "src/tabmem/mitigation/mixup.py",
            "src/tabmem/mitigation/ijf.py",
            "src/tabmem/mitigation/ranking.py",
        ],
        [
            "tests/mitigation/test_association.py",
            "tests/mitigation/test_augmenters.py",
            "tests/mitigation/test_augmenter_conformance.py",
            "tests/mitigation/test_ranking.py",
            "tests/mitigation/test_association_edges.py",
            "tests/mitigation/test_augmenter_draws.py",
            "tests/mitigation/test_smote_contract.py",
            "tests/mitigation/test_ranking_contract.py",
        ],
        [],
    ),
}

#: mutmut exit code -> status (mutmut.stats.status_by_exit_code; a timeout counts as killed, as mutmut counts it)
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout"}
STATUS.update({-24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "killed", None: "not checked"})


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
    """Copy the current tests and unmutated sources into an earlier run's copy (and mutmut's).

    The mutated modules themselves must not have changed since the copy was made (their mutants
    would be stale): that stops the script, and ``--fresh`` starts over.
    """
    dest = work / name
    sources = MODULES[name][0]
    for f in sources:
        if (ROOT / f).read_bytes() != (dest / f).read_bytes():
            sys.exit(f"[{name}] {f} changed since the copy was made: run with --fresh")
    for f in (ROOT / "src").rglob("*.py"):
        rel = f.relative_to(ROOT).as_posix()
        if rel not in sources:
            for sub in (dest, dest / "mutants"):
                if (sub / "src").exists():
                    (sub / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, sub / rel)
    # which tests reach which function is collected again: a changed test (not only a new one) may
    # reach more functions, and mutmut only collects for new test names
    (dest / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
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
    # The tests import the mutated copy: mutmut puts <copy>/mutants/src first on sys.path, ahead of
    # whatever source tree the venv's editable install points at, and stops when no test reaches a
    # mutated function. Do not set PYTHONPATH to mutants/src here: the folder does not exist yet when
    # mutmut starts, Python caches it as "no importer", and the tests then import the editable tree.
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


def verdicts(name: str, work: Path) -> dict[str, str]:
    """Every mutant's latest verdict, kept across runs in ``<copy>/verdicts.json``.

    mutmut forgets every verdict when the test selection changes (a recheck that adds a test file
    does), so this file keeps them: a mutant keeps its last checked verdict until it is checked
    again. The copy's sources never change between runs (``--fresh`` makes a new copy and drops
    the file), and tests are only added between runs, so a killed mutant stays killed.
    """
    path = work / name / "verdicts.json"
    merged: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    for key, status in results(name, work).items():
        if status != "not checked" or key not in merged:
            merged[key] = status
    if merged:
        path.write_text(json.dumps(merged, indent=1, sort_keys=True, ensure_ascii=False))
    return merged


def summarise(name: str, statuses: dict[str, str]) -> dict[str, object]:
    counts = Counter(statuses.values())
    checked = {k: s for k, s in statuses.items() if s != "not checked"}
    killed = sum(1 for s in checked.values() if s in ("killed", "timeout"))
    return {
        "module": name,
        "mutants": len(statuses),
        "checked": len(checked),
        "killed": killed,
        "survived": sorted(k for k, s in checked.items() if s not in ("killed", "timeout")),
        "statuses": dict(counts),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modules", nargs="+", default=list(MODULES), choices=list(MODULES))
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tabmem-mutation")
    ap.add_argument("--max-children", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per module (resumable)")
    ap.add_argument("--fresh", action="store_true", help="start over instead of continuing earlier runs")
    ap.add_argument("--report-only", action="store_true", help="only print the tables of earlier runs")
    ap.add_argument(
        "--recheck",
        action="store_true",
        help="copy the current tests in and re-run only the surviving (and timed-out) mutants",
    )
    ap.add_argument(
        "--unchecked",
        action="store_true",
        help="copy the current tests in and run the mutants not checked yet (after a stopped run and a recheck)",
    )
    ap.add_argument("--json", type=Path, help="also write the summary here")
    args = ap.parse_args()
    summaries = []
    for name in args.modules:
        if args.recheck or args.unchecked:
            before = verdicts(name, args.work)  # before mutmut resets them for the new test selection
            # a timeout on a busy machine may be a slow test, not a killed mutant: check it again
            wanted = ("survived", "no tests", "timeout") if args.recheck else ("not checked",)
            names = [k for k, v in before.items() if v in wanted]
            sync_tests(name, args.work)
            if names:
                run_module(name, args.work, args.max_children, args.time_limit, False, names)
        elif not args.report_only:
            run_module(name, args.work, args.max_children, args.time_limit, args.fresh)
        statuses = verdicts(name, args.work)
        if statuses:
            summaries.append(summarise(name, statuses))
    print(f"\n{'module':16s} {'mutants':>7s} {'checked':>7s} {'killed':>6s} {'survived':>8s}")
    for s in summaries:
        print(f"{s['module']:16s} {s['mutants']:7d} {s['checked']:7d} {s['killed']:6d} {len(s['survived']):8d}")
    for s in summaries:
        if s["survived"]:
            print(
                f"\n[{s['module']}] survivors: add a test, or mark an equivalent line '# pragma: no mutate  (reason)' "
                f"(mutmut show NAME in {args.work / s['module']}):"
            )
            status = verdicts(str(s["module"]), args.work)
            for k in s["survived"]:
                print(f"  {k}  ({status[k]})")
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=2))


if __name__ == "__main__":
    main()
