"""Problem set 14 — Mixture of experts and data-parallel inference: the reference solutions of `solutions/14_moe.md`.

Each function computes its answer with scalebook from the inputs the problem states. Answers are in SI base units:
bytes, seconds, tokens per second; fractions and expert counts are plain numbers. DeepSeek-V3 is the preset
`deepseek-v3` (671e9 parameters, 37.6e9 active, 256 routed experts of which 8 per token, an MLA cache of
61 x 576 values per token).
"""

from __future__ import annotations

from ..hardware.gpu import GpuCluster
from ..hardware.topology import TpuMesh
from ..inference import weights_read
from ..models import expected_experts, get_model
from ..moe import decode_step, dispatch, dropped_fraction, expert_choice_unserved, serving_shard
from . import problem

DS = "deepseek-v3"


@problem("14.1", title="What token choice drops at capacity factor 1", unit="fraction")
def token_choice_drops() -> float:
    """2048 tokens, top-2 of 64 experts, 64 slots per expert: the expected share of assignments dropped."""
    return dropped_fraction(2048, 64, 2, 1.0)


@problem("14.2", title="What expert choice leaves unserved", unit="fraction")
def expert_choice_misses() -> float:
    """The same batch under expert choice, 64 tokens per expert picked uniformly: tokens no expert takes."""
    return expert_choice_unserved(2048, 64, 2, 1.0)


@problem("14.3", title="Experts a batch of 16 touches", unit="experts")
def experts_touched() -> float:
    """Distinct experts of one DeepSeek-V3 MoE layer that 16 tokens route to (top-8 of 256, uniform)."""
    return expected_experts(16, 256, 8)


@problem("14.4", title="Bytes a batch-1 decode step reads", unit="B")
def batch_one_reads() -> float:
    """fp8 bytes of weights one DeepSeek-V3 decode step of one sequence reads: all but the routed experts, plus 8."""
    return weights_read(get_model(DS), 1) * 1


@problem("14.5", title="An MLA cache under DP x TP", unit="B")
def kv_dp_tp() -> float:
    """KV bytes per GPU: 2048 sequences of 8192 tokens (fp8 cache) on 64 GPUs as 8 replicas of TP = 8."""
    return serving_shard(DS, 64, 2048, 8192, "dp_tp", 8).kv_per_chip


@problem("14.6", title="The same cache under attention-DP", unit="B")
def kv_attention_dp() -> float:
    """KV bytes per GPU for the same 2048 sequences when each GPU runs attention for its own 32."""
    return serving_shard(DS, 64, 2048, 8192, "attention_dp").kv_per_chip


@problem("14.7", title="One MoE layer's AllToAlls on a TPU7x cube", unit="s")
def tpu7x_dispatch() -> float:
    """Dispatch (fp8) and combine (bf16) of 4096 DeepSeek-V3 tokens over a TPU7x 4x4x4, one EP group of 64."""
    return dispatch(DS, TpuMesh("tpu7x", X=4, Y=4, Z=4), 4096).t_comms


@problem("14.8", title="The same AllToAlls in a GB200 NVL72", unit="s")
def nvl72_dispatch() -> float:
    """Dispatch (fp8) and combine (bf16) of 4608 DeepSeek-V3 tokens over the 72 GPUs of one NVLink domain."""
    return dispatch(DS, GpuCluster("gb200", gpus=72), 4608).t_comms


@problem("14.9", title="DeepSeek-V3 on 64 TPU7x, attention-DP", unit="tokens/s")
def tpu7x_tokens_per_chip() -> float:
    """Ideal decode tokens/s per chip: 64 sequences per chip at 4096 tokens, fp8 weights, cache and arithmetic."""
    step = decode_step(DS, "tpu7x", 64, 64 * 64, 4096, compute_dtype="fp8")
    return step.tokens_per_second / 64


@problem("14.10", title="DeepSeek-V3 on a GB200 NVL72, attention-DP", unit="tokens/s")
def nvl72_tokens_per_gpu() -> float:
    """The same deployment on the 72 GPUs of an NVL72 rack (4 expert slots per GPU): tokens/s per GPU."""
    step = decode_step(DS, "gb200", 72, 72 * 64, 4096, compute_dtype="fp8")
    return step.tokens_per_second / 72
