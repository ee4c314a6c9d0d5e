"""Problem set 6 (training LLaMA 3): the answer key agrees with hand computations, and the notebook with the key."""

from __future__ import annotations

import math

import pytest
from problemsets import hand_answer_test

import scalebook as sb
from scalebook.grading import ExpectationError
from scalebook.problems import get_problem

# Public configs (as in models.toml): LLaMA 3-8B and 3.1-405B; the book's chips (ch. 2 table, chips.toml).
L8, D8, F8, N8, K8, H, V = 32, 4096, 14336, 32, 8, 128, 128256
L405, D405, F405, N405 = 126, 16384, 53248, 128
V5P_C, V5P_W, V5P_DCN, POD = 4.59e14, 1.8e11, 6.25e9, 8960


def gqa_params(L: int, D: int, F: int, N: int, K: int, V: int) -> float:
    """Gated MLP, GQA attention, untied embeddings, and the 2D-per-layer plus final D norm scales."""
    return L * (3 * D * F + 2 * D * N * H + 2 * D * K * H) + 2 * V * D + 2 * D * L + D


P8 = gqa_params(L8, D8, F8, N8, K8, V)
P405 = gqa_params(L405, D405, F405, N405, 8, V)
MATMUL_8B = P8 - V * D8 - (2 * D8 * L8 + D8)  # the input embedding and the norms do no matmul
MATMUL_405B = P405 - V * D405 - (2 * D405 * L405 + D405)

# Each answer worked by hand from the letters and the raw spec numbers.
# LLaMA 3-70B (book ch. 6 table) and the book's batch of 1024 sequences of 4096 tokens.
P70 = gqa_params(80, 8192, 28672, 64, 8, V)
MATMUL_70 = P70 - V * 8192 - (2 * 8192 * 80 + 8192)
B70 = 4 * 2**20
STATE_70 = 10 * P70 + 2 * 8192 * 4e6 * 4 * 80  # bf16 weights + fp32 Adam + four bf16 [B, D] saves per layer

HAND: dict[str, float] = {
    # Mistral 7B: L=32, D=4096, F=14336, N=32, K=8, H=128, V=32000, untied -> 7.24e9.
    "06.1": gqa_params(32, 4096, 14336, 32, 8, 32000),
    # attention 126 · 2·16384·128·(128 + 8) over all 405.9e9 parameters.
    "06.2": L405 * 2 * D405 * H * (N405 + 8) / P405,
    # 6 × all parameters over 6 × matmul parameters.
    "06.3": P8 / MATMUL_8B,
    # 6 · matmul params · 15e12 tokens at 40% of 4.59e14 FLOP/s, in hours per chip.
    "06.4": 6 * MATMUL_405B * 15e12 / (V5P_C * 0.4) / 3600,
    # 256 v6e chips at 9.2e14 FLOP/s and 45% MFU.
    "06.5": 6 * MATMUL_8B * 15e12 / (256 * 9.2e14 * 0.45),
    # (2 + 8)·P + 2·4·2^20·D·L bytes over 16e9 per v5e, rounded up.
    "06.6": math.ceil((10 * P8 + 2 * 4 * 2**20 * D8 * L8) / 16e9),
    # those 74 chips at 1.97e14 FLOP/s and 45% MFU.
    "06.7": 6 * MATMUL_8B * 15e12 / (74 * 1.97e14 * 0.45),
    # (10·P + 2·12·16·2^20·D·L) bytes over 8 pods.
    "06.8": (10 * P405 + 2 * 12 * 16 * 2**20 * D405 * L405) / (8 * POD),
    # B / (α / 3) with α = C / W_bidi = 2550.
    "06.9": 4 * 2**20 / (V5P_C / V5P_W / 3),
    # floor(B / (α² / 2F) / 8960).
    "06.10": math.floor(16 * 2**20 / ((V5P_C / V5P_W) ** 2 / (2 * F405)) / POD),
    # Per pod, 2^21 tokens. Without sequence sharding (256 sequences a pod): 256-way FSDP × 32-way TP on 8192
    # chips, comms-bound by the TP collectives, 2 blocks · 6·B·D·2 bytes per layer over X·W with X = 256. With it:
    # 1024 × 8 on 8192 chips (2^21 tokens split over 1024, not 1120), compute-bound, causal attention at T = 8192.
    "06.11": (2 * 6 * 2 * 2**21 * D405 * L405 / (256 * V5P_W))
    / (2**21 * (6 * MATMUL_405B + 3 * 2 * N405 * 2 * H * 4096 * L405) / (8192 * V5P_C)),
    # 128 × 8 on all 1024 chips (128 sequences): compute (causal attention at T = 8192) over the TP collectives.
    "06.12": (2**20 * (6 * MATMUL_8B + 3 * 2 * N8 * 2 * H * 4096 * L8) / (1024 * V5P_C))
    / (2 * 6 * 2 * 2**20 * D8 * L8 / (128 * V5P_W)),
    # The book's ch. 6 questions: params; 6 per matmul parameter; years on one v5p; days on a pod at 40%;
    # chips for 21.7 TB of state (rounded up); bytes per chip on 8960; sequences; tokens per chip; sqrt(2BN/F).
    "06.13": P70,
    "06.14": 6 * MATMUL_70,
    "06.15": 6 * MATMUL_70 * 15e12 / 4.59e14 / (365.25 * 86400),
    "06.16": 6 * MATMUL_70 * 15e12 / (8960 * 4.59e14 * 0.4) / 86400,
    "06.17": math.ceil(STATE_70 / 96e9),
    "06.18": STATE_70 / 8960,
    "06.19": B70 // 4096,
    "06.20": B70 / 8960,
    "06.21": math.sqrt(2 * B70 * 8960 / 28672),
}

test_references_match_hand_computations = hand_answer_test("06.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers


def test_hand_counts_match_the_published_model_sizes() -> None:
    # Mistral 7B is "7.24B" on its model card; the LLaMA 3 names round these.
    assert HAND["06.1"] == pytest.approx(7.24e9, rel=1e-3)
    assert P8 == pytest.approx(8.03e9, rel=1e-3) and P405 == pytest.approx(405.9e9, rel=1e-3)


def test_whole_number_answers_reject_an_off_by_one() -> None:
    for qid in ("06.6", "06.10"):
        with pytest.raises(ExpectationError):
            sb.check(qid, get_problem(qid).reference() + 1)
