"""Problem set 12 — GPUs: the reference solutions of `solutions/12_gpus.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ...collectives import all_gather, all_reduce, all_to_all
from ...hardware.gpu import GpuCluster, get_cluster
from ...hardware.sm import (
    tensor_core_flops_per_cycle,
    vector_add,
)
from ...roofline import matmul
from ...training.book import min_tokens_per_chip, tp_limit
from ...training.pipeline import pipeline_comms
from ..inputs import vary
from . import solution

# LLaMA 3.1-405B's model width and MLP width, used by several problems.
D_405B, F_405B = 16384, 53248
# The MoE dispatch of problems 12.6 and 12.12: 4096 tokens per GPU, D = 7168 in fp8 (1 byte), top-8 routing.
TOKENS_PER_GPU, D_MOE, TOP_K = 4096, 7168, 8


def _moe_dispatch(cluster: GpuCluster, tokens: int = TOKENS_PER_GPU) -> float:
    """Seconds of one top-8 MoE dispatch AllToAll of `tokens` per GPU over every GPU of `cluster`, one expert per
    GPU."""
    return all_to_all(cluster, None, cluster.gpus * tokens * D_MOE, top_k=TOP_K).time


@solution("12.1", title="Integer work per cycle on an A100 tensor core", unit="ops/cycle", hints=(
    "Peak ops/s is spread over the tensor cores (one per SM subpartition, four per SM) and the clock: divide.",
    "⟦o = c.peak_flops(dtype) / (c.cores * 4 * c.clock_hz)⟧ with the boost clock and ⟦c = sb.get_chip(chip)⟧.",
))
def a100_tensor_core_int8_ops_per_cycle(chip: str = vary("a100", choices=("a100", "h100", "h200")),
                                        dtype: str = vary("int8", choices=("int8", "bf16"))) -> float:
    """`dtype` operations one of `chip`'s tensor cores (4 per SM) does each cycle at the boost clock."""
    return tensor_core_flops_per_cycle(chip, dtype, "boost")


@solution("12.2", title="Adding two vectors on an H200", unit="s", hints=(
    "One FLOP per element against two fp32 reads and one write: memory-bound.",
    "The longer clock: ⟦t = max(n / (c.cores * 4 * lanes * c.clock_hz), 12 * n / c.hbm_bandwidth)⟧ with ⟦c = "
    "sb.get_chip(chip)⟧ and ⟦lanes = 16 if chip in ('a100', 'v100') else 32⟧ fp32 lanes per subpartition (Volta and "
    "Ampere have half).",
))
def h200_vector_add(n: int = vary(2**28, 2**24, 2**31, step=2**22),
                    chip: str = vary("h200", choices=("h200", "h100", "a100", "v100"))) -> float:
    """Roofline time of fp32[n] + fp32[n] on `chip`'s CUDA cores (memory-bound)."""
    return vector_add(n, chip).time


@solution("12.3", title="Gathering a weight matrix inside an A100 node", unit="s", hints=(
    "Inside a node every GPU sends through the NVSwitches at its NVLink egress bandwidth.",
    "An AllGather over the node moves (n − one)/n of the array at each GPU's egress: ⟦t = V * (n - 1) / n / W⟧ with "
    "⟦V = 2 * D * F⟧, ⟦n = 8⟧ and ⟦W = sb.get_chip('a100').nvlink_bandwidth⟧.",
))
def a100_node_all_gather(
        D: int = vary(8192, 2048, 16384, step=1024), F: int = vary(28672, 8192, 65536, step=1024)) -> float:
    """AllGather of bf16[D, F] over the 8 GPUs of an A100 node (NVLink 3, 6 NVSwitches)."""
    return all_gather(GpuCluster("a100", gpus=8), "node", 2 * D * F).time


@solution("12.4", title="A gradient AllReduce across an H200 SuperPod", unit="s", hints=(
    "Across nodes the network binds, not NVLink: each node's NICs carry its share of the ring.",
    "An AllReduce is twice a gather, and each level it crosses (the NVLink node, then the network's leaf and spine) "
    "moves (D − one)/D of the array for the D units it joins, at its bandwidth per unit; the slowest level binds: "
    "⟦t = 2 * V * max((l.degree - 1) / (l.degree * l.bandwidth) for l in sb.GpuCluster('h200', "
    "gpus=gpus).span(gpus))⟧ with the bf16 gradients ⟦V = 2 * params⟧.",
))
def h200_pod_gradient_all_reduce(
        params: float = vary(7e9, 1e9, 7e10), gpus: int = vary(1024, 128, 1024, step=128)) -> float:
    """AllReduce of the bf16 gradients of `params` parameters over `gpus` H200s."""
    return all_reduce(GpuCluster("h200", gpus=gpus), None, 2 * params).time


@solution("12.5", title="The same AllReduce with SHARP", unit="s", hints=(
    "In-network reduction sends each byte up once and back once: about half the traffic of a ring.",
    "With SHARP each level a collective crosses moves the array once at its bandwidth per unit, and the slowest "
    "binds: ⟦t = max(V / l.bandwidth for l in sb.GpuCluster('h200', gpus=gpus).span(gpus) if l.degree > 1)⟧ with ⟦V "
    "= 2 * params⟧.",
))
def h200_pod_sharp_all_reduce(
        params: float = vary(7e9, 1e9, 7e10), gpus: int = vary(1024, 128, 1024, step=128)) -> float:
    """The AllReduce of problem 12.4 when NVSwitches and InfiniBand switches reduce in the network."""
    return all_reduce(GpuCluster("h200", gpus=gpus, sharp=True), None, 2 * params).time


@solution("12.6", title="A ragged top-8 dispatch across 32 H800 nodes", unit="s", hints=(
    "Most of each token's copies leave the node: the NICs bind.",
    "At each level of U units, a token's copies leave its unit once for each distinct unit among its experts' "
    "(`ragged_fill`): ⟦t = max(V * (l.units - 1) / l.units ** 2 * sb.collectives.ragged_fill(l.units, 8) / "
    "l.bandwidth for l in sb.GpuCluster('h800', gpus=gpus).span(gpus) if l.degree > 1)⟧ with the fp8 tokens of "
    "every GPU, ⟦V = gpus * tokens * 7168⟧.",
))
def h800_ragged_dispatch(tokens: int = vary(TOKENS_PER_GPU, 512, 16384, step=512),
                         gpus: int = vary(256, 64, 512, step=64)) -> float:
    """Top-8 MoE dispatch of `tokens` fp8 tokens (D = 7168) per GPU over `gpus` H800s, one expert per GPU."""
    return _moe_dispatch(GpuCluster("h800", gpus=gpus), tokens)


@solution("12.7", title="An FSDP gather that stays sharded over 32 GPUs", unit="s", hints=(
    "Each group gathers only its slice over GPUs in different nodes: the NICs bind.",
    "The array stays sharded over an inner axis of thirty-two GPUs, so a unit holding fewer of a group moves that "
    "fraction of it; each level it crosses (the NVLink node, then the network's leaf and spine) moves (D − one)/D "
    "of the array for the D units it joins, at its bandwidth per unit; the slowest level binds: ⟦t = max(V * min(Y, "
    "l.below) / Y * (l.degree - 1) / (l.degree * l.bandwidth) for l in sb.GpuCluster('b200', gpus=1024).span(1024, "
    "Y))⟧ with ⟦V = 2 * D * F⟧ and ⟦Y = 32⟧.",
))
def b200_inner_sharded_all_gather(
        D: int = vary(D_405B, 4096, 32768, step=1024), F: int = vary(F_405B, 16384, 65536, step=1024)) -> float:
    """AllGather over X = 32 of bf16[D_X, F_Y] on a 1024-GPU B200 SuperPod, Y = 32 the inner axis (32 consecutive
    GPUs)."""
    return all_gather(GpuCluster("b200", gpus=1024), None, 2 * D * F, also_sharded=32).time


@solution("12.8", title="Data parallelism for a sparse MoE on a GB200 SuperPod", unit="tokens", hints=(
    "Gradients of all E experts cross the network, but each token does only k experts' FLOPs: the threshold grows "
    "by E / k; a replica filling a whole rack sends through the rack's egress.",
    "⟦B = C / W * E / k⟧ tokens per GPU with ⟦C = sb.get_chip('gb200').peak_flops('bf16')⟧ and one rack's egress ⟦W "
    "= sb.hardware.gpu.get_cluster('gb200-superpod').node_egress⟧.",
))
def gb200_moe_dp_batch(E: int = vary(256, 16, 512, step=16), k: int = vary(8, 1, 16)) -> float:
    """Tokens per GPU above which data parallelism across the 8 NVL72 racks of a GB200 SuperPod is
    compute-bound for an MoE routing each token to k of E experts, each replica filling one 72-GPU rack."""
    return min_tokens_per_chip("dp", get_cluster("gb200-superpod"), model_parallel=72, E=E, k=k)


@solution("12.9", title="How wide tensor parallelism can go in an NVL72 rack", unit="GPUs", hints=(
    "TP moves activations over NVLink each layer; it stays compute-bound while F / Y beats C / W_nvlink.",
    "⟦Y = F * W / C⟧ with ⟦C = sb.get_chip('gb200').peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip('gb200').nvlink_bandwidth⟧.",
))
def gb200_rack_tp_limit(F: int = vary(F_405B, 8192, 65536, step=1024)) -> float:
    """Largest compute-bound tensor-parallel degree for an MLP of width F inside a GB200 NVL72."""
    return tp_limit(F, get_cluster("gb200-nvl72"))


@solution("12.10", title="The smallest batch for a Megatron-style layout on 2048 H200s", unit="tokens", hints=(
    "Model parallelism divides the weights each DP replica syncs, so each GPU needs fewer tokens.",
    "Each replica spans pp whole nodes, and a node's egress carries its share of the gradients: ⟦B = gpus * C / (W "
    "* pp)⟧ with ⟦C = sb.get_chip('h200').peak_flops('bf16')⟧ and ⟦W = sb.GpuCluster('h200', "
    "gpus=gpus).node_egress⟧.",
))
def h200_megatron_min_batch(gpus: int = vary(2048, 256, 4096, step=256), pp: int = vary(4, 1, 16)) -> float:
    """Global batch (tokens) above which 8-way TP x pp-way PP with DP over the rest of `gpus` H200s is
    compute-bound."""
    cluster = GpuCluster("h200", gpus=gpus)
    return min_tokens_per_chip("dp", cluster, model_parallel=8 * pp) * cluster.gpus


@solution("12.11", title="Pipeline sends for LLaMA 3.1-405B", unit="s", hints=(
    "Each microbatch's activations cross every stage boundary; on the critical path, count the sends one microbatch "
    "waits for plus the pipeline's length.",
    "⟦t = (microbatches + stages - 2) * tokens / microbatches * D * 2 / W⟧: the sends on the last microbatch's "
    "path, each one microbatch of bf16 activations over a node's egress, with ⟦D = 16384⟧ and ⟦W = "
    "sb.GpuCluster('h200', gpus=1024).node_egress⟧.",
))
def h200_pipeline_comms(tokens: int = vary(2**19, 2**17, 2**21, step=2**16), stages: int = vary(16, 4, 32, step=4),
                        microbatches: int = vary(64, 16, 256, step=16)) -> float:
    """Critical-path seconds of stage-to-stage sends in one forward pass: `tokens` tokens in `microbatches`
    microbatches through `stages` one-node stages of H200s, bf16 activations of D = 16384."""
    return pipeline_comms(tokens, D_405B, stages, microbatches, GpuCluster("h200", gpus=1024))


@solution("12.12", title="One MoE dispatch: an NVL72 rack against eight H100 nodes", unit="x", hints=(
    "In the rack every byte moves over NVLink; across H100 nodes most bytes take the far slower NICs.",
    "Price each dispatch level by level (at U units a token's copies leave its unit once per distinct unit among "
    "its experts', `ragged_fill`) and divide: ⟦r = h100 / gb200⟧ with ⟦h100 = max(V * (l.units - 1) / l.units ** 2 "
    "* sb.collectives.ragged_fill(l.units, 8) / l.bandwidth for l in sb.GpuCluster('h100', gpus=gpus).span(gpus) if "
    "l.degree > 1)⟧, ⟦gb200 = max(V * (l.units - 1) / l.units ** 2 * sb.collectives.ragged_fill(l.units, 8) / "
    "l.bandwidth for l in sb.GpuCluster('gb200', gpus=gpus).span(gpus) if l.degree > 1)⟧ and the fp8 tokens of "
    "every GPU, ⟦V = gpus * 4096 * 7168⟧.",
))
def nvl72_vs_h100_dispatch(gpus: int = vary(64, 16, 72, step=8)) -> float:
    """How many times longer the top-8 dispatch of problem 12.6's tokens over `gpus` GPUs takes on H100 nodes
    than on `gpus` GPUs of one GB200 NVL72 rack."""
    return _moe_dispatch(GpuCluster("h100", gpus=gpus)) / _moe_dispatch(GpuCluster("gb200", gpus=gpus))


@solution("12.26", title="A thin fp8 matmul on a B300", unit="s", hints=(
    "Thin: memory-bound; fp8 is one byte per value.",
    "The longer clock: ⟦t = max(2 * B * D * F / C, (B * D + D * F + B * F) / W)⟧ with ⟦C = "
    "sb.get_chip('b300').peak_flops('fp8')⟧ and ⟦W = sb.get_chip('b300').hbm_bandwidth⟧.",
))
def b300_thin_fp8_matmul(B: int = vary(128, 16, 256, step=16), D: int = vary(8192, 2048, 16384, step=1024),
                         F: int = vary(28672, 8192, 65536, step=1024)) -> float:
    """Roofline time of fp8[B, D] x fp8[D, F] on one B300 (bound by HBM)."""
    return matmul(B, D, F, "b300", "fp8").time


@solution("12.27", title="A gradient AllReduce inside one GB300 NVL72 rack", unit="s", hints=(
    "All the rack's GPUs share one NVLink domain: a ring AllReduce at NVLink egress.",
    "Twice a gather: ⟦t = 2 * nbytes * (n - 1) / n / W⟧ with ⟦n = 72⟧ and ⟦W = "
    "sb.get_chip('gb300').nvlink_bandwidth⟧.",
))
def gb300_rack_all_reduce(nbytes: float = vary(1.4e10, 1e9, 1e11)) -> float:
    """AllReduce of `nbytes` bytes (bf16 gradients) over the 72 GPUs of one GB300 NVL72 rack."""
    return all_reduce(get_cluster("gb300-nvl72"), None, nbytes).time


@solution("12.28", title="Four-way tensor parallelism: an Infinity Fabric mesh against NVSwitch", unit="x", hints=(
    "A switchless mesh gives a group of g GPUs only the links to its g − one peers; NVSwitch gives all of a GPU's "
    "egress.",
    "The same gather, so only the bandwidths differ: ⟦r = W_b300 / W_mi355x⟧ with the MI355X's links to the group, "
    "⟦W_mi355x = min(E, E / 7 * (gpus - 1))⟧, ⟦E = sb.get_chip('mi355x').nvlink_bandwidth⟧ over its seven links, "
    "and ⟦W_b300 = sb.get_chip('b300').nvlink_bandwidth⟧.",
))
def mesh_against_switch_tp4(gpus: int = vary(4, choices=(2, 4, 8))) -> float:
    """How many times longer a 1 GB AllGather over `gpus` GPUs takes in an MI355X node (a switchless mesh: gpus - 1
    of its 7 links) than in a B300 node (its whole NVLink egress through the NVSwitches)."""
    return (all_gather(GpuCluster("mi355x", gpus=gpus), None, 1e9).time
            / all_gather(GpuCluster("b300", gpus=gpus), None, 1e9).time)
