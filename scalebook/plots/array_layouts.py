"""Arrays laid out on a mesh, element by element: a gallery of shardings of one small array (with its key) and
the sharded-matmul cases, each device showing which elements of A, B and C it holds and, over C, the collectives
that `sharded_matmul` chooses. The bookkeeping is `device_blocks`, the same as `sharding_grid`'s."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..hardware.topology import TpuMesh
from ..kinds import mapping_of
from ..rings import Coord, axis_sizes, device_blocks
from ..sharding import ArraySpec, parse_expr, parse_spec, sharded_matmul
from ..units import checks, fmt_time, is_a
from .base import COLUMN_WIDTH, OPERAND_MAPS, ROLES, SIZES, figure
from .sharding import PALETTE, coord_text, mesh_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["sharding_gallery", "matmul_cases"]


def _held_elements(spec: ArraySpec, axes: Mapping[str, int], n: int) -> dict[Coord, set[tuple[int, int]]]:
    """Return, for each device, the elements (row, column) of an n × n array it holds under a 2-D `spec`."""
    held: dict[Coord, set[tuple[int, int]]] = {}
    owners = device_blocks(spec, axes)
    blocks = [max(b[d] for b in owners) + 1 for d in range(2)]
    if any(n % k for k in blocks):
        raise ValueError(f"{spec} cuts a dimension into {blocks} blocks; n={n} must be a multiple of each")
    for r, c in itertools.product(range(n), range(n)):
        for device in owners[(r // (n // blocks[0]), c // (n // blocks[1]))]:
            held.setdefault(device, set()).add((r, c))
    return held


def _draw_devices(ax, spec: ArraySpec | None, axes: Mapping[str, int], n: int, numbers: bool = True,
                  operand: str | None = None) -> None:
    """Draw the mesh as a grid of devices (first axis down, second across), each showing the array elements it
    holds at their places in the array, coloured (and, with `numbers`, numbered) by element; `spec=None` draws the
    array alone. An `operand` ('A', 'B', 'C') colours its elements from that operand's own colour map, so the
    three arrays of a matmul never share colours. The squares go in as one collection: a figure of many panels
    stays cheap to draw."""
    from matplotlib import colormaps
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    names = list(axes)
    R, C = axes[names[0]], axes[names[1]] if len(names) > 1 else 1
    whole = {(0,) * len(names): set(itertools.product(range(n), range(n)))}
    held = _held_elements(spec, axes, n) if spec is not None else whole
    cell = 1.0 / (n + 1.5)
    squares, colours = [], []
    for coord, elements in held.items():
        row, col = (coord[0], coord[1] if len(coord) > 1 else 0) if spec is not None else (0, 0)
        ox, oy = col, (R if spec is not None else 1) - 1 - row
        ax.add_patch(Rectangle((ox + 0.04, oy + 0.04), 0.92, 0.92, fill=False, edgecolor="0.3", lw=0.8))
        if spec is not None:
            index = sum(coord[k] * math.prod(list(axes.values())[k + 1:]) for k in range(len(coord)))
            ax.text(ox + 0.5, oy + 0.97, f"device {index} {coord_text(coord)}", ha="center", va="top",
                    fontsize=SIZES["small"])
        for r, c in elements:
            squares.append(Rectangle((ox + 0.75 * cell + c * cell, oy + 0.08 + (n - 1 - r) * cell), cell * 0.95,
                                     cell * 0.95))
            k = r * n + c
            colours.append(colormaps[OPERAND_MAPS[operand]](0.3 + 0.6 * k / max(n * n - 1, 1)) if operand
                           else PALETTE[k % len(PALETTE)])
            if numbers and n <= 4:
                ax.text(ox + 0.75 * cell + (c + 0.47) * cell, oy + 0.08 + (n - 0.53 - r) * cell, str(r * n + c),
                        ha="center", va="center", fontsize=8)
    ax.add_collection(PatchCollection(squares, facecolors=colours, edgecolors="none", alpha=0.85))
    ax.set_xlim(0, C if spec is not None else 1)
    ax.set_ylim(0, R if spec is not None else 1)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)


@checks(n="count", key="flag", specs="names", mesh=is_a(TpuMesh, dict, type(None)))
def sharding_gallery(specs: Sequence[ArraySpec | str], mesh: TpuMesh | Mapping[str, int] | None = None, n: int = 4,
                     key: bool = False, title: str | None = None) -> Figure:
    """Draw an n × n array (elements numbered and coloured) under each sharding in `specs`: one panel per spec, the
    mesh's devices (first axis down, second across) each showing the elements it holds. `key` adds a first
    panel with the whole array, the legend the other panels are read against."""
    axes = axis_sizes(mesh if mesh is not None else {"X": 2, "Y": 2})
    if len(axes) != 2:
        raise ValueError(f"mesh={mesh!r} must have two axes (rows, columns of devices)")
    parsed = [s if isinstance(s, ArraySpec) else parse_spec(s) for s in specs]
    if not parsed and not key:
        raise ValueError("specs must name at least one sharding (or key=True)")
    for s in parsed:
        if len(s.dims) != 2:
            raise ValueError(f"spec={s} must be a 2-D array such as 'A[I_X, J_Y]'")
    items: list[ArraySpec | None] = ([None] if key else []) + parsed
    ncols = min(len(items), 3 if len(items) in (3, 5, 6, 9) else 4)
    nrows = -(-len(items) // ncols)
    R, C = axes.values()
    panel = min(1.35 * C + 0.4, (COLUMN_WIDTH - 0.3) / ncols)  # inches: the gallery fits the text column
    fig, axs = figure((ncols * panel, nrows * (panel * R / C + 0.5) + 0.5), ncols=ncols, nrows=nrows)
    axs = np.atleast_1d(axs).ravel()
    for ax, spec in zip(axs, items):
        _draw_devices(ax, spec, axes, n, numbers=len(items) <= 3 or spec is None)
        ax.set_title("the array: element k in colour k" if spec is None else str(spec), fontsize=SIZES["label"])
    for ax in axs[len(items):]:
        ax.set_visible(False)
    fig.suptitle(title or f"A {n}×{n} array on the mesh {mesh_text(axes)}:\nwhich elements each device holds")
    return fig


@checks(n="count", exprs="names", mesh=is_a(TpuMesh), sizes=mapping_of("count", "whole numbers"))
def matmul_cases(exprs: Sequence[str], mesh: TpuMesh, sizes: Mapping[str, int], n: int = 4,
                 title: str | None = None) -> Figure:
    """Draw sharded matmuls one row each: A, B and C on the mesh (each device showing the elements of an n × n
    picture of the array it holds) and, over C, the plan `sharded_matmul` chooses: its case and collectives."""
    if not exprs:
        raise ValueError("exprs must name at least one matmul such as 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]'")
    axes = axis_sizes(mesh)
    panel = min(1.1 * axes["Y"] + 0.8, (COLUMN_WIDTH - 0.3) / 3)  # inches: three panels fit the text column
    fig, axs = figure((3 * panel, len(exprs) * (panel * axes["X"] / axes["Y"] + 1.0) + 0.5), ncols=3,
                      nrows=len(exprs))
    axs = np.atleast_2d(axs)
    for row, expr in zip(axs, exprs):
        plan = sharded_matmul(expr, mesh, **sizes)
        steps = "\n".join(f"{s.kind}_{''.join(s.axes)} ({fmt_time(s.estimate.time)})" for s in plan.collectives)
        for ax, spec, role, operand in zip(row, parse_expr(expr), ("×", "=", ""), "ABC"):
            _draw_devices(ax, spec, axes, n, numbers=False, operand=operand)
            ax.set_title(f"{spec} {role}".strip(), fontsize=SIZES["label"], color=ROLES[operand])
        row[2].set_title(f"{plan.expr.split('->')[-1].strip()}, case {plan.case}:\n{steps or 'no communication'}",
                         fontsize=SIZES["text"], color=ROLES["C"])
    fig.suptitle(title or f"Sharded matmuls on {mesh.chip.name} {mesh.shape_str(mesh.axes)}: what each device holds,\n"
                          f"and the collectives the plan needs")
    return fig
