"""Explorers for the sharding chapter: a collective's cost, a sharded matmul's plan, a ring collective step by
step, how much of a collective a collective matmul hides, and which device holds which block of an array.

Every answer is an `Estimate`, a `ShardedMatmul`, an SVG `Chart` or a little hand-written HTML/SVG, so a redraw takes a
few milliseconds (never matplotlib).
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

from ..collectives import KINDS, collective
from ..estimate import Estimate
from ..hardware.topology import TpuMesh
from ..kinds import mapping_of
from ..overlap import CollectiveMatmul, collective_matmul
from ..plots.sharding import PALETTE
from ..rings import RING_KINDS, RingStep, device_blocks, ring_schedule
from ..sharding import ShardedMatmul, bytes_per_device, local_shape, parse_spec, sharded_matmul, total_bytes
from ..svg import Chart, svg_open
from ..tables import Table
from ..units import checks, dtype_bytes, fmt_bytes, fmt_time, geomspace, is_a
from .core import Explorer, Log, explore, opening_on
from .tpu import SLICE_UNFIT, Picture

__all__ = ["spec_options", "collective_chart", "collective_explorer", "matmul_explorer", "ring_html",
           "ring_explorer", "overlap_view", "grid_svg", "sharding_grid_explorer", "memory_explorer"]

TPU_CHIPS = ["v5e", "v4p", "v5p", "v6e", "tpu7x"]
_WRAP = {"auto": None, "wraparound": True, "no wraparound": False}


@checks(name="text", dims="names", axes="names")
def spec_options(name: str, dims: Sequence[str], axes: Sequence[str] = ("X", "Y")) -> list[str]:
    """Return every sharding of a 2-D array over mesh axes `axes` (each axis used at most once, in mesh order),
    e.g. 'A[I, J]', 'A[I_X, J]', ..., 'A[I_X, J_Y]', 'A[I_XY, J]'."""
    if len(dims) != 2:
        raise ValueError(f"dims={dims!r} must name two dimensions")
    out = []
    for owner in itertools.product((0, 1, 2), repeat=len(axes)):  # 0: unused, 1: first dim, 2: second dim
        parts = ["".join(a for a, o in zip(axes, owner) if o == k) for k in (1, 2)]
        out.append(f"{name}[{', '.join(f'{d}_{a}' if a else d for d, a in zip(dims, parts))}]")
    return sorted(out, key=lambda spec: (spec.count("_"), len(spec)))


def _pow2(x: float) -> int:
    return int(2 ** round(math.log2(max(x, 1))))


# --- collectives ---------------------------------------------------------------------------------------------


@checks(nbytes="size")
def collective_chart(mesh: TpuMesh, axes: str | None, kind: str, nbytes: float, also_sharded: str = "") -> Chart:
    """Return an SVG chart of `kind` over `axes` against the array size, with the point for `nbytes` marked."""
    sizes = geomspace(1e2, 1e11, 28)
    ests = [collective(kind, mesh, axes, v, also_sharded) for v in sizes]
    here = collective(kind, mesh, axes, nbytes, also_sharded)
    chart = Chart(title=f"{kind} on {mesh.chip.name} {mesh.shape_str(mesh.axes)}", xlabel="array size V (bytes)",
                  ylabel="time (s)", xlog=True, ylog=True, xlim=(1e2, 1e11))
    chart.line(sizes, [max(e.time, 1e-9) for e in ests], label="model: max(latency, bandwidth)", color="#000")
    chart.line(sizes, [max(e.t_comms, 1e-9) for e in ests], label="bandwidth term", color="#1f77b4", dash=True)
    if here.t_latency:
        chart.line([1e2, 1e11], [here.t_latency] * 2, label=f"latency floor {fmt_time(here.t_latency)}",
                   color="#d62728", dash=True)
    chart.points([nbytes], [max(here.time, 1e-9)], label=f"this array: {fmt_time(here.time)}", color="#ff7f0e")
    return chart


def _collective_view(kind: str, chip: str, X: int, Y: int, Z: int, axes: str, nbytes: float, also_sharded: str,
                     wrap: str) -> tuple[Chart, Estimate] | str:
    mesh = TpuMesh(chip, X=X, Y=Y, Z=Z, wrap=_WRAP[wrap])
    also = "" if also_sharded == "none" else also_sharded
    here = collective(kind, mesh, axes, nbytes, also)
    if not here.time:  # a group of one chip moves nothing: no curve to draw, no intensity to show
        return here.label
    return collective_chart(mesh, axes, kind, nbytes, also), here


@checks(X="count", Y="count", Z="count", nbytes="size", axes="text", also_sharded="text", wrap=_WRAP)
def collective_explorer(kind: str = "all_gather", chip: str = "v5e", X: int = 8, Y: int = 4, Z: int = 1,
                        axes: str = "Y", nbytes: float = 2 * 2048 * 8192, also_sharded: str = "none",
                        wrap: str = "auto") -> Explorer:
    """Return an explorer of one collective's cost (opens on ch. 3 Pop Quiz 2: AllGather_Y of bf16[2048, 8192] on
    a v5e 8x4, about 560 µs without wraparound). `nbytes` is the whole array V; `also_sharded` names axes the
    array stays split over; `wrap` ('auto', 'wraparound', 'no wraparound') overrides the chip's rule.
    """
    sizes = [1, 2, 4, 8, 16]
    return explore(
        _collective_view, title="One collective on a TPU mesh", unfit=(*SLICE_UNFIT, "repeats axes that take part"),
        kind=opening_on(KINDS, kind), chip=opening_on(TPU_CHIPS, chip), X=opening_on(sizes, X), Y=opening_on(sizes, Y),
        Z=opening_on(sizes, Z), axes=opening_on(["X", "Y", "Z", "XY", "XYZ"], axes), nbytes=Log(1e2, 1e11, nbytes),
        also_sharded=opening_on(["none", "X", "Y", "Z", "XY", "YZ"], also_sharded), wrap=opening_on(list(_WRAP), wrap),
    )


# --- sharded matmul ------------------------------------------------------------------------------------------


def _matmul_view(A: str, B: str, C: str, chip: str, X: int, Y: int, Z: int,
                 I: float, J: float, K: float) -> ShardedMatmul:  # noqa: E741
    mesh = TpuMesh(chip, X=X, Y=Y, Z=Z)
    return sharded_matmul(f"{A} @ {B} -> {C}", mesh, I=_pow2(I), J=_pow2(J), K=_pow2(K))


@checks(X="count", Y="count", Z="count", I="count", J="count", K="count", A="text", B="text", C="text")
def matmul_explorer(A: str = "A[I_X, J_Y]", B: str = "B[J_Y, K]", C: str = "C[I_X, K]", chip: str = "v5e",
                    X: int = 4, Y: int = 4, Z: int = 1, I: int = 8192, J: int = 8192,  # noqa: E741
                    K: int = 32768) -> Explorer:
    """Return an explorer of `sharded_matmul`: pick the shardings of A, B and the output, the mesh and the sizes
    (rounded to powers of two); it shows the cheapest plan and every alternative. Opens on ch. 3 Q6.
    """
    axes = ("X", "Y", "Z")
    sizes = [1, 2, 4, 8, 16]
    return explore(
        _matmul_view, title="A sharded matmul: the plan and its alternatives",
        unfit=(*SLICE_UNFIT, "must be a positive multiple of"),
        A=opening_on(spec_options("A", ("I", "J"), axes), A), B=opening_on(spec_options("B", ("J", "K"), axes), B),
        C=opening_on(spec_options("C", ("I", "K"), axes), C), chip=opening_on(TPU_CHIPS, chip),
        X=opening_on(sizes, X), Y=opening_on(sizes, Y), Z=opening_on(sizes, Z),
        I=Log(16, 2**20, _pow2(I), 2), J=Log(16, 2**20, _pow2(J), 2), K=Log(16, 2**20, _pow2(K), 2),
    )


@checks(I="size", J="size", K="size", Y="count")
def overlap_view(I: float = 1024, J: float = 2048, K: float = 8192, Y: int = 4,  # noqa: E741
                 chip: str = "v5e") -> tuple[Chart, CollectiveMatmul] | ShardedMatmul:
    """Return, for A[I_X, J_Y] · B[J, K_Y] on a chip's X = 2 by Y slice, the collective matmul's three times against
    K (sequential, ring, bound; K from a 16th to 16 times the given one) and its table; or the plan itself where
    the cheapest plan is not one AllGather over Y."""
    expr, mesh = "A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", TpuMesh(chip, X=2, Y=Y)
    sizes = {"I": round(I), "J": round(J)}
    try:
        ring = collective_matmul(expr, mesh, K=round(K), **sizes)
    except ValueError:
        return sharded_matmul(expr, mesh, K=round(K), **sizes)
    ks = geomspace(K / 16, K * 16, 25)
    rings = []
    for k in ks:
        try:
            rings.append(collective_matmul(expr, mesh, K=round(k), **sizes))
        except ValueError:  # another plan wins at this K: leave a gap
            rings.append(None)
    chart = Chart(title=f"{expr} on {mesh.chip.name} 2x{Y}", xlabel="K (output columns)", ylabel="time (s)",
                  xlog=True, ylog=True)
    for name, get in (("sequential", lambda r: r.sequential), ("collective matmul", lambda r: r.time),
                      ("bound max(T_math, T_comms)", lambda r: r.bound)):
        chart.line(ks, [get(r) if r else None for r in rings], label=name, dash=name.startswith("bound"))
    chart.points([K], [ring.time], label=f"K = {round(K)}: {fmt_time(ring.time)}")
    return chart, ring


# --- ring collectives ----------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _schedule(n: int, kind: str, bidirectional: bool, wrap: bool) -> tuple[RingStep, ...]:
    return tuple(ring_schedule(n, kind, bidirectional, wrap))


@checks(step="count0", wrap="flag", kind=RING_KINDS,
        states=lambda name, value: [is_a(RingStep)(f"{name}[{i}]", s) for i, s in enumerate(
            is_a(list, tuple)(name, value))] and value)
def ring_html(states: Sequence[RingStep], step: int, kind: str, wrap: bool) -> str:
    """Return an HTML table of a ring collective after `step` steps: a column per device, its pieces as
    coloured cells (pale = partial sum), and the pieces that crossed each link in this step."""
    last = len(states) - 1
    state = states[min(step, last)]
    n = len(state.held)
    slots = max(len(p) for s in states for p in s.held)
    cell = "padding:1px 3px;font:11px monospace;text-align:center;border:1px solid #ddd"
    rows = []
    for r in range(slots):
        tds = []
        for pieces in state.held:
            by_slot = {p.chunk: p for p in pieces} if kind != "all_to_all" else dict(enumerate(pieces))
            p = by_slot.get(r)
            if p is None:
                tds.append(f"<td style='{cell}'></td>")
            else:
                alpha = f"{int(40 + 215 * p.fill):02x}"
                tds.append(f"<td style='{cell};background:{PALETTE[p.chunk % len(PALETTE)]}{alpha}'>"
                           f"{html.escape(p.label)}</td>")
        rows.append("<tr><th></th>" + "".join(tds) + "</tr>")
    links = []
    for i in range(n):
        j = (i + 1) % n
        right, left = state.links.get((i, j), 0), state.links.get((j, i), 0)
        text = " ".join(t for t in (f"{right}→" if right else "", f"←{left}" if left else "") if t)
        if j == 0 and not wrap:
            text = "(no link)"
        links.append(f"<td style='{cell};color:#c0392b'>{text}</td>")
    head = "".join(f"<th style='{cell}'>dev {i}</th>" for i in range(n))
    note = (f"after step {state.step} of {last}" if state.step else f"start (the collective takes {last} steps)")
    if step > last:
        note += " — finished"
    fraction = state.piece_fraction
    caption = (f"{html.escape(kind)} over {n} devices, {note}; one piece = {fraction:.3g} of the array V. "
               "Last row: pieces sent this step from each device to the next (→) and back (←), "
               "the last column being the wraparound link."
               + (" A label j:c is chunk j's partial sum holding c of the n contributions." if kind == "reduce_scatter"
                  else " A label s→d is the piece device s sends to device d." if kind == "all_to_all" else ""))
    return (f"<table style='border-collapse:collapse'><caption style='caption-side:top;text-align:left'>"
            f"{caption}</caption><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}"
            f"<tr><th style='{cell}'>links</th>{''.join(links)}</tr></tbody></table>")


def _ring_view(n: int, kind: str, direction: str, links: str, step: int) -> Picture:
    wrap = links == "wraparound"
    states = _schedule(n, kind, direction == "bidirectional", wrap)
    return Picture(ring_html(states, step, kind, wrap))


@checks(n="count", step="count0", direction=["bidirectional", "one-way"], links=["wraparound", "no wraparound"])
def ring_explorer(n: int = 8, kind: str = "all_gather", direction: str = "bidirectional", links: str = "wraparound",
                  step: int = 1) -> Explorer:
    """Return a step-by-step explorer of a ring collective: which pieces sit on which device after each step."""
    return explore(
        _ring_view, title="A ring collective, step by step", unfit=("a one-way line cannot reach",),
        n=(2, 16, 1, n), kind=opening_on(RING_KINDS, kind),
        direction=opening_on(["bidirectional", "one-way"], direction),
        links=opening_on(["wraparound", "no wraparound"], links), step=(0, 15, 1, step),
    )


# --- sharding grid ---------------------------------------------------------------------------------------------


@checks(dtype="dtype", axes=mapping_of("count", "axis sizes"), sizes=mapping_of("count", "dimension sizes"))
def grid_svg(spec: str, axes: dict[str, int], sizes: dict[str, int], dtype: str = "bf16") -> str:
    """Return an SVG of a 2-D array's blocks labelled with the devices holding them, and the mesh coloured by block."""
    owners = device_blocks(spec, axes)
    parsed = parse_spec(spec)
    rows_n, cols_n = max(b[0] for b in owners) + 1, max(b[1] for b in owners) + 1
    counts = dict(zip(parsed.dim_names, (rows_n, cols_n)))
    for d, parts in counts.items():
        if sizes[d] % parts:
            raise ValueError(f"dimension {d}={sizes[d]} of {spec} must be a multiple of its {parts} blocks")
    local = {d: sizes[d] // parts for d, parts in counts.items()}
    colour = {b: PALETTE[k % len(PALETTE)] for k, b in enumerate(owners)}
    side, pad = 240, 24
    cw, ch = side / cols_n, side / rows_n
    out = [svg_open(2 * side + 4 * pad, side + 3 * pad, "font-family='sans-serif' font-size='10'")]
    for (r, c), devices in owners.items():
        x, y = pad + c * cw, 2 * pad + r * ch
        out.append(f"<rect x='{x:.1f}' y='{y:.1f}' width='{cw:.1f}' height='{ch:.1f}' fill='{colour[(r, c)]}' "
                   f"fill-opacity='0.55' stroke='#333'/>")
        label = " ".join("(" + ",".join(map(str, d)) + ")" for d in devices[:4]) + (" …" if len(devices) > 4 else "")
        if cw > 40 and ch > 12:
            out.append(f"<text x='{x + cw / 2:.1f}' y='{y + ch / 2 + 3:.1f}' text-anchor='middle' "
                       f"font-size='{8 if len(devices) > 1 else 10}'>{html.escape(label)}</text>")
    names = list(axes)
    R, C = axes[names[0]], axes[names[1]] if len(names) > 1 else 1
    mw, mh = side / C, side / R
    for block, devices in owners.items():
        for d in devices:
            x, y = 3 * pad + side + (d[1] if len(d) > 1 else 0) * mw, 2 * pad + d[0] * mh
            out.append(f"<rect x='{x:.1f}' y='{y:.1f}' width='{mw:.1f}' height='{mh:.1f}' fill='{colour[block]}' "
                       f"fill-opacity='0.55' stroke='#333'/>")
            if mw > 28 and mh > 12:
                out.append(f"<text x='{x + mw / 2:.1f}' y='{y + mh / 2 + 3:.1f}' text-anchor='middle'>"
                           f"{','.join(map(str, d))}</text>")
    per_device = fmt_bytes(math.prod(local.values()) * dtype_bytes(dtype))
    shape = ", ".join(str(local[d]) for d in parsed.dim_names)
    out.append(f"<text x='{pad}' y='14' font-weight='bold'>{html.escape(spec)}: blocks and the devices holding "
               f"them</text><text x='{3 * pad + side}' y='14' font-weight='bold'>mesh {names[0]} (rows) × "
               f"{names[1] if len(names) > 1 else ''} (columns)</text>"
               f"<text x='{pad}' y='{side + 2 * pad + 16}'>local {dtype}[{shape}] = {per_device} per device; "
               f"{len(next(iter(owners.values())))} cop(ies) of each block</text></svg>")
    return "".join(out)


def _grid_view(spec: str, X: int, Y: int, I: float, J: float, dtype: str) -> Picture:  # noqa: E741
    return Picture(grid_svg(spec, {"X": X, "Y": Y}, {"I": _pow2(I), "J": _pow2(J)}, dtype))


@checks(X="count", Y="count", I="count", J="count", dtype="dtype", spec="text")
def sharding_grid_explorer(spec: str = "A[I_X, J_Y]", X: int = 2, Y: int = 2, I: int = 1024,  # noqa: E741
                           J: int = 4096, dtype: str = "bf16") -> Explorer:
    """Return an explorer of which device holds which block of A[I, J] for a chosen sharding and mesh."""
    return explore(
        _grid_view, title="Which device holds which block", unfit=("must be a multiple of its",),
        spec=opening_on(spec_options("A", ("I", "J")), spec), X=opening_on([1, 2, 4, 8], X),
        Y=opening_on([1, 2, 4, 8], Y),
        I=Log(16, 65536, _pow2(I), 2), J=Log(16, 65536, _pow2(J), 2), dtype=opening_on(["bf16", "fp32", "int8"], dtype),
    )


def _memory_view(spec: str, chip: str, X: int, Y: int, Z: int, dtype: str, **sizes: int) -> Table:
    mesh = TpuMesh(chip, X=X, Y=Y, Z=Z)
    local = local_shape(spec, mesh, sizes)
    per_device = bytes_per_device(spec, mesh, sizes, dtype)
    total = total_bytes(spec, mesh, sizes, dtype)
    one_copy = math.prod(sizes[d] for d in parse_spec(spec).dim_names) * dtype_bytes(dtype)
    rows = [{"quantity": "local shape", "value": f"{dtype}[{', '.join(map(str, local.values()))}]"},
            {"quantity": "bytes per device", "value": fmt_bytes(per_device)},
            {"quantity": f"bytes on all {mesh.n_chips} devices", "value": fmt_bytes(total)},
            {"quantity": "copies of the array", "value": f"{total / one_copy:g}"}]
    return Table(rows, title=f"{spec} on {mesh}")


@checks(X="count", Y="count", Z="count", dtype="dtype", spec="text")
def memory_explorer(spec: str = "A[I_XY, J]", chip: str = "v5p", X: int = 2, Y: int = 8, Z: int = 2,
                    dtype: str = "int8", **sizes: int) -> Explorer:
    """Return an explorer of a sharded array's memory: local shape, bytes per device, bytes in all and copies.

    `spec` is typed in the book's notation; `sizes` fix the array's dimensions (default I=128, J=2048: ch. 3's
    second pop quiz).
    """
    import ipywidgets as w

    sizes = sizes or {"I": 128, "J": 2048}
    mesh_sizes = [1, 2, 4, 8, 16]
    return explore(
        _memory_view, title="Memory of a sharded array", unfit=(*SLICE_UNFIT, "must be a multiple of"),
        spec=w.Text(value=spec, description="spec", continuous_update=False), chip=opening_on(TPU_CHIPS, chip),
        X=opening_on(mesh_sizes, X), Y=opening_on(mesh_sizes, Y), Z=opening_on(mesh_sizes, Z),
        dtype=opening_on(["int8", "bf16", "fp32"], dtype), **sizes,
    )
