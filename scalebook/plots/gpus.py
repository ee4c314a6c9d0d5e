"""Figures for the GPU chapter: bandwidth per network level, an AllGather against the inner axis it is also
sharded over, TPU and GPU collectives on the same array, ragged AllToAll, and NCCL's bandwidth curve."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import collectives
from ..collectives import all_gather, all_reduce, all_to_all, gpu_levels, ragged_fill
from ..hardware.gpu import GpuCluster
from ..hardware.topology import TpuMesh
from ..kinds import positive_range
from ..units import checks, fmt_rate, is_a, sequence_of
from .base import figure, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["fat_tree", "level_bandwidth", "sharded_all_gather", "tpu_vs_gpu", "ragged_all_to_all", "achieved_bandwidth"]


@checks(cluster=is_a(GpuCluster))
def fat_tree(cluster: GpuCluster) -> Figure:
    """Draw the cluster's network as a schematic: its nodes at the bottom, then each switch level it spans
    (switches per unit as listed in its levels, one box per unit where no count is given), with every unit
    wired to the switches of the unit above it, and the bandwidth each unit sends up printed per level."""
    from matplotlib.patches import Rectangle

    spans = [s for s in cluster.span(cluster.gpus) if s.name != "node"]
    fig, ax = figure((9.5, 1.6 + 1.5 * (len(spans) + 1)))
    rows: list[list[float]] = []  # x positions per row, bottom (nodes) first
    nodes = cluster.nodes
    rows.append([(i + 0.5) / nodes for i in range(nodes)])
    groups = [nodes]  # units at each row
    labels = [f"{nodes} node(s) of {cluster.gpus_per_node} GPUs, {fmt_rate(cluster.gpu_bandwidth, 'B/s')} "
              f"NVLink per GPU, {fmt_rate(cluster.node_egress, 'B/s')} out of each node"]
    below_units = nodes
    for level, lv in zip(spans, cluster.levels):
        units = max(1, below_units // level.degree)
        per_unit = lv.switches or 1
        rows.append([(u + (k + 0.5) / per_unit) / units for u in range(units) for k in range(per_unit)])
        groups.append(units)
        switches = f"{per_unit} switch(es)" if lv.switches else "switch count not listed"
        labels.append(f"{lv.name}: {units} unit(s) × {switches}, each unit joins {level.degree} below; "
                      f"{fmt_rate(level.bandwidth, 'B/s')} up from each unit below")
        below_units = units
    for r, xs in enumerate(rows):
        y = r * 1.5
        if r:  # wire every box below to the switches of its unit
            units_here, below = groups[r], rows[r - 1]
            per_here = len(xs) // units_here
            per_below_unit = len(below) // units_here
            alpha = min(0.8, 60 / (len(below) * per_here))  # dense wiring faint, sparse wiring visible
            for u in range(units_here):
                for xb in below[u * per_below_unit:(u + 1) * per_below_unit]:
                    for xa in xs[u * per_here:(u + 1) * per_here]:
                        ax.plot([xb, xa], [y - 1.5 + 0.12, y - 0.12], color="#1f77b4", lw=0.5, alpha=alpha)
        width = min(0.6 / len(xs), 0.02)
        for x in xs:
            ax.add_patch(Rectangle((x - width / 2, y - 0.12), width, 0.24, color="#d62728" if r else "#2ca02c"))
        ax.text(0.0, y + 0.3, labels[r], fontsize=8, va="bottom")
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.5, 1.5 * (len(rows) - 1) + 0.9)
    ax.axis("off")
    ax.set_title(f"{cluster.gpus} × {cluster.chip.name}: nodes (green) and switches (red), each level non-blocking")
    return fig


@checks(clusters=is_a(list, tuple))
def level_bandwidth(clusters: Sequence[GpuCluster]) -> Figure:
    """Bars of each level's AllGather bandwidth per unit, bytes / ((D-1)/D · W) for the D units it joins,
    for clusters spanning all their GPUs; the lowest bar of a cluster is the one that sets its collectives."""
    if not clusters:
        raise ValueError("clusters must hold at least one GpuCluster")
    fig, ax = figure((8.0, 4.5))
    width = 0.8 / len(clusters)
    names: list[str] = []
    for k, cluster in enumerate(clusters):
        levels = gpu_levels("all_gather", cluster, None, 1.0)
        for name, *_ in levels:
            if name not in names:
                names.append(name)
        xs = [names.index(name) + (k - (len(clusters) - 1) / 2) * width for name, *_ in levels]
        ys = [1 / t if t else np.nan for *_, t in levels]
        bars = ax.bar(xs, ys, width, label=f"{cluster.chip.name}, {cluster.gpus} GPUs")
        for bar, y in zip(bars, ys):
            if np.isfinite(y):
                ax.annotate(f"{y / 1e9:.0f} GB/s", (bar.get_x() + bar.get_width() / 2, y), textcoords="offset points",
                            xytext=(0, 2), ha="center", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names)
    finish(ax, "network level (the NVLink node first)", "AllGather bandwidth per unit (bytes/s)",
           "Each level's share of a whole-cluster AllGather: the lowest bar binds", legend="upper left")
    return fig


@checks(D="count", F="count", cluster=is_a(GpuCluster), inner="counts")
def sharded_all_gather(cluster: GpuCluster, D: int = 8192, F: int = 32768,
                       inner: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128)) -> Figure:
    """AllGather_X of bf16[D_X, F_Y] over all of `cluster` against the inner axis size Y: each level's term
    (node, leaf, ...) and the total, the slowest of them (ch. 12's inner-axis figure)."""
    V = 2 * D * F
    Ys = [Y for Y in inner if cluster.gpus % Y == 0 and Y < cluster.gpus]
    if not Ys:
        raise ValueError(f"inner={tuple(inner)!r} holds no size below {cluster.gpus} that divides it")
    per_level: dict[str, list[float]] = {}
    for i, Y in enumerate(Ys):
        for name, _, _, t in gpu_levels("all_gather", cluster, None, V, Y):
            per_level.setdefault(name, [np.nan] * len(Ys))[i] = t if t else np.nan
    fig, ax = figure()
    for name, ts in per_level.items():
        ax.plot(Ys, ts, "o--", label=f"{name} term")
    ax.plot(Ys, [all_gather(cluster, None, V, also_sharded=Y).time for Y in Ys], "k-", lw=2, label="collective (max)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    finish(ax, "inner axis Y the array stays sharded over (GPUs)", "time (s)",
           f"AllGather_X of bf16[{D}, {F}_Y] over {cluster.gpus} GPUs",
           legend="upper right")
    return fig


@checks(mesh=is_a(TpuMesh), cluster=is_a(GpuCluster), nbytes=positive_range)
def tpu_vs_gpu(mesh: TpuMesh, cluster: GpuCluster, kind: str = "all_gather",
               nbytes: tuple[float, float] = (1e6, 1e10)) -> Figure:
    """The bandwidth term of the same collective on a TPU slice (all its axes) and a GPU cluster (all its GPUs)
    against array size (the GPU model has no latency term, so the TPU's per-hop floor is left out too)."""
    lo, hi = positive_range("nbytes", nbytes)
    sizes = np.geomspace(lo, hi, 40)
    fn = {"all_gather": all_gather, "all_reduce": all_reduce, "all_to_all": all_to_all}.get(kind)
    if fn is None:
        raise ValueError(f"kind={kind!r}; allowed: all_gather, all_reduce, all_to_all")
    fig, ax = figure()
    ax.loglog(sizes, [fn(mesh, None, v).t_comms for v in sizes], label=f"{mesh.n_chips} × {mesh.chip.name} torus")
    ax.loglog(sizes, [fn(cluster, None, v).t_comms for v in sizes], label=f"{cluster.gpus} × {cluster.chip.name}")
    finish(ax, "array size (bytes)", "bandwidth term (s)", f"{kind} over every chip: TPU torus vs GPU fat tree",
           legend="upper left")
    return fig


@checks(top_k="count", units="counts")
def ragged_all_to_all(top_k: int = 4, units: Sequence[int] = (2, 4, 8, 16, 32, 64, 128, 256)) -> Figure:
    """The fraction of a dense AllToAll (a token's N copies) that a top-k routed one costs: the exact
    1 - ((N-1)/N)^k against the book's min(k/N, 1), for N destinations."""
    Ns = np.asarray(list(units), dtype=float)
    if np.any(Ns < 1):
        raise ValueError(f"units={tuple(units)!r} must be positive")
    fig, ax = figure()
    ax.plot(Ns, [ragged_fill(int(N), top_k) / N for N in Ns], "o-", label="expected (random routing)")
    ax.plot(Ns, np.minimum(top_k / Ns, 1), "k--", label="min(k/N, 1)")
    ax.set_xscale("log", base=2)
    finish(ax, "GPUs (or nodes) the experts span, N", "cost / dense AllToAll",
           f"Ragged top-{top_k} AllToAll against a dense one", legend="upper right")
    return fig


@checks(peak="size", overhead="nonneg", nbytes=positive_range,
        quoted=sequence_of("sizes", "(bytes, seconds) pairs"))
def achieved_bandwidth(peak: float, overhead: float, quoted: Sequence[tuple[float, float]] = (),
                       nbytes: tuple[float, float] = (1e5, 1e11), label: str = "model",
                       points: str = "quoted measurements") -> Figure:
    """Bandwidth a collective achieves against message size when each call also pays a fixed `overhead`
    (seconds): V / (overhead + V / peak); `quoted` (bytes, bytes/s) points, labelled `points`, drawn over it."""
    lo, hi = positive_range("nbytes", nbytes)
    sizes = np.geomspace(lo, hi, 60)
    fig, ax = figure()
    ax.semilogx(sizes, [collectives.achieved_bandwidth(v, peak, overhead) / 1e9 for v in sizes], label=label)
    ax.axhline(peak / 1e9, color="#555", ls=":", label=f"plateau {fmt_rate(peak, 'B/s')}")
    for v, bw in quoted:
        ax.plot([v], [bw / 1e9], "rs")
    if quoted:
        ax.plot([], [], "rs", label=points)
    finish(ax, "message size (bytes)", "achieved bandwidth (GB/s)",
           "Collectives reach their bandwidth only on large messages", legend="upper left")
    return fig
