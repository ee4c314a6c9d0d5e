"""The mixture-of-experts mechanisms of a training step: routing, token permutation, the busiest expert group,
capacity padding and the small grouped GEMMs of many experts.

`predict` adds what `moe_terms` returns to `Prediction.breakdown`, each a named term:

- 'routing': the router's [tokens, E] scores through HBM (score function, top-k, auxiliary loss, and back);
- 'permute': tokens copied into expert order and back (`PERMUTE_PASSES`);
- 'expert imbalance': the experts' FLOPs the step waits for beyond the mean, because the busiest expert group
  sets the pace (`busiest_load`: `expert_imbalance`, by default the spread of uniformly random routing); the
  AllToAlls wait for the busiest chip too (`terms.ep_term`'s `busiest`);
- 'capacity padding': with a capacity factor c, every expert runs c times its mean rows (padded; extra tokens
  dropped), in place of the imbalance;
- 'grouped gemm': what the experts' matmuls lose to few rows per expert (`grouped_gemm_share`).

The router's matmul is among the model's FLOPs ('compute'); the AllToAll is `terms.ep_term`.
"""

from __future__ import annotations

import math
import statistics
from functools import cache

from ..data import load
from ..hardware.chips import Chip, get_chip
from ..units import check_number, checks
from .terms import StepContext

__all__ = ["load_factor", "ROUTER_BYTES", "PERMUTE_PASSES", "expert_rows", "random_imbalance", "busiest_load",
           "half_rate_rows", "grouped_gemm_share", "expert_seconds", "moe_terms"]

# HBM bytes per router score (fp32, Megatron-Core's moe_router_dtype for DeepSeek-V3) and token, read off
# Megatron-Core's megatron/core/transformer/moe/router.py (TopKRouter.forward -> routing): the gating matmul
# writes the scores (4), the score function (softmax or sigmoid) reads and writes them (8), top-k reads them (4),
# the load-balancing loss (or the loss-free bias update) reads the probabilities (4); the backward writes the
# scattered gradient of the top-k probabilities (4), runs the score function backwards (read 8, write 4) and
# the auxiliary loss's gradient (read 4).
ROUTER_BYTES = 4 + 8 + 4 + 4 + 4 + 12 + 4

# Passes of a token's [D] bf16 vector through HBM per MoE layer, one way (dispatch or combine), read off
# Megatron-Core's token dispatcher (moe_utils.permute / unpermute and sort_chunks_by_idxs): permute reads the
# token once and writes its k copies; with expert parallelism and several experts per chip, the received copies
# are sorted by local expert (read and write each). Combine mirrors dispatch, the backward repeats both.
PERMUTE_PASSES = {"read": 1, "copies": 1, "sorted copies": 2}


def load_factor(name: str, value: object) -> float | None:
    """A `checks` kind for a load over the mean (`expert_imbalance`, `capacity_factor`): None, or a number >= 1."""
    if value is None:
        return None
    return check_number(name, value, low=1.0, high=1e3, what="None or a number >= 1 (a load over the mean) and <= 1000")


def expert_rows(s: StepContext) -> float:
    """Mean rows (tokens) each expert's matmul sees per microbatch: the tokens of the `ep` x expert-TP chips that
    route to this chip's experts, k of E experts each (sequence parallelism splits a stage's tokens over tp)."""
    lay, model = s.layout, s.model
    return s.mb / lay.cp * lay.ep * lay.expert_tp / lay.tp * model.k / model.E


@checks(rows_per_chip="nonneg", ep="count")
def random_imbalance(rows_per_chip: float, ep: int) -> float:
    """The busiest of `ep` expert groups' load over the mean when routing is uniformly random (what a perfect
    load-balancing loss reaches): each group's load is near-Poisson with mean `rows_per_chip` copies, and the
    largest of ep such loads sits about sqrt(2 ln ep) standard deviations above the mean (the extreme value of
    ep normal draws), at most ep (every copy on one group, the most a few rows can pile up). 1 with one group or
    no rows."""
    if ep == 1 or rows_per_chip <= 0:
        return 1.0
    return min(float(ep), 1 + math.sqrt(2 * math.log(ep) / max(rows_per_chip, 1e-300)))


def busiest_load(s: StepContext) -> float:
    """The busiest expert group's load over the mean, which the step's expert matmuls and AllToAlls wait for:
    `capacity_factor` (every expert padded to it), else `expert_imbalance`, else uniformly random routing's
    (`random_imbalance`); 1 for a dense model."""
    model, lay = s.model, s.layout
    if not model.is_moe:
        return 1.0
    return s.capacity_factor or s.expert_imbalance or random_imbalance(expert_rows(s) * model.E / lay.ep, lay.ep)


@cache
def _grouped_gemm_benchmark() -> tuple[float, float]:
    """(half-rate rows, bf16 FLOPs per HBM byte of the chip measured) of the grouped-GEMM benchmark's table."""
    data = load("data/gemm_sweeps.toml")
    large = {(r["N"], r["K"]): r["tflops"] for r in data["contiguous"]}
    rows = [r["M"] * (large[r["N"], r["K"]] / r["tflops"] - 1) for r in data["masked"]]
    chip = data["chip"]
    return statistics.median(rows), chip["bf16_flops"] / chip["hbm_bandwidth"]


def half_rate_rows(chip: Chip | str) -> float:
    """Rows per expert at which a grouped GEMM runs at half its large-shape rate on `chip`: read off DeepGEMM's
    grouped-GEMM table on H800 (`data/gemm_sweeps.toml`: the median over its masked rows of M·(r_large/r - 1),
    about 101 rows), scaled by the chip's FLOPs per HBM byte against H800's (a weight read per row of an expert
    costs what it costs there: the ridge point moves with the ratio)."""
    rows, ridge = _grouped_gemm_benchmark()
    chip = get_chip(chip)
    if not chip.hbm_bandwidth or not chip.bf16_flops:
        return rows
    return rows * chip.bf16_flops / chip.hbm_bandwidth / ridge


@checks(rows="nonneg")
def grouped_gemm_share(rows: float, chip: Chip | str) -> float:
    """Share (0, 1] of the large-shape matmul rate an expert's grouped GEMM keeps with `rows` rows per expert:
    1 / (1 + m0/rows), m0 = `half_rate_rows` (each expert streams its weights from HBM for few rows)."""
    return 1 / (1 + half_rate_rows(chip) / max(rows, 1.0))


def expert_seconds(s: StepContext, C: float) -> float:
    """Seconds of the routed experts' FLOPs on one chip over the step at rate C (forward and backward, and the
    forward again under full recompute), at the mean load."""
    model = s.model
    routed = model.moe_layers * model.k * model.expert_params
    passes = 6 + (2 if s.recompute == "full" else 0)
    return passes * routed * s.global_batch_tokens / s.n_chips / C


def moe_terms(s: StepContext, C: float, W: float) -> dict[str, float]:
    """The MoE mechanisms' named seconds (module docstring) for one chip over the step, with matmuls at C FLOP/s
    and HBM at W bytes/s; empty for a dense model."""
    model, lay = s.model, s.layout
    if not model.is_moe:
        return {}
    tokens = s.global_batch_tokens / s.replicas / (lay.tp if s.sp else 1)  # routed by this chip each step
    layers = model.moe_layers / lay.pp
    per_token = 2 * model.D * (PERMUTE_PASSES["read"] + model.k * PERMUTE_PASSES["copies"]
                               + (model.k * PERMUTE_PASSES["sorted copies"] if 1 < lay.ep < model.E else 0))
    rows = expert_rows(s)
    experts = expert_seconds(s, C)
    busiest = busiest_load(s)
    return {
        "routing": ROUTER_BYTES * model.E * tokens * layers / W,
        "permute": 4 * per_token * tokens * layers / W,
        "capacity padding" if s.capacity_factor else "expert imbalance": experts * (busiest - 1),
        "grouped gemm": experts * (1 / grouped_gemm_share(rows, s.chip) - 1),
    }
