"""Problem set 10 (programming in JAX): the answer key agrees with hand computations, and the notebook with the key."""

from __future__ import annotations

from problemsets import hand_answer_test

# Each answer worked by hand from the problem's shapes, or from the book's ch. 10 timings (311, 244, 224 µs).
HAND: dict[str, float] = {
    "10.1": 16 * 5.5 + 9.5,  # rows 4..7 (mean 5.5), columns 8..11 (mean 9.5)
    "10.2": 32 * 64 * 4,  # [64/2, 256/4] float32
    "10.3": 3 * 512 * 512 * 2,  # 3 steps of a bf16 [1024/2, 2048/4] chunk
    "10.4": 512 * 512 * 2 / 2,
    "10.5": (311 - 244) / (311 - 224),
    "10.6": 8 * 32 * 64 * 4,  # [8 devices, 256/8 slots, 64] float32
    "10.7": 1 / 8,
    "10.8": 1024 / 16,
}

test_references_match_hand_computations = hand_answer_test("10.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers
