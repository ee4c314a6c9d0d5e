"""Roofline estimates: how long an operation takes on a chip when either FLOPs or bytes bound it.

Two clocks run side by side: T_math = FLOPs / C (C = peak FLOP/s) and T_comms = bytes / W (W = the
bandwidth of whatever the bytes cross: HBM, an ICI link, PCIe ...). With perfect overlap the operation
takes max(T_math, T_comms) (a lower bound); with none, T_math + T_comms (an upper bound, at most 2x).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .estimate import Estimate, Overlap
from .hardware.chips import Chip, get_chip
from .units import LARGEST, check_kind, check_positive, checks, dtype_bytes, fmt_bytes, fmt_rate

__all__ = [
    "Estimate", "Overlap", "estimate", "matmul", "dot", "einsum", "tiled_matmul", "tiled_intensity", "crossover_batch",
    "critical_intensity", "critical_batch", "achievable_flops", "einsum_flops", "matmul_intensity", "attention",
]

# `Estimate` and `Overlap` live in `estimate` (they need no chip) and are re-exported here, where readers meet them.

def _bandwidth(chip: Chip, bandwidth: float | None) -> float:
    W = chip.hbm_bandwidth if bandwidth is None else bandwidth
    if W is None:
        raise ValueError(f"{chip.name} has no HBM bandwidth figure; pass bandwidth= in bytes/s")
    return check_positive("bandwidth", W)


@checks(flops="nonneg", nbytes="nonneg", dtype="dtype", bandwidth="?size", channel="text", assumed_mfu="fraction",
        efficiency="?fraction", label="text")
def estimate(
    flops: float,
    nbytes: float,
    chip: Chip | str,
    dtype: str = "bf16",
    bandwidth: float | None = None,
    channel: str = "HBM",
    assumed_mfu: float = 1.0,
    label: str = "",
    terms: Sequence[tuple[str, str]] = (),
    efficiency: float | None = None,
) -> Estimate:
    """Return the roofline `Estimate` of an operation doing `flops` FLOPs and moving `nbytes` bytes.

    `bandwidth` (bytes/s) defaults to the chip's HBM bandwidth; `assumed_mfu` (0-1] scales the peak
    FLOP/s to what kernels really reach (TPUs ~0.95, H100/B200 ~0.8-0.85). (`efficiency`, its old name, warns:
    `efficiency` is a mode elsewhere, 'ideal' or 'calibrated'.)
    """
    chip = get_chip(chip)
    C = chip.peak_flops(dtype) * _assumed_mfu(assumed_mfu, efficiency)
    W = _bandwidth(chip, bandwidth)
    return Estimate(
        flops=float(flops), bytes=float(nbytes), t_math=flops / C, t_comms=nbytes / W,
        channel=channel, label=label,
        terms=(("C", fmt_rate(C)), (f"W ({channel})", fmt_rate(W, "B/s")), *terms),
    )


def _assumed_mfu(assumed_mfu: float, efficiency: float | None) -> float:
    """The fraction of peak to assume: `assumed_mfu`, or the old keyword `efficiency` (warns until release 0.3)."""
    if efficiency is None:
        return assumed_mfu
    warnings.warn("efficiency=<a fraction> is deprecated and goes in release 0.3: a roofline's fraction of peak is "
                  "assumed_mfu (efficiency is a mode elsewhere: 'ideal' or 'calibrated')", DeprecationWarning,
                  stacklevel=4)
    return efficiency


def _compute_dtype(act_dtype: str, weight_dtype: str) -> str:
    """The dtype the multiply runs in: the wider of the two operands (int8 x bf16 runs in bf16)."""
    return act_dtype if dtype_bytes(act_dtype) >= dtype_bytes(weight_dtype) else weight_dtype


def _matmul_dtypes(dtype: str, weight_dtype: str | None, act_dtype: str | None, out_dtype: str | None,
                   compute_dtype: str | None) -> tuple[str, str, str, str]:
    """Resolve a matmul's (activation, weight, output, compute) dtypes from `dtype` and the overrides."""
    w = weight_dtype or dtype
    a = act_dtype or dtype
    return a, w, out_dtype or a, compute_dtype or _compute_dtype(a, w)


@checks(B="size", D="size", F="size", dtype="dtype", weight_dtype="?dtype", act_dtype="?dtype", out_dtype="?dtype",
        compute_dtype="?dtype", bandwidth="?size", channel="text", assumed_mfu="fraction", efficiency="?fraction")
def matmul(
    B: float,
    D: float,
    F: float,
    chip: Chip | str,
    dtype: str = "bf16",
    *,
    weight_dtype: str | None = None,
    act_dtype: str | None = None,
    out_dtype: str | None = None,
    compute_dtype: str | None = None,
    bandwidth: float | None = None,
    channel: str = "HBM",
    assumed_mfu: float = 1.0,
    efficiency: float | None = None,
) -> Estimate:
    """Return the `Estimate` of X[B, D] @ W[D, F] -> Y[B, F] on one chip.

    FLOPs = 2·B·D·F. Bytes = B·D (read X) + D·F (read W) + B·F (write Y), each times its dtype's size.
    `dtype` sets all three; `weight_dtype`, `act_dtype` (X), `out_dtype` (Y) override one each, e.g.
    int8 weights with bf16 activations. The multiply runs in `compute_dtype` (default: the wider of the
    two inputs). `assumed_mfu` scales the peak FLOP/s (see `estimate`).
    """
    B, D, F = (check_positive(n, v) for n, v in (("B", B), ("D", D), ("F", F)))
    if 2 * B * D * F > LARGEST:
        raise ValueError(f"B={B:g}, D={D:g}, F={F:g} make {2 * B * D * F:.3g} FLOPs, more than the {LARGEST:g} a "
                         "calculator takes")
    a, w, o, c = _matmul_dtypes(dtype, weight_dtype, act_dtype, out_dtype, compute_dtype)
    bx, bw, by = B * D * dtype_bytes(a), D * F * dtype_bytes(w), B * F * dtype_bytes(o)
    terms = (
        ("FLOPs", f"2·B·D·F = 2·{B:g}·{D:g}·{F:g}"),
        ("bytes", f"X {fmt_bytes(bx)} ({a}) + W {fmt_bytes(bw)} ({w}) + Y {fmt_bytes(by)} ({o})"),
    )
    return estimate(
        2 * B * D * F, bx + bw + by, chip, dtype=c, bandwidth=bandwidth, channel=channel,
        assumed_mfu=_assumed_mfu(assumed_mfu, efficiency), label=f"matmul [{B:g},{D:g}]·[{D:g},{F:g}] {c}", terms=terms,
    )


@checks(D="size", F="size", dtype="dtype")
def crossover_batch(D: float, F: float, chip: Chip | str, dtype: str = "bf16", **matmul_kwargs: Any) -> float:
    """Return the exact batch B at which X[B,D] @ W[D,F] turns compute-bound (T_math = T_comms).

    Both clocks of `matmul` are linear in B: T_math = m·B and T_comms = c0 + c1·B (the weights cost c0,
    the activations c1 per token), so B = c0 / (m - c1), with the exact byte count (no B << D
    approximation). `matmul_kwargs` are `matmul`'s dtype and bandwidth options (e.g. weight_dtype="int8").
    Raises `ValueError` when the matmul never becomes compute-bound.
    """
    one, two = (matmul(B, D, F, chip, dtype, **matmul_kwargs) for B in (1, 2))
    m = one.t_math
    c1 = two.t_comms - one.t_comms
    c0 = one.t_comms - c1
    if m <= c1:
        raise ValueError(f"a [B,{D:g}]@[{D:g},{F:g}] matmul never becomes compute-bound on {get_chip(chip).name}: "
                         "even at large B its intensity stays below the critical intensity")
    return c0 / (m - c1)


@checks(B="size", D="size", F="size", dtype="dtype")
def matmul_intensity(B: float, D: float, F: float, dtype: str = "bf16") -> float:
    """Return the arithmetic intensity (FLOPs/byte) of X[B,D] @ W[D,F] with every array in `dtype`."""
    b = dtype_bytes(dtype)
    return 2 * B * D * F / (b * (B * D + D * F + B * F))


@checks(N="size", dtype="dtype")
def dot(N: float, chip: Chip | str, dtype: str = "bf16") -> Estimate:
    """Return the `Estimate` of a dot product of two length-N vectors (2N-1 FLOPs; reads 2N, writes 1)."""
    b = dtype_bytes(dtype)
    return estimate(2 * N - 1, (2 * N + 1) * b, chip, dtype=dtype, label=f"dot of two {dtype}[{N:g}]")


@checks(dtype="dtype", bandwidth="?size")
def critical_intensity(chip: Chip | str, dtype: str = "bf16", bandwidth: float | None = None) -> float:
    """Return the chip's critical intensity C / W in FLOPs per byte (HBM bandwidth unless given)."""
    return get_chip(chip).critical_intensity(dtype, bandwidth)


@checks(dtype="dtype", weight_dtype="?dtype", compute_dtype="?dtype", bandwidth="?size")
def critical_batch(
    chip: Chip | str,
    dtype: str = "bf16",
    weight_dtype: str | None = None,
    compute_dtype: str | None = None,
    bandwidth: float | None = None,
) -> float:
    """Return the token batch B above which X[B,D] @ W[D,F] is compute-bound, for B << D, F.

    Loading the weights dominates the bytes (D·F·w) while FLOPs are 2·B·D·F, so intensity ≈ 2B/w and
    the matmul is compute-bound once B > (C/W)·w/2. bf16 on a v5e: 240; int8 weights with bf16
    compute: 120.
    """
    _, w, _, c = _matmul_dtypes(dtype, weight_dtype, None, None, compute_dtype)
    return critical_intensity(chip, c, bandwidth) * dtype_bytes(w) / 2


@checks(intensity="nonneg", dtype="dtype", bandwidth="?size")
def achievable_flops(
    intensity: float | Any,
    chip: Chip | str,
    dtype: str = "bf16",
    bandwidth: float | None = None,
) -> float | Any:
    """Return the roofline: the FLOP/s reachable at `intensity` (FLOPs/byte), min(C, intensity·W).

    A number gives a float, by the standard library alone; a NumPy array gives an array, element by element.
    """
    chip = get_chip(chip)
    peak, W = chip.peak_flops(dtype), _bandwidth(chip, bandwidth)
    if hasattr(intensity, "__array__"):
        import numpy as np  # the caller handed us an array, so NumPy is already loaded

        out = np.minimum(peak, np.asarray(intensity, dtype=float) * W)
        return float(out) if out.ndim == 0 else out
    return min(peak, float(intensity) * W)


def _product(values: Sequence[float]) -> float:
    """The product of `values` as NumPy's `prod` computes it: exact over integers, in floats once one is a float."""
    if all(isinstance(v, int) for v in values):
        return float(math.prod(values))
    return math.prod(float(v) for v in values)


_EINSUM_RE = re.compile(r"^\s*([A-Za-z]+(?:\s*,\s*[A-Za-z]+)*)\s*->\s*([A-Za-z]*)\s*$")


@checks(spec="text")
def einsum_flops(spec: str, sizes: Mapping[str, float]) -> float:
    """Return the FLOPs of an einsum such as 'BTD,DF->BTF', given the size of every letter.

    The book's counting rule: a contraction costs 2 x the product of every distinct dimension (one
    multiply and one add per term); an einsum that contracts nothing (an elementwise or outer
    product) costs the product alone.
    """
    match = _EINSUM_RE.match(spec)
    if not match:
        raise ValueError(f"spec={spec!r} must look like 'BTD,DF->BTF' (letters, commas, one '->')")
    inputs = [s.strip() for s in match.group(1).split(",")]
    output = match.group(2)
    letters = set("".join(inputs))
    if not isinstance(sizes, Mapping):
        raise ValueError(f"sizes={sizes!r} must map each letter of {spec!r} to its size, e.g. {{'B': 8, 'D': 16}}")
    missing = sorted(letters - set(sizes))
    if missing:
        raise ValueError(f"sizes is missing dimension(s) {missing} used in {spec!r}")
    stray = sorted(set(output) - letters)
    if stray:
        raise ValueError(f"output dimension(s) {stray} of {spec!r} appear in no input")
    total = _product([check_positive(f"sizes[{k!r}]", sizes[k]) for k in sorted(letters)])
    contracted = letters - set(output)
    flops = 2 * total if contracted else total
    if flops > LARGEST:
        raise ValueError(f"sizes={dict(sizes)!r} make {flops:.3g} FLOPs, more than the {LARGEST:g} a calculator takes")
    return flops


@checks(spec="text", dtype="dtype", bandwidth="?size")
def einsum(
    spec: str,
    sizes: Mapping[str, float],
    chip: Chip | str,
    dtype: str = "bf16",
    dtypes: Sequence[str] | None = None,
    bandwidth: float | None = None,
) -> Estimate:
    """Return the `Estimate` of an einsum such as 'BD,BDF->BF': FLOPs by `einsum_flops`, bytes = every
    input read once plus the output written once.

    `dtypes` gives one dtype per operand, inputs then output (default: all `dtype`); the multiply runs
    in the widest input dtype.
    """
    flops = einsum_flops(spec, sizes)
    operands = [s.strip() for s in spec.replace("->", ",").split(",")]
    dtypes = list(check_kind("dtypes", dtypes, "?names") or [dtype] * len(operands))
    for i, d in enumerate(dtypes):
        check_kind(f"dtypes[{i}]", d, "dtype")
    if len(dtypes) != len(operands):
        raise ValueError(f"dtypes must give {len(operands)} dtypes for {spec!r} (inputs then output), got {dtypes}")
    nbytes = sum(_product([sizes[k] for k in op]) * dtype_bytes(d) for op, d in zip(operands, dtypes))
    compute = max(dtypes[:-1], key=dtype_bytes)
    return estimate(flops, nbytes, chip, dtype=compute, bandwidth=bandwidth, label=f"einsum {spec} ({compute})")


@checks(bm="size", bn="size", dtype="dtype")
def tiled_intensity(bm: float, bn: float, dtype: str = "bf16") -> float:
    """Return the FLOPs per byte of a tiled matmul with output tiles bm x bn, for many k-steps.

    Each k-step loads bm·bk + bk·bn elements and does 2·bm·bk·bn FLOPs, so the intensity is
    2·bm·bn / ((bm + bn)·size) — in bf16 (2 bytes) the book's bm·bn/(bm+bn).
    """
    return 2 * bm * bn / ((bm + bn) * dtype_bytes(dtype))


@checks(m="count", k="count", n="count", bm="count", bk="count", bn="count", dtype="dtype")
def tiled_matmul(
    m: int, k: int, n: int, bm: int, bk: int, bn: int, chip: Chip | str, dtype: str = "bf16"
) -> Estimate:
    """Return the `Estimate` of (m,k) @ (k,n) computed in tiles (bm,bk) @ (bk,bn), re-reading inputs per tile.

    With tm = m/bm, tk = k/bk, tn = n/bn: FLOPs = 2·tm·tn·tk·bm·bk·bn and bytes =
    size·tm·tn·(tk·(bm·bk + bk·bn) + bm·bn). Tile sizes must divide the matrix dimensions.
    """
    for dim, tile, name in ((m, bm, "bm"), (k, bk, "bk"), (n, bn, "bn")):
        check_positive(name, tile)
        if check_positive(f"dimension for {name}", dim) % tile:
            raise ValueError(f"{name}={tile} must divide the matrix dimension {dim}")
    tm, tk, tn = m // bm, k // bk, n // bn
    b = dtype_bytes(dtype)
    flops = 2 * tm * tn * tk * bm * bk * bn
    nbytes = b * tm * tn * (tk * (bm * bk + bk * bn) + bm * bn)
    return estimate(flops, nbytes, chip, dtype=dtype, label=f"tiled matmul ({bm},{bk})@({bk},{bn})")


@checks(T="size", S="size", N="count", K="count", H="count", B="size", dtype="dtype")
def attention(T: float, S: float, N: int, K: int, H: int, chip: Chip | str = "v5e", B: float = 1,
                       dtype: str = "bf16") -> Estimate:
    """Return the roofline `Estimate` of the two attention contractions for B sequences of T queries against S
    keys, with a fused (flash) kernel: 4·B·T·S·N·H FLOPs; bytes read Q and write O (B·T·N·H each) and read K and
    V (B·S·K·H each), so the intensity is T·S·G / (T·G + S) with G = N/K (How To Scale Your Model, ch. 4, Q4)."""
    if N % K:
        raise ValueError(f"N={N} query heads must be a multiple of K={K} key/value heads")
    size = dtype_bytes(dtype)
    flops = 4 * B * T * S * N * H
    nbytes = size * (2 * B * T * N * H + 2 * B * S * K * H)
    return estimate(flops, nbytes, chip, dtype=dtype, label=f"attention: T = {T:g} queries, S = {S:g} keys, "
                                                             f"G = {N // K}")
