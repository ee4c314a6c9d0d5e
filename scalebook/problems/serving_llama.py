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
)
from ..roofline import critical_batch
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
