"""Problem set 1 (rooflines): the answer key agrees with hand computations, and the notebook with the key."""

from __future__ import annotations

import pytest
from problemsets import hand_answer_test

from scalebook.problems import get_problem

# Each answer worked by hand from the raw spec numbers (book ch. 1-2 tables, NVIDIA datasheets as in chips.toml).
HAND: dict[str, float] = {
    # v6e: 3e12 FLOPs at 9.2e14 FLOP/s plus 2.4e9 bytes at 1.6e12 B/s, no overlap -> the clocks add.
    "01.1": 3e12 / 9.2e14 + 2.4e9 / 1.6e12,
    # residual add: B·D FLOPs over three bf16 arrays of B·D elements (2+2+2 bytes per element).
    "01.2": 1 / 6,
    # fused softmax on H100: memory-bound, 4 bytes per logit (read + write bf16) at 3.35e12 B/s.
    "01.3": 4 * 8192 * 128256 / 3.35e12,
    # v5e: activation pass 4·B·F bytes at 8.2e11 B/s over the compute-bound matmul 2·B·D·F at 1.97e14 FLOP/s.
    "01.4": (4 * 2048 * 28672 / 8.2e11) / (2 * 2048 * 8192 * 28672 / 1.97e14),
    # largest C/W of v6e (575), TPU7x (311), B200 (281), H200 (206): the v6e.
    "01.5": 9.2e14 / 1.6e12,
    # B200, 1-byte weights, bf16 compute: 2B > C/W -> B > (2.25e15 / 8e12) / 2.
    "01.6": 2.25e15 / 8e12 / 2,
    # H100 exact crossover: B = 1 / (W/C - 1/D - 1/F) with D = 8192, F = 28672.
    "01.7": 1 / (3.35e12 / 9.89e14 - 1 / 8192 - 1 / 28672),
    # B200 at 80% of 2.25e15 FLOP/s; compute-bound (1.68e9 bytes / 8e12 B/s = 0.21 ms is shorter).
    "01.8": 2 * 16384 * 8192 * 28672 / (0.8 * 2.25e15),
    # D split over two H100s: B·D·F / C > 2·B·F / W_nvlink -> D > 2 · 9.89e14 / 4.5e11.
    "01.9": 2 * 9.89e14 / 4.5e11,
    # tile b with t = 8192/b: intensity t·b/(2t+1); b=512 -> 248 < 295 (H100 C/W), b=1024 -> 482 > 295.
    "01.10": 1024,
    # H200, int8 weights over PCIe: 2·B·D·F / C > D·F / W_pcie -> B > 9.89e14 / (2 · 6.4e10).
    "01.11": 9.89e14 / (2 * 6.4e10),
    # --- the book's own problems (ch. 1, Q1-Q5) ---
    # int8 x int8 on a v5e: 2B > C_int8 / W.
    "01.12": 3.94e14 / 8.2e11 / 2,
    # int8 weights, bf16 activations: the weights' D·F bytes are half of bf16's, so B > (C_bf16 / W) / 2.
    "01.13": 1.97e14 / 8.2e11 / 2,
    # exact: 2BDF / C = (2BD + DF + 2BF) / W with D = F = 1024 -> B = (DF / W) / (2DF / C - 2(D + F) / W).
    "01.14": (1024**2 / 8.2e11) / (2 * 1024**2 / 1.97e14 - 2 * 2048 / 8.2e11),
    # int8[B, D] x int8[B, D, F]: 2BDF FLOPs over BD + BDF + BF bytes, B = 512, D = F = 8192.
    "01.15": 2 * 512 * 8192**2 / (512 * 8192 + 512 * 8192**2 + 512 * 8192),
    # H100 SXM: 1.979e15 sparse bf16 halved, over 3.35e12 B/s.
    "01.16": 1.979e15 / 2 / 3.35e12,
}

test_references_match_hand_computations = hand_answer_test("01.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers

# The book's printed answers and the rounding they are printed at (How To Scale Your Model, ch. 1). Q3's answer is
# a plot (our 226 is a recompute), so it has no entry.
BOOK: dict[str, tuple[float, float]] = {"01.12": (240, 0.002), "01.13": (120, 0.004), "01.15": (2, 0.01),
                                        "01.16": (295, 0.002)}


@pytest.mark.parametrize("qid", sorted(BOOK))
def test_book_problems_match_the_published_answers(qid: str) -> None:
    published, rtol = BOOK[qid]
    assert get_problem(qid).reference() == pytest.approx(published, rel=rtol, abs=0)
