"""Problem set 14 — Mixture of experts and data-parallel inference: the reference solutions of `solutions/14_moe.md`.

Each function computes its answer with scalebook from the inputs the problem states. Answers are in SI base units:
bytes, seconds, tokens per second; fractions and expert counts are plain numbers. DeepSeek-V3 is the preset
`deepseek-v3` (671e9 parameters, 37.6e9 active, 256 routed experts of which 8 per token, an MLA cache of
61 x 576 values per token).
"""

from __future__ import annotations

from ...hardware.gpu import GpuCluster
from ...hardware.topology import TpuMesh
from ...inference import weights_read
from ...models import expected_experts, get_model
from ...moe import decode_step, dispatch, dropped_fraction, expert_choice_unserved, serving_shard
from ..variants import vary
from . import problem

DS = "deepseek-v3"


@problem("14.1", title="What token choice drops at capacity factor 1", unit="fraction", hints=(
    "Each expert's load is binomial; whatever lands beyond its capacity is dropped.",
    "E[max(0, load - capacity)] / assignments with {T} tokens, top-{k} of {E} experts, capacity factor {cf}.",
))
def token_choice_drops(T: int = vary(2048, 256, 8192, step=256), E: int = vary(64, 8, 256, step=8),
                       k: int = vary(2, 1, 8), cf: float = vary(1.0, 0.8, 2.0)) -> float:
    """T tokens, top-k of E experts, cf · T·k/E slots per expert: the expected share of assignments dropped."""
    return dropped_fraction(T, E, k, cf)


@problem("14.2", title="What expert choice leaves unserved", unit="fraction", hints=(
    "Each expert picks its own tokens; a token is unserved if no expert picks it.",
    "(1 - c / {T})^{E} with c = {cf} · {T} · {k} / {E} tokens per expert.",
))
def expert_choice_misses(T: int = vary(2048, 256, 8192, step=256), E: int = vary(64, 8, 256, step=8),
                         k: int = vary(2, 1, 8), cf: float = vary(1.0, 0.8, 2.0)) -> float:
    """The same batch under expert choice, tokens per expert picked uniformly: tokens no expert takes."""
    return expert_choice_unserved(T, E, k, cf)


@problem("14.3", title="Experts a batch of 16 touches", unit="experts", hints=(
    "An expert is missed only if every token's k choices avoid it.",
    "{E} · (1 - (1 - {k} / {E})^{B}).",
))
def experts_touched(B: int = vary(16, 1, 256), E: int = vary(256, 16, 512, step=16), k: int = vary(8, 1, 16)) -> float:
    """Distinct experts of one MoE layer that B tokens route to (top-k of E, uniform)."""
    return expected_experts(B, E, k)


@problem("14.4", title="Bytes a batch-1 decode step reads", unit="B", hints=(
    "A small batch reads the shared weights plus only the experts its tokens route to.",
    "fp8: (all params - routed experts) + expected experts touched by {B} tokens × one expert's params.",
))
def batch_one_reads(B: int = vary(1, 1, 64)) -> float:
    """fp8 bytes of weights one DeepSeek-V3 decode step of B sequences reads: all but the routed experts, plus those
    its tokens route to."""
    return weights_read(get_model(DS), B) * 1


@problem("14.5", title="An MLA cache under DP x TP", unit="B", hints=(
    "MLA's latent cache is shared by all heads: TP cannot split it, so each TP rank holds its replica's whole "
    "cache.",
    "{seqs} / (64 / 8) sequences × {T} tokens × 61 · 576 bytes per token.",
))
def kv_dp_tp(seqs: int = vary(2048, 256, 8192, step=256), T: int = vary(8192, 1024, 32768, step=1024)) -> float:
    """KV bytes per GPU: `seqs` sequences of T tokens (fp8 cache) on 64 GPUs as 8 replicas of TP = 8."""
    return serving_shard(DS, 64, seqs, T, "dp_tp", 8).kv_per_chip


@problem("14.6", title="The same cache under attention-DP", unit="B", hints=(
    "Under attention-DP each GPU keeps only its own sequences' caches.",
    "{seqs} / 64 sequences × {T} tokens × 61 · 576 bytes per token.",
))
def kv_attention_dp(seqs: int = vary(2048, 256, 8192, step=256), T: int = vary(8192, 1024, 32768, step=1024)) -> float:
    """KV bytes per GPU for `seqs` sequences of T tokens when each GPU runs attention for its own share."""
    return serving_shard(DS, 64, seqs, T, "attention_dp").kv_per_chip


@problem("14.7", title="One MoE layer's AllToAlls on a TPU7x cube", unit="s", hints=(
    "Each token's D-wide activation goes to k experts and comes back: an AllToAll each way over the cube.",
    "AllToAll of {T} · 8 · D bytes (fp8 out) plus {T} · 8 · D · 2 bytes (bf16 back) over a TPU7x 4x4x4.",
))
def tpu7x_dispatch(T: int = vary(4096, 512, 32768, step=512)) -> float:
    """Dispatch (fp8) and combine (bf16) of T DeepSeek-V3 tokens over a TPU7x 4x4x4, one EP group of 64."""
    return dispatch(DS, TpuMesh("tpu7x", X=4, Y=4, Z=4), T).t_comms


@problem("14.8", title="The same AllToAlls in a GB200 NVL72", unit="s", hints=(
    "In one NVLink domain every GPU reaches every other through the switches at its full NVLink bandwidth.",
    "({T} · 8 · D · (1 + 2) bytes) × (71/72) / 72 GPUs / W_nvlink.",
))
def nvl72_dispatch(T: int = vary(4608, 576, 36864, step=576)) -> float:
    """Dispatch (fp8) and combine (bf16) of T DeepSeek-V3 tokens over the 72 GPUs of one NVLink domain."""
    return dispatch(DS, GpuCluster("gb200", gpus=72), T).t_comms


@problem("14.9", title="DeepSeek-V3 on 64 TPU7x, attention-DP", unit="tokens/s", hints=(
    "The step reads each chip's experts and its own sequences' caches, and does the active FLOPs; take the "
    "larger clock.",
    "({per_chip} sequences per chip) / step time, with context {T}, fp8 everywhere, 64 TPU7x.",
))
def tpu7x_tokens_per_chip(
        per_chip: int = vary(64, 8, 256, step=8), T: int = vary(4096, 1024, 32768, step=1024)) -> float:
    """Ideal decode tokens/s per chip: `per_chip` sequences per chip at T tokens, fp8 weights, cache and arithmetic."""
    step = decode_step(DS, "tpu7x", 64, 64 * per_chip, T, compute_dtype="fp8")
    return step.tokens_per_second / 64


@problem("14.10", title="DeepSeek-V3 on a GB200 NVL72, attention-DP", unit="tokens/s", hints=(
    "The same model on 72 GPUs: more HBM bandwidth per chip, and 4 expert slots per GPU.",
    "({per_chip} sequences per GPU) / step time, with context {T}, fp8 everywhere, 72 GB200.",
))
def nvl72_tokens_per_gpu(
        per_chip: int = vary(64, 8, 256, step=8), T: int = vary(4096, 1024, 32768, step=1024)) -> float:
    """The same deployment on the 72 GPUs of an NVL72 rack (4 expert slots per GPU): tokens/s per GPU."""
    step = decode_step(DS, "gb200", 72, 72 * per_chip, T, compute_dtype="fp8")
    return step.tokens_per_second / 72
