"""``audit_to_dir``: the one audit sequence behind ``tabmem audit`` and the study's ``audit`` step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tabmem
from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.runs.audit import AUDIT_RUN, audit_to_dir, validate_audit_tables
from tabmem.runs.protocol import RunDirectory

OUTPUTS = ("summary.json", "replicas.csv", "records.csv", "rare_values.csv")
SRC = str(Path(tabmem.__file__).resolve().parents[1])


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": np.round(rng.normal(50, 10, n), 3),
            "y": np.round(rng.exponential(1000, n), 2),
            "k": rng.choice(["a", "b", "c"], n).astype(object),
        }
    )


@pytest.fixture
def tables():
    train = _table(150, 0)
    synthetic = pd.concat([train.iloc[:30], _table(90, 1)], ignore_index=True)  # 30 planted copies
    return train, synthetic, _table(100, 2)


@pytest.fixture
def files(tables, tmp_path):
    paths = {}
    for name, df in zip(("train", "syn", "hold"), tables):
        paths[name] = tmp_path / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    return paths


def _cli_args(files, out: Path) -> list[str]:
    return [
        "audit",
        "--train",
        str(files["train"]),
        "--synthetic",
        str(files["syn"]),
        "--holdout",
        str(files["hold"]),
    ] + [
        "--categorical",
        "k",
        "--n-jobs",
        "1",
        "--out",
        str(out),
    ]


def _audit(*args, **kwargs) -> dict:
    """:func:`audit_to_dir`, its summary as the JSON object it writes."""
    return audit_to_dir(*args, **kwargs).to_dict()


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_outputs_equal_what_tabmem_audit_writes(files, tables, tmp_path):
    main(_cli_args(files, tmp_path / "cli"))
    cli = _summary(tmp_path / "cli")
    schema = Schema.from_dict(cli["schema"])
    train, synthetic, holdout = tables
    detector = ReplicaDetector(n_jobs=1)  # the default distance on both sides (gower)
    lib = _audit(detector, train, synthetic, schema, tmp_path / "lib", holdout=holdout, timed=True)
    assert lib == _summary(tmp_path / "lib")
    assert list(lib) == list(cli)  # same keys, in the same order
    assert list(cli).index("seconds") < list(cli).index("schema")
    lib.pop("seconds"), cli.pop("seconds")
    assert lib == cli
    for name in OUTPUTS[1:]:
        assert (tmp_path / "lib" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert lib["n_replicas"] >= 30 and lib["data_copying"] is not None


def test_untimed_summary_has_no_seconds_and_evidence_is_optional(tables, tmp_path):
    train, synthetic, holdout = tables
    schema = Schema.infer(train, categorical=["k"])
    s = _audit(ReplicaDetector("gower", n_jobs=1), train, synthetic, schema, tmp_path / "a", holdout=holdout)
    assert "seconds" not in s and s["distance"] == "gower" and "authenticity" in s
    bare = _audit(
        ReplicaDetector("gower", n_jobs=1), train, synthetic, schema, tmp_path / "b", evidence=False, n_bootstrap=0
    )
    assert not {"authenticity", "nndr", "data_copying", "identical_matches"} & set(bare)
    assert all(v != v for v in bare["memorization_rate_ci"])  # no interval without resamples (NaN)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(OUTPUTS)  # the lock file goes with the run


def test_validated_tables_serve_every_distance_unvalidated_again(tables, tmp_path, counted):
    """The study step's way: validate once, then one audit_to_dir per distance into out/<distance>."""
    train, synthetic, holdout = tables
    schema = Schema.infer(train, categorical=["k"])
    checked = validate_audit_tables(train, synthetic, schema, holdout=holdout, unseen="mismatch")
    assert counted == Counter({"training": 1, "synthetic": 1, "holdout": 1})
    summaries = {}
    for distance in ("fang2024", "gower", "l2"):
        detector = ReplicaDetector(distance, n_jobs=1)
        summaries[distance] = _audit(
            detector, *checked[:2], schema, tmp_path / distance, holdout=checked[2], unseen="mismatch"
        )
    assert counted == Counter({"training": 1, "synthetic": 1, "holdout": 1})
    for distance, s in summaries.items():
        assert _summary(tmp_path / distance) == s and s["distance"] == distance
    # the same outputs as from the raw tables
    raw = _audit(
        ReplicaDetector("gower", n_jobs=1),
        train,
        synthetic,
        schema,
        tmp_path / "raw",
        holdout=holdout,
        unseen="mismatch",
    )
    assert raw == summaries["gower"]
    for name in OUTPUTS:
        assert (tmp_path / "raw" / name).read_bytes() == (tmp_path / "gower" / name).read_bytes(), name


def test_nan_drop_validated_once_drops_the_same_rows(tables, tmp_path):
    train, synthetic, holdout = tables
    synthetic = synthetic.copy()
    synthetic.loc[[3, 40], "x"] = np.nan
    schema = Schema.infer(train, categorical=["k"])
    checked = validate_audit_tables(train, synthetic, schema, holdout=holdout, nan="drop")
    a = _audit(ReplicaDetector(nan="drop", n_jobs=1), *checked[:2], schema, tmp_path / "a", holdout=checked[2])
    b = _audit(ReplicaDetector(nan="drop", n_jobs=1), train, synthetic, schema, tmp_path / "b", holdout=holdout)
    assert a == b and a["n_synthetic"] == len(synthetic) - 2
    assert (tmp_path / "a" / "replicas.csv").read_bytes() == (tmp_path / "b" / "replicas.csv").read_bytes()


HOLD_LOCK = textwrap.dedent(
    """
    import sys
    from tabmem.runs.audit import AUDIT_RUN
    from tabmem.runs.protocol import RunDirectory

    with RunDirectory(sys.argv[1], AUDIT_RUN).lock():
        print("locked", flush=True)
        sys.stdin.read()  # until the test closes our stdin
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}


def test_a_second_process_auditing_the_same_directory_stops_with_one_line(files, tmp_path):
    """While this process holds the directory's lock, ``tabmem audit`` in another process fails at once."""
    out = tmp_path / "out"
    with RunDirectory(out, AUDIT_RUN).lock():
        proc = subprocess.run(
            [sys.executable, "-m", "tabmem", *_cli_args(files, out)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=300,
        )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error")]
    assert len(errors) == 1 and "being written by another tabmem process" in errors[0], lines
    assert f"pid {os.getpid()}" in errors[0] and "Traceback" not in proc.stderr
    assert not any((out / name).exists() for name in OUTPUTS)  # nothing written by the refused run


def test_audit_to_dir_refuses_a_directory_locked_by_another_process(tables, tmp_path):
    train, synthetic, holdout = tables
    schema = Schema.infer(train, categorical=["k"])
    out = tmp_path / "out"
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(TabmemError, match=rf"being written by another tabmem process \(pid {child.pid}\)"):
            audit_to_dir(ReplicaDetector(n_jobs=1), train, synthetic, schema, out, holdout=holdout)
        assert not (out / "summary.json").exists()
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    # the lock goes with its holder: the directory can be written again
    s = _audit(ReplicaDetector(n_jobs=1), train, synthetic, schema, out, holdout=holdout)
    assert _summary(out) == s
