"""Print the corpus as a table: case, command, expected outcome, observed outcome (Markdown).

    PYTHONPATH=src python tests/corpus/outcomes.py [--only ID,ID] [--skip-commands train,sample]

The observed outcome is one of error (clear, one line), ok, warn, vague (an error that is not one
clear line, or names nothing), wrong (exit 0 with a wrong number or no warning), traceback, hang.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from corpus_cases import params  # noqa: E402
from corpus_runner import TRAIN_FAST, classify, materialise, run_case  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-commands", default="")
    ap.add_argument("--start", type=int, default=0, help="skip the first START (case, command) pairs")
    ap.add_argument("--no-header", action="store_true")
    args = ap.parse_args()
    only = {x for x in args.only.split(",") if x}
    skip = {x for x in args.skip_commands.split(",") if x}
    root = Path(tempfile.mkdtemp(prefix="tabmem-corpus-"))
    model = None
    counts: Counter[str] = Counter()
    if not args.no_header:
        print("| case | item | command | expected | observed | detail |")
        print("|---|---|---|---|---|---|")
    for i, (case, command) in enumerate(params()):
        if i < args.start or (only and case.id not in only) or command in skip:
            continue
        if command == "sample" and model is None:
            from tabmem.cli import main as cli

            (root / "model").mkdir(parents=True, exist_ok=True)
            files, _ = materialise({}, root / "model")
            model = root / "model" / "run"
            try:
                cli(["train", "--train", str(files["train"]), *TRAIN_FAST, "--out", str(model)])
            except SystemExit:
                pass
        result = run_case(case, command, root / f"{i}", model=model)
        outcome, problems = classify(result)
        counts[outcome] += 1
        detail = "; ".join(problems)[:160].replace("|", "/").replace("\n", " ")
        print(f"| {case.id} | {case.item} | {command} | {case.expect} | {outcome} | {detail} |", flush=True)
    print()
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
