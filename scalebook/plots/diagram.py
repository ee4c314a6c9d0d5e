"""Drawing primitives for the concept diagrams (chips, layers, collectives): a blank canvas in data units,
labelled boxes and arrows. Matplotlib is imported only when a diagram is drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import SIZES, figure

__all__ = ["cell", "canvas", "panels", "box", "arrow", "COLOURS"]

# One colour per kind of part, shared by every diagram so that HBM, VMEM, MXU ... look alike throughout.
COLOURS = {
    "hbm": "#c6dbef", "vmem": "#fdd0a2", "mxu": "#a1d99b", "vpu": "#fcbba1", "scalar": "#dadaeb",
    "core": "#f7f7f7", "host": "#e0e0e0", "chip": "#deebf7", "weight": "#fdae6b", "act": "#9ecae1",
    "op": "#ffffff", "norm": "#d9d9d9", "highlight": "#fee391",
}


def canvas(width: float, height: float, figsize: tuple[float, float], title: str) -> tuple[Any, Any]:
    """Return (fig, ax): one blank axes spanning [0, width] x [0, height] in data units, titled, without axes."""
    fig, ax = figure(figsize)
    _blank(ax, width, height)
    ax.set_title(title, fontsize=SIZES["title"])
    return fig, ax


def panels(n: int, ncols: int, panel_size: tuple[float, float], width: float, height: float,
           title: str) -> tuple[Any, list[Any]]:
    """Return (fig, axes): `n` blank panels of [0, width] x [0, height], `ncols` to a row, under one title."""
    nrows = -(-n // ncols)
    fig, axs = figure((panel_size[0] * ncols, panel_size[1] * nrows + 0.5), ncols=ncols, nrows=nrows)
    axs = list(getattr(axs, "flat", [axs]))
    for ax in axs:
        _blank(ax, width, height)
    for ax in axs[n:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=SIZES["title"])
    return fig, axs[:n]


def _blank(ax: Any, width: float, height: float) -> None:
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.set_axis_off()


def box(ax: Any, x: float, y: float, w: float, h: float, label: str = "", colour: str = "white",
        fontsize: float = 8, edge: str = "0.25", lw: float = 1.0, ls: str = "-", va: str = "center",
        round_: bool = True, alpha: float = 1.0, zorder: int = 2) -> None:
    """Draw a box with its lower-left corner at (x, y) and `label` centred (or at its top, va='top')."""
    from matplotlib.patches import FancyBboxPatch

    style = f"round,pad=0,rounding_size={min(w, h) * 0.12:.3f}" if round_ else "square,pad=0"
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=style, facecolor=colour, edgecolor=edge, lw=lw, ls=ls,
                                alpha=alpha, zorder=zorder))
    if label:
        ty = y + h - 0.08 * min(h, 1.0) if va == "top" else y + h / 2
        ax.text(x + w / 2, ty, label, ha="center", va=va, fontsize=max(fontsize, SIZES["small"]), zorder=zorder + 1)


def arrow(ax: Any, start: Sequence[float], end: Sequence[float], label: str = "", colour: str = "0.2",
          both: bool = False, fontsize: float = SIZES["small"], lw: float = 1.2, offset: Sequence[float] = (0.0, 0.0),
          ls: str = "-", rad: float = 0.0) -> None:
    """Draw an arrow from `start` to `end` (both ends with `both`), `label` beside its middle at `offset`."""
    ax.annotate("", xy=tuple(end), xytext=tuple(start), zorder=4,
                arrowprops=dict(arrowstyle="<->" if both else "->", color=colour, lw=lw, ls=ls,
                                connectionstyle=f"arc3,rad={rad}", shrinkA=1, shrinkB=1))
    if label:
        mx, my = (start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1]
        ax.text(mx, my, label, ha="center", va="center", fontsize=max(fontsize, SIZES["small"]), color=colour, zorder=5,
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))


def cell(ax: Any, x: float, y: float, w: float, h: float, color: str, text: str = "", size: float = 8,
         tcolor: str = "white") -> None:
    """Draw one square-cornered cell of a timeline or grid (white edge, so neighbours stay apart), `text` centred."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="white", lw=0.8))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=max(size, SIZES["small"]), color=tcolor)
