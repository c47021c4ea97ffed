"""The report's figure style and the figure-to-SVG step (matplotlib's object API, no pyplot state).

Colours are the Okabe-Ito palette (readable with colour-vision deficiencies): synthetic rows are
always vermillion, the holdout baseline always grey-blue. Glyphs are drawn as paths, so a figure
looks the same whatever fonts the reader has; a fixed hash salt and no date make the same figure
the same bytes.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable
from typing import Any

from tabmem.report.readers import finite

__all__ = [
    "PALETTE",
    "SYNTH",
    "BASE",
    "GRID",
    "INK",
    "MUTED",
    "RC",
    "WIDTH",
    "styled",
    "new_figure",
    "to_svg",
    "ci_err",
]

PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
SYNTH = "#D55E00"  # synthetic rows / Top records
BASE = "#4A6C8C"  # holdout baseline / Non-top records
GRID = "#E3E6EA"
INK = "#2B2F36"
MUTED = "#6B7280"
RC = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "axes.edgecolor": "#9AA1AB",
    "axes.labelcolor": INK,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.titlecolor": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "svg.fonttype": "path",  # glyphs as paths: the page looks the same whatever fonts the reader has
    "svg.hashsalt": "tabmem-report",
    # every label, title and tick of a figure may hold a user's column or category name (``$\foo$``,
    # ``$5``): shown literally, never parsed as math text nor handed to LaTeX
    "text.parse_math": False,
    "text.usetex": False,
}
WIDTH = 10.0  # inches: 960 px at the browser's 96 px per inch, the width of the report's column


def styled(fn: Callable[..., str | None]) -> Callable[..., str | None]:
    """Build and save the figure under the report's matplotlib style (rcParams are read at creation)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str | None:
        import matplotlib as mpl

        with mpl.rc_context(RC):
            return fn(*args, **kwargs)

    return wrapper


def new_figure(height: float, ncols: int = 1, width: float = WIDTH, **kw: Any):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False, **kw)[0]
    return fig, list(axes)


def to_svg(fig, label: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, scales to its container)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, count=1, flags=re.S)
    width = re.search(r'<svg[^>]*?\bwidth="([\d.]+)pt"', svg)
    max_w = f' style="max-width:{float(width.group(1)) * 4 / 3:.0f}px"' if width else ""
    svg = re.sub(r'(<svg[^>]*?)\s(?:width|height)="[^"]*"', r"\1", svg, count=1)
    svg = re.sub(r'(<svg[^>]*?)\s(?:width|height)="[^"]*"', r"\1", svg, count=1)
    label = label.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    return svg.replace("<svg", f'<svg class="plot" role="img" aria-label="{label}"{max_w}', 1)


def ci_err(value: float, ci: Any) -> tuple[list[float], list[float]] | None:
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and finite(ci[0]) is not None and finite(ci[1]) is not None:
        return [max(value - float(ci[0]), 0.0)], [max(float(ci[1]) - value, 0.0)]
    return None
