"""Problem set 12 — GPUs: the reference solutions of `solutions/12_gpus.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml`) instead of freezing numbers. Answers are in SI base units.
"""

from __future__ import annotations

from ..collectives import all_gather, all_reduce, all_to_all
from ..hardware.gpu import GpuCluster, get_cluster
from ..hardware.sm import clock_from_vector_flops, cuda_cores, tensor_core_flops_per_cycle, vector_add
from ..models import get_model
from ..roofline import critical_intensity, matmul
from ..training.book import min_tokens_per_chip, tp_limit
from ..training.pipeline import pipeline_comms
from ..training.planner import check_parallelism
from . import problem

# LLaMA 3.1-405B's model width and MLP width, used by several problems.
D_405B, F_405B = 16384, 53248
# The MoE dispatch of problems 12.6 and 12.12: 4096 tokens per GPU, D = 7168 in fp8 (1 byte), top-8 routing.
TOKENS_PER_GPU, D_MOE, TOP_K = 4096, 7168, 8


def _moe_dispatch(cluster: GpuCluster) -> float:
    """Seconds of one top-8 MoE dispatch AllToAll over every GPU of `cluster`, one expert per GPU."""
    return all_to_all(cluster, None, cluster.gpus * TOKENS_PER_GPU * D_MOE, top_k=TOP_K).time


@problem("12.1", title="Integer work per cycle on an A100 tensor core", unit="ops/cycle")
def a100_tensor_core_int8_ops_per_cycle() -> float:
    """int8 operations one of the A100's 4 x 108 tensor cores does each cycle at the 1.41 GHz boost clock."""
    return tensor_core_flops_per_cycle("a100", "int8", "boost")


@problem("12.2", title="Adding two vectors on an H200", unit="s")
def h200_vector_add() -> float:
    """Roofline time of fp32[2**28] + fp32[2**28] on an H200's CUDA cores (memory-bound)."""
    return vector_add(2**28, "h200").time


@problem("12.3", title="Gathering a weight matrix inside an A100 node", unit="s")
def a100_node_all_gather() -> float:
    """AllGather of bf16[8192, 28672] over the 8 GPUs of an A100 node (NVLink 3, 6 NVSwitches)."""
    return all_gather(GpuCluster("a100", gpus=8), "node", 2 * 8192 * 28672).time


@problem("12.4", title="A gradient AllReduce across an H200 SuperPod", unit="s")
def h200_pod_gradient_all_reduce() -> float:
    """AllReduce of the bf16 gradients of 7e9 parameters over 1024 H200s (128 nodes, 4 scalable units)."""
    return all_reduce(GpuCluster("h200", gpus=1024), None, 2 * 7e9).time


@problem("12.5", title="The same AllReduce with SHARP", unit="s")
def h200_pod_sharp_all_reduce() -> float:
    """The AllReduce of problem 12.4 when NVSwitches and InfiniBand switches reduce in the network."""
    return all_reduce(GpuCluster("h200", gpus=1024, sharp=True), None, 2 * 7e9).time


@problem("12.6", title="A ragged top-8 dispatch across 32 H800 nodes", unit="s")
def h800_ragged_dispatch() -> float:
    """Top-8 MoE dispatch of 4096 fp8 tokens (D = 7168) per GPU over 256 H800s, one expert per GPU."""
    return _moe_dispatch(GpuCluster("h800", gpus=256))


@problem("12.7", title="An FSDP gather that stays sharded over 32 GPUs", unit="s")
def b200_inner_sharded_all_gather() -> float:
    """AllGather over X = 32 of LLaMA 3.1-405B's bf16[D_X, F_Y] on a 1024-GPU B200 SuperPod, Y = 32 the inner
    axis (32 consecutive GPUs)."""
    return all_gather(GpuCluster("b200", gpus=1024), None, 2 * D_405B * F_405B, also_sharded=32).time


@problem("12.8", title="Data parallelism for a sparse MoE on a GB200 SuperPod", unit="tokens")
def gb200_moe_dp_batch() -> float:
    """Tokens per GPU above which data parallelism across the 8 NVL72 racks of a GB200 SuperPod is
    compute-bound for an MoE routing each token to 8 of 256 experts, each replica filling one 72-GPU rack."""
    return min_tokens_per_chip("dp", get_cluster("gb200-superpod"), model_parallel=72, E=256, k=8)


@problem("12.9", title="How wide tensor parallelism can go in an NVL72 rack", unit="GPUs")
def gb200_rack_tp_limit() -> float:
    """Largest compute-bound tensor-parallel degree for LLaMA 3.1-405B's MLP (F = 53248) inside a GB200 NVL72."""
    return tp_limit(F_405B, get_cluster("gb200-nvl72"))


@problem("12.10", title="The smallest batch for a Megatron-style layout on 2048 H200s", unit="tokens")
def h200_megatron_min_batch() -> float:
    """Global batch (tokens) above which 8-way TP x 4-way PP with DP over the rest of 2048 H200s is
    compute-bound."""
    cluster = GpuCluster("h200", gpus=2048)
    return min_tokens_per_chip("dp", cluster, model_parallel=8 * 4) * cluster.gpus


@problem("12.11", title="Pipeline sends for LLaMA 3.1-405B", unit="s")
def h200_pipeline_comms() -> float:
    """Critical-path seconds of stage-to-stage sends in one forward pass: 2**19 tokens in 64 microbatches
    through 16 one-node stages of H200s, bf16 activations of D = 16384."""
    return pipeline_comms(2**19, D_405B, 16, 64, GpuCluster("h200", gpus=1024))


@problem("12.12", title="One MoE dispatch: an NVL72 rack against eight H100 nodes", unit="x")
def nvl72_vs_h100_dispatch() -> float:
    """How many times longer the top-8 dispatch of problem 12.6's tokens over 64 GPUs takes on 8 H100 nodes
    than on 64 GPUs of one GB200 NVL72 rack."""
    return _moe_dispatch(GpuCluster("h100", gpus=64)) / _moe_dispatch(GpuCluster("gb200", gpus=64))


# --- the book's own problems (How To Scale Your Model, ch. 12, its quizzes and pop quizzes) ------------------------

@problem("12.13", title="Book Q1.1: the H100's fp32 CUDA cores", unit="cores", rtol=0.0)
def book_h100_cuda_cores() -> float:
    """fp32 lanes of an H100: 132 SMs x 4 subpartitions x 32 lanes."""
    return cuda_cores("h100")


@problem("12.14", title="Book Q1.3: the H100's peak arithmetic intensity", unit="FLOPs/byte")
def book_h100_peak_intensity() -> float:
    """bf16 FLOP/s over HBM bytes/s of an H100."""
    return critical_intensity("h100", "bf16")


@problem("12.15", title="Book Q1.4: a thin fp16 matmul on a B200", unit="s")
def book_b200_thin_matmul() -> float:
    """Roofline time of fp16[64, 4096] x fp16[4096, 8192] on one B200 (bound by HBM)."""
    return matmul(64, 4096, 8192, "b200", "fp16").time


@problem("12.16", title="Book Q1.6: the B200's clock from its vector FLOPs", unit="Hz")
def book_b200_clock() -> float:
    """Clock at which 18,944 CUDA cores deliver 80 TFLOP/s of fp32, a fused multiply-add counted as two FLOPs."""
    return clock_from_vector_flops("b200", 80e12)


@problem("12.17", title="Book Q1.7: adding two long vectors on an H100", unit="s")
def book_h100_vector_add() -> float:
    """Roofline time of fp32[2**30] + fp32[2**30] on an H100 (12 bytes per element through HBM)."""
    return vector_add(2**30, "h100").time


@problem("12.18", title="Book Q2.3: an AllGather inside an H100 node", unit="s")
def book_node_all_gather() -> float:
    """AllGather of bf16[4096, 65536] over the 8 GPUs of an H100 node, with the ring's 7/8."""
    return all_gather(GpuCluster("h100", gpus=8), "node", 2 * 4096 * 65536).time


@problem("12.19", title="Book Q3.1: the bandwidth into one scalable unit", unit="B/s")
def book_su_bandwidth() -> float:
    """Bytes/s the leaf switches of one 32-node scalable unit of the H100 SuperPod take from its nodes."""
    levels = {row["level"]: row for row in GpuCluster("h100", gpus=1024).levels_table().rows}
    return levels["leaf"]["cable B/s"]


@problem("12.20", title="Book PQ1: an AllGather of activations on 8 H100s", unit="s")
def book_pq1_all_gather() -> float:
    """AllGather of bf16[1024, 16384] over an 8-GPU H100 node, with the ring's 7/8."""
    return all_gather(GpuCluster("h100", gpus=8), None, 2 * 1024 * 16384).time


@problem("12.21", title="Book Q4.5: an AllGather over exactly two nodes", unit="s")
def book_two_node_all_gather() -> float:
    """AllGather of 1 GB over 16 H100s in two nodes, in the per-level form (the node's NVLink binds)."""
    return all_gather(GpuCluster("h100", gpus=16), None, 1e9).time


@problem("12.22", title="Book Q4.4: a SHARP AllReduce reduced only at the spine", unit="s")
def book_spine_all_reduce() -> float:
    """SHARP AllReduce of bf16[8192, 32768] over 1024 H100s, the array also sharded 256 ways (one copy per SU)."""
    return all_reduce(GpuCluster("h100", gpus=1024, sharp=True), None, 2 * 8192 * 32768, also_sharded=256).time


@problem("12.23", title="Book Q5.1: data parallelism across B200 nodes", unit="tokens")
def book_b200_dp_batch() -> float:
    """Tokens per GPU that keep plain data parallelism compute-bound across the nodes of a B200 SuperPod."""
    return min_tokens_per_chip("dp", GpuCluster("b200", gpus=1024))


@problem("12.24", title="Book Q5.2: LLaMA 3-70B on 4096 H100s", unit="s")
def book_llama70_training_time() -> float:
    """Seconds to train LLaMA 3-70B on 15T tokens with 4096 H100s at 45% MFU (990 TFLOP/s bf16 each)."""
    return get_model("llama3-70b").flops_per_token() * 15e12 / (4096 * 990e12 * 0.45)


@problem("12.25", title="Book Q5.3: Megatron-LM's 70B layout", unit="tokens")
def book_megatron_70b_tokens() -> float:
    """Tokens per GPU of the 70B configuration: 384 sequences of 4096 tokens on 768 H100s, 16-way model parallel."""
    return check_parallelism(GpuCluster("h100", gpus=768), 384 * 4096, tp=16)["tokens/GPU"]


# --- December-2026 chips (issue #31): Blackwell Ultra and an Infinity Fabric mesh, after the book's problems ---
@problem("12.26", title="A thin fp8 matmul on a B300", unit="s")
def b300_thin_fp8_matmul() -> float:
    """Roofline time of fp8[128, 8192] x fp8[8192, 28672] on one B300 (bound by HBM)."""
    return matmul(128, 8192, 28672, "b300", "fp8").time


@problem("12.27", title="A gradient AllReduce inside one GB300 NVL72 rack", unit="s")
def gb300_rack_all_reduce() -> float:
    """AllReduce of 1.4e10 bytes (bf16 gradients of a 7B model) over the 72 GPUs of one GB300 NVL72 rack."""
    return all_reduce(get_cluster("gb300-nvl72"), None, 1.4e10).time


@problem("12.28", title="Four-way tensor parallelism: an Infinity Fabric mesh against NVSwitch", unit="x")
def mesh_against_switch_tp4() -> float:
    """How many times longer a 1 GB AllGather over 4 GPUs takes on half an MI355X node (a switchless mesh: 3 of
    its 7 links) than on half a B300 node (its whole NVLink egress through the NVSwitches)."""
    return (all_gather(GpuCluster("mi355x", gpus=4), None, 1e9).time
            / all_gather(GpuCluster("b300", gpus=4), None, 1e9).time)
