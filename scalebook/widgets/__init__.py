"""Interactive explorers on core ipywidgets (loaded only when used). One module per topic; `core` holds
`explore`, the `Explorer` every topic builds on, and the roofline explorer."""

from __future__ import annotations

from .core import Explorer, Log, explore, roofline_chart, roofline_explorer
from .gpus import fat_tree_explorer, gpu_anatomy_explorer, gpu_layout_explorer
from .inference import kv_variants_explorer, latency_breakdown_explorer, pareto_explorer
from .jax_programs import collective_matmul_explorer, routing_explorer, shard_program_explorer
from .llama import bounds_explorer, plan_explorer, run_explorer
from .llama_serving import topology_explorer
from .models import (
    attention_roofline_explorer,
    attention_share,
    attention_share_explorer,
    kv_cache_explorer,
    kv_cache_table,
    model_explorer,
    remat_explorer,
    remat_table,
)
from .profiling import (
    breakdown_explorer,
    collective_check_explorer,
    memory_check_explorer,
    op_explorer,
    profile_example_explorer,
)
from .serving import serving_explorer
from .sharding import collective_explorer, matmul_explorer, memory_explorer, ring_explorer, sharding_grid_explorer
from .tpu import offload_explorer, systolic_explorer, torus_explorer, transfer_explorer
from .training import pipeline_explorer, training_memory_explorer, training_roofline_explorer

__all__ = ["Log", "Explorer", "explore", "roofline_chart", "roofline_explorer"]
__all__ += ["torus_explorer", "transfer_explorer", "systolic_explorer", "offload_explorer"]
__all__ += ["collective_explorer", "matmul_explorer", "ring_explorer", "sharding_grid_explorer", "memory_explorer"]
__all__ += ["model_explorer", "attention_share_explorer", "kv_cache_explorer", "remat_explorer",
            "attention_roofline_explorer", "attention_share", "kv_cache_table", "remat_table"]
__all__ += ["training_roofline_explorer", "training_memory_explorer", "pipeline_explorer"]
__all__ += ["run_explorer", "bounds_explorer", "plan_explorer"]
__all__ += ["serving_explorer"]
__all__ += ["topology_explorer"]
__all__ += ["pareto_explorer", "latency_breakdown_explorer", "kv_variants_explorer"]
__all__ += ["gpu_anatomy_explorer", "fat_tree_explorer", "gpu_layout_explorer"]
__all__ += ["op_explorer", "breakdown_explorer", "profile_example_explorer", "collective_check_explorer",
            "memory_check_explorer"]
__all__ += ["shard_program_explorer", "routing_explorer", "collective_matmul_explorer"]
