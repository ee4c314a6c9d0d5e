"""A published training layout, predicted: step time, throughput, MFU and memory per chip, ideal or calibrated.

`predict` (served as `sb.training.predict`, issue #19's contract) takes a layout as a paper describes it — tensor,
pipeline (with virtual stages), context and expert parallel degrees, ZeRO-1 or FSDP data parallelism, the recompute
policy, the compute dtype — and prices one step term by term: the hardware FLOPs, the bytes of memory-bound
elementwise work, each parallelism's collectives (the part that hides behind compute and the part that does not),
the pipeline bubble and the optimizer update. `efficiency="ideal"` is the book's bound (every peak reached,
everything overlapped); `"calibrated"` uses the chip's measured fractions (`Chip.efficiency`). `training_memory`
counts the bytes per chip the way Korthikanti et al. (2022) do, and chapter 13 holds both against published runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..collectives import collective, default_mesh
from ..estimate import feasibility
from ..hardware.chips import Chip, Efficiency
from ..hardware.gpu import GpuCluster, resolve
from ..hardware.topology import TpuMesh
from ..models import TransformerConfig, get_model
from ..units import checks, fmt_bytes
from .book import all_to_all_seconds
from .footprint import RECOMPUTE, REMAT_OF, activation_bytes_per_layer, training_memory

__all__ = ["CROSS_ENTROPY_BYTES", "SCORE_BYTES", "Prediction", "predict"]

@dataclass(frozen=True)
class Prediction:
    """What `predict` expects of one training step. Times in seconds, memory in bytes per chip.

    `breakdown` names the seconds on the step's critical path: 'compute' (model FLOPs), 'recompute' (FLOPs
    done again in the backward pass), 'elementwise' (norms, activations, softmax, dropout: bytes through HBM),
    'last stage' (the head's FLOPs and the loss's bytes the last pipeline stage adds to the average one),
    'bubble' (pipeline stages idle), 'optimizer' (the Adam update), and the EXPOSED part of each collective
    ('tp', 'cp', 'pp sends', 'dp'); `hidden` holds the collectives' seconds that overlapped compute.
    `memory` splits `memory_per_chip` into weights, gradients, optimizer, activations and logits.
    """

    step_time: float
    tokens_per_second_per_chip: float
    mfu: float
    memory_per_chip: float
    fits: bool
    breakdown: dict[str, float]
    hidden: dict[str, float]
    memory: dict[str, float]
    layout: dict[str, Any]
    efficiency: str
    hbm_per_chip: float | None = None  # the chip's HBM bytes, for saying plainly when the layout does not fit

    def __str__(self) -> str:
        parts = ", ".join(f"{k} {v * 1e3:.4g} ms" for k, v in self.breakdown.items() if v)
        fits = "fits" if self.fits else "does NOT fit"
        plain = "" if self.hbm_per_chip is None else feasibility(self.memory_per_chip, self.hbm_per_chip)
        head = "" if self.fits or not plain else f"{plain}; "
        return head + (f"step {self.step_time:.4g} s, {self.tokens_per_second_per_chip:.4g} tokens/s/chip, MFU "
                f"{self.mfu:.1%}, {fmt_bytes(self.memory_per_chip)} per chip ({fits}) [{self.efficiency}: {parts}]")


# Bytes per logit that the loss moves through HBM: the [tokens, V/t] logits cast to fp32 (read 2, write 4), then
# max (read), subtract, exp, normalise (read + write each) and sum (read) forward, scaled and cast back to bf16
# in the backward (read 4 + write 4, read 4 + write 2): Megatron's vocab-parallel cross-entropy, unfused.
CROSS_ENTROPY_BYTES = 6 + 4 + 8 + 8 + 8 + 4 + 8 + 6

# HBM bytes per attention-score element without a flash kernel: forward QK^T writes the scores (2), softmax
# reads and writes them (4), dropout reads, writes and keeps a mask (5), A·V reads them (2); backward the
# gradient of A·V is written (2) and P read for dV (2), dropout (5) and softmax (6) run backwards and dQ, dK
# read the result (4). Recomputing the forward (selective or full) repeats its 13.
SCORE_BYTES = {"none": 34, "selective": 47, "full": 47}


def _elementwise_bytes(model: TransformerConfig, tokens: float, seq_len: int, tp: int, recompute: str,
                       sp: bool, flash_attention: bool) -> float:
    """HBM bytes the memory-bound work of one layer and microbatch moves: each activation the layer saves is
    written and read in the forward and again as a gradient in the backward (4 passes; 6 when full recompute
    runs the forward twice), and without a flash kernel the attention scores' passes (`SCORE_BYTES`)."""
    kept = activation_bytes_per_layer(model, tokens, seq_len, tp, "none", sp, True)
    scores = 0.0
    if not flash_attention:
        scores = (activation_bytes_per_layer(model, tokens, seq_len, tp, "none", sp, False) - kept) / 5
    return (6 if recompute == "full" else 4) * kept + SCORE_BYTES[recompute] * scores


def _tp_exposed_with_overlap(model: TransformerConfig, tokens: float, tp: int, C: float, sp: bool, full: bool,
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


def _groups(hardware: Chip | GpuCluster, n_chips: int):
    """The hardware a layout's collectives run on: the GPU cluster of `n_chips`, or a TPU chip."""
    if isinstance(hardware, GpuCluster):
        return hardware.subset(n_chips) if hardware.gpus != n_chips else hardware
    if hardware.kind == "gpu":
        return GpuCluster(hardware, gpus=n_chips)
    return hardware


@lru_cache(maxsize=4096)  # the planner prices hundreds of layouts that share their collectives
def _collective(kind: str, hw: Chip | GpuCluster, group: int, nbytes: float, inner: int,
                efficiency: str | Efficiency) -> float:
    """Seconds of one collective of `nbytes` (its whole array) over `group` chips spaced `inner` apart (inner
    axes run their own copies alongside): on a GPU cluster through its levels (`gpu_collective`), on a TPU
    over the most cube-like slice of the group."""
    if group == 1:
        return 0.0
    if isinstance(hw, GpuCluster):
        return collective(kind, hw.subset(group * inner), None, nbytes * inner, inner, efficiency=efficiency).time
    return collective(kind, default_mesh(hw, group), None, nbytes, efficiency=efficiency).time


@checks(n_chips="count", global_batch_tokens="size", seq_len="count", tp="count", pp="count", cp="count", ep="count",
        fsdp="flag", microbatch_tokens="?size", virtual_stages="count", recompute=RECOMPUTE, dtype="dtype",
        sequence_parallel="?flag", flash_attention="flag", tp_overlap="flag", cp_overlap="flag", grad_bytes="size",
        master_bytes="size", balanced_stages="flag")
def predict(model: TransformerConfig | str, hardware: Chip | str | GpuCluster, n_chips: int,
            global_batch_tokens: float, seq_len: int, *, tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1,
            fsdp: bool = False, microbatch_tokens: float | None = None, virtual_stages: int = 1,
            recompute: str = "selective", dtype: str = "bf16", efficiency: str | Efficiency = "calibrated",
            sequence_parallel: bool | None = None, flash_attention: bool = True, tp_overlap: bool = False,
            cp_overlap: bool = True, grad_bytes: float = 4, master_bytes: float = 4,
            balanced_stages: bool = False) -> Prediction:
    """Predict one training step of a published layout: time, throughput, MFU and memory per chip.

    Data parallelism is n_chips / (tp·pp·cp). A step is `global_batch_tokens` tokens in sequences of
    `seq_len`; each data-parallel replica cuts its share into microbatches of `microbatch_tokens` (default one
    sequence) that flow through `pp` stages (1F1B, interleaved over `virtual_stages`).

    `efficiency='ideal'` is the book's bound: the hardware FLOPs (model + recompute) at peak, every collective
    at peak bandwidth and hidden behind compute, no bubble. `'calibrated'` puts each term on the critical
    path as a real run has it, at the chip's measured fractions (`Chip.efficiency`):

    - compute and recompute at the achievable matmul rate in `dtype` (a flash kernel's attention at its own);
    - elementwise work: each saved activation byte written and read in the forward and again as a gradient
      in the backward (4 passes, 6 with full recompute) at the achieved HBM bandwidth, and without a flash
      kernel every pass over the attention scores (`SCORE_BYTES`);
    - the last stage: the unembedding's FLOPs beyond an average stage's share and the loss's passes over the
      fp32 logits (`CROSS_ENTROPY_BYTES` per logit); every stage waits for it;
    - tensor parallelism: per layer and microbatch, 2 AllReduces forward and 2 backward (2 more with full
      recompute) of [tokens/cp, D] (as AllGather + ReduceScatter pairs with sequence parallelism), exposed;
      with `tp_overlap` each is split with the matmul next to it and only what outlasts that matmul shows;
      context parallelism: the ring of K/V blocks, hidden behind the attention FLOPs (with `cp_overlap=False`,
      all-gathered before the attention and so exposed, as Llama 3 runs it);
      expert parallelism (`ep`, MoE models): 4 top-k AllToAlls per MoE layer and microbatch, exposed;
    - pipeline: the bubble (P-1)/(v·M) of the busy time, and the 2·(P-1)·v sends of fill and drain;
    - data parallelism: gradients (`grad_bytes` wide: fp32, as Megatron and Llama 3 reduce them) reduce-scattered
      and weights all-gathered over dp·cp chips, overlapping
      the last microbatch's backward and the first's forward (ZeRO-1); with `fsdp`, layer by layer — each
      layer's gather before its first forward, its reduce-scatter after each microbatch's backward — each call
      hidden only behind that layer's compute (a ring over n nodes pays n-1 network steps of latency);
      the Adam update at HBM speed.

    `sequence_parallel` defaults to on when tp > 1; `flash_attention` (default on) never stores the scores;
    `balanced_stages`: the first and last stages hold one layer fewer, so the head and the loss take the place
    of a layer on the last one (as the Llama 3 paper describes its pipeline).
    """
    model = get_model(model)
    hw, chip = resolve(hardware.chip if isinstance(hardware, TpuMesh) else hardware)
    eff = chip.efficiency(efficiency)
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute={recompute!r}; allowed: {list(RECOMPUTE)}")
    for name, value in (("n_chips", n_chips), ("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep),
                        ("virtual_stages", virtual_stages), ("seq_len", seq_len)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive integer")
    if n_chips % (tp * pp * cp):
        raise ValueError(f"n_chips={n_chips} must be a multiple of tp·pp·cp = {tp * pp * cp}")
    if ep > 1 and not model.is_moe:
        raise ValueError(f"ep={ep} needs a mixture-of-experts model; {model.name or 'this model'} has E=1")
    if seq_len % cp:
        raise ValueError(f"seq_len={seq_len} must split evenly over cp={cp}")
    dp = n_chips // (tp * pp * cp)
    mb = microbatch_tokens or seq_len
    per_replica = global_batch_tokens / dp
    M = per_replica / mb
    if global_batch_tokens <= 0 or M < 1 or abs(M - round(M)) > 1e-9:
        raise ValueError(f"global_batch_tokens={global_batch_tokens!r} must give each of the {dp} data-parallel "
                         f"replicas a whole number (>= 1) of microbatches of {mb:g} tokens")
    M = round(M)
    hw = _groups(hw, n_chips)
    sp = tp > 1 if sequence_parallel is None else sequence_parallel
    ideal = efficiency == "ideal"

    # Compute: hardware FLOPs (model + recompute), at peak or at the achievable matmul rate; a flash kernel's
    # attention FLOPs at its own measured rate.
    C = chip.peak_flops(dtype) * (1 if ideal else eff.compute(dtype))
    C_attention = C if ideal or not flash_attention or eff.attention is None else chip.peak_flops() * eff.attention
    model_flops = model.flops_per_token(seq_len) * global_batch_tokens / n_chips
    hw_flops = model.flops_per_token(seq_len, remat=REMAT_OF[recompute]) * global_batch_tokens / n_chips
    attention_flops = 3 * model.attention_flops_per_token(seq_len / 2) * global_batch_tokens / n_chips
    t_compute = (model_flops - attention_flops) / C + attention_flops / C_attention
    t_recompute = (hw_flops - model_flops) / C

    # Tensor parallelism: per layer and microbatch, fwd 2 + bwd 2 (+2 recomputed forward) all-reduces.
    act = mb / cp * model.D * 2  # one [tokens, D] bf16 activation of a microbatch on one stage
    calls = (4 + (2 if recompute == "full" else 0)) * model.L / pp * M
    ag, rs = _collective("all_gather", hw, tp, act, 1, efficiency), _collective("reduce_scatter", hw, tp, act, 1,
                                                                               efficiency)
    ar = _collective("all_reduce", hw, tp, act, 1, efficiency)
    t_tp = calls * (ag + rs if sp else ar)

    # Context parallelism: each layer passes the K/V blocks round the ring (fwd, and twice in the bwd).
    kv = mb / cp * 2 * model.K * model.H * 2 / tp
    t_cp = 3 * model.L / pp * M * _collective("all_gather", hw, cp, kv * cp, tp, efficiency)

    # Expert parallelism: each MoE layer dispatches and combines its tokens (k copies) forward and backward.
    t_ep = 4 * model.moe_layers / pp * M * all_to_all_seconds(hw, act, ep, model.k) if ep > 1 else 0.0

    # Data parallelism over dp·cp chips (weights shared): reduce-scatter the gradients at their width
    # (`grad_bytes`: fp32 by default, as Megatron's and Llama 3's runs reduce them), all-gather bf16 weights.
    shard = model.param_count() / (tp * pp) * 2  # one model shard's bf16 weights
    grads = shard / 2 * grad_bytes
    group = dp * cp
    t_rs = _collective("reduce_scatter", hw, group, grads, tp * pp, efficiency)
    t_ag = _collective("all_gather", hw, group, shard, tp * pp, efficiency)
    if fsdp:  # weights gathered once per step and kept; each microbatch's gradients reduce-scattered
        t_rs = M * t_rs

    memory = training_memory(model, seq_len, tp, pp, cp, dp, mb, M, virtual_stages, ep, recompute, fsdp, sp,
                             flash_attention, grad_bytes=grad_bytes, master_bytes=master_bytes)
    per_chip = sum(memory.values())
    if ideal:
        comms = {"tp": t_tp, "cp": t_cp, "ep": t_ep, "dp": t_rs + t_ag}
        step = max(t_compute + t_recompute, *comms.values())
        breakdown = {"compute": t_compute, "recompute": t_recompute}
        hidden = comms
    else:
        W = chip.hbm_bandwidth * eff.hbm
        t_elem = _elementwise_bytes(model, mb / cp, seq_len // cp, tp, recompute, sp, flash_attention) \
            * model.L / pp * M / W
        # The last stage also runs the unembedding and the loss: its share of the head's FLOPs beyond the
        # average stage's, and the cross-entropy's passes over the [tokens, V/t] logits. Every stage waits for it.
        head = model.flops_per_token(seq_len) - model.flops_per_token(seq_len, logits=False)
        replica_tokens = global_batch_tokens / (dp * cp)
        t_last = (head * replica_tokens / tp * (pp - 1) / pp / C
                  + CROSS_ENTROPY_BYTES * replica_tokens * model.V / tp / W)
        if balanced_stages and pp > 1:  # the last stage holds one layer fewer: the head and loss take its place
            t_last = max(0.0, t_last - (t_compute + t_recompute + t_elem) / (model.L / pp))
        busy_compute = t_compute + t_recompute + t_elem + t_last
        tp_exposed = t_tp if not tp_overlap else model.L / pp * M * _tp_exposed_with_overlap(
            model, mb / cp, tp, C, sp, recompute == "full", ag, rs, ar)
        cp_exposed = max(0.0, t_cp - attention_flops / C_attention) if cp_overlap else t_cp
        busy = busy_compute + tp_exposed + cp_exposed + t_ep
        bubble = busy * (pp - 1) / (virtual_stages * M) if pp > 1 else 0.0
        send_bytes = act / (tp if sp else 1)
        nic = (hw.node_egress / hw.gpus_per_node if isinstance(hw, GpuCluster) else chip.ici_bandwidth) * eff.network
        latency = eff.latency_network if isinstance(hw, GpuCluster) else eff.latency_node
        t_sends = 2 * (pp - 1) * virtual_stages * (send_bytes / nic + latency) if pp > 1 else 0.0
        per_microbatch = busy / M
        if fsdp:  # layer by layer: a layer's weights gathered before its first forward (then kept), its gradients
            # reduce-scattered after each microbatch's backward, each call hidden only behind that layer's compute
            layers = model.L / pp
            per_layer = per_microbatch / layers
            ag = _collective("all_gather", hw, group, shard / layers, tp * pp, efficiency)
            rs = _collective("reduce_scatter", hw, group, grads / layers, tp * pp, efficiency)
            t_ag, t_rs = layers * ag, layers * M * rs
            dp_exposed = layers * (max(0.0, ag - per_layer / 3) + M * max(0.0, rs - per_layer * 2 / 3))
        else:  # gradients reduce during the last backward, weights gather during the first forward
            dp_exposed = max(0.0, t_rs - per_microbatch * 2 / 3) + max(0.0, t_ag - per_microbatch / 3)
        # Adam on this chip's shard: read gradient, master weight and moments, write them back and the bf16 copy.
        t_opt = shard / 2 / group * (grad_bytes + 2 * (master_bytes + 8) + 2) / W
        breakdown = {"compute": t_compute, "recompute": t_recompute, "elementwise": t_elem, "last stage": t_last,
                     "tp": tp_exposed,
                     "cp": cp_exposed, "ep": t_ep, "bubble": bubble, "pp sends": t_sends, "dp": dp_exposed,
                     "optimizer": t_opt}
        hidden = {"tp": t_tp - tp_exposed, "cp": t_cp - cp_exposed,
                  "dp": t_rs + t_ag - dp_exposed}
        step = sum(breakdown.values())
    return Prediction(
        step_time=step,
        tokens_per_second_per_chip=global_batch_tokens / step / n_chips,
        mfu=model_flops / (step * chip.peak_flops(dtype)),
        memory_per_chip=per_chip,
        fits=per_chip <= chip.hbm_bytes,
        breakdown=breakdown,
        hidden=hidden,
        memory=memory,
        layout={"tp": tp, "pp": pp, "cp": cp, "dp": dp, "ep": ep, "fsdp": fsdp, "microbatches": M,
                "virtual_stages": virtual_stages, "recompute": recompute, "dtype": dtype},
        efficiency=efficiency if isinstance(efficiency, str) else "custom",
        hbm_per_chip=chip.hbm_bytes,
    )
