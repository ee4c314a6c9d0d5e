"""Problem set 10 — programming in JAX: the reference solutions of `solutions/10_jax.md`.

The notebook's coding problems read their answers off real compiled programs (shapes, bytes, errors);
the key works the same numbers out from the shapes, so it needs no devices. Answers are in SI base units.
"""

from __future__ import annotations

from ...units import dtype_bytes
from . import solution

# The book's collective-matmul example: A[B_X, D_Y] · W[D, F_Y] on a 2x4 mesh (ch. 10).
B_BOOK, D_BOOK, F_BOOK, X_BOOK, Y_BOOK = 1024, 2048, 8192, 2, 4
# The book's v5e-8 timings of that example, in seconds: default jit, collective matmul, no-communication baseline.
T_JIT, T_COLLECTIVE, T_BASELINE = 311e-6, 244e-6, 224e-6
# The toy MoE of problems 5 and 6: S tokens of width D, E experts, over N devices, float32.
S_MOE, D_MOE, E_MOE, N_MOE = 256, 64, 16, 8


@solution("10.1", title="The mean of one shard", unit="value", hints=(
    "Work out which rows and columns the shard holds: rows split two ways over X, columns four ways over Y.",
    "Element (r, c) holds sixteen times r plus c, so the shard's mean is ⟦mean = 16 * sum(rows) / len_rows + "
    "sum(cols) / len_cols⟧ over its rows ⟦rows = range(4, 8)⟧ and columns ⟦cols = range(8, 12)⟧, with ⟦len_rows = "
    "4⟧ and ⟦len_cols = 4⟧.",
))
def shard_mean() -> float:
    """Mean of shard (x=1, y=2) of A = arange(8·16).reshape(8, 16) laid out A[S_X, D_Y] on a 2x4 mesh.

    Element (r, c) holds 16·r + c; the shard holds rows 4..7 and columns 8..11, so its mean is
    16 · mean(r) + mean(c).
    """
    rows, cols = range(4, 8), range(8, 12)
    return 16 * sum(rows) / len(rows) + sum(cols) / len(cols)


@solution("10.2", title="A ReduceScatter's bytes per device", unit="bytes", hints=(
    "A ReduceScatter over Y leaves each device one Y-th of the reduced axis, still split over X.",
    "⟦b = (B / X) * (F / Y) * 4⟧ bytes (fp32) with ⟦B = 64⟧, ⟦F = 256⟧, ⟦X = 2⟧ and ⟦Y = 4⟧.",
))
def reduce_scatter_bytes() -> float:
    """Result bytes per device of psum_scatter of Out[B_X, F] over Y in float32, B=64, F=256, X=2, Y=4."""
    return (64 // 2) * (256 // 4) * dtype_bytes("fp32")


@solution("10.3", title="Bytes a device sends round the collective-matmul ring", unit="bytes", hints=(
    "In a unidirectional collective matmul each device forwards one chunk per step, for all but one of the Y steps.",
    "⟦b = (Y - 1) * chunk⟧ with the bf16 chunk ⟦chunk = (B / X) * (D / Y) * 2⟧, ⟦B = 1024⟧, ⟦D = 2048⟧, ⟦X = 2⟧ and "
    "⟦Y = 4⟧.",
))
def ring_bytes() -> float:
    """bf16 A[B_X, D_Y]: Y - 1 steps, each passing on one [B/X, D/Y] chunk (book example shapes)."""
    chunk = (B_BOOK // X_BOOK) * (D_BOOK // Y_BOOK) * dtype_bytes("bf16")
    return (Y_BOOK - 1) * chunk


@solution("10.4", title="Bidirectional ring: bytes per link direction per step", unit="bytes", hints=(
    "A bidirectional ring sends half of each chunk each way.",
    "⟦b = chunk / 2⟧ with the bf16 chunk ⟦chunk = (B / X) * (D / Y) * 2⟧, ⟦B = 1024⟧, ⟦D = 2048⟧, ⟦X = 2⟧ and ⟦Y = "
    "4⟧.",
))
def bidirectional_step_bytes() -> float:
    """Half of each bf16 [B/X, D/Y] chunk goes each way, so one direction of a link carries half a chunk."""
    return (B_BOOK // X_BOOK) * (D_BOOK // Y_BOOK) * dtype_bytes("bf16") / 2


@solution("10.5", title="How much of the AllGather the collective matmul hides", unit="fraction", hints=(
    "Compare the collective matmul's saving with the whole communication overhead of plain jit.",
    "⟦f = (jit - collective) / (jit - baseline)⟧ with the measured ⟦jit = 311e-6⟧, ⟦collective = 244e-6⟧ and the "
    "no-communication ⟦baseline = 224e-6⟧ seconds.",
))
def hidden_fraction() -> float:
    """Share of jit's extra time over the no-communication baseline that the collective matmul removes."""
    return (T_JIT - T_COLLECTIVE) / (T_JIT - T_BASELINE)


@solution("10.6", title="The MoE all-to-all buffer", unit="bytes", hints=(
    "The send buffer has a slot per local token for every destination device.",
    "⟦b = N * (S / N) * D * 4⟧ bytes (fp32) with ⟦S = 256⟧, ⟦D = 64⟧ and ⟦N = 8⟧.",
))
def moe_buffer_bytes() -> float:
    """Per-device float32 send buffer [N, S/N, D]: one slot per local token for every destination device."""
    return N_MOE * (S_MOE // N_MOE) * D_MOE * dtype_bytes("fp32")


@solution("10.7", title="Padding in the capacity-free MoE", unit="fraction", hints=(
    "Each device processes N · S / N rows, but only S / N of them are its real tokens.",
    "⟦f = (S / N) / (N * S / N)⟧ with ⟦S = 256⟧ and ⟦N = 8⟧.",
))
def moe_useful_fraction() -> float:
    """Share of the rows each device's grouped matmul processes that are real tokens (S/N of N · S/N)."""
    return (S_MOE // N_MOE) / (N_MOE * (S_MOE // N_MOE))


@solution("10.8", title="Rows per host on a multi-host slice", unit="rows", hints=(
    "Each process (host) loads the rows for its own chips only.",
    "⟦r = rows / (chips / per_host)⟧ with ⟦rows = 1024⟧, ⟦chips = 8 * 8⟧ and ⟦per_host = 4⟧.",
))
def rows_per_process() -> float:
    """Global batch 1024 sharded over the 64 chips of a slice with 4 chips per host: rows each process loads."""
    return 1024 / (64 // 4)
