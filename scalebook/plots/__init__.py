"""Matplotlib figures for the chapters; matplotlib is imported only when a figure is drawn.

Every function returns a closed `Figure` (a notebook shows it once, `fig.savefig` works in scripts);
every axis has a label with its unit and every figure a title. One module per topic.
"""

from __future__ import annotations

from .roofline import batch_roofline, roofline, sweep

__all__ = ["roofline", "batch_roofline", "sweep"]
