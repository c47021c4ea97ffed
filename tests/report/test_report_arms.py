"""The frontier by arm in the report: one point per mitigation arm (mean over seeds, t-intervals), every arm named."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tabmem.report import plots
from tabmem.report.model import Attacks, Audit, Cell, Quality, ReportData
from tabmem.report.render import render_report

ARMS = {"none": (0.12, 0.962, 0.885, 0.57), "dp1": (-0.01, 0.80, 0.70, 0.50), "mstop": (0.0, 0.951, 0.875, 0.51)}


def _cells(quality: bool = True, attacks: bool = True) -> list[Cell]:
    cells = []
    for arm, (ex, shape, mle, auc) in ARMS.items():
        for seed in range(3):
            d = 0.01 * (seed - 1)  # seeds spread symmetrically: the mean is the arm's value
            audit = Audit({"excess_memorization": ex + d, "memorization_rate": 0.3 + ex + d,
                           "holdout_memorization_rate": 0.3})  # fmt: skip
            cells.append(
                Cell(
                    name=f"{arm}-{seed}",
                    path="",
                    axes={"dataset": "adult", "mitigation": arm, "seed": seed},
                    audit=audit,
                    audits={"fang2024": audit},
                    quality=Quality({"shape": shape + d, "mle": mle - d}) if quality else None,
                    attacks=Attacks({"dcr": {"auc": auc + d}}) if attacks else None,
                )
            )
    return cells


def test_arm_groups_and_seed_intervals_brute_force():
    groups = plots.arm_groups(_cells())
    assert list(groups) == ["none", "dp1", "mstop"] and all(len(g) == 3 for g in groups.values())
    v = plots._arm_values(groups["none"])
    assert v["excess"] == pytest.approx([11.0, 12.0, 13.0])
    mean, half = plots._mean_interval(v["excess"])
    # t(0.975, 2) = 4.302653; sd of (11, 12, 13) = 1
    assert mean == pytest.approx(12.0) and half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert plots._mean_interval([5.0]) == (5.0, None)


def test_frontier_by_arm_in_the_html_names_every_arm():
    html = render_report(ReportData("study", "", "study", _cells()))
    svg = re.search(r'<svg class="plot" role="img" aria-label="Frontier by mitigation[^"]*".*?</svg>', html, re.S)
    assert svg is not None
    fig = svg.group(0)
    for arm in ARMS:
        assert arm in fig[: fig.index(">")]  # in the figure's label
        assert f"<!-- {arm} -->" in fig  # and drawn next to its point (glyphs as paths, the text as a comment)
    for axis in ("excess memorization (points)", "strongest attack AUC", "Shape % (higher is better)", "MLE %"):
        assert f"<!-- {axis}" in fig
    assert "not in the results" not in fig


def test_missing_axes_are_said_not_invented():
    fig = plots.arms_frontier_figure(_cells(quality=False, attacks=False))
    assert "<!-- not in the results: -->" in fig and "<!-- quality (metrics: shape) -->" in fig
    assert "<!-- quality (metrics: mle) -->" in fig
    assert "strongest attack AUC" not in fig  # no attack: no attack row at all
    assert "<!-- none -->" not in fig  # no point drawn without its axis
    one_arm = [c for c in _cells() if c.axes["mitigation"] == "none"]
    assert plots.arms_frontier_figure(one_arm) is None  # a single arm: nothing to compare


def test_same_input_same_svg():
    assert plots.arms_frontier_figure(_cells()) == plots.arms_frontier_figure(_cells())
    assert np.isfinite(plots._mean_interval([1.0, 2.0])[1])


def test_frontier_by_arm_renders_in_a_browser(tmp_path):
    from cdp_browser import FIGURES_JS, Browser, find_chromium, ink

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium/Chrome executable found (apt-get install chromium, or set TABMEM_CHROMIUM)")
    path = tmp_path / "report.html"
    path.write_text(render_report(ReportData("study", "", "study", _cells())), encoding="utf-8")
    with Browser(chromium) as browser:
        page = browser.open(path.as_uri())
        page.settle()
        assert page.console_errors() == [] and page.requests() == [path.as_uri()]  # offline, self-contained
        (fig,) = [f for f in page.evaluate(FIGURES_JS) if f["label"].startswith("Frontier by mitigation")]
        assert fig["width"] > 400 and fig["height"] > 300, fig
        not_white, saturated = ink(page.screenshot({k: fig[k] for k in ("x", "y", "width", "height")}))
        assert not_white > 0.02 and saturated > 0.001, (not_white, saturated)
