"""What every figure shares: a closed matplotlib figure with a constrained layout."""

from __future__ import annotations

from typing import Any


def figure(figsize: tuple[float, float] = (7.0, 4.5), ncols: int = 1, nrows: int = 1) -> tuple[Any, Any]:
    """Return (fig, ax) from pyplot, closed so that a notebook shows it once: when it is returned."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained")
    plt.close(fig)
    return fig, ax


def finish(ax: Any, xlabel: str, ylabel: str, title: str, legend: str = "lower right") -> None:
    """Label an axes with units, title it, grid it and place its legend (the same on every figure)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc=legend)


def schematic(ax: Any, xlim: tuple[float, float], ylim: tuple[float, float], title: str, fontsize: float = 9) -> None:
    """Frame a drawing that has no axes of its own: set its limits, hide the axes and title it."""
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    ax.set_title(title, fontsize=fontsize)


def time_axis(ax: Any, xlabel: str, title: str) -> None:
    """Label a schematic's time axis and title it (no legend: the bars carry their own labels)."""
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
