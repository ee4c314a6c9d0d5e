"""Hardware: chip specs (`Chip`, `get_chip`, `list_chips`), TPU slices (`TpuMesh`), GPU clusters (`GpuCluster`),
a GPU's SM anatomy (`sm`), chips announced but not priced (`announced`), and the modules that define them. Each name
loads its module on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import announced, chips, gpu, sm, topology
    from .chips import FLOP_DTYPES, Chip, chip_for_device_kind, chip_names, get_chip, list_chips
    from .gpu import FatTreeLevel, GpuCluster
    from .topology import HOP_LATENCY, TpuMesh

_TABLE = {
    **{name: "chips" for name in ("Chip", "get_chip", "list_chips", "chip_names", "chip_for_device_kind",
                                  "FLOP_DTYPES")},
    "TpuMesh": "topology", "HOP_LATENCY": "topology", "GpuCluster": "gpu", "FatTreeLevel": "gpu",
    **{name: name for name in ("chips", "topology", "gpu", "sm", "announced")},
}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
