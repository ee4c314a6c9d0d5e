"""Interactive explorers on core ipywidgets (loaded only when used). One module per topic; `core` holds
`explore`, the `Explorer` every topic builds on, and the roofline explorer."""

from __future__ import annotations

from .core import Explorer, Log, explore, roofline_chart, roofline_explorer
from .sharding import collective_explorer, matmul_explorer, memory_explorer, ring_explorer, sharding_grid_explorer
from .tpu import offload_explorer, systolic_explorer, torus_explorer, transfer_explorer

__all__ = ["Log", "Explorer", "explore", "roofline_chart", "roofline_explorer"]
__all__ += ["torus_explorer", "transfer_explorer", "systolic_explorer", "offload_explorer"]
__all__ += ["collective_explorer", "matmul_explorer", "ring_explorer", "sharding_grid_explorer", "memory_explorer"]
