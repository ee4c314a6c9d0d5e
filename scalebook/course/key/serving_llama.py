"""Problem set 8 — Serving LLaMA 3: the reference solutions of `solutions/08_serving_llama.md`.

Each function computes its answer with scalebook from the inputs the problem states (model presets from
`models.toml`, chips from `chips.toml`, prices from `prices.toml`), so the key moves with the package. Answers are
in SI base units. Every decode step here leaves the inter-chip collectives out, as the chapter's first sections do.
"""

from __future__ import annotations

from ...hardware.chips import get_chip
from ...inference.caches import evicted_per_step, smallest_topology
from ...inference.cost import cost_per_million_tokens
from ...inference.steps import decode_step, kv_cache_bytes, max_batch, prefill
from ...inference.techniques import disaggregation_ratio
from ...models import get_model
from ...roofline import critical_batch
from ...training.book import tp_limit
from ..inputs import vary
from . import solution

V6E_USD_PER_HOUR = 2.70  # an assumed price for problem 1 (the chapter's price table has no v6e)
V5E_SLICES = (4, 8, 16, 32, 64, 128, 256)  # chips in the v5e slices 2x2, 4x2, 4x4, 4x8, 8x8, 8x16, 16x16


def _largest_batch_within(model: str, chips: int, context: float, budget: float, param_bytes: float,
                          kv_bytes: float) -> int:
    """Largest batch that fits in HBM and whose v5e decode step takes at most `budget` seconds (0 if none)."""
    fits = max_batch(model, "v5e", chips, context, param_bytes, kv_bytes)
    ok = [B for B in range(1, fits + 1)
          if decode_step(model, "v5e", chips, B, context, param_bytes, kv_bytes).time <= budget]
    return max(ok, default=0)


@solution("08.1", title="What a dollar buys on a TPU v6e", unit="FLOPs/$", hints=(
    "A chip-hour buys an hour of peak FLOP/s.",
    "⟦f = sb.get_chip('v6e').peak_flops('bf16') * 3600 / price⟧.",
))
def v6e_flops_per_dollar(price: float = vary(V6E_USD_PER_HOUR, 1.0, 6.0)) -> float:
    """Peak bf16 FLOPs one dollar buys on a v6e rented at `price` $ per chip-hour."""
    return get_chip("v6e").bf16_flops * 3600 / price


@solution("08.2", title="A 128k-token cache for LLaMA 3.1-405B", unit="B", hints=(
    "Per token: a key and a value per KV head per layer.",
    "⟦b = 2 * m.L * m.K * m.H * bytes_per_value * T⟧ with ⟦m = sb.get_model('llama3-405b')⟧.",
))
def cache_405b_128k(
        T: int = vary(131072, 8192, 262144, step=8192), bytes_per_value: int = vary(2, choices=(1, 2, 4))) -> float:
    """Bytes of one T-token KV cache of LLaMA 3.1-405B, `bytes_per_value` bytes per value."""
    return kv_cache_bytes("llama3-405b", T, 1, bytes_per_value=bytes_per_value)


@solution("08.3", title="How many 32k conversations fit on a 2x2", unit="sequences", rtol=0.0, hints=(
    "HBM left after the weights, over one sequence's cache.",
    "⟦n = floor((chips * sb.get_chip('v5e').hbm_bytes - 2 * m.param_count()) / (T * m.kv_bytes_per_token(2)))⟧ with "
    "⟦m = sb.get_model('llama3-8b')⟧ in bf16.",
))
def llama3_8b_batch_2x2(T: int = vary(32768, 4096, 65536, step=4096), chips: int = vary(4, choices=(4, 8, 16))) -> int:
    """Most T-token sequences LLaMA 3-8B (bf16 weights and KV) can hold on `chips` v5e chips."""
    return max_batch("llama3-8b", "v5e", chips, T, param_bytes=2, kv_bytes=2)


@solution("08.4", title="A decode step of LLaMA 3-8B", unit="s", hints=(
    "Read the int8 weights once and every sequence's int8 cache; the cache reads cannot hide behind the math, the "
    "weight reads and the math overlap.",
    "⟦t = batch * T * kv / W + max(2 * batch * P / C, P / W)⟧ over the four chips' HBM and FLOP/s, with ⟦P = "
    "m.param_count()⟧ (one byte each), ⟦kv = m.kv_bytes_per_token(1)⟧, ⟦C = 4 * "
    "sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 4 * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = "
    "sb.get_model('llama3-8b')⟧.",
))
def llama3_8b_step(batch: int = vary(64, 8, 128, step=8), T: int = vary(4096, 1024, 8192, step=512)) -> float:
    """Decode step of LLaMA 3-8B, int8 weights and KV, bf16 arithmetic, v5e 2x2, `batch` at T tokens."""
    return decode_step("llama3-8b", "v5e", 4, batch, T, param_bytes=1, kv_bytes=1).time


@solution("08.5", title="Queries per second per chip", unit="queries/s/chip", hints=(
    "A query finishes after its reply's tokens, one per step; the batch finishes together.",
    "⟦q = batch / (t * reply * 4)⟧ per chip, with the step of problem four at its context and this batch: ⟦t = "
    "batch * T * kv / W + max(2 * batch * P / C, P / W)⟧, ⟦T = 4096⟧, ⟦P = m.param_count()⟧, ⟦kv = "
    "m.kv_bytes_per_token(1)⟧, ⟦C = 4 * sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 4 * "
    "sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = sb.get_model('llama3-8b')⟧.",
))
def llama3_8b_qps(batch: int = vary(64, 8, 128, step=8), reply: int = vary(256, 64, 2048, step=64)) -> float:
    """Problem 4's server at `batch` answering `reply`-token replies: finished queries per second per chip."""
    return batch / (llama3_8b_step(batch) * reply * 4)


@solution("08.6", title="Dollars per million tokens", unit="$/Mtok", hints=(
    "Cost per token = price per chip-second / tokens per chip-second.",
    "⟦c = 1e6 * sb.inference.chip_price('v5e') / 3600 / (batch / t / 16)⟧ with the int8 step on sixteen chips, ⟦t = "
    "batch * T * kv / W + max(2 * batch * P / C, P / W)⟧, ⟦P = m.param_count()⟧, ⟦kv = m.kv_bytes_per_token(1)⟧, ⟦C "
    "= 16 * sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 16 * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def llama3_70b_cost(batch: int = vary(64, 8, 256, step=8), T: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """$ per million generated tokens: LLaMA 3-70B, int8 weights and KV, v5e 4x4, `batch` at T tokens."""
    step = decode_step("llama3-70b", "v5e", 16, batch, T, param_bytes=1, kv_bytes=1)
    return cost_per_million_tokens("v5e", step.tokens_per_second / 16)


@solution("08.7", title="Prefilling a 32k prompt on LLaMA 3.1-405B", unit="s", hints=(
    "Prefill is compute-bound: two FLOPs per matmul parameter per token plus causal attention's share.",
    "The longer of the math at the assumed MFU and the weight and cache traffic: ⟦t = max(flops / (C * mfu), (2 * "
    "m.param_count() + T * m.kv_bytes_per_token(2)) / W)⟧ with ⟦flops = (2 * m.matmul_params() + 4 * m.N * m.H * "
    "m.L * T / 2) * T⟧, ⟦C = 64 * sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 64 * "
    "sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = sb.get_model('llama3-405b')⟧.",
))
def prefill_405b(T: int = vary(32768, 4096, 131072, step=4096), mfu: float = vary(0.5, 0.3, 0.7)) -> float:
    """Prefill of one T-token prompt on a v5e 8x8 at `mfu` MFU, causal attention included."""
    return prefill("llama3-405b", "v5e", 64, T, assumed_mfu=mfu).time


@solution("08.8", title="Balancing prefill and decode servers", unit="ratio", hints=(
    "While one decode server finishes a batch (reply tokens × step), prefill must fill the batch again.",
    "⟦r = B * t_prefill / (reply * t_step)⟧ with the batch ⟦B = 96⟧, the prefill without attention at the problem's "
    "MFU, ⟦t_prefill = max(2 * m.matmul_params() * prompt / (C * 0.45), (2 * P + prompt * m.kv_bytes_per_token(2)) "
    "/ W)⟧, the int8 step with caches at prompt + reply tokens, ⟦t_step = B * (prompt + reply) * "
    "m.kv_bytes_per_token(1) / W + max(2 * B * P / C, P / W)⟧, ⟦P = m.param_count()⟧, ⟦C = 16 * "
    "sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 16 * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def prefill_decode_ratio(
        prompt: int = vary(4096, 1024, 16384, step=1024), reply: int = vary(2048, 256, 8192, step=256)) -> float:
    """Prefill servers per decode server: `prompt`-token prefills of LLaMA 3-70B on a v5e 4x4 at 45% MFU (2·P·T, no
    attention) against an int8 4x4 decode server at batch 96, caches counted at prompt + reply tokens, `reply`-token
    replies."""
    t_prefill = prefill("llama3-70b", "v5e", 16, prompt, assumed_mfu=0.45, attention=False).time
    step = decode_step("llama3-70b", "v5e", 16, 96, prompt + reply, param_bytes=1, kv_bytes=1).time
    return disaggregation_ratio(t_prefill, step, 96, reply)


@solution("08.9", title="int4 weights on a TPU v6e", unit="tokens", hints=(
    "Half a byte per weight, two FLOPs per weight per token in bf16.",
    "⟦B = C / W * w / 2⟧ with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧, ⟦W = sb.get_chip(chip).hbm_bandwidth⟧ and "
    "⟦w = sb.units.dtype_bytes('int4')⟧.",
))
def v6e_int4_critical_batch(
        chip: str = vary("v6e", choices=("v6e", "v5e", "v5p", "v4p", "tpu7x", "h100", "b200"))) -> float:
    """Token batch above which a matmul with int4 weights and bf16 arithmetic is compute-bound on `chip`."""
    return critical_batch(chip, weight_dtype="int4")


@solution("08.10", title="A 12 ms budget for LLaMA 3-70B", unit="sequences", rtol=0.0, hints=(
    "Each sequence adds its cache's bytes to the step: find the batch where the step reaches the budget, and check "
    "that it fits.",
    "⟦n = max((B for B in range(1, fits + 1) if B * T * kv / W + max(2 * B * P / C, P / W) <= budget), default=0)⟧ "
    "with what fits beside the int8 weights, ⟦fits = floor((16 * sb.get_chip('v5e').hbm_bytes - P) / (T * kv))⟧, ⟦P "
    "= m.param_count()⟧, ⟦kv = m.kv_bytes_per_token(1)⟧, ⟦C = 16 * sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = "
    "16 * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = sb.get_model('llama3-70b')⟧.",
))
def batch_within_12ms(T: int = vary(8192, 2048, 16384, step=1024), budget: float = vary(12e-3, 8e-3, 0.03)) -> int:
    """Largest batch of LLaMA 3-70B (int8 weights and KV, T tokens) on a v5e 4x4 whose step is <= `budget`."""
    return _largest_batch_within("llama3-70b", 16, T, budget, 1, 1)


@solution("08.11", title="Cache turnover", unit="tokens/step", hints=(
    "In steady state one sequence in every reply-length finishes each step, freeing its whole cache.",
    "⟦r = batch * (prompt + reply) / reply⟧ tokens per step.",
))
def cache_turnover(batch: int = vary(128, 8, 512, step=8), prompt: int = vary(2048, 256, 16384, step=256),
                   reply: int = vary(512, 64, 4096, step=64)) -> float:
    """KV tokens freed per decode step: `batch` sequences, `prompt`-token prompts, `reply`-token replies."""
    return evicted_per_step(batch, prompt, reply)


@solution("08.12", title="LLaMA 3.1-405B within 10 ms", unit="sequences", rtol=0.0, hints=(
    "First the slice: the smallest whose batch-one step meets the budget; then the largest batch on it that still "
    "does.",
    "On n chips a step of B int8 sequences is one n-th of the one-chip step (cache reads, then the longer of the "
    "math and the weight reads). The slice: ⟦n = next(n for n in (2 ** i for i in range(2, 9)) if n * M - P >= T * "
    "kv and (T * kv / W + max(2 * P / C, P / W)) / n <= budget)⟧; then the batch: ⟦b = max((B for B in range(1, "
    "fits + 1) if (B * T * kv / W + max(2 * B * P / C, P / W)) / n <= budget), default=0)⟧ with ⟦fits = floor((n * "
    "M - P) / (T * kv))⟧, ⟦M = sb.get_chip('v5e').hbm_bytes⟧, ⟦P = m.param_count()⟧, ⟦kv = "
    "m.kv_bytes_per_token(1)⟧, ⟦C = sb.get_chip('v5e').peak_flops('bf16')⟧, ⟦W = sb.get_chip('v5e').hbm_bandwidth⟧ "
    "and ⟦m = sb.get_model('llama3-405b')⟧.",
))
def batch_405b_within_10ms(T: int = vary(8192, 2048, 16384, step=1024), budget: float = vary(10e-3, 6e-3, 0.03)) -> int:
    """On the smallest v5e slice whose batch-1 step of LLaMA 3.1-405B (int8 weights and KV, T tokens) is within
    `budget`, the largest batch that still steps within it."""
    chips = next(n for n in V5E_SLICES if max_batch("llama3-405b", "v5e", n, T, 1, 1) >= 1
                 and decode_step("llama3-405b", "v5e", n, 1, T, 1, 1).time <= budget)
    return _largest_batch_within("llama3-405b", chips, T, budget, 1, 1)


# --- the book's own questions (How To Scale Your Model, ch. 8), graded against its published answers ---------------


def _full_step(chips: int, bytes_per_value: float):
    """LLaMA 3-70B's decode step with HBM full of 8k caches (weights and caches `bytes_per_value` each)."""
    batch = max_batch("llama3-70b", "v5e", chips, 8192, bytes_per_value, bytes_per_value)
    return decode_step("llama3-70b", "v5e", chips, batch, 8192, bytes_per_value, bytes_per_value)


@solution("08.13", title="The book's question: KV bytes per token", unit="B", hints=(
    "A key and a value per KV head per layer.",
    "⟦b = 2 * m.K * m.H * m.L * bytes_per_value⟧ with ⟦m = sb.get_model(model)⟧.",
))
def book_kv_per_token(model: str = vary("llama3-70b", choices=("llama3-70b", "llama3-8b", "llama3-405b", "llama2-13b",
                                                                "gemma-7b")),
                      bytes_per_value: int = vary(1, choices=(1, 2))) -> float:
    """Bytes of `model`'s KV cache per token (2 · K · H · L), `bytes_per_value` bytes per value."""
    return kv_cache_bytes(model, 1, 1, bytes_per_value)


@solution("08.14", title="The book's question: 32 conversations of 8k tokens", unit="B", hints=(
    "Weights once (one byte each in int8), plus each conversation's cache.",
    "⟦b = m.param_count() + batch * T * 2 * m.K * m.H * m.L⟧ with ⟦m = sb.get_model('llama3-70b')⟧.",
))
def book_memory_32_conversations(
        batch: int = vary(32, 4, 128, step=4), T: int = vary(8192, 1024, 32768, step=1024)) -> float:
    """Bytes of int8 weights plus `batch` int8 caches of T tokens."""
    return get_model("llama3-70b").param_count() + kv_cache_bytes("llama3-70b", T, batch, 1)


@solution("08.15", title="The book's question: a decode step on a 4x2", unit="s", hints=(
    "Memory-bound: every byte of the total is read once per step, and the cache reads do not hide behind the math.",
    "⟦t = batch * T * kv / W + max(2 * batch * P / C, P / W)⟧ with ⟦P = m.param_count()⟧, ⟦kv = "
    "m.kv_bytes_per_token(1)⟧, ⟦C = 8 * sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 8 * "
    "sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = sb.get_model('llama3-70b')⟧.",
))
def book_step_4x2(batch: int = vary(32, 4, 64, step=4), T: int = vary(8192, 1024, 16384, step=1024)) -> float:
    """Decode step of `batch` conversations of T tokens on 8 v5e chips (int8 weights and caches)."""
    return decode_step("llama3-70b", "v5e", 8, batch, T, param_bytes=1, kv_bytes=1).time


@solution("08.16", title="The book's question: int8 weights, bf16 arithmetic", unit="tokens", hints=(
    "One byte per weight, two bf16 FLOPs per weight per token.",
    "⟦B = C / W * w / 2⟧ with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧, ⟦W = sb.get_chip(chip).hbm_bandwidth⟧ and "
    "⟦w = sb.units.dtype_bytes('int8')⟧.",
))
def book_critical_int8_weights(
        chip: str = vary("v5e", choices=("v5e", "v5p", "v6e", "v4p", "tpu7x", "h100", "h200"))) -> float:
    """Batch above which decode matmuls are compute-bound on `chip` with int8 weights and bf16 FLOPs."""
    return critical_batch(chip, weight_dtype="int8")


@solution("08.17", title="The book's question: the smallest bf16 slice", unit="chips", rtol=0.0, hints=(
    "Slices come in fixed shapes (1x1, 2x1, 2x2, 4x2 and so on): find the first whose total HBM holds the weights.",
    "⟦n = next(2 ** i for i in range(9) if 2 ** i * sb.get_chip('v5e').hbm_bytes >= bytes_per_param * "
    "sb.get_model(model).param_count())⟧ chips.",
))
def book_smallest_bf16_slice(model: str = vary("llama3-70b", choices=("llama3-70b", "llama3-8b", "llama2-13b",
                                                                      "gemma-7b", "ch7-model")),
                             bytes_per_param: int = vary(2, choices=(1, 2))) -> int:
    """Chips in the smallest v5e slice whose HBM holds `model`'s weights at `bytes_per_param` bytes each."""
    x, y = smallest_topology(model, "v5e", bytes_per_param)
    return x * y


@solution("08.18", title="The book's question: a step with HBM full of caches", unit="s", hints=(
    "With HBM full of caches, the step reads nearly all of HBM once.",
    "At the largest batch of int8 caches of ⟦T = 8192⟧ tokens that fits, ⟦B = floor((chips * "
    "sb.get_chip('v5e').hbm_bytes - P) / (T * kv))⟧, the step is ⟦t = B * T * kv / W + max(2 * B * P / C, P / W)⟧ "
    "with ⟦P = m.param_count()⟧, ⟦kv = m.kv_bytes_per_token(1)⟧, ⟦C = chips * "
    "sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = chips * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def book_full_step(chips: int = vary(8, choices=(8, 16, 32, 64))) -> float:
    """Decode step of LLaMA 3-70B on `chips` v5e chips in int8, at the largest batch of 8k caches that fits."""
    return _full_step(chips, 1).time


@solution("08.19", title="The book's question: queries per second per chip", unit="QPS per chip", hints=(
    "The batch finishes together after reply-length steps.",
    "⟦q = B / ((P + B * T * kv) / W * reply * 8)⟧ per chip at the full batch of the slice of eight, ⟦B = floor((8 * "
    "sb.get_chip('v5e').hbm_bytes - P) / (T * kv))⟧, where each step reads the int8 weights and every cache: ⟦T = "
    "8192⟧, ⟦P = m.param_count()⟧, ⟦kv = m.kv_bytes_per_token(1)⟧, ⟦W = 8 * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def book_qps_int8(reply: int = vary(512, 64, 4096, step=64)) -> float:
    """QPS per chip on that 4x2 with `reply`-token replies, the step taken as every byte in HBM read once."""
    step = _full_step(8, 1)
    return step.batch / ((step.t_params + step.t_kv) * reply * 8)


@solution("08.20", title="The book's question: doubling the slice", unit="QPS per chip", hints=(
    "More chips: the weights take a smaller share of HBM, leaving room for a larger batch.",
    "⟦q = B / ((P + B * T * kv) / W * reply * 16)⟧ per chip at the full batch of the 4x4, ⟦B = floor((16 * "
    "sb.get_chip('v5e').hbm_bytes - P) / (T * kv))⟧, with ⟦T = 8192⟧, ⟦P = m.param_count()⟧, ⟦kv = "
    "m.kv_bytes_per_token(1)⟧, ⟦W = 16 * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = sb.get_model('llama3-70b')⟧.",
))
def book_qps_int8_doubled(reply: int = vary(512, 64, 4096, step=64)) -> float:
    """The same QPS per chip on a v5e 4x4 (16 chips) with `reply`-token replies."""
    step = _full_step(16, 1)
    return step.batch / ((step.t_params + step.t_kv) * reply * 16)


@solution("08.21", title="The book's question: the large-batch model-parallel limit", unit="chips", hints=(
    "Large-batch decode is like training's TP: the MLP width per chip must outweigh C / W_ici.",
    "⟦Y = M_Y * F * W / C⟧ with ⟦C = sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip('v5e').ici_bidirectional⟧.",
))
def book_large_batch_limit(F: int = vary(28672, 8192, 65536, step=1024), M_Y: int = vary(2, 1, 3)) -> float:
    """Model-parallel degree over M_Y v5e axes below which large-batch decode stays compute-bound (F·M_Y/2200)."""
    return tp_limit(F, "v5e", M_Y=M_Y)


@solution("08.22", title="The book's question: an 8k-token prefill", unit="s", hints=(
    "Prefill is compute-bound: two FLOPs per matmul parameter per token.",
    "The longer of the math at the assumed MFU and the bf16 weight and cache traffic: ⟦t = max(2 * "
    "m.matmul_params() * T / (C * mfu), (2 * m.param_count() + T * m.kv_bytes_per_token(2)) / W)⟧ with ⟦C = 16 * "
    "sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = 16 * sb.get_chip('v5e').hbm_bandwidth⟧, ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def book_prefill_8k(T: int = vary(8192, 1024, 32768, step=1024), mfu: float = vary(0.4, 0.3, 0.7)) -> float:
    """Prefill of T tokens of LLaMA 3-70B on 16 v5e chips at `mfu` MFU, 2 FLOPs per parameter per token."""
    return prefill("llama3-70b", "v5e", 16, T, assumed_mfu=mfu, attention=False).time


@solution("08.23", title="The book's question: cache turnover", unit="tokens", hints=(
    "Each step, batch / reply sequences finish, each freeing prompt + reply tokens.",
    "⟦r = batch * (prompt + reply) / reply⟧.",
))
def book_evicted_per_step(batch: int = vary(32, 4, 256, step=4), prompt: int = vary(8192, 1024, 32768, step=1024),
                          reply: int = vary(4096, 256, 8192, step=256)) -> float:
    """Cached tokens freed per decode step: `batch` sequences, `prompt`-token prompts, `reply`-token replies."""
    return evicted_per_step(batch, prompt, reply)


@solution("08.24", title="The book's question: prefill servers per decode server", unit="servers", hints=(
    "Prefill must supply a full batch of prompts in the time a decode server takes to finish one.",
    "⟦r = batch * t_prefill / (reply * t_step)⟧ with the book's prefill of ⟦T = 8192⟧ tokens at its MFU, ⟦t_prefill "
    "= max(2 * m.matmul_params() * T / (16 * C * 0.4), (2 * P + T * m.kv_bytes_per_token(2)) / (16 * W))⟧, and the "
    "full 4x2's step, ⟦t_step = (n * T * kv / W + max(2 * n * P / C, P / W)) / 8⟧ at its largest batch ⟦n = "
    "floor((8 * sb.get_chip('v5e').hbm_bytes - P) / (T * kv))⟧; ⟦P = m.param_count()⟧, ⟦kv = "
    "m.kv_bytes_per_token(1)⟧, ⟦C = sb.get_chip('v5e').peak_flops('bf16')⟧, ⟦W = sb.get_chip('v5e').hbm_bandwidth⟧, "
    "⟦m = sb.get_model('llama3-70b')⟧.",
))
def book_disaggregation_ratio(
        batch: int = vary(32, 4, 128, step=4), reply: int = vary(512, 64, 4096, step=64)) -> float:
    """Prefill servers per decode server: the 8k prefill above, the full 4x2 step, `batch`, `reply`-token replies."""
    return disaggregation_ratio(book_prefill_8k(), book_full_step(), batch, reply)


@solution("08.25", title="The book's Q1: the forward FLOPs of a token of LLaMA 3.1-405B", unit="FLOPs", hints=(
    "Two FLOPs per matmul weight per token; the input embedding is a look-up, not a matmul.",
    "⟦f = 2 * sb.get_model(model).matmul_params()⟧.",
))
def book_forward_flops_per_token(model: str = vary("llama3-405b", choices=("llama3-405b", "llama3-70b", "llama3-8b",
                                                                           "llama2-13b", "gemma-7b"))) -> float:
    """Forward FLOPs per token of `model`'s matmuls (attention's scores left out)."""
    return get_model(model).flops_per_token(training=False)

