"""Ch. 7's serving techniques, one formula each: the batch an MoE layer needs to be compute-bound,
weight-stationary sharding's communication, speculative decoding's speed-up, and the prefill-to-decode ratio of a
disaggregated server."""

from __future__ import annotations

import math

from ..hardware.chips import Chip, get_chip
from ..models import TransformerConfig, get_model
from ..roofline import critical_batch
from ..units import checks

__all__ = ["moe_critical_batch", "weight_stationary", "speculative_speedup", "disaggregation_ratio"]


@checks(param_dtype="dtype", compute_dtype="dtype")
def moe_critical_batch(model: TransformerConfig | str, chip: Chip | str, param_dtype: str = "bf16",
                       compute_dtype: str = "bf16") -> float:
    """Return the tokens per step an MoE layer needs to be compute-bound: the dense critical batch x E/k."""
    model = get_model(model)
    return critical_batch(chip, compute_dtype, weight_dtype=param_dtype) * model.E / model.k


@checks(B="size", D="size", F="size", N="count")
def weight_stationary(B: float, D: float, F: float, chip: Chip | str, N: int) -> dict[str, float]:
    """Return the communication seconds of 1-D and 2-D weight-stationary sharding of an MLP on N chips (ch. 7, Q7).

    1-D: 4·B·D / (3·W). 2-D (weights W_in[D_X, F_YZ]): 2·B·D/(X·W) + 4·B·F/(YZ·W) with X·YZ = N, smallest at
    X = sqrt(N·D / (2F)) (sqrt(N/8) for F = 4D), where it is 2·B·sqrt(8·D·F) / (W·sqrt(N)). W is bidirectional.
    Also returns the MLP's arithmetic time 4·B·D·F / (N·C) for comparison.
    """
    chip = get_chip(chip)
    W = chip.ici_bidirectional
    X = math.sqrt(N * D / (2 * F))
    YZ = N / X
    return {"1d": 4 * B * D / (3 * W), "2d": 2 * B * D / (X * W) + 4 * B * F / (YZ * W), "X": X, "YZ": YZ,
            "math": 4 * B * D * F / (N * chip.bf16_flops)}


@checks(acceptance="frac0", draft_tokens="count", draft_cost="nonneg")
def speculative_speedup(acceptance: float, draft_tokens: int, draft_cost: float) -> float:
    """Return the expected speed-up of speculative decoding (Leviathan et al., 2023).

    Each step drafts `draft_tokens` tokens at `draft_cost` (a fraction of a target step each) and verifies
    them in one target step; with per-token acceptance rate a, the step yields (1 - a^(γ+1)) / (1 - a) tokens.
    """
    if acceptance == 1:
        raise ValueError("acceptance=1 drafts forever: the per-token acceptance rate must be below 1")
    tokens = (1 - acceptance ** (draft_tokens + 1)) / (1 - acceptance)
    return tokens / (draft_tokens * draft_cost + 1)


@checks(prefill_seconds="size", step_seconds="size", batch="count", decode_tokens="count")
def disaggregation_ratio(prefill_seconds: float, step_seconds: float, batch: int, decode_tokens: int) -> float:
    """Return prefill servers per decode server so neither waits: each decode server finishes `batch`
    sequences every `step_seconds · decode_tokens` seconds, and each needed one prefill."""
    if min(prefill_seconds, step_seconds, batch, decode_tokens) <= 0:
        raise ValueError("all arguments must be positive")
    return prefill_seconds * batch / (step_seconds * decode_tokens)
