"""Chapter 14's figure: one mixture-of-experts layer across an expert-parallel group, drawn from the package's
numbers. Top: the four phases on a few of the group's chips (route, dispatch AllToAll, the experts' matmuls, combine
AllToAll home). Bottom: the time each phase takes on one chip, from `inference.steps.ep_collectives` (the two
ragged AllToAlls), `roofline.matmul` (the router and the experts' three matmuls) and `inference.moe` (rows per
expert, experts per chip).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hardware.gpu import GpuCluster
from ..hardware.topology import TpuMesh
from ..inference.moe import capacity, experts_read_per_chip
from ..inference.steps import ep_collectives
from ..models import TransformerConfig, expected_experts, get_model
from ..roofline import matmul
from ..units import checks, fmt_time, is_a
from .base import COLUMN_WIDTH, ROLES, SHARDS, SIZES, figure, schematic
from .diagram import arrow, box, cell

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PHASES", "moe_layer"]

PHASES = ("router", "dispatch", "experts", "combine")  # the bottom panel's bars, in order, top to bottom
DRAWN = 4  # chips drawn in the top panel
_ROWS = [3.9 - 1.1 * i for i in range(DRAWN)]  # their y in the top panel (data units), home chip 0 on top


def _phase_seconds(model: TransformerConfig, mesh: TpuMesh | GpuCluster, tokens_per_chip: int,
                   dtype: str) -> dict[str, float]:
    """Seconds of each of `PHASES` on one chip: the router's [t, D] x [D, E] matmul, the dispatch AllToAll (fp8),
    the chip's experts' three [rows, D] x [D, F_expert] matmuls each, the combine AllToAll (bf16)."""
    N = mesh.n_chips
    tokens = tokens_per_chip * N
    there, back = ep_collectives(model, mesh, tokens, dispatch_bytes=1, combine_bytes=2)
    rows = capacity(tokens, model.E, model.k, 1.0)
    experts = experts_read_per_chip(tokens, model.E, model.k, N)
    one = matmul(rows, model.D, model.F_expert, mesh.chip, dtype).time
    return {"router": matmul(tokens_per_chip, model.D, model.E, mesh.chip, "bf16").time, "dispatch": there.time,
            "experts": 3 * experts * one, "combine": back.time}


def _chips(ax, tokens_per_chip: int, N: int, experts: int, rows: int, reach: float, model: TransformerConfig) -> None:
    """The top panel: `DRAWN` of the N chips, their tokens (one colour per home chip) routed, sent to the chips of
    their experts, multiplied there and sent home."""
    heads = ((0.8, f"1 route: top-{model.k}\nof {model.E} experts"), (2.6, "2 dispatch\nAllToAll (fp8)"),
             (4.8, f"3 experts: {experts} a chip,\n{rows} rows each"), (7.0, "4 combine\nAllToAll (bf16)"),
             (8.9, "summed at home\nwith the gates"))
    for x, text in heads:
        ax.text(x, 4.95, text, ha="center", va="center", fontsize=SIZES["small"])
    width = 2.0 / experts
    for i, y in enumerate(_ROWS):
        ax.text(-0.1, y + 0.4, f"chip {i}", ha="right", va="center", fontsize=SIZES["small"])
        box(ax, 0.1, y, 1.4, 0.8, f"{tokens_per_chip} tokens", SHARDS[i])
        box(ax, 8.2, y, 1.4, 0.8, f"{tokens_per_chip} outputs", SHARDS[i])
        for e in range(experts):
            for h in range(DRAWN):
                cell(ax, 3.8 + e * width + h * width / DRAWN, y + 0.05, width / DRAWN, 0.7, SHARDS[h])
            box(ax, 3.8 + e * width, y + 0.05, width, 0.7, edge="0.15", colour="none", round_=False)
        for j, target in enumerate(_ROWS):
            if j != i:
                arrow(ax, (1.55, y + 0.4), (3.75, target + 0.4), colour=ROLES["comms"], lw=0.8)
                arrow(ax, (5.85, target + 0.4), (8.15, y + 0.4), colour=ROLES["comms"], lw=0.8)
    ax.text(4.8, -0.1, f"{DRAWN} of {N} chips drawn; a token's {model.k} experts sit on {reach:.1f} of the {N} "
            "chips on average", ha="center", va="center", fontsize=SIZES["small"])


def _timeline(ax, seconds: dict[str, float], title: str) -> None:
    """The bottom panel: one bar per phase, each starting where the one before ends, its time written beside it."""
    start = 0.0
    for row, name in enumerate(PHASES):
        colour = ROLES["comms"] if name in ("dispatch", "combine") else ROLES["compute"]
        ax.barh(row, seconds[name] * 1e6, left=start * 1e6, color=colour, height=0.6).patches[0].set_label(name)
        ax.text((start + seconds[name]) * 1e6 + 0.5, row, fmt_time(seconds[name]), va="center",
                fontsize=SIZES["small"])
        start += seconds[name]
    ax.set_yticks(range(len(PHASES)), [{"experts": "experts' matmuls"}.get(p, p) for p in PHASES])
    ax.invert_yaxis()
    ax.set_xlim(0, start * 1e6 * 1.12)
    ax.set_xlabel("time on one chip (µs)")
    ax.set_title(title, fontsize=SIZES["label"])
    ax.grid(True, axis="x", alpha=0.3)


@checks(mesh=is_a(TpuMesh, GpuCluster, type(None)), tokens_per_chip="count", dtype="dtype")
def moe_layer(model: TransformerConfig | str = "deepseek-v3", mesh: TpuMesh | GpuCluster | None = None,
              tokens_per_chip: int = 64, dtype: str = "fp8") -> Figure:
    """Return the figure of one MoE layer of `model` decoding `tokens_per_chip` tokens on each chip of `mesh` (an
    expert-parallel group holding E/N experts a chip; default a TPU7x 4x4x4): routing, dispatch, experts, combine,
    and their times in µs. `dtype` is the experts' matmuls' (weights and arithmetic)."""
    model = get_model(model)
    mesh = TpuMesh("tpu7x", X=4, Y=4, Z=4) if mesh is None else mesh
    N = mesh.n_chips
    seconds = _phase_seconds(model, mesh, tokens_per_chip, dtype)
    tokens = tokens_per_chip * N
    fig, (top, bottom) = figure((COLUMN_WIDTH - 0.3, 6.2), nrows=2)  # room for the tight box's margin
    top.get_gridspec().set_height_ratios([2.3, 1])
    schematic(top, (-1.0, 9.8), (-0.35, 5.4), f"One MoE layer of {model.name} on {N} chips ({mesh.chip.name}), "
              f"{tokens_per_chip} tokens a chip")
    _chips(top, tokens_per_chip, N, int(experts_read_per_chip(tokens, model.E, model.k, N)),
           capacity(tokens, model.E, model.k, 1.0), expected_experts(model.k, N, 1), model)
    comms = seconds["dispatch"] + seconds["combine"]
    _timeline(bottom, seconds, f"The two AllToAlls take {fmt_time(comms)} of the layer's "
              f"{fmt_time(sum(seconds.values()))}")
    return fig
