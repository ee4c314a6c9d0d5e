"""Pipeline schedules drawn: a grid from `pipeline` (GPipe, 1F1B, interleaved, zero-bubble) with its idle fraction.

The schedules themselves are computed in `scalebook.training.pipeline` and re-exported here under the names chapter 5
uses (`sb.plots.schedules.interleaved_schedule`, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..training.pipeline import greedy_schedule, idle_fraction, interleaved_schedule, zero_bubble_schedule
from .training import pipeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["interleaved_schedule", "zero_bubble_schedule", "greedy_schedule", "schedule_figure"]


def schedule_figure(grid: list[list[str]], title: str) -> Figure:
    """Draw a grid from this module (or `training.pipeline_schedule`) with its idle fraction in the title."""
    return pipeline(grid, title=f"{title}\nidle fraction {idle_fraction(grid):.0%}")
