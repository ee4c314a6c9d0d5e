"""Problem set 12 (GPUs): the answer key agrees with hand computations, and the notebook with the key."""

from __future__ import annotations

import pytest
from problemsets import hand_answer_test

from scalebook.problems import get_problem

# A100: 6.2e14 int8 op/s, 108 SMs, 1.41 GHz boost, NVLink 3 (12 links x 25 GB/s = 300 GB/s per GPU). H200: 9.89e14,
# 4.8e12 B/s HBM, 132 SMs at 1.98 GHz, 450 GB/s NVLink. H800: 300 GB/s NVLink (the book's figure). B200: 2.25e15,
# 900 GB/s. GB200: 2.5e15, 900 GB/s, 3.6e12 B/s out of each NVL72 rack. DGX nodes: 400 GB/s of NICs each; a leaf
# joins 32 nodes, a spine 4 scalable units of 12.8e12 B/s each.


def _ragged(units: int, per_unit_bytes: float, W: float, k: int = 8) -> float:
    """Top-k dispatch through one level: each unit's tokens go once to each other unit hit, (U-1)(1-(1-1/U)^k)."""
    return per_unit_bytes * (units - 1) * (1 - (1 - 1 / units) ** k) / W


_TOKENS = 4096 * 7168  # fp8 bytes of tokens one GPU dispatches
_V405 = 2 * 16384 * 53248  # bf16[16384, 53248]

HAND: dict[str, float] = {
    # int8 peak / (SMs x 4 tensor cores x boost clock).
    "12.1": 6.2e14 / (108 * 4 * 1.41e9),
    # read two fp32 vectors, write one: 12 N bytes / W_hbm (N FLOPs take only 2**28 / (16896 x 1.98e9) = 8 µs).
    "12.2": 12 * 2**28 / 4.8e12,
    # 2·8192·28672 bytes x (N-1)/N / W_gpu, N = 8 (the 6 x 36 x 25 GB/s of NVSwitches do not bind).
    "12.3": 2 * 8192 * 28672 * 7 / 8 / 300e9,
    # the leaf level binds: 2 x bytes x (32-1)/32 / 400e9 (node: 2 x 7/8 / 450e9; spine: 2 x 3/4 / 12.8e12).
    "12.4": 2 * 14e9 * 31 / 32 / 400e9,
    # SHARP: one pass at each level, bytes / W; the leaf's 400 GB/s binds.
    "12.5": 14e9 / 400e9,
    # leaf level: a node's 8 GPUs' tokens to the other nodes hit among 32, over 400 GB/s.
    "12.6": _ragged(32, 8 * _TOKENS, 400e9),
    # leaf level: a node holds 8 of the 32 gathers, each V/32: (V/4) x (8-1)/8 / 400e9.
    "12.7": _V405 / 4 * 7 / 8 / 400e9,
    # C / W_rack x E / k.
    "12.8": 2.5e15 / 3.6e12 * 256 / 8,
    # F x W_nvlink / C.
    "12.9": 53248 * 900e9 / 2.5e15,
    # C / 400e9 x 8 / (8·4) tokens per GPU, x 2048 GPUs.
    "12.10": 9.89e14 / 400e9 * 8 / 32 * 2048,
    # 2·B·D / (W_node·M) x (M + S - 2).
    "12.11": 2 * 2**19 * 16384 / (400e9 * 64) * (64 + 16 - 2),
    # H100: the leaf (8 nodes) binds; GB200: one NVLink level over 64 GPUs.
    "12.12": _ragged(8, 8 * _TOKENS, 400e9) / _ragged(64, _TOKENS, 900e9),
    # The book's own problems: 132 SMs x 4 subpartitions x 32 lanes; C / W_hbm.
    "12.13": 132 * 4 * 32,
    "12.14": 9.89e14 / 3.35e12,
    # fp16[64,4096] x fp16[4096,8192]: bytes of the three arrays over 8e12 B/s (memory-bound).
    "12.15": 2 * (64 * 4096 + 4096 * 8192 + 64 * 8192) / 8e12,
    "12.16": 80e12 / (2 * 18944),
    "12.17": 12 * 2**30 / 3.35e12,
    "12.18": 2 * 4096 * 65536 * 7 / 8 / 450e9,
    "12.19": 32 * 400e9,
    "12.20": 2 * 1024 * 16384 * 7 / 8 / 450e9,
    # two nodes: NVLink's 7/8 over 450e9 against the network's 1/2 over 400e9; the node binds.
    "12.21": 1e9 * 7 / 8 / 450e9,
    # one send and one receive of each SU's copy through its 12.8e12 B/s (SHARP), ring factor (4-1)/4 · 4/3 = 1.
    "12.22": 2 * 8192 * 32768 / 12.8e12,
    "12.23": 2.25e15 / 400e9,
    # 6 x 69.50e9 FLOPs per token (the preset's 70.55e9 parameters less the 1.05e9 of the input embedding, a lookup
    # without matmul FLOPs) x 15e12 tokens, at 4096 x 990e12 x 0.45 FLOP/s.
    "12.24": 6 * 69.50e9 * 15e12 / (4096 * 990e12 * 0.45),
    "12.25": 384 * 4096 / 768,
    # --- December-2026 chips (chips.toml `read` tables: HGX B300, GB300 NVL72, AMD MI355X) ---
    # fp8 everywhere: 2·128·8192·28672 = 6.0e10 FLOPs at 72 PFLOPS sparse / 8 / 2 = 4.5e15 (13 µs) against
    # 128·8192 + 8192·28672 + 128·28672 bytes at 8 TB/s (30 µs): HBM binds.
    "12.26": (128 * 8192 + 8192 * 28672 + 128 * 28672) / 8e12,
    # one NVLink domain of 72: 2·V·(N-1)/N over each GPU's 18 NVLink 5 links of 50 GB/s one way (1.8 TB/s both ways).
    "12.27": 2 * 1.4e10 * 71 / 72 / (18 * 50e9),
    # (3/4 GB over 3 links of 153 GB/s / 2 each way) against (3/4 GB over 1.8 TB/s / 2): 9e11 / (3 x 76.5e9).
    "12.28": (0.75e9 / (3 * 153e9 / 2)) / (0.75e9 / (1.8e12 / 2)),
}

test_references_match_hand_computations = hand_answer_test("12.", HAND)
test_no_stale_hand_answers = test_references_match_hand_computations.no_stale_answers

# The book's printed answers and their rounding (How To Scale Your Model, ch. 12). 12.22 (Q4.4): 2DF/12.8e12 since
# upstream's 60a6fa6 (July 2026) put the spine at 51.2 TB/s; it printed 2DF/6.4e12 before, twice our count.
BOOK: dict[str, tuple[float, float]] = {
    "12.13": (16896, 0), "12.14": (295, 0.005), "12.15": (8.6e-6, 0.01), "12.16": (2.1e9, 0.01),
    "12.17": (3.84e-3, 0.005), "12.18": (1.04e-3, 0.005), "12.19": (12.8e12, 0), "12.20": (65e-6, 0.01),
    "12.21": (1e9 / 514e9, 0.005), "12.22": (2 * 8192 * 32768 / 12.8e12, 1e-9), "12.23": (5625, 0.001),
    "12.24": (3.5e6, 0.03), "12.25": (2048, 0),
}


@pytest.mark.parametrize("qid", sorted(BOOK))
def test_book_problems_match_the_published_answers(qid: str) -> None:
    published, rtol = BOOK[qid]
    assert get_problem(qid).reference() == pytest.approx(published, rel=rtol, abs=0)
