"""Pipeline parallelism: the schedules (GPipe, 1F1B, interleaved), their bubbles and the stage-to-stage sends.

P stages each hold 1/P of the layers; a batch is cut into M microbatches that flow through the stages. The
bubble is the fraction of a step a stage sits idle, (P-1)/(v·M + P - 1) with v virtual stages per device
(How To Scale Your Model, ch. 5 and 12). `pipeline_schedule` lays the work out on a grid for drawing.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..hardware.chips import Chip, get_chip
from ..hardware.gpu import GpuCluster
from ..units import check_int, checks, dtype_bytes, is_a

__all__ = ["PIPELINE_SCHEDULES", "pipeline_bubble", "pipeline_schedule", "idle_fraction", "pipeline_comms",
           "greedy_schedule", "interleaved_schedule", "megatron_order", "zero_bubble_schedule"]

PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved")


@checks(stages="count", microbatches="count", virtual="count")
def pipeline_bubble(stages: int, microbatches: int, schedule: str = "1f1b", virtual: int = 1) -> float:
    """Return the fraction of a pipelined step that stages sit idle: (P-1) / (v·M + P - 1).

    GPipe and 1F1B idle equally, (P-1)/(M+P-1) for P stages and M microbatches; 1F1B only keeps fewer
    microbatches' activations alive. The interleaved schedule gives each device `virtual` chunks of layers,
    which shrinks the bubble v-fold at the cost of v times more stage-to-stage sends.
    """
    if schedule not in PIPELINE_SCHEDULES:
        raise ValueError(f"schedule={schedule!r}; allowed: {list(PIPELINE_SCHEDULES)}")
    stages, microbatches, virtual = (check_int(name, value) for name, value in
                                     (("stages", stages), ("microbatches", microbatches), ("virtual", virtual)))
    v = virtual if schedule == "interleaved" else 1
    return (stages - 1) / (v * microbatches + stages - 1)


MAX_DRAWN = 1024  # the most stages, or microbatches, a drawn schedule holds (its grid grows as their product)


@checks(stages=lambda n, v: check_int(n, v, 1, MAX_DRAWN), microbatches=lambda n, v: check_int(n, v, 1, MAX_DRAWN))
def pipeline_schedule(stages: int, microbatches: int, schedule: str = "gpipe") -> list[list[str]]:
    """Return a grid [stage][time slot] of work labels ('F3' = forward of microbatch 3, 'B3' backward, '' idle).

    Each slot is one microbatch through one stage; a backward pass takes one slot like a forward (a drawing
    aid, not a timing model). GPipe runs every forward, then every backward; 1F1B starts backwards as soon as
    the last stage finishes a forward, so at most `stages` microbatches are in flight.
    """
    if schedule not in ("gpipe", "1f1b"):
        raise ValueError(f"schedule={schedule!r}; allowed: gpipe, 1f1b")
    pipeline_bubble(stages, microbatches, schedule)  # validates the counts
    P, M = stages, microbatches
    grid = [[""] * (2 * (M + P - 1)) for _ in range(P)]
    if schedule == "gpipe":
        for s in range(P):
            for m in range(M):
                grid[s][s + m] = f"F{m}"
                grid[s][M + P - 1 + (P - 1 - s) + m] = f"B{m}"
        return grid
    order = []  # per stage: warm-up forwards, then one backward, one forward, ...
    for s in range(P):
        warm = min(P - s, M)
        seq = [("F", m) for m in range(warm)]
        for b in range(M):
            seq.append(("B", b))
            if warm + b < M:
                seq.append(("F", warm + b))
        order.append(seq)
    done = {}  # (kind, stage, microbatch) -> slot
    free, pos = [0] * P, [0] * P
    while any(pos[s] < len(order[s]) for s in range(P)):
        for s in range(P):
            if pos[s] == len(order[s]):
                continue
            kind, m = order[s][pos[s]]
            needs = ("F", s - 1, m) if kind == "F" else ("B", s + 1, m) if s < P - 1 else ("F", s, m)
            if kind == "F" and s == 0:
                ready = 0
            elif needs in done:
                ready = done[needs] + 1
            else:
                continue
            slot = max(free[s], ready)
            for row in grid:
                row.extend([""] * (slot + 1 - len(row)))
            grid[s][slot] = f"{kind}{m}"
            done[(kind, s, m)], free[s] = slot, slot + 1
            pos[s] += 1
    width = max(max((i for i, c in enumerate(row) if c), default=0) for row in grid) + 1
    return [row[:width] for row in grid]


def idle_fraction(grid: list[list[str]]) -> float:
    """Return the fraction of empty (idle) slots in a pipeline grid."""
    if isinstance(grid, str) or not isinstance(grid, list) or not all(isinstance(row, list) for row in grid):
        raise ValueError(f"grid={grid!r} must be a list of rows of slot labels (pipeline_schedule's result)")
    cells = [c for row in grid for c in row]
    if not cells:
        raise ValueError(f"grid={grid!r} has no slots")
    return cells.count("") / len(cells)


Op = tuple[str, int, int]  # (kind 'F' | 'B' | 'W', microbatch, virtual stage)


# The list scheduler's time grows as (slots x devices x ops): drawn schedules stay at most this many microbatch-
# stage pairs (16 stages x 32 microbatches, or 16 x 16 x 2 chunks, take about 0.3 s).
MAX_SCHEDULED = 512


def _check_ops(**counts: int) -> None:
    if math.prod(counts.values()) > MAX_SCHEDULED:
        named = " × ".join(f"{k}={v}" for k, v in counts.items())
        raise ValueError(f"{named} is more than the {MAX_SCHEDULED} microbatch-stage pairs a drawn schedule takes")


@checks(devices=lambda n, v: check_int(n, v, 1, MAX_DRAWN), ops=is_a(list, tuple), device_of=is_a(Callable),
        needs=is_a(Callable), priority=is_a(Callable), may_start=is_a(Callable, type(None)))
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
            raise ValueError("needs: the schedule did not converge; some op's dependencies can never be met")
    return grid


def _labels(grid: list[list[Op | None]], virtual: int) -> list[list[str]]:
    """Turn a grid of ops into `pipeline_schedule`-style labels, trimmed to the last busy slot."""
    width = max(max((i for i, op in enumerate(row) if op), default=0) for row in grid) + 1
    return [[("" if op is None else f"{op[0]}{op[1]}" + (f".{op[2] // len(grid)}" if virtual > 1 else ""))
             for op in row[:width]] for row in grid]


@checks(rank=lambda n, v: check_int(n, v, 0, MAX_DRAWN), stages=lambda n, v: check_int(n, v, 1, MAX_DRAWN),
        microbatches=lambda n, v: check_int(n, v, 1, MAX_DRAWN), virtual=lambda n, v: check_int(n, v, 1, MAX_DRAWN))
def megatron_order(rank: int, stages: int, microbatches: int, virtual: int) -> list[Op]:
    """Return the ops device `rank` runs, in Megatron-LM's interleaved 1F1B order (Narayanan et al., 2021;
    `forward_backward_pipelining_with_interleaving` in Megatron-Core's `pipeline_parallel/schedules.py`).

    The k-th forward runs chunk (k mod P·v) // P of microbatch (k // P·v)·P + k mod P, the k-th backward the
    chunks in reverse; the rank runs min(M·v, 2·(P - rank - 1) + (v - 1)·P) warm-up forwards, then one forward
    and one backward in turn, then the remaining backwards. Ops are (kind, microbatch, virtual stage), the
    virtual stage of chunk c on rank r being c·P + r.
    """
    if rank >= stages:
        raise ValueError(f"rank={rank} must be a pipeline rank below stages={stages}")
    P, v, M = stages, virtual, microbatches
    total = M * v

    def op(kind: str, k: int) -> Op:
        chunk = (k % (P * v)) // P
        chunk = chunk if kind == "F" else v - 1 - chunk
        return kind, (k // (P * v)) * P + k % P, chunk * P + rank

    warm = min(total, 2 * (P - rank - 1) + (v - 1) * P)
    order = [op("F", k) for k in range(warm)]
    for i in range(total - warm):
        order += [op("F", warm + i), op("B", i)]
    return order + [op("B", k) for k in range(total - warm, total)]


def interleaved_schedule(stages: int, microbatches: int, virtual: int = 2) -> list[list[str]]:
    """Return the grid of Megatron's interleaved 1F1B schedule: device d holds chunks d, d + P, ... of the P·v
    virtual stages and runs `megatron_order`, each op one slot, as early as its input allows (a forward needs the
    previous virtual stage's forward, a backward the next one's backward). Labels read 'F3.1': forward of
    microbatch 3 through the device's chunk 1. Megatron needs the microbatches to fill whole groups of P."""
    stages, microbatches, virtual = (check_int(name, value, 1, MAX_DRAWN) for name, value in
                                     (("stages", stages), ("microbatches", microbatches), ("virtual", virtual)))
    if microbatches % stages:
        raise ValueError(f"microbatches={microbatches} must be a multiple of stages={stages} (Megatron's "
                         "interleaved schedule runs microbatches in groups of one per stage)")
    _check_ops(stages=stages, microbatches=microbatches, virtual=virtual)
    S = stages * virtual
    orders = [megatron_order(r, stages, microbatches, virtual) for r in range(stages)]
    done: dict[Op, int] = {}
    grid: list[list[Op | None]] = [[] for _ in range(stages)]
    while any(orders):
        t = len(grid[0])
        for r, order in enumerate(orders):
            kind, m, s = order[0] if order else ("", 0, 0)
            need = (("F", m, s - 1) if s else None) if kind == "F" else (("B", m, s + 1) if s < S - 1 else ("F", m, s))
            ready = bool(order) and (need is None or done.get(need, t) < t)
            grid[r].append(order.pop(0) if ready else None)
        for row in grid:
            if row[t] is not None:
                done[row[t]] = t
    return _labels(grid, virtual)


def zero_bubble_schedule(stages: int, microbatches: int) -> list[list[str]]:
    """Return the grid of a zero-bubble-style schedule: 1F1B's order (at most P - s microbatches in flight on
    stage s), with each backward split into B (input gradient, passed on at once) and W (weight gradient,
    needed only by the optimizer), so W's fill the slots where 1F1B idles."""
    P, microbatches = check_int("stages", stages), check_int("microbatches", microbatches)
    _check_ops(stages=P, microbatches=microbatches)
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


@checks(batch_tokens="size", D="count", stages="count", microbatches="count", dtype="dtype")
def pipeline_comms(batch_tokens: float, D: int, stages: int, microbatches: int, hardware: Chip | str | GpuCluster,
                   dtype: str = "bf16") -> float:
    """Return the seconds of stage-to-stage sends on a pipelined forward pass's critical path (ch. 12).

    Each of the `microbatches` carries batch_tokens / microbatches activations of D values to the next stage;
    the last microbatch leaves the first stage after M - 1 sends and crosses S - 1 boundaries, so the path
    holds M + S - 2 sends: 2·B·D / (W·M) · (M + S - 2) in bf16. A stage is a node on a GPU cluster (its
    NICs, W = node egress) or a chip on a TPU slice (one ICI link, one way).
    """
    stages, microbatches, D = (check_int(name, value) for name, value in
                               (("stages", stages), ("microbatches", microbatches), ("D", D)))
    if isinstance(hardware, GpuCluster):
        W = hardware.node_egress
    else:
        chip = get_chip(hardware)
        if chip.ici_bandwidth is None:
            raise ValueError(f"{chip.name} has no ICI link; for GPUs pass a GpuCluster")
        W = chip.ici_bandwidth
    sends = microbatches + stages - 2
    return batch_tokens * D * dtype_bytes(dtype) / (W * microbatches) * sends
