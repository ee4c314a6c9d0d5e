"""Profiles drawn: one run of a captured trace as bars over time, one row per device (chapter 9)."""

from __future__ import annotations

from typing import Any

from .base import figure

__all__ = ["timeline"]


def timeline(trace: Any, run: int = -1) -> Any:
    """Return a matplotlib figure of one run of the trace (the last by default): one row of op bars per device."""
    from matplotlib.patches import Patch

    if not getattr(trace, "events", None):
        raise ValueError("trace must be a profiling.Trace with events (from profiling.capture)")
    runs = list(dict.fromkeys(e.run for e in trace.events))
    if not -len(runs) <= run < len(runs):
        raise ValueError(f"run={run!r} is out of range; the trace holds {len(runs)} runs")
    events = [e for e in trace.events if e.run == runs[run]]
    t0 = min(e.start for e in events)
    names = list(dict.fromkeys(e.name for e in events))
    fig, ax = figure((8.0, 0.4 * len({e.device for e in events}) + 2.0))
    colors = {name: f"C{i % 10}" for i, name in enumerate(names)}
    for e in events:
        ax.barh(e.device, e.duration * 1e3, left=(e.start - t0) * 1e3, color=colors[e.name], height=0.7)
    ax.set_xlabel("time since the run's first op (ms)")
    ax.set_ylabel("device")
    ax.set_title(f"Trace viewer, one run: {len(names)} XLA ops on {len({e.device for e in events})} device(s)")
    ax.invert_yaxis()
    handles = [Patch(color=colors[name], label=name) for name in names]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="HLO op")
    return fig
