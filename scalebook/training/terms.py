"""The terms of a training step, one function each: what `predict` adds up (see `Prediction.breakdown`).

Every term takes a `StepContext` (the model, the hardware, the `Layout` and the per-microbatch sizes) and returns
seconds on one chip: the FLOPs (`compute_term`), the memory-bound elementwise work, the last pipeline stage's head
and loss, each parallelism's collectives as (all, exposed) seconds, the pipeline's sends, the optimizer update and
the layers' fixed kernel costs. `collective_seconds` prices one collective on a GPU cluster's levels or a TPU
slice, cached: the planner prices hundreds of layouts that share their collectives.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..collectives import collective, default_mesh
from ..gemm import layer_matmuls
from ..hardware.chips import Chip, Efficiency
from ..hardware.gpu import GpuCluster
from ..models import TransformerConfig
from .footprint import REMAT_OF, activation_bytes_per_layer
from .layout import Layout

__all__ = ["CROSS_ENTROPY_BYTES", "SCORE_BYTES", "FP8_CAST_BYTES", "FP8_RECIPES", "CP_ROTATES", "StepContext",
           "collective_hardware", "collective_seconds", "compute_term", "elementwise_bytes", "elementwise_term",
           "last_stage_term", "tp_exposed_with_overlap", "tp_term", "cp_term", "ep_term", "weight_groups",
           "fp8_cast_term", "dp_term", "dcn_term", "sends_term", "optimizer_term", "fixed_term"]


# Bytes per logit that the loss moves through HBM: the [tokens, V/t] logits cast to fp32 (read 2, write 4), then
# max (read), subtract, exp, normalise (read + write each) and sum (read) forward, scaled and cast back to bf16
# in the backward (read 4 + write 4, read 4 + write 2): Megatron's vocab-parallel cross-entropy, unfused.
CROSS_ENTROPY_BYTES = 6 + 4 + 8 + 8 + 8 + 4 + 8 + 6

# HBM bytes per attention-score element without a flash kernel: forward QK^T writes the scores (2), softmax
# reads and writes them (4), dropout reads, writes and keeps a mask (5), A·V reads them (2); backward the
# gradient of A·V is written (2) and P read for dV (2), dropout (5) and softmax (6) run backwards and dQ, dK
# read the result (4). Recomputing the forward (selective or full) repeats its 13.
SCORE_BYTES = {"none": 34, "selective": 47, "full": 47}

# HBM bytes per element of casting a matmul's bf16 input to FP8 in a pass of its own, by scaling recipe: read it
# (2) and write the two FP8 copies its forward and backward matmuls take (1 + 1). The matmuls contract one tensor
# along different axes, so Transformer Engine keeps a "rowwise" and a "columnwise" copy of it: on Hopper, whose FP8
# tensor cores take only the TN layout, the second is a transpose (NVIDIA Transformer Engine docs, "Low precision
# training: performance considerations", Handling transposes). Per recipe (the same docs, one page each):
#   delayed  the scale comes from past amaxes: one read (Transformer Engine's default recipe, and its only one
#            before release 2.2);
#   current  per-tensor current scaling (TE's Float8CurrentScaling, torchao's float8 "tensorwise"): "two tensor
#            reads per quantization: one to compute amax, one to cast";
#   mxfp8    one E8M0 scale byte per block of 32 values, written with each of the two copies.
# A cast fused into the kernel before it (which saves the read) is not counted: the pass is an upper count of it.
FP8_CAST_BYTES = {"delayed": 2 + 1 + 1, "current": 2 + 2 + 1 + 1, "mxfp8": 2 + 2 * (1 + 1 / 32)}
FP8_RECIPES = tuple(FP8_CAST_BYTES)

# How context parallelism passes K/V round its chips (`cp_term`): 'ring' sends each block on while the attention
# works on the one before (Transformer Engine's ring, Megatron's); 'allgather' is PyTorch's ring attention with its
# all-gather rotater (torch.distributed.tensor.experimental._attention, torchtitan's default rotate method): one
# AllGather a pass, launched with the first block's attention and waited for before the second.
CP_ROTATES = ("ring", "allgather")


def collective_hardware(hardware: Chip | GpuCluster, n_chips: int):
    """The hardware a layout's collectives run on: the GPU cluster of `n_chips`, or a TPU chip."""
    if isinstance(hardware, GpuCluster):
        return hardware.subset(n_chips) if hardware.gpus != n_chips else hardware
    if hardware.kind == "gpu":
        return GpuCluster(hardware, gpus=n_chips)
    return hardware


@lru_cache(maxsize=4096)  # the planner prices hundreds of layouts that share their collectives
def collective_seconds(kind: str, hw: Chip | GpuCluster, group: int, nbytes: float, inner: int,
                efficiency: str | Efficiency, top_k: int | None = None) -> float:
    """Seconds of one collective of `nbytes` (its whole array) over `group` chips spaced `inner` apart (inner
    axes run their own copies alongside): on a GPU cluster through its levels (`gpu_collective`), on a TPU
    over the most cube-like slice of the group. `top_k`: an MoE dispatch, each token to k experts."""
    if group == 1:
        return 0.0
    if isinstance(hw, GpuCluster):
        return collective(kind, hw.subset(group * inner), None, nbytes * inner, inner, top_k,
                          efficiency=efficiency).time
    return collective(kind, default_mesh(hw, group), None, nbytes, top_k=top_k, efficiency=efficiency).time


@dataclass(frozen=True)
class StepContext:
    """What every term needs: the model, the hardware, the layout and the per-microbatch sizes."""

    model: TransformerConfig
    chip: Chip
    hw: Chip | GpuCluster
    layout: Layout
    n_chips: int
    global_batch_tokens: float
    seq_len: int
    mb: float  # tokens of one microbatch (whole sequences, before context parallelism splits them)
    M: int  # microbatches per replica and step
    recompute: str
    dtype: str
    sp: bool
    flash_attention: bool
    efficiency: str | Efficiency
    eff: Efficiency
    expert_imbalance: float | None = None  # the busiest expert group's load over the mean (None: random routing)
    capacity_factor: float | None = None  # experts padded to this many times their mean rows (None: dropless)
    ep_overlap: bool = False  # EP's AllToAlls hidden behind another microbatch's compute (DualPipe, Megatron's)
    fp8_recipe: str = "delayed"  # how FP8 casts are scaled (`FP8_CAST_BYTES`), when `dtype` is FP8
    cp_rotate: str = "ring"  # how context parallelism passes K/V round (`CP_ROTATES`)
    repeat_kv: bool = False  # the attention takes K/V repeated to every query head (exchanged as N heads, not K)

    @property
    def layers(self) -> float:
        """Layers of one pipeline stage."""
        return self.model.L / self.layout.pp

    @property
    def act(self) -> float:
        """Bytes of one [tokens, D] bf16 activation of a microbatch on one stage."""
        return self.mb / self.layout.cp * self.model.D * 2

    @property
    def shard(self) -> float:
        """Bytes of one model shard's bf16 weights (a TP x PP share)."""
        return self.model.param_count() / (self.layout.tp * self.layout.pp) * 2

    @property
    def replicas(self) -> int:
        """Chips a step's batch splits over (data and context parallelism): each sees tokens / replicas."""
        return self.layout.data_parallel * self.layout.cp

    @property
    def dp_group(self) -> int:
        """Chips that reduce a shard's gradients together over ICI or NVLink and share its optimizer state: the
        data-parallel and context-parallel chips, within one slice when FSDP runs inside slices (`slices`)."""
        return (self.layout.fsdp if self.layout.sharded else self.layout.dp) * self.layout.cp

    @property
    def routed_bytes(self) -> float:
        """Bytes of the tokens one chip routes to its experts per MoE layer and microbatch: its [tokens, D] bf16
        activation, split over the tensor-parallel chips by sequence parallelism."""
        return self.act / (self.layout.tp if self.sp else 1)

    def collective(self, kind: str, group: int, nbytes: float, inner: int = 1, top_k: int | None = None) -> float:
        return collective_seconds(kind, self.hw, group, nbytes, inner, self.efficiency, top_k)


def compute_term(s: StepContext, C: float, C_attention: float) -> dict[str, float]:
    """Seconds of the step's FLOPs per chip: the model's matmuls at C, its attention at C_attention, and the
    FLOPs recomputed in the backward pass: the attention's forward (which both policies run again) at
    C_attention, the rest (full recompute's matmuls) at C."""
    model, per_chip = s.model, s.global_batch_tokens / s.n_chips
    model_flops = model.flops_per_token(s.seq_len) * per_chip
    attention_forward = model.attention_flops_per_token(s.seq_len / 2) * per_chip
    recompute = (model.flops_per_token(s.seq_len, remat=REMAT_OF[s.recompute]) * per_chip - model_flops)
    again = attention_forward if recompute else 0.0
    return {"compute": (model_flops - 3 * attention_forward) / C, "attention": 3 * attention_forward / C_attention,
            "recompute": (recompute - again) / C + again / C_attention}


def elementwise_bytes(model: TransformerConfig, tokens: float, seq_len: int, tp: int, recompute: str,
                       sp: bool, flash_attention: bool) -> float:
    """HBM bytes the memory-bound work of one layer and microbatch moves: each activation the layer saves is
    written and read in the forward and again as a gradient in the backward (4 passes; 6 when full recompute
    runs the forward twice), and without a flash kernel the attention scores' passes (`SCORE_BYTES`)."""
    kept = activation_bytes_per_layer(model, tokens, seq_len, tp, "none", sp, True)
    scores = 0.0
    if not flash_attention:
        scores = (activation_bytes_per_layer(model, tokens, seq_len, tp, "none", sp, False) - kept) / 5
    return (6 if recompute == "full" else 4) * kept + SCORE_BYTES[recompute] * scores


def elementwise_term(s: StepContext, W: float) -> float:
    """Seconds of one stage's memory-bound work over the step, at HBM bandwidth W."""
    cp = s.layout.cp
    per_layer = elementwise_bytes(s.model, s.mb / cp, s.seq_len // cp, s.layout.tp, s.recompute, s.sp,
                                   s.flash_attention)
    return per_layer * s.layers * s.M / W


def last_stage_term(s: StepContext, C: float, W: float, busy: float, balanced: bool) -> float:
    """Seconds the last stage adds: its share of the head's FLOPs beyond the average stage's and the loss's
    passes over the [tokens, V/t] fp32 logits (every stage waits for it); `balanced`: it holds one layer fewer,
    so the head and loss take that layer's place (`busy` = the stage's other work)."""
    model, lay = s.model, s.layout
    head = model.flops_per_token(s.seq_len) - model.flops_per_token(s.seq_len, logits=False)
    tokens = s.global_batch_tokens / s.replicas
    t = head * tokens / lay.tp * (lay.pp - 1) / lay.pp / C + CROSS_ENTROPY_BYTES * tokens * model.V / lay.tp / W
    if balanced and lay.pp > 1:
        t = max(0.0, t - busy / s.layers)
    return t


def tp_exposed_with_overlap(model: TransformerConfig, tokens: float, tp: int, C: float, sp: bool, full: bool,
                             ag: float, rs: float, ar: float) -> float:
    """Seconds of one layer's TP collectives left exposed for one microbatch of `tokens` when each is split with
    the matmul next to it (Megatron-Core's --tp-comm-overlap): a collective of `ag`/`rs`/`ar` seconds hides
    behind its own matmul only — forward behind the matmul it feeds or drains, backward behind that matmul's
    two (data and weight gradients) — never behind the rest of the layer. `full` recompute runs the forward
    twice."""
    flops = {"qkv": model.D * (model.N + 2 * model.K) * model.H, "proj": model.N * model.H * model.D,
             "fc1": model.D * model.F * (2 if model.gated else 1), "fc2": model.F * model.D}
    t = {k: 2 * v * tokens / tp / C for k, v in flops.items()}
    if sp:
        forward = ((ag, "qkv"), (rs, "proj"), (ag, "fc1"), (rs, "fc2"))
        backward = ((ag, "proj"), (rs, "qkv"), (ag, "fc2"), (rs, "fc1"))
    else:
        forward, backward = ((ar, "proj"), (ar, "fc2")), ((ar, "qkv"), (ar, "fc1"))
    exposed = sum(max(0.0, c - t[g]) for c, g in forward) * (2 if full else 1)
    return exposed + sum(max(0.0, c - 2 * t[g]) for c, g in backward)


def tp_term(s: StepContext, C: float, overlap: bool) -> tuple[float, float]:
    """(all, exposed) seconds of tensor parallelism: per layer and microbatch, 2 AllReduces forward and 2
    backward (2 more with full recompute) of [tokens/cp, D], as AllGather + ReduceScatter pairs with sequence
    parallelism; with `overlap`, each split with the matmul next to it."""
    tp = s.layout.tp
    ag, rs = s.collective("all_gather", tp, s.act), s.collective("reduce_scatter", tp, s.act)
    ar = s.collective("all_reduce", tp, s.act)
    calls = (4 + (2 if s.recompute == "full" else 0)) * s.layers * s.M
    total = calls * (ag + rs if s.sp else ar)
    if not overlap:
        return total, total
    exposed = s.layers * s.M * tp_exposed_with_overlap(s.model, s.mb / s.layout.cp, tp, C, s.sp,
                                                        s.recompute == "full", ag, rs, ar)
    return total, exposed


def cp_term(s: StepContext, attention_seconds: float, overlap: bool) -> tuple[float, float]:
    """(all, exposed) seconds of context parallelism, whose K/V blocks (bf16, K heads, or N when `s.repeat_kv`)
    go round the `cp` chips every layer and microbatch. `attention_seconds`: the attention's forward and backward
    (`compute_term`), a third of it forward. By `s.cp_rotate`:

    - 'ring': each block passes on behind the attention's work on the one before (forward, and twice in the
      backward), so the exchange hides behind the attention's seconds.
    - 'allgather' (PyTorch's ring attention): each forward pass (two when the attention is recomputed) and the
      backward all-gather the blocks once, hidden only behind the first of the `cp` blocks' attention; the
      backward then passes the fp32 K/V gradients on after each block (twice a block's bytes, one ring step),
      each hidden behind the next block, the last one exposed.

    Without `overlap` everything is gathered before the attention and exposed (as Llama 3 runs it)."""
    lay, model = s.layout, s.model
    if lay.cp == 1:
        return 0.0, 0.0
    kv = s.mb / lay.cp * 2 * (model.N if s.repeat_kv else model.K) * model.H * 2 / lay.tp
    gather = s.layers * s.M * s.collective("all_gather", lay.cp, kv * lay.cp, lay.tp)
    if s.cp_rotate == "ring":
        total = 3 * gather
        return total, (max(0.0, total - attention_seconds) if overlap else total)
    forward_passes = 1 if s.recompute == "none" else 2
    block_forward, block_backward = attention_seconds / 3 / lay.cp, attention_seconds * 2 / 3 / lay.cp
    gradients = 2 * gather / (lay.cp - 1)  # one ring step of the fp32 gradients: twice a block's bytes
    total = (forward_passes + 1) * gather + lay.cp * gradients
    if not overlap:
        return total, total
    return total, (forward_passes * max(0.0, gather - block_forward) + max(0.0, gather - block_backward)
                   + (lay.cp - 1) * max(0.0, gradients - block_backward) + gradients)


def ep_term(s: StepContext, busiest: float = 1.0) -> float:
    """Seconds of expert parallelism: each MoE layer dispatches and combines its tokens (k copies) forward and
    backward, four AllToAlls per microbatch over the `ep` chips of an expert group (spaced by the experts' own
    tensor parallelism, `Layout.expert_tp`), whose whole array is every member's routed tokens; each waits for
    the chip that receives `busiest` times the mean share (`experts.busiest_load`; 1: balanced, the bound)."""
    lay = s.layout
    if lay.ep == 1:
        return 0.0
    one = s.collective("all_to_all", lay.ep, s.routed_bytes * lay.ep, lay.expert_tp, s.model.k)
    return 4 * s.model.moe_layers / lay.pp * s.M * one * busiest


def weight_groups(s: StepContext) -> tuple[tuple[float, int, int], ...]:
    """(bf16 bytes of one chip's share, chips that share them, spacing of those chips) for each kind of weight:
    the dense weights (all but the routed experts), a TP x PP share reduced over the dp·cp chips (`dp_group`);
    with expert parallelism the routed experts apart, an EP x expert-TP x PP share reduced only over the chips
    that hold the same experts (`Layout.expert_dp`, within a slice when FSDP runs inside slices)."""
    lay, model = s.layout, s.model
    if lay.ep == 1:
        return ((s.shard, s.dp_group, lay.tp * lay.pp),)
    routed = model.components()["MoE routed experts"][0]
    dense = (model.param_count() - routed) / (lay.tp * lay.pp) * 2
    experts = routed / (lay.ep * lay.expert_tp * lay.pp) * 2
    group = max(1, lay.expert_dp // (lay.dp if lay.sharded else 1))
    return ((dense, s.dp_group, lay.tp * lay.pp), (experts, group, lay.ep * lay.expert_tp * lay.pp))


def fp8_cast_term(s: StepContext, W: float) -> float:
    """Seconds of one stage's FP8 casts over the step at HBM bandwidth W (0 unless `s.dtype` is FP8): each
    weight matmul's input cast in the forward (again when full recompute reruns it) and its output's gradient in
    the backward, `FP8_CAST_BYTES[s.fp8_recipe]` per element, every layer and microbatch (`gemm.layer_matmuls`:
    an MoE chip casts the rows of its own experts), and the chip's weights once a step (kept cast across
    microbatches)."""
    if str(s.dtype).lower() not in ("fp8", "f8"):
        return 0.0
    lay, model = s.layout, s.model
    forward = 2 if s.recompute == "full" else 1
    elements = sum(rows * count * (forward * k + n) for rows, n, k, count in
                   layer_matmuls(model, s.mb / lay.cp, lay.tp, lay.ep, lay.expert_tp))
    weights = sum(nbytes for nbytes, _, _ in weight_groups(s)) / 2
    return FP8_CAST_BYTES[s.fp8_recipe] * (elements * s.layers * s.M + weights) / W


def dp_term(s: StepContext, grad_bytes: float, reshard: bool, per_microbatch: float | None) -> tuple[float, float]:
    """(all, exposed) seconds of data parallelism over each weight group's chips (`weight_groups`): gradients
    reduce-scattered at their width (`grad_bytes`), bf16 weights all-gathered. ZeRO-1: once a step, the
    reduce-scatter behind the last microbatch's backward, the gather behind the first's forward. FSDP, layer by
    layer: each layer's weights gathered before its forward (and again before its backward when `reshard`, every
    microbatch; once a step when they stay gathered), its gradients reduce-scattered after each microbatch's
    backward, each call hidden only behind that layer's own compute. `per_microbatch`: a microbatch's busy
    seconds (None: the ideal bound, everything hidden)."""
    groups = weight_groups(s)
    if not s.layout.sharded:
        rs = sum(s.collective("reduce_scatter", g, b / 2 * grad_bytes, i) for b, g, i in groups)
        ag = sum(s.collective("all_gather", g, b, i) for b, g, i in groups)
        exposed = 0.0 if per_microbatch is None else \
            max(0.0, rs - per_microbatch * 2 / 3) + max(0.0, ag - per_microbatch / 3)
        return rs + ag, exposed
    layers = s.layers
    ag = sum(s.collective("all_gather", g, b / layers, i) for b, g, i in groups)
    rs = sum(s.collective("reduce_scatter", g, b / 2 * grad_bytes / layers, i) for b, g, i in groups)
    gathers = 2 * s.M if reshard else 1
    total = layers * (gathers * ag + s.M * rs)
    if per_microbatch is None:
        return total, 0.0
    per_layer = per_microbatch / layers
    forward = max(0.0, ag - per_layer / 3) * (s.M if reshard else 1)
    backward = s.M * max(0.0, (ag if reshard else 0.0) + rs - per_layer * 2 / 3)
    return total, layers * (forward + backward)


def dcn_term(s: StepContext, grad_bytes: float, per_microbatch: float | None) -> tuple[float, float]:
    """(all, exposed) seconds of data parallelism across TPU slices: each chip all-reduces its shard's gradients
    with its peers in the other slices over DCN (2·(s-1)/s of the bytes at the chip's DCN bandwidth), behind
    the last microbatch's backward."""
    slices = s.layout.dp if s.layout.sharded else 1
    if slices == 1:
        return 0.0, 0.0
    W = s.chip.dcn_bandwidth * s.eff.network
    total = 2 * (slices - 1) / slices * s.shard / 2 * grad_bytes / s.dp_group / W
    return total, 0.0 if per_microbatch is None else max(0.0, total - per_microbatch * 2 / 3)


def sends_term(s: StepContext) -> float:
    """Seconds of the pipeline's fill and drain sends: 2·(P-1)·v activations between stages (a GPU's share of
    its node's NICs, or an ICI link), each with the per-call latency."""
    lay = s.layout
    if lay.pp == 1:
        return 0.0
    nic = (s.hw.node_egress / s.hw.gpus_per_node if isinstance(s.hw, GpuCluster) else s.chip.ici_bandwidth)
    latency = s.eff.latency_network if isinstance(s.hw, GpuCluster) else s.eff.latency_node
    send = s.act / (lay.tp if s.sp else 1)
    return 2 * (lay.pp - 1) * lay.virtual_stages * (send / (nic * s.eff.network) + latency)


def optimizer_term(s: StepContext, grad_bytes: float, master_bytes: float, W: float) -> float:
    """Seconds of Adam on this chip's shard: read the gradient, master weight and moments, write them back and
    the bf16 copy, at HBM bandwidth W."""
    return s.shard / 2 / s.dp_group * (grad_bytes + 2 * (master_bytes + 8) + 2) / W


def fixed_term(s: StepContext) -> float:
    """Seconds of the layers' fixed kernel costs: one `layer_overhead` per layer and pass (forward, backward
    twice its kernels, and the forward again under recompute), every microbatch."""
    passes = 3 + (1 if s.recompute != "none" else 0)
    return s.eff.layer_overhead * passes * s.layers * s.M
