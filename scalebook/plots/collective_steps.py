"""Collectives drawn step by step from the ring schedule that prices them (`rings.ring_schedule`): on a
2-D torus (one ring phase per axis), the four collectives side by side before and after, a collective
matmul whose partial sums travel round the ring while the next block is multiplied, and its timeline against the
collective-then-matmul order (`overlap.CollectiveMatmul.schedule`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..overlap import CollectiveMatmul
from ..rings import Held, RingStep, ring_schedule, torus_schedule
from ..units import checks, fmt_time, is_a
from .base import figure, legend_below, time_axis
from .diagram import arrow, box, panels
from .sharding import PALETTE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["torus_steps", "collectives_summary", "collective_matmul",
           "overlap_timeline"]

@checks(X="count", Y="count")
def torus_steps(X: int = 4, Y: int = 4, kind: str = "all_gather", title: str | None = None) -> Figure:
    """Draw a two-axis collective on an X × Y torus step by step: one panel per step, each device a small grid of
    the X·Y pieces of the array, coloured where it holds them (pale: a partial sum still missing contributions), as
    `rings.torus_schedule` returns them."""
    states = torus_schedule(X, Y, kind)
    rows = max(X, *(r + 1 for _, held in states for pieces in held.values() for r, _ in pieces))
    ncols = min(3, len(states))  # three panels a row fit the text column
    fig, axs = panels(len(states), ncols, (2.45, 2.7), X * (Y + 1), Y * (rows + 1) + 0.2,
                      title or f"{kind} over both axes of a {X}x{Y} torus: {len(states) - 1} steps,\n"
                               f"one ring phase per axis (X·Y = {X * Y} pieces)")
    for ax, (label, held) in zip(axs, states):
        _draw_torus_state(ax, held, rows, Y)
        ax.set_title(label, fontsize=8)
    return fig


def to_rgb(colour: str) -> tuple[float, float, float]:
    """Return a colour as an (r, g, b) tuple of fractions (so that each square can carry its own alpha)."""
    from matplotlib.colors import to_rgb as rgb

    return rgb(colour)


def _draw_torus_state(ax, held: Held, rows: int, Y: int) -> None:
    """Draw every device (x, y) as a frame of `rows` × Y slots, each held piece a square in its colour."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    frames, squares, colours = [], [], []
    for (x, y), pieces in held.items():
        ox, oy = x * (Y + 1), (Y - 1 - y) * (rows + 1)
        frames.append(Rectangle((ox + 0.3, oy + 0.1), Y + 0.4, rows + 0.4))
        for (r, c), (colour, fill) in pieces.items():
            if fill > 0:
                squares.append(Rectangle((ox + 0.5 + c, oy + 0.3 + (rows - 1 - r)), 0.95, 0.95))
                colours.append((*to_rgb(PALETTE[colour % len(PALETTE)]), 0.15 + 0.85 * fill))
    ax.add_collection(PatchCollection(frames, facecolors="none", edgecolors="0.5", linewidths=0.6))
    ax.add_collection(PatchCollection(squares, facecolors=colours, edgecolors="none"))


def _draw_ring_devices(ax, state: RingStep, n: int, y0: float, kind: str) -> None:
    from matplotlib.patches import Rectangle

    for i, pieces in enumerate(state.held):
        box(ax, i * 1.3 + 0.1, y0, 1.1, n * 0.32 + 0.2, "", "white", edge="0.5", round_=False)
        ax.text(i * 1.3 + 0.65, y0 - 0.18, f"dev {i}", ha="center", va="top", fontsize=8)
        for k, p in enumerate(pieces):
            row = p.chunk if kind != "all_to_all" else k
            ax.add_patch(Rectangle((i * 1.3 + 0.2, y0 + 0.1 + (n - 1 - row) * 0.32 if kind != "all_to_all"
                                    else y0 + 0.1 + (n * n - 1 - k) * 0.32 / n), 0.9,
                                   0.3 if kind != "all_to_all" else 0.3 / n,
                                   facecolor=PALETTE[p.chunk % len(PALETTE)], alpha=0.2 + 0.8 * p.fill,
                                   edgecolor="none", zorder=3))


@checks(n="count")
def collectives_summary(n: int = 3, title: str | None = None) -> Figure:
    """Draw AllGather, ReduceScatter and AllToAll over `n` devices before and after (the first and last states of
    their ring schedules): what each device holds going in and coming out."""
    kinds = {"all_gather": "AllGather", "reduce_scatter": "ReduceScatter (sums)", "all_to_all": "AllToAll"}
    width = n * 1.3 + 0.2
    fig, axs = panels(2 * len(kinds), 2, (0.55 * width + 1.2, 0.35 * n + 1.3), width, n * 0.32 + 0.7,
                      title or f"Three collectives on {n} devices, before (left) and after (right)\n"
                               f"colour: which part of the array (AllToAll: its destination); pale: not yet summed")
    for row, (kind, name) in enumerate(kinds.items()):
        states = ring_schedule(n, kind)
        for col, state in enumerate((states[0], states[-1])):
            ax = axs[2 * row + col]
            ax.set_ylim(-0.45, n * 0.32 + 0.45)
            _draw_ring_devices(ax, state, n, 0.1, kind)
            ax.set_title(f"{name}: {'before' if col == 0 else f'after {state.step} ring steps'}", fontsize=8)
    return fig


@checks(n="count")
def collective_matmul(n: int = 4, title: str | None = None) -> Figure:
    """Draw a reduce-scatter collective matmul over a one-way ring of `n` devices: at step s device i multiplies its
    block for output chunk c = (i − 1 − s) mod n and adds it to the partial sum of chunk c that just arrived, then
    passes the sum on; each send overlaps the next multiply, and after n − 1 sends device i holds chunk i.

    The partial sums follow `ring_schedule(n, 'reduce_scatter', bidirectional=False)`, the same schedule as a
    plain ReduceScatter, with a matmul slotted into every step.
    """
    final = ring_schedule(n, "reduce_scatter", bidirectional=False)[-1]
    steps, pitch, w = n, 2.5, 1.9  # a step's column and its box, wide enough for the label; the sends cross the gap
    fig, axs = panels(1, 1, (7.4, 0.6 * n + 1.2), pitch * steps + 0.8, n + 0.9,
                      title or f"Collective matmul on {n} devices: y = Σᵢ Wᵢ xᵢ\neach partial sum moves one hop per "
                               f"step while the next block is multiplied")
    ax = axs[0]
    ax.set_ylim(-0.6, n + 0.9)
    for s in range(steps):
        ax.text(0.6 + w / 2 + pitch * s, n + 0.45, f"step {s + 1}", ha="center", fontsize=8)
    for i in range(n):
        y = n - 1 - i
        ax.text(0.05, y + 0.4, f"dev {i}", fontsize=8, va="center")
        for s in range(steps):
            c = (i - 1 - s) % n
            last = s == steps - 1
            done = next(p for p in final.held[i] if p.chunk == i).fill * n if last else 0
            label = f"+= W{c},{i}·x{i}" + (f"\ny{i} done: {done:.0f}/{n} terms" if last else "")
            box(ax, 0.6 + pitch * s, y + 0.05, w, 0.75, label, PALETTE[c % len(PALETTE)], 6.5,
                alpha=0.3 + 0.6 * (s + 1) / steps)
            if not last:
                target = n - 1 - (i + 1) % n
                arrow(ax, (0.6 + w + pitch * s, y + 0.4), (0.6 + pitch * (s + 1), target + 0.45), colour="#c0392b",
                      lw=0.9)
    ax.text(0.05, -0.45, "red: the partial sum goes to the next device (the last wraps to the first)\nwhile that "
                         "device multiplies its next block", fontsize=8, va="center")
    return fig


@checks(ring=is_a(CollectiveMatmul))
def overlap_timeline(ring: CollectiveMatmul, title: str | None = None) -> Figure:
    """Draw two timelines of one sharded matmul (µs): the collective then the matmul, and the collective matmul's
    ring, each lane (link, compute) a row of bars numbered by ring step, with the max(T_math, T_comms) bound."""
    us, n = 1e6, ring.steps
    send = ring.plan.t_comms / (n - 1)  # the plain collective, drawn as its n − 1 ring steps
    # AllGather: the whole collective, then the matmul; ReduceScatter: the matmul, then its partial sums go round
    link_start, compute_start = (0.0, ring.plan.t_comms) if ring.kind == "all_gather" else (ring.plan.t_math, 0.0)
    sequential = [("link", k, link_start + k * send, link_start + (k + 1) * send) for k in range(n - 1)]
    sequential += [("compute", k, compute_start + k * ring.t_step, compute_start + (k + 1) * ring.t_step)
                   for k in range(n)]
    rows = {"sequential: link": 3, "sequential: compute": 2, "collective matmul: link": 1,
            "collective matmul: compute": 0}
    fig, ax = figure((7.4, 3.4))
    for prefix, bars in (("sequential", sequential), ("collective matmul", ring.schedule())):
        for lane, k, start, end in bars:
            y = rows[f"{prefix}: {lane}"]
            colour = "#d62728" if lane == "link" else PALETTE[k % len(PALETTE)]
            ax.barh(y, (end - start) * us, left=start * us, height=0.6, color=colour, alpha=0.85, edgecolor="white")
            ax.text((start + end) / 2 * us, y, str(k + 1), ha="center", va="center", fontsize=8, color="white")
    ax.axvline(ring.bound * us, color="#2ca02c", ls="--", lw=1,
               label=f"bound max(T_math, T_comms): {fmt_time(ring.bound)}")
    ax.axvline(ring.time * us, color="#1f77b4", ls="-", lw=1, label=f"collective matmul: {fmt_time(ring.time)}")
    ax.axvline(ring.sequential * us, color="#7f7f7f", ls=":", lw=1,
               label=f"sequential: {fmt_time(ring.sequential)}")
    ax.set_yticks(list(rows.values()), list(rows))
    ax.set_ylim(-0.6, 4.4)
    legend_below(ax)
    time_axis(ax, "time (µs)", title or f"{ring.plan.expr} on {ring.steps} devices:\nred bars are sends of one "
                                        f"block,\ncoloured bars matmul blocks (numbers: ring step)")
    return fig
