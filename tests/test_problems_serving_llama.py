"""Problem set 8 (serving LLaMA 3): the answer key agrees with hand computations, and the notebook with the key."""

from __future__ import annotations

import math

from problemsets import hand_answer_test

# Public configs (as in models.toml) and the book's chips (ch. 2 table, chips.toml); v5e price $1.2/h (ch. 8).
H, V = 128, 128256
V5E_C, V5E_W, V5E_HBM, V5E_USD = 1.97e14, 8.2e11, 16e9, 1.2
V6E_C, V6E_W = 9.2e14, 1.6e12


def params(L: int, D: int, F: int, N: int, K: int) -> float:
    """Gated MLP, GQA attention, untied embeddings, and the norm scales (2D per layer plus a final D)."""
    return L * (3 * D * F + 2 * D * N * H + 2 * D * K * H) + 2 * V * D + 2 * D * L + D


P8 = params(32, 4096, 14336, 32, 8)
P70 = params(80, 8192, 28672, 64, 8)
P405 = params(126, 16384, 53248, 128, 8)
MATMUL_70 = P70 - V * 8192 - (2 * 8192 * 80 + 8192)  # the input embedding and the norms do no matmul
MATMUL_405 = P405 - V * 16384 - (2 * 16384 * 126 + 16384)
KV8, KV70, KV405 = (2 * L * 8 * H for L in (32, 80, 126))  # int8 KV bytes per token: 2·L·K·H

# LLaMA 3-8B, int8, v5e 2x2, batch 64 at 4096 tokens: weights + caches over 4 x W (the FLOPs, 2·64·P8 / 4C = 1.3 ms,
# hide under the 2.4 ms weight read).
STEP_8B = (P8 + 64 * 4096 * KV8) / (4 * V5E_W)
# LLaMA 3-70B, int8, v5e 4x4, batch 64 at 4096 tokens (FLOPs 2.9 ms < weights 5.4 ms).
STEP_70B = (P70 + 64 * 4096 * KV70) / (16 * V5E_W)

# The book's ch. 8 questions: LLaMA 3-70B in int8 on v5e slices, HBM filled with 8k caches.
def _full(chips: int) -> tuple[int, float]:
    """(batch, step) with HBM full of int8 8k caches: every byte read once (the FLOPs hide below the knee)."""
    batch = int((chips * V5E_HBM - P70) // (8192 * KV70))
    return batch, (P70 + batch * 8192 * KV70) / (chips * V5E_W)


PREFILL_8K = 2 * MATMUL_70 * 8192 / (16 * V5E_C * 0.4)

HAND: dict[str, float] = {
    # peak FLOP/s x 3600 s per $2.70 hour.
    "08.1": V6E_C * 3600 / 2.70,
    # 2·L·K·H values x 2 bytes x 131072 tokens.
    "08.2": 2 * 126 * 8 * H * 2 * 131072,
    # (4 x 16 GB - 2·P8 bytes) over 2·(2·32·8·128) bytes x 32768 tokens per sequence, rounded down.
    "08.3": math.floor((4 * V5E_HBM - 2 * P8) / (2 * KV8 * 32768)),
    "08.4": STEP_8B,
    # 64 replies every 256 steps, over 4 chips.
    "08.5": 64 / (STEP_8B * 256 * 4),
    # $1.2 per chip-hour over 3600 s, per (64 tokens per step / 16 chips), per million tokens.
    "08.6": V5E_USD / 3600 / (64 / STEP_70B / 16) * 1e6,
    # (2 x matmul params + causal attention 2·N·(H + H)·T/2·L) x T over 64 x C x 0.5.
    "08.7": (2 * MATMUL_405 + 2 * 128 * 2 * H * 32768 / 2 * 126) * 32768 / (64 * V5E_C * 0.5),
    # prefill 2·P·T / (16·C·0.45) x batch 96 over (step x 2048 reply tokens); the step's FLOPs (4.3 ms) hide under
    # the weights (5.4 ms).
    "08.8": (2 * MATMUL_70 * 4096 / (16 * V5E_C * 0.45)) * 96
    / ((P70 + 96 * 6144 * KV70) / (16 * V5E_W) * 2048),
    # (C / W) x (half a byte per weight) / (2 bytes per bf16 activation).
    "08.9": V6E_C / V6E_W * 0.5 / 2,
    # weights take P70 / 16W = 5.38 ms; each 8192-token cache adds 8192·KV70 / 16W = 0.102 ms (FLOPs stay under the
    # weights below batch 120).
    "08.10": math.floor((12e-3 - P70 / (16 * V5E_W)) / (8192 * KV70 / (16 * V5E_W))),
    # B·(P + G)/G.
    "08.11": 128 * (2048 + 512) / 512,
    # 4x8: P405 / (32 W) = 15.5 ms > 10 ms; 8x8: 7.7 ms. Then the caches' 0.040 ms each fill the rest of 10 ms.
    "08.12": math.floor((10e-3 - P405 / (64 * V5E_W)) / (8192 * KV405 / (64 * V5E_W))),
    # The book's ch. 8 questions.
    "08.13": KV70,
    "08.14": P70 + 32 * 8192 * KV70,
    "08.15": (P70 + 32 * 8192 * KV70) / (8 * V5E_W),
    "08.16": V5E_C / V5E_W / 2,
    "08.17": 16,
    "08.18": _full(8)[1],
    "08.19": _full(8)[0] / (_full(8)[1] * 512 * 8),
    "08.20": _full(16)[0] / (_full(16)[1] * 512 * 16),
    "08.21": 2 * 28672 / (V5E_C / (2 * 4.5e10)),
    "08.22": PREFILL_8K,
    "08.23": 32 * (8192 + 4096) / 4096,
    "08.24": PREFILL_8K * 32 / (_full(8)[1] * 512),
}

test_references_match_hand_computations = hand_answer_test("08.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers
