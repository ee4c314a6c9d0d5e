"""Problem set 8 — Serving LLaMA 3: the reference solutions of `solutions/08_serving_llama.md`.

Each function computes its answer with scalebook from the inputs the problem states (model presets from
`models.toml`, chips from `chips.toml`, prices from `prices.toml`), so the key moves with the package. Answers are
in SI base units. Every decode step here leaves the inter-chip collectives out, as the chapter's first sections do.
"""

from __future__ import annotations

from ..hardware.chips import get_chip
from ..inference import (
    cost_per_million_tokens,
    decode_step,
    disaggregation_ratio,
    evicted_per_step,
    kv_cache_bytes,
    max_batch,
    prefill,
    smallest_topology,
)
from ..models import get_model
from ..roofline import critical_batch
from ..training.book import tp_limit
from . import problem

V6E_USD_PER_HOUR = 2.70  # an assumed price for problem 1 (the chapter's price table has no v6e)
V5E_SLICES = (4, 8, 16, 32, 64, 128, 256)  # chips in the v5e slices 2x2, 4x2, 4x4, 4x8, 8x8, 8x16, 16x16


def _largest_batch_within(model: str, chips: int, context: float, budget: float, param_bytes: float,
                          kv_bytes: float) -> int:
    """Largest batch that fits in HBM and whose v5e decode step takes at most `budget` seconds (0 if none)."""
    fits = max_batch(model, "v5e", chips, context, param_bytes, kv_bytes)
    ok = [B for B in range(1, fits + 1)
          if decode_step(model, "v5e", chips, B, context, param_bytes, kv_bytes).time <= budget]
    return max(ok, default=0)


@problem("08.1", title="What a dollar buys on a TPU v6e", unit="FLOPs/$")
def v6e_flops_per_dollar() -> float:
    """Peak bf16 FLOPs one dollar buys on a v6e rented at $2.70 per chip-hour."""
    return get_chip("v6e").bf16_flops * 3600 / V6E_USD_PER_HOUR


@problem("08.2", title="A 128k-token cache for LLaMA 3.1-405B", unit="B")
def cache_405b_128k() -> float:
    """Bytes of one 131,072-token bf16 KV cache of LLaMA 3.1-405B."""
    return kv_cache_bytes("llama3-405b", 131072, 1, bytes_per_value=2)


@problem("08.3", title="How many 32k conversations fit on a 2x2", unit="sequences", rtol=0.0)
def llama3_8b_batch_2x2() -> int:
    """Most 32,768-token sequences LLaMA 3-8B (bf16 weights and KV) can hold on a v5e 2x2."""
    return max_batch("llama3-8b", "v5e", 4, 32768, param_bytes=2, kv_bytes=2)


def _llama3_8b_step() -> float:
    return decode_step("llama3-8b", "v5e", 4, 64, 4096, param_bytes=1, kv_bytes=1).time


@problem("08.4", title="A decode step of LLaMA 3-8B", unit="s")
def llama3_8b_step() -> float:
    """Decode step of LLaMA 3-8B, int8 weights and KV, bf16 arithmetic, v5e 2x2, batch 64 at 4096 tokens."""
    return _llama3_8b_step()


@problem("08.5", title="Queries per second per chip", unit="queries/s/chip")
def llama3_8b_qps() -> float:
    """Problem 4's server answering 256-token replies: finished queries per second per chip."""
    return 64 / (_llama3_8b_step() * 256 * 4)


@problem("08.6", title="Dollars per million tokens", unit="$/Mtok")
def llama3_70b_cost() -> float:
    """$ per million generated tokens: LLaMA 3-70B, int8 weights and KV, v5e 4x4, batch 64 at 4096 tokens."""
    step = decode_step("llama3-70b", "v5e", 16, 64, 4096, param_bytes=1, kv_bytes=1)
    return cost_per_million_tokens("v5e", step.tokens_per_second / 16)


@problem("08.7", title="Prefilling a 32k prompt on LLaMA 3.1-405B", unit="s")
def prefill_405b() -> float:
    """Prefill of one 32,768-token prompt on a v5e 8x8 at 50% MFU, causal attention included."""
    return prefill("llama3-405b", "v5e", 64, 32768, mfu=0.5).time


@problem("08.8", title="Balancing prefill and decode servers", unit="ratio")
def prefill_decode_ratio() -> float:
    """Prefill servers per decode server: 4096-token prefills of LLaMA 3-70B on a v5e 4x4 at 45% MFU (2·P·T, no
    attention) against an int8 4x4 decode server at batch 96, caches counted at 6144 tokens, 2048-token replies."""
    t_prefill = prefill("llama3-70b", "v5e", 16, 4096, mfu=0.45, attention=False).time
    step = decode_step("llama3-70b", "v5e", 16, 96, 6144, param_bytes=1, kv_bytes=1).time
    return disaggregation_ratio(t_prefill, step, 96, 2048)


@problem("08.9", title="int4 weights on a TPU v6e", unit="tokens")
def v6e_int4_critical_batch() -> float:
    """Token batch above which a matmul with int4 weights and bf16 arithmetic is compute-bound on a v6e."""
    return critical_batch("v6e", weight_dtype="int4")


@problem("08.10", title="A 12 ms budget for LLaMA 3-70B", unit="sequences", rtol=0.0)
def batch_within_12ms() -> int:
    """Largest batch of LLaMA 3-70B (int8 weights and KV, 8192 tokens) on a v5e 4x4 whose step is <= 12 ms."""
    return _largest_batch_within("llama3-70b", 16, 8192, 12e-3, 1, 1)


@problem("08.11", title="Cache turnover", unit="tokens/step")
def cache_turnover() -> float:
    """KV tokens freed per decode step: batch 128, 2048-token prompts, 512-token replies."""
    return evicted_per_step(128, 2048, 512)


@problem("08.12", title="LLaMA 3.1-405B within 10 ms", unit="sequences", rtol=0.0)
def batch_405b_within_10ms() -> int:
    """On the smallest v5e slice whose batch-1 step of LLaMA 3.1-405B (int8 weights and KV, 8192 tokens) is <= 10 ms,
    the largest batch that still steps in <= 10 ms."""
    chips = next(n for n in V5E_SLICES if max_batch("llama3-405b", "v5e", n, 8192, 1, 1) >= 1
                 and decode_step("llama3-405b", "v5e", n, 1, 8192, 1, 1).time <= 10e-3)
    return _largest_batch_within("llama3-405b", chips, 8192, 10e-3, 1, 1)


# --- the book's own questions (How To Scale Your Model, ch. 8), graded against its published answers ---------------


def _full_step(chips: int, bytes_per_value: float):
    """LLaMA 3-70B's decode step with HBM full of 8k caches (weights and caches `bytes_per_value` each)."""
    batch = max_batch("llama3-70b", "v5e", chips, 8192, bytes_per_value, bytes_per_value)
    return decode_step("llama3-70b", "v5e", chips, batch, 8192, bytes_per_value, bytes_per_value)


@problem("08.13", title="The book's question: KV bytes per token", unit="B")
def book_kv_per_token() -> float:
    """Bytes of LLaMA 3-70B's int8 KV cache per token (2 · K · H · L)."""
    return kv_cache_bytes("llama3-70b", 1, 1, 1)


@problem("08.14", title="The book's question: 32 conversations of 8k tokens", unit="B")
def book_memory_32_conversations() -> float:
    """Bytes of int8 weights plus 32 int8 caches of 8192 tokens."""
    return get_model("llama3-70b").param_count() + kv_cache_bytes("llama3-70b", 8192, 32, 1)


@problem("08.15", title="The book's question: a decode step on a 4x2", unit="s")
def book_step_4x2() -> float:
    """Decode step of those 32 conversations on 8 v5e chips (int8 weights and caches)."""
    return decode_step("llama3-70b", "v5e", 8, 32, 8192, param_bytes=1, kv_bytes=1).time


@problem("08.16", title="The book's question: int8 weights, bf16 arithmetic", unit="tokens")
def book_critical_int8_weights() -> float:
    """Batch above which decode matmuls are compute-bound on v5e with int8 weights and bf16 FLOPs."""
    return critical_batch("v5e", weight_dtype="int8")


@problem("08.17", title="The book's question: the smallest bf16 slice", unit="chips", rtol=0.0)
def book_smallest_bf16_slice() -> int:
    """Chips in the smallest v5e slice whose HBM holds LLaMA 3-70B's bf16 weights."""
    x, y = smallest_topology("llama3-70b", "v5e", 2)
    return x * y


@problem("08.18", title="The book's question: a step with HBM full of caches", unit="s")
def book_full_step() -> float:
    """Decode step of LLaMA 3-70B on a v5e 4x2 in int8, at the largest batch of 8k caches that fits."""
    return _full_step(8, 1).time


@problem("08.19", title="The book's question: queries per second per chip", unit="QPS per chip")
def book_qps_int8() -> float:
    """QPS per chip on that 4x2 with 512-token replies, the step taken as every byte in HBM read once."""
    step = _full_step(8, 1)
    return step.batch / ((step.t_params + step.t_kv) * 512 * 8)


@problem("08.20", title="The book's question: doubling the slice", unit="QPS per chip")
def book_qps_int8_doubled() -> float:
    """The same QPS per chip on a v5e 4x4 (16 chips)."""
    step = _full_step(16, 1)
    return step.batch / ((step.t_params + step.t_kv) * 512 * 16)


@problem("08.21", title="The book's question: the large-batch model-parallel limit", unit="chips")
def book_large_batch_limit() -> float:
    """Model-parallel degree over two v5e axes below which large-batch decode stays compute-bound (F·M_Y/2200)."""
    return tp_limit(28672, "v5e", M_Y=2)


@problem("08.22", title="The book's question: an 8k-token prefill", unit="s")
def book_prefill_8k() -> float:
    """Prefill of 8192 tokens of LLaMA 3-70B on 16 v5e chips at 40% MFU, 2 FLOPs per parameter per token."""
    return prefill("llama3-70b", "v5e", 16, 8192, mfu=0.4, attention=False).time


@problem("08.23", title="The book's question: cache turnover", unit="tokens")
def book_evicted_per_step() -> float:
    """Cached tokens freed per decode step: batch 32, 8192-token prompts, 4096-token replies."""
    return evicted_per_step(32, 8192, 4096)


@problem("08.24", title="The book's question: prefill servers per decode server", unit="servers")
def book_disaggregation_ratio() -> float:
    """Prefill servers per decode server: the 8k prefill above, the full 4x2 step, batch 32, 512-token replies."""
    return disaggregation_ratio(book_prefill_8k(), book_full_step(), 32, 512)
