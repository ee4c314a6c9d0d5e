"""GPU clusters: NVLink nodes joined by a fat tree of switches (How To Scale Your Model, ch. 12).

A node is N GPUs fully connected through NVSwitches, each GPU sending `gpu_bandwidth` bytes/s into the
node (its NVLink egress, one way), or, on AMD Instinct platforms, N GPUs joined pairwise by point-to-point
Infinity Fabric links with no switch (a full mesh: a collective over g of them uses g - 1 links per GPU).
Above the node, a fat tree: each level groups `degree` units of the level below (nodes into scalable units,
units into a spine ...), and each unit can push `bandwidth` bytes/s through that level. A collective over G
GPUs spans the levels needed to hold them, and its time is set by the tightest level:
bytes · max_i (D_i - 1) / (D_i · W_i), with D_i the number of units it joins at level i.

A cluster need not fill its last node: 256 GB300s are three full NVL72 racks and one of 40 GPUs, 12 H100s one DGX
and half of another. Each GPU owns its NIC (a DGX H100 eight 400 Gb/s ConnectX-7, one per GPU, ch. 12; a GB300
NVL72 compute tray four GPUs and four ConnectX-8, chips.toml's nvidia_nvl72_ra), so a partial unit pushes only its
GPUs' share of a full unit's bandwidth, and at each level the unit that must import the largest share of the array
through the least bandwidth sets the time (`UnitSpan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

from ..tables import Table
from ..units import check_fields, check_int, checks, closest, fmt_rate
from .chips import Chip, get_chip

__all__ = ["resolve", "FatTreeLevel", "GpuCluster", "LevelSpan", "NvLink", "NVLINK", "INFINITY_FABRIC", "SUPERPOD",
           "NVL72", "PRESETS", "get_cluster", "fat_tree_switches"]


@dataclass(frozen=True)
class NvLink:
    """One scale-up fabric generation: NVLink / NVSwitch (link bandwidth one way in B/s, links per GPU, ports
    per NVSwitch, NVSwitches in an 8-GPU node), or, with `switched=False`, a switchless full mesh such as AMD
    Infinity Fabric (one link to each other GPU of the node; no switch ports, no switches)."""

    generation: str
    switch_generation: str
    gpu_generation: str
    link_bandwidth: float
    links_per_gpu: int
    switch_ports: int
    switches_per_node: int
    switched: bool = True

    @property
    def gpu_bandwidth(self) -> float:
        """One GPU's NVLink egress, one way (B/s)."""
        return self.link_bandwidth * self.links_per_gpu

    @property
    def switch_bandwidth(self) -> float:
        """One NVSwitch's capacity, one way (B/s): ports × link bandwidth."""
        return self.link_bandwidth * self.switch_ports


# Ch. 12's NVLink table (link bandwidth, links per GPU, switches per node); ports per NVSwitch from NVIDIA's
# NVSwitch generation specs (36, 64 and 72 ports).
NVLINK = {
    "3.0": NvLink("3.0", "2.0", "Ampere", 25e9, 12, 36, 6),
    "4.0": NvLink("4.0", "3.0", "Hopper", 25e9, 18, 64, 4),
    "5.0": NvLink("5.0", "4.0", "Blackwell", 50e9, 18, 72, 2),
}
# AMD Infinity Fabric (xGMI) on 8-GPU Instinct platforms: seven links per GPU, one to each other GPU, no switch;
# AMD's 'Peak Infinity Fabric Link Bandwidth' (128 GB/s CDNA 3, 153 GB/s CDNA 4) read as bidirectional (chips.toml,
# mlengineering_xgmi).
INFINITY_FABRIC = {
    "CDNA 3": NvLink("Infinity Fabric (CDNA 3)", "none", "CDNA 3", 64e9, 7, 0, 0, switched=False),
    "CDNA 4": NvLink("Infinity Fabric (CDNA 4)", "none", "CDNA 4", 76.5e9, 7, 0, 0, switched=False),
}
_GENERATION_OF = {"NVIDIA A100": "3.0", "NVIDIA H100": "4.0", "NVIDIA H100 96 GB HBM2e (500 W)": "4.0",
                  "NVIDIA H200": "4.0", "NVIDIA H800": "4.0",
                  "NVIDIA B200": "5.0", "NVIDIA GB200": "5.0", "NVIDIA B300": "5.0", "NVIDIA GB300": "5.0",
                  "AMD MI300X": "CDNA 3", "AMD MI325X": "CDNA 3", "AMD MI355X": "CDNA 4"}


class UnitSpan(NamedTuple):
    """One kind of unit below a level a collective crosses: it holds `gpus` GPUs, `members` GPUs of one of the
    collective's groups among the `joined` that the unit of this level around it holds, and pushes `bandwidth`
    B/s through the level (a partial unit: its GPUs' share of a full one's)."""

    gpus: int
    members: int
    joined: int
    bandwidth: float

    def outside(self) -> float:
        """The share of one group's array this unit must import (AllGather) or export (ReduceScatter) through
        the level: 1 - members / joined, the ring's (D - 1)/D when every unit is alike."""
        return 1 - self.members / self.joined


class LevelSpan(NamedTuple):
    """One network level a collective crosses: `degree` units of `below` GPUs each joined (per group of the
    collective), each unit pushing `bandwidth` B/s through this level; `units` such units hold the group.
    `kinds`: each kind of unit below as a `UnitSpan` (one when every unit is full; a partial node or rack adds
    its own)."""

    name: str
    degree: int
    bandwidth: float
    below: int
    units: int
    kinds: tuple[UnitSpan, ...] = ()


@dataclass(frozen=True)
class FatTreeLevel:
    """One level of the network: it joins `degree` units of the level below, each pushing `bandwidth` B/s
    (one way) up through it; `switches` switches of `switch_bandwidth` B/s each serve one unit of this level."""

    name: str
    degree: int
    bandwidth: float
    switches: int = 0
    switch_bandwidth: float = 0.0

    def __post_init__(self) -> None:
        check_fields(self, name="text", degree="count", bandwidth="size", switches="count0",
                     switch_bandwidth="nonneg")


def _levels(name: str, value: object) -> object:
    """`GpuCluster.levels`: None (the chip's usual network) or a tuple of `FatTreeLevel`s."""
    if value is not None and not (isinstance(value, tuple) and all(isinstance(v, FatTreeLevel) for v in value)):
        raise TypeError(f"{name}={value!r} must be None or a tuple of FatTreeLevel")
    return value


@dataclass(frozen=True)
class GpuCluster:
    """`gpus` GPUs of `chip` in NVLink nodes of `gpus_per_node`, joined by the fat-tree `levels` above nodes.

    `GpuCluster("h100", gpus=1024)` is an H100 DGX SuperPod; left as None, the node size, the GPU's one-way
    NVLink egress (`gpu_bandwidth`), the node's NIC egress (`node_egress`), the NVSwitches per node and their
    bandwidth, and the levels come from the chip's usual system (SuperPod for A100/H100/H200/H800/B200, the same
    tree at 800 Gb/s per GPU for B300, NVL72 racks for GB200 and GB300, 8-GPU Infinity Fabric nodes for AMD
    MI300X/MI325X/MI355X). `sharp`: the switches can reduce in the network (SHARP / NVLS). On AMD nodes
    (`mesh`) there is no switch: a collective over g GPUs of a node has g - 1 links per GPU, not the whole
    egress.
    """

    chip: Chip | str
    gpus: int = 1024
    gpus_per_node: int | None = None
    gpu_bandwidth: float | None = None
    node_egress: float | None = None
    levels: tuple[FatTreeLevel, ...] | None = None
    sharp: bool = False
    nvswitches: int | None = None
    nvswitch_bandwidth: float | None = None

    def __post_init__(self) -> None:
        check_fields(self, gpus="count", gpus_per_node="?count", gpu_bandwidth="?size", node_egress="?size",
                     levels=_levels, sharp="flag", nvswitches="?count", nvswitch_bandwidth="?size")
        chip = get_chip(self.chip)
        if chip.kind != "gpu":
            raise ValueError(f"chip={chip.name!r} is not a GPU; a TPU slice is a TpuMesh")
        object.__setattr__(self, "chip", chip)
        given_egress, given_levels = self.node_egress, self.levels
        for name, value in _defaults(chip).items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        # The node's egress is the bandwidth each node pushes into the first network level: one number.
        if given_levels is None and given_egress is not None and self.levels:
            object.__setattr__(self, "levels", (replace(self.levels[0], bandwidth=given_egress), *self.levels[1:]))
        elif given_levels and given_egress is None:
            object.__setattr__(self, "node_egress", given_levels[0].bandwidth)
        elif given_levels and given_egress != given_levels[0].bandwidth:
            raise ValueError(f"node_egress={given_egress!r} must equal the first level's bandwidth "
                             f"({given_levels[0].bandwidth!r}): both are what a node pushes into the network")
        object.__setattr__(self, "gpus", check_int("gpus", self.gpus))
        if self.gpus > self.capacity:
            raise ValueError(f"gpus={self.gpus} exceeds what the node and {len(self.levels)} network levels hold "
                             f"({self.capacity}); pass more levels")

    @property
    def n_chips(self) -> int:
        """The GPUs in the cluster (the name every planner uses for a slice's size)."""
        return self.gpus

    @property
    def nodes(self) -> int:
        """The NVLink nodes the GPUs occupy, a partial last one included."""
        return -(-self.gpus // self.gpus_per_node)

    @property
    def partial(self) -> int:
        """GPUs in the last node when it is not full (40 for 256 GPUs of 72-GPU racks); 0 when every node is."""
        return self.gpus % self.gpus_per_node if self.gpus > self.gpus_per_node else 0

    @property
    def capacity(self) -> int:
        """The most GPUs the node plus the listed levels can hold."""
        return self.gpus_per_node * math.prod(level.degree for level in self.levels)

    @property
    def nvlink(self) -> NvLink | None:
        """The scale-up fabric of the cluster's GPUs: an NVLink generation or Infinity Fabric (None for a GPU
        before NVLink 3)."""
        return _nvlink_of(self.chip)

    @property
    def mesh(self) -> bool:
        """Whether a node is a switchless full mesh (AMD Infinity Fabric): each GPU owns one link per peer."""
        return self.nvlink is not None and not self.nvlink.switched

    def _node_link_bandwidth(self, members: int) -> float:
        """Bytes/s one GPU can push, one way, to the other `members` - 1 GPUs of its node taking part in one
        collective: its whole egress through NVSwitches; on a full mesh only the links to those peers."""
        if not self.mesh:
            return self.gpu_bandwidth
        per_link = self.gpu_bandwidth / self.nvlink.links_per_gpu
        return min(self.gpu_bandwidth, per_link * max(members - 1, 1))

    @property
    def collective_bandwidth(self) -> float:
        """The book's simple W_collective (B/s per GPU): NVLink egress inside one node, else the smaller of
        NVLink and the node's egress; `bisection_per_gpu` is the precise per-level figure."""
        return self.gpu_bandwidth if self.nodes == 1 else min(self.gpu_bandwidth, self.node_egress)

    @property
    def node_bandwidth(self) -> float:
        """Bytes/s a node's NVLink fabric carries, one way: the smaller of its GPUs' egress and its switches'
        (a switchless node: its GPUs' egress)."""
        egress = self.gpus_per_node * self.gpu_bandwidth
        if self.nvswitches is None or self.nvswitch_bandwidth is None:
            return egress
        return min(egress, self.nvswitches * self.nvswitch_bandwidth)

    @property
    def node_bisection(self) -> float:
        """Bytes/s across a cut of the node into two halves, both directions: N/2 GPUs × W × 2."""
        return self.gpus_per_node * self.gpu_bandwidth

    def subset(self, gpus: int) -> GpuCluster:
        """The same network holding only `gpus` GPUs (a model replica, an expert-parallel group).

        A group that is not a whole number of nodes spreads evenly over the fewest nodes that hold it (512 GPUs
        of 72-GPU NVL72 racks: 64 in each of 8 racks, 8 idle per rack); one that cannot spread evenly fills whole
        nodes and a partial last one, as a cluster of that many GPUs does (13 H100s: a DGX and 5 GPUs of another).
        """
        gpus = check_int("gpus", gpus, high=self.gpus)
        node = self.gpus_per_node
        if gpus == self.gpus:
            return self
        nodes = -(-gpus // node)
        if gpus <= node or gpus % nodes:
            return replace(self, gpus=gpus)
        return replace(self, gpus=gpus, gpus_per_node=gpus // nodes)

    def span(self, group: int, inner: int = 1) -> list[LevelSpan]:
        """Return the levels a collective over `group` GPUs crosses, starting with the NVLink node itself.

        `inner`: the group is split into `inner` independent collectives of group/inner GPUs spaced `inner`
        apart (the array stays sharded over an inner axis of that size). A level's `degree` counts the units
        below it that one such collective joins: 1 means it does not cross that level.
        """
        group = check_int("group", group, high=self.gpus)
        if check_int("inner", inner) > group or group % inner:
            raise ValueError(f"inner={inner!r} must be a positive integer dividing the group of {group} GPUs")
        X = group // inner
        out, below, members = [], 1, 1  # GPUs per unit below, and one collective's members in it
        for name, degree, W in (("node", self.gpus_per_node, self.gpu_bandwidth),
                                *((lv.name, lv.degree, lv.bandwidth) for lv in self.levels)):
            if below >= group:
                break
            size = min(group, below * degree)
            joined = max(1, size // inner)
            kinds = self._unit_kinds(group, inner, below, size, W)
            out.append(LevelSpan(name, -(-joined // members), kinds[0].bandwidth, below, -(-X // members), kinds))
            below, members = size, joined
        return out

    def _unit_kinds(self, group: int, inner: int, below: int, size: int, W: float) -> tuple[UnitSpan, ...]:
        """Each kind of unit of `below` GPUs under units of `size` GPUs, the `group` packed into them from the
        first: whole units in whole ones, then the last unit around and the partial one in it. A unit's members
        are its GPUs of one of the `inner`-spaced groups; a partial unit pushes its GPUs' share of `W`."""
        kinds = []
        for around in {size, group % size} - {0}:
            for gpus in {below, around % below} - {0}:
                if gpus > around:
                    continue
                joined, members = max(1, around // inner), max(1, gpus // inner)
                bandwidth = self._node_link_bandwidth(joined) if below == 1 else W * gpus / below
                kinds.append(UnitSpan(gpus, members, joined, bandwidth))
        return tuple(sorted(set(kinds), key=lambda k: (-k.gpus, -k.joined)))

    def group_size(self, axes: str | None) -> int:
        """GPUs taking part: all of them (None), or one node ('node')."""
        if axes is None:
            return self.gpus
        if axes == "node":
            return min(self.gpus, self.gpus_per_node)
        raise ValueError(f"axes={axes!r} for a GPU cluster must be None (every GPU) or 'node'")

    @property
    def bisection_per_gpu(self) -> float:
        """Collective bandwidth per GPU across the whole cluster: the tightest level's (D-1)/(D·W) inverted (with a
        partial node, the tightest kind of unit's share outside it over its bandwidth)."""
        return 1 / max(k.outside() / k.bandwidth for s in self.span(self.gpus) for k in s.kinds if s.degree > 1)

    def levels_table(self) -> Table:
        """One row per level (node, then the fat tree): GPUs under one unit, degree, switches and their
        bandwidth, cable bandwidth into the level, and the bandwidth per unit below and per GPU (one way)."""
        rows, below = [], 1
        levels = (("node (NVLink)", self.gpus_per_node, self.gpu_bandwidth, self.nvswitches,
                   self.nvswitch_bandwidth), *((lv.name, lv.degree, lv.bandwidth, lv.switches,
                                                lv.switch_bandwidth) for lv in self.levels))
        for name, degree, W, switches, switch_bw in levels:
            if below >= self.gpus:
                break
            rows.append({"level": name, "GPUs": min(self.gpus, below * degree), "degree": degree,
                         "switches": switches or "", "switch B/s": (switches or 0) * (switch_bw or 0) or None,
                         "cable B/s": degree * W, "per unit below": W, "per GPU": W / below})
            below *= degree
        rate = lambda v: "" if v is None else fmt_rate(v, "B/s")  # noqa: E731
        return Table(rows, formats={k: rate for k in ("switch B/s", "cable B/s", "per unit below", "per GPU")},
                     title=f"network levels of {self}")

    def __repr__(self) -> str:
        return (f"GpuCluster({self.chip.name}: {self.gpus} GPUs, {self.nodes} node(s) of "
                f"{self.gpus_per_node}, {'SHARP, ' if self.sharp else ''}levels "
                f"{', '.join(level.name for level in self.levels) or 'none'})")


# DGX SuperPod (ch. 12): 32 nodes of 8 GPUs under 8 leaf switches make a 256-GPU scalable unit; 4 units under
# 16 spine switches make 1024 GPUs; a core layer goes beyond. NDR InfiniBand switches: 64 ports × 50 GB/s.
SUPERPOD = (FatTreeLevel("leaf", 32, 400e9, switches=8, switch_bandwidth=3.2e12),
            FatTreeLevel("spine", 4, 12.8e12, switches=16, switch_bandwidth=3.2e12),
            FatTreeLevel("core", 16, 51.2e12))
# GB200 NVL72 racks (ch. 12, appendix A): 72 GPUs per NVLink domain, 3.6 TB/s out of each; a SuperPod of 8.
NVL72 = (FatTreeLevel("spine", 8, 3.6e12), FatTreeLevel("core", 16, 28.8e12))
# Blackwell Ultra (B300, GB300) pairs each GPU with an 800 Gb/s ConnectX-8 instead of 400 Gb/s (chips.toml:
# nvidia_hgx_b300, nvidia_nvl72_ra): the same trees with every level's bandwidth doubled.
_FASTER_NICS = {"NVIDIA B300": 2, "NVIDIA GB300": 2}
_RACKS = ("NVIDIA GB200", "NVIDIA GB300")


def _nvlink_of(chip: Chip) -> NvLink | None:
    """The scale-up fabric a GPU uses: its NVLink generation or Infinity Fabric (None before NVLink 3)."""
    generation = _GENERATION_OF.get(chip.name, "")
    return NVLINK.get(generation) or INFINITY_FABRIC.get(generation)


def _scaled(levels: tuple[FatTreeLevel, ...], factor: float) -> tuple[FatTreeLevel, ...]:
    """The same fat tree with every level's and switch's bandwidth multiplied by `factor`."""
    return tuple(replace(lv, bandwidth=lv.bandwidth * factor, switch_bandwidth=lv.switch_bandwidth * factor)
                 for lv in levels)


def _defaults(chip: Chip) -> dict:
    """The usual system of a GPU (ch. 12): DGX nodes of 8 with 400 GB/s of NICs under the SuperPod tree, or
    NVL72 racks with 3.6 TB/s out, with the NVSwitches of the GPU's NVLink generation; Blackwell Ultra doubles
    the NICs. AMD's 8-GPU Instinct platforms have no switch (a full Infinity Fabric mesh) and, like a DGX, one
    400 Gb/s NIC per GPU under the same tree (an assumption: their fat trees are built by each operator)."""
    nvlink = _nvlink_of(chip)
    # A switchless node (Infinity Fabric, or no NVLink at all) has no NVSwitch: None, not zero switches.
    switches = dict(nvswitches=(nvlink.switches_per_node if nvlink else 0) or None,
                    nvswitch_bandwidth=(nvlink.switch_bandwidth if nvlink else 0.0) or None)
    factor = _FASTER_NICS.get(chip.name, 1)
    if chip.name in _RACKS:
        return dict(gpus_per_node=72, gpu_bandwidth=chip.nvlink_bandwidth, node_egress=3.6e12 * factor,
                    levels=_scaled(NVL72, factor), nvswitches=18, nvswitch_bandwidth=nvlink.switch_bandwidth)
    return dict(gpus_per_node=8, gpu_bandwidth=chip.nvlink_bandwidth, node_egress=400e9 * factor,
                levels=_scaled(SUPERPOD, factor), **switches)


# Named systems from ch. 12 and their Blackwell Ultra successors: (chip, GPUs it usually has).
PRESETS = {
    "h100-superpod": ("h100", 1024),
    "b200-superpod": ("b200", 1024),
    "gb200-nvl72": ("gb200", 72),
    "gb200-superpod": ("gb200", 576),
    "h800-deepseek": ("h800", 2048),
    "b300-superpod": ("b300", 1024),
    "gb300-nvl72": ("gb300", 72),
    "gb300-superpod": ("gb300", 576),
}


@checks(name="text", gpus="?count", sharp="flag")
def get_cluster(name: str, gpus: int | None = None, sharp: bool = False) -> GpuCluster:
    """Return a named system ('h100-superpod', 'gb200-nvl72', ... see PRESETS), optionally with fewer `gpus`."""
    key = str(name).lower().replace("_", "-").replace(" ", "-")
    if key not in PRESETS:
        close = closest(key, PRESETS, cutoff=0.3)
        raise KeyError(f"cluster={name!r} is not known (closest: {', '.join(close) or 'none'}); "
                       f"known clusters: {', '.join(PRESETS)}")
    chip, size = PRESETS[key]
    return GpuCluster(chip, gpus=size if gpus is None else gpus, sharp=sharp)


@checks(gpus="count", radix="count", gpus_per_node="count")
def fat_tree_switches(gpus: int, radix: int = 64, gpus_per_node: int = 8) -> dict[str, int]:
    """Return the InfiniBand switches a non-blocking fat tree of `radix`-port switches needs for `gpus`
    GPUs with one NIC port each: leaf switches spend half their ports on GPUs; two levels reach
    radix²/2 GPUs (2048 with 64 ports), a third (core) layer radix³/4. Also counts the node's NVSwitches
    (4 per 8-GPU H100 node)."""
    if not isinstance(gpus, int) or gpus < 1 or gpus % gpus_per_node:
        raise ValueError(f"gpus={gpus!r} must be a positive multiple of gpus_per_node={gpus_per_node}")
    half = radix // 2
    if gpus > radix**3 // 4:
        raise ValueError(f"gpus={gpus} exceeds a three-level fat tree of {radix}-port switches ({radix**3 // 4})")
    leaves = math.ceil(gpus / half)
    nvswitches = gpus // gpus_per_node * NVLINK["4.0"].switches_per_node
    if leaves * half <= radix * half:  # every leaf reaches every spine switch
        return {"nvswitch": nvswitches, "leaf": leaves, "spine": math.ceil(leaves * half / radix), "core": 0}
    return {"nvswitch": nvswitches, "leaf": leaves, "spine": leaves, "core": math.ceil(leaves * half / radix)}


def resolve(hardware: Chip | str | GpuCluster) -> tuple[Chip | GpuCluster, Chip]:
    """Return (the hardware, its chip): a `GpuCluster` stays itself and brings its GPU; a chip name or `Chip`
    is looked up and stands for both (a TPU slice's chip, or one GPU)."""
    if isinstance(hardware, GpuCluster):
        return hardware, hardware.chip
    chip = get_chip(hardware)
    return chip, chip
