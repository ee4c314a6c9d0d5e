"""Problem set 7 — inference: the reference solutions of `solutions/07_inference.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`, `models.toml`, `prices.toml`). Answers are in SI base units.
"""

from __future__ import annotations

from dataclasses import replace

from ...hardware.chips import get_chip
from ...inference.cost import cost_per_million_tokens
from ...inference.steps import decode_step, decode_time, kv_cache_bytes, max_batch, prefill
from ...inference.techniques import disaggregation_ratio, speculative_speedup, weight_stationary
from ...models import get_model
from ...roofline import critical_batch
from ..inputs import vary
from . import solution

LLAMA_8B, LLAMA_70B = "llama3-8b", "llama3-70b"
# The GPUs and dense presets a variant may name instead of the book's.
GPUS = ("h100", "h200", "b200", "a100", "mi300x", "mi325x", "gb200")
SMALL_MODELS = ("llama3-8b", "gemma-7b", "llama2-13b")

@solution("07.1", title="The decode floor of LLaMA 3-8B on one H100", unit="s", hints=(
    "At batch one every decode step reads every weight once; nothing else matters.",
    "⟦t = 2 * sb.get_model(model).param_count() / sb.get_chip(chip).hbm_bandwidth⟧: the bf16 weights over HBM "
    "bandwidth.",
))
def decode_floor_8b(model: str = vary(LLAMA_8B, choices=SMALL_MODELS), chip: str = vary("h100", choices=GPUS)) -> float:
    """Seconds to read every bf16 weight of `model` once from `chip`'s HBM."""
    return decode_step(model, chip, 1, 1, 0).t_params


@solution("07.2", title="Critical batch of int8 weights on a v6e", unit="tokens", hints=(
    "Weights dominate the bytes at decode; with int8 weights each weight costs one byte for two FLOPs per token.",
    "⟦B = C / W * w / 2⟧ with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧, ⟦W = sb.get_chip(chip).hbm_bandwidth⟧ and "
    "⟦w = sb.units.dtype_bytes('int8')⟧.",
))
def v6e_int8_weight_critical_batch(
        chip: str = vary("v6e", choices=("v6e", "v5e", "v5p", "v4p", "tpu7x", *GPUS))) -> float:
    """Tokens a decode matmul with int8 weights and bf16 arithmetic needs to be compute-bound on `chip`."""
    return critical_batch(chip, weight_dtype="int8")


@solution("07.3", title="A sliding window in three layers of four", unit="B", hints=(
    "Global layers keep every token; local layers keep only the window.",
    "A quarter of the layers cache all T tokens, three quarters only the window, one byte per int8 value: ⟦b = "
    "(0.25 * T + 0.75 * min(T, window)) * 2 * m.L * m.K * m.H * 1⟧ with ⟦m = sb.get_model('llama3-70b')⟧.",
))
def local_attention_cache(
        T: int = vary(131072, 16384, 262144, step=8192), window: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """int8 KV cache of one T-token LLaMA 3-70B sequence when 3/4 of the layers see only the last `window`."""
    return kv_cache_bytes(LLAMA_70B, T, 1, 1, local_layers=0.75, window=window)


@solution("07.4", title="How many 8k sequences fit beside LLaMA 3-8B", unit="sequences", rtol=0.0, hints=(
    "What HBM is left after the weights holds the KV caches.",
    "⟦n = floor((sb.get_chip(chip).hbm_bytes - 2 * m.param_count()) / (m.kv_bytes_per_token(2) * T))⟧ with ⟦m = "
    "sb.get_model('llama3-8b')⟧.",
))
def max_batch_8b(chip: str = vary("h100", choices=GPUS), T: int = vary(8192, 2048, 32768, step=1024)) -> int:
    """Most T-token sequences whose bf16 KV caches fit beside LLaMA 3-8B's bf16 weights on one `chip`."""
    return max_batch(LLAMA_8B, chip, 1, T)


@solution("07.5", title="The decode step at that batch", unit="s", hints=(
    "At the largest batch the step reads the weights once and every sequence's KV cache; compare the weight reads "
    "with the math.",
    "In the book's model a decode step reads every weight and every sequence's cache; the cache reads cannot hide "
    "behind the math, the weight reads and the math overlap: ⟦t = n * T * kv / W + max(2 * n * m.param_count() / C, "
    "2 * m.param_count() / W)⟧ with the batch of the problem before, ⟦n = floor((sb.get_chip(chip).hbm_bytes - 2 * "
    "m.param_count()) / (kv * T))⟧, ⟦kv = m.kv_bytes_per_token(2)⟧, ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧, ⟦W "
    "= sb.get_chip(chip).hbm_bandwidth⟧ and ⟦m = sb.get_model('llama3-8b')⟧.",
))
def step_at_max_batch_8b(chip: str = vary("h100", choices=GPUS), T: int = vary(8192, 2048, 32768, step=1024)) -> float:
    """Decode step of LLaMA 3-8B on one `chip` at T tokens of context and the batch of problem 7.4."""
    return decode_step(LLAMA_8B, chip, 1, max_batch_8b(chip, T), T).time


@solution("07.6", title="Throughput per chip of LLaMA 3-70B on a v5e 4x4", unit="tokens/s per chip", hints=(
    "Throughput is the batch over the step time; the step reads weights and caches from all chips' HBM.",
    "⟦r = batch / t / 16⟧ with the int8 step on all sixteen chips, where a decode step reads every weight and every "
    "sequence's cache; the cache reads cannot hide behind the math, the weight reads and the math overlap: ⟦t = "
    "batch * T * m.kv_bytes_per_token(1) / W + max(2 * batch * m.param_count() / C, m.param_count() / W)⟧, ⟦C = 16 "
    "* sb.get_chip('v5e').peak_flops('bf16')⟧, ⟦W = 16 * sb.get_chip('v5e').hbm_bandwidth⟧ and ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def llama70b_throughput_per_chip(
        batch: int = vary(64, 8, 256, step=8), T: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """Tokens/s per chip at `batch` sequences, T tokens of context, int8 weights and cache, 16 v5e."""
    return decode_step(LLAMA_70B, "v5e", 16, batch, T, param_bytes=1, kv_bytes=1).tokens_per_second / 16


@solution("07.7", title="What a million tokens cost", unit="USD", hints=(
    "Cost per token is the chip's price per second over its tokens per second.",
    "⟦c = 1e6 * sb.inference.chip_price('v5e') / 3600 / r⟧ with the tokens per second per chip of the problem "
    "before: ⟦r = batch / t / 16⟧, ⟦t = batch * T * m.kv_bytes_per_token(1) / W + max(2 * batch * m.param_count() / "
    "C, m.param_count() / W)⟧, ⟦C = 16 * sb.get_chip('v5e').peak_flops('bf16')⟧, ⟦W = 16 * "
    "sb.get_chip('v5e').hbm_bandwidth⟧ and ⟦m = sb.get_model('llama3-70b')⟧.",
))
def llama70b_cost_per_million(
        batch: int = vary(64, 8, 256, step=8), T: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """US dollars per million generated tokens at the throughput of problem 7.6 and $1.20 per v5e-hour."""
    return cost_per_million_tokens("v5e", llama70b_throughput_per_chip(batch, T))


@solution("07.8", title="Prefill servers per decode server", unit="servers", hints=(
    "A decode server finishes a batch of sequences every (tokens generated × step time); prefill must supply as "
    "many prompts in that time.",
    "⟦r = batch * t_prefill / (generated * t_step)⟧ with the prefill at the problem's MFU, ⟦t_prefill = "
    "sb.inference.prefill('llama3-8b', 'h100', 1, prompt, assumed_mfu=0.5).time⟧, and the decode step at the mean "
    "context, ⟦t_step = sb.inference.decode_step('llama3-8b', 'h100', 1, batch, prompt + generated / 2).time⟧.",
))
def disaggregated_ratio_8b(
        prompt: int = vary(4096, 512, 16384, step=512), generated: int = vary(1024, 128, 4096, step=128),
                           batch: int = vary(32, 8, 128, step=8)) -> float:
    """LLaMA 3-8B on H100s: `prompt`-token prompts prefilled at 50% MFU; decode at `batch` for `generated` tokens,
    costed at the mean context. Prefill servers needed per decode server."""
    t_prefill = prefill(LLAMA_8B, "h100", 1, prompt, assumed_mfu=0.5).time
    t_step = decode_step(LLAMA_8B, "h100", 1, batch, prompt + generated / 2).time
    return disaggregation_ratio(t_prefill, t_step, batch, generated)


@solution("07.9", title="When 2-D weight-stationary pays off for LLaMA 3-70B", unit="chips", hints=(
    "1D weight-stationary sharding moves activations whose size does not shrink with N; 2D's traffic falls as one "
    "over sqrt(N).",
    "Per B / W (which cancel): 1D moves ⟦one_d = 4 * D / 3⟧, 2D at its best split ⟦two_d = 2 * sqrt(8 * D * F)⟧ "
    "over sqrt(N); they cross at ⟦N = (two_d / one_d) ** 2⟧ with ⟦D = 8192⟧.",
))
def weight_stationary_crossover_70b(F: int = vary(28672, 8192, 65536, step=1024)) -> float:
    """Chip count N above which 2-D weight-stationary sharding of an MLP (D = 8192, width F) moves less data than
    1-D. Both costs scale with B·D; the 2-D one as 1/sqrt(N), so the crossover is (2-D/1-D at N = 1)²."""
    one_chip = weight_stationary(1, 8192, F, "v5e", 1)
    return (one_chip["2d"] / one_chip["1d"]) ** 2


@solution("07.10", title="The best draft length", unit="x speed-up", hints=(
    "Each draft token is accepted with probability α; a verify step yields the accepted run plus one, and drafting "
    "γ tokens costs γ × c of a step.",
    "⟦s = max((1 - alpha ** (g + 1)) / (1 - alpha) / (1 + g * cost) for g in range(1, 17))⟧.",
))
def best_speculative_speedup(alpha: float = vary(0.8, 0.5, 0.95), cost: float = vary(0.05, 0.01, 0.2)) -> float:
    """Largest speculative-decoding speed-up over draft lengths 1 ... 16 at acceptance `alpha`, drafts at `cost`."""
    return max(speculative_speedup(alpha, gamma, cost) for gamma in range(1, 17))


@solution("07.11", title="When tensor-parallel decode turns latency-bound", unit="sequences", hints=(
    "Each hop carries one shard (one N-th of the array); below a microsecond's worth of bytes, latency dominates.",
    "⟦B = W * 1e-6 * N / (D * 2)⟧ with the one-way ⟦W = sb.get_chip(chip).ici_bandwidth⟧ and bf16 activations.",
))
def latency_bound_batch(N: int = vary(16, 4, 64, step=4), D: int = vary(8192, 2048, 16384, step=1024),
                        chip: str = vary("v5e", choices=("v5e", "v5p", "v6e", "v4p", "tpu7x"))) -> float:
    """Batch below which each hop of an N-way AllGather of bf16 activations [B, D] on `chip` carries less than one
    microsecond's worth of link bandwidth."""
    per_hop_limit = get_chip(chip).ici_bandwidth * 1e-6
    return per_hop_limit * N / (D * 2)


# --- the book's own problems (How To Scale Your Model, ch. 7), graded against its published answers ----------------
# The invented model of the chapter's problems is the preset "ch7-model" (L = 64, D = 4096, F = 16,384, N = 32,
# K = 8, H = 256, V = 32,128, tied embeddings).


@solution("07.12", title="The book's pop quiz: a 30B model at batch 256", unit="s", hints=(
    "Count both memory terms (weights once, every sequence's KV cache) and the FLOPs; the cache reads cannot hide "
    "behind the math.",
    "In the book's model a decode step reads every weight and every sequence's cache; the cache reads cannot hide "
    "behind the math, the weight reads and the math overlap: ⟦t = batch * kv / W + max(2 * params * batch / C, "
    "params / W)⟧ with int8 weights, ⟦kv = 100e3 * 8192⟧ bytes per sequence, ⟦C = 16 * "
    "sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 16 * sb.get_chip('v5e').hbm_bandwidth⟧.",
))
def book_pop_quiz_batch_256(params: float = vary(30e9, 5e9, 1e11), batch: int = vary(256, 16, 1024, step=16)) -> float:
    """Decode step of a `params`-parameter model, int8 weights, bf16 FLOPs, 100 kB of KV per token at 8192 tokens,
    `batch` sequences, on 16 v5e chips."""
    return decode_time(params, 100e3 * 8192, batch, "v5e", 16, param_bytes=1).time


@solution("07.13", title="The book's Q1: parameters of the chapter's model", unit="parameters", hints=(
    "Attention with grouped KV heads: Q and O are D × N·H, K and V are D × K·H; a gated MLP; tied embeddings.",
    "⟦P = L * (2 * m.D * m.N * m.H + 2 * m.D * m.K * m.H + 3 * m.D * m.F) + m.V * m.D⟧ with ⟦m = "
    "sb.get_model('ch7-model')⟧.",
))
def book_q1_params(L: int = vary(64, 16, 128, step=4)) -> float:
    """Parameters of the chapter's invented model (preset 'ch7-model') with L layers."""
    return replace(get_model("ch7-model"), L=L).param_count()


@solution("07.14", title="The book's Q2: 128k-token sequences on a v5e 4x4", unit="sequences", rtol=0.0, hints=(
    "HBM of all chips, less the int8 weights, over one sequence's int8 cache.",
    "⟦n = floor((16 * sb.get_chip('v5e').hbm_bytes - m.param_count()) / (T * m.kv_bytes_per_token(1)))⟧ with ⟦m = "
    "sb.get_model('ch7-model')⟧.",
))
def book_q2_max_batch(T: int = vary(128_000, 8000, 256_000, step=8000)) -> int:
    """Sequences of T tokens whose int8 caches fit beside the int8 weights on 16 v5e chips."""
    return max_batch("ch7-model", "v5e", 16, T, 1, 1)


@solution("07.15", title="The book's Q3: the latency floor", unit="s", hints=(
    "Batch one: the step reads every weight once, split over all chips' HBM.",
    "⟦t = m.param_count() * 1 / (chips * sb.get_chip('v5e').hbm_bandwidth)⟧ with int8 weights and ⟦m = "
    "sb.get_model('ch7-model')⟧.",
))
def book_q3_floor(chips: int = vary(16, 4, 64, step=4)) -> float:
    """Seconds to read the chapter model's int8 weights from the HBM of `chips` v5e chips."""
    return decode_step("ch7-model", "v5e", chips, 1, 0, param_bytes=1).t_params


@solution("07.16", title="The book's Q5: active parameters of the MoE", unit="parameters", hints=(
    "Only k of the E experts run per token; attention, embeddings and the router always do.",
    "Replace the dense MLP by k experts' and add each layer's D × E router: ⟦P = m.param_count() - mlp + k * mlp + "
    "m.L * m.D * E⟧ with ⟦mlp = 3 * m.D * m.F * m.L⟧ and ⟦m = sb.get_model('ch7-model')⟧.",
))
def book_q5_active_params(E: int = vary(16, 8, 64, step=8), k: int = vary(2, 1, 4)) -> float:
    """Active parameters per token when the chapter model's MLP becomes E experts with top-k routing."""
    return replace(get_model("ch7-model"), E=E, k=k).param_count(active=True)


@solution("07.17", title="The book's Q7: when 2-D weight-stationary wins", unit="chips", hints=(
    "The ratio of 2D to 1D traffic falls as one over sqrt(N) and depends only on F / D.",
    "Per B / W: 1D moves ⟦one_d = 4 * D / 3⟧, 2D at its best split ⟦two_d = 2 * sqrt(8 * D * F)⟧ over sqrt(N); ⟦N = "
    "(two_d / one_d) ** 2⟧ with ⟦F = ratio * D⟧ and ⟦D = 8192⟧.",
))
def book_q7_crossover(ratio: int = vary(4, 2, 8)) -> float:
    """Chips N beyond which 2-D weight-stationary sharding communicates less than 1-D (F = ratio · D, any B, D)."""
    one = weight_stationary(B=1, D=8192, F=ratio * 8192, chip="v5e", N=1)
    return (one["2d"] / one["1d"]) ** 2


@solution("07.18", title="The book's appendix A: a 600M-parameter layer's floor", unit="s", hints=(
    "Batch one, no cache: only the weights' bytes count, split over the chips.",
    "⟦t = 2 * params / (chips * sb.get_chip('v5e').hbm_bandwidth)⟧: bf16 weights.",
))
def book_appendix_a_floor(params: float = vary(600e6, 1e8, 5e9), chips: int = vary(4, 1, 16)) -> float:
    """Decode latency floor of a `params`-parameter bf16 layer sharded over `chips` v5e chips (weights read once)."""
    return decode_time(params, 0, 1, "v5e", chips).time


@solution("07.19", title="The book's Q5: all the parameters of the MoE", unit="parameters", hints=(
    "Every expert is a whole copy of the gated MLP; attention and the tied embedding are not multiplied.",
    "⟦P = m.param_count() - mlp + E * mlp + m.L * m.D * E⟧ with ⟦mlp = 3 * m.D * m.F * m.L⟧ and each layer's D × E "
    "router, ⟦m = sb.get_model('ch7-model')⟧.",
))
def book_q5_total_params(E: int = vary(16, 8, 64, step=8)) -> float:
    """All parameters when the chapter model's MLP becomes E experts with top-2 routing."""
    return replace(get_model("ch7-model"), E=E, k=2).param_count()

