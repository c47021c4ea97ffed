"""tabmem against its peers on the same tables, in one run: seconds, peak memory, where a tool fails.

Usage (from the repo root; ``--setup`` prints how to create each peer's virtualenv)::

    OMP_NUM_THREADS=1 python benchmarks/bench_peers.py --sizes 10000,30000,100000 --memory-gb 8 --timeout-min 15

Tables: training, holdout and synthetic tables of N rows each, from Adult: the training table is
Adult's train split resampled **with replacement** to N rows, the holdout Adult's test split
resampled to N rows, the synthetic table the training table resampled to N rows; every table's
numerical cells jittered (5% of a standard deviation, about half of the cells:
``bench_replicas.noisy_resample``), so the synthetic table sits close to its training rows and
there is something to find. Written as CSV once per size; every tool reads the same files.

Tools, each a subprocess with its own Python, one at a time, interleaved (every tool at one size,
then the next size), under the same address-space cap (``RLIMIT_AS`` = ``--memory-gb``) and wall-clock
limit (``--timeout-min``), with one BLAS/OpenMP thread (``OMP_NUM_THREADS=1`` etc.):

* ``tabmem-audit``: ``tabmem audit --distance gower --holdout`` (exact replica search with distance
  evidence: synthetic x training, training x training, holdout x training; ``--unseen mismatch``:
  Adult's test split has a country the train split lacks), one thread;
* ``tabmem-dcr``: ``tabmem quality --metrics dcr_share`` (TabSyn's DCR share: synthetic x training and
  synthetic x holdout, exact);
* ``sdmetrics``: ``DCRBaselineProtection`` and ``DCROverfittingProtection`` (``peers/sdmetrics_dcr.py``);
* ``mostlyai-qa``: its distance metrics (``peers/mostlyai_qa_distances.py``);
* ``synthcity``: its nearest-neighbour privacy metrics (``peers/synthcity_nn.py``);
* ``anonymeter``: its linkability attack, every training row a target (``peers/anonymeter_linkability.py``).

Measured per call (``peercap.run_capped``): wall and CPU seconds and peak resident memory of the
process tree it waited for (``os.wait4``), and the outcome: ok, out of memory, timeout, or the
error's last line. The machine's load average is recorded before every call.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import REPO, default_data_dir, require_data_dir  # noqa: E402
from peercap import GIB, run_capped  # noqa: E402

PEERS_DIR = Path(__file__).resolve().parent / "peers"

# name -> (env var with its Python, default Python, driver, distribution, how to create its venv)
PEERS = {
    "sdmetrics": (
        "TABMEM_PEER_SDMETRICS_PYTHON",
        "/tmp/peers-sdm/bin/python",
        "sdmetrics_dcr.py",
        "sdmetrics",
        "python3 -m venv /tmp/peers-sdm && /tmp/peers-sdm/bin/pip install sdmetrics==0.32.0",
    ),
    "mostlyai-qa": (
        "TABMEM_PEER_MOSTLYAI_QA_PYTHON",
        "/tmp/peers-qa/bin/python",
        "mostlyai_qa_distances.py",
        "mostlyai-qa",
        "python3 -m venv /tmp/peers-qa && /tmp/peers-qa/bin/pip install torch==2.13.0 mostlyai-qa==1.10.11",
    ),
    "synthcity": (
        "TABMEM_PEER_SYNTHCITY_PYTHON",
        "/tmp/peers-sc/bin/python",
        "synthcity_nn.py",
        "schneiderkamplab-synthcity",
        "python3 -m venv /tmp/peers-sc && /tmp/peers-sc/bin/pip install torch==2.13.0 schneiderkamplab-synthcity",
    ),
    "anonymeter": (
        "TABMEM_PEER_ANONYMETER_PYTHON",
        "/tmp/peers-anon/bin/python",
        "anonymeter_linkability.py",
        "anonymeter",
        "python3 -m venv /tmp/peers-anon && /tmp/peers-anon/bin/pip install anonymeter==1.1.0",
    ),
}
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}


# ------------------------------------------------------------------ tables
def write_tables(n: int, out: Path, data_dir: str) -> Path:
    """The N-row training / holdout / synthetic CSVs and the drivers' config (module docstring)."""
    from bench_replicas import noisy_resample
    from tabmem.data.datasets import load_dataset

    out.mkdir(parents=True, exist_ok=True)
    config = out / "config.json"
    if config.exists():
        return config
    ds = load_dataset("adult", data_dir=data_dir)
    train = noisy_resample(ds.train, ds.schema, n, seed=1)
    holdout = noisy_resample(ds.test, ds.schema, n, seed=3)
    synthetic = noisy_resample(train, ds.schema, n, seed=2)
    for name, df in (("train", train), ("holdout", holdout), ("synthetic", synthetic)):
        df.to_csv(out / f"{name}.csv", index=False)
    cfg = {k: str(out / f"{k}.csv") for k in ("train", "holdout", "synthetic")}
    cfg |= {"numerical": list(ds.schema.numerical), "categorical": list(ds.schema.categorical), "seed": 0}
    config.write_text(json.dumps(cfg, indent=1))
    return config


# ------------------------------------------------------------------ tools
def tool_commands(python: dict[str, str]) -> dict[str, list[str]]:
    """Every tool's command template; ``{config}``, ``{out}`` and ``{cfg:KEY}`` are filled per call."""
    cols = ["--categorical", "{cfg:categorical}", "--numerical", "{cfg:numerical}"]
    tools = {
        "tabmem-audit": [sys.executable, "-m", "tabmem", "audit", "--train", "{cfg:train}", "--synthetic",
                         "{cfg:synthetic}", "--holdout", "{cfg:holdout}", "--distance", "gower", *cols,
                         "--unseen", "mismatch", "--n-jobs", "1", "--out", "{out}"],
        "tabmem-dcr": [sys.executable, "-m", "tabmem", "quality", "--real", "{cfg:train}", "--synthetic",
                       "{cfg:synthetic}", "--holdout", "{cfg:holdout}", "--metrics", "dcr_share", *cols,
                       "--n-jobs", "1", "--out", "{out}"],
    }  # fmt: skip
    for name, (_, _, driver, _, _) in PEERS.items():
        tools[name] = [python[name], str(PEERS_DIR / driver), "{config}", "{out}/result.json"]
    return tools


def fill(template: list[str], config: Path, out: Path) -> list[str]:
    """``template`` with the config path, the output directory and config values filled in."""
    cfg = json.loads(config.read_text())
    args = []
    for a in template:
        if a.startswith("{cfg:"):
            v = cfg[a[5:-1]]
            args.append(",".join(v) if isinstance(v, list) else str(v))
        else:
            args.append(a.replace("{config}", str(config)).replace("{out}", str(out)))
    return args


def run_matrix(
    tools: dict[str, list[str]],
    configs: dict[int, Path],
    out: Path,
    memory_bytes: int | None,
    timeout_s: float,
    env: dict[str, str] | None = None,
    echo=print,  # noqa: ANN001
) -> list[dict]:
    """Every tool at every size, interleaved (sizes outer, tools inner); one record per call.

    A tool that failed (out of memory, timeout) at one size is not run at the larger ones
    (recorded as ``not run: <outcome> at <size>``): it would only fail later.
    """
    results, failed = [], {}
    for n, config in configs.items():
        for name, template in tools.items():
            if name in failed:
                results.append({"tool": name, "n": n, "outcome": f"not run: {failed[name]}"})
                echo(f"{name:14s} {n:>8,d}  not run: {failed[name]}")
                continue
            if not Path(template[0]).exists():
                results.append({"tool": name, "n": n, "outcome": "not installed", "python": template[0]})
                echo(f"{name:14s} {n:>8,d}  not installed ({template[0]})")
                continue
            call_out = out / "calls" / f"{name}-{n}"
            call_out.mkdir(parents=True, exist_ok=True)
            load = os.getloadavg()[0]
            rec = run_capped(fill(template, config, call_out), memory_bytes, timeout_s, call_out / "log.txt", env=env)
            rec |= {"tool": name, "n": n, "load_before": round(load, 2)}
            inner = call_out / "result.json"
            if inner.exists():
                rec["inner"] = json.loads(inner.read_text())
            results.append(rec)
            if rec["outcome"] in ("out of memory", "timeout"):
                failed[name] = f"{rec['outcome']} at {n:,} rows"
            echo(f"{name:14s} {n:>8,d}  {rec['wall_s']:8.1f} s wall {rec['cpu_s']:8.1f} s CPU "
                 f"{rec['peak_gib']:6.2f} GiB  load {load:4.1f}  {rec['outcome']}")  # fmt: skip
    return results


def format_table(results: list[dict], sizes: list[int]) -> str:
    """A Markdown table, one row per tool, one column per size: wall s (CPU s), peak GiB, outcome."""
    tools = list(dict.fromkeys(r["tool"] for r in results))
    by = {(r["tool"], r["n"]): r for r in results}
    head = "| tool | " + " | ".join(f"{n:,} rows" for n in sizes) + " |"
    lines = [head, "|---|" + "---:|" * len(sizes)]
    for t in tools:
        cells = []
        for n in sizes:
            r = by.get((t, n))
            if r is None:
                cells.append("not run")
            elif "wall_s" not in r:
                cells.append(r["outcome"])
            else:
                cell = f"{r['wall_s']:,.1f} s ({r['cpu_s']:,.1f} CPU), {r['peak_gib']:.2f} GiB"
                cells.append(cell if r["outcome"] == "ok" else f"**{r['outcome']}** after {cell}")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions(python: dict[str, str]) -> dict[str, str]:
    """The installed version of every peer (and tabmem), read from each tool's own interpreter."""
    found = {}
    for name, (_, _, _, dist, _) in [("tabmem", (None, None, None, "tabmem", None)), *PEERS.items()]:
        exe = sys.executable if name == "tabmem" else python[name]
        if not Path(exe).exists():
            continue
        code = f"import importlib.metadata as m; print(m.version({dist!r}))"
        res = subprocess.run([exe, "-c", code], capture_output=True, text=True, check=False)
        found[name] = res.stdout.strip() or res.stderr.strip().splitlines()[-1]
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--tools", default=",".join(["tabmem-audit", "tabmem-dcr", *PEERS]))
    ap.add_argument("--memory-gb", type=float, default=8.0, help="address-space cap of every call (RLIMIT_AS)")
    ap.add_argument("--timeout-min", type=float, default=15.0, help="wall-clock limit of every call")
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--out", default=str(REPO / "runs" / "bench_peers"))
    ap.add_argument("--setup", action="store_true", help="print how to create each peer's virtualenv and exit")
    args = ap.parse_args()
    if args.setup:
        for name, (var, default, _, _, how) in PEERS.items():
            print(f"# {name} (its Python: ${var}, default {default})\n{how}")
        return
    python = {name: os.environ.get(var, default) for name, (var, default, *_) in PEERS.items()}
    sizes = [int(s) for s in args.sizes.split(",")]
    out = Path(args.out)
    data_dir = str(require_data_dir(args.data_dir))
    configs = {n: write_tables(n, out / "tables" / f"n{n}", data_dir) for n in sizes}
    all_tools = tool_commands(python)
    tools = {t: all_tools[t] for t in args.tools.split(",")}
    env = os.environ | ONE_THREAD | {"PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO / "src"))}
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    memory = int(args.memory_gb * GIB)
    results = run_matrix(tools, configs, out, memory, args.timeout_min * 60, env=env)
    table = format_table(results, sizes)
    print(table)
    report = {
        "command": " ".join(sys.argv),
        "started": started,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "memory_gb": args.memory_gb,
        "timeout_min": args.timeout_min,
        "cpus": os.cpu_count(),
        "versions": versions(python),
        "results": results,
        "table": table,
    }
    (out / "results.json").write_text(json.dumps(report, indent=1))
    print(f"wrote {out / 'results.json'}")


if __name__ == "__main__":
    main()
