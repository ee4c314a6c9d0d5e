"""Inference: what a prefill and a decode step cost, what serving a model takes and costs, mixture of experts in
service, and a simulator of a serving engine.

One package on the ground floor (the standard library is enough: it runs in the reader's browser). The modules,
each building only on those before it:

    steps.py       KV caches, prefill and decode step times on a serving layout (TP, DP attention, EP), batch
                   limits, the latency/throughput trade-off
    caches.py      the KV cache under each of ch. 7's tricks; the smallest slice that holds a model
    cost.py        chip-hour prices (the one price look-up) and dollars per million tokens
    techniques.py  MoE's critical batch, weight-stationary sharding, speculative decoding, disaggregation
    deployment.py  ch. 8's planning tables: slices, queries per second, latency budgets, cost per token
    moe.py         mixture of experts in service: routing capacity, the expert-parallel AllToAll, the cache per chip
    serving/       the discrete-event serving simulator: workload and engine, the simulator, its report

This face serves the step model's names flat (`sb.inference.decode_step`) and each module by its name; the top
face serves `sb.deployment`, `sb.moe` and `sb.serving` as well. Each name loads its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import caches, cost, deployment, moe, serving, steps, techniques
    from .caches import evicted_per_step, kv_variant_table, smallest_topology
    from .cost import chip_price, cost_per_million_tokens, prices
    from .steps import (
        Breakdown,
        ChipShare,
        StepEstimate,
        breakdown_curves,
        chip_share,
        decode_critical_batch,
        decode_step,
        decode_time,
        ep_collectives,
        kv_cache_bytes,
        max_batch,
        pareto,
        prefill,
        serving_layout,
        tp_collectives,
        weights_read,
    )
    from .techniques import disaggregation_ratio, moe_critical_batch, speculative_speedup, weight_stationary

_TABLE = {
    **{name: "steps" for name in ("StepEstimate", "kv_cache_bytes", "decode_time", "tp_collectives", "ep_collectives",
                                  "weights_read", "serving_layout", "ChipShare", "chip_share", "decode_step",
                                  "prefill", "max_batch", "pareto", "decode_critical_batch", "Breakdown",
                                  "breakdown_curves")},
    **{name: "caches" for name in ("kv_variant_table", "smallest_topology", "evicted_per_step")},
    **{name: "cost" for name in ("prices", "chip_price", "cost_per_million_tokens")},
    **{name: "techniques" for name in ("moe_critical_batch", "weight_stationary", "speculative_speedup",
                                       "disaggregation_ratio")},
    **{name: name for name in ("steps", "caches", "cost", "techniques", "deployment", "moe", "serving")},
}
# Old names a reader's notebook may still use: name → (message, target, removal release).
_DEPRECATED: dict[str, tuple[str, str, str]] = {}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, _DEPRECATED)
