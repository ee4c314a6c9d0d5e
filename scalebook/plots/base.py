"""What every figure shares: the house style (palette, roles, sizes) and a closed figure with a constrained layout.

The site shows a figure at most one text column wide: 730 px, `COLUMN_WIDTH` = 7.6 in at 96 px per inch; a cell
tagged `full-width` gets 136 % of that (`FULL_WIDTH`). Sizes are chosen so that no text is under 8 pt once the
figure is shrunk to that width: draw at most `COLUMN_WIDTH` wide with `SIZES`, or tag the cell.

A notebook shows a figure as SVG (`_show_as_svg`): vector, so it stays sharp on a high-resolution screen, zoomed and
in print (Chromium prints an SVG image as vector paths), where a 100-dpi PNG goes soft.
"""

from __future__ import annotations

import sys
from typing import Any

COLUMN_WIDTH = 730 / 96  # in: the site's text column
FULL_WIDTH = 1.36 * COLUMN_WIDTH  # in: a cell tagged full-width (sphinx-book-theme's 136 %)
# Okabe & Ito's colour-blind-safe eight (Color Universal Design, 2008), black moved last: series colours in order.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000")
# Shards, blocks and array elements: sixteen distinct colours (Tableau 20's darker and lighter steps), colour k for
# shard or element k, so a 4 × 4 array's elements all differ.
SHARDS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
          "#9c755f", "#bab0ac", "#86bcb6", "#d37295", "#fabfd2", "#b6992d", "#499894", "#8cd17d")
# One colour per role, the same in every figure: the operands of a matmul, and the parts of a step's time.
ROLES = {"A": "#0072B2", "B": "#E69F00", "C": "#009E73", "compute": "#0072B2", "memory": "#009E73",
         "comms": "#D55E00", "idle": "#BBBBBB", "model": "#000000", "measured": "#D55E00"}
# A sequential colour map per matmul operand, for drawings that colour an operand's elements one by one.
OPERAND_MAPS = {"A": "Blues", "B": "Oranges", "C": "Greens"}
# Points at the displayed width: nothing drawn is smaller than "small".
SIZES = {"title": 11.0, "label": 10.0, "text": 9.0, "small": 8.0}
HOUSE = {"font.size": SIZES["text"], "axes.titlesize": SIZES["title"], "axes.labelsize": SIZES["label"],
         "xtick.labelsize": SIZES["text"], "ytick.labelsize": SIZES["text"], "legend.fontsize": SIZES["text"],
         "figure.titlesize": SIZES["title"], "axes.spines.top": False, "axes.spines.right": False,
         "lines.linewidth": 1.8, "grid.alpha": 0.3, "legend.framealpha": 0.9, "figure.dpi": 100}


def house_style() -> None:
    """Set matplotlib's defaults to the house style: sizes, spines and the palette as the colour cycle."""
    import matplotlib as mpl

    mpl.rcParams.update(HOUSE)
    mpl.rcParams["axes.prop_cycle"] = mpl.cycler(color=list(PALETTE))


def _show_as_svg() -> None:
    """Have IPython show a figure as SVG instead of PNG (the notebook's output, and the site's image, are vector);
    nothing outside IPython. Called once pyplot is imported: its first import sets IPython's inline formats, which
    would otherwise undo this for the first figure."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    from IPython.core.pylabtools import select_figure_formats

    select_figure_formats(shell, {"svg"}, bbox_inches="tight")


def figure(figsize: tuple[float, float] = (7.0, 4.2), ncols: int = 1, nrows: int = 1) -> tuple[Any, Any]:
    """Return (fig, ax) from pyplot in the house style, closed so that a notebook shows it once: when it is
    returned. `figsize` is in inches; keep it within `COLUMN_WIDTH` (or tag the cell full-width)."""
    import matplotlib.pyplot as plt

    house_style()
    fig, ax = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained")
    plt.close(fig)
    _show_as_svg()
    return fig, ax


def finish(ax: Any, xlabel: str, ylabel: str, title: str, legend: str = "lower right") -> None:
    """Label an axes with units, title it, grid it and place its legend (the same on every figure)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc=legend)


def legend_below(ax: Any, ncol: int = 2, handles: list | None = None, labels: list | None = None) -> None:
    """Move the legend of `ax` (or one of `handles`, `labels`) under the figure, where it cannot cover data
    (constrained layout makes room for it)."""
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.figure.legend(handles, labels, loc="outside lower center", ncol=ncol)


def schematic(ax: Any, xlim: tuple[float, float], ylim: tuple[float, float], title: str,
              fontsize: float = SIZES["title"]) -> None:
    """Frame a drawing that has no axes of its own: set its limits, hide the axes and title it."""
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    ax.set_title(title, fontsize=fontsize)


def time_axis(ax: Any, xlabel: str, title: str) -> None:
    """Label a schematic's time axis and title it (no legend: the bars carry their own labels)."""
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
