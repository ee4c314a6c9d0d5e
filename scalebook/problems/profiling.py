"""Problem set 9 — profiling: the reference solutions of `solutions/09_profiling.md`.

Each function computes its answer with scalebook from the inputs the problem states (tiling from
`profiling.padding`, rooflines from `roofline.estimate` and the spec table). Answers are in SI base units.
"""

from __future__ import annotations

from ..hardware.chips import get_chip
from ..hlo import padding, parse_op
from ..roofline import estimate
from . import problem


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
    v5e = get_chip("v5e")
    return estimate(0, 2 * 4 * 2048 * 8192, v5e, bandwidth=2 * v5e.ici_bandwidth, channel="ICI").time


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
