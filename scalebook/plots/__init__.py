"""Matplotlib figures for the chapters; matplotlib is imported only when a figure is drawn.

Every function returns a closed `Figure` (a notebook shows it once, `fig.savefig` works in scripts);
every axis has a label with its unit and every figure a title. One module per topic.
"""

from __future__ import annotations

from . import kv_cache, parallelism, schedules, serving, trace
from .array_layouts import matmul_cases, sharding_gallery
from .chip import (
    banner,
    chip_diagram,
    elementwise_pipeline,
    hosts,
    memory_hierarchy,
    mxu_pipeline,
    pod_cubes,
    slices,
    tray,
)
from .collective_steps import collective_matmul, collectives_summary, overlap_timeline, torus_steps
from .gpu_diagrams import (
    expert_parallel,
    gpu_chip,
    gpu_pipeline,
    megatron_configs,
    nvl72,
    nvlink_nodes,
    nvswitch,
    sharp_bandwidth,
    sharp_diagram,
    sm_diagram,
    warp_divergence,
)
from .gpus import achieved_bandwidth, fat_tree, level_bandwidth, ragged_all_to_all, sharded_all_gather, tpu_vs_gpu
from .inference import kv_variants, latency_breakdown, pareto, throughput_vs_batch
from .llama import llama_config
from .models import attention_share, param_breakdown
from .profile import timeline
from .roofline import batch_roofline, roofline, sweep
from .sharding import collective_vs_size, ring_steps, sharding_grid
from .tpu import bandwidth_ladder, stage_breakdown, systolic, systolic_strip, torus
from .training import memory_bars, pipeline, strategy_times
from .transformer import flash_tiles, layer_diagram, matmul_flops, moe_diagram
from .validation import validation

__all__ = ["roofline", "batch_roofline", "sweep"]
__all__ += ["bandwidth_ladder", "torus", "systolic", "stage_breakdown"]
__all__ += ["sharding_grid", "ring_steps", "collective_vs_size"]
__all__ += ["attention_share", "param_breakdown"]
__all__ += ["timeline", "validation"]
__all__ += ["strategy_times", "memory_bars", "pipeline"]
__all__ += ["pareto", "latency_breakdown", "kv_variants", "throughput_vs_batch", "llama_config"]
# diagram modules, reached by name: sb.plots.parallelism.layout("fsdp")
__all__ += ["kv_cache", "parallelism", "schedules", "serving", "trace"]
__all__ += ["gpu_chip", "sm_diagram", "warp_divergence", "nvlink_nodes", "sharp_diagram", "sharp_bandwidth", "nvl72",
            "nvswitch", "gpu_pipeline", "megatron_configs", "expert_parallel"]
__all__ += ["fat_tree", "level_bandwidth", "sharded_all_gather", "tpu_vs_gpu", "ragged_all_to_all",
            "achieved_bandwidth"]
__all__ += ["banner", "chip_diagram", "memory_hierarchy", "tray", "hosts", "slices", "pod_cubes",
            "elementwise_pipeline", "mxu_pipeline", "systolic_strip"]
__all__ += ["sharding_gallery", "matmul_cases", "torus_steps", "collectives_summary", "collective_matmul",
            "overlap_timeline"]
__all__ += ["layer_diagram", "moe_diagram", "flash_tiles", "matmul_flops"]
