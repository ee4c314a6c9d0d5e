"""The step model of inference: KV caches, prefill and decode step times, batch limits, latency/throughput.

A decode step (How To Scale Your Model, ch. 7) reads every parameter and every sequence's KV cache from
HBM and does 2 FLOPs per parameter per sequence. The attention reads cannot hide behind the MLP, while the
parameter reads and the MLP arithmetic overlap, so with W and C summed over the chips

    T_step = B·KV / W  +  max(2·B·P / C,  P·b / W)        (B sequences, P parameters, b bytes per parameter)

and, when the model is split over chips, the per-layer collectives of tensor parallelism run at the same
time: the step takes the larger of that and their time. Prefill is a roofline too: the larger of its FLOPs
(2·P·T plus attention; ideal at the peak, or at a fraction `assumed_mfu` of it) and its weight reads, beside its TP
collectives. Ideal is a bound: the peak FLOP/s and bandwidth, every byte read once, the links overlapped.

By default the chips split the model by tensor parallelism. A `layout` (training's `Layout`, read for serving by
`serving_layout`) prices DP attention, expert parallelism and TP per replica, the way DeepSeek-V3 is served: the
step waits for the busiest chip (`chip_share`: its replica's tokens, weights and caches, its experts' tokens), which
pays its replica's TP collectives and each MoE layer's dispatch and combine (`ep_collectives`).

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

from ..collectives import all_gather, all_reduce, all_to_all, default_mesh, reduce_scatter
from ..estimate import Estimate, StepEstimate
from ..gemm import layer_efficiency
from ..hardware.chips import Chip, Efficiency, get_chip
from ..hardware.gpu import GpuCluster
from ..hardware.topology import TpuMesh
from ..models import TransformerConfig, expected_experts, get_model
from ..roofline import critical_batch
from ..tables import Table
from ..training.layout import Layout
from ..units import LARGEST, checks, dtype_bytes, fmt_time, geomspace, is_a

__all__ = ["StepEstimate", "kv_cache_bytes", "decode_time", "tp_collectives", "ep_collectives", "weights_read",
           "serving_layout", "ChipShare", "chip_share", "decode_step", "prefill", "max_batch", "pareto",
           "decode_critical_batch", "Breakdown", "breakdown_curves"]


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
    `t_ici` adds to the step and so do `elementwise_bytes` per chip at the achieved HBM bandwidth, and the weight
    reads and the arithmetic combine by `Efficiency.overlap` (None, the max, on every chip as calibrated).
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
                        hbm_per_chip=chip.hbm_bytes, overlap=eff.overlap)


@checks(model=is_a(TransformerConfig), mesh=is_a(TpuMesh, GpuCluster), tokens="size", act_bytes="size",
        blocks="?count")
def tp_collectives(model: TransformerConfig, mesh: TpuMesh | GpuCluster, tokens: float, act_bytes: float,
                   efficiency: str | Efficiency = "ideal", blocks: int | None = None) -> float:
    """Seconds of tensor-parallel collectives per step over `tokens` tokens: per layer, two blocks (attention and
    MLP; `blocks` in all, default 2·L) each all-gather their [tokens, D] input and reduce-scatter their output
    over the whole mesh (latency floors included). Calibrated, each block's pair is one AllReduce call (as
    Megatron-style TP runs it), paying one per-call latency."""
    V = tokens * model.D * act_bytes
    if efficiency == "ideal":
        per_block = all_gather(mesh, None, V).time + reduce_scatter(mesh, None, V).time
    else:
        per_block = all_reduce(mesh, None, V, efficiency=efficiency).time
    return (2 * model.L if blocks is None else blocks) * per_block


@checks(model=is_a(TransformerConfig), mesh=is_a(TpuMesh, GpuCluster), tokens="nonneg", dispatch_bytes="size",
        combine_bytes="size")
def ep_collectives(model: TransformerConfig, mesh: TpuMesh | GpuCluster, tokens: float, dispatch_bytes: float = 1,
                   combine_bytes: float = 2, efficiency: str | Efficiency = "ideal") -> tuple[Estimate, Estimate]:
    """Return one MoE layer's two AllToAlls over an expert-parallel group (`mesh`), dispatch and combine, as
    `Estimate`s: each of the group's `tokens` tokens sends its D values (`dispatch_bytes` each) to the chips of its
    k experts, and their outputs (`combine_bytes` each) come back (ragged top-k AllToAlls,
    `collectives.all_to_all(..., top_k=k)`, whose `nbytes` is the whole group's array)."""
    top_k = min(model.k, mesh.n_chips)
    there, back = (all_to_all(mesh, None, tokens * model.D * b, top_k=top_k, efficiency=efficiency)
                   for b in (dispatch_bytes, combine_bytes))
    return there, back


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


@checks(model=is_a(TransformerConfig), n_chips="count", layout=is_a(Layout, type(None)))
def serving_layout(model: TransformerConfig, n_chips: int, layout: Layout | None = None) -> Layout:
    """Return the layout a prefill or decode step runs on `n_chips` chips: by default tensor parallelism over all
    of them; else `layout`, training's `Layout` read for serving: `dp` replicas of the attention (and of the dense
    layers), each with its own sequences (DP attention when `tp` is 1); `tp` chips splitting each replica's heads
    and MLP, and an MoE's experts unless `ep` > 1; `ep` ways the experts are split over all the chips (as SGLang
    and vLLM run DeepSeek-V3: EP over the DP-attention ranks), each expert's width over the chips / ep that share
    its group. Pipeline, context and FSDP degrees have no meaning here and are refused."""
    if layout is None:
        return Layout(tp=n_chips)
    if layout.chips != n_chips:
        raise ValueError(f"layout={layout} occupies {layout.chips} chips but n_chips={n_chips}")
    if layout.pp > 1 or layout.cp > 1 or layout.fsdp > 1:
        raise ValueError(f"layout={layout}: a serving step splits its chips by dp, tp and ep only (pp, cp and "
                         f"fsdp must be 1)")
    if layout.ep > 1 and (not model.is_moe or model.E % layout.ep):
        raise ValueError(f"layout={layout}: ep={layout.ep} must divide the experts of an MoE (E={model.E})")
    return layout


@dataclass(frozen=True)
class ChipShare:
    """The busiest chip's share of one forward pass under a serving `Layout`: the `tokens` its replica runs (its
    ceil(batch / dp) sequences) over `tp` chips, the tokens whose k routed experts it runs (`expert_tokens`, a
    share of a token for each), the parameters it holds and reads, its FLOPs of matmuls and of attention scores,
    and the tokens each expert-parallel group dispatches per MoE layer (0 without EP)."""

    tokens: float
    tp: int
    expert_tokens: float
    params_held: float
    params_read: float
    matmul_flops: float
    score_flops: float
    dispatched: float


@checks(model=is_a(TransformerConfig), layout=is_a(Layout), batch="count", tokens="size", matmul_per_token="nonneg",
        scores_per_token="nonneg")
def chip_share(model: TransformerConfig, layout: Layout, batch: int, tokens: float, matmul_per_token: float,
               scores_per_token: float = 0.0) -> ChipShare:
    """Return the busiest chip's `ChipShare` of a pass over `batch` sequences of `tokens` tokens each, at
    `matmul_per_token` FLOPs of matmuls and `scores_per_token` of attention scores per token. Its replica's
    attention, dense layers and shared experts are split `tp` ways; the routed experts `tp` ways within the replica
    (ep = 1), or over all the chips with every token of the batch routed to them (ep > 1: the busiest group reads
    what `weights_read` counts)."""
    n, tp, ep = layout.chips, layout.tp, layout.ep
    T_replica, T_all = math.ceil(batch / layout.dp) * tokens, batch * tokens
    routed, active = model.components()["MoE routed experts"] if model.is_moe else (0, 0)
    other = model.param_count() - routed
    if ep > 1:
        experts_read, experts_held = (weights_read(model, T_all, ep) - other) / n, routed / n
        expert_tokens, dispatched = T_all / n, T_all * ep / n
    else:
        experts_read, experts_held = (weights_read(model, T_replica) - other) / tp, routed / tp
        expert_tokens, dispatched = T_replica / tp, 0.0
    return ChipShare(T_replica, tp, expert_tokens, other / tp + experts_held, other / tp + experts_read,
                     T_replica * (matmul_per_token - 2 * active) / tp + expert_tokens * 2 * active,
                     T_replica * scores_per_token / tp, dispatched)


def _cache_per_chip(model: TransformerConfig, layout: Layout, batch: int, context: float, kv_bytes: float,
                    by_head: bool) -> float:
    """KV-cache bytes each chip of the busiest replica holds: its ceil(batch / dp) sequences' caches of `context`
    tokens over its tp chips. Split evenly (`by_head` False: the default layout, the book's accounting, by head and
    then by batch), or by key/value head as engines shard it: at most K ways, and an MLA cache (one latent per token,
    shared by every head) not at all; beyond that each chip keeps a copy, as vLLM's attention replicates the KV heads
    when tp > K (vllm/model_executor/models/deepseek_v2.py), the copies DP attention saves."""
    split = min(layout.tp, 1 if model.mla else model.K) if by_head else layout.tp
    return kv_cache_bytes(model, context, math.ceil(batch / layout.dp), kv_bytes) / split


def _elementwise_bytes(model: TransformerConfig, share: ChipShare, act_bytes: float = 2) -> float:
    """HBM bytes the busiest chip moves in a forward pass's memory-bound work (`share`): per layer, two norms
    (read and write D values each) and two residual adds (read 2·D, write D) for every token of its replica,
    replicated on its `tp` chips; the rotary embedding of Q and K (read and write) and the activation function (a
    gated one reads 2·F and writes F, GELU reads and writes F) split over them; of an MoE layer, the activations
    of the shared experts likewise and of the k routed experts for the tokens the chip runs them for."""
    gate = 3 if model.gated else 2
    width = model.F_expert or model.F
    split = 2 * (model.N + model.K) * model.H * model.L + gate * ((model.L - model.moe_layers) * model.F
                                                                 + model.moe_layers * model.shared * width)
    per_token = 10 * model.D * model.L + split / share.tp
    return (share.tokens * per_token + share.expert_tokens * model.moe_layers * gate * model.k * width) * act_bytes


def _layout_collectives(model: TransformerConfig, chip: Chip, layout: Layout, share: ChipShare,
                        mesh: TpuMesh | GpuCluster | None, efficiency: str | Efficiency,
                        dispatch_bytes: float) -> tuple[float, str]:
    """Seconds of a pass's collectives on the busiest chip, and what they cross: the tensor-parallel pairs of its
    replica (attention blocks, and MLP blocks where the experts are not split by EP) over `mesh` (tensor
    parallelism over all the chips) or each group's default slice, and each MoE layer's dispatch and combine over
    its EP group. Ideal without a `mesh`, none (the book's bound: the links overlap)."""
    if layout.dp == 1 and layout.ep == 1:
        tp_mesh, ep_mesh = _mesh_for(chip, layout.tp, mesh, efficiency), None
    elif mesh is not None:
        raise ValueError(f"mesh={mesh} prices tensor parallelism over all the chips; with layout={layout} each "
                         f"group takes its chip's default slice (give mesh=None)")
    else:
        tp_mesh, ep_mesh = (_mesh_for(chip, g, None, efficiency) for g in (layout.tp, layout.ep))
    blocks = model.L + (model.L if layout.ep == 1 else model.L - model.moe_layers)
    t_ici = tp_collectives(model, tp_mesh, share.tokens, 2, efficiency, blocks) if tp_mesh is not None else 0.0
    if ep_mesh is not None:
        there, back = ep_collectives(model, ep_mesh, share.dispatched, dispatch_bytes, 2, efficiency)
        t_ici += model.moe_layers * (there.time + back.time)
    return t_ici, _network(ep_mesh or tp_mesh)


@checks(n_chips="count", batch="count", context="nonneg", param_bytes="size", kv_bytes="size", compute_dtype="dtype",
        mesh=is_a(TpuMesh, GpuCluster, type(None)), gqa_kernel="flag", ep="count", layout=is_a(Layout, type(None)))
def decode_step(model: TransformerConfig | str, chip: Chip | str, n_chips: int, batch: int, context: float,
                param_bytes: float = 2, kv_bytes: float = 2, compute_dtype: str = "bf16",
                mesh: TpuMesh | GpuCluster | None = None, efficiency: str | Efficiency = "ideal",
                gqa_kernel: bool = True, ep: int = 1, layout: Layout | None = None) -> StepEstimate:
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

    `layout` (`serving_layout`: default tensor parallelism over all the chips) prices DP attention, expert
    parallelism and TP per replica: the step waits for the busiest chip (`chip_share`), which reads its replica's
    weights and caches and pays its replica's TP collectives and each MoE layer's dispatch and combine over its
    EP group (`ep` alone keeps the tensor-parallel layout and counts the busiest EP group's expert reads). The
    default spreads the caches over every chip (the book's accounting); a given layout shards a replica's caches by
    key/value head, so beyond K chips (an MLA cache: beyond one) each chip of a TP group reads a copy.
    """
    model, chip = get_model(model), get_chip(chip)
    if ep > 1 and (layout is not None or not model.is_moe or model.E % ep or n_chips % ep):
        raise ValueError(f"ep={ep} must divide the experts E={model.E} (an MoE) and n_chips={n_chips}, and goes "
                         f"in the layout when one is given (layout={layout})")
    lay = serving_layout(model, n_chips, layout)
    share = chip_share(model, lay, batch, 1, 2 * model.param_count(active=True))
    t_ici, network = _layout_collectives(model, chip, lay, share, mesh, efficiency, dispatch_bytes=1)
    kv = _cache_per_chip(model, lay, batch, context, kv_bytes, layout is not None) * n_chips / batch
    step = decode_time(weights_read(model, batch, ep) if ep > 1 else share.params_read * n_chips, kv, batch, chip,
                       n_chips, param_bytes, compute_dtype, t_ici,
                       label=f"{model.name} decode, batch {batch}, context {context:g} on {n_chips} × "
                             f"{chip.name}" + (f" ({lay})" if layout is not None else ""), efficiency=efficiency,
                       elementwise_bytes=_elementwise_bytes(model, share),
                       kv_reads=1.0 if gqa_kernel else model.N / model.K,
                       flop_params=share.matmul_flops * n_chips / (2 * batch), held_params=share.params_held * n_chips)
    return replace(step, network=network)


@checks(n_chips="count", tokens="size", assumed_mfu="?fraction", compute_dtype="dtype", attention="flag",
        param_bytes="size", kv_bytes="size", batch="count", mesh=is_a(TpuMesh, GpuCluster, type(None)),
        layout=is_a(Layout, type(None)))
def prefill(model: TransformerConfig | str, chip: Chip | str, n_chips: int, tokens: float,
            assumed_mfu: float | None = None, compute_dtype: str = "bf16", attention: bool = True,
            param_bytes: float = 2, kv_bytes: float = 2, mesh: TpuMesh | GpuCluster | None = None,
            efficiency: str | Efficiency = "ideal", batch: int = 1, layout: Layout | None = None) -> StepEstimate:
    """Return the `StepEstimate` of prefilling `batch` prompts of `tokens` tokens each on `n_chips` chips.

    A roofline: the FLOPs (2 per matmul parameter per token, plus causal attention unless `attention=False`;
    the book's 2·P·T) at a fraction `assumed_mfu` of the peak, against reading every weight (`param_bytes` each)
    and writing the prompt's KV cache (`kv_bytes` per value) from HBM; with a `mesh`, the tensor-parallel
    collectives of the [tokens, D] activations. `assumed_mfu` (an input, not a measurement) defaults to 1 when
    ideal (the peak: ideal is a bound, every byte read once, the links overlapped; the book's worked answers pass
    its working assumption, `assumed_mfu=0.4`) and to the chip's measured matmul fraction when calibrated;
    `tokens_per_second` is prompt tokens/s.
    Calibrated, the norms, residual adds, rotary and activation function between the matmuls add their HBM
    traffic (`t_elementwise`), as in a decode step, the attention's FLOPs run at the flash kernel's measured
    share of the 16-bit peak (`Efficiency.attention`, as in `training.predict`) and the matmuls at the share their
    shapes keep (`gemm.layer_efficiency`) unless `assumed_mfu` is given, and each layer pays its kernels' fixed cost
    (`Efficiency.layer_overhead`, `t_fixed`). With `batch` prompts the FLOPs, caches and collectives scale with
    it; the weights are read once (an MoE's: the experts its tokens route to). `layout` as in `decode_step`: with
    DP attention and EP (how DeepSeek-V3 is served) each chip runs its own prompts' attention and norms, and its
    experts over every token routed to them, paying the AllToAlls instead of the tensor-parallel pairs.
    """
    model, chip = get_model(model), get_chip(chip)
    lay = serving_layout(model, n_chips, layout)
    eff = chip.efficiency(efficiency)
    calibrated = efficiency != "ideal" and assumed_mfu is None
    # calibrated, a flash kernel runs the attention at its own measured share of the 16-bit peak
    flash = calibrated and attention and eff.attention is not None
    mfu = (1.0 if efficiency == "ideal" else eff.compute(compute_dtype)) if assumed_mfu is None else assumed_mfu
    dense = model.flops_per_token(0, training=False)
    scores = model.flops_per_token(int(tokens), training=False) - dense if attention else 0.0
    share = chip_share(model, lay, batch, tokens, dense, scores)
    # calibrated, the matmuls keep the share their [tokens, width/tp] shapes allow (tile and wave quantization)
    shape = layer_efficiency(model, share.tokens, chip, lay.tp) if calibrated else 1.0
    C = chip.peak_flops(compute_dtype) * mfu * shape
    t_math = share.matmul_flops / C + (share.score_flops / (chip.peak_flops() * eff.attention) if flash
                                       else share.score_flops / C)
    W = chip.hbm_bandwidth * eff.hbm
    cache = _cache_per_chip(model, lay, batch, tokens, kv_bytes, layout is not None)
    nbytes = share.params_read * param_bytes + cache
    t_ici, network = _layout_collectives(model, chip, lay, share, mesh, efficiency, dtype_bytes(compute_dtype))
    t_elementwise = 0.0 if efficiency == "ideal" else _elementwise_bytes(model, share) / W
    return StepEstimate((dense + scores) * tokens * batch, nbytes * n_chips, t_math, nbytes / W, channel="HBM",
                        label=f"{model.name} prefill of {tokens:g} tokens" + (f" ({lay})" if layout else ""),
                        t_params=nbytes / W, t_ici=t_ici, t_elementwise=t_elementwise,
                        t_fixed=eff.layer_overhead * model.L, batch=max(1, round(tokens * batch)),
                        ici_adds=efficiency != "ideal", memory_per_chip=share.params_held * param_bytes + cache,
                        hbm_per_chip=chip.hbm_bytes, network=network, overlap=eff.overlap if calibrated else None)


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
