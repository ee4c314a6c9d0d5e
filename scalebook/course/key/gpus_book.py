"""Problem set 12 — GPUs, the book's own questions: the reference solutions of `solutions/12_gpus.md` for the
quizzes and pop quizzes of *How To Scale Your Model*'s GPU chapter (12.13-12.25, 12.29-12.39). `gpus.py` holds the
set's own problems; each function computes its answer with scalebook from the inputs the problem states.
"""

from __future__ import annotations

import math

from ...collectives import all_gather, all_reduce, all_to_all, gpu_levels
from ...hardware.chips import get_chip
from ...hardware.gpu import GpuCluster
from ...hardware.sm import (
    clock_from_vector_flops,
    cuda_cores,
    on_chip_bytes,
    vector_add,
    vector_flops,
)
from ...models import get_model
from ...roofline import critical_intensity, matmul
from ...training.book import min_tokens_per_chip
from ...training.planner import check_parallelism
from ..inputs import vary
from . import solution


@solution("12.13", title="Book Q1.1: the H100's fp32 CUDA cores", unit="cores", rtol=0.0, hints=(
    "An SM has four subpartitions, each with its own fp32 lanes.",
    "⟦n = sb.get_chip(chip).cores * 4 * lanes⟧ with ⟦lanes = 16 if chip in ('a100', 'v100') else 32⟧ fp32 lanes per "
    "subpartition (Volta and Ampere have half).",
))
def book_h100_cuda_cores(chip: str = vary("h100", choices=("h100", "h200", "a100", "b200"))) -> float:
    """fp32 lanes of `chip`: SMs x 4 subpartitions x 32 lanes."""
    return cuda_cores(chip)


@solution("12.14", title="Book Q1.3: the H100's peak arithmetic intensity", unit="FLOPs/byte", hints=(
    "Peak intensity is peak FLOP/s over HBM bandwidth.",
    "⟦I = sb.get_chip(chip).peak_flops('bf16') / sb.get_chip(chip).hbm_bandwidth⟧ (dense peak).",
))
def book_h100_peak_intensity(
        chip: str = vary("h100", choices=("h100", "h200", "a100", "b200", "mi300x", "gb200", "v100"))) -> float:
    """bf16 FLOP/s over HBM bytes/s of `chip`."""
    return critical_intensity(chip, "bf16")


@solution("12.15", title="Book Q1.4: a thin fp16 matmul on a B200", unit="s", hints=(
    "A thin matmul is memory-bound: count the bytes of all three arrays.",
    "The longer clock: ⟦t = max(2 * B * D * F / C, 2 * (B * D + D * F + B * F) / W)⟧ with ⟦C = "
    "sb.get_chip('b200').peak_flops('fp16')⟧ and ⟦W = sb.get_chip('b200').hbm_bandwidth⟧.",
))
def book_b200_thin_matmul(B: int = vary(64, 8, 128, step=8), D: int = vary(4096, 1024, 16384, step=1024),
                          F: int = vary(8192, 1024, 32768, step=1024)) -> float:
    """Roofline time of fp16[B, D] x fp16[D, F] on one B200 (bound by HBM)."""
    return matmul(B, D, F, "b200", "fp16").time


@solution("12.16", title="Book Q1.6: the B200's clock from its vector FLOPs", unit="Hz", hints=(
    "Each CUDA core does one fused multiply-add (two FLOPs) per cycle.",
    "⟦f = flops / (2 * sb.get_chip('b200').cores * 4 * 32)⟧: two FLOPs per cycle on every fp32 lane of every SM.",
))
def book_b200_clock(flops: float = vary(80e12, 40e12, 120e12)) -> float:
    """Clock at which the B200's 18,944 CUDA cores deliver `flops` FLOP/s of fp32, an FMA counted as two FLOPs."""
    return clock_from_vector_flops("b200", flops)


@solution("12.17", title="Book Q1.7: adding two long vectors on an H100", unit="s", hints=(
    "Two reads and one write of fp32 per element: memory-bound.",
    "The longer clock: ⟦t = max(n / (c.cores * 4 * 32 * c.clock_hz), 12 * n / c.hbm_bandwidth)⟧ with ⟦c = "
    "sb.get_chip('h100')⟧.",
))
def book_h100_vector_add(n: int = vary(2**30, 2**24, 2**32, step=2**22)) -> float:
    """Roofline time of fp32[n] + fp32[n] on an H100 (12 bytes per element through HBM)."""
    return vector_add(n, "h100").time


@solution("12.18", title="Book Q2.3: an AllGather inside an H100 node", unit="s", hints=(
    "Inside the node each GPU sends at its full NVLink egress through the switches.",
    "⟦t = V * (n - 1) / n / W⟧ with ⟦V = 2 * B * F⟧, ⟦n = 8⟧ and ⟦W = sb.get_chip('h100').nvlink_bandwidth⟧.",
))
def book_node_all_gather(
        B: int = vary(4096, 512, 16384, step=512), F: int = vary(65536, 8192, 131072, step=8192)) -> float:
    """AllGather of bf16[B, F] over the 8 GPUs of an H100 node, with the ring's 7/8."""
    return all_gather(GpuCluster("h100", gpus=8), "node", 2 * B * F).time


@solution("12.19", title="Book Q3.1: the bandwidth into one scalable unit", unit="B/s", hints=(
    "The leaf switches take one cable per GPU from each node of the scalable unit.",
    "⟦w = nodes * sb.GpuCluster('h100', gpus=1024).node_egress⟧ with the unit's ⟦nodes = 32⟧: each node brings its "
    "NICs' egress.",
))
def book_su_bandwidth() -> float:
    """Bytes/s the leaf switches of one 32-node scalable unit of the H100 SuperPod take from its nodes."""
    levels = {row["level"]: row for row in GpuCluster("h100", gpus=1024).levels_table().rows}
    return levels["leaf"]["cable B/s"]


@solution("12.20", title="Book PQ1: an AllGather of activations on 8 H100s", unit="s", hints=(
    "Small arrays inside one node: NVLink egress (the ideal model has no latency term).",
    "⟦t = V * (n - 1) / n / W⟧ with ⟦V = 2 * B * D⟧, ⟦n = 8⟧ and ⟦W = sb.get_chip('h100').nvlink_bandwidth⟧.",
))
def book_pq1_all_gather(
        B: int = vary(1024, 128, 8192, step=128), D: int = vary(16384, 2048, 32768, step=1024)) -> float:
    """AllGather of bf16[B, D] over an 8-GPU H100 node, with the ring's 7/8."""
    return all_gather(GpuCluster("h100", gpus=8), None, 2 * B * D).time


@solution("12.21", title="Book Q4.5: an AllGather over exactly two nodes", unit="s", hints=(
    "Per level: within each node over NVLink, then between the two nodes over the NICs; the slower level binds.",
    "Each level it crosses (the NVLink node, then the network's leaf and spine) moves (D − one)/D of the array for "
    "the D units it joins, at its bandwidth per unit; the slowest level binds: ⟦t = max(nbytes * (l.degree - 1) / "
    "(l.degree * l.bandwidth) for l in sb.GpuCluster('h100', gpus=16).span(16))⟧.",
))
def book_two_node_all_gather(nbytes: float = vary(1e9, 1e8, 1e10)) -> float:
    """AllGather of `nbytes` bytes over 16 H100s in two nodes, in the per-level form (the node's NVLink binds)."""
    return all_gather(GpuCluster("h100", gpus=16), None, nbytes).time


@solution("12.22", title="Book Q4.4: a SHARP AllReduce reduced only at the spine", unit="s", hints=(
    "Each GPU reduces only its shard; SHARP sends it up once and down once, and only the spine joins GPUs of one "
    "reduction.",
    "The array stays sharded over an inner axis of ⟦Y = 256⟧ GPUs; with SHARP each level a reduction crosses moves "
    "its share once at its bandwidth per unit: ⟦t = max(V * min(Y, l.below) / Y / l.bandwidth for l in "
    "sb.GpuCluster('h100', gpus=1024, sharp=True).span(1024, Y) if l.degree > 1)⟧ with ⟦V = 2 * D * F⟧.",
))
def book_spine_all_reduce(
        D: int = vary(8192, 2048, 16384, step=1024), F: int = vary(32768, 8192, 65536, step=1024)) -> float:
    """SHARP AllReduce of bf16[D, F] over 1024 H100s, the array also sharded 256 ways (one copy per SU)."""
    return all_reduce(GpuCluster("h100", gpus=1024, sharp=True), None, 2 * D * F, also_sharded=256).time


@solution("12.23", title="Book Q5.1: data parallelism across B200 nodes", unit="tokens", hints=(
    "Across nodes the gradient AllReduce crosses the network: compare the GPU's FLOP/s with what it can send.",
    "Each GPU sends at the smaller of its NVLink egress and its node's network egress: ⟦B = "
    "c.chip.peak_flops('bf16') / min(c.gpu_bandwidth, c.node_egress)⟧ with ⟦c = sb.GpuCluster(chip, gpus=1024)⟧.",
))
def book_b200_dp_batch(chip: str = vary("b200", choices=("b200", "h100", "h200", "a100"))) -> float:
    """Tokens per GPU that keep plain data parallelism compute-bound across the nodes of a `chip` SuperPod."""
    return min_tokens_per_chip("dp", GpuCluster(chip, gpus=1024))


@solution("12.24", title="Book Q5.2: LLaMA 3-70B on 4096 H100s", unit="s", hints=(
    "Total training FLOPs over the cluster's achieved FLOP/s.",
    "⟦t = 6 * sb.get_model('llama3-70b').matmul_params() * tokens / (gpus * C * mfu)⟧ with the book's ⟦C = 990e12⟧.",
))
def book_llama70_training_time(tokens: float = vary(15e12, 1e12, 3e13), gpus: int = vary(4096, 512, 16384, step=512),
                               mfu: float = vary(0.45, 0.3, 0.6)) -> float:
    """Seconds to train LLaMA 3-70B on `tokens` tokens with `gpus` H100s at `mfu` MFU (990 TFLOP/s bf16 each)."""
    return get_model("llama3-70b").flops_per_token() * tokens / (gpus * 990e12 * mfu)


@solution("12.25", title="Book Q5.3: Megatron-LM's 70B layout", unit="tokens", hints=(
    "Model-parallel GPUs share their tokens: the batch is split over every GPU, whatever the layout.",
    "⟦t = seqs * 4096 / gpus⟧: the batch's tokens (sequences of the run's length) over every GPU.",
))
def book_megatron_70b_tokens(
        seqs: int = vary(384, 64, 2048, step=64), gpus: int = vary(768, 256, 4096, step=256)) -> float:
    """Tokens per GPU of the 70B configuration: `seqs` sequences of 4096 tokens on `gpus` H100s, 16-way model
    parallel."""
    return check_parallelism(GpuCluster("h100", gpus=gpus), seqs * 4096, tp=16)["tokens/GPU"]


@solution("12.29", title="Book Q1.2: the CUDA cores' fp32 rate", unit="FLOP/s", hints=(
    "One operation per lane per cycle: lanes times the clock (the spec sheet counts a fused multiply-add twice).",
    "⟦f = c.cores * 4 * lanes * (c.clock_hz if clock == 'boost' else c.base_clock_hz)⟧ with ⟦c = sb.get_chip(chip)⟧ "
    "and ⟦lanes = 16 if chip in ('a100', 'v100') else 32⟧ fp32 lanes per subpartition (Volta and Ampere have half).",
))
def book_cuda_core_flops(chip: str = vary("h100", choices=("h100", "h200", "a100", "v100")),
                         clock: str = vary("base", choices=("base", "boost"))) -> float:
    """fp32 FLOP/s of `chip`'s CUDA cores at its `clock` clock, one operation per lane per cycle."""
    return vector_flops(chip, clock)


@solution("12.30", title="Book Q1.4: the wider matmul on a B200", unit="s", hints=(
    "At a larger batch the matmul's FLOPs grow faster than its bytes: check which clock is longer.",
    "⟦t = max(2 * B * D * F / C, 2 * (B * D + D * F + B * F) / W)⟧ with ⟦C = "
    "sb.get_chip('b200').peak_flops('fp16')⟧ and ⟦W = sb.get_chip('b200').hbm_bandwidth⟧.",
))
def book_b200_wide_matmul(B: int = vary(512, 256, 4096, step=256), D: int = vary(4096, 1024, 16384, step=1024),
                          F: int = vary(8192, 2048, 32768, step=1024)) -> float:
    """Roofline time of fp16[B, D] x fp16[D, F] on one B200."""
    return matmul(B, D, F, "b200", "fp16").time


@solution("12.31", title="Book Q1.5: the fast memory on an H100's chip", unit="B", hints=(
    "Every SM has its own shared memory (SMEM/L1) and its own register file: add them over the SMs.",
    "⟦b = c.cores * (c.smem_bytes + c.register_bytes)⟧ with ⟦c = sb.get_chip(chip)⟧.",
))
def book_on_chip_bytes(chip: str = vary("h100", choices=("h100", "h200", "a100", "b200"))) -> float:
    """Bytes of shared memory and registers across all of `chip`'s SMs."""
    return on_chip_bytes(chip)["total"]


@solution("12.32", title="Book Q5.2 (1): the fewest H100s for LLaMA 3-70B's weights and optimizer", unit="GPUs",
         rtol=0.0, hints=(
    "bf16 weights and fp32 Adam moments per parameter; divide by one GPU's HBM and round up.",
    "⟦n = ceil(10 * sb.get_model(model).param_count() / sb.get_chip(chip).hbm_bytes)⟧: two bytes of weight and "
    "eight of moments per parameter.",
))
def book_fewest_gpus(model: str = vary("llama3-70b", choices=("llama3-70b", "llama3-8b", "llama2-13b", "llama3-405b")),
                     chip: str = vary("h100", choices=("h100", "h200", "b200", "a100"))) -> int:
    """Fewest `chip`s whose HBM holds `model`'s bf16 weights and fp32 Adam moments (10 bytes per parameter)."""
    return math.ceil(10 * get_model(model).param_count() / get_chip(chip).hbm_bytes)


@solution("12.33", title="Book Q2.1: what an 8-GPU node carries", unit="B/s", hints=(
    "Compare what the GPUs can send with what the NVSwitches can take: the smaller bounds the node.",
    "⟦w = min(8 * c.gpu_bandwidth, c.nvswitches * c.nvswitch_bandwidth)⟧ with ⟦c = sb.GpuCluster(chip, gpus=8)⟧.",
))
def book_node_bandwidth(chip: str = vary("h100", choices=("h100", "h200", "a100", "b200"))) -> float:
    """Bytes/s one 8-GPU `chip` node's NVLink fabric carries, one way."""
    return GpuCluster(chip, gpus=8).node_bandwidth


@solution("12.34", title="Book Q2.2: the bisection bandwidth of that node", unit="B/s", hints=(
    "Across a cut into two halves, each GPU of one half sends at its full egress, in both directions.",
    "⟦w = 8 / 2 * sb.get_chip(chip).nvlink_bandwidth * 2⟧: half the node's GPUs, each way.",
))
def book_node_bisection(chip: str = vary("h100", choices=("h100", "h200", "a100", "b200"))) -> float:
    """Bytes/s across a cut of one 8-GPU `chip` node into two halves, both directions."""
    return GpuCluster(chip, gpus=8).node_bisection


@solution("12.35", title="Book PQ2: an AllToAll of activations inside one 8xH100 node", unit="s", hints=(
    "Inside a node every GPU reaches every other through the NVSwitches: each sends all but its own N-th of its "
    "shard at egress.",
    "⟦t = V / n * (n - 1) / n / W⟧ with ⟦V = 2 * B * N⟧, ⟦n = 8⟧ and ⟦W = sb.get_chip('h100').nvlink_bandwidth⟧.",
))
def book_node_all_to_all(B: int = vary(16384, 1024, 65536, step=1024), N: int = vary(8192, 1024, 16384, step=1024)
                         ) -> float:
    """AllToAll_{X->N} of bf16[B_X, N] over the 8 GPUs of one H100 node: every GPU keeps 1/8 of its shard."""
    return all_to_all(GpuCluster("h100", gpus=8), None, 2 * B * N).time


@solution("12.36", title="Book PQ3: an AllGather over one scalable unit of 256 H100s", unit="s", hints=(
    "Gathered over all the GPUs of a scalable unit, each node's link to its leaf switches is the bottleneck.",
    "Each level it crosses (the NVLink node, then the network's leaf and spine) moves (D − one)/D of the array for "
    "the D units it joins, at its bandwidth per unit; the slowest level binds: ⟦t = max(V * (l.degree - 1) / "
    "(l.degree * l.bandwidth) for l in sb.GpuCluster('h100', gpus=256).span(256))⟧ with ⟦V = 2 * D * F⟧.",
))
def book_su_all_gather(D: int = vary(8192, 2048, 16384, step=1024), F: int = vary(32768, 8192, 65536, step=1024)
                       ) -> float:
    """AllGather_X of bf16[D_X, F] over the 256 GPUs of one SU (32 nodes of 8 under 8 leaf switches)."""
    return all_gather(GpuCluster("h100", gpus=256), None, 2 * D * F).time


@solution("12.37", title="Book Q4.2: what SHARP saves an AllReduce inside one node", unit="x", hints=(
    "With SHARP the NVSwitches add: each GPU sends its bytes up once and gets the sum back once.",
    "Without SHARP an AllReduce is twice a gather, (g − one)/g of the array each way; with it, the array once: ⟦r = "
    "2 * (gpus - 1) / gpus⟧.",
))
def book_sharp_speedup(gpus: int = vary(8, choices=(2, 4, 8))) -> float:
    """How many times faster a 1 GB AllReduce over `gpus` H100s of one node runs when the switches reduce (SHARP)."""
    return (all_reduce(GpuCluster("h100", gpus=gpus), None, 1e9).time
            / all_reduce(GpuCluster("h100", gpus=gpus, sharp=True), None, 1e9).time)


@solution("12.38", title="Book Q4.3: a SHARP AllReduce of a weight split over an inner axis", unit="s", hints=(
    "Each GPU of the node holds a shard of F: only that part is reduced, once up and once down at egress.",
    "⟦t = 2 * D * F / Y / sb.get_chip('h100').nvlink_bandwidth⟧: with SHARP the bf16 shard crosses each GPU's "
    "egress once.",
))
def book_sharp_node_all_reduce(D: int = vary(8192, 2048, 16384, step=1024), F: int = vary(32768, 8192, 65536,
                               step=1024), Y: int = vary(4, choices=(1, 2, 4, 8))) -> float:
    """AllReduce(bf16[D, F_Y]{U_X}) over the 8 GPUs of one H100 node with SHARP: each reduces 2DF/Y bytes."""
    return all_reduce(GpuCluster("h100", gpus=8, sharp=True), None, 2 * D * F / Y).time


@solution("12.39", title="Book Q4.1: what the spine carries during an AllGather across a scalable unit", unit="s",
         hints=(
    "Each node switch takes its node's share up once; the spine takes every node's share and sends each node the "
    "rest.",
    "The leaf level joins the nodes: ⟦t = nbytes * (nodes - 1) / (nodes * W)⟧ with a node's egress ⟦W = "
    "sb.GpuCluster('h100', gpus=8 * nodes).node_egress⟧.",
))
def book_su_spine_all_gather(nbytes: float = vary(1e9, 1e8, 1e10),
                             nodes: int = vary(32, choices=(2, 4, 8, 16, 32))) -> float:
    """Seconds the spine level takes in an AllGather of `nbytes` bytes over `nodes` 8-GPU H100 nodes of one SU."""
    levels = gpu_levels("all_gather", GpuCluster("h100", gpus=8 * nodes), None, nbytes)
    return next(seconds for name, _, _, seconds in levels if name == "leaf")
