"""Problem set 3 — sharded matrices: the reference solutions of `solutions/03_sharding.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ..collectives import all_gather, all_reduce, all_to_all
from ..hardware.chips import get_chip
from ..hardware.topology import TpuMesh
from ..sharding import bytes_per_device, sharded_matmul, total_bytes
from ..units import dtype_bytes
from . import problem

# Shapes the problems share: a LLaMA 3-70B-sized MLP (d_model, d_ff), the LLaMA 3 vocabulary, and a
# wider MLP with F = 4D.
D_LLAMA, F_LLAMA, V_LLAMA = 8192, 28672, 128256
F_WIDE = 4 * D_LLAMA

# A data-parallel-style matmul with the weight's contracting dimension split over X (problems 9 and 12).
DP_MATMUL = "X[B, D] @ W[D_X, F] -> Y[B, F]"


@problem("03.1", title="The shard of an optimizer moment", unit="B")
def moment_shard_bytes() -> float:
    """Bytes per chip of an fp32 Adam moment M[F_XY, D] (F = 28672, D = 8192) on a v5p 4x4x4."""
    mesh = TpuMesh("v5p", X=4, Y=4, Z=4)
    return bytes_per_device("M[F_XY, D]", mesh, {"F": F_LLAMA, "D": D_LLAMA}, dtype="fp32")


@problem("03.2", title="An embedding table's footprint across a slice", unit="B")
def embedding_total_bytes() -> float:
    """Bytes held across a v6e 8x16 slice by a bf16 embedding E[V_Y, D] (V = 128256, D = 8192)."""
    mesh = TpuMesh("v6e", X=8, Y=16)
    return total_bytes("E[V_Y, D]", mesh, {"V": V_LLAMA, "D": D_LLAMA}, dtype="bf16")


@problem("03.3", title="AllGather of a weight over a wrapped axis", unit="s")
def weight_gather_time() -> float:
    """AllGather_Y of a bf16 W[D, F_Y] (D = 8192, F = 32768) on a v6e 16x16 pod."""
    mesh = TpuMesh("v6e", X=16, Y=16)
    return all_gather(mesh, "Y", D_LLAMA * F_WIDE * dtype_bytes("bf16")).time


@problem("03.4", title="Where latency stops mattering", unit="B")
def latency_bandwidth_threshold() -> float:
    """Smallest array V for which an AllGather over a 16-chip wrapped v6e axis is bandwidth-bound.

    The latency term (8 hops x 1 µs) does not depend on V, the bandwidth term V / W_bidi does; they meet
    at V = t_latency · W_bidi.
    """
    mesh = TpuMesh("v6e", X=16, Y=16)
    small = all_gather(mesh, "X", 256 * 128 * dtype_bytes("bf16"))
    return small.t_latency * mesh.chip.ici_bidirectional


@problem("03.5", title="Gathering an FSDP weight over three axes", unit="s")
def three_axis_gather_time() -> float:
    """AllGather_XYZ of a bf16 W[D_XYZ, F] (D = 8192, F = 28672) on a v5p 4x4x4 cube."""
    mesh = TpuMesh("v5p", X=4, Y=4, Z=4)
    return all_gather(mesh, "XYZ", D_LLAMA * F_LLAMA * dtype_bytes("bf16")).time


@problem("03.6", title="A gather of an array that is sharded twice", unit="s")
def doubly_sharded_gather_time() -> float:
    """AllGather_X of bf16 A[B_X, D_Y] (B = 16384, D = 8192) on a v5e 8x16 slice: X has no wraparound."""
    mesh = TpuMesh("v5e", X=8, Y=16)
    return all_gather(mesh, "X", 16384 * D_LLAMA * dtype_bytes("bf16"), also_sharded="Y").time


@problem("03.7", title="What losing the wraparound costs an AllReduce", unit="ratio")
def lost_wraparound_ratio() -> float:
    """AllReduce_Z of bf16[8192, 8192]{U_Z}: time on a v5p 2x2x4 over time on a v5p 4x4x4."""
    nbytes = 8192 * 8192 * dtype_bytes("bf16")
    partial = all_reduce(TpuMesh("v5p", X=2, Y=2, Z=4), "Z", nbytes).time
    cube = all_reduce(TpuMesh("v5p", X=4, Y=4, Z=4), "Z", nbytes).time
    return partial / cube


@problem("03.8", title="AllToAll over a whole v6e pod", unit="s")
def pod_all_to_all_time() -> float:
    """AllToAll over X and Y of a v6e 16x16 pod: bf16 A[T, D_XY] -> A[T_XY, D] with T = 32768, D = 8192."""
    mesh = TpuMesh("v6e", X=16, Y=16)
    return all_to_all(mesh, "XY", 32768 * D_LLAMA * dtype_bytes("bf16")).time


@problem("03.9", title="Gather the weight or reduce the output?", unit="s")
def gather_or_reduce_time() -> float:
    """Time of the cheaper plan for X[B, D] @ W[D_X, F] -> Y[B, F] on a v6e 16x16 (B = 2048, D = 8192, F = 32768)."""
    mesh = TpuMesh("v6e", X=16, Y=16)
    return sharded_matmul(DP_MATMUL, mesh, B=2048, D=D_LLAMA, F=F_WIDE).time


@problem("03.10", title="Both inputs split over the same axis", unit="s")
def case4_matmul_time() -> float:
    """Time of the cheapest plan for A[I_X, J] @ B[J, K_X] -> C[I_X, K] on a v5e 16x16 (I=4096, J=8192, K=16384)."""
    mesh = TpuMesh("v5e", X=16, Y=16)
    return sharded_matmul("A[I_X, J] @ B[J, K_X] -> C[I_X, K]", mesh, I=4096, J=D_LLAMA, K=2 * D_LLAMA).time


@problem("03.11", title="When an FSDP matmul becomes compute-bound", unit="tokens")
def fsdp_critical_batch() -> float:
    """Global batch above which In[B_XYZ, D] @ W[D_XYZ, F] -> Out[B_XYZ, F] on a v5p 4x4x4 is compute-bound.

    The chosen plan gathers W (a time independent of B) and then multiplies (a time proportional to B),
    so the two clocks meet at B0 · t_comms / t_math for any B0.
    """
    mesh = TpuMesh("v5p", X=4, Y=4, Z=4)
    B0 = 65536
    plan = sharded_matmul("In[B_XYZ, D] @ W[D_XYZ, F] -> Out[B_XYZ, F]", mesh, B=B0, D=D_LLAMA, F=F_LLAMA)
    return B0 * plan.t_comms / plan.t_math


@problem("03.12", title="The batch at which the best plan flips", unit="tokens")
def gather_or_reduce_crossover() -> float:
    """Batch at which gather-W-first and multiply-then-AllReduce take equal time in problem 9's matmul.

    Both plans are comms-bound around the crossover: AllReduce moves the [B, F] output (time ∝ B), the
    gather moves the weight (time independent of B), so B* = B0 · T_gather / T_reduce.
    """
    mesh = TpuMesh("v6e", X=16, Y=16)
    B0 = 1024
    plan = sharded_matmul(DP_MATMUL, mesh, B=B0, D=D_LLAMA, F=F_WIDE)
    t_gather = next(t for name, t in plan.alternatives if name.startswith("gather"))
    return B0 * t_gather / plan.time


# --- the book's own problems (How To Scale Your Model, ch. 3, pop quizzes and "Some Problems to Work") ------

BOOK_CUBE = TpuMesh("v4p", X=4, Y=4, Z=4)  # Q2 and Q3: a full v4p cube, wraparound on every axis
BOOK_Q2_BYTES = 2 * 1024 * 4096  # bf16[B=1024, D=4096]


@problem("03.13", title="Book pop quiz 2: a gather without wraparound", unit="s")
def book_gather_without_wraparound() -> float:
    """AllGather_Y of bf16[E_Y, F] -> [E, F], E = 2048, F = 8192, on a v5e {X: 8, Y: 4} (Y does not wrap)."""
    return all_gather(TpuMesh("v5e", X=8, Y=4), "Y", 2 * 2048 * 8192).time


@problem("03.14", title="Book Q1: counting copies", unit="copies")
def book_copies() -> float:
    """Total bytes of A[I_X, J, K] over all devices of a {X: 4, Y: 8, Z: 2} mesh, over the bytes of one copy."""
    mesh, sizes = TpuMesh("v5p", X=4, Y=8, Z=2), {"I": 256, "J": 256, "K": 256}
    return total_bytes("A[I_X, J, K]", mesh, sizes) / (dtype_bytes("bf16") * 256**3)


@problem("03.15", title="Book Q2 (a): AllGather_X of [B_X, D_Y]", unit="s")
def book_gather_x() -> float:
    """AllGather over X of bf16[B_X, D_Y] (B = 1024, D = 4096) on a full v4p 4x4x4."""
    return all_gather(BOOK_CUBE, "X", BOOK_Q2_BYTES, also_sharded="Y").time


@problem("03.16", title="Book Q2 (b): AllGather_XY of [B_X, D_Y]", unit="s")
def book_gather_xy() -> float:
    """AllGather over X and Y of the same array."""
    return all_gather(BOOK_CUBE, "XY", BOOK_Q2_BYTES).time


@problem("03.17", title="Book Q2 (c): AllReduce_Z of [B_X, D_Y]{U_Z}", unit="s")
def book_all_reduce_z() -> float:
    """AllReduce over Z of the unreduced array, still sharded over X and Y."""
    return all_reduce(BOOK_CUBE, "Z", BOOK_Q2_BYTES, also_sharded="XY").time


@problem("03.18", title="Book Q3: a tiny gather", unit="s")
def book_tiny_gather() -> float:
    """AllGather_X of bf16[B_X] with B = 128 on the full v4p cube: latency-bound."""
    return all_gather(BOOK_CUBE, "X", 2 * 128).time


@problem("03.19", title="Book Q4: where reducing the output always wins", unit="elements of D")
def book_reduce_wins_width() -> float:
    """On a v5p, the D above which multiplying locally then AllReducing beats gathering the weight at any
    large batch: D > 2 C / W_bidi."""
    chip = get_chip("v5p")
    return 2 * chip.bf16_flops / chip.ici_bidirectional


@problem("03.20", title="Book Q10: where the quarter comes from", unit="ratio")
def book_all_to_all_quarter() -> float:
    """AllToAll time over AllGather time on one wrapped axis (v5e pod, X), in the bandwidth regime."""
    pod = TpuMesh("v5e", X=16, Y=16)
    return all_to_all(pod, "X", 1e9).time / all_gather(pod, "X", 1e9).time
