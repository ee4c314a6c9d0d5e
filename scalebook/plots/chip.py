"""Concept diagrams of TPU hardware, drawn from a `Chip` or a `TpuMesh` so that they follow their numbers:
slices cut from a pod, a pod built of cubes, the elementwise pipeline HBM → VMEM → VPU and the MXU's tile pipeline,
a pod's hop distances; and, served here from `tpu_diagrams`, one chip and its host: the chip's TensorCores, its
memory hierarchy, a host's tray and hosts joined by DCN."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..hardware.sm import PIPELINE_STAGES, pipeline_stages
from ..hardware.topology import TpuMesh
from ..units import checks, is_a, sequence_of
from .base import figure
from .diagram import box, canvas, panels
from .sharding import PALETTE
from .tpu_diagrams import chip_diagram, hosts, memory_hierarchy, tray

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["chip_diagram", "memory_hierarchy", "tray", "hosts", "slices",
           "pod_cubes", "elementwise_pipeline", "mxu_pipeline", "banner"]

Subslice = tuple[Sequence[int], Sequence[int]]


def _check_subslices(mesh: TpuMesh, subslices: Sequence[Subslice]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    out = []
    dims = list(mesh.axes.values())
    for k, (origin, shape) in enumerate(subslices):
        origin, shape = tuple(origin), tuple(shape)
        if len(origin) != len(dims) or len(shape) != len(dims):
            raise ValueError(f"subslices[{k}] must give an origin and a shape with {len(dims)} entries")
        if any(o < 0 or s < 1 or o + s > n for o, s, n in zip(origin, shape, dims)):
            raise ValueError(f"subslices[{k}] = {origin} + {shape} does not fit in the "
                             f"{mesh.shape_str(mesh.axes)} mesh")
        out.append((origin, shape))
    return out


def _wraps(mesh: TpuMesh, shape: Sequence[int]) -> str:
    sub = TpuMesh(mesh.chip, *shape)
    axes = "".join(a for a, w in sub.wrap.items() if w)
    return f"wraps on {axes}" if axes else "no wraparound"


@checks(mesh=is_a(TpuMesh), subslices=is_a(list, tuple))
def slices(mesh: TpuMesh, subslices: Sequence[Subslice], title: str | None = None) -> Figure:
    """Draw a pod (2-D grid, or 3-D cube in an oblique view) with sub-slices cut out of it, each coloured and
    labelled with its shape and whether it has wraparound (by the chip family's rules, `TpuMesh`)."""
    if not isinstance(mesh, TpuMesh):
        raise ValueError(f"mesh must be a TpuMesh, got {type(mesh).__name__}")
    subs = _check_subslices(mesh, subslices)
    dims = list(mesh.axes.values()) + [1] * (3 - len(mesh.axes))
    X, Y, Z = dims
    owner: dict[tuple[int, int, int], int] = {}
    for k, (origin, shape) in enumerate(subs):
        o = list(origin) + [0] * (3 - len(origin))
        s = list(shape) + [1] * (3 - len(shape))
        for p in itertools.product(*(range(o[d], o[d] + s[d]) for d in range(3))):
            owner.setdefault(p, k)
    if Z > 8:
        raise ValueError(f"mesh {mesh.shape_str(mesh.axes)}: the drawing shows at most 8 Z-planes")
    legend = "\n".join(f"■ {k}: {mesh.shape_str(dict(zip(mesh.axes, shape)))} at {origin}, {math.prod(shape)} chips, "
                       f"{_wraps(mesh, shape)}" for k, (origin, shape) in enumerate(subs))
    head = title or f"{mesh.chip.name} {mesh.shape_str(mesh.axes)} ({_wraps(mesh, dims[:len(mesh.axes)])}): " \
                    f"{len(subs)} sub-slices cut from it"
    cell = 0.22 if max(X, Y) > 8 else 0.5
    fig, axs = panels(Z, min(Z, 2 if Z > 2 else Z), (max(2.4, cell * X + 0.8), max(2.4, cell * Y + 0.8)), X, Y,
                      head + "\n" + legend)  # two planes a row: the chip labels stay 8 pt in the column
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    for z, ax in enumerate(axs):
        cells = list(itertools.product(range(X), range(Y)))
        ax.add_collection(PatchCollection(
            [Rectangle((x + 0.08, y + 0.08), 0.84, 0.84) for x, y in cells], edgecolors="0.4", linewidths=0.5,
            facecolors=[PALETTE[owner[(x, y, z)]] if (x, y, z) in owner else "white" for x, y in cells]))
        for x, y in cells:
            k = owner.get((x, y, z))
            if k is not None and max(X, Y) <= 8:
                ax.text(x + 0.5, y + 0.5, str(k), ha="center", va="center", fontsize=8, color="white")
        if Z > 1:
            ax.set_title(f"Z = {z}", fontsize=8)
    return fig


@checks(cube="count")
def pod_cubes(mesh: TpuMesh, cube: int = 4, title: str | None = None) -> Figure:
    """Draw a 3-D slice as the cubes of `cube`³ chips it is built from (ICI inside each cube, one rack each) and
    the optical links joining facing cube faces, with the wraparound links that close each axis into a ring."""
    if not isinstance(mesh, TpuMesh) or len(mesh.axes) != 3:
        raise ValueError(f"mesh must be a 3-D TpuMesh, got {mesh!r}")
    X, Y, Z = mesh.axes.values()
    if X % cube or Y % cube or Z % cube:
        raise ValueError(f"mesh {mesh.shape_str(mesh.axes)} is not built of whole {cube}x{cube}x{cube} cubes")
    cx, cy, cz = X // cube, Y // cube, Z // cube
    if cx * cy * cz > 64:
        raise ValueError(f"mesh {mesh.shape_str(mesh.axes)} has {cx * cy * cz} cubes; draw at most 64")
    s, dx, dy = 1.0, 0.5, 0.4
    pitch, oz = (2.6, (1.7, 1.35))
    width = (cx - 1) * pitch + (cz - 1) * oz[0] + s + dx + 0.8
    height = (cy - 1) * pitch + (cz - 1) * oz[1] + s + dy + 1.4
    fig, ax = canvas(width, height, (min(9.0, 0.6 * width + 1.0), min(8.0, 0.6 * height + 1.0)),
                     title or f"{mesh.chip.name} {mesh.shape_str(mesh.axes)}: {cx * cy * cz} cubes of {cube}³ chips "
                              f"joined by optical links")
    centres = {}
    for k, j, i in itertools.product(reversed(range(cz)), range(cy), range(cx)):
        x0, y0 = 0.4 + i * pitch + k * oz[0], 0.8 + j * pitch + k * oz[1]
        centres[(i, j, k)] = (x0 + (s + dx) / 2, y0 + (s + dy) / 2)
        _cube(ax, x0, y0, s, dx, dy)
    for (i, j, k), (x, y) in centres.items():
        for nxt in ((i + 1, j, k), (i, j + 1, k), (i, j, k + 1)):
            if nxt in centres:
                x2, y2 = centres[nxt]
                ax.plot([x, x2], [y, y2], color="#ff7f0e", lw=1.6, ls="--", zorder=1)
    wraps = "".join(a for a, w in mesh.wrap.items() if w) or "none"
    ax.text(0.1, 0.1, f"each cube: {cube ** 3} chips wired by ICI (one rack)   orange dashed: optical links between "
                      f"cube faces   wraparound on {wraps}", fontsize=8)
    return fig


def _cube(ax, x: float, y: float, s: float, dx: float, dy: float) -> None:
    from matplotlib.patches import Polygon

    faces = [
        ([(x, y), (x + s, y), (x + s, y + s), (x, y + s)], "#9ecae1"),
        ([(x, y + s), (x + s, y + s), (x + s + dx, y + s + dy), (x + dx, y + s + dy)], "#c6dbef"),
        ([(x + s, y), (x + s + dx, y + dy), (x + s + dx, y + s + dy), (x + s, y + s)], "#6baed6"),
    ]
    for points, colour in faces:
        ax.add_patch(Polygon(points, closed=True, facecolor=colour, edgecolor="0.2", lw=0.7, zorder=2))


def _draw_pipeline(ax, n_chunks: int, step: int) -> None:
    stages = pipeline_stages(n_chunks, step)
    done = min(n_chunks, max(0, step - len(PIPELINE_STAGES) + 2))
    for k, (name, chunk) in enumerate(stages.items()):
        y = len(stages) - 1 - k
        box(ax, 0.05, y + 0.1, 2.95, 0.8, name, "white")
        if chunk is not None:
            box(ax, 3.2, y + 0.15, 1.7, 0.7, f"chunk {chunk}", PALETTE[chunk % len(PALETTE)], alpha=0.8)
    ax.text(2.5, -0.35, f"after step {step + 1}: {done} of {n_chunks} chunks of z in HBM", ha="center", fontsize=8)


@checks(n_chunks="count",
        steps=lambda name, value: value if value is None else sequence_of("count0", "step numbers")(name, value))
def elementwise_pipeline(n_chunks: int = 4, steps: Sequence[int] | None = None, title: str | None = None) -> Figure:
    """Draw z = x * y computed chunk by chunk: one panel per step, each stage of the copy–compute–copy pipeline
    showing the chunk it works on (`pipeline_stages`). The panels are the frames of an animation."""
    last = n_chunks + len(PIPELINE_STAGES) - 1
    steps = list(range(last)) if steps is None else list(steps)
    fig, axs = panels(len(steps), min(3, len(steps)), (2.45, 2.9), 5.0, len(PIPELINE_STAGES) + 0.2,
                      title or f"z = x * y in {n_chunks} chunks: the pipeline fills, runs full, drains\n"
                               f"({last} steps instead of {n_chunks * len(PIPELINE_STAGES)})")
    for ax, step in zip(axs, steps):
        ax.set_ylim(-0.6, len(PIPELINE_STAGES) + 0.1)
        _draw_pipeline(ax, n_chunks, step)
    return fig


@checks(n_tiles="count", B="count", size="count")
def mxu_pipeline(n_tiles: int = 3, B: int = 128, size: int = 128, title: str | None = None) -> Figure:
    """Draw a stream of `n_tiles` weight tiles through one MXU against time (cycles): each tile's weights load
    while the previous tile computes, B rows of activations flow per tile, and the fill and drain of the
    systolic array (size − 1 cycles each) are paid once, at the start and the end of the stream."""
    from matplotlib.patches import Rectangle

    fill = size - 1
    rows = ["load weights (RHS) tile", "stream activations (LHS) tile", "output tile leaves"]
    fig, ax = figure((9.0, 3.0))
    for t in range(n_tiles):
        spans = [(t * B - size, size), (t * B, B), (t * B + fill, B)]  # weights load while tile t-1 computes
        for r, (start, length) in enumerate(spans):
            ax.add_patch(Rectangle((start, len(rows) - 1 - r - 0.35), length, 0.7,
                                   facecolor=PALETTE[t % len(PALETTE)], alpha=0.75, edgecolor="0.3"))
            ax.text(start + length / 2, len(rows) - 1 - r, f"tile {t}", ha="center", va="center", fontsize=8)
    ax.axvspan(0, fill, color="0.85", zorder=0)
    ax.text(fill / 2, -0.75, "bubble: the array fills", ha="center", fontsize=8)
    end = fill + n_tiles * B
    ax.set_xlim(-size - 5, end + 5)
    ax.set_ylim(-1.0, len(rows) - 0.4)
    ax.set_yticks(range(len(rows)), rows[::-1], fontsize=8)
    ax.set_xlabel("time (MXU cycles)")
    ax.set_title(title or f"{n_tiles} tiles through a {size}×{size} MXU, {B} rows each: "
                          f"{n_tiles * B} busy cycles of {end + size}", fontsize=10)
    return fig


def banner(mesh: TpuMesh | None = None, title: str | None = None) -> Figure:
    """Draw a banner: every chip of a slice coloured by its ICI hop distance from the centre chip, a picture of how
    far a message must travel across one pod (default: a v5e 16x16)."""
    mesh = mesh if mesh is not None else TpuMesh("v5e", X=16, Y=16)
    if not isinstance(mesh, TpuMesh) or len(mesh.axes) != 2:
        raise ValueError(f"mesh must be a 2-D TpuMesh, got {mesh!r}")
    X, Y = mesh.axes["X"], mesh.axes["Y"]
    centre = (X // 2, Y // 2)
    hops = [[mesh.hops(centre, (x, y)) for x in range(X)] for y in range(Y)]
    fig, ax = figure((10.0, 10.0 * Y / X / 2.2 + 1.0))
    image = ax.imshow(hops, cmap="viridis_r", aspect=0.45, origin="lower")
    ax.set_axis_off()
    fig.colorbar(image, ax=ax, shrink=0.8, label="ICI hops from the centre chip")
    ax.set_title(title or f"{mesh.n_chips} {mesh.chip.name} chips ({mesh.shape_str(mesh.axes)}): no message travels "
                          f"more than {mesh.diameter} hops", fontsize=10)
    return fig
