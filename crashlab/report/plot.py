"""The sweep as one picture: where each design can die, and what a crash there costs.

The top half has one strip per design over the crash points of its uninterrupted run (1..N, on a
common scale, so a longer strip is a design with more places to die). Each cell is the outcome of
crashing once at that point and restarting: a duplicate in the tracker, a question to a person, a
model call paid again, or nothing at all. The tick under a cell names the point ("7 returned").

The bottom half is the double pass, one panel per design: crash the first process at its point i
(x), crash the restart at its point j (y), let a third process finish. A cell's shade is the
duplicates that scenario left, or, for a design that never duplicates, the questions it asked. White
cells were never run: the restart after crash i finished before reaching point j.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import BoundaryNorm, ListedColormap, to_rgb
from matplotlib.figure import Figure, SubFigure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.textpath import TextToPath
from matplotlib.ticker import MaxNLocator

from crashlab.engine.tree import VariantSweep
from crashlab.protocols.outcome import Outcome
from crashlab.protocols.scenario import ScenarioResult
from crashlab.report.results import remove_stale

#: The formats `draw` writes; matplotlib picks the backend for each from the format.
FORMATS = ("png", "pdf", "svg")
#: The picture's size in pixels (at DPI dots per inch): wide enough for a label under each of the
#: triage job's 43 points, tall enough for five labelled strips above a line of heatmaps.
WIDTH, HEIGHT = 1600, 1250
DPI = 100
#: A strip's coloured band, the tick marks and gap below its rotated labels, and the strips' title,
#: axis label and legend. The labels' own height is measured, the strips take at most
#: MAX_STRIPS_SHARE of the picture, and the heatmaps get the rest: fewer designs, larger panels.
CELL_PX, TICK_GAP_PX, STRIPS_HEAD_PX = 24, 12, 120
MAX_STRIPS_SHARE = 0.7
#: Tick label size under the strips, in points; smaller only when the labels would not fit.
TICK_PT = 8.0

#: Single-crash outcomes, worst first: a cell takes the first that applies. Okabe-Ito colours, which
#: stay apart under the common colour-vision deficiencies; "clean" is a quiet grey.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("duplicate", "#D55E00"),
    ("asked a person", "#CC79A7"),
    ("extra model call", "#56B4E9"),
    ("clean", "#E4E4E4"),
)
CLEAN = CATEGORIES[-1][1]

#: More tick labels than this under one strip would overlap; beyond it only every k-th point is named.
MAX_TICKS = 60
#: Below this many pixels per cell, white gaps between cells would drown the colours.
MIN_GAPPED_CELL_PX = 16
#: Heatmap panels per line: more designs wrap onto further lines, and fewer still get a third of the
#: width each (centred), so one design's panel is not stretched across the whole picture.
MAX_PANELS, MIN_PANELS = 5, 3


def draw(sweeps: Sequence[VariantSweep], out: str | Path, title: str = "", fmt: str = "png") -> Path:
    """Render the sweeps to `out` and return its path: a PNG of exactly WIDTH x HEIGHT pixels, or the
    same figure as a PDF or SVG (`fmt`, one of FORMATS), whose size is WIDTH x HEIGHT / DPI inches.

    The figure is drawn on its own Agg canvas, never through pyplot, so no global backend or figure
    registry is touched: safe to call from a CLI, a test, or a notebook with another backend.
    """
    if not sweeps:
        raise ValueError("nothing to draw: no sweeps")
    if fmt not in FORMATS:
        raise ValueError(f"cannot draw {fmt!r}: the formats are {', '.join(FORMATS)}")
    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    if title:
        fig.suptitle(title, fontsize=15, fontweight="bold")
    strips, tick_pt = strips_layout(sweeps)
    top, bottom = fig.subfigures(2, 1, height_ratios=[strips, HEIGHT - strips])  # type: ignore[misc]
    draw_strips(top, sweeps, tick_pt)
    draw_heatmaps(bottom, sweeps)
    path = Path(out)
    path.parent.mkdir(exist_ok=True)  # its folder, but no folder above it: a typo makes no tree of folders
    remove_stale(path.parent, path.name)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # the picture appears whole, or not at all
    try:
        fig.savefig(temp, dpi=DPI, format=fmt)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return path


def category(outcome: Outcome) -> int:
    """Index into CATEGORIES: the worst thing the scenario did, so one colour tells the cost."""
    if outcome.extra > 0:
        return 0
    if outcome.asks > 0:
        return 1
    if outcome.calls_plus > 0:
        return 2
    return 3


def singles(sweep: VariantSweep) -> list[ScenarioResult]:
    return sorted((s for s in sweep.scenarios() if len(s.crashes) == 1), key=lambda s: s.crashes)


def doubles(sweep: VariantSweep) -> list[ScenarioResult]:
    return [s for s in sweep.scenarios() if len(s.crashes) == 2]


def tick_text(scenario: ScenarioResult) -> str:
    return f"{scenario.crashes[0]} {scenario.points[0].partition('#')[0]}"


def text_px(text: str, points: float) -> float:
    """Rendered length of a label, measured from the font rather than guessed per character."""
    width, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(size=points), ismath=False)
    return width * DPI / 72


def strips_layout(sweeps: Sequence[VariantSweep]) -> tuple[float, float]:
    """The strips' height in pixels and their tick font size.

    Rotated, the longest tick label sets how far apart the strips must be: crash-point labels vary
    by loop ("approval-decided" is twice "reply"), so the height is measured, not fixed. Past
    MAX_STRIPS_SHARE the labels shrink instead, so the layout never collapses.
    """
    longest = max(text_px(tick_text(s), TICK_PT) for sweep in sweeps for s in singles(sweep))
    room = (MAX_STRIPS_SHARE * HEIGHT - STRIPS_HEAD_PX) / len(sweeps) - CELL_PX - TICK_GAP_PX
    tick_pt = TICK_PT * min(1.0, room / longest)
    return STRIPS_HEAD_PX + len(sweeps) * (CELL_PX + TICK_GAP_PX + min(longest, room)), tick_pt


def draw_strips(sub: SubFigure, sweeps: Sequence[VariantSweep], tick_pt: float) -> None:
    """One strip per design, on a shared x scale so equal cells mean equal points across designs."""
    sub.suptitle("Crash once at point i, restart, finish: the worst outcome of each single crash", fontsize=12)
    width = max((s.points for s in sweeps), default=1) or 1
    axes = sub.subplots(len(sweeps), 1, squeeze=False)[:, 0]
    for ax, sweep in zip(axes, sweeps, strict=True):
        draw_strip(ax, sweep, width, tick_pt)
    axes[-1].set_xlabel("crash point of the uninterrupted run (index and label)")
    handles = [Patch(facecolor=colour, edgecolor="#999999", label=name) for name, colour in CATEGORIES]
    sub.legend(handles=handles, loc="outside lower center", ncols=len(CATEGORIES), frameon=False, fontsize=10)


def draw_strip(ax: Axes, sweep: VariantSweep, width: int, tick_pt: float) -> None:
    """Each tick names its point as well as numbering it: "7 returned" says where the loop died."""
    cells = singles(sweep)
    values = np.array([[category(s.outcome) for s in cells]], dtype=float)
    colours = ListedColormap([colour for _, colour in CATEGORIES])
    norm = BoundaryNorm(np.arange(len(CATEGORIES) + 1) - 0.5, colours.N)
    xs = np.arange(len(cells) + 1) + 0.5
    gap = 1.0 if WIDTH / width >= MIN_GAPPED_CELL_PX else 0.0
    ax.pcolormesh(xs, [0, 1], values, cmap=colours, norm=norm, edgecolors="white", linewidth=gap)
    ax.set_xlim(0.5, width + 0.5)
    ax.set_ylim(0, 1)
    ax.set_yticks([0.5], [f"{sweep.setup.variant.name}\n{sweep.points} points"], fontsize=10)
    ax.tick_params(axis="y", length=0)
    step = math.ceil(width / MAX_TICKS)
    named = cells[::step]
    ax.set_xticks([s.crashes[0] for s in named], [tick_text(s) for s in named], rotation=90, fontsize=tick_pt)
    ax.spines[:].set_visible(False)


def draw_heatmaps(sub: SubFigure, sweeps: Sequence[VariantSweep]) -> None:
    """One panel per design, MAX_PANELS to a line, a short last line centred under the others.

    Each panel spans two columns of a grid twice as wide as the line, so half-column offsets centre it.
    """
    sub.suptitle("Crash at point i, crash the restart at its point j, finish: what each double crash left",
                 fontsize=12)
    cols = max(min(len(sweeps), MAX_PANELS), MIN_PANELS)
    grid = sub.add_gridspec(math.ceil(len(sweeps) / cols), 2 * cols)
    for k, sweep in enumerate(sweeps):
        line, slot = divmod(k, cols)
        offset = cols - min(cols, len(sweeps) - line * cols)
        draw_heatmap(sub, sub.add_subplot(grid[line, offset + 2 * slot:offset + 2 * slot + 2]), sweep)


def draw_heatmap(sub: SubFigure, ax: Axes, sweep: VariantSweep) -> None:
    """Duplicates when the design ever duplicates (the worse failure), else the questions it asked."""
    cells = doubles(sweep)
    dup = any(s.outcome.extra for s in cells)
    quantity, colour = ("duplicates", CATEGORIES[0][1]) if dup else ("asks", CATEGORIES[1][1])
    grid = double_grid(cells, sweep.points, (lambda o: o.extra) if dup else (lambda o: o.asks))
    top = int(grid.max()) if grid.count() else 0
    cmap = shades(colour, top)
    norm = BoundaryNorm(np.arange(top + 2) - 0.5, cmap.N)
    rows, cols = grid.shape
    image = ax.imshow(grid, origin="lower", extent=(0.5, cols + 0.5, 0.5, rows + 0.5), cmap=cmap, norm=norm,
                      interpolation="nearest", aspect="auto")
    ax.set_title(f"{sweep.setup.variant.name}\n{quantity} (max {top})", fontsize=10)
    ax.set_xlabel("first crash (point i)", fontsize=9)
    ax.set_ylabel("second crash (restart's point j)", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    bar = sub.colorbar(image, ax=ax, ticks=range(0, top + 1, math.ceil((top + 1) / 10)), fraction=0.08, pad=0.02)
    bar.ax.tick_params(labelsize=8, length=0)


def double_grid(
    cells: Sequence[ScenarioResult], points: int, value: Callable[[Outcome], int]
) -> np.ma.MaskedArray:
    """Rows are j, columns i; a cell no scenario reached stays masked, so it is drawn white."""
    rows = max((s.crashes[1] for s in cells), default=1)
    grid = np.ma.masked_all((rows, max(points, 1)))
    for s in cells:
        i, j = s.crashes
        grid[j - 1, i - 1] = value(s.outcome)
    return grid


def shades(colour: str, top: int) -> ListedColormap:
    """Zero in the strips' "clean" grey, then 1..top from a pale tint to the full colour.

    Counts here are small integers, so discrete steps read better than a continuous ramp.
    """
    full, white = np.array(to_rgb(colour)), np.ones(3)
    tints = [white + (full - white) * t for t in np.linspace(0.4, 1.0, top)]
    return ListedColormap([to_rgb(CLEAN), *tints]).with_extremes(bad="white")  # type: ignore[return-value]
