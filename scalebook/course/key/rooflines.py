"""Problem set 1 — rooflines: the reference solutions of `solutions/01_rooflines.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ...hardware.chips import get_chip
from ...roofline import critical_batch, critical_intensity, crossover_batch, einsum, estimate, matmul, tiled_matmul
from ...units import dtype_bytes
from ..inputs import vary
from . import solution

# Shapes the problems share: a LLaMA 3-70B-sized MLP (d_model, d_ff) and the LLaMA 3 vocabulary.
D_LLAMA, F_LLAMA, V_LLAMA = 8192, 28672, 128256

# Square tile edges a tiled-matmul kernel may choose from (powers of two, as kernels use).
TILE_EDGES = (128, 256, 512, 1024, 2048, 4096)


@solution("01.1", title="Two clocks: the no-overlap bound", unit="s", hints=(
    "Two clocks: the math time (FLOPs over peak FLOP/s) and the HBM time (bytes over bandwidth). With no overlap, "
    "one waits for the other.",
    "Without overlap the two clocks add instead of hiding one behind the other: ⟦t = flops / C + nbytes / W⟧, with "
    "the v6e's bf16 peak ⟦C = sb.get_chip('v6e').peak_flops('bf16')⟧ and its HBM bandwidth ⟦W = "
    "sb.get_chip('v6e').hbm_bandwidth⟧.",
))
def no_overlap_time(flops: float = vary(3e12, 1e12, 1e13), nbytes: float = vary(2.4e9, 5e8, 8e9)) -> float:
    """A v6e step of `flops` FLOPs that moves `nbytes` bytes through HBM, with nothing overlapped."""
    return estimate(flops, nbytes, "v6e").upper


@solution("01.2", title="Intensity of a residual add", unit="FLOPs/byte", hints=(
    "Intensity is FLOPs over bytes moved; an elementwise add does one FLOP per element and moves every array once, "
    "whatever the shape.",
    "Per element: one FLOP against three arrays moved (two read, one written) of w bytes each, so the shape "
    "cancels: ⟦I = 1 / (3 * w)⟧ with ⟦w = sb.units.dtype_bytes(dtype)⟧.",
))
def residual_add_intensity(B: int = vary(4096, 512, 16384, step=512), D: int = vary(D_LLAMA, 1024, 16384, step=1024),
                           dtype: str = vary("bf16", choices=("bf16", "int8"))) -> float:
    """z = x + y on [B, D] arrays of `dtype`: one FLOP per element, three arrays through HBM."""
    return einsum("BD,BD->BD", {"B": B, "D": D}, "v5e", dtype).intensity


@solution("01.3", title="A fused softmax over the vocabulary", unit="s", hints=(
    "A softmax does a handful of FLOPs per logit but must read and write every logit: far below an H100's critical "
    "intensity, so only the memory clock matters.",
    "Take the longer clock, which is the memory one: ⟦t = max(flops / C, nbytes / W)⟧ with ⟦flops = 5 * T * V⟧ "
    "(exponent, sum, divide: a few FLOPs per logit), ⟦nbytes = 2 * 2 * T * V⟧ (each bf16 logit read once and "
    "written once), ⟦C = sb.get_chip('h100').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('h100').hbm_bandwidth⟧.",
))
def softmax_time(T: int = vary(8192, 1024, 32768, step=1024), V: int = vary(V_LLAMA, 32000, 262144, step=256)) -> float:
    """Softmax of bf16[T, V] logits on an H100: 5 FLOPs per element, read once, written once."""
    elements = T * V
    return estimate(5 * elements, 2 * dtype_bytes("bf16") * elements, "h100").time


@solution("01.4", title="An unfused activation after a matmul", unit="fraction", hints=(
    "The matmul is compute-bound at this batch; the separate activation pass is memory-bound (read and write the "
    "[B, F] output).",
    "Each is a roofline on the v5e; the ratio is ⟦r = t_act / t_mm⟧ with the activation pass reading and writing "
    "the bf16 [B, F] output, ⟦t_act = 2 * 2 * B * F / W⟧, and the matmul's longer clock ⟦t_mm = max(2 * B * D * F / "
    "C, 2 * (B * D + D * F + B * F) / W)⟧, where ⟦F = 28672⟧, ⟦C = sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip('v5e').hbm_bandwidth⟧. At large B the B cancels: the ratio tends to twice the critical intensity "
    "over D.",
))
def unfused_activation_overhead(B: int = vary(2048, 1024, 8192, step=256),
                                D: int = vary(D_LLAMA, 2048, 16384, step=1024)) -> float:
    """Time of a separate elementwise pass over the [B, F] output, as a fraction of the matmul's time (v5e)."""
    up = matmul(B, D, F_LLAMA, "v5e")
    activation = einsum("BF->BF", {"B": B, "F": F_LLAMA}, "v5e")
    return activation.time / up.time


@solution("01.5", title="Critical intensity across four chips", unit="FLOPs/byte", hints=(
    "Critical intensity is peak FLOP/s over HBM bandwidth (C / W); compute it for each chip and keep the largest.",
    "For each chip divide its bf16 peak by its HBM bandwidth and keep the largest: ⟦I = "
    "max(sb.get_chip(c).peak_flops('bf16') / sb.get_chip(c).hbm_bandwidth for c in (first, second, third, "
    "fourth))⟧.",
))
def highest_critical_intensity(
        first: str = vary("v6e", choices=("v6e", "v5e", "v5p", "v4", "v3", "v2")),
        second: str = vary("tpu7x", choices=("tpu7x", "h100", "mi300x", "a100", "v100", "gb200", "mi325x")),
        third: str = vary("b200", choices=("b200", "h800", "mi355x", "b300")),
        fourth: str = vary("h200", choices=("h200", "gb300", "v5p", "v4"))) -> float:
    """The largest bf16 HBM critical intensity among the four chips named."""
    return max(critical_intensity(chip) for chip in (first, second, third, fourth))


@solution("01.6", title="Weight-only fp8 on a B200: critical batch", unit="tokens", hints=(
    "For B much smaller than D and F, the weights' bytes dominate the memory clock; compute uses bf16 peak.",
    "The math clock (two FLOPs per weight per token, at the bf16 peak) passes the weights' clock (w bytes per "
    "weight, at HBM bandwidth) at ⟦B = C / W * w / 2⟧, with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧, ⟦W = "
    "sb.get_chip(chip).hbm_bandwidth⟧ and ⟦w = sb.units.dtype_bytes('fp8')⟧.",
))
def fp8_weight_critical_batch(
        chip: str = vary("b200", choices=("b200", "h100", "h200", "a100", "gb200", "mi300x", "mi325x", "mi355x")),
) -> float:
    """Token batch above which a bf16-compute matmul with fp8 weights is compute-bound on `chip`."""
    return critical_batch(chip, dtype="bf16", weight_dtype="fp8")


@solution("01.7", title="Exact crossover batch of a LLaMA-70B MLP matmul", unit="tokens", hints=(
    "Count every byte, not just the weights: the input, the weights and the output, all bf16, against the matmul's "
    "FLOPs; set the two clocks equal and solve for B.",
    "Both clocks are linear in B; equal, they give ⟦B = 1 / (W / C - 1 / D - 1 / F)⟧ with the H100's ⟦C = "
    "sb.get_chip('h100').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('h100').hbm_bandwidth⟧.",
))
def llama_crossover_batch(D: int = vary(D_LLAMA, 4096, 16384, step=512),
                          F: int = vary(F_LLAMA, 14336, 57344, step=1024)) -> float:
    """Batch at which bf16[B, D] @ bf16[D, F] turns compute-bound on an H100, exact byte count."""
    return crossover_batch(D, F, "h100")


@solution("01.8", title="A matmul at 80% of peak", unit="s", hints=(
    "At this size the matmul is compute-bound; real kernels reach only a fraction of peak, so divide by the "
    "achieved FLOP/s.",
    "The longer clock wins, and here it is the math at the achieved rate: ⟦t = max(2 * B * D * F / (efficiency * "
    "C), 2 * (B * D + D * F + B * F) / W)⟧ with ⟦D = 8192⟧, ⟦F = 28672⟧, ⟦C = "
    "sb.get_chip('b200').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('b200').hbm_bandwidth⟧.",
))
def practical_matmul_time(B: int = vary(16384, 4096, 65536, step=1024),
                          efficiency: float = vary(0.8, 0.5, 0.95)) -> float:
    """bf16[B, 8192] @ bf16[8192, 28672] on a B200 whose kernels reach `efficiency` of peak FLOP/s."""
    return matmul(B, D_LLAMA, F_LLAMA, "b200", assumed_mfu=efficiency).time


@solution("01.9", title="A matmul split over two GPUs: the link roofline", unit="elements of D", hints=(
    "The link is the memory here: each GPU computes on its half of D and must send its partial sums; compare the "
    "math clock with the NVLink clock.",
    "Each GPU does B·D·F FLOPs on its half and sends its bf16 partial sums [B, F]; the math outlasts the send once "
    "D exceeds ⟦D_min = 2 * C / W⟧, with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip(chip).nvlink_bandwidth⟧.",
))
def split_matmul_min_width(
        chip: str = vary("h100", choices=("h100", "h200", "b200", "a100", "v100", "gb200", "h800"))) -> float:
    """Smallest D for which X[B, D] @ W[D, F], D split over two H100s, is compute-bound over NVLink.

    Each GPU does B·D·F FLOPs and sends its bf16 partial sums [B, F] to the other, so compute-bound
    means B·D·F / C > 2·B·F / W, i.e. D > 2·C / W.
    """
    gpu = get_chip(chip)
    return dtype_bytes("bf16") * critical_intensity(gpu, bandwidth=gpu.nvlink_bandwidth)


@solution("01.10", title="A tile size that makes a tiled matmul compute-bound", unit="elements per tile edge",
         rtol=0.0, hints=(
    "Each tile of the output re-reads rows of A and columns of B from HBM; bigger tiles mean fewer re-reads, so "
    "intensity grows with the tile edge b.",
    "With square tiles of edge b on an n-wide matmul, a tile row is t = n / b tiles long and the intensity is t·b / "
    "(twice t plus one); take the first power of two that beats the chip's C / W: ⟦b = next(b for b in (2 ** i for "
    "i in range(7, 13)) if n / (2 * n / b + 1) >= C / W)⟧ with ⟦n = 8192⟧, ⟦C = "
    "sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = sb.get_chip(chip).hbm_bandwidth⟧.",
))
def smallest_compute_bound_tile(
        chip: str = vary("h100", choices=("h100", "a100", "h200", "b200", "v5e", "v6e", "v5p", "mi300x"))) -> int:
    """Smallest square power-of-two tile for which an 8192^3 bf16 tiled matmul is compute-bound on `chip`."""
    n = 8192
    return next(b for b in TILE_EDGES if tiled_matmul(n, n, n, b, b, b, chip).bound == "compute")


@solution("01.11", title="Weights streamed from the host over PCIe", unit="tokens", hints=(
    "The weights now cross PCIe, not HBM: PCIe bandwidth is the W of this roofline.",
    "The critical batch with PCIe as the memory: ⟦B = C / W * w / 2⟧ with the H200's ⟦C = "
    "sb.get_chip('h200').peak_flops('bf16')⟧, ⟦W = sb.get_chip('h200').pcie_bandwidth⟧ and ⟦w = "
    "sb.units.dtype_bytes(weight_dtype)⟧ bytes per weight.",
))
def host_offload_critical_batch(weight_dtype: str = vary("int8", choices=("int8", "fp8", "bf16"))) -> float:
    """Batch above which an H200 matmul is compute-bound when weights stream from host DRAM over PCIe."""
    h200 = get_chip("h200")
    return critical_batch(h200, dtype="bf16", weight_dtype=weight_dtype, bandwidth=h200.pcie_bandwidth)


# --- the book's own problems (How To Scale Your Model, ch. 1, "A Few Problems to Work") ---------------------


@solution("01.12", title="Book Q1: an all-int8 matmul on a v5e", unit="tokens", hints=(
    "With int8 everything both the FLOP/s (the int8 peak) and the bytes per value change.",
    "Two int8 operations per weight per token against one byte per weight: ⟦B = C / W * w / 2⟧ with ⟦C = "
    "sb.get_chip(chip).peak_flops('int8')⟧, ⟦W = sb.get_chip(chip).hbm_bandwidth⟧ and ⟦w = "
    "sb.units.dtype_bytes('int8')⟧.",
))
def book_int8_critical_batch(
        chip: str = vary("v5e", choices=("v5e", "v5p", "v6e", "v4", "v3", "tpu7x", "h100", "a100"))) -> float:
    """Batch above which an int8 x int8 matmul (int8 compute) is compute-bound on `chip`, for B << D, F."""
    return critical_batch(chip, "int8")


@solution("01.13", title="Book Q2: int8 weights, bf16 activations", unit="tokens", hints=(
    "Compute stays bf16 (the bf16 peak), but the weights that dominate the bytes are int8.",
    "Two bf16 FLOPs per weight per token against one byte per weight: ⟦B = C / W * w / 2⟧ with ⟦C = "
    "sb.get_chip(chip).peak_flops('bf16')⟧, ⟦W = sb.get_chip(chip).hbm_bandwidth⟧ and ⟦w = "
    "sb.units.dtype_bytes('int8')⟧.",
))
def book_int8_weight_critical_batch(
        chip: str = vary("v5e", choices=("v5e", "v5p", "v6e", "v4", "v3", "tpu7x", "h100", "a100"))) -> float:
    """The same with int8 weights, bf16 activations and bf16 compute."""
    return critical_batch(chip, weight_dtype="int8")


@solution("01.14", title="Book Q3: the exact crossover for D = F = 1024", unit="tokens", hints=(
    "At small D and F the activations' bytes (bf16 in and out) are no longer negligible against the int8 weights.",
    "Set the clocks equal with every byte counted (bf16 input and output at a bytes per value, int8 weights at w) "
    "and solve the linear equation for B: ⟦B = w * D * F / W / (2 * D * F / C - a * (D + F) / W)⟧ with ⟦a = "
    "sb.units.dtype_bytes('bf16')⟧, ⟦w = sb.units.dtype_bytes('int8')⟧, ⟦C = sb.get_chip('v5e').peak_flops('bf16')⟧ "
    "and ⟦W = sb.get_chip('v5e').hbm_bandwidth⟧.",
))
def book_small_matmul_crossover(D: int = vary(1024, 512, 4096, step=256),
                                F: int = vary(1024, 512, 4096, step=256)) -> float:
    """Exact batch at which an int8-weight, bf16-activation [B, D] @ [D, F] matmul turns compute-bound."""
    return crossover_batch(D, F, "v5e", weight_dtype="int8", act_dtype="bf16")


@solution("01.15", title="Book Q4: a different matrix for every row", unit="FLOPs/byte", hints=(
    "Every row has its own matrix, so nothing is reused: the weight bytes grow with B, like the FLOPs.",
    "FLOPs over bytes: ⟦I = flops / nbytes⟧, where each multiply-add counts two FLOPs, ⟦flops = 2 * B * D * F⟧, and "
    "each int8 value is one byte, ⟦nbytes = B * D + B * D * F + B * F⟧; the weights' B·D·F term dominates the "
    "bytes, so the intensity hardly moves with the shape.",
))
def book_batched_matrix_intensity(B: int = vary(512, 64, 4096, step=64), D: int = vary(8192, 1024, 16384, step=1024),
                                  F: int = vary(8192, 1024, 16384, step=1024)) -> float:
    """Intensity of int8[B, D] x int8[B, D, F] -> int8[B, F]."""
    return einsum("BD,BDF->BF", {"B": B, "D": D, "F": F}, "v5e", "int8").intensity


@solution("01.16", title="Book Q5: an H100 from its spec sheet", unit="tokens", hints=(
    "Spec sheets print bf16 FLOP/s with sparsity; a dense matmul gets half of that.",
    "In bf16 two FLOPs per weight per token meet two bytes per weight, so the critical batch is the critical "
    "intensity: ⟦B = C / W⟧ with the dense ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip(chip).hbm_bandwidth⟧.",
))
def book_h100_critical_batch(
        chip: str = vary("h100", choices=("h100", "h200", "a100", "b200", "gb200", "mi300x", "mi325x", "mi355x")),
) -> float:
    """bf16 critical batch of `chip` (dense bf16 peak, HBM bandwidth)."""
    return critical_batch(chip)
