"""Corpus cases of failure class 5: user text that tools interpret (matplotlib math text, HTML, SVG).

Column names with ``$``/backslashes, markup, quotes, ``..`` and non-ASCII letters, and a category
``$5``, through the commands and the report: no crash, the text shown literally, no markup injected.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd
from corpus_runner import Case, Result
from corpus_tables import VARIANTS

NAMES = {
    "capital_gain": "$\\foo$",
    "hours": "<script>alert(1)</script>",
    "score": 'a"b',
    "fnlwgt": "x/../y",
    "education": "naïve",
}


def _text_names(role: str):
    def variant(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
        out = t[role].rename(columns=NAMES)
        out["workclass"] = out["workclass"].replace({"Private": "$5", "Self-emp": "$\\bar$"})
        return out

    return variant


for _role in ("train", "synthetic", "holdout"):
    VARIANTS[f"{_role}_text_names"] = (_role, _text_names(_role))
TEXT_INPUTS = {role: f"{role}_text_names" for role in ("train", "synthetic", "holdout")}


def _audit_text_names(tmp, out) -> None:
    """``rundir``: an audit and a quality output (its column-shape figure labels every column)."""
    from tabmem.cli import main

    t, s, h = (str(tmp / f"{role}.csv") for role in ("train", "synthetic", "holdout"))
    rundir = tmp / "rundir"
    for argv in (
        ["audit", "--train", t, "--synthetic", s, "--holdout", h, "--out", str(rundir / "audit")],
        ["quality", "--real", t, "--synthetic", s, "--metrics", "shape,trend", "--out", str(rundir / "quality")],
    ):
        try:
            main(argv)
        except SystemExit as exc:
            assert not exc.code


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)

    def handle_data(self, data) -> None:
        self.text.append(data)


def _report_literal(r: Result) -> None:
    page = _Page()
    page.feed((r.out_dir / "report.html").read_text(encoding="utf-8"))
    assert "script" not in page.tags
    text = "".join(page.text)
    for name in NAMES.values():
        assert name in text, name  # the column-shape table and figure: literal text


def _summary_written(r: Result) -> None:
    assert any(r.out_dir.rglob("summary.json")) or any(r.out_dir.rglob("*.json"))


CASES: list[Case] = [
    Case("text_column_names_commands", "5 text", ("audit", "attack", "quality"), "ok", inputs=TEXT_INPUTS,
         check=_summary_written),
    Case("text_column_names_report", "5 text", ("report",), "ok", inputs=TEXT_INPUTS, setup=_audit_text_names,
         check=_report_literal, note="traceback in matplotlib's math text (ParseFatalException: Unknown symbol: \\foo)"),
]  # fmt: skip
