"""Explorers for the GPU chapter: a fat-tree collective calculator and a check of a GPU training layout.

Answers are SVG `Chart`s and `Table`s, so a redraw takes milliseconds.
"""

from __future__ import annotations

from ..collectives import KINDS, gpu_levels
from ..hardware import sm
from ..hardware.chips import get_chip
from ..hardware.gpu import PRESETS, get_cluster
from ..roofline import critical_intensity
from ..svg import Chart
from ..tables import Table
from ..training.book import min_tokens_per_chip
from ..training.planner import check_parallelism
from ..units import checks, fmt_bytes, fmt_rate, fmt_si, fmt_time, geomspace
from .core import Explorer, Log, explore, opening_on
from .web import Unfit

__all__ = ["gpu_anatomy_table", "gpu_anatomy_explorer", "fat_tree_view", "fat_tree_explorer", "gpu_layout_view",
           "gpu_layout_explorer"]

GPU_COUNTS = [8, 16, 64, 72, 144, 256, 576, 1024, 2048, 4096, 16384]
GPU_CHIPS = ["h100", "h200", "h800", "b200", "gb200", "a100"]


@checks(clock_ghz="size", dtype="dtype")
def gpu_anatomy_table(chip: str = "h100", clock_ghz: float = 1.83, dtype: str = "bf16") -> Table:
    """Return what one GPU's parts deliver at a clock (GHz): CUDA cores and tensor cores, FLOPs per tensor core
    per cycle for the chip's `dtype` peak, the CUDA cores' fp32 rate (one op, and FMA as two), on-chip memory,
    and the peak arithmetic intensity against HBM."""
    gpu = get_chip(chip)
    clock = clock_ghz * 1e9
    fast = sm.on_chip_bytes(gpu) if gpu.smem_bytes and gpu.register_bytes else {}
    rows = [
        ("SMs", f"{gpu.cores}"),
        ("tensor cores (4 per SM)", f"{gpu.cores * sm.SUBPARTITIONS_PER_SM:,}"),
        ("CUDA cores (fp32 lanes)", f"{sm.cuda_cores(gpu):,}"),
        (f"{dtype} peak", fmt_rate(gpu.peak_flops(dtype))),
        (f"{dtype} FLOPs per tensor core per cycle", f"{sm.tensor_core_flops_per_cycle(gpu, dtype, clock):,.0f}"),
        ("CUDA-core fp32, 1 op per cycle", fmt_rate(sm.vector_flops(gpu, clock))),
        ("CUDA-core fp32, FMA as 2 FLOPs", fmt_rate(sm.vector_flops(gpu, clock, fma=True))),
        ("SMEM + registers", fmt_bytes(fast["total"]) if fast else "?"),
        (f"peak intensity ({dtype} FLOPs per HBM byte)", f"{critical_intensity(gpu, dtype):.0f}"),
    ]
    return Table([{"quantity": q, "value": v} for q, v in rows], title=f"{gpu.name} at {clock_ghz:.2f} GHz")


@checks(clock_ghz="size", dtype="dtype")
def gpu_anatomy_explorer(chip: str = "h100", clock_ghz: float = 1.83, dtype: str = "bf16") -> Explorer:
    """Return the SM calculator: pick a GPU, a clock and a dtype; opens on the H100 at the 1.83 GHz its tensor
    peak assumes, where a tensor core does 1024 bf16 FLOPs per cycle."""
    return explore(gpu_anatomy_table, title="What one GPU's parts deliver", unfit=("has no published",),
                   chip=opening_on(GPU_CHIPS, chip),
                   clock_ghz=(1.0, 2.2, 0.01, clock_ghz), dtype=opening_on(["bf16", "fp8", "int8", "fp4"], dtype))


@checks(gpus="count", nbytes="size", inner="count", sharp="flag", cluster="text")
def fat_tree_view(cluster: str = "h100-superpod", gpus: int = 1024, kind: str = "all_gather", nbytes: float = 1e9,
                  inner: int = 1, sharp: bool = False) -> tuple[Chart, Table] | Unfit:
    """Return a chart of each network level's time against message size for a collective over `gpus` GPUs of a
    named system (the message marked), and a table of the levels at `nbytes`: units joined, bandwidth, time (a
    level the collective does not cross shows a dash). An inner axis as large as the group leaves each collective
    a group of one GPU: that answers `Unfit`, not a collective of 0 ns."""
    if inner >= gpus:
        return Unfit(f"an inner axis of {inner} spans all {gpus} GPUs: each {kind} would run over one GPU and "
                     "move nothing (pick an inner axis smaller than the group)")
    system = get_cluster(cluster, gpus, sharp)
    levels = gpu_levels(kind, system, None, nbytes, inner)
    sizes = geomspace(1e3, 1e11, 32)
    per_size = [gpu_levels(kind, system, None, v, inner) for v in sizes]
    chart = Chart(title=f"{kind} over {gpus} GPUs of {cluster}" + (" (SHARP)" if sharp else ""),
                  xlabel="array size (bytes)", ylabel="time (s)", xlog=True, ylog=True)
    for i, (name, D, _, _) in enumerate(levels):
        if D > 1:
            chart.line(sizes, [rows[i][3] for rows in per_size], label=f"{name} ({D} joined)")
    chart.vline(nbytes, label=fmt_bytes(nbytes))
    worst = max(t for *_, t in levels)
    rows = [{"level": name, "units joined": D, "bandwidth per unit": W, "time": t,
             "binds": "◀" if t == worst and t > 0 else ""} for name, D, W, t in levels]
    table = Table(rows, formats={"bandwidth per unit": lambda w: fmt_rate(w, "B/s"),
                                 "time": lambda t: fmt_time(t) if t else "— (not crossed)"},
                  title=f"{fmt_bytes(nbytes)}, inner axis {inner}: {fmt_time(worst)}, "
                        f"{fmt_rate(nbytes / worst, 'B/s') if worst else '—'} effective")
    return chart, table


@checks(gpus="count", nbytes="size", inner="count", sharp="flag", cluster="text")
def fat_tree_explorer(cluster: str = "h100-superpod", gpus: int = 256, kind: str = "all_gather",
                      nbytes: float = 2 * 8192 * 32768, inner: int = 1, sharp: bool = False,
                      title: str = "Collectives on a GPU fat tree") -> Explorer:
    """Return the fat-tree calculator: pick a system, how many GPUs, the collective, the array size (bytes), the
    inner axis it stays sharded over and SHARP; opens on ch. 12's AllGather of bf16[8192, 32768] in one SU, or on
    whichever question's answer the arguments give (the chapter opens one per question, titled by `title`)."""
    return explore(fat_tree_view, title=title, unfit=("dividing the group", "network levels hold"),
                   cluster=opening_on(list(PRESETS), cluster), gpus=opening_on(GPU_COUNTS, gpus),
                   kind=opening_on(list(KINDS), kind), nbytes=Log(1e3, 1e11, nbytes),
                   inner=opening_on([1, 2, 4, 8, 16, 32, 64, 128, 256], inner), sharp=opening_on([False, True], sharp))


@checks(gpus="count", batch_tokens="size", tp="count", pp="count", ep="count", E="count", k="count", cluster="text")
def gpu_layout_view(cluster: str = "h100-superpod", gpus: int = 4096, batch_tokens: float = 4e6, tp: int = 8,
                    pp: int = 1, ep: int = 1, E: int = 1, k: int = 1) -> tuple[Chart, Table]:
    """Return a chart of the data-parallel threshold (tokens per GPU) against the GPUs per model replica, with
    this layout's tokens per GPU, and the check of the layout (`training.check_parallelism`)."""
    system = get_cluster(cluster, gpus)
    check = check_parallelism(system, batch_tokens, tp, pp, ep, E, k)
    replicas = [r for r in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if r <= gpus and gpus % r == 0]
    chart = Chart(title=f"{gpus} GPUs of {cluster}: is data parallelism compute-bound?",
                  xlabel="GPUs per model replica (TP × PP × EP)", ylabel="tokens per GPU", xlog=True, ylog=True)
    chart.line(replicas, [min_tokens_per_chip("dp", system, model_parallel=r, E=E, k=k) for r in replicas],
               label="threshold: compute-bound above")
    chart.points([check["model parallel"]], [check["tokens/GPU"]], label="this layout", color="#d62728")
    table = Table([check], formats={"tokens/GPU": "{:.0f}".format, "critical tokens/GPU": "{:.0f}".format},
                  title=f"TP {tp} × PP {pp} × EP {ep}, {fmt_si(batch_tokens, 'tokens')} per step")
    return chart, table


@checks(gpus="count", batch_tokens="size", tp="count", pp="count", cluster="text")
def gpu_layout_explorer(cluster: str = "h100-superpod", gpus: int = 4096, batch_tokens: float = 4e6, tp: int = 8,
                        pp: int = 8) -> Explorer:
    """Return the layout check (ch. 12, quiz 5): opens on LLaMA-3 70B's 4M-token batch on 4096 H100s with
    8-way TP and 8-way pipelining, which turns a communication-bound layout compute-bound."""
    return explore(gpu_layout_view, title="Tokens per GPU against the data-parallel threshold",
                   unfit=("must divide the cluster", "need integers 1 <= k <= E", "network levels hold"),
                   cluster=opening_on(list(PRESETS), cluster), gpus=opening_on(GPU_COUNTS, gpus),
                   batch_tokens=Log(1e5, 1e8, batch_tokens), tp=opening_on([1, 2, 4, 8, 16], tp),
                   pp=opening_on([1, 2, 4, 8, 16, 32], pp), ep=opening_on([1, 2, 4, 8, 16, 32, 64], 1),
                   E=opening_on([1, 8, 64, 128, 256], 1), k=opening_on([1, 2, 4, 8], 1))
