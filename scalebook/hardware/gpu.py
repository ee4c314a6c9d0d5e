"""GPU clusters: NVLink nodes joined by a fat tree of switches (How To Scale Your Model, ch. 12).

A node is N GPUs fully connected through NVSwitches, each GPU sending `gpu_bandwidth` bytes/s into the
node (its NVLink egress, one way). Above the node, a fat tree: each level groups `degree` units of the
level below (nodes into scalable units, units into a spine ...), and each unit can push `bandwidth`
bytes/s through that level. A collective over G GPUs spans the levels needed to hold them, and its time is
set by the tightest level: bytes · max_i (D_i - 1) / (D_i · W_i), with D_i the number of units it joins at
level i.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .chips import Chip, get_chip

__all__ = ["FatTreeLevel", "GpuCluster", "SUPERPOD", "NVL72"]


@dataclass(frozen=True)
class FatTreeLevel:
    """One level of the network: it joins `degree` units of the level below, each pushing `bandwidth` B/s."""

    name: str
    degree: int
    bandwidth: float


@dataclass(frozen=True)
class GpuCluster:
    """`gpus` GPUs of `chip` in NVLink nodes of `gpus_per_node`, joined by the fat-tree `levels` above nodes.

    `GpuCluster("h100", gpus=1024)` is an H100 DGX SuperPod; left as None, the node size, the GPU's one-way
    NVLink egress (`gpu_bandwidth`), the node's NIC egress (`node_egress`) and the levels come from the chip's
    usual system (SuperPod for H100/H800/A100/B200, NVL72 racks for GB200). `sharp`: the switches can
    reduce in the network (SHARP / NVLS).
    """

    chip: Chip | str
    gpus: int = 1024
    gpus_per_node: int | None = None
    gpu_bandwidth: float | None = None
    node_egress: float | None = None
    levels: tuple[FatTreeLevel, ...] | None = None
    sharp: bool = False

    def __post_init__(self) -> None:
        chip = get_chip(self.chip)
        if chip.kind != "gpu":
            raise ValueError(f"chip={chip.name!r} is not a GPU; a TPU slice is a TpuMesh")
        defaults = _defaults(chip)
        object.__setattr__(self, "chip", chip)
        for name in ("gpus_per_node", "gpu_bandwidth", "node_egress", "levels"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, defaults[name])
        if not isinstance(self.gpus, int) or self.gpus < 1:
            raise ValueError(f"gpus={self.gpus!r} must be a positive integer")
        if self.gpus > self.gpus_per_node and self.gpus % self.gpus_per_node:
            raise ValueError(f"gpus={self.gpus} must be a whole number of {self.gpus_per_node}-GPU nodes")
        if self.gpus > self.capacity:
            raise ValueError(f"gpus={self.gpus} exceeds what the node and {len(self.levels)} network levels hold "
                             f"({self.capacity}); pass more levels")

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    @property
    def capacity(self) -> int:
        """The most GPUs the node plus the listed levels can hold."""
        return self.gpus_per_node * math.prod(level.degree for level in self.levels)

    def span(self, group: int) -> list[tuple[str, int, float]]:
        """Return (level, units joined, bytes/s per unit) for each level a group of `group` GPUs crosses,
        starting with the NVLink node itself."""
        if group < 1 or group > self.gpus:
            raise ValueError(f"group={group} must be between 1 and the cluster's {self.gpus} GPUs")
        within = min(group, self.gpus_per_node)
        out = [("node", within, self.gpu_bandwidth)]
        units, below = math.ceil(group / self.gpus_per_node), 1
        for level in self.levels:
            if units <= below:
                break
            joined = min(level.degree, math.ceil(units / below))
            out.append((level.name, joined, level.bandwidth))
            below *= level.degree
        return out

    def group_size(self, axes: str | None) -> int:
        """GPUs taking part: all of them (None), or one node ('node')."""
        if axes is None:
            return self.gpus
        if axes == "node":
            return min(self.gpus, self.gpus_per_node)
        raise ValueError(f"axes={axes!r} for a GPU cluster must be None (every GPU) or 'node'")

    @property
    def bisection_per_gpu(self) -> float:
        """Collective bandwidth per GPU across the whole cluster: the tightest level's (D-1)/(D·W) inverted."""
        return 1 / max((d - 1) / (d * w) for _, d, w in self.span(self.gpus) if d > 1)

    def __repr__(self) -> str:
        return (f"GpuCluster({self.chip.name}: {self.gpus} GPUs, {self.nodes} node(s) of "
                f"{self.gpus_per_node}, {'SHARP, ' if self.sharp else ''}levels "
                f"{', '.join(level.name for level in self.levels) or 'none'})")


SUPERPOD = (FatTreeLevel("leaf", 32, 400e9), FatTreeLevel("spine", 4, 12.8e12), FatTreeLevel("core", 16, 51.2e12))
NVL72 = (FatTreeLevel("spine", 8, 3.6e12), FatTreeLevel("core", 16, 28.8e12))


def _defaults(chip: Chip) -> dict:
    """The usual system of a GPU (ch. 12): DGX nodes of 8 with 400 GB/s of NICs under the SuperPod tree
    (32 nodes per scalable unit, 4 units per spine, core beyond), or GB200 NVL72 racks with 3.6 TB/s out."""
    if chip.name == "NVIDIA GB200":
        return dict(gpus_per_node=72, gpu_bandwidth=chip.nvlink_bandwidth, node_egress=3.6e12, levels=NVL72)
    return dict(gpus_per_node=8, gpu_bandwidth=chip.nvlink_bandwidth, node_egress=400e9, levels=SUPERPOD)
