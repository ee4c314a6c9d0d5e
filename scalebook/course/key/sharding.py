"""Problem set 3 — sharded matrices: the reference solutions of `solutions/03_sharding.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ...collectives import all_gather, all_reduce, all_to_all
from ...hardware.chips import get_chip
from ...hardware.topology import TpuMesh
from ...roofline import estimate
from ...sharding import bytes_per_device, sharded_matmul, total_bytes
from ...units import dtype_bytes
from ..inputs import vary
from . import solution

# Shapes the problems share: a LLaMA 3-70B-sized MLP (d_model, d_ff), the LLaMA 3 vocabulary, and a
# wider MLP with F = 4D.
D_LLAMA, F_LLAMA, V_LLAMA = 8192, 28672, 128256
F_WIDE = 4 * D_LLAMA

# A data-parallel-style matmul with the weight's contracting dimension split over X (problems 9 and 12).
DP_MATMUL = "X[B, D] @ W[D_X, F] -> Y[B, F]"


@solution("03.1", title="The shard of an optimizer moment", unit="B", hints=(
    "Only the axes named in the sharding divide the array; the unnamed axis (Z) keeps a full copy per chip.",
    "The fp32 moment is split over X and Y (both of size X here) and copied along Z: ⟦b = F * D * 4 / (X * X)⟧.",
))
def moment_shard_bytes(F: int = vary(F_LLAMA, 8192, 57344, step=1024), D: int = vary(D_LLAMA, 2048, 16384, step=1024),
                       X: int = vary(4, choices=(2, 4, 8))) -> float:
    """Bytes per chip of an fp32 Adam moment M[F_XY, D] on a v5p X x X x 4."""
    mesh = TpuMesh("v5p", X=X, Y=X, Z=4)
    return bytes_per_device("M[F_XY, D]", mesh, {"F": F, "D": D}, dtype="fp32")


@solution("03.2", title="An embedding table's footprint across a slice", unit="B", hints=(
    "Sharded over Y, the table is split Y ways but copied along X: the slice holds X full copies.",
    "Every one of the X rows of chips holds a whole bf16 table: ⟦m = X * V * D * 2⟧.",
))
def embedding_total_bytes(
        V: int = vary(V_LLAMA, 32000, 256000, step=128), D: int = vary(D_LLAMA, 2048, 16384, step=1024),
                          X: int = vary(8, 2, 16, step=2)) -> float:
    """Bytes held across a v6e X x 16 slice by a bf16 embedding E[V_Y, D]."""
    mesh = TpuMesh("v6e", X=X, Y=16)
    return total_bytes("E[V_Y, D]", mesh, {"V": V, "D": D}, dtype="bf16")


@solution("03.3", title="AllGather of a weight over a wrapped axis", unit="s", hints=(
    "A wrapped axis is a ring: the gather sends in both directions, so use the bidirectional link bandwidth.",
    "The book's ring bound drops the exact ring's small correction factor: the gathered bf16 weight over the "
    "bidirectional link, unless the latency (half-way round the ring of sixteen) is longer: ⟦t = max(V / W, hops * "
    "1e-6)⟧ with ⟦V = 2 * D * F⟧, ⟦hops = 16 // 2⟧ and ⟦W = sb.get_chip('v6e').ici_bidirectional⟧.",
))
def weight_gather_time(
        D: int = vary(D_LLAMA, 2048, 16384, step=1024), F: int = vary(F_WIDE, 8192, 65536, step=1024)) -> float:
    """AllGather_Y of a bf16 W[D, F_Y] on a v6e 16x16 pod."""
    mesh = TpuMesh("v6e", X=16, Y=16)
    return all_gather(mesh, "Y", D * F * dtype_bytes("bf16")).time


@solution("03.4", title="Where latency stops mattering", unit="B", hints=(
    "The latency term (hops × per-hop latency) does not grow with the array; the bandwidth term does. Set them "
    "equal — and first ask whether your axis wraps.",
    "Your axis X = {X} on a {chip}: it wraps only on a full pod axis (v5e, v6e) or a slice of whole cubes (v4p, "
    "v5p); ask the mesh, ⟦m = sb.TpuMesh(chip, X=X, Y=16) if chip in ('v5e', 'v6e') else sb.TpuMesh(chip, X=X, Y=4, "
    "Z=4)⟧. A ring needs half its size in hops and gathers over both directions of each link; a line needs its size "
    "less one and runs one way, each hop carrying one shard. The latency meets the bandwidth term at ⟦V = hops * "
    "1e-6 * W⟧ with ⟦hops = X // 2 if m.wrap['X'] else X - 1⟧ and ⟦W = 2 * u if m.wrap['X'] else u * X / (X - 1)⟧, "
    "⟦u = sb.get_chip(chip).ici_bandwidth⟧ one way.",
))
def latency_bandwidth_threshold(X: int = vary(16, 4, 16, step=2),
                                chip: str = vary("v6e", choices=("v6e", "v5e", "v5p", "v4p"))) -> float:
    """Smallest array V for which an AllGather over the X axis (X chips of a `chip` slice) is bandwidth-bound.

    The latency term (hops x 1 µs) does not depend on V, the bandwidth term V / W_X does; they meet at
    V = t_latency · W_X. On the book's 16-chip wrapped v6e axis that is 8 hops and W_X = W_bidi; an axis
    without wraparound is a line of X - 1 hops whose bandwidth term is (X - 1)/X · V / W_one-way, so W_X is
    read off the collective's own bandwidth term rather than assumed bidirectional.
    """
    mesh = TpuMesh(chip, X=X, Y=16) if chip in ("v6e", "v5e") else TpuMesh(chip, X=X, Y=4, Z=4)
    small = all_gather(mesh, "X", 256 * 128 * dtype_bytes("bf16"))
    return small.t_latency * small.bytes / small.t_comms


@solution("03.5", title="Gathering an FSDP weight over three axes", unit="s", hints=(
    "Gathering over several axes uses all their links at once: the bandwidth multiplies by the number of axes.",
    "All three axes of the cube wrap, so each gathers over a bidirectional ring and the three add up: ⟦t = max(V / "
    "(3 * W), hops * 1e-6)⟧ with ⟦V = 2 * D * F⟧, ⟦hops = 3 * 2⟧ (half of each ring of four) and ⟦W = "
    "sb.get_chip('v5p').ici_bidirectional⟧.",
))
def three_axis_gather_time(D: int = vary(D_LLAMA, 2048, 16384, step=1024),
                           F: int = vary(F_LLAMA, 8192, 57344, step=1024)) -> float:
    """AllGather_XYZ of a bf16 W[D_XYZ, F] on a v5p 4x4x4 cube."""
    mesh = TpuMesh("v5p", X=4, Y=4, Z=4)
    return all_gather(mesh, "XYZ", D * F * dtype_bytes("bf16")).time


@solution("03.6", title="A gather of an array that is sharded twice", unit="s", hints=(
    "Each Y group gathers only its own D / Y slice; and an axis without wraparound is a line, not a ring.",
    "X (eight chips of a 8x16 slice) does not wrap: each of the seven hops carries one shard one way, ⟦t = max((X - "
    "1) / X * V / W, (X - 1) * 1e-6)⟧ with ⟦X = 8⟧, the slice of the bf16 array one Y group gathers, ⟦V = 2 * B * D "
    "/ 16⟧, and the one-way ⟦W = sb.get_chip('v5e').ici_bandwidth⟧.",
))
def doubly_sharded_gather_time(B: int = vary(16384, 2048, 65536, step=1024),
                               D: int = vary(D_LLAMA, 2048, 16384, step=1024)) -> float:
    """AllGather_X of bf16 A[B_X, D_Y] on a v5e 8x16 slice: X has no wraparound."""
    mesh = TpuMesh("v5e", X=8, Y=16)
    return all_gather(mesh, "X", B * D * dtype_bytes("bf16"), also_sharded="Y").time


@solution("03.7", title="What losing the wraparound costs an AllReduce", unit="ratio", hints=(
    "Only a slice of whole cubes wraps around; without it, a ring of four is a line whose links run one way.",
    "An AllReduce is twice a gather, latency and bandwidth alike. On the 2x2x4 the Z line of four carries three "
    "quarters of the array one way; on the cube the Z ring carries it over both directions: ⟦r = max(2 * 3 / 4 * V "
    "/ W, 2 * 3e-6) / max(2 * V / (2 * W), 2 * 2e-6)⟧ with ⟦V = 2 * N ** 2⟧ and ⟦W = "
    "sb.get_chip('v5p').ici_bandwidth⟧ one way.",
))
def lost_wraparound_ratio(N: int = vary(8192, 1024, 16384, step=1024)) -> float:
    """AllReduce_Z of bf16[N, N]{U_Z}: time on a v5p 2x2x4 over time on a v5p 4x4x4."""
    nbytes = N * N * dtype_bytes("bf16")
    partial = all_reduce(TpuMesh("v5p", X=2, Y=2, Z=4), "Z", nbytes).time
    cube = all_reduce(TpuMesh("v5p", X=4, Y=4, Z=4), "Z", nbytes).time
    return partial / cube


@solution("03.8", title="AllToAll over a whole v6e pod", unit="s", hints=(
    "An AllToAll on a ring moves about a quarter of what an AllGather of the same array moves, and here two axes of "
    "sixteen rings each share the work.",
    "A quarter of the array crosses the middle of each ring in each direction, and the sixteen rings along the "
    "other axis carry it side by side: ⟦t = max(V / (4 * W * rings), hops * 1e-6)⟧ with ⟦V = 2 * T * D⟧, ⟦rings = "
    "16⟧, ⟦hops = 8 + 8⟧ and ⟦W = sb.get_chip('v6e').ici_bidirectional⟧ (bidirectional).",
))
def pod_all_to_all_time(
        T: int = vary(32768, 4096, 131072, step=4096), D: int = vary(D_LLAMA, 2048, 16384, step=1024)) -> float:
    """AllToAll over X and Y of a v6e 16x16 pod: bf16 A[T, D_XY] -> A[T_XY, D]."""
    mesh = TpuMesh("v6e", X=16, Y=16)
    return all_to_all(mesh, "XY", T * D * dtype_bytes("bf16")).time


@solution("03.9", title="Gather the weight or reduce the output?", unit="s", hints=(
    "Two plans: gather W (bytes D·F) then multiply, or multiply locally and AllReduce the [B, F] output; price both "
    "and take the cheaper.",
    "Each plan takes the longer of its math and its communication; take the cheaper plan: ⟦t = min(max(m, g), max(m "
    "/ 16, r))⟧. Gathering W leaves every chip the whole matmul, ⟦m = 2 * B * D * F / C⟧, after ⟦g = max(2 * D * F "
    "/ W, 8e-6)⟧; multiplying locally splits the math sixteen ways but AllReduces the bf16 output, twice a gather: "
    "⟦r = 2 * max(2 * B * F / W, 8e-6)⟧. Here ⟦C = sb.get_chip('v6e').peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip('v6e').ici_bidirectional⟧.",
))
def gather_or_reduce_time(B: int = vary(2048, 256, 16384, step=256), D: int = vary(D_LLAMA, 2048, 16384, step=1024),
                          F: int = vary(F_WIDE, 8192, 65536, step=1024)) -> float:
    """Time of the cheaper plan for X[B, D] @ W[D_X, F] -> Y[B, F] on a v6e 16x16."""
    mesh = TpuMesh("v6e", X=16, Y=16)
    return sharded_matmul(DP_MATMUL, mesh, B=B, D=D, F=F).time


@solution("03.10", title="Both inputs split over the same axis", unit="s", hints=(
    "Two non-contracting dimensions cannot both stay sharded over X: one input must be gathered first, and "
    "gathering A leaves the output split the wrong way.",
    "Either plan splits the math sixteen ways, ⟦m = 2 * I * J * K / (16 * C)⟧; gathering A costs ⟦g_A = max(2 * I * "
    "J / W, 8e-6)⟧ plus an AllToAll that moves the output's split back to I, a quarter of a gather: ⟦s = max(2 * I "
    "* K / (4 * W), 8e-6)⟧; gathering B costs ⟦g_B = max(2 * J * K / W, 8e-6)⟧ and nothing after. The communication "
    "runs one collective after another and overlaps the math: ⟦t = min(max(m, g_A + s), max(m, g_B))⟧, with ⟦C = "
    "sb.get_chip('v5e').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('v5e').ici_bidirectional⟧.",
))
def case4_matmul_time(I: int = vary(4096, 1024, 16384, step=1024),  # noqa: E741 - the book's letter
                      J: int = vary(D_LLAMA, 2048, 16384, step=1024),
                      K: int = vary(2 * D_LLAMA, 4096, 32768, step=1024)) -> float:
    """Time of the cheapest plan for A[I_X, J] @ B[J, K_X] -> C[I_X, K] on a v5e 16x16."""
    mesh = TpuMesh("v5e", X=16, Y=16)
    return sharded_matmul("A[I_X, J] @ B[J, K_X] -> C[I_X, K]", mesh, I=I, J=J, K=K).time


@solution("03.11", title="When an FSDP matmul becomes compute-bound", unit="tokens", hints=(
    "The gather of W takes the same time at any batch; the math grows with B. Find the B where they meet.",
    "The gather moves the bf16 weight over the cube's three wrapped axes (bytes over three bidirectional links), "
    "the math splits sixty-four ways; D·F cancels, leaving ⟦B = 64 * C / (3 * W)⟧ with ⟦C = "
    "sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = sb.get_chip(chip).ici_bidirectional⟧.",
))
def fsdp_critical_batch(chip: str = vary("v5p", choices=("v5p", "v4p", "tpu7x"))) -> float:
    """Global batch above which In[B_XYZ, D] @ W[D_XYZ, F] -> Out[B_XYZ, F] on a `chip` 4x4x4 is compute-bound.

    The chosen plan gathers W (a time independent of B) and then multiplies (a time proportional to B),
    so the two clocks meet at B0 · t_comms / t_math for any B0.
    """
    mesh = TpuMesh(chip, X=4, Y=4, Z=4)
    B0 = 65536
    plan = sharded_matmul("In[B_XYZ, D] @ W[D_XYZ, F] -> Out[B_XYZ, F]", mesh, B=B0, D=D_LLAMA, F=F_LLAMA)
    return B0 * plan.t_comms / plan.t_math


@solution("03.12", title="The batch at which the best plan flips", unit="tokens", hints=(
    "The gather's time does not depend on B, the AllReduce's grows with B: the best plan flips where they are "
    "equal.",
    "Both plans are bandwidth-bound near the flip: the gather moves the weight, the AllReduce moves each token's "
    "output row twice; equal at ⟦B = weight / (2 * row)⟧ with ⟦weight = 2 * D * F⟧ and ⟦row = 2 * F⟧ bytes (bf16).",
))
def gather_or_reduce_crossover(D: int = vary(D_LLAMA, 2048, 16384, step=1024),
                               F: int = vary(F_WIDE, 8192, 65536, step=1024)) -> float:
    """Batch at which gather-W-first and multiply-then-AllReduce take equal time in problem 9's matmul.

    Both plans are comms-bound around the crossover: AllReduce moves the [B, F] output (time ∝ B), the
    gather moves the weight (time independent of B), so B* = B0 · T_gather / T_reduce.
    """
    mesh = TpuMesh("v6e", X=16, Y=16)
    B0 = 1024
    plan = sharded_matmul(DP_MATMUL, mesh, B=B0, D=D, F=F)
    t_gather = next(t for name, t in plan.alternatives if name.startswith("gather"))
    return B0 * t_gather / plan.time


# --- the book's own problems (How To Scale Your Model, ch. 3, pop quizzes and "Some Problems to Work") ------

BOOK_CUBE = TpuMesh("v4p", X=4, Y=4, Z=4)  # Q2 and Q3: a full v4p cube, wraparound on every axis


@solution("03.13", title="Book pop quiz 2: a gather without wraparound", unit="s", hints=(
    "Without wraparound the ring is a line: data flows one way per link, so only the one-way bandwidth counts.",
    "Y (four chips of a v5e 8x4) does not wrap: each of its hops carries one shard one way, ⟦t = max((Y - 1) / Y * "
    "V / W, (Y - 1) * 1e-6)⟧ with ⟦Y = 4⟧, ⟦V = 2 * E * F⟧ and the one-way ⟦W = sb.get_chip('v5e').ici_bandwidth⟧.",
))
def book_gather_without_wraparound(
        E: int = vary(2048, 512, 8192, step=256), F: int = vary(8192, 2048, 32768, step=1024)) -> float:
    """AllGather_Y of bf16[E_Y, F] -> [E, F] on a v5e {X: 8, Y: 4} (Y does not wrap)."""
    return all_gather(TpuMesh("v5e", X=8, Y=4), "Y", 2 * E * F).time


@solution("03.14", title="Book Q1: counting copies", unit="copies", hints=(
    "An array sharded over some axes is replicated over the others: count the devices that hold each piece.",
    "A is split over X only, so every piece is held once per chip of the Y × Z plane: ⟦c = Y * Z⟧.",
))
def book_copies(Y: int = vary(8, 2, 16, step=2), Z: int = vary(2, 2, 8, step=2)) -> float:
    """Total bytes of A[I_X, J, K] over all devices of a {X: 4, Y, Z} mesh, over the bytes of one copy."""
    mesh, sizes = TpuMesh("v5p", X=4, Y=Y, Z=Z), {"I": 256, "J": 256, "K": 256}
    return total_bytes("A[I_X, J, K]", mesh, sizes) / (dtype_bytes("bf16") * 256**3)


@solution("03.15", title="Book Q2 (a): AllGather_X of [B_X, D_Y]", unit="s", hints=(
    "The gather over X moves only the D / Y slice each chip holds; the cube wraps, so links run both ways.",
    "The book's ring bound over X, on the slice of the bf16 array that one Y group gathers: ⟦t = max(V / W, hops * "
    "1e-6)⟧ with ⟦V = 2 * B * D / 4⟧, ⟦hops = 2⟧ and ⟦W = sb.get_chip('v4p').ici_bidirectional⟧.",
))
def book_gather_x(B: int = vary(1024, 256, 8192, step=256), D: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """AllGather over X of bf16[B_X, D_Y] on a full v4p 4x4x4."""
    return all_gather(BOOK_CUBE, "X", 2 * B * D, also_sharded="Y").time


@solution("03.16", title="Book Q2 (b): AllGather_XY of [B_X, D_Y]", unit="s", hints=(
    "Two axes gathered together: each chip uses the links of both, doubling the bandwidth.",
    "⟦t = max(V / (2 * W), hops * 1e-6)⟧ with the whole bf16 array ⟦V = 2 * B * D⟧, ⟦hops = 2 + 2⟧ and ⟦W = "
    "sb.get_chip('v4p').ici_bidirectional⟧.",
))
def book_gather_xy(B: int = vary(1024, 256, 8192, step=256), D: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """AllGather over X and Y of the same array."""
    return all_gather(BOOK_CUBE, "XY", 2 * B * D).time


@solution("03.17", title="Book Q2 (c): AllReduce_Z of [B_X, D_Y]{U_Z}", unit="s", hints=(
    "An AllReduce is a ReduceScatter then an AllGather: twice the gather's time, on the X·Y-th of the array each "
    "chip holds.",
    "Twice a gather over the wrapped Z ring, latency included: ⟦t = 2 * max(V / W, hops * 1e-6)⟧ with the part of "
    "the bf16 array one Z ring reduces, ⟦V = 2 * B * D / 16⟧, ⟦hops = 2⟧ and ⟦W = "
    "sb.get_chip('v4p').ici_bidirectional⟧.",
))
def book_all_reduce_z(B: int = vary(1024, 256, 8192, step=256), D: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """AllReduce over Z of the unreduced array, still sharded over X and Y."""
    return all_reduce(BOOK_CUBE, "Z", 2 * B * D, also_sharded="XY").time


@solution("03.18", title="Book Q3: a tiny gather", unit="s", hints=(
    "A few hundred bytes: the bandwidth term is negligible, only the per-hop latency counts.",
    "Every X here is a multiple of four, so the axis wraps and a gather needs half of it in hops: ⟦t = max(V / (2 * "
    "W), X // 2 * 1e-6)⟧ with ⟦V = 2 * 128⟧ and ⟦W = sb.get_chip('v4p').ici_bandwidth⟧.",
))
def book_tiny_gather(X: int = vary(4, choices=(4, 8, 12, 16))) -> float:
    """AllGather_X of bf16[B_X] with B = 128 on a v4p X x 4 x 4: latency-bound."""
    return all_gather(TpuMesh("v4p", X=X, Y=4, Z=4), "X", 2 * 128).time


@solution("03.19", title="Book Q4: where reducing the output always wins", unit="elements of D", hints=(
    "Compare the math per chip with the bytes the AllReduce moves: both grow with B, so B cancels.",
    "⟦D = 2 * C / W⟧ with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = sb.get_chip(chip).ici_bidirectional⟧ "
    "(bidirectional).",
))
def book_reduce_wins_width(chip: str = vary("v5p", choices=("v5p", "v5e", "v6e", "v4p", "v3", "tpu7x"))) -> float:
    """On `chip`, the D above which multiplying locally then AllReducing beats gathering the weight at any
    large batch: D > 2 C / W_bidi."""
    spec = get_chip(chip)
    return 2 * spec.bf16_flops / spec.ici_bidirectional


@solution("03.20", title="Book Q10: where the quarter comes from", unit="ratio", hints=(
    "On a bidirectional ring an AllToAll's pieces travel on average a quarter of the way round.",
    "In the bandwidth regime: an AllGather moves the array over the bidirectional link, ⟦ag = V / W⟧; an AllToAll "
    "gets a quarter of the array across the ring's middle in each direction, ⟦a2a = V / (4 * W)⟧; ⟦r = a2a / ag⟧, "
    "with ⟦V = 1e9⟧ and ⟦W = sb.get_chip('v5e').ici_bidirectional⟧.",
))
def book_all_to_all_quarter() -> float:
    """AllToAll time over AllGather time on one wrapped axis (v5e pod, X), in the bandwidth regime: a ratio no
    input changes, so this problem has no variants."""
    pod = TpuMesh("v5e", X=16, Y=16)
    return all_to_all(pod, "X", 1e9).time / all_gather(pod, "X", 1e9).time


@solution("03.21", title="Book pop quiz: one device's shard", unit="B", hints=(
    "Only the named mesh axes divide a dimension: I is split over X and Y together; J is whole on every device.",
    "⟦b = I / (X * Y) * J * 4⟧ bytes (fp32).",
))
def book_shard_bytes(I: int = vary(1024, 256, 8192, step=256), J: int = vary(4096, 1024, 16384, step=1024),  # noqa: E741
                     X: int = vary(8, choices=(2, 4, 8)), Y: int = vary(2, choices=(2, 4))) -> float:
    """Bytes per device of fp32 A[I_XY, J] on a mesh {X, Y} (the chip does not matter; a v5e mesh here)."""
    return bytes_per_device("A[I_XY, J]", TpuMesh("v5e", X=X, Y=Y), {"I": I, "J": J}, dtype="fp32")


@solution("03.22", title="Book pop quiz: reading that shard on an H100", unit="s", hints=(
    "No arithmetic, only bytes: the HBM clock alone.",
    "⟦t = I / (X * Y) * J * 4 / sb.get_chip('h100').hbm_bandwidth⟧: the fp32 shard over the H100's HBM bandwidth.",
))
def book_shard_read_time(I: int = vary(1024, 256, 8192, step=256), J: int = vary(4096, 1024, 16384, step=1024),  # noqa: E741
                         X: int = vary(8, choices=(2, 4, 8)), Y: int = vary(2, choices=(2, 4))) -> float:
    """Seconds for one H100 to read problem 21's shard from HBM, at the roofline."""
    return estimate(0, book_shard_bytes(I, J, X, Y), "h100").time


@solution("03.23", title="Book pop quiz: all the copies on a three-axis mesh", unit="B", hints=(
    "The axis the sharding does not name (Z) holds a full copy of the array on each of its planes.",
    "⟦m = Z * I * J⟧ bytes: Z copies of the int8 array.",
))
def book_mesh_total_bytes(I: int = vary(128, 32, 1024, step=32), J: int = vary(2048, 512, 8192, step=512),  # noqa: E741
                          Z: int = vary(2, choices=(2, 4))) -> float:
    """Bytes the whole mesh {X: 2, Y: 8, Z} holds of int8 A[I_XY, J]."""
    return total_bytes("A[I_XY, J]", TpuMesh("v5p", X=2, Y=8, Z=Z), {"I": I, "J": J}, dtype="int8")

