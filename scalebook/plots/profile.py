"""Profiles drawn: one run of a captured trace as bars over time, one row per device (chapter 9).

Ops are coloured by what they spend their time on (`profiling.KINDS`): matmuls, collectives (also outlined in
black, so they stand out), elementwise work and data movement; white space in a row is time that device spent
idle, waiting for the host or for another device.
"""

from __future__ import annotations

from typing import Any

from ..kinds import has, positive_range
from ..units import check_int, checks
from .base import figure, legend_below

__all__ = ["timeline", "KIND_COLOURS"]

Figure = Any

KIND_COLOURS = {"matmul": "#1f77b4", "collective": "#d62728", "elementwise": "#2ca02c", "data movement": "#bdbdbd"}
# A while loop's or call's event spans the ops it runs: drawing it would paint over their idle gaps.
_CONTAINERS = "control flow"


@checks(trace=has("events", "table", what="a profiling Trace (profiling.capture)"),
        run=lambda n, v: check_int(n, v, low=-10**6), scope="?text",
        window=lambda n, v: None if v is None else positive_range(n, v))
def timeline(trace: Any, run: int = -1, scope: str | None = None, window: tuple[float, float] | None = None,
             title: str | None = None) -> Figure:
    """Return a matplotlib figure of one run of the trace (the last by default): one row of op bars per device.

    `scope` keeps only ops whose named scope starts with it (e.g. 'layer0/attention'); `window` = (start, end)
    in ms since the run's first op zooms in. Bars are coloured by op kind, collectives outlined; the legend
    gives each kind's share of the busy time shown.
    """
    from matplotlib.patches import Patch

    if not getattr(trace, "events", None):
        raise ValueError("trace must be a profiling.Trace with events (from profiling.capture)")
    runs = list(dict.fromkeys(e.run for e in trace.events))
    if not -len(runs) <= run < len(runs):
        raise ValueError(f"run={run!r} is out of range; the trace holds {len(runs)} runs")
    rows = {r["op"]: r for r in trace.table}
    events = [e for e in trace.events
              if e.run == runs[run] and rows.get(e.name, {}).get("kind") != _CONTAINERS]
    t0 = min(e.start for e in events)
    if scope is not None:
        events = [e for e in events if rows.get(e.name, {}).get("scope", "").startswith(scope)]
    if window is not None:
        lo, hi = window
        events = [e for e in events if lo <= (e.start - t0) * 1e3 <= hi]
    if not events:
        raise ValueError(f"no op of run {run} matches scope={scope!r} and window={window!r}")
    devices = sorted({e.device for e in events})
    fig, ax = figure((7.4, 0.35 * len(devices) + 2.6))
    busy = dict.fromkeys(KIND_COLOURS, 0.0)
    for e in events:
        kind = rows.get(e.name, {}).get("kind", "elementwise")
        busy[kind] += e.duration
        collective = kind == "collective"
        ax.barh(e.device, e.duration * 1e3, left=(e.start - t0) * 1e3, color=KIND_COLOURS[kind], height=0.7,
                edgecolor="black" if collective else "none", linewidth=0.6 if collective else 0)
    total = sum(busy.values()) or 1.0
    ax.set_xlabel("time since the run's first op (ms)")
    ax.set_ylabel("device")
    ax.set_yticks(devices)
    what = f"ops of {scope}" if scope else "XLA ops"
    ax.set_title(title or f"Trace of one run: {what} on {len(devices)} devices (white = idle)")
    ax.invert_yaxis()
    handles = [Patch(facecolor=c, edgecolor="black" if k == "collective" else c,
                     label=f"{k} ({busy[k] / total:.0%} of busy time)") for k, c in KIND_COLOURS.items() if busy[k]]
    legend_below(ax, ncol=2, handles=handles, labels=[h.get_label() for h in handles])  # the key, under the figure
    return fig
