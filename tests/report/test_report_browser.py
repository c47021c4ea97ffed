"""The report in a real headless browser: it loads offline without console errors, every plot renders, the verdict shows.

Chromium is driven over the DevTools protocol through a pipe (``cdp_browser.py``) with the
network cut. Skipped, with the reason, only where no Chromium/Chrome executable exists
(CI installs Debian's ``chromium`` with apt-get before the tests).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdp_browser import FIGURES_JS, Browser, find_chromium, ink
from report_inputs import cached_build, cached_report

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium/Chrome executable found (apt-get install chromium, or set TABMEM_CHROMIUM): "
    "the report's browser test cannot run",
)


@pytest.fixture(scope="module")
def page_of(tmp_path_factory):
    runs = cached_build(tmp_path_factory)
    path = tmp_path_factory.mktemp("report-html") / "report.html"
    path.write_text(cached_report(runs), encoding="utf-8")
    with Browser(CHROMIUM) as browser:
        page = browser.open(path.as_uri())
        page.settle()
        yield path, page


def test_loads_offline_without_console_errors(page_of):
    path, page = page_of
    assert page.console_errors() == []
    assert page.requests() == [path.as_uri()]  # nothing else is fetched: the file is self-contained
    assert page.evaluate("document.title").startswith("tabmem report")


def test_verdict_is_first_and_plain(page_of):
    _, page = page_of
    first = page.evaluate("document.querySelector('main section').id")
    assert first == "verdict"
    cards = page.evaluate(
        "Array.from(document.querySelectorAll('#verdict .verdict')).map(function (d) {"
        "  var r = d.getBoundingClientRect();"
        "  return {badge: d.querySelector('.badge').textContent, text: d.innerText, top: r.top, h: r.height}; })"
    )
    assert len(cards) == 3  # TabDDPM, the copies, the failed cell
    assert cards[1]["badge"].startswith("Fails the standard policy: exact-copies, replicas")
    assert cards[2]["badge"].startswith("cell failed: TabmemError: ctgan")
    assert all(c["h"] > 40 for c in cards)
    assert cards[0]["top"] < 900  # the first verdict is on the first screen
    for card in cards[:2]:
        for topic in ("Memorization", "Membership inference", "Fidelity", "Utility"):
            assert topic in card["text"]
    assert "beyond the baseline (95% CI" in cards[1]["text"]


def test_every_plot_renders(page_of, tmp_path):
    path, page = page_of
    figures = page.evaluate(FIGURES_JS)
    # the 11 of the cells' parts and the overview, and the distance evidence of three audits
    assert len(figures) == path.read_text().count('<svg class="plot"') == 14
    for fig in figures:
        assert fig["width"] > 400 and fig["height"] > 120, fig
        clip = {k: fig[k] for k in ("x", "y", "width", "height")}
        not_white, saturated = ink(page.screenshot(clip))
        assert not_white > 0.02 and saturated > 0.002, (fig["label"], not_white, saturated)
    # the check can fail: the empty margin right of the page's column is blank
    margin = {"x": 1140, "y": figures[0]["y"], "width": 50, "height": figures[0]["height"]}
    assert ink(page.screenshot(margin))[1] == 0.0
    shot = page.screenshot()
    out = os.environ.get("TABMEM_REPORT_SCREENSHOT")
    target = Path(out) if out else tmp_path / "report.png"
    target.write_bytes(shot)
    assert ink(shot)[0] > 0.05


def test_distance_evidence_and_privacy_audit_are_shown(page_of):
    """The new sections are laid out and visible: per cell with results, the evidence next to its holdout null."""
    _, page = page_of
    sections = page.evaluate(
        "Array.from(document.querySelectorAll('h3[id$=\"-evidence\"]')).map(function (h) {"
        "  var box = h.parentElement.getBoundingClientRect(), r = h.getBoundingClientRect(), body = '';"
        "  for (var e = h.nextElementSibling; e && e.tagName !== 'H3'; e = e.nextElementSibling) body += e.innerText;"
        "  return {text: h.textContent, width: r.width, inside: r.left >= box.left && r.right <= box.right, body: body}; })"
    )
    assert len(sections) == 2  # TabDDPM and the copies; the failed cell has none
    for s in sections:
        assert s["text"] == "Distance evidence (each next to its holdout null)" and s["inside"] and s["width"] > 0
        assert "ata-copying test" in s["body"] and "real unseen rows" in s["body"]
    assert "copying)" in sections[1]["body"]  # the copies: Z << 0
    privacy = page.evaluate(
        "Array.from(document.querySelectorAll('h4')).filter(function (h) {"
        "  return h.textContent.indexOf('Privacy audit') === 0; }).map(function (h) {"
        "  return h.nextElementSibling.innerText + ' ' + h.nextElementSibling.nextElementSibling.innerText; })"
    )
    assert len(privacy) == 2 and all("Empirical ε lower bound" in p and "MIDST TPR@0.1" in p for p in privacy)


OVERFLOW_JS = """(function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var out = [];
  document.querySelectorAll('.scroll, .verdict, section, .panel, figure').forEach(function (e) {
    var box = e.parentElement.getBoundingClientRect(), r = e.getBoundingClientRect();
    var scrolls = getComputedStyle(e).overflowX === 'auto' || getComputedStyle(e).overflowX === 'scroll';
    if (r.right > box.right + 1 || (!scrolls && e.scrollWidth > e.clientWidth + 1))
      out.push({tag: e.tagName, cls: e.className, right: r.right, box: box.right, sw: e.scrollWidth, cw: e.clientWidth});
  });
  var verdict = document.querySelector('#verdict .scroll');
  return {out: out, verdict: [verdict.scrollWidth, verdict.clientWidth],
          page: [document.documentElement.scrollWidth, document.documentElement.clientWidth]};
})()"""


def test_nothing_overflows_its_box_at_1280_px(page_of):
    """At a 1280-px viewport every card and table box stays inside its container, and the verdict table fits
    without scrolling (its headers wrap); wider tables scroll inside their own box, never the page."""
    path, _ = page_of
    with Browser(CHROMIUM) as browser:
        page = browser.open(path.as_uri(), width=1280, height=900)
        page.settle()
        got = page.evaluate(OVERFLOW_JS)
    assert got["out"] == []
    assert got["verdict"][0] <= got["verdict"][1], got["verdict"]
    assert got["page"][0] <= got["page"][1], got["page"]
