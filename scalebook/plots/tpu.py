"""Figures for the TPU chapter: the bandwidth ladder of a chip, a slice's torus, a systolic-array frame, a
stage breakdown of a multi-step transfer."""

from __future__ import annotations

import itertools
import numbers
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .. import systolic as _systolic
from ..estimate import Estimate
from ..hardware.chips import VMEM_FACTOR, Chip, get_chip, ladder_rows
from ..hardware.topology import TpuMesh
from ..kinds import mapping_with
from ..units import check_kind, checks, fmt_rate, is_a, sequence_of
from .base import COLUMN_WIDTH, SIZES, figure, legend_below
from .roofline import human_ticks

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["bandwidth_ladder", "torus", "systolic", "systolic_strip", "stage_breakdown"]

@checks(vmem_factor="size", chips=is_a(list, tuple))
def bandwidth_ladder(chips: Sequence[Chip | str] = ("v5e", "v5p", "v6e"), vmem_factor: float = VMEM_FACTOR,
                     title: str | None = None) -> Figure:
    """Draw each chip's channel bandwidths (`hardware.chips.ladder_rows`) as grouped bars on a log scale (bytes/s),
    fastest channel first."""
    chips = [get_chip(c) for c in chips]
    if not chips:
        raise ValueError("chips must name at least one chip")
    rows = {c.name: ladder_rows(c, vmem_factor) for c in chips}
    channels = list(next(iter(rows.values())))
    fig, ax = figure((9.0, 4.8))
    width = 0.8 / len(chips)
    for k, (name, values) in enumerate(rows.items()):
        xs = [i + (k - (len(chips) - 1) / 2) * width for i, ch in enumerate(channels) if values[ch]]
        ys = [values[ch] for ch in channels if values[ch]]
        bars = ax.bar(xs, ys, width, label=name)
        for bar, y in zip(bars, ys):
            ax.annotate(fmt_rate(y, "B/s"), (bar.get_x() + bar.get_width() / 2, y), textcoords="offset points",
                        xytext=(0, 2), ha="center", fontsize=8, rotation=90)
    ax.set_yscale("log")
    ax.set_ylim(1e9, 1e15)
    human_ticks(ax, lambda v: fmt_rate(v, "B/s"))
    names = [textwrap.fill(ch, 13, break_long_words=False) for ch in channels]  # wrapped: the names stay apart
    ax.set_xticks(range(len(channels)), names, fontsize=8)
    ax.set_xlabel("channel")
    ax.set_ylabel("bandwidth per chip (bytes/s)")
    ax.set_title(title or "Bandwidth ladder: each step down is a slower channel")
    ax.grid(True, axis="y", which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _host_blocks(mesh: TpuMesh) -> tuple[int, int] | None:
    """Return the (X, Y) extent of one host's tray of chips within a plane, if it tiles the mesh."""
    shape = tuple(mesh.chip.host_shape or ())
    if len(shape) < 2:
        return None
    X, Y = mesh.axes["X"], mesh.axes["Y"]
    for hx, hy in ((shape[0], shape[1]), (shape[1], shape[0])):
        if X % hx == 0 and Y % hy == 0 and hx * hy * (shape[2] if len(shape) > 2 else 1) <= mesh.n_chips:
            return hx, hy
    return None


@checks(planes="count")
def torus(mesh: TpuMesh, planes: int = 4, title: str | None = None) -> Figure:
    """Draw a slice as a grid of chips with ICI links; each chip shows its hop count from chip (0, 0, ...).

    Solid grey lines are links to neighbours, red dashed stubs are wraparound links (each joins the edge
    chip to the opposite edge), dashed boxes are host trays. A 3-D slice is drawn one Z-plane per panel,
    at most `planes` of them; Z links run between panels and are not drawn.
    """
    from matplotlib.patches import Rectangle

    if not isinstance(mesh, TpuMesh):
        raise ValueError(f"mesh must be a TpuMesh, got {type(mesh).__name__}")
    X, Y = mesh.axes["X"], mesh.axes["Y"]
    nz = mesh.axes.get("Z", 1)
    shown = min(nz, planes)
    ncols = 2 if shown > 2 else shown  # two planes a row: the hop counts stay 8 pt in the text column
    size = min(max(2.6, 0.42 * max(X, Y) + 1.0), (COLUMN_WIDTH - 0.4) / ncols)  # inches
    fig, axs = figure((size * ncols, (size + 0.2) * -(-shown // ncols) + 0.4), ncols=ncols, nrows=-(-shown // ncols))
    axs = list(getattr(axs, "flat", [axs]))
    origin = (0,) * len(mesh.axes)
    hosts = _host_blocks(mesh)
    for z, ax in enumerate(axs):
        for x, y in itertools.product(range(X), range(Y)):
            if x + 1 < X:
                ax.plot([x, x + 1], [y, y], color="0.6", lw=1.5, zorder=1)
            if y + 1 < Y:
                ax.plot([x, x], [y, y + 1], color="0.6", lw=1.5, zorder=1)
            here = (x, y, z)[: len(mesh.axes)]
            ax.add_patch(Rectangle((x - 0.3, y - 0.3), 0.6, 0.6, facecolor="#dbe9f6", edgecolor="#1f77b4", zorder=2))
            ax.text(x, y, str(mesh.hops(origin, here)), ha="center", va="center", fontsize=8, zorder=3)
        stub = dict(color="#d62728", ls="--", lw=1.2, zorder=1)
        if mesh.wrap["X"]:
            for y in range(Y):
                ax.plot([-0.75, 0], [y, y], **stub)
                ax.plot([X - 1, X - 0.25], [y, y], **stub)
        if mesh.wrap["Y"]:
            for x in range(X):
                ax.plot([x, x], [-0.75, 0], **stub)
                ax.plot([x, x], [Y - 1, Y - 0.25], **stub)
        if hosts:
            hx, hy = hosts
            for x0, y0 in itertools.product(range(0, X, hx), range(0, Y, hy)):
                ax.add_patch(Rectangle((x0 - 0.45, y0 - 0.45), hx - 0.1, hy - 0.1, fill=False, ls=":",
                                       edgecolor="#2ca02c", lw=1.5, zorder=0))
        ax.set_xlim(-0.9, X - 0.1)
        ax.set_ylim(Y - 0.1, -0.9)
        ax.set_aspect("equal")
        ax.set_xticks(range(X))
        ax.set_yticks(range(Y))
        ax.tick_params(labelsize=SIZES["small"])
        ax.set_xlabel("X (chip index)")
        ax.set_ylabel("Y (chip index)")
        if nz > 1:
            ax.set_title(f"Z = {z}" + (f" (Z wraps; {nz} planes)" if mesh.wrap.get("Z") else f" of {nz}"), fontsize=9)
    wraps = "".join(a for a, w in mesh.wrap.items() if w)
    wraps = f"{wraps} (red dashed stubs)" if wraps else "none"
    tray = f"\ndotted boxes: host trays ({mesh.hosts} hosts)" if hosts else ""
    fig.suptitle(title or f"{mesh.chip.name} {mesh.shape_str(mesh.axes)}: ICI hops from chip {origin}\n"
                 f"wraparound on {wraps}, diameter {mesh.diameter}{tray}", fontsize=9)
    return fig


SYSTOLIC_COLOURS = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d")


def _systolic_run(B: int, D: int, F: int) -> tuple[_systolic.Grid, _systolic.Grid, _systolic.Simulation]:
    W, X = _systolic.example(B, D, F)
    return W, X, _systolic.simulate(W, X)


def _draw_systolic(ax, W: _systolic.Grid, X: _systolic.Grid, run: _systolic.Simulation, step: int,
                   fontsize: float = SIZES["small"]) -> None:
    """Draw cycle `step` of a systolic run on `ax`: PEs with weights and partial sums, queued X, finished Y."""
    from matplotlib.patches import Rectangle

    B, D = X.shape
    F = W.shape[1]
    frame = run.frames[step]
    colors = SYSTOLIC_COLOURS
    for i, j in itertools.product(range(D), range(F)):
        b = frame.row[i, j]
        face = colors[b % len(colors)] if b >= 0 else "white"
        ax.add_patch(Rectangle((j, i), 0.92, 0.92, facecolor=face, edgecolor="0.3"))
        ax.text(j + 0.06, i + 0.2, f"w={W[i, j]:g}", fontsize=fontsize, color="0.35")
        if b >= 0:
            ax.text(j + 0.46, i + 0.55, f"x{b}={X[b, i]:g}\nΣ={frame.psum[i, j]:g}", fontsize=fontsize,
                    ha="center", va="center")
    for i in range(D):  # activations still to enter row i, skewed: X[b, i] enters at cycle b + i
        for b in range(B):
            wait = b + i - step
            if wait > 0:
                ax.text(-0.5 - 0.7 * (wait - 1), i + 0.46, f"{X[b, i]:g}", ha="center", va="center",
                        fontsize=fontsize, bbox=dict(boxstyle="round", fc=colors[b % len(colors)], lw=0))
    ax.text(-0.3, -0.1, "X waits, skewed →", ha="right", fontsize=fontsize, color="0.35")
    ax.text(-0.3, D + 0.35, "Y out ↓", ha="right", fontsize=fontsize, color="0.35")
    for f in run.frames[: step + 1]:
        for b, j in f.done:
            ax.text(j + 0.46, D + 0.35 + 0.4 * b, f"y[{b},{j}]={run.product[b, j]:g}", ha="center",
                    fontsize=fontsize)
    ax.set_xlim(-(0.9 + 0.7 * max(B + D - 3, 0)), F + 0.1)
    ax.set_ylim(D + 0.6 + 0.4 * B, -0.3)
    ax.set_aspect("equal")
    ax.set_xticks([j + 0.46 for j in range(F)], [str(j) for j in range(F)])
    ax.set_yticks([i + 0.46 for i in range(D)], [str(i) for i in range(D)])


def _systolic_step(run: _systolic.Simulation, step: int, B: int, D: int, F: int) -> None:
    if not isinstance(step, numbers.Integral) or not 0 <= step < run.cycles:
        raise ValueError(f"step={step!r} must be in [0, {run.cycles}) for B={B}, D={D}, F={F}")


@checks(step="count0", B="count", D="count", F="count")
def systolic(step: int, B: int = 3, D: int = 4, F: int = 4, title: str | None = None) -> Figure:
    """Draw cycle `step` of X[B, D] @ W[D, F] on a D x F weight-stationary systolic array.

    Each processing element shows its weight (top-left); a busy one is coloured by the row b of X passing
    through it and shows the partial sum it sends down. Activations still waiting are queued, skewed, on the
    left; finished outputs Y[b, j] are listed under their column.
    """
    W, X, run = _systolic_run(B, D, F)
    _systolic_step(run, step, B, D, F)
    left, bottom = 0.9 + 0.7 * max(B + D - 3, 0), D + 0.6 + 0.4 * B
    fig, ax = figure((0.8 * (left + F) + 1.2, 0.8 * bottom + 1.2))
    _draw_systolic(ax, W, X, run, step)
    ax.set_xlabel("PE column j (output feature index)")
    ax.set_ylabel("PE row i (contraction index)")
    ax.set_title(title or f"Systolic array, cycle {step + 1} of {run.cycles}: {run.frames[step].busy} of {D * F} PEs "
                          f"busy", fontsize=10)
    return fig


@checks(B="count", D="count", F="count",
        steps=lambda name, value: value if value is None else sequence_of("count0", "step numbers")(name, value))
def systolic_strip(B: int = 2, D: int = 2, F: int = 2, steps: Sequence[int] | None = None,
                   title: str | None = None) -> Figure:
    """Draw X[B, D] @ W[D, F] on a systolic array cycle by cycle: one panel per cycle in `steps` (default: every
    cycle), the frames of an animation of the weight-stationary data flow."""
    W, X, run = _systolic_run(B, D, F)
    steps = list(range(run.cycles)) if steps is None else list(steps)
    if not steps:
        raise ValueError("steps must name at least one cycle")
    for step in steps:
        _systolic_step(run, step, B, D, F)
    ncols = min(2, len(steps))  # two cycles a row: the PE values stay 8 pt once shown
    nrows = -(-len(steps) // ncols)
    left, bottom = 0.9 + 0.7 * max(B + D - 3, 0), D + 0.6 + 0.4 * B
    fig, axs = figure((ncols * (0.75 * (left + F) + 0.6), nrows * (0.75 * bottom + 0.7) + 0.5), ncols=ncols,
                      nrows=nrows)
    axs = list(getattr(axs, "flat", [axs]))
    for ax, step in zip(axs, steps):
        _draw_systolic(ax, W, X, run, step, fontsize=8)
        ax.set_title(f"cycle {step + 1}: {run.frames[step].busy} of {D * F} PEs busy", fontsize=8)
        ax.tick_params(labelsize=SIZES["small"])
    for ax in axs[len(steps):]:
        ax.set_visible(False)
    fig.suptitle(title or f"X[{B},{D}] @ W[{D},{F}] on a {D}×{F} systolic array: weights stay,\nactivations flow "
                          f"right, partial sums flow down ({run.cycles} cycles = B + D + F − 2)", fontsize=10)
    return fig


@checks(stages=mapping_with(lambda name, v: v if isinstance(v, Estimate) else check_kind(name, v, "nonneg"),
                            "seconds or Estimates"))
def stage_breakdown(stages: Mapping[str, float | Estimate], title: str | None = None) -> Figure:
    """Draw the time of each stage of a job as horizontal bars (ms, log scale), with the pipelined lower
    bound (the slowest stage) and the serial upper bound (their sum) marked. Values are seconds or Estimates."""
    if not stages:
        raise ValueError("stages must map at least one stage name to a time in seconds")
    times = {k: (v.time if isinstance(v, Estimate) else float(v)) for k, v in stages.items()}
    fig, ax = figure((8.0, 0.5 * len(times) + 2.0))
    names = list(times)[::-1]
    ms = [times[n] * 1e3 for n in names]
    ax.barh(names, ms, color="#1f77b4")
    for y, v in enumerate(ms):
        ax.annotate(f"{v:.3g} ms", (v, y), textcoords="offset points", xytext=(4, -3), fontsize=8)
    ax.axvline(max(ms), color="#2ca02c", ls="--", label=f"slowest stage (overlapped): {max(ms):.3g} ms")
    ax.axvline(sum(ms), color="#d62728", ls=":", label=f"sum (no overlap): {sum(ms):.3g} ms")
    ax.set_xscale("log")
    ax.set_xlim(min(ms) / 2, sum(ms) * 4)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("stage")
    ax.set_title(title or "Where the time goes, stage by stage")
    legend_below(ax)
    return fig
