"""Problem set 2 — TPUs: the reference solutions of `solutions/02_tpus.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ..collectives import all_gather
from ..hardware.chips import get_chip
from ..hardware.topology import TpuMesh
from ..roofline import critical_batch, critical_intensity, crossover_batch, estimate
from ..units import dtype_bytes
from . import problem

# The book's TPU figures that have no field in the chip table (How To Scale Your Model, ch. 2).
VMEM_SPEEDUP = 22  # VMEM feeds the MXU at about 22x the HBM bandwidth
VPU_SUBLANES, VPU_LANES, VPU_ALUS = 8, 128, 4  # a v5 VPU: (8, 128) lanes, 4 independent ALUs per lane

# Host-shaped v6e slices, smallest first (a v6e pod is at most 16x16).
V6E_SLICES = ((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16))


@problem("02.1", title="A Trillium 8x16 slice by the numbers", unit="FLOP/s")
def v6e_slice_flops() -> float:
    """Peak bf16 FLOP/s of a TPU v6e 8x16 slice."""
    return TpuMesh("v6e", X=8, Y=16).total_flops("bf16")


@problem("02.2", title="An Ironwood slice that holds a trillion-parameter training state", unit="chips", rtol=0.0)
def tpu7x_training_state_chips() -> int:
    """Chips in the smallest whole-cube TPU7x 4x4xZ slice whose HBM holds 16 bytes/param for 1e12 params."""
    state = 16 * 1e12
    return next(m.n_chips for m in (TpuMesh("tpu7x", X=4, Y=4, Z=z) for z in range(4, 577, 4))
                if m.total_hbm >= state)


@problem("02.3", title="Weight-streaming floor of an int8 405B model on TPU7x", unit="s")
def tpu7x_weight_streaming_floor() -> float:
    """Time for each chip of a TPU7x 2x2x2 slice to read its share of 405e9 int8 weights from HBM once."""
    mesh = TpuMesh("tpu7x", X=2, Y=2, Z=2)
    per_chip = 405e9 * dtype_bytes("int8") / mesh.n_chips
    return estimate(0, per_chip, mesh.chip).time


@problem("02.4", title="The smallest v6e slice for a 10 ms decode floor", unit="chips", rtol=0.0)
def v6e_slice_for_latency() -> int:
    """Chips in the smallest host-shaped v6e slice that holds 405e9 bf16 weights and streams them in 10 ms."""
    weights = 405e9 * dtype_bytes("bf16")
    for X, Y in V6E_SLICES:
        mesh = TpuMesh("v6e", X=X, Y=Y)
        per_chip = weights / mesh.n_chips
        if per_chip <= mesh.chip.hbm_bytes and estimate(0, per_chip, mesh.chip).time <= 10e-3:
            return mesh.n_chips
    raise AssertionError("no v6e slice is large enough")


@problem("02.5", title="Weights that arrive over DCN", unit="tokens")
def dcn_critical_batch() -> float:
    """Batch above which a v5e bf16 matmul is compute-bound when its bf16 weights stream in over DCN."""
    v5e = get_chip("v5e")
    return critical_batch(v5e, dtype="bf16", bandwidth=v5e.dcn_bandwidth)


@problem("02.6", title="Activations that cross PCIe both ways", unit="elements of D")
def pcie_activation_min_width() -> float:
    """Smallest D for which X[B, D] @ W[D, 4D] on a v5e, X in and Y out over full-duplex PCIe, is compute-bound.

    The weights stay in HBM. Per direction: FLOPs 2·B·D·F against 2·B·F bytes out (the larger
    direction, F = 4D) or 2·B·D bytes in; the outbound one binds: D > C / W_pcie (bf16: 2 bytes, 2 FLOPs).
    """
    v5e = get_chip("v5e")
    return critical_intensity(v5e, bandwidth=v5e.pcie_bandwidth) * dtype_bytes("bf16") / 2


@problem("02.7", title="Corner to corner on a full v5e pod", unit="s")
def v5e_pod_corner_transfer() -> float:
    """Send bf16[4, 2048, 4096] from chip (0, 0) to chip (15, 15) of a v5e 16x16 pod."""
    nbytes = 4 * 2048 * 4096 * dtype_bytes("bf16")
    return TpuMesh("v5e", X=16, Y=16).transfer_time(nbytes, (0, 0), (15, 15)).time


@problem("02.8", title="A small message on a slice without wraparound", unit="ratio")
def small_message_wraparound_ratio() -> float:
    """64 KiB from corner to corner: time on a v5e 8x8 over time on a v5e 16x16."""
    nbytes = 64 * 1024
    small = TpuMesh("v5e", X=8, Y=8).transfer_time(nbytes, (0, 0), (7, 7)).time
    full = TpuMesh("v5e", X=16, Y=16).transfer_time(nbytes, (0, 0), (15, 15)).time
    return small / full


@problem("02.9", title="A quarter of a v5p cube", unit="s")
def v5p_partial_cube_transfer() -> float:
    """Send 1 MiB from chip (0, 0, 0) to chip (1, 1, 3) of a v5p 2x2x4 slice."""
    return TpuMesh("v5p", X=2, Y=2, Z=4).transfer_time(2**20, (0, 0, 0), (1, 1, 3)).time


@problem("02.10", title="The diameter of a v5p 2x4x8 slice", unit="hops", rtol=0.0)
def v5p_slice_diameter() -> int:
    """The largest hop count between two chips of a v5p 2x4x8 slice."""
    return TpuMesh("v5p", X=2, Y=4, Z=8).diameter


@problem("02.11", title="An int8 matmul fed from VMEM on a v5p", unit="tokens")
def v5p_vmem_critical_batch() -> float:
    """Batch above which int8[B, D] @ int8[D, F] on a v5p is compute-bound with its weights held in VMEM."""
    v5p = get_chip("v5p")
    return critical_batch(v5p, dtype="int8", bandwidth=VMEM_SPEEDUP * v5p.hbm_bandwidth)


def _vpu_flops(chip: str) -> float:
    """Vector FLOP/s of one TensorCore: sublanes x lanes x ALUs per lane x clock."""
    return VPU_SUBLANES * VPU_LANES * VPU_ALUS * get_chip(chip).clock_hz


@problem("02.12", title="The vector unit of a v5e", unit="FLOP/s")
def v5e_vpu_flops() -> float:
    """Peak VPU FLOP/s of a v5e chip (one TensorCore, v5-style VPU)."""
    return get_chip("v5e").cores * _vpu_flops("v5e")


@problem("02.13", title="How much arithmetic an elementwise op gets for free", unit="FLOPs per element")
def v5e_elementwise_flop_budget() -> float:
    """FLOPs per element at which a bf16 -> bf16 elementwise op on a v5e turns from HBM-bound to VPU-bound."""
    v5e = get_chip("v5e")
    bytes_per_element = 2 * dtype_bytes("bf16")  # read one bf16, write one bf16
    return v5e.cores * _vpu_flops("v5e") * bytes_per_element / v5e.hbm_bandwidth


# --- the book's own problems (How To Scale Your Model, ch. 2, "Worked Problems" and appendix A) ------------


@problem("02.14", title="Book Q1: a floor on sampling latency", unit="s")
def book_sampling_floor() -> float:
    """Time to stream a 200B-parameter bf16 model's weights once from HBM, split over 32 TPU v4p chips."""
    return estimate(0, 2 * 200e9 / 32, "v4p").time


@problem("02.15", title="Book Q2: TensorCores in a full v5p pod", unit="TensorCores", rtol=0.0)
def book_v5p_pod_cores() -> int:
    """TensorCores of a full 16x20x28 v5p pod (two per chip)."""
    return TpuMesh("v5p", X=16, Y=20, Z=28).cores


@problem("02.16", title="Book Q2: HBM of a full v5p pod", unit="B")
def book_v5p_pod_hbm() -> float:
    """Total HBM bytes of a full 16x20x28 v5p pod."""
    return TpuMesh("v5p", X=16, Y=20, Z=28).total_hbm


@problem("02.17", title="Book Q3: computing straight out of host memory", unit="tokens")
def book_pcie_critical_batch() -> float:
    """Batch above which a bf16 matmul fed over PCIe (1.6e10 B/s) is compute-bound on one v6e, for B << D."""
    return critical_batch("v6e", bandwidth=1.6e10)


@problem("02.18", title="Book Q4 (1): an int8 matmul from HBM", unit="tokens")
def book_hbm_crossover() -> float:
    """Exact batch at which int8[B, 4096] @ int8[4096, 16384] turns compute-bound on a v5e, weights in HBM."""
    return crossover_batch(4096, 16384, "v5e", "int8")


@problem("02.19", title="Book Q4 (2): the same matmul from VMEM", unit="tokens")
def book_vmem_crossover() -> float:
    """The same crossover with VMEM feeding the MXU at 22x the HBM bandwidth."""
    v5e = get_chip("v5e")
    return crossover_batch(4096, 16384, v5e, "int8", bandwidth=VMEM_SPEEDUP * v5e.hbm_bandwidth)


@problem("02.20", title="Book Q5: a point-to-point send over ICI", unit="s")
def book_corner_send() -> float:
    """Time to send bf16[8, 128, 8192] from chip (0, 0) to (3, 3) of a v5e 4x4 (no wraparound)."""
    return TpuMesh("v5e", X=4, Y=4).transfer_time(2 * 8 * 128 * 8192, (0, 0), (3, 3)).time


@problem("02.21", title="Book Q6: the ICI gather into one chip", unit="s")
def book_gather_into_corner() -> float:
    """Time for chip (0, 0) of a v5e 4x4 to receive 15 of 16 shards of an int8 [2^17, 2^17] matrix over its two
    ICI links (one-way each): the slowest stage of the book's hard problem."""
    v5e = get_chip("v5e")
    return estimate(0, (128 * 1024) ** 2 * 15 / 16, v5e, bandwidth=2 * v5e.ici_bandwidth).time


@problem("02.22", title="Book pop quiz: the vector unit of a v5p core", unit="FLOP/s")
def book_v5p_vpu_flops() -> float:
    """Peak VPU FLOP/s of one v5p TensorCore."""
    return _vpu_flops("v5p")


# --- December-2026 chips (issue #31): TPU7x (Ironwood), after the book's own problems ---
# The array of problems 02.24 and 02.25: bf16[8192, 32768], gathered along X of a TPU7x 4x4x4 cube.
IRONWOOD_ARRAY = 2 * 8192 * 32768


@problem("02.23", title="Ironwood's critical intensity in fp8", unit="FLOPs/byte")
def tpu7x_fp8_critical_intensity() -> float:
    """FLOPs per byte of HBM traffic a TPU7x needs to be compute-bound in fp8: 4.61e15 FLOP/s over 7.4e12 B/s."""
    return critical_intensity("tpu7x", "fp8")


@problem("02.24", title="An AllGather along one axis of an Ironwood cube", unit="s")
def tpu7x_cube_all_gather() -> float:
    """AllGather of bf16[8192, 32768] along X of a TPU7x 4x4x4 cube (wraparound: a bidirectional ring of 4)."""
    return all_gather(TpuMesh("tpu7x", X=4, Y=4, Z=4), "X", IRONWOOD_ARRAY).time


@problem("02.25", title="The same AllGather at Google's link figure", unit="s")
def tpu7x_all_gather_at_googles_links() -> float:
    """Problem 02.24 with each ICI link at what Google's 1.2 TB/s bidirectional per chip over 6 ports gives one
    way (1.0e11 B/s) instead of the book's 9e10 (chips.toml records both, flagged)."""
    chip = get_chip("tpu7x")
    google = chip.replace(ici_bandwidth=chip.readings["ici_bandwidth"].value)
    return all_gather(TpuMesh(google, X=4, Y=4, Z=4), "X", IRONWOOD_ARRAY).time
