"""Problem set 7 (inference): the answer key agrees with hand computations, and the notebook with the key."""

from __future__ import annotations

from problemsets import hand_answer_test

# LLaMA 3-8B (public config.json): L = 32, D = 4096, F = 14336, N = 32, K = 8, H = 128, V = 128256, untied.
# Parameters: L·(attention 2·D·N·H + 2·D·K·H, gated MLP 3·D·F, two norms 2·D) + embedding and unembedding + final norm.
_P8 = 32 * (2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 3 * 4096 * 14336 + 2 * 4096) + 2 * 128256 * 4096 + 4096
_MATMUL_8 = _P8 - 128256 * 4096 - (2 * 32 + 1) * 4096  # every weight but the embedding lookups and the norms
_KV8 = 2 * 32 * 8 * 128 * 2  # bf16 KV bytes per token: 131,072
# LLaMA 3-70B: L = 80, D = 8192, F = 28672, N = 64, K = 8, H = 128, V = 128256, untied.
_P70 = 80 * (2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672 + 2 * 8192) + 2 * 128256 * 8192 + 8192
_KV70_INT8 = 2 * 80 * 8 * 128  # int8 KV bytes per token: 163,840
# H100: 9.89e14 bf16 FLOP/s, 3.35e12 B/s, 80 GB. v5e: 1.97e14 FLOP/s, 8.2e11 B/s, 16 GB, links 4.5e10 B/s one way.
_H100_C, _H100_W = 9.89e14, 3.35e12


def _h100_step(batch: int, context: float) -> float:
    """KV reads + max(FLOPs, bf16 weight reads) for LLaMA 3-8B on one H100."""
    return batch * context * _KV8 / _H100_W + max(2 * batch * _P8 / _H100_C, 2 * _P8 / _H100_W)


_MAX_BATCH_8 = int((80e9 - 2 * _P8) // (8192 * _KV8))  # 59
_STEP_70 = 64 * 4096 * _KV70_INT8 / (16 * 8.2e11) + max(2 * 64 * _P70 / (16 * 1.97e14), _P70 / (16 * 8.2e11))
# prefill: (2 x matmul weights + causal attention 2·N·(H + H)·(T/2)·L) per token, x T tokens, at 50% of peak
_PREFILL_8 = (2 * _MATMUL_8 + 2 * 32 * 256 * 2048 * 32) * 4096 / (0.5 * _H100_C)

# Each answer worked by hand from the models' public configs and the chips' spec numbers (book ch. 7; chips.toml).
# The chapter's invented model (book ch. 7): L, D, F, N, K, H, V, tied embeddings; norms 2D per layer + D.
_P7 = 64 * 4096 * (3 * 16384 + 2 * 256 * (32 + 8)) + 4096 * 32128 + (2 * 64 + 1) * 4096
_KV7_INT8 = 2 * 64 * 8 * 256
_ROUTER = 64 * 4096 * 16  # one router matrix [D, E] per layer
_ACTIVE7 = _P7 - 64 * 3 * 4096 * 16384 + 2 * 64 * 3 * 4096 * 16384 + _ROUTER  # two experts' MLPs

HAND: dict[str, float] = {
    # every bf16 weight read once: 2 bytes x P / W_hbm.
    "07.1": 2 * _P8 / _H100_W,
    # int8 weights, bf16 math: (C / W) / 2.
    "07.2": 9.2e14 / 1.6e12 / 2,
    # 1/4 of the layers cache all 131,072 tokens, 3/4 only the last 4096: int8 bytes per token x effective tokens.
    "07.3": _KV70_INT8 * (0.25 * 131072 + 0.75 * 4096),
    # (80 GB - bf16 weights) / (8192 tokens x 131,072 B), rounded down.
    "07.4": _MAX_BATCH_8,
    # that batch: KV reads + max(FLOPs, weight reads).
    "07.5": _h100_step(_MAX_BATCH_8, 8192),
    # 64 sequences per step over 16 chips.
    "07.6": 64 / _STEP_70 / 16,
    # $1.20 per chip-hour over (tokens/s per chip x 3600 s), per million tokens.
    "07.7": 1.2 / (3600 * 64 / _STEP_70 / 16) * 1e6,
    # prefill time x batch / (step time x generated tokens), the step costed at the mean context 4608.
    "07.8": _PREFILL_8 * 32 / (_h100_step(32, 4608) * 1024),
    # N* = 128 (3/4)² (F/4D) = 18 F / D, with F / D = 28672 / 8192 = 3.5.
    "07.9": 18 * 28672 / 8192,
    # (1 - a^(γ+1)) / (1 - a) tokens per (1 + γ c) steps, best γ in 1 ... 16 (γ = 8).
    "07.10": max((1 - 0.8 ** (g + 1)) / 0.2 / (1 + 0.05 * g) for g in range(1, 17)),
    # B·D·2 bytes / 16 shards < 4.5e10 B/s x 1 µs  ->  B < 45,000 x 16 / (2 x 8192).
    "07.11": 45_000 * 16 / (2 * 8192),
    # The book's ch. 7 problems, worked from the v5e's 8.2e11 B/s and 1.97e14 FLOP/s per chip.
    "07.12": 256 * 100e3 * 8192 / (16 * 8.2e11) + max(2 * 256 * 30e9 / (16 * 1.97e14), 30e9 / (16 * 8.2e11)),
    "07.13": _P7,
    "07.14": int((16 * 16e9 - _P7) // (128_000 * _KV7_INT8)),
    "07.15": _P7 / (16 * 8.2e11),
    "07.16": _ACTIVE7,
    "07.17": 128 * (3 / 4) ** 2,
    "07.18": 2 * 600e6 / (4 * 8.2e11),
}

test_references_match_hand_computations = hand_answer_test("07.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers
