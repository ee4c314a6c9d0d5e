"""Problem set 9 — profiling: the reference solutions of `solutions/09_profiling.md`.

Each function computes its answer with scalebook from the inputs the problem states (tiling from
`hlo.padding`, rooflines from `roofline.estimate` and the spec table). Answers are in SI base units.
"""

from __future__ import annotations

from ...hardware.chips import get_chip
from ...hlo import padding, parse_op, replica_groups
from ...roofline import estimate
from ..inputs import vary
from . import solution


def _one_hop(shard_bytes: float, chip: str) -> float:
    """Seconds to send one shard (bytes) over one hop at the chip's bidirectional ICI bandwidth (the book's model
    of a ReduceScatter between two neighbours)."""
    c = get_chip(chip)
    return estimate(0, shard_bytes, c, bandwidth=2 * c.ici_bandwidth, channel="ICI").time


@solution("09.1", title="Padding of an odd-sized bf16 activation", unit="fraction", hints=(
    "Each dimension is rounded up to a whole first tile of the layout; bf16's second tile packs row pairs inside "
    "it, which adds nothing when the first tile's rows are even.",
    "The stored share is the padded shape's: ⟦w = 1 - rows * cols / (ceil(rows / r) * r * ceil(cols / c) * c)⟧ with "
    "the first tile's ⟦r = 8⟧ rows by ⟦c = 128⟧ lanes.",
))
def bf16_tile_waste(rows: int = vary(100, 17, 1000), cols: int = vary(300, 129, 3000)) -> float:
    """Fraction of the storage of bf16[rows, cols] with tiling T(8,128)(2,1) that is padding."""
    return padding((rows, cols), "T(8,128)(2,1)", "bf16")["waste"]


@solution("09.2", title="A vector in a matrix's tiles", unit="B", hints=(
    "A single row still fills whole tiles: all but one of each tile's rows are padding.",
    "⟦b = r * ceil(n / c) * c * 4⟧ bytes: whole tiles of ⟦r = 8⟧ fp32 rows by ⟦c = 128⟧ lanes.",
))
def f32_vector_stored_bytes(n: int = vary(4096, 128, 65536, step=128)) -> float:
    """Bytes a f32[1, n] array occupies with tiling T(8,128)."""
    return padding((1, n), "T(8,128)", "f32")["stored_bytes"]


@solution("09.3", title="Roofline of a matmul in a v5e profile", unit="s", hints=(
    "Data parallelism splits the FLOPs evenly over the chips; the matmul is compute-bound.",
    "⟦t = 2 * B * T * D * F / chips / sb.get_chip('v5e').peak_flops('bf16')⟧ with ⟦chips = 4⟧.",
))
def v5e_matmul_time(B: int = vary(16, 4, 64, step=4), T: int = vary(2048, 512, 8192, step=512),
                    D: int = vary(4096, 1024, 8192, step=1024), F: int = vary(16384, 4096, 32768, step=1024)) -> float:
    """bf16[B,T,D] x bf16[D,F], data-parallel over 4 v5e chips: the compute-bound time."""
    flops = 2 * B * T * D * F
    return estimate(flops / 4, 0, "v5e").time


@solution("09.4", title="A ReduceScatter between two v5e neighbours", unit="s", hints=(
    "Between two neighbours the shard crosses one link once, both directions in use.",
    "⟦t = 2 * B * T * D / sb.get_chip('v5e').ici_bidirectional⟧: the bf16 shard over one bidirectional link.",
))
def v5e_reduce_scatter_time(B: int = vary(4, 1, 16), T: int = vary(2048, 512, 8192, step=512),
                            D: int = vary(8192, 1024, 16384, step=1024)) -> float:
    """Shard of bf16[B, T, D] per chip sent once over one bidirectional v5e ICI link."""
    return _one_hop(2 * B * T * D, "v5e")


@solution("09.5", title="How close to the roofline did it run?", unit="fraction", hints=(
    "Compute the roofline time (compute-bound here) and divide by what the profile measured.",
    "⟦r = 2 * B * D * D / sb.get_chip('v5e').peak_flops('bf16') / measured⟧ with ⟦D = 8192⟧.",
))
def achieved_fraction(B: int = vary(4096, 1024, 8192, step=512), measured: float = vary(3.0e-3, 1.5e-3, 8e-3)) -> float:
    """A bf16 [B, 8192] x [8192, 8192] matmul measured at `measured` seconds on one v5e: roofline time / measured."""
    return estimate(2 * B * 8192 * 8192, 0, "v5e").time / measured


@solution("09.6", title="Argument bytes of a sharded MLP", unit="B", hints=(
    "The replicated input is whole on every device; each weight keeps one n-th of its F dimension.",
    "⟦b = 4 * (B * D + 2 * D * F / n)⟧ bytes (fp32).",
))
def sharded_mlp_argument_bytes(B: int = vary(256, 64, 1024, step=64), D: int = vary(512, 128, 2048, step=128),
                               F: int = vary(2048, 512, 8192, step=512), n: int = vary(4, choices=(2, 4, 8))) -> float:
    """f32 x[B, D] replicated, w_in[D, F] and w_out[F, D] split n ways along F: bytes per device."""
    return 4 * (B * D + 2 * D * F / n)


@solution("09.7", title="True shape from a per-device dump", unit="elements", hints=(
    "A per-device dump shows the local shard; the sharding annotation says how many devices split each dimension.",
    "⟦w = width * n⟧: the local width times the devices along that dimension.",
))
def true_hidden_size(width: int = vary(4096, 512, 8192, step=512), n: int = vary(8, choices=(2, 4, 8, 16))) -> float:
    """The global width of a weight a dump shows as bf16[8192,width]{1,0} with sharding devices=[1,n]."""
    line = f"%w = bf16[8192,{width}]{{1,0}} parameter(1), sharding={{devices=[1,{n}]<=[{n}]}}"
    return parse_op(line).shape[1] * n


@solution("09.8", title="The cost of a re-tiling copy", unit="s", hints=(
    "A copy does no arithmetic: read once, write once.",
    "⟦t = 2 * 2 * N * M / sb.get_chip('v5e').hbm_bandwidth⟧: the bf16 array read and written once.",
))
def retiling_copy_time(
        N: int = vary(8192, 1024, 16384, step=1024), M: int = vary(8192, 1024, 16384, step=1024)) -> float:
    """A copy that re-tiles bf16[N, M] on one v5e: read once and written once through HBM."""
    return estimate(0, 2 * 2 * N * M, "v5e").time


# --- the book's own problems (How To Scale Your Model, ch. 9, its worked profile; its Q1 is problem 09.7) --------

@solution("09.9", title="Book Ex1: the up-projection in the v2 profile", unit="s", hints=(
    "Split the FLOPs over the chips of the profile and divide by one chip's peak: compute-bound.",
    "⟦t = 2 * B * T * D * F / chips / sb.get_chip('v2').peak_flops('bf16')⟧ with ⟦D = 8192⟧, ⟦F = 32768⟧ and ⟦chips "
    "= 4⟧.",
))
def book_up_projection_time(B: int = vary(32, 8, 128, step=8), T: int = vary(1024, 256, 4096, step=256)) -> float:
    """bf16[B,T,8192] x bf16[8192,32768] over 8 TPU v2 cores (4 chips): the compute-bound time."""
    return estimate(2 * B * T * 8192 * 32768 / 4, 0, "v2").time


@solution("09.10", title="Book Ex2: the ReduceScatter in the v2 profile", unit="s", hints=(
    "One hop, one shard, both directions of the link.",
    "⟦t = 2 * B * T * D / sb.get_chip('v2').ici_bidirectional⟧ with ⟦D = 8192⟧: the bf16 shard over one "
    "bidirectional link.",
))
def book_reduce_scatter_time(B: int = vary(8, 2, 32, step=2), T: int = vary(1024, 256, 4096, step=256)) -> float:
    """A bf16[B,T,8192] shard sent once over one bidirectional TPU v2 ICI link."""
    return _one_hop(2 * B * T * 8192, "v2")


@solution("09.11", title="Book Ex3: what the memory profile leaves free", unit="B", hints=(
    "The profiler shows the HBM the step can use; the parameters already hold part of it.",
    "⟦b = M - params_bytes⟧ with the profile's ⟦M = 16e9⟧ bytes of HBM.",
))
def book_memory_left(params_bytes: float = vary(7.5e9, 1e9, 1.4e10)) -> float:
    """Bytes left for a training step when parameters take `params_bytes` of the 16 GB the profiler shows."""
    return 16e9 - params_bytes


@solution("09.12", title="Book Q1: the model-parallel degree from a profile's AllReduce", unit="devices", rtol=0.0,
         hints=(
    "A collective's replica groups list the devices that combine their values: the size of one group is the degree.",
    "⟦d = n // groups⟧: the devices split evenly into the listed groups.",
))
def book_model_parallel_degree(n: int = vary(8, choices=(4, 8, 16, 32)),
                               groups: int = vary(1, choices=(1, 2, 4))) -> int:
    """Devices per replica group of an all-reduce over n devices in `groups` equal groups (the book's: 8 in one)."""
    size = n // groups
    listed = ",".join("{" + ",".join(str(g * size + i) for i in range(size)) + "}" for g in range(groups))
    line = f"%ar = bf16[8,32768]{{1,0}} all-reduce(bf16[8,32768]{{1,0}} %f), replica_groups={{{listed}}}, to_apply=%add"
    return replica_groups(line, n)[0]

