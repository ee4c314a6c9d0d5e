"""Collectives on a TPU torus: AllGather, ReduceScatter, AllReduce and AllToAll, as the book models them.

`nbytes` is always the size of the whole array the collective is about: the gathered result for
AllGather, the unreduced input for ReduceScatter and AllReduce, the array being re-sharded for AllToAll
(How To Scale Your Model, ch. 3). Per axis of the mesh taking part:

- with wraparound the axis is a full bidirectional ring: AllGather moves V bytes at W_bidi = 2 x the
  one-way link bandwidth, T = V / W_bidi (the exact ring has a factor (X-1)/X, shown in the breakdown);
- without wraparound the book uses the edge-to-edge path: X-1 hops, each carrying one shard V/X at
  the one-way rate, T = (X-1)/X · V / W_uni, about twice as slow;
- several axes work in parallel, so their bandwidths add (M wrapped axes: V / (M·W_bidi)).

Latency: each hop costs ~1 µs, and a ring needs X/2 hops (X-1 without wraparound); a collective takes
max(latency, bandwidth time). AllReduce = ReduceScatter + AllGather (twice both terms). AllToAll is bound
by the bisection: a quarter of the array crosses the middle of each axis in each direction, over two links
on a ring (V / (4·W_bidi), a quarter of an AllGather) and one link without wraparound (V / (4·W_uni)); a
ring whose links ran one way only would need V / (2·W_uni) (ch. 3, Q10). The longest axis sets the time.
An array also sharded over axes that do not take part moves 1/|those axes| of the bytes.

`efficiency="calibrated"` (default "ideal", the book's bounds) divides each link's bandwidth by the chip's
measured fraction (`Chip.efficiency`: ICI link efficiency; NCCL bus bandwidth per collective inside a GPU
node, the network's above it) and makes the per-call latency ADD to the bandwidth time (an alpha-beta
model): per ICI hop on a TPU, and on a GPU a fixed cost per call inside the node plus one per step of the ring
between nodes (n-1 over n nodes, as NCCL's cost model has it; the ideal GPU model has no latency term).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .estimate import Estimate
from .hardware.chips import Chip, Efficiency, get_chip
from .hardware.gpu import GpuCluster, UnitSpan
from .hardware.topology import TpuMesh
from .units import checks, fmt_bytes, fmt_rate, is_a

__all__ = ["all_gather", "reduce_scatter", "all_reduce", "all_to_all", "KINDS", "collective", "gpu_collective",
           "gpu_levels", "gpu_simple", "ragged_fill", "achieved_bandwidth", "fixed_overhead",
           "fit_bandwidth", "default_mesh"]

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")


@dataclass(frozen=True)
class _Axis:
    """One mesh axis taking part: its size, whether it wraps, and the bytes/s it contributes."""

    name: str
    size: int
    wrap: bool
    bandwidth: float  # effective B/s for AllGather-style traffic
    hops: int


def _axes(mesh: TpuMesh, axes: str | Iterable[str] | None) -> list[_Axis]:
    if not isinstance(mesh, TpuMesh):
        raise ValueError(f"mesh must be a TpuMesh (e.g. sb.TpuMesh('v5e', X=4, Y=4)), got {type(mesh).__name__}")
    W = mesh.chip.ici_bandwidth
    out = []
    for name in mesh.resolve_axes(axes):
        n, wrap = mesh.axes[name], mesh.wrap[name]
        bw = 2 * W if wrap else W * n / (n - 1) if n > 1 else float("inf")
        out.append(_Axis(name, n, wrap, bw, mesh.ring_hops(name)))
    return out


def _shared_bytes(mesh: TpuMesh, nbytes: float, also_sharded: str | Iterable[str], taking_part: list[_Axis]) -> float:
    if nbytes < 0:
        raise ValueError(f"nbytes must be non-negative, got {nbytes!r}")
    if not also_sharded:
        return float(nbytes)
    others = mesh.resolve_axes(also_sharded, "also_sharded")
    clash = set(others) & {a.name for a in taking_part}
    if clash:
        raise ValueError(f"also_sharded={also_sharded!r} repeats axes that take part in the collective: "
                         f"{sorted(clash)}")
    return nbytes / mesh.size(others)


@checks(kind=KINDS, nbytes="nonneg", top_k="?count")
def collective(kind: str, mesh: TpuMesh | GpuCluster, axes: str | Iterable[str] | None, nbytes: float,
               also_sharded: str | Iterable[str] | int = (), top_k: int | None = None,
               efficiency: str | Efficiency = "ideal") -> Estimate:
    """Return the `Estimate` of collective `kind` (one of KINDS) over `axes` of `mesh` on `nbytes` bytes.

    On a `GpuCluster`, `axes` is None (every GPU) or 'node', and `also_sharded` is the size Y of an inner
    axis the array stays sharded over (see `gpu_levels`). `top_k` (AllToAll only): a ragged MoE dispatch
    where `nbytes` are the tokens and each goes to k random destinations (see `ragged_fill`).
    `efficiency`: 'ideal' (the book's bound) or 'calibrated' (measured link fractions and per-call latency).
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}; allowed: {list(KINDS)}")
    if isinstance(mesh, GpuCluster):
        return gpu_collective(kind, mesh, axes, nbytes, 1 if also_sharded in ((), None) else also_sharded,
                              top_k, efficiency)
    if top_k is not None and kind != "all_to_all":
        raise ValueError(f"top_k applies to all_to_all only, not kind={kind!r}")
    parts = _axes(mesh, axes)
    group = math.prod(a.size for a in parts)
    V = _shared_bytes(mesh, nbytes, also_sharded, parts) * ragged_fill(group, top_k)
    if group == 1:
        return Estimate(0.0, 0.0, 0.0, 0.0, channel="ICI", label=f"{kind} over a group of one chip: free")
    hops = sum(a.hops for a in parts)
    if kind == "all_to_all":
        # V/4 crosses each axis's bisection in each direction: over 2 links on a ring, 1 on a line. With
        # N chips in the group, the axis of size X_i has N/X_i parallel cuts sharing that traffic.
        W = mesh.chip.ici_bandwidth
        t_bw = max(V * a.size / (group * 4 * W * (2 if a.wrap else 1)) for a in parts)
        moved = V / 4
    else:
        t_bw = V / sum(a.bandwidth for a in parts)
        moved = V
    factor = 2 if kind == "all_reduce" else 1
    eff = mesh.chip.efficiency(efficiency)
    t_bw, hops = factor * t_bw / eff.link, factor * hops
    hop_latency = eff.latency_node or mesh.hop_latency
    W = mesh.chip.ici_bandwidth
    ring = (group - 1) / group
    names = "".join(a.name for a in parts)
    terms = (
        ("array V", fmt_bytes(nbytes) + (f" → {fmt_bytes(V)} per ring (also sharded over "
                                         f"{''.join(mesh.resolve_axes(also_sharded))})" if also_sharded else "")),
        ("axes", ", ".join(f"{a.name}={a.size} ({'wraps: bidirectional ring' if a.wrap else 'no wraparound'})"
                           for a in parts)),
        ("link", f"{fmt_rate(W, 'B/s')} one-way, {fmt_rate(2 * W, 'B/s')} bidirectional"),
        ("bandwidth term", _bandwidth_formula(kind, parts)),
        ("(N−1)/N", f"{ring:.3f} — the exact ring time is this fraction of the bandwidth term for wrapped axes"),
        ("latency term", f"{hops} hops × {hop_latency * 1e6:g} µs"
                         + (" (adds: calibrated)" if eff.latency_node else "")),
    )
    if eff.link != 1:
        terms += (("link efficiency", f"{eff.link:g} of the link bandwidth (calibrated)"),)
    return Estimate(0.0, factor * moved, 0.0, t_bw, channel="ICI",
                    label=f"{kind}_{names} of {fmt_bytes(nbytes)} on {mesh}", terms=terms,
                    t_latency=hops * hop_latency, latency_adds=bool(eff.latency_node))


@checks(units="count", top_k="?count")
def ragged_fill(units: int, top_k: int | None) -> float:
    """Return how many times its own size a token's data crosses out of its unit when routed to `top_k`
    random destinations among `units` units (each distinct unit gets one copy), relative to a dense AllToAll
    that sends 1/units of it to each: units · (1 - (1 - 1/units)^k). 1 without routing (`top_k` None)."""
    if top_k is None:
        return 1.0
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k={top_k!r} must be a positive integer (experts each token goes to)")
    return units * (1 - (1 - 1 / units) ** top_k)


@checks(kind=KINDS, cluster=is_a(GpuCluster), nbytes="nonneg", Y="count", top_k="?count")
def gpu_levels(kind: str, cluster: GpuCluster, axes: str | None, nbytes: float, Y: int = 1,
               top_k: int | None = None) -> list[tuple[str, int, float, float]]:
    """Return (level, units joined, bytes/s per unit, seconds) for each level a collective crosses (ch. 12).

    The group (every GPU, or one node) splits into Y collectives of group/Y GPUs spaced Y apart (the array
    stays sharded over an inner axis of size Y); a unit below holding GPUs of s of them moves s/Y of `nbytes`.
    AllGather / ReduceScatter: (D-1)/D of that per unit, D the units joined; AllReduce twice that, or once
    without the (D-1)/D with SHARP. AllToAll: each unit sends what is bound for the other units holding
    the group, (U-1)/U of its share; with `top_k`, `nbytes` is the routed tokens and each token goes once to
    each distinct unit among k random destinations (see `ragged_fill`).
    """
    if top_k is not None and kind != "all_to_all":
        raise ValueError(f"top_k applies to all_to_all only, not kind={kind!r}")
    out, group = [], cluster.group_size(axes)
    for level in cluster.span(group, Y):
        D, U = level.degree, level.units
        t = 0.0 if D == 1 else max(_unit_seconds(kind, unit, nbytes, Y, group // Y, U, top_k, cluster.sharp)
                                   for unit in level.kinds)
        out.append((level.name, D, level.bandwidth, t))
    return out


def _unit_seconds(kind: str, unit: UnitSpan, nbytes: float, Y: int, X: int, U: int, top_k: int | None,
                  sharp: bool) -> float:
    """Seconds one kind of unit below a level needs to push its traffic through it (`gpu_levels`): the bytes of
    the collectives present in it (groups of X members spaced Y apart, U units holding each), the share of them
    that must cross, over its bandwidth."""
    share = nbytes * min(Y, unit.gpus) / Y  # the bytes of the collectives present in the unit
    if kind == "all_to_all":
        inside = unit.members / X  # the unit's share of one group's tokens: 1/U when every unit is alike
        return share * inside * (1 - inside) * ragged_fill(U, top_k) / unit.bandwidth
    if kind == "all_reduce" and sharp:
        return share / unit.bandwidth
    return share * unit.outside() / unit.bandwidth * (2 if kind == "all_reduce" else 1)


@checks(kind=KINDS, cluster=is_a(GpuCluster), nbytes="nonneg")
def gpu_simple(kind: str, cluster: GpuCluster, nbytes: float) -> float:
    """Return the seconds of a collective over every GPU of `cluster` in the book's simple form (ch. 12), with
    W = `cluster.collective_bandwidth` and no ring factors: AllGather / ReduceScatter V/W, AllReduce 2V/W (V/W
    with SHARP), AllToAll V/(N·W) in one node of N and V/(M·W_node) across M nodes. `gpu_collective` is the
    precise per-level form."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}; allowed: {list(KINDS)}")
    W = cluster.collective_bandwidth
    if kind == "all_to_all":
        one_node = cluster.nodes == 1
        return nbytes / ((cluster.gpus if one_node else cluster.nodes) * (W if one_node else cluster.node_egress))
    return nbytes / W * (2 if kind == "all_reduce" and not cluster.sharp else 1)


@checks(kind=KINDS, cluster=is_a(GpuCluster), nbytes="nonneg", Y="count", top_k="?count")
def gpu_collective(kind: str, cluster: GpuCluster, axes: str | None, nbytes: float, Y: int = 1,
                   top_k: int | None = None, efficiency: str | Efficiency = "ideal") -> Estimate:
    """Return the `Estimate` of a collective over a GPU cluster (ch. 12): the slowest of its levels
    (`gpu_levels`), the NVLink node first, then the fat tree. Calibrated, each level runs at its measured
    bus-bandwidth fraction and the call pays a fixed latency in the node plus one per network step of the ring."""
    eff = cluster.chip.efficiency(efficiency)
    levels = [(name, D, W * (eff.collective(kind) if i == 0 else eff.network),
               t / (eff.collective(kind) if i == 0 else eff.network))
              for i, (name, D, W, t) in enumerate(gpu_levels(kind, cluster, axes, nbytes, Y, top_k))]
    group = cluster.group_size(axes)
    if group == 1:
        return Estimate(0.0, 0.0, 0.0, 0.0, channel="NVLink", label=f"{kind} over one GPU: free")
    # A ring over n nodes takes n-1 network steps (2(n-1) for AllReduce), each paying the per-step latency
    # (NCCL's own cost model, src/graph/tuning.cc); the steps inside a node are in the per-call latency.
    crossed = math.prod(D for _, D, _, _ in levels[1:]) - 1
    crossed *= 2 if kind == "all_reduce" else 1
    latency = eff.latency_node + crossed * eff.latency_network
    terms = [(f"{name} ({D} joined)", f"{t * 1e6:.4g} µs at {fmt_rate(W, 'B/s')} per unit")
             for name, D, W, t in levels]
    worst = max(range(len(levels)), key=lambda i: levels[i][3])
    terms.append(("bound by", terms[worst][0]))
    if latency:
        terms.append(("per-call latency", f"{latency * 1e6:.4g} µs (node + {crossed} network ring step(s)), adds"))
    what = f"{kind}{f' (top-{top_k} routed)' if top_k else ''}"
    return Estimate(0.0, float(nbytes), 0.0, levels[worst][3], channel="NVLink" if worst == 0 else "network",
                    label=f"{what} of {fmt_bytes(nbytes)} over {group} GPUs of {cluster}", terms=tuple(terms),
                    t_latency=latency, latency_adds=True)


@checks(nbytes="size", peak="size", overhead="nonneg")
def achieved_bandwidth(nbytes: float, peak: float, overhead: float) -> float:
    """Return the bytes/s a collective shows on an `nbytes` message when each call pays `overhead` seconds
    (launch, synchronisation, pipeline fill) on top of moving the bytes at `peak`: V / (overhead + V/peak)."""
    if nbytes <= 0 or peak <= 0 or overhead < 0:
        raise ValueError(f"need nbytes > 0, peak > 0, overhead >= 0; got {nbytes!r}, {peak!r}, {overhead!r}")
    return nbytes / (overhead + nbytes / peak)


@checks(nbytes="size", achieved="size", peak="size")
def fixed_overhead(nbytes: float, achieved: float, peak: float) -> float:
    """Return the per-call overhead (s) that makes a message of `nbytes` reach only `achieved` B/s against a
    `peak` plateau: the inverse of `achieved_bandwidth`, for fitting one measured point."""
    if not 0 < achieved <= peak or nbytes <= 0:
        raise ValueError(f"need nbytes > 0 and 0 < achieved <= peak; got {nbytes!r}, {achieved!r}, {peak!r}")
    return nbytes / achieved - nbytes / peak


@checks(nbytes="sizes", seconds="sizes")
def fit_bandwidth(nbytes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """Fit measured collective times to T = overhead + V / peak; return (peak B/s, overhead s).

    The model of `achieved_bandwidth`: feed it a sweep's array sizes and median times (e.g. from
    `bench.collective_sweep`) to read off a machine's plateau and its fixed cost per call. The least squares
    weighs each point by 1/T, so small messages count as much as large ones (relative errors).
    """
    V, T = [float(v) for v in nbytes], [float(t) for t in seconds]
    if len(V) != len(T) or len(V) < 2 or min(V) == max(V):
        raise ValueError(f"need at least two different sizes with one time each, got nbytes={V}, seconds={T}")
    if min(V) <= 0 or min(T) <= 0:
        raise ValueError("nbytes and seconds must all be positive")
    weights = [1 / t**2 for t in T]  # least squares on residuals weighed by 1/T, i.e. squared residuals by 1/T²
    total = sum(weights)
    v_mean = sum(w * v for w, v in zip(weights, V)) / total
    t_mean = sum(w * t for w, t in zip(weights, T)) / total
    slope = (sum(w * (v - v_mean) * t for w, v, t in zip(weights, V, T))
             / sum(w * (v - v_mean) ** 2 for w, v in zip(weights, V)))
    overhead = t_mean - slope * v_mean
    if slope <= 0:
        raise ValueError("the times do not grow with the bytes: no bandwidth to fit (sizes too small?)")
    return float(1 / slope), max(float(overhead), 0.0)


def _bandwidth_formula(kind: str, parts: list[_Axis]) -> str:
    per_axis = " + ".join("W_bidi" if a.wrap else f"W_uni·{a.size}/{a.size - 1}" for a in parts)
    if kind == "all_to_all":
        return "V·max(X_i) / (4·N·W_bidi) per wrapped axis, V·max(X_i) / (4·N·W_uni) without wraparound"
    base = f"V / ({per_axis})"
    return f"2 × {base}" if kind == "all_reduce" else base


@checks(nbytes="nonneg")
def all_gather(mesh: TpuMesh | GpuCluster, axes: str | Iterable[str] | None, nbytes: float,
               also_sharded: str | Iterable[str] | int = (), efficiency: str | Efficiency = "ideal") -> Estimate:
    """Return the `Estimate` of AllGather over `axes`: A[I_X] -> A[I]; `nbytes` is the gathered array.

    `also_sharded` names mesh axes the array stays sharded over (they do not take part), which divides
    the bytes each ring moves by their size.
    """
    return collective("all_gather", mesh, axes, nbytes, also_sharded, efficiency=efficiency)


@checks(nbytes="nonneg")
def reduce_scatter(mesh: TpuMesh | GpuCluster, axes: str | Iterable[str] | None, nbytes: float,
                   also_sharded: str | Iterable[str] = (), efficiency: str | Efficiency = "ideal") -> Estimate:
    """Return the `Estimate` of ReduceScatter over `axes`: A[I]{U_X} -> A[I_X]; `nbytes` is the unreduced array."""
    return collective("reduce_scatter", mesh, axes, nbytes, also_sharded, efficiency=efficiency)


@checks(nbytes="nonneg")
def all_reduce(mesh: TpuMesh | GpuCluster, axes: str | Iterable[str] | None, nbytes: float,
               also_sharded: str | Iterable[str] = (), efficiency: str | Efficiency = "ideal") -> Estimate:
    """Return the `Estimate` of AllReduce over `axes` (= ReduceScatter + AllGather, twice the cost)."""
    return collective("all_reduce", mesh, axes, nbytes, also_sharded, efficiency=efficiency)


@checks(nbytes="nonneg", top_k="?count")
def all_to_all(mesh: TpuMesh | GpuCluster, axes: str | Iterable[str] | None, nbytes: float,
               also_sharded: str | Iterable[str] = (), top_k: int | None = None,
               efficiency: str | Efficiency = "ideal") -> Estimate:
    """Return the `Estimate` of AllToAll over `axes`: A[I, J_X] -> A[I_X, J]; `nbytes` is the whole array.

    With `top_k`, a ragged MoE dispatch: `nbytes` are the tokens, each sent to k random members of the group
    (one copy per distinct destination), which costs ~min(k/N, 1) of a dense AllToAll of N copies.
    """
    return collective("all_to_all", mesh, axes, nbytes, also_sharded, top_k, efficiency)


@checks(n_chips="count")
def default_mesh(chip: Chip | str, n_chips: int) -> TpuMesh | GpuCluster:
    """Return the slice a calibrated estimate assumes for `n_chips` chips: a `GpuCluster` of NVLink nodes for
    a GPU, or the most cube-like (3-D families) or square (2-D) TPU slice of that many chips."""
    chip = get_chip(chip)
    if chip.kind == "gpu":
        return GpuCluster(chip, gpus=n_chips)
    dims = len(chip.max_slice or (1, 1))
    sizes = [1] * dims
    for p in _prime_factors(n_chips):
        sizes[sizes.index(min(sizes))] *= p
    return TpuMesh(chip, **dict(zip("XYZ", sorted(sizes, reverse=True))))


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return sorted(out, reverse=True)
