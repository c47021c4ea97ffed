"""A new user's report defects, each pinned on real outputs of the commands (a few seconds, once per module).

``mixed/`` holds sibling sub-directories each written by its own command: a tracked ``tabmem train`` run
(``tracked/``), an audit, an attack and a quality run of its synthetic table, and a ``tabmem dynamiccut``
run (``cut/``, with the tracked run as its ``--baseline``).
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from report_inputs import TINY, tables
from tabmem.cli import main
from tabmem.report import load_report_data, render_report
from tabmem.report import tables as report_tables
from tabmem.report.model import Attacks, Audit, Cell, Quality
from tabmem.report.readers import detect_kind
from tabmem.report.render import cell_labels
from tabmem.report.verdict import attack_finding, fidelity_finding, utility_finding

CAT = ["--categorical", "city,label"]


def _run(argv: list[str]) -> None:
    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        if exc.code:
            raise RuntimeError(f"tabmem {' '.join(map(str, argv))} exited with {exc.code}") from None


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    import torch

    root = tmp_path_factory.mktemp("mixed-runs")
    train, hold = tables()
    train_csv, hold_csv = root / "train.csv", root / "holdout.csv"
    train.to_csv(train_csv, index=False)
    hold.to_csv(hold_csv, index=False)
    m = root / "mixed"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        common = ["--epochs", "4", "--track-every", "1", "--seed", "1", "--threads", "1", "--quiet", *TINY]
        _run(["train", "--train", train_csv, "--holdout", hold_csv, *CAT, *common, "--out", m / "tracked"])
        _run(
            ["dynamiccut", "--train", train_csv, "--holdout", hold_csv, "--test", hold_csv, *CAT, "--target", "label"]
            + ["--warmup-epochs", "2", "--mle-grid", "tiny", "--baseline", m / "tracked", *common, "--out", m / "cut"]
        )
    finally:
        torch.set_num_threads(threads)
    syn = m / "tracked" / "synthetic.csv"
    _run(
        ["audit", "--train", train_csv, "--synthetic", syn, "--holdout", hold_csv, *CAT, "--n-jobs", "1"]
        + ["--out", m / "audit"]
    )
    _run(
        ["attack", "--members", train_csv, "--non-members", hold_csv, "--synthetic", syn, "--attacks", "dcr,mc", *CAT]
        + ["--n-bootstrap", "50", "--n-jobs", "1", "--out", m / "attack"]
    )
    _run(
        ["quality", "--real", train_csv, "--synthetic", syn, "--test", hold_csv, "--holdout", hold_csv, *CAT]
        + ["--target", "label", "--metrics", "shape,trend,mle,c2st,dcr_share", "--mle-grid", "tiny"]
        + ["--out", m / "quality"]
    )
    return m


def _cell(data, name):
    return next(c for c in data.cells if c.name == name)


# ----------------------------------------------------------------------------- 1. a folder mixing run types
def test_a_folder_of_unrelated_runs_is_reported_run_by_run(mixed):
    assert detect_kind(mixed / "cut") == "dynamiccut" and detect_kind(mixed / "tracked") == "train"
    data = load_report_data(mixed)
    assert data.kind == "collection"
    assert [(c.name, c.kind) for c in data.cells] == [
        ("attack", "attack"),
        ("audit", "audit"),
        ("cut", "dynamiccut"),
        ("quality", "quality"),
        ("tracked", "train"),
    ]
    parts = {
        c.name: {p for p in ("audit", "attacks", "quality", "training", "dynamiccut") if getattr(c, p)}
        for c in data.cells
    }
    assert parts["attack"] == {"attacks"} and parts["audit"] == {"audit"} and parts["quality"] == {"quality"}
    assert parts["tracked"] == {"training", "audit"} and parts["cut"] == {"dynamiccut", "audit", "training", "quality"}
    assert data.title.startswith("mixed (a collection of 5:") and "DynamicCut run" in data.title
    labels = cell_labels(data.cells)
    assert labels == [
        "attack (attack run)",
        "audit (audit run)",
        "cut (DynamicCut run)",
        "quality (quality run)",
        "tracked (train run)",
    ]
    html = render_report(data)
    for label in labels:
        assert f"<h2>{label}</h2>" in html


def test_parts_are_one_cell_only_when_laid_out_as_a_cell(mixed, tmp_path):
    layout = tmp_path / "layout"
    layout.mkdir()
    for part, target in (("train", "tracked"), ("audit", "audit"), ("attack", "attack"), ("quality", "quality")):
        (layout / part).symlink_to(os.path.relpath(mixed / target, layout), target_is_directory=True)
    one = load_report_data(layout)
    assert one.kind == "cell" and len(one.cells) == 1
    c = one.cells[0]
    assert all(getattr(c, p) is not None for p in ("training", "audit", "attacks", "quality"))
    assert one.title.startswith("layout (cell")
    # a run beside the parts: the folder is no cell layout, each run is its own cell
    (layout / "cut").symlink_to(os.path.relpath(mixed / "cut", layout), target_is_directory=True)
    many = load_report_data(layout)
    assert many.kind == "collection" and [(c.name, c.kind) for c in many.cells] == [
        ("attack", "attack"),
        ("audit", "audit"),
        ("cut", "dynamiccut"),
        ("quality", "quality"),
        ("train", "train"),
    ]
    # a study cell's dynamiccut step beside its audit (the demo's layout): one cell, the step's before/after in it
    cell_dir = tmp_path / "study-cell"
    (cell_dir / "audit").mkdir(parents=True)
    (cell_dir / "audit" / "gower").symlink_to(os.path.relpath(mixed / "audit", cell_dir / "audit"), True)
    (cell_dir / "dynamiccut").symlink_to(os.path.relpath(mixed / "cut", cell_dir), target_is_directory=True)
    dc = load_report_data(cell_dir)
    assert dc.kind == "cell" and len(dc.cells) == 1 and dc.cells[0].dynamiccut is not None
    assert list(dc.cells[0].audits) == ["gower"] and dc.cells[0].audit.path.endswith("gower")
    html = render_report(dc)
    assert "DynamicCut: before and after" in html and "Distance evidence (each next to its holdout null)" in html
    single = load_report_data(mixed / "audit")
    assert single.kind == "audit" and single.title.startswith("audit (audit run")


# ----------------------------------------------------------------------------- 2. the DynamicCut report
def _sections(html: str) -> dict[str, str]:
    """Each h3 of the cells with what follows it up to the next h3 or section end."""
    out = {}
    for m in re.finditer(r"<h3[^>]*>(.*?)</h3>(.*?)(?=<h3|</section>)", html, re.S):
        out[m.group(1)] = m.group(2)
    return out


def test_dynamiccut_report_shows_threshold_sections_with_content_and_before_after(mixed):
    data = load_report_data(mixed / "cut")
    assert data.kind == "dynamiccut" and len(data.cells) == 1
    html = render_report(data)
    assert "d1/d2 &lt; ?" not in html and "d1/d2 &lt; 1/3" in html
    sections = _sections(html)
    for heading, body in sections.items():
        assert re.sub(r"<[^>]+>|\s", "", body), f"empty section {heading!r}"
    assert "DynamicCut: before and after" in sections
    assert (
        "Training dynamics (the warm-up)" in sections
        and '<svg class="plot"' in sections["Training dynamics (the warm-up)"]
    )
    summary = json.loads((mixed / "cut" / "summary.json").read_text())
    t = report_tables.dynamiccut_table(data.cells[0])
    assert t.columns[1:4] == ["warm-up (2 epochs)", "before: no pruning", "after: intensity 10% removed"]
    rows = {r[0]: r for r in t.rows}
    excess = rows["excess memorization (points)"]
    lo, hi = summary["excess_memorization_ci"]
    assert excess[3] == (f"{100 * summary['excess_memorization']:+.2f}", f"{100 * lo:+.2f} to {100 * hi:+.2f}")
    assert isinstance(excess[2], tuple)  # the baseline's interval too
    assert rows["memorization rate (vs the original table)"][3] == f"{100 * summary['memorization_rate']:.2f}%"
    assert rows["Shape"][3] == f"{summary['quality']['shape']:.3g}" and "Trend" in rows and "MLE" in rows
    assert "DynamicCut: before and after" in html and "before: no pruning" in html
    # the cards read the run's quality block too (no "no quality metrics" next to a table that has them)
    q = data.cells[0].quality
    assert q.value("shape") == summary["quality"]["shape"] and q.value("mle") == summary["quality"]["mle"]
    assert f"Shape {summary['quality']['shape']:.3f}" in fidelity_finding(q).text
    assert f"against {summary['quality']['mle_real']:.4g} when trained on the real rows" in utility_finding(q).text


def test_dynamiccut_without_warmup_has_no_training_heading(mixed, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(mixed / "cut", cut)
    shutil.rmtree(cut / "warmup")
    html = render_report(load_report_data(cut))
    assert "Training dynamics" not in html and "DynamicCut: before and after" in html


# ----------------------------------------------------------------------------- 3. one-seed differences
def test_differences_say_whether_intervals_overlap_or_that_they_rest_on_one_seed(mixed):
    assert report_tables.difference_note(0.607, 0.695).endswith("one seed: no interval; not an effect until repeated")
    assert "intervals overlap" in report_tables.difference_note(0.1, 0.2, [0.0, 0.3], [0.1, 0.4], unit="points")
    assert "do not overlap" in report_tables.difference_note(0.1, 0.5, [0.0, 0.2], [0.4, 0.6], unit="points")
    rows = {r[0]: r for r in report_tables.dynamiccut_table(load_report_data(mixed / "cut").cells[0]).rows}
    assert rows["Trend"][-1].endswith("one seed: no interval; not an effect until repeated")
    assert "intervals" in rows["excess memorization (points)"][-1]  # both the baseline and the after have one
    a = Cell(name="a", path="", axes={"generator": "x", "seed": 0}, quality=Quality(summary={"trend": 0.607}))
    b = Cell(name="b", path="", axes={"generator": "y", "seed": 0}, quality=Quality(summary={"trend": 0.695}))
    notes = report_tables.comparison_notes([a, b], ["x", "y"])
    assert notes == ["Trend 0.607 (x) to 0.695 (y): one seed: no interval; not an effect until repeated."]
    from tabmem.report.model import ReportData

    html = render_report(ReportData(title="t", source="s", kind="collection", cells=[a, b]))
    assert "not an effect until repeated" in html


# ----------------------------------------------------------------------------- 4. one Mem-AUC format
def test_mem_auc_has_one_format_and_the_record_share_its_own_name(mixed):
    data = load_report_data(mixed / "tracked")
    html = render_report(data)
    s = json.loads((mixed / "tracked" / "summary.json").read_text())
    for key in ("mem_auc", "mem_auc_trapz10"):
        assert f"{100 * s[key]:.2f}%" in html and f">{s[key]:.4g}<" not in html
    epochs = data.cells[0].training.epochs
    t = report_tables.epochs_table(data.cells[0].training)
    col = t.columns.index("Mem-AUC (exact)")
    assert [r[col] for r in t.rows] == [f"{100 * v:.2f}%" for v in epochs["mem_auc"]]
    assert "mean_mem_auc" not in " ".join(t.columns) and "Top: mean record Mem-AUC share" in t.columns
    _, dyn = report_tables.dynamics_findings(data.cells[0])
    names = [r[0] for r in dyn.rows]
    assert "early record Mem-AUC share (%)" in names and "early_mem_auc" not in names
    dc = report_tables.dynamiccut_table(load_report_data(mixed / "cut").cells[0])
    cut = json.loads((mixed / "cut" / "summary.json").read_text())
    assert {r[0]: r for r in dc.rows}["Mem-AUC (exact)"][3] == f"{100 * cut['mem_auc']:.2f}%"


# ----------------------------------------------------------------------------- 5/6. c2st and dcr_share
def test_c2st_keeps_its_name_and_dcr_share_its_ideal(mixed):
    q = load_report_data(mixed / "quality").cells[0].quality
    s = q.summary
    text = fidelity_finding(q).text
    assert f"c2st {s['c2st']:.3f} (classifier two-sample test" in text and "detection score 0" not in text
    (table, *_) = report_tables.quality_tables(Cell(name="q", path="", quality=q))
    rows = {r[0]: r for r in table.rows}
    ideal = s["details"]["dcr_share"]["ideal"]
    assert s["goals"]["dcr_share"] == "minimize"  # what the summary records; the report shows the ideal instead
    assert rows["dcr_share"][2] == f"closest to the ideal {ideal:.3g}"
    assert "classifier two-sample test" in rows["c2st"][3]
    assert f"closest to the ideal {ideal:.3g}" in utility_finding(q).text


# ----------------------------------------------------------------------------- 8. ε where the cards read it
def test_verdict_table_reads_epsilon_where_the_cards_do():
    result = {
        "auc": 0.7,
        "auc_ci": [0.6, 0.8],
        "n_non_members": 60,
        "tpr_at_fpr": {"0.1": 0.3},
        "midst_tpr_at_fpr": {"0.1": {"tpr": 0.3}},
        "epsilon_lower_bound": {"epsilon": 1.39, "delta": 1e-5},
    }
    cell = Cell(name="c", path="", attacks=Attacks(summary={"dcr": result, "_meta": {}}), audit=Audit(summary={}))
    assert "ε lower bound 1.39" in attack_finding(cell.attacks).text
    t = report_tables.overview_table([cell], ["c"])
    assert t.rows[0][t.columns.index("ε lower bound")] == ("1.39", "DCR alone")
    # with the privacy headline: its bound (the privacy card's) and the strongest attack's own (the attack card's)
    cell.attacks.summary["_privacy"] = {"epsilon_lower_bound": 1.108, "attack": "dcr", "delta": 1e-5}
    assert t.columns == report_tables.overview_table([cell], ["c"]).columns
    assert report_tables.overview_table([cell], ["c"]).rows[0][t.columns.index("ε lower bound")] == (
        "1.11",
        "DCR alone: 1.39",
    )


# ----------------------------------------------------------------------------- 9. the excess's interval is the one judged
def test_report_shows_the_excess_interval_that_tabmem_check_judges():
    # zero replicas in 200 synthetic and 100 holdout rows: the percentile bootstrap collapses to [0, 0]
    summary = {
        "distance": "gower",
        "threshold": 1 / 3,
        "confidence": 0.95,
        "n_synthetic": 200,
        "n_holdout": 100,
        "memorization_rate": 0.0,
        "holdout_memorization_rate": 0.0,
        "excess_memorization": 0.0,
        "excess_memorization_ci": [0.0, 0.0],
    }
    from tabmem.gate.figures import excess_interval
    from tabmem.gate.intervals import newcombe_difference

    lo, hi = newcombe_difference(0, 200, 0, 100)
    assert excess_interval(summary) == pytest.approx((lo, hi)) and lo < -0.03 and hi > 0.01
    audit = Audit(summary=summary)
    cell = Cell(name="c", path="", audit=audit, audits={"gower": audit})
    overview = report_tables.overview_table([cell], ["c"])
    shown = overview.rows[0][overview.columns.index("excess, points (95% CI)")]
    assert "+0.00 to +0.00" not in str(shown) and f"{100 * hi:+.2f}" in str(shown)
    audit_table = report_tables.audit_tables(cell)[0]
    row = next(r for r in audit_table.rows if r[0] == "excess memorization (points)")
    assert f"{100 * lo:+.2f}" in str(row[2]) and "Newcombe" in audit_table.caption
    # an interval wider than Newcombe's stays as recorded
    wide = {**summary, "excess_memorization_ci": [-0.2, 0.2]}
    assert excess_interval(wide) == (-0.2, 0.2)
