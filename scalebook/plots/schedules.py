"""Pipeline schedules that `training.pipeline_schedule` does not lay out yet: interleaved stages and a zero-bubble
schedule that splits each backward into its input-gradient (B) and weight-gradient (W) halves, placed by one
greedy list scheduler, and drawn with `plots.training.pipeline`.

Pure Python; the grids use `pipeline_schedule`'s labels ('F3', 'B3', '' idle) plus 'W3' for a weight gradient and a
'.c' suffix for chunk c of an interleaved device ('F3.1').
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..training import idle_fraction
from .training import pipeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["interleaved_schedule", "zero_bubble_schedule", "greedy_schedule", "schedule_figure"]

Op = tuple[str, int, int]  # (kind 'F' | 'B' | 'W', microbatch, virtual stage)


def _check(stages: int, microbatches: int, virtual: int = 1) -> None:
    for name, value in (("stages", stages), ("microbatches", microbatches), ("virtual", virtual)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive integer")


def greedy_schedule(devices: int, ops: list[Op], device_of: Callable[[Op], int], needs: Callable[[Op], list[Op]],
                    priority: Callable[[Op], tuple], may_start: Callable[[Op, dict], bool] | None = None
                    ) -> list[list[Op | None]]:
    """Place unit-time `ops` on `devices` slot by slot: at each slot every device runs, among its ops whose
    `needs` finished in an earlier slot (and that `may_start` allows), the one of lowest `priority`."""
    done: dict[Op, int] = {}
    grid: list[list[Op | None]] = [[] for _ in range(devices)]
    waiting = set(ops)
    t = 0
    while waiting:
        started = []
        for d in range(devices):
            ready = [op for op in waiting if device_of(op) == d and all(done.get(n, t) < t for n in needs(op))
                     and (may_start is None or may_start(op, done))]
            op = min(ready, key=priority, default=None)
            grid[d].append(op)
            if op is not None:
                started.append(op)
                waiting.discard(op)
        for op in started:
            done[op] = t
        t += 1
        if t > 10 * len(ops) + 10:
            raise RuntimeError("schedule did not converge: an op's dependencies can never be met")
    return grid


def _labels(grid: list[list[Op | None]], virtual: int) -> list[list[str]]:
    """Turn a grid of ops into `pipeline_schedule`-style labels, trimmed to the last busy slot."""
    width = max(max((i for i, op in enumerate(row) if op), default=0) for row in grid) + 1
    return [[("" if op is None else f"{op[0]}{op[1]}" + (f".{op[2] // len(grid)}" if virtual > 1 else ""))
             for op in row[:width]] for row in grid]


def interleaved_schedule(stages: int, microbatches: int, virtual: int = 2) -> list[list[str]]:
    """Return the grid of an interleaved GPipe-style schedule: device d holds chunks d, d + P, ... of the
    P·v virtual stages, each chunk's work one slot; forwards in microbatch groups of P, then backwards."""
    _check(stages, microbatches, virtual)
    P, S = stages, stages * virtual
    ops = [(k, m, s) for m in range(microbatches) for s in range(S) for k in "FB"]

    def needs(op: Op) -> list[Op]:
        k, m, s = op
        if k == "F":
            return [("F", m, s - 1)] if s else []
        return [("B", m, s + 1)] if s < S - 1 else [("F", m, s)]

    def priority(op: Op) -> tuple:
        k, m, s = op
        group = m // P
        return (k == "B", group, s // P if k == "F" else -(s // P), m)

    return _labels(greedy_schedule(P, ops, lambda op: op[2] % P, needs, priority), virtual)


def zero_bubble_schedule(stages: int, microbatches: int) -> list[list[str]]:
    """Return the grid of a zero-bubble-style schedule: 1F1B's order (at most P - s microbatches in flight on
    stage s), with each backward split into B (input gradient, passed on at once) and W (weight gradient,
    needed only by the optimizer), so W's fill the slots where 1F1B idles."""
    _check(stages, microbatches)
    P = stages
    ops = [(k, m, s) for m in range(microbatches) for s in range(P) for k in "FBW"]

    def needs(op: Op) -> list[Op]:
        k, m, s = op
        if k == "F":
            return [("F", m, s - 1)] if s else []
        if k == "B":
            return [("B", m, s + 1)] if s < P - 1 else [("F", m, s)]
        return [("B", m, s)]

    def in_flight_ok(op: Op, done: dict) -> bool:
        k, _, s = op
        if k != "F":
            return True
        forwards = sum(1 for o in done if o[0] == "F" and o[2] == s)
        backwards = sum(1 for o in done if o[0] == "B" and o[2] == s)
        return forwards - backwards < P - s

    return _labels(greedy_schedule(P, ops, lambda op: op[2], needs, lambda op: ("BFW".index(op[0]), op[1]),
                                   in_flight_ok), 1)


def schedule_figure(grid: list[list[str]], title: str) -> Figure:
    """Draw a grid from this module (or `training.pipeline_schedule`) with its idle fraction in the title."""
    return pipeline(grid, title=f"{title}: idle fraction {idle_fraction(grid):.0%}")
