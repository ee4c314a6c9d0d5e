"""The book's measured collective-bandwidth curves (ch. 12, Appendix B), read off its plots, against the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..measured_collectives import curve, model_bandwidth
from ..units import fmt_rate
from .base import PALETTE, figure, finish, legend_below

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["against_model"]


def against_model(key: str) -> Figure:
    """Plot the published curve `key` ('v5p_all_reduce', 'v5e_all_gather', 'h100_all_gather'): its bandwidth
    V / time (GB/s) against the message size V (bytes, log axis), the points read off the book's plot and its second
    series, beside the package's model of the same collective on the same system, ideal (the book's bound) and
    calibrated, and the plot's claimed link bandwidth."""
    c = curve(key)
    sizes = np.geomspace(min(c.sizes) / 2, max(c.sizes) * 2, 80)
    fig, ax = figure((7.0, 4.2))
    for mode, style, colour in (("ideal", "--", PALETTE[0]), ("calibrated", "-", PALETTE[2])):
        ax.semilogx(sizes, [model_bandwidth(c, v, mode) / 1e9 for v in sizes], style, color=colour,
                    label=f"model, {mode}")
    ax.semilogx(c.sizes, [bw / 1e9 for bw in c.bandwidth], "o", color=PALETTE[3],
                label="published: V / time (read off the plot)")
    ax.semilogx(c.derived_sizes, [bw / 1e9 for bw in c.derived], "s", mfc="none", color=PALETTE[1],
                label=f"published: {c.derived_label} (× {c.derived_factor:g})")
    ax.axhline(c.claimed / 1e9, color="#555", ls=":", label=f"the plot's claimed line, {fmt_rate(c.claimed, 'B/s')}")
    finish(ax, "message size V (bytes)", "bandwidth V / time (GB/s)", c.title)
    legend_below(ax)  # the curves span the axes: the legend goes under the figure
    return fig
