"""Explorers for the TPU chapter: a slice's torus, a point-to-point send over ICI, a systolic array stepping.

Every picture here is hand-written SVG (a redraw takes well under a millisecond), never matplotlib.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .. import systolic as _systolic
from ..estimate import Estimate
from ..hardware.chips import chip_names, get_chip
from ..hardware.topology import TpuMesh
from ..kinds import names_in
from ..roofline import estimate, matmul
from ..svg import svg_open
from ..tables import Table
from ..units import checks, fmt_bytes, fmt_rate, fmt_time, is_a
from .core import Explorer, Log, explore

__all__ = ["SLICE_UNFIT", "Picture", "mesh_svg", "systolic_svg", "torus_explorer", "transfer_explorer",
           "systolic_explorer", "offload_explorer"]

_ROWS = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d")
Coord = tuple[int, ...]
# What `TpuMesh` says of a slice the explorers' mesh menus offer but a chip family cannot make (a 3-D slice of a 2-D
# family, one larger than the pod): such a choice answers "does not fit" (`explore(unfit=...)`).
SLICE_UNFIT = ("slices are", "slice does not fit a")


@dataclass(frozen=True)
class Picture:
    """An SVG drawing returned by an explorer; notebooks and explorers show it through its HTML repr."""

    svg: str

    def _repr_html_(self) -> str:
        return self.svg


def _text(x: float, y: float, s: str, size: int = 10, color: str = "#000", anchor: str = "middle") -> str:
    return (f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' fill='{color}' text-anchor='{anchor}'>"
            f"{html.escape(s)}</text>")


@checks(cell="count", max_side="count", mesh=is_a(TpuMesh), marks=is_a(dict, type(None)),
        route=is_a(list, tuple))
def mesh_svg(mesh: TpuMesh, marks: Mapping[Coord, str] | None = None, route: Sequence[Coord] = (),
             cell: int = 30, max_side: int = 420) -> str:
    """Return an SVG of the Z = 0 plane of `mesh`: chips with hop counts from chip 0, links, wraparound
    stubs (red, dashed), host trays (green, dotted), chips in `marks` filled with their colour and a
    `route` (a list of chip coordinates) drawn in orange."""
    X, Y = mesh.axes["X"], mesh.axes["Y"]
    for i, (x, y, *_rest) in enumerate(route):
        if not (0 <= x < X and 0 <= y < Y):
            raise ValueError(f"route[{i}]={(x, y)!r} is not a chip of the {X}x{Y} mesh")
    cell = max(14, min(cell, max_side // max(X, Y)))
    pad = 30
    origin = (0,) * len(mesh.axes)

    def at(x: int, y: int) -> tuple[float, float]:
        return pad + x * cell + cell / 2, pad + y * cell + cell / 2

    out = [svg_open(2 * pad + X * cell, 2 * pad + Y * cell, "font-family='sans-serif'")]
    for x in range(X):
        for y in range(Y):
            cx, cy = at(x, y)
            if x + 1 < X:
                out.append(f"<line x1='{cx}' y1='{cy}' x2='{cx + cell}' y2='{cy}' stroke='#999'/>")
            if y + 1 < Y:
                out.append(f"<line x1='{cx}' y1='{cy}' x2='{cx}' y2='{cy + cell}' stroke='#999'/>")
    stub = "stroke='#d62728' stroke-dasharray='3 2'"
    if mesh.wrap["X"]:
        for y in range(Y):
            (x0, cy), (x1, _) = at(0, y), at(X - 1, y)
            out.append(f"<line x1='{x0 - cell * 0.8}' y1='{cy}' x2='{x0}' y2='{cy}' {stub}/>"
                       f"<line x1='{x1}' y1='{cy}' x2='{x1 + cell * 0.8}' y2='{cy}' {stub}/>")
    if mesh.wrap["Y"]:
        for x in range(X):
            (cx, y0), (_, y1) = at(x, 0), at(x, Y - 1)
            out.append(f"<line x1='{cx}' y1='{y0 - cell * 0.8}' x2='{cx}' y2='{y0}' {stub}/>"
                       f"<line x1='{cx}' y1='{y1}' x2='{cx}' y2='{y1 + cell * 0.8}' {stub}/>")
    if len(route) > 1:
        pts = " ".join("{:.1f},{:.1f}".format(*at(c[0], c[1])) for c in route)
        out.append(f"<polyline points='{pts}' fill='none' stroke='#ff7f0e' stroke-width='3'/>")
    host = tuple(mesh.chip.host_shape or ())
    if len(host) >= 2 and X % host[0] == 0 and Y % host[1] == 0:
        for hx in range(0, X, host[0]):
            for hy in range(0, Y, host[1]):
                out.append(f"<rect x='{pad + hx * cell + 2}' y='{pad + hy * cell + 2}' width='{host[0] * cell - 4}' "
                           f"height='{host[1] * cell - 4}' fill='none' stroke='#2ca02c' stroke-dasharray='2 2'/>")
    marks = dict(marks or {})
    s = cell * 0.62
    for x in range(X):
        for y in range(Y):
            cx, cy = at(x, y)
            here = (x, y, 0)[: len(mesh.axes)]
            fill = marks.get(here, "#dbe9f6")
            out.append(f"<rect x='{cx - s / 2:.1f}' y='{cy - s / 2:.1f}' width='{s:.1f}' height='{s:.1f}' "
                       f"fill='{fill}' stroke='#1f77b4'/>")
            out.append(_text(cx, cy + 3.5, str(mesh.hops(origin, here)), size=max(7, min(11, cell // 3))))
    out.append(_text(pad, 16, f"{mesh.chip.name} {mesh.shape_str(mesh.axes)}" + (", plane Z = 0" if "Z" in mesh.axes
                                                                                    else ""), 11, anchor="start"))
    out.append("</svg>")
    return "".join(out)


def _mesh(chip: str, X: int, Y: int, Z: int = 1) -> TpuMesh:
    """A mesh with Z only where the family is 3-D (a Z > 1 on a 2-D family raises TpuMesh's error)."""
    three_d = len(get_chip(chip).max_slice or ()) == 3
    return TpuMesh(chip, X=int(X), Y=int(Y), Z=int(Z) if three_d or Z > 1 else None)


def _torus_view(chip: str, X: int, Y: int, Z: int) -> tuple[Table, Picture]:
    mesh = _mesh(chip, X, Y, Z)
    rows = [{"axis": a, "chips": n, "wraparound": "yes" if mesh.wrap[a] else "no",
             "hops to farthest": mesh.ring_hops(a)} for a, n in mesh.axes.items()]
    rows.append({"axis": "whole slice", "chips": mesh.n_chips, "wraparound": "—", "hops to farthest": mesh.diameter})
    title = (f"{mesh.chip.name} {mesh.shape_str(mesh.axes)}: {mesh.hosts} hosts, {mesh.cores} TensorCores, "
             f"{fmt_rate(mesh.total_flops())} in bf16, {fmt_bytes(mesh.total_hbm)} HBM")
    return Table(rows, title=title), Picture(mesh_svg(mesh))


@checks(X="count", Y="count", Z="count", chips=names_in(chip_names))
def torus_explorer(chip: str = "v5e", X: int = 4, Y: int = 4, Z: int = 1,
                   chips: Sequence[str] = ("v5e", "v6e", "v5p", "v4p", "v3")) -> Explorer:
    """Return an explorer of a TPU slice: per-axis wraparound and hops, diameter, hosts, and its grid."""
    names = [chip, *[c for c in chips if c != chip]]
    return explore(_torus_view, title="A TPU slice: wraparound, hops and hosts", unfit=SLICE_UNFIT, chip=names,
                   X=(1, 16, 1, X), Y=(1, 20, 1, Y), Z=(1, 28, 1, Z))


def _route(src: Coord, dst: Coord, mesh: TpuMesh) -> list[Coord]:
    """Chips on a shortest path moving along X first, then Y (the direction the torus makes shorter)."""
    path, here = [tuple(src)], list(src)
    for k, (name, n) in enumerate(list(mesh.axes.items())[:2]):
        d = dst[k] - here[k]
        step = 1 if d > 0 else -1
        if mesh.wrap[name] and abs(d) > n / 2:
            step = -step
        while here[k] != dst[k]:
            here[k] = (here[k] + step) % n
            path.append(tuple(here))
    return path


def _transfer_view(chip: str, X: int, Y: int, to_x: int, to_y: int, nbytes: float) -> tuple[Estimate, Picture]:
    mesh = _mesh(chip, X, Y)
    if len(mesh.axes) != 2:
        raise ValueError(f"chip={chip!r}: this explorer draws 2-D slices (v5e, v6e); use TpuMesh for 3-D ones")
    src, dst = (0, 0), (min(int(to_x), X - 1), min(int(to_y), Y - 1))
    est = mesh.transfer_time(nbytes, src, dst)
    picture = mesh_svg(mesh, marks={src: "#98df8a", dst: "#ff9896"}, route=_route(src, dst, mesh))
    return est, Picture(picture)


@checks(X="count", Y="count", to_x="count0", to_y="count0", nbytes="size")
def transfer_explorer(chip: str = "v5e", X: int = 4, Y: int = 4, to_x: int = 3, to_y: int = 3,
                      nbytes: float = 2 * 8 * 128 * 8192) -> Explorer:
    """Return an explorer of one send from chip (0, 0) to (to_x, to_y) over ICI (opens on ch. 2, Q5).

    Time = hops x 1 µs + bytes / (links used x one-way link bandwidth); a destination outside the slice is
    moved to its edge.
    """
    chips = [chip, *[c for c in ("v5e", "v6e") if c != chip]]
    return explore(_transfer_view, title="Point-to-point send over ICI", chip=chips,
                   X=(1, 16, 1, X), Y=(1, 16, 1, Y), to_x=(0, 15, 1, to_x), to_y=(0, 15, 1, to_y),
                   nbytes=Log(1e3, 1e11, nbytes))


def _offload_view(chip: str, X: int, Y: int, N: float, B: int) -> Table:
    mesh = _mesh(chip, X, Y)
    c, n, A = mesh.chip, mesh.n_chips, round(N) ** 2  # A: bytes of the int8[N, N] matrix
    links = sum(2 if mesh.wrap[a] else 1 for a, size in mesh.axes.items() if size > 1)  # ICI links into chip 0
    mm = matmul(B, round(N), round(N), c, weight_dtype="int8", act_dtype="bf16")
    stages = {
        f"PCIe: each of {n} chips loads 1/{n} from its host": estimate(0, A / n, c, bandwidth=c.pcie_bandwidth).time,
        f"ICI: {n - 1} shards into chip 0 over {links} links": (
            estimate(0, A * (n - 1) / n, c, bandwidth=links * c.ici_bandwidth).time if links else 0.0),
        "HBM → MXU on chip 0": mm.t_comms,
        f"MXU: bf16[{B}, N] @ int8[N, N]": mm.t_math,
    }
    rows = [{"stage": k, "time": v} for k, v in stages.items()]
    rows += [{"stage": "total if the stages overlap (slowest)", "time": max(stages.values())},
             {"stage": "total if they run one after another", "time": sum(stages.values())}]
    return Table(rows, formats={"time": fmt_time}, title=f"int8[{round(N)}, {round(N)}] ({fmt_bytes(A)}) from host "
                 f"DRAM to chip 0 of a {mesh.chip.name} {mesh.shape_str(mesh.axes)}, then multiplied")


@checks(X="count", Y="count", N="size", B="count")
def offload_explorer(chip: str = "v5e", X: int = 4, Y: int = 4, N: float = 128 * 1024, B: int = 8) -> Explorer:
    """Return an explorer of ch. 2, Q6: a host-resident int8[N, N] matrix gathered to one chip and multiplied."""
    return explore(_offload_view, title="Host DRAM → PCIe → ICI → MXU, stage by stage",
                   chip=[chip, *[c for c in ("v5e", "v6e") if c != chip]], X=(1, 16, 1, X), Y=(1, 16, 1, Y),
                   N=Log(1024, 262144, N), B=(1, 512, 1, B))


@lru_cache(maxsize=64)
def _run(B: int, D: int, F: int) -> _systolic.Simulation:
    return _systolic.simulate(*_systolic.example(B, D, F))


@checks(step="count0", cell="count", run=is_a(_systolic.Simulation))
def systolic_svg(run: _systolic.Simulation, step: int, cell: int = 56) -> str:
    """Return an SVG of cycle `step` of a simulated run: weights, the activation in each busy PE coloured by
    its row of X, the partial sums passed down, waiting activations on the left and finished outputs below."""
    (B, D), F = run.X.shape, run.W.shape[1]
    frame = run.frames[step]
    left = int(cell * 0.55 * max(B + D - 2, 1)) + 20
    width, height = left + F * cell + 10, 40 + D * cell + 16 * B + 20
    out = [svg_open(width, height, "font-family='sans-serif'"),
           _text(width / 2, 16, f"cycle {step + 1} of {run.cycles}: {frame.busy} of {D * F} PEs busy", 12)]
    for i in range(D):
        for j in range(F):
            x, y, b = left + j * cell, 30 + i * cell, frame.row[i, j]
            fill = _ROWS[b % len(_ROWS)] if b >= 0 else "#fff"
            out.append(f"<rect x='{x}' y='{y}' width='{cell - 4}' height='{cell - 4}' fill='{fill}' stroke='#555'/>")
            out.append(_text(x + 4, y + 12, f"w={run.W[i, j]:g}", 9, "#555", "start"))
            if b >= 0:
                out.append(_text(x + cell / 2 - 2, y + 30, f"x{b}={run.X[b, i]:g}", 10))
                out.append(_text(x + cell / 2 - 2, y + 44, f"Σ={frame.psum[i, j]:g}", 10))
        for b in range(B):
            wait = b + i - step
            if wait > 0:
                cx = left - 14 - cell * 0.55 * (wait - 1)
                out.append(f"<circle cx='{cx:.1f}' cy='{30 + i * cell + cell / 2 - 2}' r='9' fill='{_ROWS[b % 8]}'/>")
                out.append(_text(cx, 30 + i * cell + cell / 2 + 2, f"{run.X[b, i]:g}", 9))
    for f in run.frames[: step + 1]:
        for b, j in f.done:
            out.append(_text(left + j * cell + cell / 2 - 2, 40 + D * cell + 14 * b,
                             f"y[{b},{j}]={run.product[b, j]:g}", 9))
    out.append("</svg>")
    return "".join(out)


def _systolic_view(step: int, B: int, D: int, F: int) -> tuple[Picture, Table]:
    run = _run(int(B), int(D), int(F))
    t = min(int(step), run.cycles - 1)
    busy = sum(f.busy for f in run.frames[: t + 1])
    rows = [{"quantity": "cycle shown", "value": f"{t + 1} of {run.cycles} (= B + D + F - 2)"},
            {"quantity": "PE-cycles busy so far", "value": f"{busy} of {D * F * (t + 1)}"},
            {"quantity": "utilisation of the whole multiply", "value": f"{run.utilisation:.0%} = B / (B + D + F - 2)"},
            {"quantity": "same shape on a 128x128 MXU", "value": f"{_systolic.utilisation(int(B), 128, 128):.1%}"}]
    return Picture(systolic_svg(run, t)), Table(rows)


@checks(step="count0", B="count", D="count", F="count")
def systolic_explorer(step: int = 3, B: int = 3, D: int = 4, F: int = 4) -> Explorer:
    """Return an explorer stepping through X[B, D] @ W[D, F] on a D x F weight-stationary systolic array."""
    return explore(_systolic_view, title="A systolic array, one cycle at a time", step=(0, 24, 1, step),
                   B=(1, 8, 1, B), D=(1, 8, 1, D), F=(1, 8, 1, F))
