"""User text in the report is shown literally: column, category and run names never reach
matplotlib's math text, LaTeX or the HTML as markup.

A column named ``$\\foo$`` (dollar signs are common in money columns) used to crash the report
inside matplotlib's math-text parser; ``<script>`` in a name must stay text.
"""

from __future__ import annotations

import shutil
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from tabmem.cli import main

pytest.importorskip("matplotlib")

NAMES = ["$\\foo$", "<script>alert(1)</script>", 'a"b', "x/../y", "naïve"]
RUN = "$\\bar$ <img src=x onerror=alert(2)>"  # a run directory's name is the cell's name in the report


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)

    def handle_data(self, data) -> None:
        self.text.append(data)

    def handle_comment(self, data) -> None:
        self.comments.append(data)


def _run(argv: list[str]) -> None:
    try:
        main(argv)
    except SystemExit as exc:
        assert not exc.code, argv


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> _Page:
    root = tmp_path_factory.mktemp("report-text")
    rng = np.random.default_rng(0)
    n = 140
    frame = pd.DataFrame(
        {
            NAMES[0]: rng.normal(1e4, 3e3, n).round(2),
            NAMES[1]: rng.integers(20, 70, n),
            NAMES[2]: rng.normal(40, 8, n).round(1),
            NAMES[3]: rng.choice(["$5", "$\\bar$", "<b>bold</b>", "Oslo"], n),
            NAMES[4]: rng.choice(["yes", "no"], n),
        }
    )
    train, hold = frame.iloc[:90], frame.iloc[90:]
    copies = train.sample(90, replace=True, random_state=3)
    t, h, s = root / "train.csv", root / "holdout.csv", root / "copies.csv"
    train.to_csv(t, index=False)
    hold.to_csv(h, index=False)
    copies.to_csv(s, index=False)
    cat = f"{NAMES[3]},{NAMES[4]}"
    cell = root / "runs" / RUN
    _run(["audit", "--train", str(t), "--synthetic", str(s), "--holdout", str(h), "--categorical", cat]
         + ["--unseen", "mismatch", "--n-jobs", "1", "--out", str(cell / "audit")])  # fmt: skip
    _run(["attack", "--members", str(t), "--non-members", str(h), "--synthetic", str(s), "--categorical", cat]
         + ["--attacks", "levatt,dcr", "--n-bootstrap", "10", "--n-jobs", "1", "--out", str(cell / "attack")])  # fmt: skip
    _run(["quality", "--real", str(t), "--synthetic", str(s), "--categorical", cat, "--target", NAMES[4]]
         + ["--metrics", "shape,trend", "--out", str(cell / "quality")])  # fmt: skip
    shutil.copytree(cell, root / "runs" / "plain")  # two cells: the comparison figures label each by name
    out = root / "report.html"
    _run(["report", str(root / "runs"), "--out", str(out)])
    parsed = _Page()
    parsed.feed(out.read_text(encoding="utf-8"))
    return parsed


def test_no_markup_from_names_is_injected(page):
    assert "script" not in page.tags  # the report itself has no script; a name's <script> stays text
    assert "img" not in page.tags


@pytest.mark.parametrize("name", NAMES)
def test_column_names_are_shown_literally_in_tables_and_figures(page, name):
    text = "".join(page.text)
    assert name in text  # a table cell (HTML-escaped in the file, literal once parsed)
    # figures draw their text as glyph paths; matplotlib leaves each string in a comment beside them
    assert any(c.strip() == name.replace("<", "&lt;").replace(">", "&gt;") for c in page.comments), name


def test_a_run_name_with_dollars_and_markup_is_shown_literally(page):
    assert RUN in "".join(page.text)
    assert any(RUN.replace("<", "&lt;").replace(">", "&gt;") in c for c in page.comments)  # the rates figure


def test_matplotlib_math_text_is_off_for_report_figures():
    from matplotlib.figure import Figure

    from tabmem.report.svg import styled, to_svg

    @styled
    def figure() -> str:
        fig = Figure()
        ax = fig.subplots()
        ax.bar(["$5", "$\\foo$", "a_b^c"], [1, 2, 3])
        ax.set_title("$\\frac{1}{$")
        ax.set_xlabel("$\\sqrt$")
        return to_svg(fig, "$\\foo$ <x>")

    svg = figure()
    assert "<!-- $\\foo$ -->" in svg and "<!-- $5 -->" in svg and 'aria-label="$\\foo$ &lt;x>"' in svg
