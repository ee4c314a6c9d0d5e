"""Chapter 9's pictures of a compiled and profiled program: the compiler's stages, tiled layouts in memory,
one fusion as a graph, where a trace's time went, each op's measured time against its roofline, and the
compiler's memory budget. Each is drawn from package objects (`profiling.Trace`, HLO text, `hlo.padding`).
Matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..hlo import memory_order, padding, parse_hlo, parse_tiles
from ..kinds import has, mapping_of
from ..units import checks, fmt_bytes, fmt_time
from .base import figure, finish, legend_below
from .diagram import COLOURS, arrow, box, canvas
from .profile import KIND_COLOURS

__all__ = ["compile_stages", "tiling", "fusion_graph", "time_breakdown", "op_rooflines",
           "memory_budget"]

Figure = Any


def compile_stages() -> Figure:
    """Draw the road from a Python function to machine code, with the call that shows each stage and the
    profiler tools that read the last ones (trace viewer, graph viewer, memory profile and viewer)."""
    stages = [("Python function", "your code", COLOURS["host"]),
              ("jaxpr", "jax.make_jaxpr(f)(x)", COLOURS["core"]),
              ("StableHLO", "jax.jit(f).lower(x).as_text()", COLOURS["core"]),
              ("optimised HLO\npartitioned, fused, laid out", "….compile().as_text()", COLOURS["highlight"]),
              ("LLO / machine code", "not shown by JAX", COLOURS["scalar"])]
    fig, ax = canvas(16, 7.2, (10.0, 4.5), "From a jitted function to machine code, and what the profiler shows")
    for i, (name, how, colour) in enumerate(stages):
        x = 0.3 + i * 3.15
        box(ax, x, 4.2, 2.7, 1.6, name, colour=colour, fontsize=8)
        ax.text(x + 1.35, 6.0, how, ha="center", fontsize=8, family="monospace")  # above: the arrows run below
        if i:
            arrow(ax, (x - 0.45, 5.0), (x, 5.0))
    tools = [("trace viewer", "ops over time, per device"), ("graph viewer", "one fusion's HLO graph"),
             ("memory profile", "bytes in use over time"), ("memory viewer", "buffers at the peak")]
    for j, (tool, what) in enumerate(tools):
        x = 0.6 + j * 3.9
        box(ax, x, 0.8, 3.4, 1.5, f"{tool}\n{what}", colour=COLOURS["act"], fontsize=8)
        arrow(ax, (x + 1.7, 2.3), (0.3 + 3 * 3.15 + 1.35 + (j - 1.5) * 0.5, 4.2), colour="0.5", lw=0.8)
    ax.text(8, 0.3, "jax.profiler.trace(folder) → XProf / Perfetto; scalebook.lab.profiling.capture reads it back",
            ha="center", va="center", fontsize=8)
    return fig


@checks(dtype="dtype", shape="counts")
def tiling(shape: Sequence[int], tile: str, dtype: str = "f32") -> Figure:
    """Draw a 2-D array in its tiled layout: the padded grid with each slot's position in memory, one colour
    per tile, padding slots hatched, and the share of storage the padding wastes (`hlo.memory_order`, `hlo.padding`)."""
    from matplotlib.patches import Rectangle

    positions = memory_order(shape, tile)
    info = padding(shape, tile, dtype)
    a, b = parse_tiles(tile)[0]
    rows, cols = len(positions), len(positions[0])
    fig, ax = figure((0.55 * cols + 2.0, 0.55 * rows + 1.4))
    for i in range(rows):
        for j in range(cols):
            pad = i >= shape[0] or j >= shape[1]
            colour = f"C{((i // a) * (cols // b) + j // b) % 10}"
            ax.add_patch(Rectangle((j, rows - 1 - i), 1, 1, facecolor="white" if pad else colour,
                                   alpha=1.0 if pad else 0.35, edgecolor="0.3", hatch="///" if pad else "", lw=0.5))
            ax.text(j + 0.5, rows - 0.5 - i, str(positions[i][j]), ha="center", va="center", fontsize=8)
    for i in range(0, rows, a):
        for j in range(0, cols, b):
            ax.add_patch(Rectangle((j, rows - i - a), b, a, fill=False, edgecolor="black", lw=1.6))
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(cols) + 0.5, range(cols), fontsize=8)
    ax.set_yticks(np.arange(rows) + 0.5, range(rows)[::-1], fontsize=8)
    ax.set_xlabel("column (minor dimension)")
    ax.set_ylabel("row")
    ax.set_title(f"{dtype}[{shape[0]},{shape[1]}] with {tile}: numbers = memory order; "
                 f"{info['waste']:.0%} padding (hatched)", fontsize=9)
    return fig


@checks(max_ops="count")
def fusion_graph(hlo: str, name: str, max_ops: int = 24) -> Figure:
    """Draw the computation a fusion calls as the graph viewer does: its parameters at the top, each op a box
    (matmuls highlighted) placed one row below its deepest operand, arrows along the data flow."""
    computations = parse_hlo(hlo)
    op = next((o for o in computations["ENTRY"] if o.name == name), None)
    if op is None:
        raise ValueError(f"name={name!r} is not an instruction of the entry computation")
    called = next((c for c in computations if f"calls=%{c}" in op.line or f"calls={c}" in op.line), None)
    body = computations.get(called, [])[:max_ops] if called else [op]
    depth: dict[str, int] = {}
    for o in body:
        depth[o.name] = 1 + max((depth[x] for x in o.operands if x in depth), default=-1)
    levels = max(depth.values()) + 1
    width = max(sum(1 for d in depth.values() if d == lv) for lv in range(levels))
    fig, ax = canvas(3.2 * width + 0.4, 1.5 * levels + 0.4, (max(6.0, 2.0 * width), 1.0 * levels + 1.2),
                     f"{name}: the {len(body)} ops it fuses (one pass over memory)")
    place: dict[str, tuple[float, float]] = {}
    seen = dict.fromkeys(range(levels), 0)
    for o in body:
        lv = depth[o.name]
        x, y = 0.3 + 3.2 * seen[lv], 1.5 * (levels - 1 - lv) + 0.3
        seen[lv] += 1
        colour = (COLOURS["mxu"] if o.opcode in ("dot", "convolution") else
                  COLOURS["hbm"] if o.opcode == "parameter" else COLOURS["op"])
        shape = f"{o.dtype}[{','.join(map(str, o.shape))}]"
        box(ax, x, y, 2.8, 0.9, f"{o.opcode}\n{shape}", colour=colour, fontsize=8)
        place[o.name] = (x + 1.4, y)
        for src in o.operands:
            if src in place:
                sx, sy = place[src]
                arrow(ax, (sx, sy), (x + 1.4, y + 0.9), colour="0.4", lw=0.7)
    return fig


@checks(top="count", trace=has("events", "table", what="a profiling Trace (profiling.capture)"))
def time_breakdown(trace: Any, by: str = "scope", top: int = 12) -> Figure:
    """Plot where the trace's time went: measured time per call and device summed by `by` ('scope', 'kind'
    or 'opcode'), the `top` largest as horizontal bars."""
    totals = list(trace.breakdown(by).items())[:top]
    fig, ax = figure((7.5, 0.32 * len(totals) + 1.6))
    labels = [k for k, _ in totals]
    colours = [KIND_COLOURS.get(k, "#1f77b4") for k in labels]
    ax.barh(labels, [v * 1e3 for _, v in totals], color=colours)
    ax.invert_yaxis()
    whole = sum(trace.breakdown(by).values())
    for i, (_, v) in enumerate(totals):
        ax.text(v * 1e3, i, f" {v / whole:.0%}", va="center", fontsize=8)
    ax.set_xlabel("measured time per step and device (ms)")
    ax.set_ylabel(by)
    ax.set_title(f"Where the time went, by {by}: {fmt_time(whole)} of op time per step")
    return fig


@checks(top="count", trace=has("events", "table", what="a profiling Trace (profiling.capture)"))
def op_rooflines(trace: Any, top: int = 10, kind: str | None = None) -> Figure:
    """Plot the `top` most expensive ops of a trace (of one `kind` only, e.g. 'matmul', when given): measured
    time beside roofline time (log scale), labelled with the fraction of the roofline each op reached."""
    rows = [r for r in trace.table if kind is None or r["kind"] == kind][:top]
    if not rows:
        raise ValueError(f"the trace has no op of kind={kind!r}")
    fig, ax = figure((8.0, 0.38 * len(rows) + 1.8))
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [r["measured"] * 1e6 for r in rows], 0.4, label="measured (median)", color="#1f77b4")
    ax.barh(y + 0.2, [max(r["roofline"], 1e-9) * 1e6 for r in rows], 0.4, label="roofline", color="#ff7f0e")
    ax.set_yticks(y, [f"{r['op']} ({r['kind']})" for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    for i, r in enumerate(rows):
        if r["fraction"] is not None:
            ax.text(r["measured"] * 1e6, i - 0.2, f" {r['fraction']:.0%}", va="center", fontsize=8)
    finish(ax, "time per execution (µs, log scale)", "op",
           f"The most expensive {kind or ''} ops: measured against roofline".replace("  ", " "))
    legend_below(ax)  # where the bars fall depends on the machine's measurement: the key goes under the figure
    return fig


@checks(capacity="?size", parts=mapping_of("nonneg", "byte counts"))
def memory_budget(parts: Mapping[str, float], capacity: float | None = None,
                  title: str = "Memory per device, as the compiler plans it") -> Figure:
    """Plot a stacked bar of a device's memory by part (bytes), e.g. arguments, outputs, temporaries from
    `compiled.memory_analysis()`, against the device's `capacity` (bytes) when given."""
    if not parts or any(v < 0 for v in parts.values()):
        raise ValueError(f"parts must map names to non-negative bytes, got {dict(parts)!r}")
    fig, ax = figure((7.2, 2.6))
    left = 0.0
    for i, (name, nbytes) in enumerate(parts.items()):
        ax.barh(0, nbytes / 2**20, left=left / 2**20, color=f"C{i}", label=f"{name}: {fmt_bytes(nbytes)}")
        left += nbytes
    if capacity:
        ax.axvline(capacity / 2**20, color="black", ls="--", label=f"capacity {fmt_bytes(capacity)}")
    ax.set_yticks([])
    finish(ax, "memory (MiB)", "one device", f"{title}: {fmt_bytes(left)} in all")
    legend_below(ax, ncol=3)  # the stacked bar fills the axes: its key goes under the figure
    return fig
