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
from .base import ROLES, SIZES, figure, finish, legend_below

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["fat_tree", "level_bandwidth", "sharded_all_gather", "tpu_vs_gpu", "ragged_all_to_all", "achieved_bandwidth"]


@checks(cluster=is_a(GpuCluster))
def fat_tree(cluster: GpuCluster) -> Figure:
    """Draw the cluster's network as a designed fat tree: its nodes at the bottom, then each switch level it spans,
    one box per unit (a level's switches, as listed, drawn as one box), and one link per unit to the unit above,
    its width growing with the bandwidth it carries and labelled with it. A level of more than `_MAX_BOXES` units
    is drawn as one stacked box per parent unit ('32 nodes'), its links aggregated: 'n × bandwidth'."""
    spans = [s for s in cluster.span(cluster.gpus) if s.name != "node"]
    units = [cluster.nodes]
    for level in spans:
        units.append(max(1, units[-1] // level.degree))
    fig, ax = figure((7.4, 1.3 + 1.45 * len(units)))
    tops = [(0.5, 0.0)]  # (x, y) of each drawn box's top, row by row, bottom first
    for r in range(len(units)):
        y = 1.45 * r
        parents = units[r + 1] if r + 1 < len(units) else 1
        boxes = _tree_row(cluster, spans, r, units[r], parents)
        width = min(0.8 / len(boxes), 0.3)
        xs = [(i + 0.5) / len(boxes) for i in range(len(boxes))]
        for x, (label, stacked) in zip(xs, boxes):
            _tree_box(ax, x, y, width, label, stacked, ROLES["compute"] if r == 0 else ROLES["comms"])
        if r:
            _tree_links(ax, tops, xs, y, spans[r - 1].bandwidth,
                        units[r - 1] // units[r] if units[r - 1] > _MAX_BOXES else 1)
        tops = [(x, y + (0.4 if stacked else 0.3)) for x, (_, stacked) in zip(xs, boxes)]  # a stack's top sheet
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.1, 1.45 * (len(units) - 1) + 0.45)
    ax.axis("off")
    ax.set_title(f"{cluster.gpus} × {cluster.chip.name}, {cluster.nodes} nodes (NVLink "
                 f"{fmt_rate(cluster.gpu_bandwidth, 'B/s')} per GPU inside each):\n"
                 f"a non-blocking fat tree, each link's width and label the bandwidth one unit sends up")
    return fig


_MAX_BOXES = 8  # the most units a row draws one by one; more are grouped under their parents


def _tree_row(cluster: GpuCluster, spans: list, r: int, n: int, parents: int) -> list[tuple[str, bool]]:
    """Return (label, stacked) for each box of row `r` (0: nodes): one per unit, or one stack per parent."""
    if r == 0:
        name = f"node\n{cluster.gpus_per_node} GPUs"
    else:
        switches = cluster.levels[r - 1].switches
        name = f"{spans[r - 1].name}\n" + (f"{switches} switches" if switches else "switches\nnot listed")
    if n <= _MAX_BOXES:
        return [(name, False)] * n
    per = n // parents
    kind, rest = name.split("\n", 1)
    return [(f"{per} {kind}s\n{rest} each", True)] * parents


def _tree_box(ax, x: float, y: float, width: float, label: str, stacked: bool, colour: str) -> None:
    """A unit's box centred on x, bottom at y; a stack of several units shows two offset sheets behind it."""
    from matplotlib.patches import FancyBboxPatch

    for k in ((2, 1) if stacked else ()):
        ax.add_patch(FancyBboxPatch((x - width / 2 + 0.006 * k, y + 0.05 * k), width, 0.3, boxstyle="round,pad=0.01",
                                    facecolor="white", edgecolor=colour, lw=1.0))
    ax.add_patch(FancyBboxPatch((x - width / 2, y), width, 0.3, boxstyle="round,pad=0.01", facecolor="white",
                                edgecolor=colour, lw=1.6))
    ax.text(x, y + 0.15, label, ha="center", va="center", fontsize=SIZES["small"])


def _tree_links(ax, below: list[tuple[float, float]], xs: list[float], y: float, bandwidth: float,
                count: int) -> None:
    """One link from each box below to its parent box in `xs`, width by bandwidth (B/s), labelled once per
    parent; `count` > 1 when a box below stands for that many units (the label then says 'count × bandwidth')."""
    width = 1.0 + 1.4 * max(0.0, float(np.log10(bandwidth * count / 1e11)))
    per_parent = max(1, len(below) // len(xs))
    text = (f"{count} × " if count > 1 else "") + fmt_rate(bandwidth, "B/s") + ("" if per_parent == 1 else " each")
    for i, (xb, yb) in enumerate(below):
        xa = xs[min(i // per_parent, len(xs) - 1)]
        ax.plot([xb, xa], [yb + 0.03, y - 0.02], color="0.35", lw=width, solid_capstyle="round", zorder=1)
        if i % per_parent == 0:
            ax.text((xb + xa) / 2, (yb + y) / 2, text, ha="center", va="center", fontsize=SIZES["small"],
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"), zorder=3)


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
                ax.annotate(fmt_rate(y, "B/s"), (bar.get_x() + bar.get_width() / 2, y), textcoords="offset points",
                            xytext=(0, 2), ha="center", va="bottom", fontsize=8, rotation=90)  # side by side
    ax.set_yscale("log")
    ax.set_ylim(top=ax.get_ylim()[1] * 3)  # room above the tallest bar for its value
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
           "Collectives reach their bandwidth only on large messages")
    legend_below(ax)  # the curve and its points span the axes: the legend goes under the figure
    return fig
