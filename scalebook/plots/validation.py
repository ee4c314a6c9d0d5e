"""The validation suite on one picture: each published run's value against what the model predicts for it, and
the calibrated model's speed error against the run's size, each row coloured by its provenance."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..units import checks
from ..validation import STATUSES, results
from .base import figure, finish, legend_below

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["validation"]

_KIND_MARKERS = {"decode": "o", "prefill": "s", "serve": "D", "training": "^", "memory": "v"}
# Provenance colours: the test rows (what to expect on a new run) stand out; calibration rows are grey.
_STATUS_COLORS = {"held-out": "#f28e2b", "development": "#4e79a7", "calibration": "#9c9c9c"}
_STATUS_NAMES = {"held-out": "test (held out)", "development": "development", "calibration": "calibration"}


@checks(band="fraction")
def validation(efficiency: str = "calibrated", band: float = 0.15) -> Figure:
    """Two panels. Left: predicted against published for every run of `sb.validation` on log axes, the ideal
    prediction hollow and the `efficiency` one filled, coloured by the row's status (test, development,
    calibration), with the line where they agree and a ±`band` band. Right: the `efficiency` model's speed error
    (positive: too fast) against the run's chips, same colours, with each status's median as a dashed line.

    Each run keeps its own metric (tokens/s, ms, TFLOP/s, GiB ...), so the left axes carry numbers in those units:
    what matters is the distance from the diagonal. For throughputs a point above it is a prediction faster than
    measured; for times (ms, s) a point below it is.
    """
    if not 0 < band < 1:
        raise ValueError(f"band must be a fraction between 0 and 1, got {band!r}")
    rows = results(efficiency)
    fig, (ax, res) = figure((10.0, 5.2), ncols=2)  # the cell is tagged full-width: 10.3 in on the site
    values = [r["published"] for r in rows] + [r["ideal"] for r in rows] + [r[efficiency] for r in rows]
    lo, hi = min(values) / 2, max(values) * 2
    line = np.geomspace(lo, hi, 50)
    ax.plot(line, line, color="black", lw=1)
    ax.fill_between(line, line * (1 - band), line * (1 + band), color="#59a14f", alpha=0.2, label=f"±{band:.0%}")
    for kind, marker in _KIND_MARKERS.items():
        mine = [r for r in rows if r["kind"] == kind]
        if mine:
            ax.scatter([r["published"] for r in mine], [r["ideal"] for r in mine], marker=marker,
                       facecolors="none", edgecolors="#e15759", alpha=0.6, label=f"{kind}: ideal")
            ax.scatter([r["published"] for r in mine], [r[efficiency] for r in mine], marker=marker,
                       c=[_STATUS_COLORS[r["status"]] for r in mine], s=22)
    for status in STATUSES:
        ax.scatter([], [], color=_STATUS_COLORS[status], label=f"{efficiency}: {_STATUS_NAMES[status]}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    finish(ax, "published value (each run's own unit)", "predicted value (same unit)",
           f"{len(rows)} published runs: ideal bound vs {efficiency}")
    _residuals(res, [r for r in rows if r["speed error"] is not None], band)
    handles, labels = (a + b for a, b in zip(ax.get_legend_handles_labels(), res.get_legend_handles_labels()))
    res.get_legend().remove()
    legend_below(ax, ncol=4, handles=handles, labels=labels)  # under the figure: the points reach every corner
    return fig


def _residuals(ax, rows: list[dict], band: float) -> None:
    """Speed error against chips, one colour per status, each status's median dashed, the ±band shaded."""
    ax.axhspan(-band, band, color="#59a14f", alpha=0.2)
    ax.axhline(0, color="black", lw=1)
    for status in STATUSES:
        mine = [r for r in rows if r["status"] == status]
        if not mine:
            continue
        errors = [r["speed error"] for r in mine]
        ax.scatter([r["chips"] for r in mine], errors, color=_STATUS_COLORS[status], s=18,
                   label=f"{_STATUS_NAMES[status]} ({len(mine)} rows)")
        ax.axhline(float(np.median(errors)), color=_STATUS_COLORS[status], ls="--", lw=1.2)
    ax.set_xscale("log")
    finish(ax, "chips in the run", "speed error (predicted / published speed - 1; > 0: too fast)",
           "calibrated error by size and provenance")
