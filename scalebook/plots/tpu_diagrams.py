"""One TPU and its host, drawn from a `Chip` so that every number on them is the chip's own: the chip (TensorCores
with their scalar unit, VPU, MXUs and VMEM; HBM beside the die; ICI links leaving it), the path operands take
through its memory hierarchy, the tray (a host CPU joined by PCIe to its chips, ICI between them and out to other
trays, DCN out of the host) and a slice's hosts side by side (`plots.chip` serves all four).
`hardware.chips.mxus_per_core` and `hardware.sm.vpu_flops_per_core` derive the parts the spec table lacks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..hardware.chips import VMEM_FACTOR, Chip, get_chip, mxus_per_core
from ..hardware.sm import VPU_ALUS, VPU_SHAPE, vpu_flops_per_core
from ..hardware.topology import TpuMesh
from ..units import fmt_bytes, fmt_rate
from .base import PALETTE, ROLES, SIZES, legend_below
from .diagram import COLOURS, arrow, box, canvas

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["chip_diagram", "memory_hierarchy", "tray", "hosts", "LINKS"]

TRAY_CHIPS = 4  # chips on one board (How To Scale Your Model, ch. 2)
VREGS_PER_CORE = 64  # vector registers of 8 x 128 x 4 B on a v5p core (How To Scale Your Model, ch. 2, appendix)
# One colour per kind of link, the same in both diagrams (Okabe & Ito's palette, `base.PALETTE`).
LINKS = {"HBM": ROLES["memory"], "VMEM": PALETTE[1], "ICI": ROLES["comms"], "PCIe": PALETTE[0], "DCN": PALETTE[5]}


def _tpu(chip: Chip | str) -> Chip:
    c = get_chip(chip)
    if c.kind != "tpu":
        raise ValueError(f"chip={c.name!r} is not a TPU")
    return c


def _text(value: float | None, fmt, unknown: str = "?") -> str:
    return fmt(value) if value else unknown


def _bps(value: float | None) -> str:
    """Format a bandwidth in bytes/s ('?' when the spec table lacks it)."""
    return _text(value, lambda b: fmt_rate(b, "B/s"))


def _legend(ax: Any, styles: dict[str, str]) -> None:
    """Put a legend of link kinds (name → line style) under the figure, coloured by `LINKS`."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=LINKS[name.split()[0]], lw=2.2, ls=ls) for name, ls in styles.items()]
    legend_below(ax, ncol=min(4, len(styles)), handles=handles, labels=list(styles))


def _core(ax: Any, c: Chip, x0: float, name: str) -> None:
    """Draw one TensorCore 5.0 wide from x0: scalar unit, VPU, its MXUs in a grid, VMEM feeding both."""
    n_mxu, mxu = mxus_per_core(c), c.mxu_size
    box(ax, x0, 1.2, 5.0, 5.6, name, COLOURS["core"], SIZES["text"], va="top", lw=1.4)
    box(ax, x0 + 0.15, 5.0, 2.1, 1.0, "scalar unit\n+ SMEM", COLOURS["scalar"], SIZES["small"])
    box(ax, x0 + 0.15, 3.1, 2.1, 1.7, f"VPU\n{VPU_SHAPE[0]}×{VPU_SHAPE[1]}×{VPU_ALUS} ALUs\n"
                                      f"{_text(vpu_flops_per_core(c), fmt_rate)}", COLOURS["vpu"], SIZES["small"])
    shown = n_mxu or 1
    cols = math.ceil(math.sqrt(shown))
    rows = math.ceil(shown / cols)
    w, h = 2.45 / cols, 2.3 / rows
    for m in range(shown):
        x, y = x0 + 2.4 + (m % cols) * w, 3.1 + (rows - 1 - m // cols) * h
        box(ax, x + 0.04, y + 0.04, w - 0.08, h - 0.08, f"MXU\n{mxu}×{mxu}", COLOURS["mxu"], SIZES["small"])
    per_core = c.bf16_flops / (c.cores or 1) if c.bf16_flops else None
    ax.text(x0 + 3.62, 5.72, f"{n_mxu or '?'} MXUs\n{_text(per_core, fmt_rate)} bf16", ha="center", va="center",
            fontsize=SIZES["small"])
    box(ax, x0 + 0.15, 1.35, 4.7, 1.05, f"VMEM {_text(c.vmem_bytes, lambda b: fmt_bytes(b, binary=True))}",
        COLOURS["vmem"], SIZES["small"])
    for x in (x0 + 1.2, x0 + 3.62):
        arrow(ax, (x, 2.4), (x, 3.1), colour=LINKS["VMEM"], both=True, lw=2.0)
    ax.text(x0 + 2.42, 2.75, f"≈{VMEM_FACTOR:g}× HBM", ha="center", va="center", fontsize=SIZES["small"])


def _ici_stubs(ax: Any, n: int, left: float, right: float, bottom: float, top: float) -> None:
    """Draw `n` ICI links leaving a package's top and bottom edges, evenly spaced, numbered."""
    upper = math.ceil(n / 2)
    for k in range(n):
        on_top = k < upper
        slots = upper if on_top else n - upper
        x = left + (right - left) * ((k if on_top else k - upper) + 0.5) / slots
        y0, y1 = (top, top + 0.7) if on_top else (bottom, bottom - 0.7)
        arrow(ax, (x, y0), (x, y1), colour=LINKS["ICI"], both=True, lw=2.2)
        ax.text(x + 0.12, (y0 + y1) / 2, f"ICI {k}", ha="left", va="center", fontsize=SIZES["small"])


def chip_diagram(chip: Chip | str = "v5e", title: str | None = None) -> Figure:
    """Draw one TPU chip as a package: the die with each TensorCore (scalar unit + SMEM, VPU, MXUs, VMEM), the
    HBM beside it with its capacity and bandwidth (shared by the cores), and the chip's ICI links leaving it.

    Every number comes from the chip's spec: MXU count from `mxus_per_core`, VPU rate from `vpu_flops_per_core`,
    VMEM → MXU bandwidth as ≈22× HBM (the book's figure), the ICI link count and one-way rate per link.
    """
    c = _tpu(chip)
    cores = c.cores or 1
    die_w = cores * 5.0 + (cores - 1) * 0.3 + 0.4
    width = die_w + 4.4
    fig, ax = canvas(width, 9.4, (min(10.2, 0.72 * width), 0.72 * 9.4 + 0.6),
                     title or f"{c.name}: {cores} TensorCore{'s' if cores > 1 else ''}, "
                              f"HBM beside the die, {c.ici_links or '?'} ICI links out")
    box(ax, 0.1, 0.9, width - 0.2, 7.55, "", "#f4f4f4", edge="0.5", lw=1.0, zorder=0)
    box(ax, 0.3, 1.05, die_w, 7.25, f"{c.name} die", "white", SIZES["text"], va="top", lw=1.2, zorder=1)
    for k in range(cores):
        _core(ax, c, 0.5 + k * 5.3, f"TensorCore {k}" if cores > 1 else "TensorCore")
    hbm_x = die_w + 2.2
    box(ax, hbm_x, 1.6, 1.9, 6.4, f"HBM\n{_text(c.hbm_bytes, fmt_bytes)}", COLOURS["hbm"], SIZES["text"], lw=1.4)
    shared = f"\nshared by\n{cores} cores" if cores > 1 else ""
    arrow(ax, (die_w + 0.3, 4.8), (hbm_x, 4.8), colour=LINKS["HBM"], both=True, lw=3.0,
          label=f"{_bps(c.hbm_bandwidth)}{shared}", offset=(0, 0.75 if cores > 1 else 0.45))
    _ici_stubs(ax, c.ici_links or 0, 0.3, die_w + 0.3, 0.9, 8.45)
    ax.text(hbm_x + 0.95, 0.45, f"{c.ici_links or '?'} ICI links × {_bps(c.ici_bandwidth)}\none way = "
                                f"{_bps(c.ici_links and c.ici_bandwidth and c.ici_links * c.ici_bandwidth)} out",
            ha="center", va="center", fontsize=SIZES["small"], color=LINKS["ICI"])
    _legend(ax, {"HBM ↔ VMEM": "-", "VMEM ↔ VPU, MXU": "-", "ICI link": "-"})
    return fig


def _host_shape(c: Chip) -> tuple[int, int]:
    """Return a host's chips as (x, y) on its tray (2 × 2 when the spec table has no `host_shape`)."""
    shape = tuple(c.host_shape or (2, 2))
    return shape[0], shape[1] if len(shape) > 1 else 1


def _neighbours(i: int, j: int, hx: int, hy: int) -> int:
    """Return how many chips of an hx × hy tray sit next to chip (i, j)."""
    return sum(0 <= a < hx and 0 <= b < hy for a, b in ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)))


def _tray_chip(ax: Any, c: Chip, x: float, y: float, i: int, j: int, hx: int, hy: int) -> None:
    """Draw chip (i, j) centred at (x, y) and its ICI links that leave the host, fanned away from its centre."""
    out = max(0, (c.ici_links or 0) - _neighbours(i, j, hx, hy))
    dx, dy = i - (hx - 1) / 2, j - (hy - 1) / 2
    facing = math.atan2(dy, dx) if (dx or dy) else -math.pi / 2
    for k in range(out):
        angle = facing + (k - (out - 1) / 2) * 0.5
        end = (x + 1.15 * math.cos(angle), y + 1.15 * math.sin(angle))
        arrow(ax, (x + 0.6 * math.cos(angle), y + 0.6 * math.sin(angle)), end, colour=LINKS["ICI"], ls="--",
              lw=1.6)
    box(ax, x - 0.7, y - 0.55, 1.4, 1.1, f"chip ({i},{j})\n{_text(c.hbm_bytes, fmt_bytes)}\nHBM", COLOURS["chip"],
        SIZES["small"], lw=1.2, zorder=3)


def tray(chip: Chip | str = "v5p", title: str | None = None) -> Figure:
    """Draw one host and its tray: the host CPU joined by PCIe to each chip, the chips joined by ICI (solid inside
    the host, dashed where a link leaves for another host's chips) and the host's DCN port. A host of more than
    `TRAY_CHIPS` chips drives several trays side by side. Chip count, link counts and
    bandwidths come from the chip's spec (`host_shape`, `ici_links`, `pcie_bandwidth`, `dcn_bandwidth`)."""
    c = _tpu(chip)
    hx, hy = _host_shape(c)
    pitch = 2.4
    width, top = hx * pitch + 2.6, hy * pitch + 1.6
    fig, ax = canvas(width, top + 2.4, (min(7.5, 0.62 * width + 1.2), 0.62 * (top + 2.4) + 1.0),
                     title or f"One {c.name} host: {hx * hy} chips on PCIe, ICI between them")
    cols = max(1, min(hx, TRAY_CHIPS // hy))  # chip columns per tray: a host of 8 drives two trays of 4
    for t in range(math.ceil(hx / cols)):
        n = min(cols, hx - t * cols)
        box(ax, 0.55 + t * cols * pitch, 0.8, n * pitch - 0.1, hy * pitch + 0.2, "", "#f4f4f4", edge="0.5", lw=1.0,
            zorder=0)
        ax.text(0.65 + t * cols * pitch, 0.85 + hy * pitch, f"tray {t}", fontsize=SIZES["small"], style="italic",
                va="top")
    xs = [0.5 + pitch / 2 + i * pitch for i in range(hx)]
    ys = [0.9 + pitch / 2 + j * pitch for j in range(hy)]
    for i, x in enumerate(xs):
        for j, y in enumerate(ys):
            if i + 1 < hx:
                ax.plot([x, xs[i + 1]], [y, y], color=LINKS["ICI"], lw=2.2, zorder=1)
            if j + 1 < hy:
                ax.plot([x, x], [y, ys[j + 1]], color=LINKS["ICI"], lw=2.2, zorder=1)
            _tray_chip(ax, c, x, y, i, j, hx, hy)
    host_y = top + 0.9
    box(ax, 0.5, host_y, hx * pitch, 1.0, "host CPU + DRAM", COLOURS["host"], SIZES["text"], lw=1.2)
    for i, j in itertools.product(range(hx), range(hy)):  # top row: straight down; lower rows: beside the chips
        lane = xs[i] if j == hy - 1 else xs[i] + 0.85 + 0.15 * (hy - 2 - j)
        end = ys[j] + 0.55 if j == hy - 1 else ys[j]
        ax.plot([lane, lane, xs[i]], [host_y, end, end], color=LINKS["PCIe"], lw=1.8, zorder=2)
    ax.text(0.55, top + 0.5, f"PCIe {_bps(c.pcie_bandwidth)} per chip", fontsize=SIZES["small"], va="center",
            color=LINKS["PCIe"], bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"), zorder=5)
    arrow(ax, (0.5 + hx * pitch, host_y + 0.5), (width - 0.05, host_y + 0.5), colour=LINKS["DCN"], lw=2.2,
          label=f"DCN\n{_bps(c.dcn_bandwidth)}\nper chip", offset=(0, -0.75))
    ax.text(width / 2, 0.1, f"each chip: {c.ici_links or '?'} ICI links, {_bps(c.ici_bandwidth)} one way each",
            ha="center", va="bottom", fontsize=SIZES["small"])
    _legend(ax, {"ICI between its chips": "-", "ICI to other hosts": "--", "PCIe": "-", "DCN": "-"})
    return fig


def memory_hierarchy(chip: Chip | str = "v5e", title: str | None = None) -> Figure:
    """Draw the path operands take, HBM → VMEM → vector registers → VPU / MXU, with each level's capacity and the
    bandwidth of each hop (per TensorCore where the spec is per core)."""
    c = _tpu(chip)
    cores = c.cores or 1
    vreg = VREGS_PER_CORE * VPU_SHAPE[0] * VPU_SHAPE[1] * 4
    vmem_bw = VMEM_FACTOR * c.hbm_bandwidth if c.hbm_bandwidth else None
    fig, ax = canvas(13.6, 4.4, (10.0, 3.6), title or f"{c.name}: where the operands of one multiply travel")
    levels = [
        ("HBM", f"{_text(c.hbm_bytes, fmt_bytes)}\nper chip", COLOURS["hbm"]),
        ("VMEM", f"{_text(c.vmem_bytes, lambda b: fmt_bytes(b, binary=True))}\nper core", COLOURS["vmem"]),
        ("vector registers", f"{fmt_bytes(vreg, binary=True)} per core\n({VREGS_PER_CORE} × 8×128×4 B)",
         COLOURS["scalar"]),
    ]
    for k, (name, detail, colour) in enumerate(levels):
        box(ax, 0.2 + k * 3.5, 1.3, 2.6, 1.9, f"{name}\n{detail}", colour, 8)
    hops = [_text(c.hbm_bandwidth, lambda b: fmt_rate(b, "B/s")), _text(vmem_bw, lambda b: fmt_rate(b, "B/s"))
            + f"\n(≈{VMEM_FACTOR:g}× HBM)"]
    for k, label in enumerate(hops):
        arrow(ax, (2.8 + k * 3.5, 2.25), (3.7 + k * 3.5, 2.25), both=True, lw=1.6, label=label, offset=(0, 0.75))
    vpu = vpu_flops_per_core(c)
    box(ax, 10.9, 2.5, 2.5, 1.4, f"VPU\n{_text(vpu, fmt_rate)} per core", COLOURS["vpu"], 8)
    box(ax, 10.9, 0.6, 2.5, 1.4, f"MXUs\n{_text(c.bf16_flops and c.bf16_flops / cores, fmt_rate)}\nper core (bf16)",
        COLOURS["mxu"], 8)
    arrow(ax, (9.8, 2.4), (10.9, 3.1))
    arrow(ax, (9.8, 2.1), (10.9, 1.3))
    arrow(ax, (7.7, 1.3), (10.9, 0.9), rad=0.25, label="MXU reads VMEM", offset=(0.4, -0.65))
    ax.text(6.8, 0.05, "capacity falls and bandwidth rises at each step to the right", ha="center", fontsize=8,
            style="italic")
    return fig


def _chip_grid(ax, xs: Sequence[float], ys: Sequence[float], size: float, label=None, colour=None,
               links: bool = True) -> None:
    """Draw chips at every (x, y) of a grid with ICI links between grid neighbours."""
    for i, j in itertools.product(range(len(xs)), range(len(ys))):
        if links and i + 1 < len(xs):
            ax.plot([xs[i], xs[i + 1]], [ys[j], ys[j]], color="#1f77b4", lw=1.5, zorder=1)
        if links and j + 1 < len(ys):
            ax.plot([xs[i], xs[i]], [ys[j], ys[j + 1]], color="#1f77b4", lw=1.5, zorder=1)
        box(ax, xs[i] - size / 2, ys[j] - size / 2, size, size, label(i, j) if label else "",
            colour(i, j) if colour else COLOURS["chip"], 6.5, zorder=2)


def _tray(ax, x0: float, y0: float, hx: int, hy: int, pitch: float, first: tuple[int, int], colour: str,
          host_y: float, host: str, pcie: str) -> None:
    """Draw one host's tray of hx × hy chips from (x0, y0) with ICI inside, and its host box at `host_y`, joined
    to the tray by one PCIe arrow."""
    xs = [x0 + pitch / 2 + i * pitch for i in range(hx)]
    ys = [y0 + pitch / 2 + j * pitch for j in range(hy)]
    _chip_grid(ax, xs, ys, 0.62 * pitch, label=lambda i, j: f"({first[0] + i},{first[1] + j})",
               colour=lambda i, j: colour)
    box(ax, x0 + 0.05, y0 + 0.05, hx * pitch - 0.1, hy * pitch - 0.1, "", "none", ls=":", edge="#2ca02c", lw=1.3,
        zorder=0)
    top = host_y > y0
    box(ax, x0 + 0.2, host_y, hx * pitch - 0.4, 0.7, host, colour, 8)
    start = (x0 + hx * pitch / 2, host_y if top else host_y + 0.7)
    end = (start[0], y0 + hy * pitch if top else y0)
    arrow(ax, start, end, both=True, colour="#2ca02c", lw=2.0, label=pcie, offset=(0.0, 0.0))


def _pcie(c: Chip) -> str:
    return f"PCIe {_text(c.pcie_bandwidth, lambda b: fmt_rate(b, 'B/s'))}/chip"


def hosts(mesh: TpuMesh, title: str | None = None) -> Figure:
    """Draw a slice with its hosts: each host beside its tray of chips (PCIe), ICI between neighbouring chips
    inside and across trays, and DCN joining the hosts. Chips are labelled (x, y); trays are dotted."""
    if not isinstance(mesh, TpuMesh) or len(mesh.axes) != 2:
        raise ValueError(f"mesh must be a 2-D TpuMesh, got {mesh!r}")
    c = mesh.chip
    X, Y = mesh.axes["X"], mesh.axes["Y"]
    hx, hy = _host_shape(c)
    if X % hx or Y % hy:
        hx, hy = hy, hx
    if X % hx or Y % hy:
        raise ValueError(f"mesh {X}x{Y} is not tiled by {c.name}'s host trays of {hx}x{hy}")
    gx, gy = X // hx, Y // hy
    if gy > 2:
        raise ValueError(f"mesh {X}x{Y} has {gy} rows of trays; the drawing holds at most 2 (hosts above and below)")
    pitch = 1.2
    width, height = X * pitch + 1.2, Y * pitch + 3.6
    fig, ax = canvas(width, height, (min(11.0, 0.8 * width + 0.8), min(10.0, 0.8 * height + 0.8)),
                     title or f"{c.name} {X}x{Y}: {mesh.hosts} hosts, each with its own tray of {hx * hy} chips")
    tints = ["#deebf7", "#fde0dd", "#e5f5e0", "#fff7bc", "#efedf5", "#fee6ce", "#f0f0f0", "#e0f3f8"]
    xs = [0.9 + i * pitch for i in range(X)]
    ys = [2.3 + j * pitch for j in range(Y)]
    for i, j in itertools.product(range(X), range(Y)):  # ICI across tray boundaries
        if i + 1 < X and (i + 1) % hx == 0:
            ax.plot([xs[i], xs[i + 1]], [ys[j], ys[j]], color="#1f77b4", lw=1.5, zorder=1)
        if j + 1 < Y and (j + 1) % hy == 0:
            ax.plot([xs[i], xs[i]], [ys[j], ys[j + 1]], color="#1f77b4", lw=1.5, zorder=1)
    host_boxes = []
    for b, a in itertools.product(range(gy), range(gx)):
        x0, y0 = 0.9 - pitch / 2 + a * hx * pitch, 2.3 - pitch / 2 + b * hy * pitch
        host_y = y0 + hy * pitch + 0.45 if b == gy - 1 else y0 - 1.15
        k = len(host_boxes)
        _tray(ax, x0, y0, hx, hy, pitch, (a * hx, b * hy), tints[k % len(tints)], host_y, f"host {k}", _pcie(c))
        host_boxes.append((x0 + 0.2, host_y + 0.35))
    for (x1, y1), (x2, y2) in itertools.pairwise(host_boxes):
        ax.plot([x1, 0.12, 0.12, x2], [y1, y1, y2, y2], color="#9467bd", lw=2, zorder=0)
    ax.text(0.2, 0.02, f"purple: DCN between hosts ({_text(c.dcn_bandwidth, lambda b: fmt_rate(b, 'B/s'))} per "
                       f"chip); blue: ICI ({_text(c.ici_bandwidth, lambda b: fmt_rate(b, 'B/s'))} one way per link)",
            fontsize=8)
    return fig
