"""Figures for the training chapter: communication time of each parallelism strategy against the batch, training
memory per chip, and a pipeline schedule.

The first picture draws what `training.curves.strategy_curves` returns; the chapter's explorer draws the same
curves as SVG instead of matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..hardware.chips import Chip, chip_names, get_chip
from ..kinds import mapping_with
from ..training.curves import strategy_curves
from ..training.footprint import Memory, parts_per_chip
from ..training.pipeline import idle_fraction
from ..units import check_choice, check_positive, checks, is_a
from .base import COLUMN_WIDTH, ROLES, SIZES, figure, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["STRATEGY_LABELS", "tokens", "strategy_times", "memory_bars", "pipeline"]

STRATEGY_LABELS = {"dp": "DP", "fsdp": "FSDP", "tp": "TP", "fsdp_tp": "FSDP + TP"}
_COLORS = {"dp": "#1f77b4", "fsdp": "#ff7f0e", "tp": "#2ca02c", "fsdp_tp": "#d62728"}
_LABEL_OFFSETS = {"dp": (8, -16), "fsdp": (-12, 10), "tp": (8, -16), "fsdp_tp": (8, -16)}
_MEMORY_PARTS = {"params": "#4e79a7", "grads": "#76b7b2", "optimizer": "#f28e2b", "activations": "#e15759"}


@checks(n="nonneg")
def tokens(n: float) -> str:
    """Format a token count the way the text quotes it: '650k', '3.5M'."""
    return f"{n / 1e6:.2g}M" if n >= 1e6 else f"{n / 1e3:.3g}k" if n >= 1e3 else f"{n:.3g}"


@checks(N="count", D="size", F="size", M_X="count", M_Y="count", batches="?sizes")
def strategy_times(chip: Chip | str = "v5p", N: int = 4096, D: float = 8192, F: float = 32768, M_X: int = 2,
                   M_Y: int = 1, batches: Sequence[float] | None = None) -> Figure:
    """Plot per-layer compute time and each strategy's communication time against the global batch B
    (log-log), with the batch where each strategy turns compute-bound marked."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    curves = strategy_curves(chip, N, D, F, M_X, M_Y, batches)
    name = get_chip(chip).name
    fig, ax = figure((7.5, 4.8))
    ax.loglog(curves.batches, curves.t_math, color="black", lw=2.5, label="compute (every strategy)")
    for s, label in STRATEGY_LABELS.items():
        ax.loglog(curves.batches, curves.t_comms[s], color=_COLORS[s], lw=1.8, ls="--", label=f"{label} comms")
        at = curves.crossovers[s]
        if at is not None:
            t = float(np.interp(math.log(at), np.log(curves.batches), curves.t_math))
            ax.plot(at, t, "o", color=_COLORS[s], ms=7)
            ax.annotate(f"{label}: B ≈ {tokens(at)}", (at, t), textcoords="offset points",
                        xytext=_LABEL_OFFSETS[s], ha="right" if _LABEL_OFFSETS[s][0] < 0 else "left", fontsize=8,
                        color=_COLORS[s])
    finish(ax, "global batch B (tokens)", "time per layer, forward + backward (s)",
           f"Compute vs communication per strategy: {N} × {name}, D = {D:g}, F = {F:g}", "upper left")
    return fig


def _hbm_bytes(hbm: float | str | Chip | None) -> tuple[float | None, str]:
    if hbm is None:
        return None, ""
    if isinstance(hbm, (int, float)):
        return float(hbm), "HBM"
    chip = get_chip(hbm)
    return chip.hbm_bytes, f"{chip.name} HBM"


@checks(memories=mapping_with(is_a(Memory), "training.Memory"), replicated="names",
        hbm=lambda name, v: v if v is None or isinstance(v, Chip) else (
            check_choice(name, v, chip_names()) if isinstance(v, str) else check_positive(name, v)))
def memory_bars(memories: Mapping[str, Memory], hbm: float | str | Chip | None = None,
                replicated: Sequence[str] = ()) -> Figure:
    """Draw one stacked horizontal bar per entry of `memories`: parameters, gradients, optimizer state and
    saved activations per chip, in GB, with a chip's HBM marked. Entries named in `replicated` keep their
    parameters and optimizer state whole on every chip (pure DP); the rest are split evenly (FSDP)."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    if not memories:
        raise ValueError("memories must name at least one Memory")
    for i, name in enumerate(replicated):
        check_choice(f"replicated[{i}]", name, memories)
    fig, ax = figure((7.5, 0.7 * len(memories) + 1.8))
    labels = list(memories)
    ys = np.arange(len(labels))[::-1]
    left = np.zeros(len(labels))
    parts = [parts_per_chip(memories[k], k in replicated) for k in labels]
    for part, color in _MEMORY_PARTS.items():
        gb = np.array([p[part] / 1e9 for p in parts])
        if gb.any():
            ax.barh(ys, gb, left=left, color=color, label=part)
        left += gb
    for y, total in zip(ys, left):
        ax.text(total, y, f" {total:.3g} GB", va="center", fontsize=9)
    limit, name = _hbm_bytes(hbm)
    if limit:
        ax.axvline(limit / 1e9, color="black", ls="--", lw=1.2, label=f"{name}: {limit / 1e9:.0f} GB")
    ax.set_yticks(ys, labels)
    ax.set_xlabel("memory per chip (GB)")
    ax.set_title("Training memory per chip")
    ax.legend(fontsize=8, loc="lower right")
    return fig


_PASSES = {"F": ("forward", ROLES["A"]), "B": ("backward", ROLES["B"]), "W": ("weight gradient", ROLES["C"])}


@checks(grid=is_a(list, tuple))
def pipeline(grid: Sequence[Sequence[str]], title: str = "") -> Figure:
    """Draw a pipeline schedule (from `training.pipeline_schedule` or `interleaved_schedule`): one row per stage,
    one column per time slot, forward passes in blue, backward passes in orange, weight-gradient halves ('W',
    zero-bubble schedules) in green, idle slots (the bubble) hatched grey. Each slot shows its microbatch; an
    interleaved label 'F3.1' (chunk 1) is drawn in the pale shade of its pass, chunk 0 in the full one."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    if not grid or not grid[0]:
        raise ValueError("grid must have at least one stage and one time slot")
    stages, slots = len(grid), len(grid[0])
    width = min(COLUMN_WIDTH - 0.2, max(6.0, 0.32 * slots + 1.5))  # inches: the schedule fits the text column
    fig, ax = figure((width, 0.45 * stages + 1.9))
    slot_pt = (width - 1.3) / slots * 72  # a slot's width in points, for the labels that fit in it
    chunks: set[tuple[str, int]] = set()
    for s, row in enumerate(grid):
        for t, cell in enumerate(row):
            kind, microbatch, chunk = _parse_slot(cell)
            chunks.add((kind, chunk))
            face = _shade(_PASSES[kind][1], chunk) if kind else "#eeeeee"
            ax.add_patch(_rect((t, stages - 1 - s), face, hatch="" if kind else "///"))
            if kind and 0.62 * SIZES["small"] * len(microbatch) < slot_pt:
                ax.text(t + 0.5, stages - 0.5 - s, microbatch, ha="center", va="center",
                        color="white" if chunk == 0 else "black", fontsize=SIZES["small"])
    _pipeline_key(ax, sorted((c for c in chunks if c[0]), key=lambda c: ("FBW".index(c[0]), c[1])))
    ax.set_xlim(0, slots)
    ax.set_ylim(0, stages)
    ax.set_xticks(range(0, slots + 1, max(1, slots // 12)))
    ax.set_yticks(np.arange(stages) + 0.5, [f"stage {s}" for s in range(stages)][::-1])
    ax.set_xlabel("time slot (one microbatch through one stage)")
    ax.set_title(title or f"Pipeline schedule: {stages} stages, idle fraction {idle_fraction(grid):.0%}")
    return fig


def _parse_slot(cell: str) -> tuple[str, str, int]:
    """Split a slot label 'F3' or 'F3.1' into (pass, microbatch, chunk); an idle slot is ('', '', 0)."""
    if not cell:
        return "", "", 0
    if cell[0] not in _PASSES:
        raise ValueError(f"grid slot {cell!r} must start with one of {list(_PASSES)}")
    microbatch, _, chunk = cell[1:].partition(".")
    return cell[0], microbatch, int(chunk or 0)


def _shade(colour: str, chunk: int) -> tuple[float, float, float]:
    """Return `colour` for chunk 0 and ever paler mixes with white for later chunks."""
    from matplotlib.colors import to_rgb

    mix = 1 - 0.55 ** chunk
    return tuple(c + (1 - c) * mix for c in to_rgb(colour))  # type: ignore[return-value]


def _pipeline_key(ax, shown: list[tuple[str, int]]) -> None:
    """A key under the axes: one swatch per (pass, chunk) drawn, and the idle slot."""
    from matplotlib.patches import Patch

    many = any(chunk for _, chunk in shown)
    handles = [Patch(facecolor=_shade(_PASSES[k][1], c), label=_PASSES[k][0] + (f", chunk {c}" if many else ""))
               for k, c in shown] + [Patch(facecolor="#eeeeee", hatch="///", label="idle")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=min(len(handles), 3),
              frameon=False)


def _rect(corner: tuple[float, float], face: str, hatch: str):
    from matplotlib.patches import Rectangle

    return Rectangle(corner, 1, 1, facecolor=face, edgecolor="white", hatch=hatch, lw=1)
