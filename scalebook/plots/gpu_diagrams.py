"""The GPU chapter's diagrams, drawn from the package's own descriptions of the hardware (ch. 12).

A GPU and its SMs from the chip's spec (`Chip.cores`, `smem_bytes`, `register_bytes`, `l2_bytes`), NVLink nodes
from `hardware.gpu.NVLINK`, SHARP and NVL72 racks from `GpuCluster`, pipeline timelines from stage times, and
expert-parallel layouts from a cluster and an EP degree. Matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..collectives import all_reduce
from ..hardware import sm
from ..hardware.chips import get_chip
from ..hardware.gpu import NVLINK, GpuCluster
from ..kinds import positive_range
from ..units import checks, fmt_bytes, fmt_rate, fmt_time, is_a
from .base import ROLES, SIZES, figure, finish, legend_below
from .diagram import COLOURS, arrow, box, canvas, panels

__all__ = ["gpu_chip", "sm_diagram", "warp_divergence", "nvlink_nodes", "sharp_diagram", "sharp_bandwidth",
           "nvl72", "nvswitch", "gpu_pipeline", "megatron_configs", "expert_parallel"]

Figure = Any


def _grid(n: int) -> tuple[int, int]:
    """Return (columns, rows) of a near-square grid holding n cells, a little wider than tall."""
    cols = math.ceil(math.sqrt(n * 1.6))
    return cols, math.ceil(n / cols)


def gpu_chip(chip: str = "h100") -> Figure:
    """Draw a GPU as the chapter describes it: one small box per SM (its count from the spec table), each with
    four tensor cores, over a shared L2 cache and the HBM stacks, with the TPU part each corresponds to."""
    gpu = get_chip(chip)
    cols, rows = _grid(gpu.cores)
    fig, ax = canvas(cols + 4.5, rows + 4.2, (9.5, 6.0), f"{gpu.name}: {gpu.cores} SMs sharing an L2 cache and HBM")
    for i in range(gpu.cores):
        x, y = 0.5 + i % cols, 3.0 + rows - 1 - i // cols
        box(ax, x + 0.05, y + 0.05, 0.9, 0.9, colour=COLOURS["core"], lw=0.5, round_=False)
        for q in range(sm.SUBPARTITIONS_PER_SM):  # the four tensor cores
            box(ax, x + 0.12 + 0.2 * q, y + 0.12, 0.16, 0.3, colour=COLOURS["mxu"], lw=0.2, round_=False)
    box(ax, 0.5, 1.7, cols, 1.0, f"L2 cache, {fmt_bytes(gpu.l2_bytes)}" if gpu.l2_bytes else "L2 cache",
        colour=COLOURS["vmem"], fontsize=9)
    box(ax, 0.5, 0.3, cols, 1.0, f"HBM, {fmt_bytes(gpu.hbm_bytes)} at {fmt_rate(gpu.hbm_bandwidth, 'B/s')}",
        colour=COLOURS["hbm"], fontsize=9)
    notes = [(3.0 + rows - 0.5, f"SM (×{gpu.cores}):\n≈ a small TensorCore"),
             (3.0 + rows - 2.0, "green: 4 tensor cores\nper SM ≈ MXUs"),
             (2.2, "L2: no TPU twin\n(VMEM is per core)"), (0.8, "HBM: same role\nas a TPU's")]
    for y, text in notes:
        ax.text(cols + 0.8, y, text, fontsize=8, va="center")
    return fig


def sm_diagram(chip: str = "h100") -> Figure:
    """Draw one SM: four subpartitions, each with a warp scheduler, its share of the register file, its fp32
    CUDA-core lanes and one tensor core, over the SM's shared L1/SMEM (numbers from the chip's spec)."""
    gpu = get_chip(chip)
    lanes = sm.cuda_cores(gpu) // gpu.cores // sm.SUBPARTITIONS_PER_SM
    regs = gpu.register_bytes / sm.SUBPARTITIONS_PER_SM if gpu.register_bytes else None
    fig, ax = canvas(17, 9.5, (9.0, 5.2), f"One SM of the {gpu.name}: four subpartitions over shared memory")
    for q in range(sm.SUBPARTITIONS_PER_SM):
        x = 0.4 + q * 4.15
        box(ax, x, 2.4, 3.9, 6.6, f"subpartition {q}", colour=COLOURS["core"], va="top", fontsize=8)
        box(ax, x + 0.2, 7.2, 3.5, 0.9, f"warp scheduler\n({sm.WARP_LANES} threads/instr.)", colour=COLOURS["scalar"],
            fontsize=8)
        box(ax, x + 0.2, 5.9, 3.5, 1.0, f"registers {fmt_bytes(regs)}" if regs else "registers",
            colour=COLOURS["vmem"], fontsize=8)
        box(ax, x + 0.2, 4.3, 3.5, 1.3, f"{lanes} fp32 lanes (CUDA cores)", colour=COLOURS["vpu"], fontsize=8)
        box(ax, x + 0.2, 2.7, 3.5, 1.3, "tensor core", colour=COLOURS["mxu"], fontsize=8)
    smem = f"L1 / shared memory, {fmt_bytes(gpu.smem_bytes)}" if gpu.smem_bytes else "L1 / shared memory"
    box(ax, 0.4, 0.5, 16.4, 1.4, smem, colour=COLOURS["hbm"], fontsize=9)
    return fig


@checks(lanes="count", steps_a="count", steps_b="count")
def warp_divergence(lanes: int = 8, steps_a: int = 3, steps_b: int = 2) -> Figure:
    """Draw a warp running `if (lane is even) A else B`: the two branches take turns, each with the other
    half of the lanes masked off, and the warp reconverges after both (time in instruction slots)."""
    if lanes < 2 or steps_a < 1 or steps_b < 1:
        raise ValueError(f"need lanes >= 2 and positive branch lengths, got {lanes}, {steps_a}, {steps_b}")
    fig, ax = figure((8.0, 3.6))
    total = 1 + steps_a + steps_b + 1
    for lane in range(lanes):
        even = lane % 2 == 0
        ax.barh(lane, 1, left=0, color="#9ecae1")
        ax.barh(lane, steps_a, left=1, color="#fdae6b" if even else "#eeeeee", hatch="" if even else "//")
        ax.barh(lane, steps_b, left=1 + steps_a, color="#a1d99b" if not even else "#eeeeee",
                hatch="" if not even else "//")
        ax.barh(lane, 1, left=total - 1, color="#9ecae1")
    ax.set_yticks(range(lanes), [f"thread {i}" for i in range(lanes)], fontsize=8)
    ax.invert_yaxis()
    for x, label in ((0.5, "common"), (1 + steps_a / 2, "branch A\n(even threads)"),
                     (1 + steps_a + steps_b / 2, "branch B\n(odd threads)"), (total - 0.5, "reconverged")):
        ax.text(x, -0.9, label, ha="center", va="bottom", fontsize=8)
    ax.set_xlim(0, total)
    ax.set_ylim(lanes - 0.5, -1.8)
    ax.set_xlabel("time (instruction slots)")
    ax.set_ylabel("thread of the warp")
    ax.set_title(f"Warp divergence: {steps_a} + {steps_b} slots instead of {max(steps_a, steps_b)} "
                 "(hatched = masked off)")
    return fig


def _node_panel(ax: Any, generation: str, gpus: int = 8) -> None:
    """Draw one 8-GPU node of an NVLink generation in a 10 × 4.2 canvas: the node's outline, NVSwitches above,
    GPUs below, one bundle per GPU and switch whose width is its link count, labelled once per switch."""
    from matplotlib.patches import FancyBboxPatch

    nv = NVLINK[generation]
    switches = nv.switches_per_node
    per_switch = [nv.links_per_gpu // switches + (1 if k < nv.links_per_gpu % switches else 0)
                  for k in range(switches)]
    # Spread the extra links over the outer switches, as H100 nodes do (5, 4, 4, 5).
    per_switch = sorted(per_switch, reverse=True)
    per_switch = per_switch[::2] + per_switch[1::2][::-1]
    ax.add_patch(FancyBboxPatch((0.15, 0.55), 9.7, 3.55, boxstyle="round,pad=0,rounding_size=0.2", fill=False,
                                ls="--", edgecolor="0.5", lw=1.0))
    for k in range(switches):
        sx = 0.5 + (k + 0.5) * 9 / switches
        width = min(1.6, 9 / switches - 0.2)
        box(ax, sx - width / 2, 2.85, width, 0.75, f"NVSwitch\n{nv.switch_ports} ports", colour=COLOURS["weight"])
        for g in range(gpus):
            gx = 0.5 + (g + 0.5) * 9 / gpus
            ax.plot([gx, sx], [1.35, 2.85], color=ROLES["A"], lw=0.5 * per_switch[k], alpha=0.55, zorder=1)
        ax.text(sx, 3.75, f"{per_switch[k]} link{'s' if per_switch[k] > 1 else ''} per GPU", ha="center",
                fontsize=SIZES["small"])
    for g in range(gpus):
        gx = 0.5 + (g + 0.5) * 9 / gpus
        box(ax, gx - 0.45, 0.75, 0.9, 0.6, "GPU", colour=COLOURS["chip"])
    ax.text(5, 0.25, f"{nv.links_per_gpu} links × {fmt_rate(nv.link_bandwidth, 'B/s')} = "
                     f"{fmt_rate(nv.gpu_bandwidth, 'B/s')} per GPU, {fmt_rate(gpus * nv.gpu_bandwidth, 'B/s')} "
                     f"per node (one way)", ha="center", va="center", fontsize=SIZES["small"])
    ax.set_title(f"NVLink {generation}: a {nv.gpu_generation} node, {switches} NVSwitch {nv.switch_generation} chips",
                 fontsize=SIZES["label"])


@checks(generations=is_a(list, tuple))
def nvlink_nodes(generations: Sequence[str] = ("3.0", "4.0", "5.0")) -> Figure:
    """Draw an 8-GPU node for each NVLink generation in `hardware.gpu.NVLINK`, one above the other: how many
    NVSwitches, how each GPU's links spread over them, and the per-GPU and whole-node bandwidth (one way)."""
    unknown = [g for g in generations if g not in NVLINK]
    if unknown:
        raise ValueError(f"generations {unknown} are not in NVLINK; known: {sorted(NVLINK)}")
    fig, axs = panels(len(generations), 1, (7.4, 3.4), 10, 4.2,
                      "NVLink nodes by generation: every GPU wired to every NVSwitch")
    for ax, gen in zip(axs, generations):
        _node_panel(ax, gen)
    return fig


@checks(cluster=is_a(GpuCluster))
def sharp_diagram(cluster: GpuCluster) -> Figure:
    """Draw an AllReduce in a node without SHARP (each GPU's data crosses its link twice per direction, as a
    ReduceScatter then an AllGather) and with SHARP (sent once into the switch, which adds and sends the sum
    back), with each one's time per byte from the cluster's collective model."""
    n = min(cluster.gpus_per_node, 8)
    plain = all_reduce(replace(cluster.subset(n), sharp=False), None, 1.0).time
    sharp_t = all_reduce(replace(cluster.subset(n), sharp=True), None, 1.0).time
    fig, axs = panels(2, 2, (4.6, 3.4), 10, 7, f"AllReduce in a node of {n} GPUs: through the switch twice, or once")
    for ax, sharp, t in ((axs[0], False, plain), (axs[1], True, sharp_t)):
        box(ax, 3, 5.0, 4, 1.2, "NVSwitch" + ("\nΣ adds in the switch" if sharp else ""), colour=COLOURS["weight"],
            fontsize=8)
        for g in range(n):
            gx = 0.6 + (g + 0.5) * 8.8 / n
            box(ax, gx - 0.45, 0.8, 0.9, 0.8, f"G{g}", colour=COLOURS["chip"], fontsize=8)
            arrow(ax, (gx - 0.12, 1.6), (4.2 + g * 0.2, 5.0), colour="#d62728", lw=0.8)
            arrow(ax, (4.3 + g * 0.2, 5.0), (gx + 0.12, 1.6), colour="#2ca02c", lw=0.8)
        how = ("SHARP: each GPU sends V once\nand receives the sum once" if sharp else
               "ring: ReduceScatter, then AllGather;\neach GPU sends 2(N−1)/N · V")
        ax.text(5, 3.3, how, ha="center", fontsize=8, bbox=dict(fc="white", ec="none"))
        ax.set_title(f"{'with' if sharp else 'without'} SHARP: {fmt_time(t * 1e9)} per GB", fontsize=8)
    return fig


@checks(overhead="nonneg", cluster=is_a(GpuCluster), nbytes=positive_range)
def sharp_bandwidth(cluster: GpuCluster, overhead: float,
                    nbytes: tuple[float, float] = (1e5, 1e10)) -> Figure:
    """Plot the AllReduce bandwidth (bytes / time) in a node against message size, with and without SHARP:
    each time is the collective model's plus a fixed per-call `overhead` (s), such as one fitted to NCCL."""
    import numpy as np

    n = min(cluster.gpus_per_node, cluster.gpus)
    plain, sharp = replace(cluster.subset(n), sharp=False), replace(cluster.subset(n), sharp=True)
    sizes = np.geomspace(*nbytes, 40)
    fig, ax = figure((7.0, 4.2))
    for system, label in ((plain, "ring (no SHARP)"), (sharp, "SHARP")):
        ax.plot(sizes, [v / (overhead + all_reduce(system, None, v).time) / 1e9 for v in sizes], label=label)
    ax.axhline(cluster.gpu_bandwidth / 1e9, color="0.4", ls="--", lw=0.8, label="NVLink egress per GPU")
    ax.set_xscale("log")
    finish(ax, "AllReduce size V (bytes)", "algorithm bandwidth V / time (GB/s)",
           f"AllReduce on {n} × {cluster.chip.name}, {fmt_time(overhead)} fixed cost per call")
    legend_below(ax)  # the curves span the axes: the legend goes under the figure
    return fig


@checks(cluster=is_a(GpuCluster))
def nvl72(cluster: GpuCluster) -> Figure:
    """Draw a GB200 NVL72 rack from its cluster description: the GPUs in compute trays, every GPU wired to
    every NVSwitch, and the rack's NVLink and network bandwidth."""
    gpus, switches = cluster.gpus_per_node, (cluster.nvlink.switches_per_node if cluster.nvlink else 0)
    switches = switches * gpus // 8 if switches else 18
    fig, ax = canvas(20, 9, (9.5, 4.4), f"{cluster.chip.name} NVL{gpus}: {gpus} GPUs, one NVLink domain of "
                                        f"{switches} NVSwitches")
    for s in range(switches):
        sx = 1 + (s + 0.5) * 18 / switches
        box(ax, sx - 0.4, 6.6, 0.8, 0.8, colour=COLOURS["weight"], lw=0.4)
    for g in range(gpus):
        gx = 1 + (g + 0.5) * 18 / gpus
        box(ax, gx - 0.1, 1.6, 0.2, 0.8, colour=COLOURS["chip"], lw=0.3)
        for s in range(0, switches, 3):  # a third of the wires: all of them would be a solid block
            ax.plot([gx, 1 + (s + 0.5) * 18 / switches], [2.4, 6.6], color="#1f77b4", lw=0.15, alpha=0.35)
    ax.text(10, 7.8, f"{switches} NVSwitches", ha="center", fontsize=8)
    ax.text(10, 0.9, f"{gpus} GPUs × {fmt_rate(cluster.gpu_bandwidth, 'B/s')} NVLink = "
            f"{fmt_rate(gpus * cluster.gpu_bandwidth, 'B/s')} inside the rack; "
            f"{fmt_rate(cluster.node_egress, 'B/s')} out to the network", ha="center", fontsize=8)
    ax.text(10, 0.2, f"{fmt_rate(gpus * cluster.chip.bf16_flops, 'FLOP/s')} bf16 in one rack", ha="center",
            fontsize=8)
    return fig


def nvswitch(generation: str = "4.0") -> Figure:
    """Draw an NVSwitch chip of an NVLink generation as a floor plan: its ports along the edges, the port logic
    (where SHARP's adders sit) and the crossbar in the middle, with its capacity."""
    if generation not in NVLINK:
        raise ValueError(f"generation={generation!r} is not in NVLINK; known: {sorted(NVLINK)}")
    nv = NVLINK[generation]
    fig, ax = canvas(12, 9, (7.0, 5.4), f"NVSwitch {nv.switch_generation} (NVLink {generation}): "
                                       f"{nv.switch_ports} ports around a crossbar")
    box(ax, 1, 1, 10, 7, colour=COLOURS["core"], round_=False)
    per_side = math.ceil(nv.switch_ports / 2)
    for i in range(per_side):  # ports on the top and bottom edges
        x = 1.2 + (i + 0.5) * 9.6 / per_side
        for y in (7.75, 1.0):
            box(ax, x - 0.06, y, 0.12, 0.25, colour=COLOURS["hbm"], lw=0.2, round_=False)
    box(ax, 1.5, 6.0, 9, 1.3, "port logic: routing, and SHARP adders", colour=COLOURS["vpu"], fontsize=8)
    box(ax, 1.5, 1.7, 9, 1.3, "port logic: routing, and SHARP adders", colour=COLOURS["vpu"], fontsize=8)
    box(ax, 3, 3.3, 6, 2.4, "crossbar: any port to any port", colour=COLOURS["weight"], fontsize=9)
    ax.text(6, 0.35, f"{nv.switch_ports} ports × {fmt_rate(nv.link_bandwidth, 'B/s')} = "
            f"{fmt_rate(nv.switch_bandwidth, 'B/s')} each way", ha="center", fontsize=8)
    return fig


@checks(stages="count", microbatches="count", t_forward="size", t_send="nonneg", t_reduce="nonneg")
def gpu_pipeline(stages: int = 2, microbatches: int = 2, t_forward: float = 1.0, t_send: float = 0.0,
                 t_reduce: float = 0.0) -> Figure:
    """Draw a GPipe pipeline as a timeline: each stage runs its forward passes (length `t_forward`, s or any
    unit), then its backward passes (twice as long), each waiting `t_send` for the activations from the
    neighbouring stage (red), and ends with a gradient AllReduce of `t_reduce` (grey); idle time stays blank."""
    fwd_end: dict[tuple[int, int], float] = {}
    bwd_end: dict[tuple[int, int], float] = {}
    bars: list[tuple[int, float, float, str, str]] = []
    free = [0.0] * stages
    for m in range(microbatches):
        for s in range(stages):
            ready = fwd_end[(s - 1, m)] + t_send if s else 0.0
            start = max(ready, free[s])
            if s and t_send:
                bars.append((s, ready - t_send, t_send, "#d62728", ""))
            bars.append((s, start, t_forward, "#9ecae1", f"F{m}"))
            free[s] = fwd_end[(s, m)] = start + t_forward
    for m in range(microbatches):
        for s in reversed(range(stages)):
            ready = bwd_end[(s + 1, m)] + t_send if s < stages - 1 else fwd_end[(s, microbatches - 1)]
            start = max(ready, free[s])
            if s < stages - 1 and t_send:
                bars.append((s, ready - t_send, t_send, "#d62728", ""))
            bars.append((s, start, 2 * t_forward, "#fdae6b", f"B{m}"))
            free[s] = bwd_end[(s, m)] = start + 2 * t_forward
    for s in range(stages):
        if t_reduce:
            bars.append((s, free[s], t_reduce, "#bdbdbd", "AllReduce"))
    fig, ax = figure((8.0, 0.55 * stages + 1.8))
    for s, start, width, colour, label in bars:
        ax.barh(s, width, left=start, color=colour, edgecolor="0.3", lw=0.5)
        if label:
            ax.text(start + width / 2, s, label, ha="center", va="center", fontsize=8)
    end = max(start + width for _, start, width, *_ in bars)
    busy = stages * microbatches * 3 * t_forward
    ax.set_yticks(range(stages), [f"stage {s}" for s in range(stages)])
    ax.invert_yaxis()
    ax.set_xlabel("time (units of one forward pass)")
    ax.set_ylabel("pipeline stage (GPU)")
    ax.set_title(f"{stages} stages × {microbatches} microbatches: busy {busy / (stages * end):.0%} of the time"
                 + (" (red: activation sends)" if t_send else ""))
    return fig


@checks(rows=is_a(list, tuple))
def megatron_configs(rows: Sequence[dict[str, Any]]) -> Figure:
    """Plot each configuration's tokens per GPU beside the data-parallel threshold it must clear (rows from
    `training.check_parallelism`, each with a 'model' name)."""
    for i, row in enumerate(rows):
        for key in ("model", "model parallel", "tokens/GPU", "critical tokens/GPU"):
            if not isinstance(row, dict) or key not in row:
                raise KeyError(f"rows[{i}]={row!r:.80} must be a dict with {key!r} (a training.check_parallelism row)")
    import numpy as np

    fig, ax = figure((7.0, 4.0))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["tokens/GPU"] for r in rows], 0.4, label="tokens per GPU (batch ÷ GPUs)")
    ax.bar(x + 0.2, [r["critical tokens/GPU"] for r in rows], 0.4, label="threshold: compute-bound above")
    ax.set_xticks(x, [f"{r['model']}\n(model parallel {r['model parallel']})" for r in rows])
    finish(ax, "Megatron-LM configuration", "tokens per GPU", "Megatron-LM's published layouts are compute-bound",
           "upper right")
    return fig


@checks(ep="count", experts="count", top_k="count", cluster=is_a(GpuCluster))
def expert_parallel(cluster: GpuCluster, ep: int = 16, experts: int = 64, top_k: int = 2) -> Figure:
    """Draw experts laid out over `ep` GPUs of `cluster`: the nodes they span, each GPU's share of the experts,
    and a token's `top_k` dispatches, inside the node over NVLink or across nodes over the network."""
    if ep < 1 or experts % ep:
        raise ValueError(f"experts={experts} must split evenly over ep={ep} GPUs")
    per_node = cluster.gpus_per_node
    nodes = math.ceil(ep / per_node)
    fig, ax = canvas(max(nodes, 1) * (per_node + 1) + 1, 7, (9.0, 3.8),
                     f"{experts} experts over {ep} GPUs ({nodes} node(s) of {per_node}), top-{top_k} routing")
    for n in range(nodes):
        x0 = 0.5 + n * (per_node + 1)
        box(ax, x0, 0.6, per_node + 0.5, 3.0, f"node {n}", colour=COLOURS["host"], va="top", fontsize=8)
        for g in range(min(per_node, ep - n * per_node)):
            first = (n * per_node + g) * experts // ep
            box(ax, x0 + 0.25 + g, 1.0, 0.9, 1.7, f"E{first}–\n{first + experts // ep - 1}",
                colour=COLOURS["chip"], fontsize=8)
    ax.text(0.5, 6.3, "token on node 0, GPU 0", fontsize=8)
    targets = [(k * ep // top_k + k) % ep for k in range(top_k)]
    for t in targets:
        n, g = divmod(t, per_node)
        gx = 0.5 + n * (per_node + 1) + 0.7 + g
        arrow(ax, (1.2, 6.0), (gx, 2.75), colour="#2ca02c" if n == 0 else "#d62728", lw=1.0)
    ax.text(ax.get_xlim()[1] - 0.3, 5.2, f"green: NVLink, {fmt_rate(cluster.gpu_bandwidth, 'B/s')}/GPU\n"
            f"red: network, {fmt_rate(cluster.node_egress, 'B/s')}/node", ha="right", fontsize=8)
    return fig
