"""Figures for the sharding chapter: which device holds which block of an array, a ring collective step by
step, and a collective's time against the array size (latency floor and bandwidth line).

The bookkeeping behind the pictures (`device_blocks`, `ring_schedule`) is the ground floor's `rings`, which the
chapter's explorers draw as HTML instead of matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..collectives import KINDS, collective
from ..hardware.topology import TpuMesh
from ..kinds import mapping_with
from ..rings import Coord, RingStep, axis_sizes, busiest_link_pieces, device_blocks, ring_schedule
from ..sharding import ArraySpec, bytes_per_device, local_shape, parse_spec
from ..units import checks, fmt_bytes, fmt_time, is_a, sequence_of
from .base import ROLES, SHARDS, SIZES, figure
from .roofline import human_ticks, legend_outside

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_MEASURED = sequence_of("sizes", "(bytes, seconds) pairs")

__all__ = ["sharding_grid", "ring_steps", "collective_vs_size", "PALETTE"]

PALETTE = SHARDS  # the house's shard colours, one per block (plots.base)
Measured = Sequence[tuple[float, float]]


@checks(dtype="dtype", mesh=is_a(TpuMesh, dict))
def sharding_grid(spec: ArraySpec | str, mesh: TpuMesh | Mapping[str, int], sizes: Mapping[str, int],
                  dtype: str = "bf16", title: str | None = None) -> Figure:
    """Draw a 2-D array's blocks labelled with the devices holding them, beside the mesh coloured by block.

    `mesh` is a `TpuMesh` or a mapping of at most two axes of size > 1 (rows = first axis, columns =
    second); `sizes` gives the array's dimensions, for the local shape and bytes per device in the title.
    """
    spec = spec if isinstance(spec, ArraySpec) else parse_spec(spec)
    axes = axis_sizes(mesh)
    if len(spec.dims) != 2:
        raise ValueError(f"spec={spec} must be a 2-D array such as 'A[I_X, J_Y]'")
    if sum(n > 1 for n in axes.values()) > 2 or len(axes) > 3:
        raise ValueError(f"mesh={mesh!r}: the grid draws meshes with at most two axes longer than 1")
    local = local_shape(spec, axes, sizes)
    owners = device_blocks(spec, axes)
    rows_n = max(b[0] for b in owners) + 1
    cols_n = max(b[1] for b in owners) + 1
    colour = {block: PALETTE[k % len(PALETTE)] for k, block in enumerate(owners)}
    fig, (left, right) = figure((10.0, 4.6), ncols=2)
    for (r, c), devices in owners.items():
        left.add_patch(_rect(c, rows_n - 1 - r, colour[(r, c)]))
        text = "\n".join(coord_text(d) for d in devices[:6]) + ("\n…" if len(devices) > 6 else "")
        left.text(c + 0.5, rows_n - 0.5 - r, text, ha="center", va="center", fontsize=_font(rows_n, cols_n, devices))
    dims = [d for d, _ in spec.dims]
    left.set_xlim(0, cols_n)
    left.set_ylim(0, rows_n)
    left.set_xticks([])
    left.set_yticks([])
    left.set_xlabel(f"{dims[1]} (columns): {sizes[dims[1]]} elements in {cols_n} block(s) of {local[dims[1]]}")
    left.set_ylabel(f"{dims[0]} (rows): {sizes[dims[0]]} elements in {rows_n} block(s) of {local[dims[0]]}")
    left.set_title(f"{spec}: devices ({', '.join(axes)}) holding each block", fontsize=10)
    names = [a for a in axes]
    big = [a for a in names if axes[a] > 1] or names[:1]
    row_axis, col_axis = (big + [None])[:2]
    R, C = axes[row_axis], axes[col_axis] if col_axis else 1
    block_of = {d: b for b, ds in owners.items() for d in ds}
    for coord, block in block_of.items():
        at = dict(zip(names, coord))
        x, y = (at[col_axis] if col_axis else 0), R - 1 - at[row_axis]
        right.add_patch(_rect(x, y, colour[block]))
        right.text(x + 0.5, y + 0.5, f"{coord_text(coord)}\nblock {block}", ha="center", va="center",
                   fontsize=SIZES["small"])
    right.set_xlim(0, C)
    right.set_ylim(0, R)
    right.set_xticks([i + 0.5 for i in range(C)], [str(i) for i in range(C)])
    right.set_yticks([i + 0.5 for i in range(R)], [str(R - 1 - i) for i in range(R)])
    right.set_xlabel(f"mesh axis {col_axis} (device index)" if col_axis else "(one column)")
    right.set_ylabel(f"mesh axis {row_axis} (device index)")
    right.set_title("devices, coloured by the block they hold", fontsize=10)
    for ax in (left, right):
        ax.set_aspect("equal")
    nbytes = bytes_per_device(spec, axes, sizes, dtype)
    copies = len(next(iter(owners.values())))
    shape = ", ".join(str(local[d]) for d in dims)
    fig.suptitle(title or f"{spec} on mesh {mesh_text(axes)}: local {dtype}[{shape}] = {fmt_bytes(nbytes)} "
                          f"per device, {copies} cop{'y' if copies == 1 else 'ies'} of each block")
    return fig


def _rect(x: float, y: float, colour: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x + 0.03, y + 0.03), 0.94, 0.94, facecolor=colour, alpha=0.55, edgecolor="k", lw=0.8)


def coord_text(coord: Coord) -> str:
    return "(" + ",".join(map(str, coord)) + ")"


def _font(rows: int, cols: int, devices: Sequence[Coord]) -> float:
    return max(SIZES["small"], min(9.0, 40 / max(rows, cols) / max(1.0, min(len(devices), 6) ** 0.5)))


def mesh_text(axes: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{a}: {n}" for a, n in axes.items()) + "}"


@checks(n="count", bidirectional="flag", wrap="flag", nbytes="?size")
def ring_steps(n: int = 8, kind: str = "all_gather", bidirectional: bool = True, wrap: bool = True,
               nbytes: float | None = None, title: str | None = None) -> Figure:
    """Draw a ring collective step by step: one panel per step, pieces on each device, pieces on each link.

    Columns are devices; a device's squares are the pieces it holds (colour = the shard, or for AllToAll
    the destination; pale = a partial sum still missing contributions). Under each gap, `k→` and `←k` count
    the pieces crossing that link in each direction during the step; `nbytes` (the whole array V) turns the
    counts into bytes in the titles.
    """
    states = ring_schedule(n, kind, bidirectional, wrap)
    ncols = min(len(states), 2)  # two panels a row: 8 devices' labels stay legible in the text column
    nrows = math.ceil(len(states) / ncols)
    fig, axes = figure((3.7 * ncols, 2.7 * nrows + 0.8), ncols=ncols, nrows=nrows)
    axes = list(getattr(axes, "flat", [axes]))
    slots = max(n, *(len(p) for s in states for p in s.held))
    for ax, state in zip(axes, states):
        _draw_ring_state(ax, state, n, slots, kind, wrap)
    for ax in axes[len(states):]:
        ax.set_axis_off()
    piece = fmt_bytes(nbytes * states[0].piece_fraction) if nbytes else f"1/{round(1 / states[0].piece_fraction)} of V"
    busiest = busiest_link_pieces(states)
    how = ("bidirectional" if bidirectional else "one-way") + (" ring" if wrap else " line (no wraparound)")
    fig.suptitle(title or f"{kind} over {n} devices on a {how}: {len(states) - 1} steps\none piece = {piece}; "
                          f"busiest link carries {busiest} pieces "
                          f"(= {busiest * states[0].piece_fraction:.3g} V) one way")
    return fig


def _draw_ring_state(ax, state: RingStep, n: int, slots: int, kind: str, wrap: bool) -> None:
    from matplotlib.patches import Rectangle

    for i, pieces in enumerate(state.held):
        ax.add_patch(Rectangle((i + 0.05, -0.02), 0.9, slots + 0.04, fill=False, edgecolor="#888", lw=0.6))
        for k, p in enumerate(pieces):
            y = p.chunk if kind != "all_to_all" else k
            ax.add_patch(Rectangle((i + 0.12, y + 0.06), 0.76, 0.88, facecolor=PALETTE[p.chunk % len(PALETTE)],
                                   alpha=0.2 + 0.75 * p.fill, edgecolor="none"))
            if n <= 8:
                ax.text(i + 0.5, y + 0.5, p.label, ha="center", va="center", fontsize=SIZES["small"])
    for i in range(n):
        j = (i + 1) % n
        if j == 0 and not wrap:
            continue
        right, left = state.links.get((i, j), 0), state.links.get((j, i), 0)
        x = i + 1 if j else n + 0.1
        label = "\n".join(t for t in (f"{right}→" if right else "", f"←{left}" if left else "") if t)
        if label:
            ax.text(x, -0.6, label, ha="center", va="top", fontsize=SIZES["text"], color=ROLES["comms"],
                    fontweight="bold")
    ax.set_xlim(-0.1, n + 0.5)
    ax.set_ylim(-2.2, slots + 0.2)
    ax.set_xticks([i + 0.5 for i in range(n)], [str(i) for i in range(n)])
    ax.set_yticks([])
    ax.set_xlabel("device")
    ax.set_title("start" if state.step == 0 else f"after step {state.step}", fontsize=SIZES["label"])
    for spine in ("left", "right", "top"):
        ax.spines[spine].set_visible(False)


@checks(sizes="?sizes",
        measured=lambda name, value: value if value is None else (mapping_with(_MEASURED, "measurements")(
            name, value) if isinstance(value, dict) else _MEASURED(name, value)))
def collective_vs_size(mesh: TpuMesh, axes: str | Sequence[str] | None = None, kind: str = "all_gather",
                       sizes: Sequence[float] | None = None,
                       measured: Measured | Mapping[str, Measured] | None = None, title: str | None = None) -> Figure:
    """Plot a collective's modelled time against the array bytes V, log-log: the latency floor (hops × 1 µs),
    the bandwidth line, and the model (their max). `measured` adds points (V in bytes, seconds), or several
    labelled series as {label: points}.
    """
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}; allowed: {list(KINDS)}")
    V = np.asarray(sizes if sizes is not None else np.geomspace(1e3, 1e10, 120), dtype=float)
    if V.size == 0 or V.min() <= 0:
        raise ValueError("sizes must be a non-empty sequence of positive byte counts")
    ests = [collective(kind, mesh, axes, v) for v in V]
    t = np.array([e.time for e in ests])
    bw = np.array([e.t_comms for e in ests])
    floor = ests[0].t_latency
    fig, ax = figure((9.5, 4.5))
    ax.loglog(V, t, lw=2.5, color="k", label="model: max(latency, bandwidth)")
    ax.loglog(V, bw, ls=":", lw=1.5, color="tab:blue", label="bandwidth term")
    if floor:
        ax.axhline(floor, ls="--", lw=1.2, color="tab:red", label=f"latency floor: {fmt_time(floor)}")
        slope = bw[-1] / V[-1]
        knee = floor / slope
        ax.axvline(knee, ls="-.", lw=0.8, color="#777")
        ax.annotate(f"latency-bound below ≈ {fmt_bytes(knee)}", (knee, floor), textcoords="offset points",
                    xytext=(-8, 10), ha="right", fontsize=8)
    series = measured if isinstance(measured, Mapping) else {"measured": measured} if measured else {}
    for k, (label, pts) in enumerate(series.items()):
        if pts:
            xs, ys = zip(*pts)
            ax.loglog(xs, ys, "os^Dv"[k % 5], ms=6, alpha=0.8, color=PALETTE[(k + 1) % len(PALETTE)], label=label)
    ax.set_xlabel("array size V (bytes)")
    ax.set_ylabel("time (s)")
    names = "".join(mesh.resolve_axes(axes))
    ax.set_title(title or f"{kind}_{names} on {mesh.chip.name} {mesh.shape_str(mesh.axes)}: time vs array size")
    ax.grid(True, which="major", alpha=0.3)
    human_ticks(ax, fmt_time)
    human_ticks(ax, fmt_bytes, axis="x")
    legend_outside(ax)
    return fig

