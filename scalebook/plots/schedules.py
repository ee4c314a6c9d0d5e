"""Pipeline schedules drawn: a grid (GPipe, 1F1B, interleaved, zero-bubble) with its idle fraction in the title.

The schedules have one home, `scalebook.training.pipeline` (`sb.training.pipeline_schedule`,
`interleaved_schedule`, `zero_bubble_schedule`); this module only draws them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# the schedules besides idle_fraction only keep chapter 5's old spelling (sb.plots.schedules.interleaved_schedule)
# working until release 0.3
from ..training.pipeline import (  # noqa: F401
    greedy_schedule,
    idle_fraction,
    interleaved_schedule,
    zero_bubble_schedule,
)
from .training import pipeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["schedule_figure"]


def schedule_figure(grid: list[list[str]], title: str) -> Figure:
    """Draw a grid of `training.pipeline` (`pipeline_schedule`, `interleaved_schedule`, `zero_bubble_schedule`)
    with its idle fraction in the title."""
    return pipeline(grid, title=f"{title}\nidle fraction {idle_fraction(grid):.0%}")
