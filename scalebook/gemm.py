"""GEMM efficiency by shape: the share of a chip's best matmul rate a matmul of a given size reaches.

A chip's calibrated matmul factor (MAMF) is measured at its best, large shape. A smaller output loses to two
effects that NVIDIA's "Matrix Multiplication Background User's Guide" describes:

- tile quantization: the output [M, N] is computed in tiles of tm x tn; a partial tile at an edge costs a whole
  one, so the useful share is M·N / (ceil(M/tm)·tm · ceil(N/tn)·tn);
- wave quantization: a GPU runs one tile per SM at a time, so T tiles on S SMs take ceil(T/S) waves, and the
  last one leaves SMs idle: T / (ceil(T/S)·S).

cuBLAS chooses among several tile shapes (`GPU_TILES`); we take the best for each shape, as its heuristics aim
to. A TPU's MXU pads the output to multiples of its systolic array (`Chip.mxu_size`) and its one or two cores run
the tiles in sequence, so only padding counts there. The contraction dimension K sets neither effect.

A matmul's arithmetic and its memory traffic overlap, but not perfectly: a kernel loads its first tiles before it
can multiply and drains its last results after. `overlap_exponent` reads off DeepGEMM's published sweep of dense
FP8 GEMMs (H800, M = 64 to 4,096) the exponent p by which the two times combine, (t_math^p + t_bytes^p)^(1/p)
(`estimate.combine`): between the roofline's max (p = inf, the bound) and their sum (p = 1).
"""

from __future__ import annotations

import math
import statistics
from functools import cache

from .data import load
from .estimate import combine
from .hardware.chips import Chip, get_chip
from .models import TransformerConfig
from .units import checks, is_a

__all__ = ["GPU_TILES", "OVERLAP_GRID", "quantization", "layer_matmuls", "layer_efficiency", "gemm_sweep_errors",
           "overlap_exponent"]

# The exponents `overlap_exponent` tries: the sum (1) up to near the max, in steps of 0.05.
OVERLAP_GRID = tuple(1 + i / 20 for i in range(61))

# Output tiles (rows x columns) of cuBLAS's Hopper and Ampere kernels, after NVIDIA's matmul performance guide.
GPU_TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))


def _tile_share(M: int, N: int, tm: int, tn: int, sms: int) -> float:
    """Useful share of one tile shape: padding at the edges times the last wave's idle SMs (sms = 0: no waves)."""
    rows, cols = math.ceil(M / tm), math.ceil(N / tn)
    padding = M * N / (rows * tm * cols * tn)
    if not sms:
        return padding
    tiles = rows * cols
    return padding * tiles / (math.ceil(tiles / sms) * sms)


@checks(M="count", N="count")
def quantization(M: int, N: int, chip: Chip | str) -> float:
    """Return the share (0, 1] of `chip`'s best matmul rate an [M, K] x [K, N] matmul keeps after tile and wave
    quantization (best over `GPU_TILES` on a GPU; MXU padding on a TPU; 1 on a chip with neither figure)."""
    chip = get_chip(chip)
    if chip.kind == "tpu" and chip.mxu_size:
        return _tile_share(M, N, chip.mxu_size, chip.mxu_size, 0)
    if chip.kind != "gpu" or not chip.cores:
        return 1.0
    return max(_tile_share(M, N, tm, tn, chip.cores) for tm, tn in GPU_TILES)


@checks(model=is_a(TransformerConfig), tokens="size", tp="count", ep="count", expert_tp="?count")
def layer_matmuls(model: TransformerConfig, tokens: float, tp: int = 1, ep: int = 1,
                  expert_tp: int | None = None) -> tuple[tuple[int, float, float, float], ...]:
    """Return (rows M, output width N, contraction K, how many) of each weight matmul one of `tp` tensor-parallel
    chips runs per layer for `tokens` rows: QKV [D -> (N+2K)·H/tp], the output projection [N·H/tp -> D], the
    MLP's up (and gate) [D -> F/tp] and down [F/tp -> D] projections. An MoE's experts (width `F_expert`, split
    over `expert_tp` chips, default `tp`) sit E/ep to a chip, each seeing the k/E share of the tokens of the
    `ep` x `expert_tp` chips that split them (sequence parallelism gives each of the tp chips 1/tp)."""
    M = max(1, round(tokens))
    mlp = 2 if model.gated else 1
    etp = tp if expert_tp is None else expert_tp
    F = (model.F_expert or model.F) if model.is_moe else model.F
    expert_rows = max(1, round(tokens * ep * etp / tp * model.k / model.E)) if model.is_moe else M
    here = model.E / ep if model.is_moe else 1  # expert MLPs on this chip
    return ((M, (model.N + 2 * model.K) * model.H / tp, model.D, 1), (M, model.D, model.N * model.H / tp, 1),
            (expert_rows, mlp * F / etp, model.D, here), (expert_rows, model.D, F / etp, here))


@checks(model=is_a(TransformerConfig), tokens="size", tp="count", ep="count", expert_tp="?count")
def layer_efficiency(model: TransformerConfig, tokens: float, chip: Chip | str, tp: int = 1, ep: int = 1,
                     expert_tp: int | None = None) -> float:
    """Return the FLOP-weighted share of the best matmul rate a layer's weight matmuls (`layer_matmuls`) keep
    for `tokens` rows on one of `tp` tensor-parallel chips."""
    shapes = layer_matmuls(model, tokens, tp, ep, expert_tp)
    flops = [rows * n * k * count for rows, n, k, count in shapes]
    shares = [quantization(rows, max(1, round(n)), chip) for rows, n, _, _ in shapes]
    return sum(flops) / sum(f / q for f, q in zip(flops, shares))


@checks(overlap="?exponent")
def gemm_sweep_errors(overlap: float | None) -> list[tuple[int, float]]:
    """(M, predicted / measured time - 1) for each dense GEMM of DeepGEMM's H800 sweep (`data/gemm_sweeps.toml`,
    its `normal` rows), priced at the H800's calibrated FP8 matmul and HBM fractions with `quantization`: the
    FLOP time (2·M·N·K) and the byte time (M·K + N·K FP8 inputs, 2·M·N BF16 output) combined by `combine` with
    exponent `overlap` (None: their max)."""
    chip = get_chip("h800")
    eff = chip.efficiency("calibrated")
    errors = []
    for row in load("data/gemm_sweeps.toml")["normal"]:
        M, N, K = row["M"], row["N"], row["K"]
        t_math = 2 * M * N * K / (chip.peak_flops("fp8") * eff.matmul_fp8 * quantization(M, N, chip))
        t_bytes = (M * K + N * K + 2 * M * N) / (chip.hbm_bandwidth * eff.hbm)
        errors.append((M, combine(t_math, t_bytes, overlap) / (2 * M * N * K / (row["tflops"] * 1e12)) - 1))
    return errors


@cache
def overlap_exponent() -> float:
    """The exponent p of `OVERLAP_GRID` whose `gemm_sweep_errors` have the smallest median |error|: how a Hopper
    GPU's matmul arithmetic and memory times combine, read off a published sweep outside the validation suite."""
    return min(OVERLAP_GRID, key=lambda p: statistics.median(abs(e) for _, e in gemm_sweep_errors(p)))
