"""tabmem report: readers, verdict rules, figures, privacy, determinism and the CLI.

The page itself is checked in a real browser in ``test_report_browser.py``.
"""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from report_inputs import SECRET, cached_build, cached_report, tables
from tabmem.cli import main
from tabmem.errors import TabmemError
from tabmem.report import load_report_data, plots, write_report
from tabmem.report.model import Attacks, Audit, Cell
from tabmem.report.readers import detect_kind
from tabmem.report.render import render_report
from tabmem.report.verdict import attack_finding, cell_verdict, memorization_finding


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return cached_build(tmp_path_factory)


def run_cli(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


# ----------------------------------------------------------------------------- readers
def test_detect_kind(runs):
    assert detect_kind(runs / "tabddpm") == "train"
    assert detect_kind(runs / "tabddpm" / "attack") == "attack"
    assert detect_kind(runs / "tabddpm" / "quality") == "quality"
    assert detect_kind(runs / "copies" / "audit") == "audit"
    assert detect_kind(runs / "copies") is None and detect_kind(runs) is None


def test_readers_take_every_number_from_the_files(runs):
    data = load_report_data(runs)
    assert data.kind == "collection" and [c.name for c in data.cells] == ["copies", "tabddpm"]
    copies, ddpm = data.cells
    assert copies.audit.summary == json.loads((runs / "copies/audit/summary.json").read_text())
    assert ddpm.audit.summary == json.loads((runs / "tabddpm/summary.json").read_text())
    records = pd.read_csv(runs / "copies/audit/records.csv")
    np.testing.assert_array_equal(copies.audit.record_counts, records.replica_count)
    roc = pd.read_csv(runs / "copies/attack/roc.csv")
    pd.testing.assert_frame_equal(copies.attacks.roc, roc[["attack", "fpr", "tpr"]])
    scores = pd.read_csv(runs / "copies/attack/scores.csv")
    np.testing.assert_array_equal(copies.attacks.distances["levatt"]["distance"], -scores.levatt)
    np.testing.assert_array_equal(copies.attacks.distances["dcr"]["is_member"], scores.is_member)
    assert set(copies.attacks.results) == {"levatt", "dcr", "mc"} and "mc" not in copies.attacks.distances
    assert ddpm.training is not None and ddpm.training.epochs["epoch"].tolist() == [1, 2, 3, 4]
    assert ddpm.training.dynamics == json.loads((runs / "tabddpm/dynamics.json").read_text())
    assert ddpm.quality.value("shape") == json.loads((runs / "tabddpm/quality/summary.json").read_text())["shape"]
    assert ddpm.axes["generator"] == "tabddpm (small)" and ddpm.axes["seed"] == 1


def test_study_reads_cells_in_manifest_order_with_axes_status_and_versions(runs):
    data = load_report_data(runs.parent / "study")
    assert data.kind == "study" and data.title == "tiny"
    assert [c.name for c in data.cells] == ["tiny/tabddpm-small/seed=1", "tiny/copies/seed=0", "tiny/ctgan/seed=0"]
    ddpm, copies, failed = data.cells
    assert ddpm.axes == {"dataset": "tiny", "generator": "tabddpm-small", "seed": 1}  # "none"/"default" dropped
    assert list(ddpm.audits) == ["fang2024", "gower"] and ddpm.audit is ddpm.audits["fang2024"]
    assert ddpm.audit.summary == json.loads((runs.parent / "ddpm-audits/fang2024/summary.json").read_text())
    assert ddpm.training is not None and ddpm.attacks is not None and ddpm.quality is not None
    assert list(copies.audits) == ["fang2024"] and copies.training is None
    assert failed.status == "failed" and "diverged" in failed.error and not failed.has_results
    assert data.versions["numpy"] == "2.4.6" and data.study["executor"] == "local"
    v = cell_verdict(failed)
    assert v.level == "missing" and v.badge.startswith("cell failed: TabmemError: ctgan: training diverged")
    assert "With the other distances: gower:" in cell_verdict(ddpm).findings[0].text
    # intervals come from results.parquet, so that the report agrees with load_results
    assert copies.audit.get("excess_memorization_ci") == [0.3333, 0.6666]
    assert copies.attacks.results["dcr"]["tpr_at_fpr_ci"]["0.1"] == [0.4444, 0.7777]
    assert "95% CI +33.3 to +66.7 points" in cell_verdict(copies).findings[0].text


@pytest.mark.parametrize(
    ("sub", "kind", "parts"),
    [
        ("tabddpm", "train", {"audit", "training", "attacks", "quality"}),
        ("tabddpm/attack", "attack", {"attacks"}),
        ("tabddpm/quality", "quality", {"quality"}),
        ("copies/audit", "audit", {"audit"}),
        ("copies", "cell", {"audit", "attacks", "quality"}),
    ],
)
def test_each_input_kind_reads_into_one_cell(runs, sub, kind, parts):
    data = load_report_data(runs / sub)
    assert data.kind == kind and len(data.cells) == 1
    cell = data.cells[0]
    have = {p for p in ("audit", "training", "attacks", "quality") if getattr(cell, p) is not None}
    assert have == parts


def test_bad_directories_fail_in_one_line(runs, tmp_path, capsys):
    with pytest.raises(TabmemError, match="does not exist"):
        load_report_data(tmp_path / "nope")
    with pytest.raises(TabmemError, match="is a file"):
        load_report_data(runs / "tabddpm" / "summary.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TabmemError, match="not a study, a tabmem train run directory"):
        load_report_data(tmp_path / "empty")
    code, _, err = run_cli(["report", str(tmp_path / "empty")], capsys)
    assert code == 2 and err.count("\n") == 1 and "not a study" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text("{not json")
    code, _, err = run_cli(["report", str(broken)], capsys)
    assert code == 2 and "not a readable JSON file" in err


def test_older_outputs_are_reported_with_notes(runs, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(runs / "copies", old)
    (old / "attack" / "roc.csv").unlink()
    summary = json.loads((old / "audit" / "summary.json").read_text())
    for key in ("memorization_rate_ci", "holdout_memorization_rate_ci", "excess_memorization_ci"):
        summary.pop(key)
    for key in ("data_copying", "authenticity", "identical_matches", "nndr"):  # before the distance evidence
        summary.pop(key)
    (old / "audit" / "summary.json").write_text(json.dumps(summary))
    attack = json.loads((old / "attack" / "summary.json").read_text())
    attack.pop("_privacy")
    for r in attack.values():
        if isinstance(r, dict):
            for key in ("midst_tpr_at_fpr", "conservative_tpr_at_fpr", "epsilon_lower_bound", "min_resolved_fpr"):
                r.pop(key, None)
    (old / "attack" / "summary.json").write_text(json.dumps(attack))
    data = load_report_data(old)
    assert any("no roc.csv" in n for n in data.notes) and any("no bootstrap intervals" in n for n in data.notes)
    cell = data.cells[0]
    assert plots.roc_figure(cell.attacks) is None
    f = memorization_finding(cell.audit)  # the copies of the example run are exact: found without an interval
    assert f.headline == "exact copies" and "no bootstrap interval recorded" in f.text
    html = render_report(data)
    assert "no roc.csv" in html and html.count('<svg class="plot"') == 4  # rates, heavy tail, distances, shape
    # the distance evidence section says why it is empty; no privacy audit without its keys
    assert "Distance evidence (each next to its holdout null)" in html and "Not computed for this audit" in html
    assert "Privacy audit" not in html and "MIDST TPR@0.1" not in html and "Empirical ε" not in html


# ----------------------------------------------------------------------------- verdict rules
def audit(excess_ci, holdout=True):
    s = {"memorization_rate": 0.3, "distance": "gower", "threshold": 1 / 3, "confidence": 0.95}
    if holdout:
        s.update(holdout_memorization_rate=0.25, excess_memorization=0.05, excess_memorization_ci=excess_ci)
    return Audit(summary=s)


@pytest.mark.parametrize(
    ("ci", "holdout", "level", "headline"),
    [
        ([0.01, 0.09], True, "alert", "found"),
        ([-0.02, 0.12], True, "ok", "none beyond the baseline"),
        ([-0.09, -0.01], True, "ok", "below the baseline"),
        (None, True, "info", "no interval"),
        (None, False, "info", "no baseline"),
    ],
)
def test_memorization_verdict_rests_on_the_interval(ci, holdout, level, headline):
    f = memorization_finding(audit(ci, holdout))
    assert (f.level, f.headline) == (level, headline)
    assert "30.0%" in f.text and ("25.0%" in f.text) == holdout


def attacks(auc_ci, n_non=60, auc=0.6):
    r = {
        "auc": auc,
        "auc_ci": auc_ci,
        "tpr_at_fpr": {"0.01": 0.05, "0.1": 0.3},
        "tpr_at_fpr_ci": {"0.01": [0.0, 0.1], "0.1": [0.2, 0.4]},
        "n_members": 100,
        "n_non_members": n_non,
    }
    weak = {**r, "auc": 0.51, "auc_ci": [0.4, 0.6]}
    return Attacks(summary={"dcr": weak, "levatt": r, "_meta": {"n_non_members": n_non}})


@pytest.mark.parametrize(("ci", "level"), [([0.55, 0.66], "alert"), ([0.48, 0.7], "ok"), (None, "info")])
def test_attack_verdict_uses_the_strongest_attack_and_its_interval(ci, level):
    f = attack_finding(attacks(ci))
    assert f.level == level and f.text.startswith(("LevAtt", "No attack beats chance: LevAtt"))


def test_attack_verdict_says_when_an_fpr_is_not_resolved():
    few = attack_finding(attacks([0.55, 0.66], n_non=60)).text
    assert "at FPR 0.01: not resolved (60 non-members measure FPRs down to 0.017)" in few
    assert "at FPR 0.1: TPR 0.300 (CI 0.200 to 0.400; chance 0.1)" in few
    strict = attacks([0.55, 0.66], n_non=60)
    strict.summary["levatt"]["tpr_at_fpr_strict"] = {"0": 0.25}
    assert "but it finds 25.0% of members with no false positive at all" in attack_finding(strict).text
    strict.summary["levatt"]["auc_ci"] = [0.45, 0.66]  # at chance level, no such claim
    assert "no false positive" not in attack_finding(strict).text
    many = attack_finding(attacks([0.55, 0.66], n_non=1000)).text
    assert "at FPR 0.01: TPR 0.050 (CI 0.000 to 0.100; chance 0.01)" in many


@pytest.mark.parametrize(
    ("excess_ci", "auc_ci", "auc", "level", "badge"),
    [
        ([0.06, 0.09], [0.55, 0.59], 0.57, "alert", "Fails the standard policy: replicas"),
        ([0.06, 0.09], [0.62, 0.70], 0.66, "alert", "Fails the standard policy: replicas, membership-auc"),
        ([-0.01, 0.04], [0.62, 0.70], 0.66, "alert", "Fails the standard policy: membership-auc"),
        (
            [-0.01, 0.04],
            [0.55, 0.59],
            0.57,
            "ok",
            "Passes the standard policy (2 rules judged: replicas, membership-auc)",
        ),
        ([-0.01, 0.09], [0.55, 0.59], 0.57, "info", "Not shown within the standard policy: replicas unresolved"),
        (None, [0.55, 0.59], 0.57, "info", "Not shown within the standard policy: replicas unresolved"),
        # the strongest of 2 attacks just above the limit: within its own 95% CI, not once corrected for choosing it
        ([-0.01, 0.04], [0.601, 0.70], 0.65, "info", "Not shown within the standard policy: membership-auc unresolved"),
    ],
)
def test_cell_badge_is_the_standard_policy(excess_ci, auc_ci, auc, level, badge):
    v = cell_verdict(Cell(name="c", path="", audit=audit(excess_ci), attacks=attacks(auc_ci, auc=auc)))
    assert (v.level, v.badge) == (level, badge)
    topics = ["Memorization", "Membership inference", "Fidelity", "Utility", "Distance evidence"]
    assert [f.topic for f in v.findings] == topics  # no privacy audit without attack outputs that hold one
    assert v.findings[-1].level == "missing"  # a summary without the distance evidence keys
    assert {j.rule.id: j.status for j in v.judgements}["exact-copies"] == "not measured"


def test_strongest_attack_is_judged_corrected_for_choosing_it():
    """The best of 4 attacks at AUC 0.573 [0.505, 0.640] is not "members told apart" once the choice among 4 is
    corrected for (Bonferroni: 0.486 to 0.658); one attack with that interval is. (The demo's TabDDPM, 0.573
    [0.518, 0.631] as best of 4, stays above chance corrected: 0.503 to 0.647.)"""
    one = Attacks(summary={"dcr": {"auc": 0.573, "auc_ci": [0.505, 0.640], "n_non_members": 89}})
    four = Attacks(summary={**{a: {"auc": 0.52, "auc_ci": [0.46, 0.58]} for a in ("a1", "a2", "a3")}, **one.summary})
    assert attack_finding(one).level == "alert"
    f = attack_finding(four)
    assert f.level == "ok" and "corrected for choosing the best of 4" in f.text and "holds 0.5 once corrected" in f.text


def test_verdict_of_the_example_runs(runs):
    copies, ddpm = load_report_data(runs).cells
    assert cell_verdict(copies).level == "alert"  # most rows are copies: found, with the interval above 0
    lo, _ = copies.audit.get("excess_memorization_ci")
    assert lo > 0
    assert cell_verdict(ddpm).findings[0].level in ("ok", "alert")


# ----------------------------------------------------------------------------- figures
def test_every_figure_is_an_inline_svg_or_absent(runs):
    svgs = re.findall(r"<svg\b[^>]*>", cached_report(runs))
    # rates and frontier across cells; copies: heavy tail, distance evidence, ROC, distances, shape; tabddpm: the
    # same (distance evidence for both of its audits) and epochs; the failed cell: none
    assert len(svgs) == 14
    for tag in svgs:
        assert tag.startswith('<svg class="plot" role="img" aria-label="') and "viewBox" in tag
        assert " width=" not in tag and " height=" not in tag  # scales with the page
    copies, _ = load_report_data(runs).cells
    assert plots.heavy_tail_figure(Audit(summary={}, record_counts=None)) is None
    assert plots.heavy_tail_figure(Audit(summary={}, record_counts=np.zeros(5, int))) is None
    assert plots.roc_figure(Attacks(summary={})) is None
    assert plots.distance_figure(Attacks(summary={})) is None
    assert plots.frontier_figure([copies], ["a"]) is None  # one cell: no frontier
    assert plots.rates_figure([Cell(name="x", path="")], ["x"]) is None


def test_distance_histogram_counts_every_target_once():
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"distance": rng.integers(3, 20, 300).astype(float), "is_member": rng.random(300) < 0.6})
    d.loc[0, "distance"] = 500.0  # far outlier: counted in the last bin
    hist = plots.distance_histogram(d, integer=True)
    assert np.allclose(hist["to"] - hist["from"], 1.0) and hist["from"].iloc[0] == 2.5  # unit bins
    last = hist["to"].iloc[-1]
    for group, mask in (("members", d.is_member), ("non_members", ~d.is_member)):
        assert hist[f"{group}_pct"].sum() == pytest.approx(100.0)
        v = d.loc[mask, "distance"].to_numpy()
        naive = [
            sum(1 for x in v if lo <= x < hi or (hi == last and x >= hi)) for lo, hi in zip(hist["from"], hist["to"])
        ]
        np.testing.assert_allclose(hist[f"{group}_pct"], 100.0 * np.array(naive) / v.size)
    cont = pd.DataFrame({"distance": rng.random(1000), "is_member": np.arange(1000) < 500})
    assert 10 <= len(plots.distance_histogram(cont, integer=False)) <= 50


def test_roc_drawing_follows_the_interpolated_curve():
    rng = np.random.default_rng(1)
    fpr = np.r_[0.0, np.sort(rng.random(5000)), 1.0]
    tpr = np.sqrt(fpr)
    for lo in (None, 1e-3):
        x, y = plots._roc_grid(fpr, tpr, lo)
        assert x.size <= plots.MAX_CORNERS + 1 and np.allclose(y, np.interp(x, fpr, tpr))
    small_f, small_t = np.array([0.0, 0.0, 0.5, 1.0]), np.array([0.0, 0.4, 0.8, 1.0])
    x, y = plots._roc_grid(small_f, small_t, None)
    assert x.tolist() == small_f.tolist() and y.tolist() == small_t.tolist()  # few corners: drawn as they are


def test_pareto_front():
    pts = [(0.9, 5.0), (0.8, 1.0), (0.7, 2.0), (0.95, 9.0), (0.6, 0.5)]
    assert plots._pareto(pts, maximize_x=True) == [(0.6, 0.5), (0.8, 1.0), (0.9, 5.0), (0.95, 9.0)]
    assert plots._pareto(pts, maximize_x=False) == [(0.6, 0.5)]


# ----------------------------------------------------------------------------- the page
def test_report_holds_no_training_values_and_loads_nothing(runs):
    html = cached_report(runs)
    train, _ = tables()
    assert SECRET not in html
    for v in train["income"]:
        assert f"{v:.2f}" not in html
    # self-contained: no scripts, stylesheets, images or fonts from anywhere; links are anchors
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", html, re.I)
    assert not re.search(r"@import|url\((?!#)", html, re.I)  # only in-page references (SVG clip paths)
    for target in re.findall(r"\b(?:href|src)\s*=\s*[\"']([^\"']*)", html, re.I):
        assert target.startswith("#"), target
    assert "No training record's values appear in this report" in html


def test_show_records_shows_the_most_replicated_rows(runs, tmp_path, capsys):
    with pytest.raises(TabmemError, match="cell 'copies' does not record its training table"):
        write_report(runs, tmp_path / "r.html", show_records=True)
    train, _ = tables()
    with pytest.raises(TabmemError, match="not that cell's training table"):
        write_report(runs, tmp_path / "r.html", show_records=True, train=train.iloc[:50])
    html = write_report(runs / "copies" / "audit", tmp_path / "r.html", show_records=True, train=train).read_text()
    assert "This report shows training records" in html
    counts = pd.read_csv(runs / "copies/audit/records.csv").replica_count.to_numpy()
    top = int(np.lexsort((np.arange(counts.size), -counts))[0])
    assert f"{train.income[top]:.4g}" in html
    # a train run records where its table came from (config.json source): no --train needed
    code, _, err = run_cli(
        ["report", str(runs / "tabddpm"), "--out", str(tmp_path / "t.html"), "--show-records"], capsys
    )
    assert code == 0, err
    assert "This report shows training records" in (tmp_path / "t.html").read_text()
    code, _, err = run_cli(["report", str(runs), "--train", str(runs.parent / "train.csv")], capsys)
    assert code == 2 and "only serve --show-records" in err


def test_same_inputs_same_bytes_and_default_path(runs, tmp_path, capsys):
    a = write_report(runs / "copies" / "audit", tmp_path / "a.html").read_bytes()
    b = write_report(runs / "copies" / "audit", tmp_path / "b.html").read_bytes()
    assert a == b
    code, out, err = run_cli(["report", str(runs / "copies" / "audit")], capsys)
    assert code == 0, err
    assert (runs / "copies" / "audit" / "report.html").read_bytes() == a and "self-contained" in out
    (runs / "copies" / "audit" / "report.html").unlink()
    code, _, err = run_cli(["report", str(runs), "--out", str(tmp_path)], capsys)
    assert code == 2 and "is a directory" in err


def test_study_axes_keep_labels_that_look_like_defaults(tmp_path):
    """A dataset named "default" (UCI Default of credit card clients) is an axis value, not a placeholder."""
    from tabmem._io import write_json
    from tabmem.report.readers import read_study_dir

    write_json(
        tmp_path / "manifest.json",
        {
            "study": {"name": "s", "axes": ["dataset", "generator"]},
            "cells": [
                {
                    "id": "abc",
                    "name": "default/tabddpm/seed=0",
                    "labels": {"dataset": "default", "generator": "tabddpm", "mitigation": "none"},
                    "seed": 0,
                    "status": "done",
                }
            ],
        },
    )
    cell = read_study_dir(tmp_path).cells[0]
    assert cell.axes == {"dataset": "default", "generator": "tabddpm", "seed": 0}
