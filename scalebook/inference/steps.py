"""The step model of inference: KV caches, prefill and decode step times, batch limits, latency/throughput.

A decode step (How To Scale Your Model, ch. 7) reads every parameter and every sequence's KV cache from
HBM and does 2 FLOPs per parameter per sequence. The attention reads cannot hide behind the MLP, while the
parameter reads and the MLP arithmetic overlap, so with W and C summed over the chips

    T_step = B·KV / W  +  max(2·B·P / C,  P·b / W)        (B sequences, P parameters, b bytes per parameter)

and, when the model is split over chips, the per-layer collectives of tensor parallelism run at the same
time: the step takes the larger of that and their time. Prefill is a roofline too: the larger of its FLOPs
(2·P·T plus attention, at an assumed fraction `assumed_mfu` of the peak) and its weight reads, beside its TP
collectives.

`efficiency="calibrated"` (default "ideal": the book's bounds, which every chapter uses) runs the same
accounting at the chip's measured fractions (`Chip.efficiency`): the best matmul's share of the peak, the
achieved HBM bandwidth, NCCL/ICI bus bandwidth, and a fixed latency per collective call. Calibrated, a
tensor-parallel block ends in one AllReduce that waits for the matmul before it and holds up the next, so
the collectives ADD to the step instead of hiding under it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..collectives import all_gather, all_reduce, default_mesh, reduce_scatter
from ..estimate import StepEstimate
from ..gemm import layer_efficiency
from ..hardware.chips import Chip, Efficiency, get_chip
from ..hardware.gpu import GpuCluster
from ..hardware.topology import TpuMesh
from ..models import TransformerConfig, expected_experts, get_model
from ..roofline import critical_batch
from ..tables import Table
from ..units import LARGEST, checks, fmt_time, geomspace, is_a

__all__ = ["StepEstimate", "kv_cache_bytes", "decode_time", "tp_collectives", "weights_read", "decode_step", "prefill",
           "max_batch", "pareto", "decode_critical_batch", "Breakdown", "breakdown_curves"]


@checks(context="nonneg", batch="count", bytes_per_value="size", local_layers="frac0", window="nonneg",
        share="count")
def kv_cache_bytes(model: TransformerConfig | str, context: float, batch: int = 1, bytes_per_value: float = 2,
                   local_layers: float = 0.0, window: float = 0, share: int = 1) -> float:
    """Return the KV-cache bytes of `batch` sequences of `context` tokens.

    Variants: a fraction `local_layers` of the layers attends to only the last `window` tokens (local/sliding
    attention), and groups of `share` consecutive layers may share one cache (cross-layer sharing). MHA, GQA
    and MQA are the model's K (K = N, 1 < K < N, K = 1).
    """
    model = get_model(model)
    local_context = min(context, window) if window else context
    tokens = (1 - local_layers) * context + local_layers * local_context
    return batch * tokens * model.kv_bytes_per_token(bytes_per_value) / share


@checks(params="size", kv_bytes_per_seq="nonneg", batch="count", n_chips="count", param_bytes="size",
        compute_dtype="dtype", t_ici="nonneg", label="text", elementwise_bytes="nonneg", kv_reads="size",
        flop_params="?size", held_params="?size")
def decode_time(params: float, kv_bytes_per_seq: float, batch: int, chip: Chip | str, n_chips: int,
                param_bytes: float = 2, compute_dtype: str = "bf16", t_ici: float = 0.0,
                label: str = "", efficiency: str | Efficiency = "ideal",
                elementwise_bytes: float = 0.0, kv_reads: float = 1.0,
                flop_params: float | None = None, held_params: float | None = None) -> StepEstimate:
    """Return the `StepEstimate` of one decode step from raw counts: `params` parameters of `param_bytes`
    bytes each, `kv_bytes_per_seq` bytes of KV cache per sequence, `batch` sequences, on `n_chips` chips
    that split weights and caches evenly. Calibrated, HBM and FLOP/s run at the chip's measured fractions,
    `t_ici` adds to the step and so do `elementwise_bytes` per chip at the achieved HBM bandwidth.
    `kv_reads`: how many times the attention kernel reads each cached byte per step (1 when it is read once;
    the cache's size, `memory_per_chip`, does not change with it). `flop_params`: the parameters each sequence's
    token multiplies by (an MoE's active ones; default `params`); `params` are the ones read (an MoE's experts
    the batch routes to), while the chips hold `held_params` (default `params`)."""
    chip = get_chip(chip)
    eff = chip.efficiency(efficiency)
    W = n_chips * chip.hbm_bandwidth * eff.hbm
    C = n_chips * chip.peak_flops(compute_dtype) * eff.compute(compute_dtype)
    flops = 2 * batch * (params if flop_params is None else flop_params)
    held = (params if held_params is None else held_params) * param_bytes + batch * kv_bytes_per_seq
    kv_traffic = batch * kv_bytes_per_seq * kv_reads
    nbytes = params * param_bytes + kv_traffic
    return StepEstimate(flops, nbytes, flops / C, nbytes / W, channel="HBM", label=label,
                        t_params=params * param_bytes / W, t_kv=kv_traffic / W, t_ici=t_ici,
                        t_elementwise=elementwise_bytes * n_chips / W if efficiency != "ideal" else 0.0,
                        batch=batch, ici_adds=efficiency != "ideal", memory_per_chip=held / n_chips,
                        hbm_per_chip=chip.hbm_bytes)


@checks(model=is_a(TransformerConfig), mesh=is_a(TpuMesh, GpuCluster), tokens="size", act_bytes="size")
def tp_collectives(model: TransformerConfig, mesh: TpuMesh | GpuCluster, tokens: float, act_bytes: float,
                    efficiency: str | Efficiency = "ideal") -> float:
    """Seconds of tensor-parallel collectives per step over `tokens` tokens: per layer, two blocks each
    all-gather their [tokens, D] input and reduce-scatter their output over the whole mesh (latency floors
    included). Calibrated, each block's pair is one AllReduce call (as Megatron-style TP runs it), paying
    one per-call latency."""
    V = tokens * model.D * act_bytes
    if efficiency == "ideal":
        per_block = all_gather(mesh, None, V).time + reduce_scatter(mesh, None, V).time
    else:
        per_block = all_reduce(mesh, None, V, efficiency=efficiency).time
    return 2 * model.L * per_block


def _elementwise_bytes(model: TransformerConfig, tokens: float, n_chips: int, act_bytes: float = 2) -> float:
    """HBM bytes per chip of a forward pass's memory-bound work over `tokens` tokens, tensor-parallel over
    `n_chips`: per layer, two norms (read and write D values each) and two residual adds (read 2·D, write D),
    replicated on every chip, and the rotary embedding of Q and K (read and write) and the activation function
    (a gated one reads 2·F and writes F, GELU reads and writes F), split over the chips."""
    split = 2 * (model.N + model.K) * model.H + (3 if model.gated else 2) * model.F
    return tokens * model.L * (10 * model.D + split / n_chips) * act_bytes


@checks(n_chips="count")
def _mesh_for(chip: Chip, n_chips: int, mesh: TpuMesh | GpuCluster | None,
              efficiency: str | Efficiency) -> TpuMesh | GpuCluster | None:
    """The mesh whose TP collectives a step pays: the one given; calibrated, a default one; else none."""
    if mesh is not None and mesh.n_chips != n_chips:
        raise ValueError(f"mesh has {mesh.n_chips} chips but n_chips={n_chips}")
    if mesh is None and efficiency != "ideal" and n_chips > 1:
        return default_mesh(chip, n_chips)
    return mesh if n_chips > 1 else None


def _network(mesh: TpuMesh | GpuCluster | None) -> str:
    """What a step's collectives cross: 'ICI' on a TPU slice, 'NVLink' within a GPU node, else 'NVLink + network'."""
    if isinstance(mesh, GpuCluster):
        return "NVLink" if mesh.n_chips <= mesh.gpus_per_node else "NVLink + network"
    return "ICI"


@checks(model=is_a(TransformerConfig), tokens="nonneg", ep="count")
def weights_read(model: TransformerConfig, tokens: float, ep: int = 1) -> float:
    """Return the parameters a forward pass over `tokens` tokens reads, as the busiest chip sees them: all of a
    dense model; of an MoE, everything but the routed experts, plus the experts the tokens route to. With the
    experts split `ep` ways (expert parallelism) the busiest group reads at least one of its E/ep experts once
    any token routes there, so the step waits for it: max(1, its expected share), counted for all ep groups
    (`models.expected_experts`: E·(1 - (1 - k/E)^tokens) distinct experts over the whole model)."""
    if ep > 1 and (not model.is_moe or model.E % ep):
        raise ValueError(f"ep={ep} must divide the experts of an MoE (E={model.E})")
    if not model.is_moe:
        return model.param_count()
    routed = model.components()["MoE routed experts"][0]
    group = model.E / ep
    touched = min(group, max(1.0, expected_experts(tokens, model.E, model.k) / ep)) if tokens > 0 else group
    return model.param_count() - routed + routed * touched / group


@checks(n_chips="count", batch="count", context="nonneg", param_bytes="size", kv_bytes="size", compute_dtype="dtype",
        mesh=is_a(TpuMesh, GpuCluster, type(None)), gqa_kernel="flag", ep="count")
def decode_step(model: TransformerConfig | str, chip: Chip | str, n_chips: int, batch: int, context: float,
                param_bytes: float = 2, kv_bytes: float = 2, compute_dtype: str = "bf16",
                mesh: TpuMesh | GpuCluster | None = None, efficiency: str | Efficiency = "ideal",
                gqa_kernel: bool = True, ep: int = 1) -> StepEstimate:
    """Return the `StepEstimate` of a decode step of `batch` sequences at `context` tokens each.

    Every weight a step uses is counted as read each step (the book's convention; the embedding table's lookups
    read far less) and as doing 2 FLOPs per sequence. An MoE's step reads only the experts its batch routes to
    (`weights_read`: with `ep`-way expert parallelism, the busiest group's share) and multiplies each token by
    its active parameters; its chips hold every expert.

    `param_bytes` and `kv_bytes` are bytes per weight and per cached value (1 for int8). With a `mesh` (of
    `n_chips` chips, a TPU slice or a `GpuCluster`), the tensor-parallel collectives of the bf16 activations
    are added as `t_ici`. `efficiency='calibrated'` uses the chip's measured fractions and per-call latency
    (and a default slice of `n_chips` when no `mesh` is given); see the module docstring.

    `gqa_kernel=False` prices an attention kernel that does not share a K/V head among the N/K query heads of
    its group: it reads each cached K/V head once per query head, N/K times the bytes. TensorRT-LLM's masked
    MHA kernel before XQA (v0.8) did this — one thread block per (sequence, query head), each streaming its
    K/V head's cache — and the XQA kernel that shares the reads gave Llama-70B 1.9-2.4x the throughput.
    """
    model, chip = get_model(model), get_chip(chip)
    if ep > 1 and (not model.is_moe or model.E % ep or n_chips % ep):
        raise ValueError(f"ep={ep} must divide the experts E={model.E} (an MoE) and n_chips={n_chips}")
    mesh = _mesh_for(chip, n_chips, mesh, efficiency)
    kv = kv_cache_bytes(model, context, 1, kv_bytes)
    t_ici = tp_collectives(model, mesh, batch, 2, efficiency) if mesh is not None else 0.0
    step = decode_time(weights_read(model, batch, ep), kv, batch, chip, n_chips, param_bytes, compute_dtype, t_ici,
                       label=f"{model.name} decode, batch {batch}, context {context:g} on {n_chips} × "
                             f"{chip.name}", efficiency=efficiency,
                       elementwise_bytes=_elementwise_bytes(model, batch, n_chips),
                       kv_reads=1.0 if gqa_kernel else model.N / model.K,
                       flop_params=model.param_count(active=True), held_params=model.param_count())
    return replace(step, network=_network(mesh))


@checks(n_chips="count", tokens="size", assumed_mfu="?fraction", compute_dtype="dtype", attention="flag",
        param_bytes="size", kv_bytes="size", batch="count", mesh=is_a(TpuMesh, GpuCluster, type(None)))
def prefill(model: TransformerConfig | str, chip: Chip | str, n_chips: int, tokens: float,
            assumed_mfu: float | None = None, compute_dtype: str = "bf16", attention: bool = True,
            param_bytes: float = 2, kv_bytes: float = 2, mesh: TpuMesh | GpuCluster | None = None,
            efficiency: str | Efficiency = "ideal", batch: int = 1) -> StepEstimate:
    """Return the `StepEstimate` of prefilling `batch` prompts of `tokens` tokens each on `n_chips` chips.

    A roofline: the FLOPs (2 per matmul parameter per token, plus causal attention unless `attention=False`;
    the book's 2·P·T) at a fraction `assumed_mfu` of the peak, against reading every weight (`param_bytes` each)
    and writing the prompt's KV cache (`kv_bytes` per value) from HBM; with a `mesh`, the tensor-parallel
    collectives of the [tokens, D] activations. `assumed_mfu` (an input, not a measurement) defaults to 0.4 (the
    book's working assumption) when ideal and to the chip's measured matmul fraction when calibrated;
    `tokens_per_second` is prompt tokens/s.
    Calibrated, the norms, residual adds, rotary and activation function between the matmuls add their HBM
    traffic (`t_elementwise`), as in a decode step, the attention's FLOPs run at the flash kernel's measured
    share of the 16-bit peak (`Efficiency.attention`, as in `training.predict`) and the matmuls at the share their
    shapes keep (`gemm.layer_efficiency`) unless `assumed_mfu` is given, and each layer pays its kernels' fixed cost
    (`Efficiency.layer_overhead`, `t_fixed`). With `batch` prompts the FLOPs, caches and collectives scale with
    it; the weights are read once (an MoE's: the experts its tokens route to).
    """
    model, chip = get_model(model), get_chip(chip)
    eff = chip.efficiency(efficiency)
    calibrated = efficiency != "ideal" and assumed_mfu is None
    # calibrated, a flash kernel runs the attention at its own measured share of the 16-bit peak
    flash = calibrated and attention and eff.attention is not None
    mfu = (0.4 if efficiency == "ideal" else eff.compute(compute_dtype)) if assumed_mfu is None else assumed_mfu
    mesh = _mesh_for(chip, n_chips, mesh, efficiency)
    flops = model.flops_per_token(int(tokens) if attention else 0, training=False) * tokens * batch
    # calibrated, the matmuls keep the share their [tokens, width/n] shapes allow (tile and wave quantization)
    shape = layer_efficiency(model, tokens * batch, chip, n_chips) if calibrated else 1.0
    C = n_chips * chip.peak_flops(compute_dtype) * mfu * shape
    scores = flops - model.flops_per_token(0, training=False) * tokens * batch if flash else 0.0
    t_math = (flops - scores) / C + scores / (n_chips * chip.peak_flops() * eff.attention) if flash else flops / C
    W = n_chips * chip.hbm_bandwidth * eff.hbm
    weights, cache = weights_read(model, tokens * batch) * param_bytes, kv_cache_bytes(model, tokens, batch, kv_bytes)
    t_ici = tp_collectives(model, mesh, tokens * batch, 2, efficiency) if mesh is not None else 0.0
    t_elementwise = 0.0 if efficiency == "ideal" else \
        _elementwise_bytes(model, tokens * batch, n_chips) * n_chips / W
    return StepEstimate(flops, weights + cache, t_math, (weights + cache) / W, channel="HBM",
                        label=f"{model.name} prefill of {tokens:g} tokens", t_params=(weights + cache) / W,
                        t_ici=t_ici, t_elementwise=t_elementwise, t_fixed=eff.layer_overhead * model.L,
                        batch=max(1, round(tokens * batch)), ici_adds=efficiency != "ideal",
                        memory_per_chip=(model.param_count() * param_bytes + cache) / n_chips,
                        hbm_per_chip=chip.hbm_bytes, network=_network(mesh))


@checks(n_chips="count", context="nonneg", param_bytes="size", kv_bytes="size")
def max_batch(model: TransformerConfig | str, chip: Chip | str, n_chips: int, context: float,
              param_bytes: float = 2, kv_bytes: float = 2) -> int:
    """Return the most sequences of `context` tokens whose KV caches fit beside the weights in HBM."""
    model, chip = get_model(model), get_chip(chip)
    free = n_chips * chip.hbm_bytes - model.param_count() * param_bytes
    per_seq = kv_cache_bytes(model, context, 1, kv_bytes)
    return max(0, math.floor(min(free / per_seq, LARGEST))) if per_seq else 0  # a sliver of context: capped


@checks(n_chips="count", context="nonneg", param_bytes="size", kv_bytes="size", batches="?counts",
        mesh=is_a(TpuMesh, type(None)))
def pareto(model: TransformerConfig | str, chip: Chip | str, n_chips: int, context: float,
           batches: Sequence[int] | None = None, param_bytes: float = 2, kv_bytes: float = 2,
           mesh: TpuMesh | None = None) -> Table:
    """Return the latency/throughput trade-off over batch: per batch (up to what fits), the step time
    (per-token latency, s) and the tokens/s per chip. By default the batches double from 1 and end at the largest
    batch whose KV caches fit (none when the weights leave no room)."""
    limit = max_batch(model, chip, n_chips, context, param_bytes, kv_bytes)
    if batches is None:
        batches = sorted({2**i for i in range(limit.bit_length())} | {limit}) if limit else []
    batches = [b for b in batches if b <= limit] or ([limit] if limit else [])
    rows = []
    for b in batches:
        step = decode_step(model, chip, n_chips, b, context, param_bytes, kv_bytes, mesh=mesh)
        rows.append({"batch": b, "step": step.time, "tokens/s/chip": step.tokens_per_second / n_chips,
                     "bound": step.bound})
    return Table(rows, formats={"step": fmt_time, "tokens/s/chip": lambda v: f"{v:.4g}"},
                 title=f"latency vs throughput, context {context:g}, {n_chips} × {get_chip(chip).name}")


@checks(param_bytes="size")
def decode_critical_batch(chip: Chip | str, param_bytes: float = 2) -> float:
    """Return the batch (sequences) at which a decode step's FLOPs overtake its weight reads: the critical batch of
    matmuls with `param_bytes`-byte weights (2 bf16, 1 int8, 0.5 int4) and bf16 arithmetic."""
    return critical_batch(chip, weight_dtype={1: "int8", 0.5: "int4"}.get(param_bytes, "bf16"))


@dataclass(frozen=True)
class Breakdown:
    """Each term of a decode step (seconds) against the batch; `crossover` is where the FLOPs overtake the weight
    reads (the critical batch), `limit` the largest batch whose KV caches fit in HBM."""

    batches: list[int]
    t_params: list[float]
    t_kv: list[float]
    t_math: list[float]
    step: list[float]
    crossover: float
    limit: int


@checks(n_chips="count", context="size", param_bytes="size", kv_bytes="size", batches="?sizes")
def breakdown_curves(model: TransformerConfig | str = "llama3-70b", chip: Chip | str = "v5e", n_chips: int = 16,
                     context: float = 8192, param_bytes: float = 1, kv_bytes: float = 1,
                     batches: Sequence[float] | None = None) -> Breakdown:
    """Return the decode step's weight-read, KV-read and FLOP times against the batch (default 1 ... 4096)."""
    # decode steps take whole sequences: round the requested batches (a log-spaced grid) to distinct integers
    bs = sorted({max(1, int(round(b))) for b in (geomspace(1, 4096, 61) if batches is None else batches)})
    steps = [decode_step(model, chip, n_chips, b, context, param_bytes, kv_bytes) for b in bs]
    return Breakdown(bs, [s.t_params for s in steps], [s.t_kv for s in steps], [s.t_math for s in steps],
                     [s.time for s in steps], decode_critical_batch(chip, param_bytes),
                     max_batch(model, chip, n_chips, context, param_bytes, kv_bytes))
