"""Problem set 9 (profiling): the answer key agrees with hand computations, and the notebook with the key."""

from __future__ import annotations

import pytest
from problemsets import hand_answer_test

from scalebook.problems import get_problem

# Each answer worked by hand from the problem's shapes and the chips' spec numbers (book ch. 9; chips.toml).
HAND: dict[str, float] = {
    # [100, 300] pads to [104, 384] in 8x128 tiles; (2,1) divides each tile: (39936 - 30000) / 39936.
    "09.1": (104 * 384 - 100 * 300) / (104 * 384),
    # one 8x4096 band of tiles: 8 rows stored for 1, 4 bytes each.
    "09.2": 8 * 4096 * 4,
    # 2·B·T·D·F over 4 v5e chips at 1.97e14 bf16 FLOP/s.
    "09.3": 2 * 16 * 2048 * 4096 * 16384 / (4 * 1.97e14),
    # a 2·4·2048·8192-byte shard over 2 x 4.5e10 B/s (bidirectional link).
    "09.4": 2 * 4 * 2048 * 8192 / (2 * 4.5e10),
    # 2·4096·8192² / 1.97e14 s of roofline, over 3.0 ms measured.
    "09.5": 2 * 4096 * 8192 * 8192 / 1.97e14 / 3.0e-3,
    # fp32: x whole plus a quarter of each weight matrix.
    "09.6": 4 * (256 * 512 + 512 * 2048 // 4 + 2048 // 4 * 512),
    # 4096 columns per device x 8 pieces along the second dimension.
    "09.7": 4096 * 8,
    # bf16[8192, 8192] read and written once at 8.2e11 B/s.
    "09.8": 2 * 2 * 8192 * 8192 / 8.2e11,
    # The book's own problems: 2·B·T·D·F over 4 v2 chips at 4.6e13; a 2·8·1024·8192-byte shard at 1.2e11 B/s.
    "09.9": 2 * 32 * 1024 * 8192 * 32768 / (4 * 4.6e13),
    "09.10": 2 * 8 * 1024 * 8192 / 1.2e11,
    "09.11": 16e9 - 7.5e9,
}

test_references_match_hand_computations = hand_answer_test("09.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers

# The book's printed answers and their rounding (How To Scale Your Model, ch. 9, its worked profile).
BOOK: dict[str, tuple[float, float]] = {"09.7": (32768, 0), "09.9": (95.6e-3, 0.001), "09.10": (1.1e-3, 0.02),
                                        "09.11": (8.5e9, 0)}


@pytest.mark.parametrize("qid", sorted(BOOK))
def test_book_problems_match_the_published_answers(qid: str) -> None:
    published, rtol = BOOK[qid]
    assert get_problem(qid).reference() == pytest.approx(published, rel=rtol, abs=0)
