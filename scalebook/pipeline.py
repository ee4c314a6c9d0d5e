"""Pipeline parallelism: the schedules (GPipe, 1F1B, interleaved), their bubbles and the stage-to-stage sends.

P stages each hold 1/P of the layers; a batch is cut into M microbatches that flow through the stages. The
bubble is the fraction of a step a stage sits idle, (P-1)/(v·M + P - 1) with v virtual stages per device
(How To Scale Your Model, ch. 5 and 12). `pipeline_schedule` lays the work out on a grid for drawing.
"""

from __future__ import annotations

from .hardware.chips import Chip, get_chip
from .hardware.gpu import GpuCluster
from .units import check_int, check_positive, checks, dtype_bytes

__all__ = ["PIPELINE_SCHEDULES", "pipeline_bubble", "pipeline_schedule", "idle_fraction", "pipeline_comms"]

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
    batch_tokens = check_positive("batch_tokens", batch_tokens)
    if isinstance(hardware, GpuCluster):
        W = hardware.node_egress
    else:
        chip = get_chip(hardware)
        if chip.ici_bandwidth is None:
            raise ValueError(f"{chip.name} has no ICI link; for GPUs pass a GpuCluster")
        W = chip.ici_bandwidth
    sends = microbatches + stages - 2
    return batch_tokens * D * dtype_bytes(dtype) / (W * microbatches) * sends
