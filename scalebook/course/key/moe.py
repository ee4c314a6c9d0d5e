"""Problem set 14 — Mixture of experts and data-parallel inference: the reference solutions of `solutions/14_moe.md`.

Each function computes its answer with scalebook from the inputs the problem states. Answers are in SI base units:
bytes, seconds, tokens per second; fractions and expert counts are plain numbers. DeepSeek-V3 is the preset
`deepseek-v3` (671e9 parameters, 37.6e9 active, 256 routed experts of which 8 per token, an MLA cache of
61 x 576 values per token).
"""

from __future__ import annotations

from ...hardware.gpu import GpuCluster
from ...hardware.topology import TpuMesh
from ...inference.moe import decode_step, dispatch, dropped_fraction, expert_choice_unserved, serving_shard
from ...inference.steps import weights_read
from ...models import expected_experts, get_model
from ..inputs import vary
from . import solution

DS = "deepseek-v3"


@solution("14.1", title="What token choice drops at capacity factor 1", unit="fraction", hints=(
    "Each expert's load is binomial; whatever lands beyond its capacity is dropped.",
    "An expert's load X is Binomial(T, k / E), its capacity cf · T · k / E rounded up; it drops E[max(X − C, zero)] "
    "of its mean load. Sum that tail (or let the package do it): ⟦f = sb.moe.dropped_fraction(T, E, k, cf)⟧.",
))
def token_choice_drops(T: int = vary(2048, 256, 8192, step=256), E: int = vary(64, 8, 256, step=8),
                       k: int = vary(2, 1, 8), cf: float = vary(1.0, 0.8, 2.0)) -> float:
    """T tokens, top-k of E experts, cf · T·k/E slots per expert: the expected share of assignments dropped."""
    return dropped_fraction(T, E, k, cf)


@solution("14.2", title="What expert choice leaves unserved", unit="fraction", hints=(
    "Each expert picks its own tokens; a token is unserved if no expert picks it.",
    "An expert fills ⟦c = min(T, ceil(cf * T * k / E))⟧ slots from the T tokens, so a token escapes one expert with "
    "probability one minus c / T and all of them with ⟦u = (1 - c / T) ** E⟧.",
))
def expert_choice_misses(T: int = vary(2048, 256, 8192, step=256), E: int = vary(64, 8, 256, step=8),
                         k: int = vary(2, 1, 8), cf: float = vary(1.0, 0.8, 2.0)) -> float:
    """The same batch under expert choice, tokens per expert picked uniformly: tokens no expert takes."""
    return expert_choice_unserved(T, E, k, cf)


@solution("14.3", title="Experts a batch of 16 touches", unit="experts", hints=(
    "An expert is missed only if every token's k choices avoid it.",
    "⟦e = E * (1 - (1 - k / E) ** B)⟧.",
))
def experts_touched(B: int = vary(16, 1, 256), E: int = vary(256, 16, 512, step=16), k: int = vary(8, 1, 16)) -> float:
    """Distinct experts of one MoE layer that B tokens route to (top-k of E, uniform)."""
    return expected_experts(B, E, k)


@solution("14.4", title="Bytes a batch-1 decode step reads", unit="B", hints=(
    "A small batch reads the shared weights plus only the experts its tokens route to.",
    "In fp8 (one byte per weight): everything but the routed experts, plus the share of them the batch touches, ⟦b "
    "= P - R + R * min(m.E, max(1, touched)) / m.E⟧ with ⟦touched = m.E * (1 - (1 - m.k / m.E) ** B)⟧, ⟦P = "
    "m.param_count()⟧, ⟦R = m.components()['MoE routed experts'][0]⟧ and ⟦m = sb.get_model('deepseek-v3')⟧.",
))
def batch_one_reads(B: int = vary(1, 1, 64)) -> float:
    """fp8 bytes of weights one DeepSeek-V3 decode step of B sequences reads: all but the routed experts, plus those
    its tokens route to."""
    return weights_read(get_model(DS), B) * 1


@solution("14.5", title="An MLA cache under DP x TP", unit="B", hints=(
    "MLA's latent cache is shared by all heads: TP cannot split it, so each TP rank holds its replica's whole "
    "cache.",
    "⟦b = seqs / (64 / 8) * T * m.kv_bytes_per_token(1)⟧: each of the eight TP groups' sequences, whole on every "
    "rank, one byte per cached value, with ⟦m = sb.get_model('deepseek-v3')⟧.",
))
def kv_dp_tp(seqs: int = vary(2048, 256, 8192, step=256), T: int = vary(8192, 1024, 32768, step=1024)) -> float:
    """KV bytes per GPU: `seqs` sequences of T tokens (fp8 cache) on 64 GPUs as 8 replicas of TP = 8."""
    return serving_shard(DS, 64, seqs, T, "dp_tp", 8).kv_per_chip


@solution("14.6", title="The same cache under attention-DP", unit="B", hints=(
    "Under attention-DP each GPU keeps only its own sequences' caches.",
    "⟦b = seqs / 64 * T * m.kv_bytes_per_token(1)⟧ with ⟦m = sb.get_model('deepseek-v3')⟧.",
))
def kv_attention_dp(seqs: int = vary(2048, 256, 8192, step=256), T: int = vary(8192, 1024, 32768, step=1024)) -> float:
    """KV bytes per GPU for `seqs` sequences of T tokens when each GPU runs attention for its own share."""
    return serving_shard(DS, 64, seqs, T, "attention_dp").kv_per_chip


@solution("14.7", title="One MoE layer's AllToAlls on a TPU7x cube", unit="s", hints=(
    "Each token's D-wide activation goes to its k experts' chips and comes back: an AllToAll each way over the "
    "cube.",
    "Each AllToAll is the longer of its bandwidth term and its latency: ⟦t = max(V / r, lat) + max(2 * V / r, lat)⟧ "
    "with the fp8 tokens, one copy per distinct chip among each token's experts, ⟦V = T * m.D * "
    "sb.collectives.ragged_fill(64, m.k)⟧ (the bf16 outputs back are twice that); a quarter crosses each ring's "
    "middle both ways, sixteen rings side by side per axis: ⟦r = 4 * 2 * sb.get_chip('tpu7x').ici_bandwidth * 16⟧; "
    "three wrapped axes of two hops each, ⟦lat = 6e-6⟧; ⟦m = sb.get_model('deepseek-v3')⟧.",
))
def tpu7x_dispatch(T: int = vary(4096, 512, 32768, step=512)) -> float:
    """Dispatch (fp8) and combine (bf16) of T DeepSeek-V3 tokens over a TPU7x 4x4x4, one EP group of 64."""
    return dispatch(DS, TpuMesh("tpu7x", X=4, Y=4, Z=4), T).t_comms


@solution("14.8", title="The same AllToAlls in a GB200 NVL72", unit="s", hints=(
    "In one NVLink domain every GPU reaches every other through the switches at its full NVLink bandwidth.",
    "Dispatch (fp8) and combine (bf16) each send all but a GPU's own share, one copy per distinct GPU among a "
    "token's experts: ⟦t = (1 + 2) * T * m.D / n * (n - 1) / n * sb.collectives.ragged_fill(n, m.k) / W⟧ with ⟦n = "
    "72⟧, ⟦W = sb.get_chip('gb200').nvlink_bandwidth⟧ and ⟦m = sb.get_model('deepseek-v3')⟧.",
))
def nvl72_dispatch(T: int = vary(4608, 576, 36864, step=576)) -> float:
    """Dispatch (fp8) and combine (bf16) of T DeepSeek-V3 tokens over the 72 GPUs of one NVLink domain."""
    return dispatch(DS, GpuCluster("gb200", gpus=72), T).t_comms


@solution("14.9", title="DeepSeek-V3 on 64 TPU7x, attention-DP", unit="tokens/s", hints=(
    "The step reads each chip's experts and its own sequences' caches, and does the active FLOPs; the dispatch "
    "hides under the reads.",
    "Tokens per second per chip are its sequences over the step: ⟦r = per_chip / t⟧ with ⟦t = "
    "sb.moe.decode_step('deepseek-v3', 'tpu7x', 64, 64 * per_chip, T, compute_dtype='fp8').time⟧; read its `t_kv`, "
    "`t_params`, `t_math` and `t_ici` to see which term sets it.",
))
def tpu7x_tokens_per_chip(
        per_chip: int = vary(64, 8, 256, step=8), T: int = vary(4096, 1024, 32768, step=1024)) -> float:
    """Ideal decode tokens/s per chip: `per_chip` sequences per chip at T tokens, fp8 weights, cache and arithmetic."""
    step = decode_step(DS, "tpu7x", 64, 64 * per_chip, T, compute_dtype="fp8")
    return step.tokens_per_second / 64


@solution("14.10", title="DeepSeek-V3 on a GB200 NVL72, attention-DP", unit="tokens/s", hints=(
    "The same model on a rack of GPUs: more HBM bandwidth per chip, and several expert slots per GPU.",
    "⟦r = per_chip / t⟧ with ⟦t = sb.moe.decode_step('deepseek-v3', 'gb200', 72, 72 * per_chip, T, "
    "compute_dtype='fp8').time⟧; compare its terms with the TPU7x's.",
))
def nvl72_tokens_per_gpu(
        per_chip: int = vary(64, 8, 256, step=8), T: int = vary(4096, 1024, 32768, step=1024)) -> float:
    """The same deployment on the 72 GPUs of an NVL72 rack (4 expert slots per GPU): tokens/s per GPU."""
    step = decode_step(DS, "gb200", 72, 72 * per_chip, T, compute_dtype="fp8")
    return step.tokens_per_second / 72
