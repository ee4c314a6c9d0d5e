"""The validation suite on one picture: each published run's value against what the model predicts for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..units import checks
from ..validation import results
from .base import figure, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["validation"]

_KIND_MARKERS = {"decode": "o", "prefill": "s", "serve": "D", "training": "^", "memory": "v"}


@checks(band="fraction")
def validation(efficiency: str = "calibrated", band: float = 0.15) -> Figure:
    """Plot predicted against published for every run of `sb.validation` on log axes: the ideal prediction
    (hollow) and the `efficiency` one (filled), the line where they agree and a ±`band` band around it.

    Each run keeps its own metric (tokens/s, ms, TFLOP/s, GiB ...), so the axes carry numbers in those units:
    what matters is the distance from the diagonal. For throughputs a point above it is a prediction faster than
    measured; for times (ms, s) a point below it is.
    """
    if not 0 < band < 1:
        raise ValueError(f"band must be a fraction between 0 and 1, got {band!r}")
    rows = results(efficiency)
    fig, ax = figure((7.0, 6.0))
    values = [r["published"] for r in rows] + [r["ideal"] for r in rows] + [r[efficiency] for r in rows]
    lo, hi = min(values) / 2, max(values) * 2
    line = np.geomspace(lo, hi, 50)
    ax.plot(line, line, color="black", lw=1, label="prediction = published")
    ax.fill_between(line, line * (1 - band), line * (1 + band), color="#59a14f", alpha=0.2,
                    label=f"±{band:.0%}")
    for kind, marker in _KIND_MARKERS.items():
        mine = [r for r in rows if r["kind"] == kind]
        if not mine:
            continue
        published = [r["published"] for r in mine]
        ax.scatter(published, [r["ideal"] for r in mine], marker=marker, facecolors="none", edgecolors="#e15759",
                   label=f"{kind}: ideal")
        ax.scatter(published, [r[efficiency] for r in mine], marker=marker, color="#4e79a7",
                   label=f"{kind}: {efficiency}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    finish(ax, "published value (each run's own unit: tokens/s, ms, TFLOP/s, MFU, s, GiB)",
           "predicted value (same unit)", f"{len(rows)} published runs: ideal bound vs {efficiency} prediction",
           legend="upper left")
    return fig
