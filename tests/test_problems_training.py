"""Problem set 5 (parallelizing training): the answer key agrees with answers worked by hand."""

from __future__ import annotations

import math

from problemsets import hand_answer_test

# TPU v5p (book ch. 2 table): bf16 FLOP/s, bidirectional ICI per axis, DCN per chip.
C_V5P, W_V5P, DCN_V5P = 4.59e14, 2 * 9e10, 6.25e9
ALPHA = C_V5P / W_V5P  # 2550


def llama(L: int, D: int, F: int, N: int, K: int, H: int, V: int) -> tuple[int, int]:
    """(all parameters, parameters in matmuls) of a gated-MLP GQA model with separate (un)embeddings."""
    layer = 3 * D * F + 2 * D * N * H + 2 * D * K * H
    matmuls = L * layer + V * D  # the unembedding is a matmul; the input embedding is a lookup
    return matmuls + V * D + 2 * D * L + D, matmuls


P_8B, MATMUL_8B = llama(32, 4096, 14336, 32, 8, 128, 128256)  # LLaMA 3-8B public config
P_70B, MATMUL_70 = llama(80, 8192, 28672, 64, 8, 128, 128256)  # LLaMA 3-70B (book ch. 6 table)

# LLaMA 2-13B (book ch. 5 table): L, D, F, heads x width, V; untied embeddings; norms 2D per layer + D.
L13, D13, F13, NH13, V13 = 40, 5120, 13824, 40 * 128, 32000
P13 = L13 * (3 * D13 * F13 + 4 * D13 * NH13) + 2 * V13 * D13 + 2 * D13 * L13 + D13
MATMUL_13 = P13 - V13 * D13 - (2 * D13 * L13 + D13)  # the input embedding is a lookup, the norms do no matmul

# Each answer worked by hand from the raw spec numbers and the book's ch. 5 formulas.
HAND: dict[str, float] = {
    # DP over both axes of a v6e torus: B/X > C / (2 W_bidi) with C = 9.2e14, W_bidi = 1.8e11.
    "05.1": 9.2e14 / (2 * 2 * 9e10),
    # 192 GB of HBM at 2 (bf16 weights) + 8 (two fp32 moments) bytes per parameter.
    "05.2": 192e9 / 10,
    # ZeRO-1: 2 P replicated + 8 P / 64 sharded.
    "05.3": 2 * P_8B + 8 * P_8B / 64,
    # 10 bytes per parameter plus 2 · B · D · L bytes of block checkpoints, all over 1024 chips.
    "05.4": (10 * P_70B + 2 * 2**22 * 8192 * 80) / 1024,
    # Y < M_Y · F / α.
    "05.5": 2 * 53248 / ALPHA,
    # sqrt((B / F) (M_X / M_Y) N).
    "05.6": math.sqrt(2**20 / 14336 * 2 * 1024),
    # N · α² / (M_X M_Y F).
    "05.7": 8960 * ALPHA**2 / (2 * 53248),
    # 6 FLOPs per matmul parameter per token at 45% of peak (communication, 89 ms, is shorter).
    "05.8": 6 * MATMUL_8B * 2**22 / (2048 * C_V5P * 0.45),
    # per-slice batch > C / W_dcn = 73,440 tokens.
    "05.9": math.floor(2e6 / (C_V5P / DCN_V5P)),
    # 15 / (M + 15) < 0.05  <=>  M > 285.
    "05.10": 286,
    # 15 / (4 M + 15) < 0.05  <=>  M > 71.25.
    "05.11": 72,
    # Z < 9 (k + shared) F_expert / (k α) = 9 · 9 · 2048 / (8 · 2550) = 8.13.
    "05.12": math.floor(9 * 9 * 2048 / (8 * ALPHA)),
    # The book's Q1-Q3 (ch. 5): 3LDF + 4DNHL + 2VD (+ norms); 2·L·B·(D + 2F); 6·P·B / (N·C·MFU).
    "05.13": P13,
    "05.14": 2 * L13 * 16e6 * (D13 + 2 * F13),
    "05.15": 6 * MATMUL_13 * 3e6 / (4096 * C_V5P * 0.4),
    # The book's Ex1-Ex9 (ch. 5).
    "05.16": 8960 * ALPHA / 3,
    "05.17": 96e9 / 10,
    "05.18": 40e6 / (ALPHA / 3),
    "05.19": 15e12 / 16e6 * 6 * MATMUL_70 * 16e6 / (round(16e6 / (ALPHA / 3)) * C_V5P * 0.5) / 86400,
    "05.20": 28672 / ALPHA,
    "05.21": math.sqrt(48_000 / 32_768 * 2 * 64),
    "05.22": ALPHA**2 / (2 * 32_768),
    "05.23": 4096 * ALPHA**2 / (2 * 32_768),
    "05.24": 2e6 / (ALPHA**2 / (2 * 30_000)),
}


test_references_match_hand_computations = hand_answer_test("05.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers
