"""Hardware: chip specs (`Chip`, `get_chip`, `list_chips`), TPU slices (`TpuMesh`), GPU clusters (`GpuCluster`)."""

from __future__ import annotations

from . import sm
from .chips import FLOP_DTYPES, Chip, chip_for_device_kind, chip_names, get_chip, list_chips
from .gpu import FatTreeLevel, GpuCluster
from .topology import HOP_LATENCY, TpuMesh

__all__ = ["Chip", "get_chip", "list_chips", "chip_names", "chip_for_device_kind", "FLOP_DTYPES",
           "TpuMesh", "HOP_LATENCY", "GpuCluster", "FatTreeLevel", "sm"]
