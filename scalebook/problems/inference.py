"""Problem set 7 — inference: the reference solutions of `solutions/07_inference.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`, `models.toml`, `prices.toml`). Answers are in SI base units.
"""

from __future__ import annotations

from dataclasses import replace

from ..hardware.chips import get_chip
from ..inference import (
    cost_per_million_tokens,
    decode_step,
    decode_time,
    disaggregation_ratio,
    kv_cache_bytes,
    max_batch,
    prefill,
    speculative_speedup,
    weight_stationary,
)
from ..models import get_model
from ..roofline import critical_batch
from . import problem

LLAMA_8B, LLAMA_70B = "llama3-8b", "llama3-70b"

@problem("07.1", title="The decode floor of LLaMA 3-8B on one H100", unit="s")
def decode_floor_8b() -> float:
    """Seconds to read every bf16 weight of LLaMA 3-8B once from an H100's HBM."""
    return decode_step(LLAMA_8B, "h100", 1, 1, 0).t_params


@problem("07.2", title="Critical batch of int8 weights on a v6e", unit="tokens")
def v6e_int8_weight_critical_batch() -> float:
    """Tokens a decode matmul with int8 weights and bf16 arithmetic needs to be compute-bound on a TPU v6e."""
    return critical_batch("v6e", weight_dtype="int8")


@problem("07.3", title="A sliding window in three layers of four", unit="B")
def local_attention_cache() -> float:
    """int8 KV cache of one 131,072-token LLaMA 3-70B sequence when 3/4 of the layers see only the last 4096."""
    return kv_cache_bytes(LLAMA_70B, 131072, 1, 1, local_layers=0.75, window=4096)


@problem("07.4", title="How many 8k sequences fit beside LLaMA 3-8B", unit="sequences", rtol=0.0)
def max_batch_8b() -> int:
    """Most 8192-token sequences whose bf16 KV caches fit beside LLaMA 3-8B's bf16 weights on one H100."""
    return max_batch(LLAMA_8B, "h100", 1, 8192)


@problem("07.5", title="The decode step at that batch", unit="s")
def step_at_max_batch_8b() -> float:
    """Decode step of LLaMA 3-8B on one H100 at 8192 tokens of context and the batch of problem 7.4."""
    return decode_step(LLAMA_8B, "h100", 1, max_batch_8b(), 8192).time


@problem("07.6", title="Throughput per chip of LLaMA 3-70B on a v5e 4x4", unit="tokens/s per chip")
def llama70b_throughput_per_chip() -> float:
    """Tokens/s per chip at batch 64, 4096 tokens of context, int8 weights and cache, 16 v5e."""
    return decode_step(LLAMA_70B, "v5e", 16, 64, 4096, param_bytes=1, kv_bytes=1).tokens_per_second / 16


@problem("07.7", title="What a million tokens cost", unit="USD")
def llama70b_cost_per_million() -> float:
    """US dollars per million generated tokens at the throughput of problem 7.6 and $1.20 per v5e-hour."""
    return cost_per_million_tokens("v5e", llama70b_throughput_per_chip())


@problem("07.8", title="Prefill servers per decode server", unit="servers")
def disaggregated_ratio_8b() -> float:
    """LLaMA 3-8B on H100s: 4096-token prompts prefilled at 50% MFU; decode at batch 32 for 1024 tokens, costed at
    the mean context 4096 + 512. Prefill servers needed per decode server."""
    prompt, generated, batch = 4096, 1024, 32
    t_prefill = prefill(LLAMA_8B, "h100", 1, prompt, mfu=0.5).time
    t_step = decode_step(LLAMA_8B, "h100", 1, batch, prompt + generated / 2).time
    return disaggregation_ratio(t_prefill, t_step, batch, generated)


@problem("07.9", title="When 2-D weight-stationary pays off for LLaMA 3-70B", unit="chips")
def weight_stationary_crossover_70b() -> float:
    """Chip count N above which 2-D weight-stationary sharding of LLaMA 3-70B's MLP (F/D = 3.5) moves less data
    than 1-D. Both costs scale with B·D; the 2-D one as 1/sqrt(N), so the crossover is (2-D/1-D at N = 1)²."""
    one_chip = weight_stationary(1, 8192, 28672, "v5e", 1)
    return (one_chip["2d"] / one_chip["1d"]) ** 2


@problem("07.10", title="The best draft length", unit="x speed-up")
def best_speculative_speedup() -> float:
    """Largest speculative-decoding speed-up over draft lengths 1 ... 16 at acceptance 0.8, drafts at 5% of a step."""
    return max(speculative_speedup(0.8, gamma, 0.05) for gamma in range(1, 17))


@problem("07.11", title="When tensor-parallel decode turns latency-bound", unit="sequences")
def latency_bound_batch() -> float:
    """Batch below which each hop of a 16-way AllGather of LLaMA 3-70B's bf16 activations [B, 8192] on v5e carries
    less than one microsecond's worth of link bandwidth (45 kB)."""
    per_hop_limit = get_chip("v5e").ici_bandwidth * 1e-6
    return per_hop_limit * 16 / (8192 * 2)


# --- the book's own problems (How To Scale Your Model, ch. 7), graded against its published answers ----------------
# The invented model of the chapter's problems is the preset "ch7-model" (L = 64, D = 4096, F = 16,384, N = 32,
# K = 8, H = 256, V = 32,128, tied embeddings).


@problem("07.12", title="The book's pop quiz: a 30B model at batch 256", unit="s")
def book_pop_quiz_batch_256() -> float:
    """Decode step of a 30B-parameter model, int8 weights, bf16 FLOPs, 100 kB of KV per token at 8192 tokens,
    batch 256, on 16 v5e chips."""
    return decode_time(30e9, 100e3 * 8192, 256, "v5e", 16, param_bytes=1).time


@problem("07.13", title="The book's Q1: parameters of the chapter's model", unit="parameters")
def book_q1_params() -> float:
    """Parameters of the chapter's invented model (preset 'ch7-model')."""
    return get_model("ch7-model").param_count()


@problem("07.14", title="The book's Q2: 128k-token sequences on a v5e 4x4", unit="sequences", rtol=0.0)
def book_q2_max_batch() -> int:
    """Sequences of 128,000 tokens whose int8 caches fit beside the int8 weights on 16 v5e chips."""
    return max_batch("ch7-model", "v5e", 16, 128_000, 1, 1)


@problem("07.15", title="The book's Q3: the latency floor", unit="s")
def book_q3_floor() -> float:
    """Seconds to read the chapter model's int8 weights from the HBM of 16 v5e chips."""
    return decode_step("ch7-model", "v5e", 16, 1, 0, param_bytes=1).t_params


@problem("07.16", title="The book's Q5: active parameters of the MoE", unit="parameters")
def book_q5_active_params() -> float:
    """Active parameters per token when the chapter model's MLP becomes 16 experts with top-2 routing."""
    return replace(get_model("ch7-model"), E=16, k=2).param_count(active=True)


@problem("07.17", title="The book's Q7: when 2-D weight-stationary wins", unit="chips")
def book_q7_crossover() -> float:
    """Chips N beyond which 2-D weight-stationary sharding communicates less than 1-D (F = 4D, any B and D)."""
    one = weight_stationary(B=1, D=8192, F=4 * 8192, chip="v5e", N=1)
    return (one["2d"] / one["1d"]) ** 2


@problem("07.18", title="The book's appendix A: a 600M-parameter layer's floor", unit="s")
def book_appendix_a_floor() -> float:
    """Decode latency floor of a 600M-parameter bf16 layer sharded over 4 v5e chips (weights read once)."""
    return decode_time(600e6, 0, 1, "v5e", 4).time
