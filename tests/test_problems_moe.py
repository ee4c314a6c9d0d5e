"""Problem set 14 (MoE and data-parallel inference): the answer key agrees with hand computations."""

from __future__ import annotations

import math
from fractions import Fraction

from problemsets import hand_answer_test

import scalebook as sb

# DeepSeek-V3: 58 MoE layers of 256 routed experts, each 3 x 7168 x 2048; 671.03e9 parameters, 37.55e9 active; an
# MLA cache of 61 x (512 + 64) = 35,136 values per token. TPU7x: 7.4e12 B/s HBM, 4.61e15 fp8 FLOP/s, 9e10 B/s per
# ICI link one way. GB200: 8e12 B/s, 5e15 fp8 FLOP/s, 9e11 B/s into its NVLink domain.
DS = sb.get_model("deepseek-v3")
ROUTED = 58 * 256 * 3 * 7168 * 2048
OTHER = DS.param_count() - ROUTED
ACTIVE = DS.param_count(active=True)
MLA = 61 * 576


def _overflow(n: int, p: Fraction, C: int) -> float:
    """E[max(X - C, 0)] / E[X] for X ~ Binomial(n, p), in exact arithmetic."""
    over = sum((x - C) * math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(C + 1, n + 1))
    return float(over / (n * p))


def _fill(units: int, k: int = 8) -> float:
    """Distinct units a top-k token reaches among `units`: units (1 - (1 - 1/units)^k)."""
    return units * (1 - (1 - 1 / units) ** k)


# The cube: each of 3 wrapped axes of 4 carries V x 4 / (64 x 4 x 2 W) per direction (ch. 3's AllToAll on a torus).
_TPU_A2A = sum(4096 * 7168 * b * _fill(64) * 4 / (64 * 4 * 2 * 90e9) for b in (1, 2))
# NVLink: each GPU sends its 64 tokens to the distinct GPUs they route to, less the 1/72 that stays home.
_NVL_A2A = sum(64 * 7168 * b * _fill(72) * 71 / 72 / 900e9 for b in (1, 2))


def _tokens_per_chip(W: float, C: float, slots: int, a2a: float, seqs: int = 64, context: int = 4096) -> float:
    """Attention-DP decode: every chip reads the non-expert weights, its `slots` experts and its caches; the
    dispatches (58 layers) overlap the reads; seqs / step."""
    weights = (OTHER + slots * ROUTED / 256) / W
    kv = seqs * context * MLA / W
    flops = 2 * seqs * ACTIVE / C
    return seqs / max(kv + max(weights, flops), 58 * a2a)


HAND: dict[str, float] = {
    # mean load 2048 x 2/64 = 64 = the capacity
    "14.1": _overflow(2048, Fraction(2, 64), 64),
    # each expert takes 64 of 2048 tokens: a token escapes all 64 with (1 - 1/32)^64
    "14.2": (1 - 64 / 2048) ** 64,
    "14.3": 256 * (1 - (1 - 8 / 256) ** 16),
    # fp8: one byte per weight read
    "14.4": OTHER + 8 * ROUTED / 256,
    # 256 sequences per replica; the latent is shared by all heads, so each TP chip keeps all of it
    "14.5": 256 * 8192 * MLA,
    "14.6": 32 * 8192 * MLA,
    "14.7": _TPU_A2A,
    "14.8": _NVL_A2A,
    # 4096 tokens touch every expert: all 4 slots per chip are read
    "14.9": _tokens_per_chip(7.4e12, 4.61e15, 4, _TPU_A2A),
    "14.10": _tokens_per_chip(8e12, 5e15, 4, _NVL_A2A),
}

test_references_match_hand_computations = hand_answer_test("14.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers
