"""The report reads ``tabmem risk`` outputs (a risk directory, a cell's ``risk/``) and renders the WP29 section."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from cli_run import run
from tabmem.data.schema import Schema
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.report import load_report_data, write_report
from tabmem.report.readers import detect_kind, read_cell, read_risk_dir
from tabmem.runs.audit import audit_to_dir
from tabmem.runs.risk import risk_to_dir

SECRET = "Zzriskville"
SECTION = "Anonymisation risks (WP29)"


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "city": rng.choice(["north", "south", "east"], n).astype(object),
            "income": np.round(rng.normal(50, 10, n), 2),
            "y": rng.choice(["no", "yes"], n).astype(object),
        }
    )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """``risk/``: a ``tabmem risk`` directory; ``cell/``: a cell with ``audit/`` and ``risk/`` sub-directories."""
    root = tmp_path_factory.mktemp("risk-report")
    train = _table(150, 0)
    train.loc[149, "city"] = SECRET
    synthetic = pd.concat([train.iloc[:40], _table(110, 1)], ignore_index=True)
    control = _table(100, 2)
    schema = Schema.infer(train, categorical=["city", "y"])
    schema = Schema(schema.columns, schema.numerical, schema.categorical, None, None, "toy")
    kw = {"secrets": ["y", "city"], "aux": [["age", "city"], ["income", "y"]], "n_attacks": 100, "seed": 0}
    risk_to_dir(train, synthetic, control, schema, root / "risk", **kw)
    risk_to_dir(train, synthetic, control, schema, root / "cell" / "risk", **kw)
    audit_to_dir(ReplicaDetector(n_jobs=1), train, synthetic, schema, root / "cell" / "audit", holdout=control)
    return root


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_risk_directory_is_its_own_kind_and_reads_as_written(outputs):
    d = outputs / "risk"
    assert detect_kind(d) == "risk" and detect_kind(outputs / "cell" / "audit") == "audit"
    part = read_risk_dir(d)
    assert part.summary == json.loads((d / "summary.json").read_text()) and part.path == str(d)
    assert list(part.inference) == ["y", "city"]
    data = load_report_data(d)
    assert data.kind == "risk" and len(data.cells) == 1
    cell = data.cells[0]
    assert cell.risk is not None and cell.has_results and cell.audit is None
    assert cell.axes.get("dataset") == "toy"


def test_a_cell_reads_its_risk_subdirectory(outputs, tmp_path):
    cell = read_cell(outputs / "cell")
    assert cell.risk is not None and cell.audit is not None
    assert cell.risk.summary == json.loads((outputs / "cell" / "risk" / "summary.json").read_text())
    shutil.copytree(outputs / "risk", tmp_path / "cells" / "only-risk")
    shutil.copytree(outputs / "cell", tmp_path / "cells" / "audit-and-risk")
    data = load_report_data(tmp_path / "cells")  # a directory of cells (tabmem demo's layout)
    assert data.kind == "collection" and [c.name for c in data.cells] == ["audit-and-risk", "only-risk"]
    assert all(c.risk is not None for c in data.cells)


@pytest.mark.parametrize("which", ["risk", "cell"])
def test_the_section_shows_every_risk_its_interval_and_rates(outputs, tmp_path, which):
    page = write_report(outputs / which, tmp_path / "report.html").read_text()
    assert SECTION in page and SECRET not in page
    text = _text(page)
    s = json.loads((outputs / which / "risk" / "summary.json").read_text()) if which == "cell" else None
    s = s or json.loads((outputs / "risk" / "summary.json").read_text())
    for label in ("singling out (univariate)", "singling out (multivariate)", "linkability", "inference (worst: "):
        assert label in text, label
    for head in ("interval", "attack rate", "control rate", "baseline rate", "secret column"):
        assert head in text, head
    for key in ("singling_out_univariate", "singling_out_multivariate", "linkability"):
        est = s[key]
        assert f"{est['risk']:.3f} {est['risk_ci'][0]:.3f} to {est['risk_ci'][1]:.3f}" in text, key
        assert f"{est['attack_rate']:.3f}" in text and f"{est['control_rate']:.3f}" in text
    for col, est in s["inference"]["per_column"].items():
        assert f"{col} {est['risk']:.3f} {est['risk_ci'][0]:.3f} to {est['risk_ci'][1]:.3f}" in text, col
    assert "Linkability links age, city with income, y." in text
    if which == "cell":
        assert "Memorization" in text  # the audit's section is still there


def test_tabmem_report_on_a_risk_directory(outputs, tmp_path, capsys):
    code, text = run(["report", outputs / "risk", "--out", tmp_path / "r.html"], capsys)
    assert code == 0, text
    assert SECTION in (tmp_path / "r.html").read_text()


def test_risk_finding_states_each_risk_and_corrects_for_choosing_the_largest():
    from tabmem.report.model import Risk
    from tabmem.report.verdict import risk_finding

    def est(risk, lo, hi):
        return {"risk": risk, "risk_ci": [lo, hi]}

    summary = {
        "singling_out_univariate": est(0.0, 0.0, 0.01),
        "singling_out_multivariate": est(0.03, 0.002, 0.058),  # above 0 alone, not once 4 risks are read
        "linkability": est(0.001, 0.0, 0.004),
        "inference": {"per_column": {"income": est(0.009, 0.0, 0.122)}},
    }
    f = risk_finding(Risk(summary=summary))
    assert f.level == "ok" and "singling out 0.030 (95% CI 0.002 to 0.058)" in f.text
    summary["linkability"] = est(0.2, 0.17, 0.24)
    f = risk_finding(Risk(summary=summary))
    assert f.level == "alert" and f.text.endswith("Above zero, corrected for 4 risks: linkability.")
    assert risk_finding(None) is None
