"""Figures for chapter 5's strategies: which device holds which shard of the layer's arrays (DP, FSDP, TP,
FSDP + TP), the collectives of each pass as the sharded-matmul rules derive them, and the FLOPs-to-comms ratio.

The layouts are written once in the chapter's notation (`training.book.LAYOUTS`); the collectives are not typed in
but read off `sharding.sharded_matmul` for each forward and backward matmul (`training.book.pass_collectives`), so
the pictures and the appendix table say exactly what the package computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..hardware.chips import Chip, get_chip
from ..hardware.topology import TpuMesh
from ..sharding import parse_spec
from ..training.book import LAYOUTS, pass_collectives
from ..training.curves import strategy_curves
from ..units import check_choice, checks, fmt_bytes, is_a
from .base import figure, finish
from .training import STRATEGY_LABELS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["layer_chain", "layout",
           "pass_bytes", "comms_ratio"]

_KIND_NAMES = {"all_gather": "AllGather", "reduce_scatter": "ReduceScatter", "all_reduce": "AllReduce",
               "all_to_all": "AllToAll"}
_KIND_COLORS = {"all_gather": "#4e79a7", "reduce_scatter": "#f28e2b", "all_reduce": "#e15759"}
_ARRAY_COLORS = {"In": "#59a14f", "Win": "#4e79a7", "Tmp": "#b07aa1", "Wout": "#4e79a7", "Out": "#59a14f",
                 "opt": "#f28e2b"}
_AXIS_SIZES = {"dp": {"X": 4}, "fsdp": {"X": 4}, "tp": {"Y": 4}, "fsdp_tp": {"X": 2, "Y": 2}}


def _block(ax, x: float, y: float, w: float, h: float, splits: tuple[int, int], held: tuple[int, int] | None,
           color: str) -> None:
    """Draw an array as a w × h box cut into splits (rows, cols); the held block (or all when None) coloured."""
    from matplotlib.patches import Rectangle

    rows, cols = splits
    for r in range(rows):
        for c in range(cols):
            mine = held is None or (r, c) == held
            ax.add_patch(Rectangle((x + c * w / cols, y + (rows - 1 - r) * h / rows), w / cols, h / rows,
                                   facecolor=color if mine else "white", alpha=0.85 if mine else 1.0,
                                   edgecolor="#333", lw=0.6))


def _held(spec: str, coords: dict[str, int], sizes: dict[str, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(splits per dimension, index of this device's block) for a 2-D spec on a device at mesh `coords`."""
    parsed = parse_spec(spec)
    splits, index = [], []
    for _, axes in parsed.dims:
        n, i = 1, 0
        for a in axes:
            n, i = n * sizes[a], i * sizes[a] + coords[a]
        splits.append(n)
        index.append(i)
    return (splits[0], splits[1]), (index[0], index[1])


_CHAIN_HEIGHT = 2.2  # in: the tallest array of the layer chain
_CHAIN_GAP = 0.7  # in: between two arrays, where the operator sits
_CHAIN_WIDTH = 6.4  # in: the narrowest drawing, wide enough for its title
_HAIRLINE = 0.02  # in: the thinnest side drawn, so an array far smaller than the others still shows


@checks(B="count", D="count", F="count")
def layer_chain(B: int = 2**17, D: int = 8192, F: int = 32768) -> Figure:
    """Draw chapter 5's simplified layer as a chain of arrays, In[B, D] · W_in[D, F] → Tmp[B, F] · W_out[F, D]
    → Out[B, D], every box to one linear scale (rows down, columns across), so each box's area is its bf16 size,
    which is written under it. Units: one data unit is one inch of the drawing."""
    shapes = [("In", "B", "D", B, D), ("Win", "D", "F", D, F), ("Tmp", "B", "F", B, F), ("Wout", "F", "D", F, D),
              ("Out", "B", "D", B, D)]
    per_element = _CHAIN_HEIGHT / max(B, D, F)  # in per row or column
    sides = [(max(nc * per_element, _HAIRLINE), max(nr * per_element, _HAIRLINE)) for *_, nr, nc in shapes]
    width = sum(w for w, _ in sides) + _CHAIN_GAP * (len(shapes) + 1)
    fig, ax = figure((max(width, _CHAIN_WIDTH), _CHAIN_HEIGHT + 1.3))
    x = _CHAIN_GAP + max(0.0, _CHAIN_WIDTH - width) / 2
    for i, ((name, r, c, nr, nc), (w, h)) in enumerate(zip(shapes, sides)):
        _block(ax, x, -h / 2, w, h, (1, 1), None, _ARRAY_COLORS[name])
        label = {"Win": "W_in", "Wout": "W_out"}.get(name, name)
        ax.text(x + w / 2, h / 2 + 0.06, f"{label}[{r}, {c}]", ha="center", va="bottom", fontsize=9)
        ax.text(x + w / 2, -h / 2 - 0.06, fmt_bytes(2 * nr * nc), ha="center", va="top", fontsize=8, color="#444")
        if i < len(shapes) - 1:
            ax.text(x + w + _CHAIN_GAP / 2, 0, "·→"[i % 2], ha="center", va="center", fontsize=16)
        x += w + _CHAIN_GAP
    ax.set_xlim(0, max(width, _CHAIN_WIDTH))
    ax.set_ylim(-_CHAIN_HEIGHT / 2 - 0.35, _CHAIN_HEIGHT / 2 + 0.35)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"One layer as two matmuls (bf16, B = {B}, D = {D}, F = {F})\n"
                 "every area to scale: weights blue, activations green, Tmp purple")
    return fig


@checks(B="count", D="count", F="count")
def layout(strategy: str, B: int = 2**17, D: int = 8192, F: int = 32768, chip: Chip | str = "v5p") -> Figure:
    """Draw which shard of In, W_in, W_out and the optimizer state each of four devices holds under `strategy`
    (DP, FSDP, TP on a 4-chip axis; FSDP + TP on 2 × 2), with each pass's collectives listed below, read off
    `pass_collectives` for these shapes."""
    if strategy not in LAYOUTS:
        raise ValueError(f"strategy={strategy!r}; allowed: {list(LAYOUTS)}")
    sizes = _AXIS_SIZES[strategy]
    mesh = TpuMesh(get_chip(chip).name, **sizes)
    devices = [dict(zip(sizes, idx)) for idx in np.ndindex(*sizes.values())]
    specs = dict(LAYOUTS[strategy])
    specs["opt"] = specs["Win"].replace("Win", "opt") if strategy != "dp" else "opt[D, F]"
    rows = [("In", "In"), ("Win", "W_in"), ("Wout", "W_out"), ("opt", "Adam state of W_in")]
    fig, ax = figure((7.4, 6.6))  # the text column: the collective lists stay at 8 pt once shown
    for d, coords in enumerate(devices):
        x0 = d * 2.5
        name = ", ".join(f"{a}={i}" for a, i in coords.items())
        ax.text(x0 + 1.0, 4.75, f"device {d} ({name})", ha="center", fontsize=9, weight="bold")
        for r, (key, label) in enumerate(rows):
            splits, held = _held(specs[key], coords, sizes)
            y = 3.6 - r * 1.1
            _block(ax, x0 + 0.25, y, 1.5, 0.8, splits, held, _ARRAY_COLORS[key])
            if d == 0:
                ax.text(-0.1, y + 0.4, f"{label}\n{specs[key].split('[', 1)[1][:-1]}", ha="right", va="center",
                        fontsize=8)
    transfers = pass_collectives(strategy, mesh, B, D, F)
    width = 2.5 * len(devices)
    for i, pass_ in enumerate(("forward", "backward")):
        items = [t for t in transfers if t.pass_ == pass_]
        x = -1.6 + i * (width + 1.6) / 2
        total = fmt_bytes(sum(t.charged for t in items)) if items else "0 B"
        ax.text(x, -0.2, f"{pass_} pass: {total}", fontsize=9, weight="bold", va="top")
        for j, t in enumerate(items or [None]):
            line = ("no collective" if t is None else
                    f"{_KIND_NAMES[t.kind]} over {''.join(t.axes)} of {t.array}: "
                    + ("reused, gathered earlier" if t.reused else fmt_bytes(t.charged)))
            ax.text(x, -0.65 - 0.38 * j, line, fontsize=8, va="top",
                    color="#999" if t is not None and t.reused else "#000")
    ax.set_xlim(-1.7, width)
    ax.set_ylim(-3.0, 5.0)
    ax.axis("off")
    ax.set_title(f"{STRATEGY_LABELS[strategy]}: the shard each device holds (coloured), and the collectives\n"
                 f"of each pass (B = {B}, D = {D}, F = {F}, bf16; AllReduce charged twice its array)", fontsize=10)
    return fig


@checks(B="count", D="count", F="count",
        mesh_of=lambda name, value: {check_choice(name, k, LAYOUTS): is_a(TpuMesh)(f"{name}[{k!r}]", m)
                                     for k, m in is_a(dict)(name, value).items()} and value)
def pass_bytes(mesh_of: dict[str, TpuMesh], B: int, D: int, F: int) -> Figure:
    """Stacked bars of the bytes each strategy's collectives are charged in the forward and the backward pass
    (AllGather, ReduceScatter, AllReduce at twice its array), from `pass_collectives` (gathers kept: TP's In)."""
    fig, ax = figure((8.0, 4.2))
    labels, x = [], 0
    for strategy, mesh in mesh_of.items():
        transfers = pass_collectives(strategy, mesh, B, D, F)
        for pass_ in ("forward", "backward"):
            bottom = 0.0
            for kind, color in _KIND_COLORS.items():
                gb = sum(t.charged for t in transfers if t.pass_ == pass_ and t.kind == kind) / 1e9
                if gb:
                    ax.bar(x, gb, bottom=bottom, color=color, width=0.8,
                           label=_KIND_NAMES[kind] if _KIND_NAMES[kind] not in ax.get_legend_handles_labels()[1]
                           else None)
                    bottom += gb
            ax.text(x, bottom, f"{bottom:.2g}", ha="center", va="bottom", fontsize=8)
            labels.append(f"{STRATEGY_LABELS[strategy]}\n{'fwd' if pass_ == 'forward' else 'bwd'}")
            x += 1
        x += 0.5
    ticks = [i + 0.5 * (i // 2) for i in range(len(labels))]
    ax.set_xticks(ticks, labels, fontsize=8)
    finish(ax, "strategy and pass", "GB per layer (AllReduce ×2)",
           f"Collective bytes per pass, B = {B}, D = {D}, F = {F} (bf16)", "upper left")
    ax.grid(False)
    return fig


@checks(N="count", D="count", F="count", M_X="count", M_Y="count", batches="?sizes")
def comms_ratio(chip: Chip | str = "v5p", N: int = 64, D: int = 8192, F: int = 32768, M_X: int = 2, M_Y: int = 1,
                batches: Sequence[float] | None = None) -> Figure:
    """Plot T_math / T_comms of one layer against the global batch for FSDP, TP and FSDP + TP on N chips, with
    the ratio-1 line: above it a strategy hides its communication (ch. 5's small-slice picture)."""
    bs = list(batches) if batches is not None else list(np.geomspace(1e3, 1e7, 61))
    curves = strategy_curves(chip, N, D, F, M_X, M_Y, bs)
    fig, ax = figure((7.5, 4.5))
    colors = {"fsdp": "#ff7f0e", "tp": "#2ca02c", "fsdp_tp": "#d62728"}
    for s, color in colors.items():
        ratio = np.array(curves.t_math) / np.array(curves.t_comms[s])
        ax.loglog(bs, ratio, color=color, lw=1.8, label=STRATEGY_LABELS[s])
        at = curves.crossovers[s]
        if at is not None:
            ax.plot(at, 1.0, "o", color=color)
            ax.annotate(f"B ≈ {at:,.0f}", (at, 1.0), textcoords="offset points",
                        xytext=(4, -14 if s == "fsdp" else 6), fontsize=8, color=color)
    ax.axhline(1.0, color="black", lw=1, ls="--", label="T_math = T_comms")
    finish(ax, "global batch B (tokens)", "T_math / T_comms (above 1: compute-bound)",
           f"FLOPs-to-comms ratio per layer on {N} × {get_chip(chip).name}, D = {D}, F = {F}", "upper left")
    return fig
