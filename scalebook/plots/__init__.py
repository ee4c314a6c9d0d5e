"""Matplotlib figures for the chapters; matplotlib is imported only when a figure is drawn.

Every function returns a closed `Figure` (a notebook shows it once, `fig.savefig` works in scripts);
every axis has a label with its unit and every figure a title. One module per topic.
"""

from __future__ import annotations

from .gpus import achieved_bandwidth, fat_tree, level_bandwidth, ragged_all_to_all, sharded_all_gather, tpu_vs_gpu
from .inference import kv_variants, latency_breakdown, pareto, throughput_vs_batch
from .models import attention_share, param_breakdown
from .profile import timeline
from .roofline import batch_roofline, roofline, sweep
from .sharding import collective_vs_size, ring_steps, sharding_grid
from .tpu import bandwidth_ladder, stage_breakdown, systolic, torus
from .training import memory_bars, pipeline, strategy_times

__all__ = ["roofline", "batch_roofline", "sweep"]
__all__ += ["bandwidth_ladder", "torus", "systolic", "stage_breakdown"]
__all__ += ["sharding_grid", "ring_steps", "collective_vs_size"]
__all__ += ["attention_share", "param_breakdown"]
__all__ += ["timeline"]
__all__ += ["strategy_times", "memory_bars", "pipeline"]
__all__ += ["pareto", "latency_breakdown", "kv_variants", "throughput_vs_batch"]
__all__ += ["fat_tree", "level_bandwidth", "sharded_all_gather", "tpu_vs_gpu", "ragged_all_to_all",
            "achieved_bandwidth"]
