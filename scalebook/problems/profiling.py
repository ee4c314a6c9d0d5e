"""Problem set 9 — profiling: the reference solutions of `solutions/09_profiling.md`.

Each function computes its answer with scalebook from the inputs the problem states (tiling from
`profiling.padding`, rooflines from `roofline.estimate` and the spec table). Answers are in SI base units.
"""

from __future__ import annotations

from ..hardware.chips import get_chip
from ..hlo import padding, parse_op
from ..roofline import estimate
from . import problem


def _one_hop(shard_bytes: float, chip: str) -> float:
    """Seconds to send one shard (bytes) over one hop at the chip's bidirectional ICI bandwidth (the book's model
    of a ReduceScatter between two neighbours)."""
    c = get_chip(chip)
    return estimate(0, shard_bytes, c, bandwidth=2 * c.ici_bandwidth, channel="ICI").time


@problem("09.1", title="Padding of an odd-sized bf16 activation", unit="fraction")
def bf16_tile_waste() -> float:
    """Fraction of the storage of bf16[100, 300] with tiling T(8,128)(2,1) that is padding."""
    return padding((100, 300), "T(8,128)(2,1)", "bf16")["waste"]


@problem("09.2", title="A vector in a matrix's tiles", unit="B")
def f32_vector_stored_bytes() -> float:
    """Bytes a f32[1, 4096] array occupies with tiling T(8,128)."""
    return padding((1, 4096), "T(8,128)", "f32")["stored_bytes"]


@problem("09.3", title="Roofline of a matmul in a v5e profile", unit="s")
def v5e_matmul_time() -> float:
    """bf16[16,2048,4096] x bf16[4096,16384], data-parallel over 4 v5e chips: the compute-bound time."""
    flops = 2 * 16 * 2048 * 4096 * 16384
    return estimate(flops / 4, 0, "v5e").time


@problem("09.4", title="A ReduceScatter between two v5e neighbours", unit="s")
def v5e_reduce_scatter_time() -> float:
    """Shard of bf16[4, 2048, 8192] per chip sent once over one bidirectional v5e ICI link."""
    return _one_hop(2 * 4 * 2048 * 8192, "v5e")


@problem("09.5", title="How close to the roofline did it run?", unit="fraction")
def achieved_fraction() -> float:
    """A bf16 [4096, 8192] x [8192, 8192] matmul measured at 3.0 ms on one v5e: roofline time / measured."""
    return estimate(2 * 4096 * 8192 * 8192, 0, "v5e").time / 3.0e-3


@problem("09.6", title="Argument bytes of a sharded MLP", unit="B")
def sharded_mlp_argument_bytes() -> float:
    """f32 x[256, 512] replicated, w_in[512, 2048] and w_out[2048, 512] split 4 ways along F: bytes per device."""
    B, D, F, n = 256, 512, 2048, 4
    return 4 * (B * D + 2 * D * F / n)


@problem("09.7", title="True shape from a per-device dump", unit="elements")
def true_hidden_size() -> float:
    """The global width of a weight a dump shows as bf16[8192,4096]{1,0} with sharding devices=[1,8]."""
    line = "%w = bf16[8192,4096]{1,0} parameter(1), sharding={devices=[1,8]<=[8]}"
    return parse_op(line).shape[1] * 8


@problem("09.8", title="The cost of a re-tiling copy", unit="s")
def retiling_copy_time() -> float:
    """A copy that re-tiles bf16[8192, 8192] on one v5e: read once and written once through HBM."""
    return estimate(0, 2 * 2 * 8192 * 8192, "v5e").time


# --- the book's own problems (How To Scale Your Model, ch. 9, its worked profile; its Q1 is problem 09.7) --------

@problem("09.9", title="Book Ex1: the up-projection in the v2 profile", unit="s")
def book_up_projection_time() -> float:
    """bf16[32,1024,8192] x bf16[8192,32768] over 8 TPU v2 cores (4 chips): the compute-bound time."""
    return estimate(2 * 32 * 1024 * 8192 * 32768 / 4, 0, "v2").time


@problem("09.10", title="Book Ex2: the ReduceScatter in the v2 profile", unit="s")
def book_reduce_scatter_time() -> float:
    """A bf16[8,1024,8192] shard sent once over one bidirectional TPU v2 ICI link."""
    return _one_hop(2 * 8 * 1024 * 8192, "v2")


@problem("09.11", title="Book Ex3: what the memory profile leaves free", unit="B")
def book_memory_left() -> float:
    """Bytes left for a training step when parameters take 7.5 GB of the 16 GB the profiler shows."""
    return 16e9 - 7.5e9
