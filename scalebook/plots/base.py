"""What every figure shares: a closed matplotlib figure with a constrained layout."""

from __future__ import annotations

from typing import Any


def figure(figsize: tuple[float, float] = (7.0, 4.5), ncols: int = 1, nrows: int = 1) -> tuple[Any, Any]:
    """Return (fig, ax) from pyplot, closed so that a notebook shows it once: when it is returned."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained")
    plt.close(fig)
    return fig, ax
