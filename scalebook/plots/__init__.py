"""Matplotlib figures for the chapters, one module per topic; matplotlib is imported only when a figure is drawn.

Readers call a figure through its module: `sb.plots.roofline.roofline("v5e")`, `sb.plots.chip.chip_diagram()`,
`sb.plots.parallelism.layout("fsdp")`. Each module loads on first use, and `import scalebook.plots.roofline as m`
binds the module. Every function returns a closed `Figure` (a notebook shows it once, `fig.savefig` works in
scripts); every axis has a label with its unit and every figure a title. `base` (the house style) and `diagram`
(boxes and arrows) are the modules' own tools.

The figures were once all on this face (`sb.plots.chip_diagram()`); those names still work, with a
`DeprecationWarning`, until release 0.3. Two of them, `roofline` and `validation`, are also the names of their
modules, and the module wins: `sb.plots.roofline.roofline(...)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import (
        array_layouts,
        chip,
        collective_steps,
        experts,
        gpu_diagrams,
        gpus,
        inference,
        kv_cache,
        llama,
        measured_collectives,
        models,
        parallelism,
        profile,
        roofline,
        schedules,
        serving,
        sharding,
        tpu,
        trace,
        training,
        transformer,
        validation,
    )

_MODULES = ("array_layouts", "chip", "collective_steps", "experts", "gpu_diagrams", "gpus", "inference", "kv_cache",
            "llama", "models", "parallelism", "profile", "roofline", "schedules", "serving", "sharding", "tpu",
            "trace", "training", "transformer", "validation", "measured_collectives")
_TABLE = {name: name for name in _MODULES}
# The figures' old flat names (name → its module), each deprecated for `sb.plots.<module>.<name>`.
_FLAT = {
    **dict.fromkeys(("sharding_gallery", "matmul_cases"), "array_layouts"),
    **dict.fromkeys(("banner", "chip_diagram", "memory_hierarchy", "tray", "hosts", "slices", "pod_cubes",
                     "elementwise_pipeline", "mxu_pipeline"), "chip"),
    **dict.fromkeys(("torus_steps", "collectives_summary", "collective_matmul", "overlap_timeline"),
                    "collective_steps"),
    **dict.fromkeys(("gpu_chip", "sm_diagram", "warp_divergence", "nvlink_nodes", "sharp_diagram", "sharp_bandwidth",
                     "nvl72", "nvswitch", "gpu_pipeline", "megatron_configs", "expert_parallel"), "gpu_diagrams"),
    **dict.fromkeys(("fat_tree", "level_bandwidth", "sharded_all_gather", "tpu_vs_gpu", "ragged_all_to_all",
                     "achieved_bandwidth"), "gpus"),
    **dict.fromkeys(("pareto", "latency_breakdown", "kv_variants", "throughput_vs_batch"), "inference"),
    "llama_config": "llama",
    **dict.fromkeys(("attention_share", "param_breakdown"), "models"),
    "timeline": "profile",
    **dict.fromkeys(("batch_roofline", "sweep"), "roofline"),
    **dict.fromkeys(("sharding_grid", "ring_steps", "collective_vs_size"), "sharding"),
    **dict.fromkeys(("bandwidth_ladder", "torus", "systolic", "stage_breakdown", "systolic_strip"), "tpu"),
    **dict.fromkeys(("strategy_times", "memory_bars", "pipeline"), "training"),
    **dict.fromkeys(("layer_diagram", "moe_diagram", "flash_tiles", "matmul_flops"), "transformer"),
}
_DEPRECATED = {name: (f"use sb.plots.{module}.{name}", f"{module}:{name}", "0.3") for name, module in _FLAT.items()}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, _DEPRECATED)
