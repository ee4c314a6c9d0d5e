"""Problem set 13 (how good are these numbers): the answer key agrees with hand computations from the published
figures (gpt-fast's decode speeds, Llama 3's 430 TFLOP/s per GPU, Korthikanti's 22B run, TensorRT-LLM's
short prompt)."""

from __future__ import annotations

from problemsets import hand_answer_test

# gpt-fast, Llama-2-70B bf16 batch 1 on A100s: 21.32 tokens/s on 2 GPUs, 62.50 on 8; 80 layers, 6.8977e10 params.
T2, T8 = 1 / 21.32, 1 / 62.50
A = (T2 - T8) / (1 / 2 - 1 / 8)  # seconds one GPU spends reading all the weights
a = (T8 - A / 8) / (2 * 80)  # seconds per AllReduce, two per layer

HAND: dict[str, float] = {
    "13.1": a,  # about 35.6 µs
    "13.2": 2 * 68_976_648_192 / A,  # about 1.67e12 B/s
    "13.3": 1 / (A / 4 + 2 * 80 * a),  # about 38.02 tokens/s against the measured 38.01
    "13.4": 430e12 / 989e12,  # Llama 3 405B on 8,192 H100s, against the dense bf16 peak
    "13.5": 6 * 405_853_388_800 * 2**24 / (8192 * 430e12),  # 6 FLOPs per parameter per token
    "13.6": 15 / (32 + 15),  # 16 stages; 8192 / (8 x 16) = 64 replicas share 2048 sequences: 32 microbatches
    "13.7": 18 * 22_373_013_504 / 8,  # 18 bytes per parameter over TP 8
    "13.8": 8,  # the calibrated plan: TP 8 x PP 8 (v = 4) x ZeRO-1 DP 256, full recompute, 43.5 GB per GPU
    "13.9": 164.6e-6 * 32 / 7e-3,  # H100 layer_overhead (chips.toml) x 32 layers over TensorRT-LLM's 7 ms
}

test_problem = hand_answer_test("13.", HAND)
test_no_stale_answers = test_problem.no_stale_answers

