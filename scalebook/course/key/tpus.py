"""Problem set 2 — TPUs: the reference solutions of `solutions/02_tpus.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ...collectives import all_gather
from ...hardware.chips import get_chip
from ...hardware.topology import TpuMesh
from ...roofline import critical_batch, critical_intensity, crossover_batch, estimate
from ...units import dtype_bytes
from ..inputs import vary
from . import solution

# The book's TPU figures that have no field in the chip table (How To Scale Your Model, ch. 2).
VMEM_SPEEDUP = 22  # VMEM feeds the MXU at about 22x the HBM bandwidth
VPU_SUBLANES, VPU_LANES, VPU_ALUS = 8, 128, 4  # a v5 VPU: (8, 128) lanes, 4 independent ALUs per lane

# The TPUs a problem's variant may name instead of the book's chip.
TPU_CHOICES = ("v5e", "v5p", "v6e", "v4p", "v3", "tpu7x")
INT8_TPUS = ("v5e", "v5p", "v6e", "v4p", "tpu7x")  # those with a published int8 peak

# Host-shaped v6e slices, smallest first (a v6e pod is at most 16x16).
V6E_SLICES = ((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16))


@solution("02.1", title="A Trillium 8x16 slice by the numbers", unit="FLOP/s", hints=(
    "A slice's peak is one chip's peak times the number of chips.",
    "⟦P = X * Y * C⟧ with one v6e's bf16 peak ⟦C = sb.get_chip('v6e').peak_flops('bf16')⟧.",
))
def v6e_slice_flops(X: int = vary(8, choices=(2, 4, 8, 16)), Y: int = vary(16, choices=(4, 8, 16))) -> float:
    """Peak bf16 FLOP/s of a TPU v6e X x Y slice."""
    return TpuMesh("v6e", X=X, Y=Y).total_flops("bf16")


@solution("02.2", title="An Ironwood slice that holds a trillion-parameter training state", unit="chips", rtol=0.0,
         hints=(
    "The training state is bytes per parameter × parameters; slices grow a whole 4x4x4 cube at a time.",
    "Grow Z a cube at a time until the slice's HBM holds the state, and count its chips: ⟦n = next(16 * z for z in "
    "range(4, 577, 4) if 16 * z * M >= bytes_per_param * params)⟧ with one chip's HBM ⟦M = "
    "sb.get_chip('tpu7x').hbm_bytes⟧.",
))
def tpu7x_training_state_chips(params: float = vary(1e12, 2e11, 5e12),
                               bytes_per_param: int = vary(16, choices=(10, 12, 16, 18, 20))) -> int:
    """Chips in the smallest whole-cube TPU7x 4x4xZ slice whose HBM holds `bytes_per_param` for `params`."""
    state = bytes_per_param * params
    return next(m.n_chips for m in (TpuMesh("tpu7x", X=4, Y=4, Z=z) for z in range(4, 577, 4))
                if m.total_hbm >= state)


@solution("02.3", title="Weight-streaming floor of an int8 405B model on TPU7x", unit="s", hints=(
    "Every chip reads only its own share of the weights, all at once: the floor is one share over one chip's HBM "
    "bandwidth.",
    "One chip's share of the int8 weights over one chip's HBM bandwidth: ⟦t = params * w / n / W⟧ with ⟦w = "
    "sb.units.dtype_bytes('int8')⟧, the 2x2xZ slice's ⟦n = 2 * 2 * Z⟧ chips and ⟦W = "
    "sb.get_chip('tpu7x').hbm_bandwidth⟧.",
))
def tpu7x_weight_streaming_floor(params: float = vary(405e9, 7e10, 1e12), Z: int = vary(2, choices=(1, 2, 4))) -> float:
    """Time for each chip of a TPU7x 2x2xZ slice to read its share of `params` int8 weights from HBM once."""
    mesh = TpuMesh("tpu7x", X=2, Y=2, Z=Z)
    per_chip = params * dtype_bytes("int8") / mesh.n_chips
    return estimate(0, per_chip, mesh.chip).time


@solution("02.4", title="The smallest v6e slice for a 10 ms decode floor", unit="chips", rtol=0.0, hints=(
    "Two conditions: each chip's share of the weights must fit in its HBM, and stream through HBM within the "
    "budget.",
    "Try the host-shaped slices smallest first (every power of two of chips but two) and keep the first where one "
    "chip's share both fits and streams in time: ⟦n = next(2 ** i for i in range(9) if i != 1 and V / 2 ** i <= M "
    "and V / 2 ** i / W <= budget)⟧ with the bf16 weights ⟦V = 2 * params⟧, ⟦M = sb.get_chip('v6e').hbm_bytes⟧ and "
    "⟦W = sb.get_chip('v6e').hbm_bandwidth⟧.",
))
def v6e_slice_for_latency(params: float = vary(405e9, 7e10, 1e12), budget: float = vary(10e-3, 5e-3, 0.04)) -> int:
    """Chips in the smallest host-shaped v6e slice that holds `params` bf16 weights and streams them in `budget`."""
    weights = params * dtype_bytes("bf16")
    for X, Y in V6E_SLICES:
        mesh = TpuMesh("v6e", X=X, Y=Y)
        per_chip = weights / mesh.n_chips
        if per_chip <= mesh.chip.hbm_bytes and estimate(0, per_chip, mesh.chip).time <= budget:
            return mesh.n_chips
    raise AssertionError("no v6e slice is large enough")


@solution("02.5", title="Weights that arrive over DCN", unit="tokens", hints=(
    "The weights now cross the data-centre network: its bandwidth is the W of the roofline.",
    "In bf16 two FLOPs per weight per token meet two bytes per weight, so the critical batch is the critical "
    "intensity against DCN: ⟦B = sb.get_chip(chip).peak_flops('bf16') / sb.get_chip(chip).dcn_bandwidth⟧.",
))
def dcn_critical_batch(chip: str = vary("v5e", choices=("v5e", "v5p", "v6e", "tpu7x"))) -> float:
    """Batch above which a bf16 matmul on `chip` is compute-bound when its bf16 weights stream in over DCN."""
    spec = get_chip(chip)
    return critical_batch(spec, dtype="bf16", bandwidth=spec.dcn_bandwidth)


@solution("02.6", title="Activations that cross PCIe both ways", unit="elements of D", hints=(
    "PCIe is full-duplex: inbound and outbound each get the full bandwidth; the larger direction binds, and here "
    "that is the output [B, 4D].",
    "Per direction the math (two FLOPs per multiply-add over B·D·4D) must outlast the bf16 output's [B, 4D] bytes "
    "over PCIe; B and the four cancel: ⟦D = sb.get_chip(chip).peak_flops('bf16') / "
    "sb.get_chip(chip).pcie_bandwidth⟧.",
))
def pcie_activation_min_width(chip: str = vary("v5e", choices=("v5e", "v5p", "v6e", "v4p", "v3"))) -> float:
    """Smallest D for which X[B, D] @ W[D, 4D] on a v5e, X in and Y out over full-duplex PCIe, is compute-bound.

    The weights stay in HBM. Per direction: FLOPs 2·B·D·F against 2·B·F bytes out (the larger
    direction, F = 4D) or 2·B·D bytes in; the outbound one binds: D > C / W_pcie (bf16: 2 bytes, 2 FLOPs).
    """
    spec = get_chip(chip)
    return critical_intensity(spec, bandwidth=spec.pcie_bandwidth) * dtype_bytes("bf16") / 2


@solution("02.7", title="Corner to corner on a full v5e pod", unit="s", hints=(
    "A full pod wraps around: the corners are neighbours. A point-to-point send pays its hops' latency and streams "
    "over one outgoing link per axis it moves along.",
    "Latency and bandwidth add for a send: ⟦t = hops * 1e-6 + V / (links * W)⟧ with ⟦hops = 2⟧ (one wraparound hop "
    "per axis), ⟦links = 2⟧, the bf16 array ⟦V = 2 * 4 * S * D⟧ and the one-way link ⟦W = "
    "sb.get_chip('v5e').ici_bandwidth⟧.",
))
def v5e_pod_corner_transfer(
        S: int = vary(2048, 256, 8192, step=256), D: int = vary(4096, 1024, 16384, step=1024)) -> float:
    """Send bf16[4, S, D] from chip (0, 0) to chip (15, 15) of a v5e 16x16 pod."""
    nbytes = 4 * S * D * dtype_bytes("bf16")
    return TpuMesh("v5e", X=16, Y=16).transfer_time(nbytes, (0, 0), (15, 15)).time


@solution("02.8", title="A small message on a slice without wraparound", unit="ratio", hints=(
    "A small message is mostly latency: count hops. Without wraparound the corners are far apart; on the full pod "
    "they are neighbours.",
    "Each send costs its hops at a microsecond each plus the bytes over its two outgoing links: ⟦r = (hops * 1e-6 + "
    "V / (2 * W)) / (2e-6 + V / (2 * W))⟧ with ⟦hops = 2 * (n - 1)⟧ on the n x n slice without wraparound, ⟦V = kib "
    "* 1024⟧ and ⟦W = sb.get_chip('v5e').ici_bandwidth⟧.",
))
def small_message_wraparound_ratio(n: int = vary(8, choices=(2, 4, 8)), kib: int = vary(64, 4, 256, step=4)) -> float:
    """`kib` KiB from corner to corner: time on a v5e n x n over time on a v5e 16x16."""
    nbytes = kib * 1024
    small = TpuMesh("v5e", X=n, Y=n).transfer_time(nbytes, (0, 0), (n - 1, n - 1)).time
    full = TpuMesh("v5e", X=16, Y=16).transfer_time(nbytes, (0, 0), (15, 15)).time
    return small / full


@solution("02.9", title="A quarter of a v5p cube", unit="s", hints=(
    "A slice smaller than a full cube has no wraparound: the far corner is several hops away.",
    "Latency and bandwidth add for a send: ⟦t = hops * 1e-6 + V / (links * W)⟧ with ⟦hops = 1 + 1 + 3⟧ (no axis "
    "wraps), ⟦links = 3⟧ (the route moves along all three axes), ⟦V = mib * 2 ** 20⟧ and ⟦W = "
    "sb.get_chip('v5p').ici_bandwidth⟧ one way.",
))
def v5p_partial_cube_transfer(mib: int = vary(1, 1, 64)) -> float:
    """Send `mib` MiB from chip (0, 0, 0) to chip (1, 1, 3) of a v5p 2x2x4 slice."""
    return TpuMesh("v5p", X=2, Y=2, Z=4).transfer_time(mib * 2**20, (0, 0, 0), (1, 1, 3)).time


@solution("02.10", title="The diameter of a v5p 2x4x8 slice", unit="hops", rtol=0.0, hints=(
    "The diameter sums, over the axes, the farthest distance along each; an axis with wraparound halves it.",
    "Ask the slice which axes wrap (only a slice of whole cubes does) and add, per axis, half its size where it "
    "wraps and its size less one where it does not: ⟦d = sum(s // 2 if m.wrap[a] else s - 1 for a, s in "
    "m.axes.items())⟧ with ⟦m = sb.TpuMesh('v5p', X=X, Y=Y, Z=Z)⟧.",
))
def v5p_slice_diameter(X: int = vary(2, choices=(1, 2, 4)), Y: int = vary(4, choices=(2, 4, 8)),
                       Z: int = vary(8, choices=(4, 8, 12, 16))) -> int:
    """The largest hop count between two chips of a v5p X x Y x Z slice."""
    return TpuMesh("v5p", X=X, Y=Y, Z=Z).diameter


@solution("02.11", title="An int8 matmul fed from VMEM on a v5p", unit="tokens", hints=(
    "VMEM feeds the MXU many times faster than HBM: the critical batch drops by that factor.",
    "The int8 critical batch with VMEM as the memory: ⟦B = C / (speedup * W) * w / 2⟧ with ⟦C = "
    "sb.get_chip(chip).peak_flops('int8')⟧, ⟦W = sb.get_chip(chip).hbm_bandwidth⟧, the book's ⟦speedup = 22⟧ and ⟦w "
    "= sb.units.dtype_bytes('int8')⟧.",
))
def v5p_vmem_critical_batch(chip: str = vary("v5p", choices=TPU_CHOICES)) -> float:
    """Batch above which int8[B, D] @ int8[D, F] on `chip` is compute-bound with its weights held in VMEM."""
    spec = get_chip(chip)
    return critical_batch(spec, dtype="int8", bandwidth=VMEM_SPEEDUP * spec.hbm_bandwidth)


def _vpu_flops(clock: float) -> float:
    """Vector FLOP/s of one TensorCore clocked at `clock` Hz: sublanes x lanes x ALUs per lane x clock."""
    return VPU_SUBLANES * VPU_LANES * VPU_ALUS * clock


@solution("02.12", title="The vector unit of a v5e", unit="FLOP/s", hints=(
    "The VPU is a grid of sublanes × lanes with several ALUs per lane, each doing one op per clock.",
    "⟦C = cores * sublanes * lanes * alus * clock⟧ with ⟦cores = sb.get_chip('v5e').cores⟧, ⟦sublanes = 8⟧, ⟦lanes "
    "= 128⟧ and ⟦alus = 4⟧.",
))
def v5e_vpu_flops(clock: float = vary(get_chip("v5e").clock_hz, 9e8, 2.2e9)) -> float:
    """Peak VPU FLOP/s of a v5e chip (one TensorCore, v5-style VPU) clocked at `clock` Hz (the v5e's: 1.5 GHz)."""
    return get_chip("v5e").cores * _vpu_flops(clock)


@solution("02.13", title="How much arithmetic an elementwise op gets for free", unit="FLOPs per element", hints=(
    "An elementwise op is HBM-bound until its VPU work per element costs as long as moving the element in and out.",
    "The break-even is the VPU's FLOP/s times the time one element spends in HBM (read once, written once): ⟦f = "
    "vpu * 2 * sb.units.dtype_bytes(dtype) / W⟧ with ⟦vpu = sb.get_chip('v5e').cores * 8 * 128 * 4 * clock⟧ and ⟦W "
    "= sb.get_chip('v5e').hbm_bandwidth⟧.",
))
def v5e_elementwise_flop_budget(clock: float = vary(get_chip("v5e").clock_hz, 9e8, 2.2e9),
                                dtype: str = vary("bf16", choices=("bf16", "fp32", "int8"))) -> float:
    """FLOPs per element at which a `dtype` elementwise op on a v5e clocked at `clock` Hz turns from HBM-bound
    to VPU-bound."""
    v5e = get_chip("v5e")
    bytes_per_element = 2 * dtype_bytes(dtype)  # read one element, write one
    return v5e.cores * _vpu_flops(clock) * bytes_per_element / v5e.hbm_bandwidth


# --- the book's own problems (How To Scale Your Model, ch. 2, "Worked Problems" and appendix A) ------------


@solution("02.14", title="Book Q1: a floor on sampling latency", unit="s", hints=(
    "Each sampling step reads every weight once; spread over the chips, each reads its share at full HBM speed.",
    "One chip's share of the bf16 weights over its HBM bandwidth: ⟦t = 2 * params / chips / W⟧ with ⟦W = "
    "sb.get_chip('v4p').hbm_bandwidth⟧.",
))
def book_sampling_floor(
        params: float = vary(200e9, 3e10, 1e12), chips: int = vary(32, choices=(8, 16, 32, 64, 128))) -> float:
    """Time to stream a `params`-parameter bf16 model's weights once from HBM, split over `chips` TPU v4p chips."""
    return estimate(0, 2 * params / chips, "v4p").time


@solution("02.15", title="Book Q2: TensorCores in a full v5p pod", unit="TensorCores", rtol=0.0, hints=(
    "A v5p chip is a megacore: two TensorCores per chip.",
    "⟦n = X * Y * Z * sb.get_chip('v5p').cores⟧.",
))
def book_v5p_pod_cores(X: int = vary(16, 4, 16, step=4), Y: int = vary(20, 4, 20, step=4),
                       Z: int = vary(28, 4, 28, step=4)) -> int:
    """TensorCores of a v5p X x Y x Z slice (two per chip)."""
    return TpuMesh("v5p", X=X, Y=Y, Z=Z).cores


@solution("02.16", title="Book Q2: HBM of a full v5p pod", unit="B", hints=(
    "Total HBM is one chip's HBM times the chips.",
    "⟦m = X * Y * Z * sb.get_chip('v5p').hbm_bytes⟧.",
))
def book_v5p_pod_hbm(X: int = vary(16, 4, 16, step=4), Y: int = vary(20, 4, 20, step=4),
                     Z: int = vary(28, 4, 28, step=4)) -> float:
    """Total HBM bytes of a v5p X x Y x Z slice."""
    return TpuMesh("v5p", X=X, Y=Y, Z=Z).total_hbm


@solution("02.17", title="Book Q3: computing straight out of host memory", unit="tokens", hints=(
    "PCIe replaces HBM as the roofline's W; the weights dominate the bytes for B much smaller than D.",
    "In bf16 two FLOPs per weight per token meet two bytes per weight: the critical batch is the v6e's peak over "
    "the PCIe bandwidth, ⟦B = sb.get_chip('v6e').peak_flops('bf16') / W⟧.",
))
def book_pcie_critical_batch(W: float = vary(1.6e10, 8e9, 6.4e10)) -> float:
    """Batch above which a bf16 matmul fed over PCIe (`W` B/s) is compute-bound on one v6e, for B << D."""
    return critical_batch("v6e", bandwidth=W)


@solution("02.18", title="Book Q4 (1): an int8 matmul from HBM", unit="tokens", hints=(
    "Count all three arrays' bytes (one byte each in int8), set the math time equal to the memory time, solve for "
    "B.",
    "The two clocks are linear in B; equal, they give ⟦B = D * F / W / (2 * D * F / C - (D + F) / W)⟧ with ⟦C = "
    "sb.get_chip(chip).peak_flops('int8')⟧ and ⟦W = sb.get_chip(chip).hbm_bandwidth⟧.",
))
def book_hbm_crossover(D: int = vary(4096, 1024, 16384, step=1024), F: int = vary(16384, 4096, 65536, step=1024),
                       chip: str = vary("v5e", choices=INT8_TPUS)) -> float:
    """Exact batch at which int8[B, D] @ int8[D, F] turns compute-bound on `chip`, weights in HBM."""
    return crossover_batch(D, F, chip, "int8")


@solution("02.19", title="Book Q4 (2): the same matmul from VMEM", unit="tokens", hints=(
    "The same equation with VMEM's bandwidth in place of HBM's.",
    "The two clocks are linear in B; equal, they give ⟦B = D * F / W / (2 * D * F / C - (D + F) / W)⟧ with ⟦C = "
    "sb.get_chip(chip).peak_flops('int8')⟧ and VMEM's ⟦W = 22 * sb.get_chip(chip).hbm_bandwidth⟧.",
))
def book_vmem_crossover(D: int = vary(4096, 1024, 16384, step=1024), F: int = vary(16384, 4096, 65536, step=1024),
                        chip: str = vary("v5e", choices=INT8_TPUS)) -> float:
    """The same crossover with VMEM feeding the MXU at 22x the HBM bandwidth."""
    spec = get_chip(chip)
    return crossover_batch(D, F, spec, "int8", bandwidth=VMEM_SPEEDUP * spec.hbm_bandwidth)


@solution("02.20", title="Book Q5: a point-to-point send over ICI", unit="s", hints=(
    "The first byte needs a few hops, but the whole message streams through two outgoing links of the corner chip: "
    "mostly bandwidth.",
    "Latency and bandwidth add for a send: ⟦t = hops * 1e-6 + V / (2 * W)⟧ with ⟦hops = 3 + 3⟧ corner to corner of "
    "a 4x4 without wraparound, the bf16 array ⟦V = 2 * B * S * D⟧ and the one-way link ⟦W = "
    "sb.get_chip('v5e').ici_bandwidth⟧.",
))
def book_corner_send(B: int = vary(8, 1, 64), S: int = vary(128, 64, 1024, step=64),
                     D: int = vary(8192, 1024, 16384, step=1024)) -> float:
    """Time to send bf16[B, S, D] from chip (0, 0) to (3, 3) of a v5e 4x4 (no wraparound)."""
    return TpuMesh("v5e", X=4, Y=4).transfer_time(2 * B * S * D, (0, 0), (3, 3)).time


@solution("02.21", title="Book Q6: the ICI gather into one chip", unit="s", hints=(
    "The corner chip has only two links (no wraparound on a 4x4): everything it receives funnels through them.",
    "All shards but its own cross its two incoming links: ⟦t = N ** 2 * 15 / 16 / (2 * W)⟧ with the int8 matrix's "
    "one byte per value and ⟦W = sb.get_chip('v5e').ici_bandwidth⟧ one way.",
))
def book_gather_into_corner(N: int = vary(128 * 1024, 16384, 262144, step=16384)) -> float:
    """Time for chip (0, 0) of a v5e 4x4 to receive 15 of 16 shards of an int8 [N, N] matrix over its two
    ICI links (one-way each): the slowest stage of the book's hard problem."""
    v5e = get_chip("v5e")
    return estimate(0, N**2 * 15 / 16, v5e, bandwidth=2 * v5e.ici_bandwidth).time


@solution("02.22", title="Book pop quiz: the vector unit of a v5p core", unit="FLOP/s", hints=(
    "One TensorCore's VPU: sublanes × lanes × ALUs, one op each per clock.",
    "⟦C = sublanes * lanes * alus * clock⟧ with ⟦sublanes = 8⟧, ⟦lanes = 128⟧ and ⟦alus = 4⟧.",
))
def book_v5p_vpu_flops(clock: float = vary(get_chip("v5p").clock_hz, 9e8, 2.2e9)) -> float:
    """Peak VPU FLOP/s of one v5p TensorCore clocked at `clock` Hz (the v5p's: 1.75 GHz)."""
    return _vpu_flops(clock)


# --- December-2026 chips (issue #31): TPU7x (Ironwood), after the book's own problems ---


@solution("02.23", title="Ironwood's critical intensity in fp8", unit="FLOPs/byte", hints=(
    "Critical intensity is peak FLOP/s in that dtype over HBM bandwidth.",
    "⟦I = sb.get_chip('tpu7x').peak_flops(dtype) / sb.get_chip('tpu7x').hbm_bandwidth⟧.",
))
def tpu7x_fp8_critical_intensity(dtype: str = vary("fp8", choices=("fp8", "bf16", "int8"))) -> float:
    """FLOPs per byte of HBM traffic a TPU7x needs to be compute-bound in `dtype`."""
    return critical_intensity("tpu7x", dtype)


@solution("02.24", title="An AllGather along one axis of an Ironwood cube", unit="s", hints=(
    "A full cube wraps: a bidirectional ring of four with both directions of each link in use.",
    "The book's ring bound (it drops the exact ring's factor of three quarters): the gathered bf16 array over the "
    "bidirectional link, or the latency if that were longer, ⟦t = max(V / (2 * W), hops * 1e-6)⟧ with ⟦V = 2 * D * "
    "F⟧, ⟦hops = 2⟧ half-way round the ring and ⟦W = sb.get_chip('tpu7x').ici_bandwidth⟧.",
))
def tpu7x_cube_all_gather(
        D: int = vary(8192, 2048, 16384, step=1024), F: int = vary(32768, 8192, 65536, step=1024)) -> float:
    """AllGather of bf16[D, F] along X of a TPU7x 4x4x4 cube (wraparound: a bidirectional ring of 4)."""
    return all_gather(TpuMesh("tpu7x", X=4, Y=4, Z=4), "X", 2 * D * F).time


@solution("02.25", title="The same AllGather at Google's link figure", unit="s", hints=(
    "Only the link bandwidth changes: Google's per-chip figure split over the chip's ports and two directions.",
    "The same ring bound with Google's link: ⟦t = max(V / (2 * W), hops * 1e-6)⟧ with ⟦V = 2 * D * F⟧, ⟦hops = 2⟧ "
    "and ⟦W = 1.2e12 / 6 / 2⟧ one way.",
))
def tpu7x_all_gather_at_googles_links(D: int = vary(8192, 2048, 16384, step=1024),
                                      F: int = vary(32768, 8192, 65536, step=1024)) -> float:
    """Problem 02.24 with each ICI link at what Google's 1.2 TB/s bidirectional per chip over 6 ports gives one
    way (1.0e11 B/s) instead of the book's 9e10 (chips.toml records both, flagged)."""
    chip = get_chip("tpu7x")
    google = chip.replace(ici_bandwidth=chip.readings["ici_bandwidth"].value)
    return all_gather(TpuMesh(google, X=4, Y=4, Z=4), "X", 2 * D * F).time
