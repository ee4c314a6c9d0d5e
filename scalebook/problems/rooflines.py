"""Problem set 1 — rooflines: the reference solutions of `solutions/01_rooflines.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ..hardware.chips import get_chip
from ..roofline import critical_batch, critical_intensity, crossover_batch, einsum, estimate, matmul, tiled_matmul
from ..units import dtype_bytes
from . import problem

# Shapes the problems share: a LLaMA 3-70B-sized MLP (d_model, d_ff) and the LLaMA 3 vocabulary.
D_LLAMA, F_LLAMA, V_LLAMA = 8192, 28672, 128256

# Square tile edges a tiled-matmul kernel may choose from (powers of two, as kernels use).
TILE_EDGES = (128, 256, 512, 1024, 2048, 4096)


@problem("01.1", title="Two clocks: the no-overlap bound", unit="s")
def no_overlap_time() -> float:
    """A v6e step of 3e12 FLOPs that moves 2.4e9 bytes through HBM, with nothing overlapped."""
    return estimate(3e12, 2.4e9, "v6e").upper


@problem("01.2", title="Intensity of a residual add", unit="FLOPs/byte")
def residual_add_intensity() -> float:
    """z = x + y on bf16[4096, 8192] arrays: one FLOP per element, three arrays through HBM."""
    return einsum("BD,BD->BD", {"B": 4096, "D": D_LLAMA}, "v5e").intensity


@problem("01.3", title="A fused softmax over the vocabulary", unit="s")
def softmax_time() -> float:
    """Softmax of bf16[8192, 128256] logits on an H100: 5 FLOPs per element, read once, written once."""
    elements = 8192 * V_LLAMA
    return estimate(5 * elements, 2 * dtype_bytes("bf16") * elements, "h100").time


@problem("01.4", title="An unfused activation after a matmul", unit="fraction")
def unfused_activation_overhead() -> float:
    """Time of a separate elementwise pass over the [B, F] output, as a fraction of the matmul's time (v5e)."""
    B = 2048
    up = matmul(B, D_LLAMA, F_LLAMA, "v5e")
    activation = einsum("BF->BF", {"B": B, "F": F_LLAMA}, "v5e")
    return activation.time / up.time


@problem("01.5", title="Critical intensity across four chips", unit="FLOPs/byte")
def highest_critical_intensity() -> float:
    """The largest bf16 HBM critical intensity among TPU v6e, TPU7x, B200 and H200."""
    return max(critical_intensity(chip) for chip in ("v6e", "tpu7x", "b200", "h200"))


@problem("01.6", title="Weight-only fp8 on a B200: critical batch", unit="tokens")
def fp8_weight_critical_batch() -> float:
    """Token batch above which a bf16-compute matmul with fp8 weights is compute-bound on a B200."""
    return critical_batch("b200", dtype="bf16", weight_dtype="fp8")


@problem("01.7", title="Exact crossover batch of a LLaMA-70B MLP matmul", unit="tokens")
def llama_crossover_batch() -> float:
    """Batch at which bf16[B, 8192] @ bf16[8192, 28672] turns compute-bound on an H100, exact byte count."""
    return crossover_batch(D_LLAMA, F_LLAMA, "h100")


@problem("01.8", title="A matmul at 80% of peak", unit="s")
def practical_matmul_time() -> float:
    """bf16[16384, 8192] @ bf16[8192, 28672] on a B200 whose kernels reach 80% of peak FLOP/s."""
    return matmul(16384, D_LLAMA, F_LLAMA, "b200", efficiency=0.8).time


@problem("01.9", title="A matmul split over two GPUs: the link roofline", unit="elements of D")
def split_matmul_min_width() -> float:
    """Smallest D for which X[B, D] @ W[D, F], D split over two H100s, is compute-bound over NVLink.

    Each GPU does B·D·F FLOPs and sends its bf16 partial sums [B, F] to the other, so compute-bound
    means B·D·F / C > 2·B·F / W, i.e. D > 2·C / W.
    """
    h100 = get_chip("h100")
    return dtype_bytes("bf16") * critical_intensity(h100, bandwidth=h100.nvlink_bandwidth)


@problem("01.10", title="A tile size that makes a tiled matmul compute-bound", unit="elements per tile edge", rtol=0.0)
def smallest_compute_bound_tile() -> int:
    """Smallest square power-of-two tile for which an 8192^3 bf16 tiled matmul is compute-bound on an H100."""
    n = 8192
    return next(b for b in TILE_EDGES if tiled_matmul(n, n, n, b, b, b, "h100").bound == "compute")


@problem("01.11", title="Weights streamed from the host over PCIe", unit="tokens")
def host_offload_critical_batch() -> float:
    """Batch above which an H200 matmul is compute-bound when int8 weights stream from host DRAM over PCIe."""
    h200 = get_chip("h200")
    return critical_batch(h200, dtype="bf16", weight_dtype="int8", bandwidth=h200.pcie_bandwidth)


# --- the book's own problems (How To Scale Your Model, ch. 1, "A Few Problems to Work") ---------------------


@problem("01.12", title="Book Q1: an all-int8 matmul on a v5e", unit="tokens")
def book_int8_critical_batch() -> float:
    """Batch above which an int8 x int8 matmul (int8 compute) is compute-bound on a v5e, for B << D, F."""
    return critical_batch("v5e", "int8")


@problem("01.13", title="Book Q2: int8 weights, bf16 activations", unit="tokens")
def book_int8_weight_critical_batch() -> float:
    """The same with int8 weights, bf16 activations and bf16 compute."""
    return critical_batch("v5e", weight_dtype="int8")


@problem("01.14", title="Book Q3: the exact crossover for D = F = 1024", unit="tokens")
def book_small_matmul_crossover() -> float:
    """Exact batch at which an int8-weight, bf16-activation [B, 1024] @ [1024, 1024] matmul turns compute-bound."""
    return crossover_batch(1024, 1024, "v5e", weight_dtype="int8", act_dtype="bf16")


@problem("01.15", title="Book Q4: a different matrix for every row", unit="FLOPs/byte")
def book_batched_matrix_intensity() -> float:
    """Intensity of int8[B, D] x int8[B, D, F] -> int8[B, F] with B = 512, D = F = 8192."""
    return einsum("BD,BDF->BF", {"B": 512, "D": 8192, "F": 8192}, "v5e", "int8").intensity


@problem("01.16", title="Book Q5: an H100 from its spec sheet", unit="tokens")
def book_h100_critical_batch() -> float:
    """bf16 critical batch of an H100 SXM (dense bf16 peak, HBM bandwidth)."""
    return critical_batch("h100")
