"""``tabmem demo``: the demo study end to end (fast settings), its report in a browser, and what it prints.

The run uses ``--epochs 4 --jobs 1`` (the same study with short training, in this process) so that
the suite stays fast; the default settings are measured in the README.
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import pandas as pd
import pytest
from rich.console import Console

from cli_run import run
from tabmem.cli import main
from tabmem.cli.demo import headline_table, print_dynamics
from tabmem.studies.demo import demo_study_text, headline
from tabmem.studies.store import load_results
from tabmem.studies.study import load_study

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "tabmem-demo"
    buf = io.StringIO()  # module scope has no capsys
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            main(["demo", "--epochs", "4", "--jobs", "1", "--out", str(out)])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return out, code, buf.getvalue()


def test_the_demo_is_a_study_with_a_report(demo_run):
    out, code, text = demo_run
    assert code == 0, text
    for f in ("demo.toml", "study.toml", "manifest.json", "results.parquet", "report.html", "demo_summary.json"):
        assert (out / f).is_file(), f
    study = load_study(out / "demo.toml")
    assert [c.name for c in study.cells] == [
        "diabetes/noisy-resample/none/seed=0",
        "diabetes/tabddpm/none/seed=0",
        "diabetes/tabddpm/dynamiccut-10/seed=0",
    ]
    df = load_results(out)
    steps = {name: set(g.step) for name, g in df.groupby("name")}
    assert steps["diabetes/tabddpm/none/seed=0"] == {"train", "audit", "attack", "quality"}
    assert steps["diabetes/tabddpm/dynamiccut-10/seed=0"] == {"dynamiccut", "audit", "attack", "quality"}
    # the positive control is seen: its excess interval lies above 0
    ex = df[(df.generator == "noisy-resample") & (df.metric == "excess_memorization")].iloc[0]
    assert ex.ci_low > 0
    html = (out / "report.html").read_text()
    assert 'id="verdict"' in html and html.count('<svg class="plot"') >= 6
    for part in ("Headline", "Training dynamics of", "verdict", "Run it on your own table", "tabmem audit --train"):
        assert part in text, part
    assert "[[datasets]]" in text  # printed as text, not eaten as markup
    assert re.search(r"Done in \d+ s\.", text)


def test_printed_and_saved_numbers_are_the_results_in_their_units(demo_run):
    out, _, text = demo_run
    df = load_results(out)
    rows = {r["cell"]: r for r in json.loads((out / "demo_summary.json").read_text())}
    assert rows == {r["cell"]: r for r in json.loads(json.dumps(headline(df)))}
    for name, r in rows.items():
        cell = df[df.name == name]
        rate = cell[cell.metric == "memorization_rate"].iloc[0]
        assert r["memorization_pct"] == pytest.approx(100 * rate.value)
        assert r["memorization_ci_pct"] == pytest.approx([100 * rate.ci_low, 100 * rate.ci_high])
        assert r["excess_points"] == pytest.approx(100 * cell[cell.metric == "excess_memorization"].value.item())
        aucs = cell[cell.metric == "auc"]
        assert r["attack_auc"] == pytest.approx(aucs.value.max()) and 0 <= r["attack_auc"] <= 1
        assert r["attack"] == aucs.loc[aucs.value.idxmax(), "component"]
        assert 0 <= r["shape"] <= 1 and r["mle_rmse"] > 1  # an RMSE in the target's units, not a fraction
        # the percentage row of the printed table shows the percentage, not the fraction
        assert f"{r['memorization_pct']:.1f}" in text


def test_a_second_demo_reuses_every_cell(demo_run, capsys):
    out, _, _ = demo_run
    code, text = run(["demo", "--epochs", "4", "--jobs", "1", "--out", str(out)], capsys)
    assert code == 0, text
    assert "3 cells, 3 already done, 0 to run" in text


def test_no_training_record_is_printed(demo_run):
    from tabmem.data.datasets import load_dataset

    _, _, text = demo_run
    train = load_dataset("diabetes").train
    numbers = set(re.findall(r"\d+\.\d+", text))
    values = {f"{v}" for v in train["s5"]} | {f"{v}" for v in train["bmi"]}  # distinctive raw values
    assert not {v for v in values if len(v) >= 5} & numbers


DYNAMICS = {
    "q": 0.1,
    "n_top": 36,
    "n_nontop": 317,
    "tracked_epochs": [25, 50, 75, 100],
    "metrics": {
        "first_memorization_epoch": {"top_median": 25.0, "nontop_median": 50.0, "top_mean": 44.4, "nontop_mean": 69.6},
        "early_mem_auc": {"top_mean": 0.0038, "nontop_mean": 0.0019, "top_median": 0.0035, "nontop_median": 0.0014},
        "n_forgetting_events": {"top_mean": 2.2, "nontop_mean": 2.5, "top_median": 2.0, "nontop_median": 3.0},
    },
    "findings": {
        "top_memorized_earlier": {"holds": True, "cliffs_delta": -0.274, "p_value": 0.0052},
        "top_stronger_early_mem_auc": {"holds": True, "cliffs_delta": 0.509, "p_value": 5.2e-07},
        "top_more_forgetting": {"holds": False, "cliffs_delta": 0.12, "p_value": 0.075},
    },
}


def _printed(fn, *args) -> list[str]:
    console = Console(record=True, width=400)
    fn(console, *args)
    return [line.strip() for line in console.export_text().splitlines() if line.strip()]


def test_only_findings_that_hold_are_stated_and_in_words_with_effect_sizes():
    lines = _printed(print_dynamics, "tabddpm", DYNAMICS)
    text = "\n".join(lines)
    assert "_" not in text.replace("tabddpm", "")  # no snake_case names
    stated = [line for line in lines if line.startswith("The Top 10% records")]
    assert len(stated) == 2
    assert any("were memorized earlier: median first epoch 25 vs 50" in s for s in stated)
    assert any("memorized more strongly early on" in s for s in stated)
    for s in stated:
        assert re.search(r"Cliff's delta [+-]\d\.\d\d, (negligible|small|medium|large); Mann-Whitney p = ", s), s
    assert "Cliff's delta -0.27, small" in text and "Cliff's delta +0.51, large" in text
    # the finding that does not hold is named as such, never stated as a finding
    forgetting = [line for line in lines if "forgotten" in line]
    assert len(forgetting) == 1 and forgetting[0].startswith("Did not hold:")
    assert "p = 0.075" in forgetting[0]


def test_no_finding_holds_says_so():
    dyn = {**DYNAMICS, "findings": {k: {**v, "holds": False} for k, v in DYNAMICS["findings"].items()}}
    lines = _printed(print_dynamics, "tabddpm", dyn)
    assert any("no Top vs Non-top difference holds" in line for line in lines)
    assert not any(line.startswith("The Top") for line in lines)
    assert sum(line.startswith("Did not hold:") for line in lines) == 3


def test_headline_table_has_one_unit_per_row():
    rows = [
        {
            "cell": "d/tabddpm/none/seed=0",
            "generator": "tabddpm",
            "mitigation": "none",
            "memorization_pct": 66.86,
            "memorization_ci_pct": [61.76, 71.67],
            "holdout_pct": 68.54,
            "excess_points": -1.68,
            "excess_ci_points": [-12.38, 9.81],
            "attack": "dcr",
            "attack_auc": 0.5734,
            "attack_auc_ci": [0.518, 0.631],
            "attack_tpr_at_fpr_0.1": 0.187,
            "shape": 0.9148,
            "trend": 0.9524,
            "mle_rmse": 57.41,
            "mle_rmse_real": 55.15,
            "dcr_share": 0.878,
            "dcr_share_no_copy": 0.7986,
        }
    ]
    console = Console(record=True, width=200)
    console.print(headline_table(rows))
    cells = {}
    for line in console.export_text().splitlines():
        parts = [p.strip() for p in re.split(r"[│┃]", line)[1:-1]]
        if len(parts) == 2 and parts[0]:
            cells.setdefault(parts[0], []).append(parts[1])
    assert cells["replicas, %"] == ["66.9"]
    assert cells["holdout baseline, %"] == ["68.5"]
    assert cells["excess, points"] == ["-1.7"]
    assert cells["95% CI"] == ["61.8 to 71.7", "-12.4 to +9.8", "0.518 to 0.631"]
    assert cells["strongest attack"] == ["DCR"] and cells["AUC (chance 0.5)"] == ["0.573"]
    assert cells["Shape (0-1)"] == ["0.915"] and cells["Trend (0-1)"] == ["0.952"]
    assert cells["MLE RMSE (real 55.1)"] == ["57.4"]
    assert cells["DCR share (no-copy 0.80)"] == ["0.878"]


def test_the_study_without_a_generator_holds_only_the_control(tmp_path):
    path = tmp_path / "demo.toml"
    path.write_text(demo_study_text(generator=False, quality=False))
    study = load_study(path)
    assert [c.name for c in study.cells] == ["diabetes/noisy-resample/seed=0"]
    assert [s.name for s in study.cells[0].steps] == ["train", "audit", "attack"]


# ----------------------------------------------------------------------------- the report in a browser
def test_the_demo_report_in_a_browser(demo_run):
    from cdp_browser import FIGURES_JS, Browser, find_chromium, ink

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium/Chrome executable found (apt-get install chromium, or set TABMEM_CHROMIUM)")
    out, _, _ = demo_run
    path = out / "report.html"
    with Browser(chromium) as browser:
        page = browser.open(path.as_uri())
        page.settle()
        assert page.console_errors() == []
        assert page.requests() == [path.as_uri()]
        assert page.evaluate("document.querySelector('main section').id") == "verdict"
        badges = page.evaluate(
            "Array.from(document.querySelectorAll('#verdict .verdict .badge')).map(function (b) { return b.textContent; })"
        )
        assert len(badges) == 3 and badges[0] == "Fails the standard policy: exact-copies, replicas, membership-auc"
        figures = page.evaluate(FIGURES_JS)
        assert len(figures) == path.read_text().count('<svg class="plot"')
        for fig in figures:
            clip = {k: fig[k] for k in ("x", "y", "width", "height")}
            not_white, saturated = ink(page.screenshot(clip))
            assert not_white > 0.02 and saturated > 0.002, (fig["label"], not_white, saturated)


def test_demo_frame_helpers_ignore_missing_metrics():
    df = pd.DataFrame(
        {
            "name": ["a"],
            "generator": ["g"],
            "mitigation": ["none"],
            "step": ["audit"],
            "component": ["fang2024"],
            "metric": ["memorization_rate"],
            "value": [0.5],
            "ci_low": [float("nan")],
            "ci_high": [float("nan")],
            "baseline": [float("nan")],
        }
    )
    (row,) = headline(df)
    assert row["memorization_pct"] == 50.0 and row["memorization_ci_pct"] is None and row["excess_points"] is None


def test_the_demo_ends_with_the_release_check_and_its_report_agrees(demo_run):
    from tabmem.gate import load_policy
    from tabmem.gate.text import scorecard_lines
    from tabmem.report import load_report_data
    from tabmem.report.decision import check_dirs
    from tabmem.report.verdict import cell_verdict

    out, _, text = demo_run
    tail = text.split("release check", 1)[1]
    assert "$ tabmem check" in tail and "exit code 1: the gate is closed" in tail
    card = check_dirs([out], load_policy("standard"))
    for line in scorecard_lines(card):
        assert line in text, line
    page = (out / "report.html").read_text()
    for cell in load_report_data(out).cells:
        v = cell_verdict(cell)
        assert [(j.rule.id, j.status) for j in v.judgements] == [
            (j.rule.id, j.status) for j in card.for_source(cell.name)
        ]
        assert v.badge.replace("'", "&#39;") in page
    headline = page.split('<p class="headline">', 1)[1].split("</p>", 1)[0]
    assert headline.startswith("1 of 3 synthetic tables fail the standard policy")  # not "3 of 3 ... leak" (issue 23)
    control = card.for_source("diabetes/noisy-resample/none/seed=0")
    assert {j.rule.id for j in control if j.status == "fail"} >= {"exact-copies", "replicas", "membership-auc"}
