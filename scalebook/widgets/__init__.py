"""Interactive explorers on core ipywidgets (loaded only when used). One module per topic; `core` holds
`explore`, the `Explorer` every topic builds on, and the roofline explorer; `web` describes an explorer for the
website. Each name loads its module on first use: `sb.widgets.roofline_explorer()`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import (
        core,
        gpus,
        inference,
        jax_programs,
        llama,
        llama_serving,
        models,
        profiling,
        serving,
        sharding,
        tpu,
        training,
        web,
    )
    from .core import Explorer, explore, roofline_chart, roofline_explorer
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
    from .web import Log, Unfit

_TABLE = {
    **{name: "core" for name in ("Explorer", "explore", "roofline_chart", "roofline_explorer")},
    "Log": "web",
    "Unfit": "web",
    **{name: "tpu" for name in ("torus_explorer", "transfer_explorer", "systolic_explorer", "offload_explorer")},
    **{name: "sharding" for name in ("collective_explorer", "matmul_explorer", "ring_explorer",
                                     "sharding_grid_explorer", "memory_explorer")},
    **{name: "models" for name in ("model_explorer", "attention_share_explorer", "kv_cache_explorer", "remat_explorer",
                                   "attention_roofline_explorer", "attention_share", "kv_cache_table", "remat_table")},
    **{name: "training" for name in ("training_roofline_explorer", "training_memory_explorer", "pipeline_explorer")},
    **{name: "llama" for name in ("run_explorer", "bounds_explorer", "plan_explorer")},
    "serving_explorer": "serving",
    "topology_explorer": "llama_serving",
    **{name: "inference" for name in ("pareto_explorer", "latency_breakdown_explorer", "kv_variants_explorer")},
    **{name: "gpus" for name in ("gpu_anatomy_explorer", "fat_tree_explorer", "gpu_layout_explorer")},
    **{name: "profiling" for name in ("op_explorer", "breakdown_explorer", "profile_example_explorer",
                                      "collective_check_explorer", "memory_check_explorer")},
    **{name: "jax_programs" for name in ("shard_program_explorer", "routing_explorer", "collective_matmul_explorer")},
    **{name: name for name in ("core", "web", "tpu", "sharding", "models", "training", "llama", "serving",
                               "llama_serving", "inference", "gpus", "profiling", "jax_programs")},
}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
