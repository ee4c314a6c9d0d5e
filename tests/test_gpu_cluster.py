"""GPU clusters and their collectives against chapter 12's worked answers (How To Scale Your Model)."""

import pytest

import scalebook as sb
from scalebook import GpuCluster

NODE = GpuCluster("h100", gpus=8)


def test_a_superpod_is_128_nodes_under_leaf_and_spine_switches():
    pod = GpuCluster("h100", gpus=1024)
    assert (pod.nodes, pod.gpus_per_node) == (128, 8)
    assert [level for level, _, _ in pod.span(1024)] == ["node", "leaf", "spine"]
    # the precise per-level form: node 450e9·8/7 ~ 514 GB/s, leaf 400e9·32/31 ~ 413 GB/s, spine 17 TB/s -> 413
    assert pod.bisection_per_gpu == pytest.approx(413e9, rel=0.01)


def test_pq1_all_gather_in_one_node():
    # 12.PQ1: AllGather of bf16[1024, 16384] on 8 H100s: ~75 µs as bytes/W, ~65 µs with the 7/8 factor.
    V = 2 * 1024 * 16384
    assert sb.all_gather(NODE, None, V).time == pytest.approx(65e-6, rel=0.01)
    assert V / NODE.gpu_bandwidth == pytest.approx(75e-6, rel=0.01)


def test_q2_3_gather_half_a_gigabyte_in_a_node():
    # 12.Q2.3: bf16[4096, 65536] (512 MiB): 536e6 · 7 / (8 · 450e9) ~ 1.04 ms.
    assert sb.all_gather(NODE, "node", 2 * 4096 * 65536).time == pytest.approx(1.04e-3, rel=0.01)


def test_q4_5_across_exactly_two_nodes_the_node_binds():
    # 12.Q4.5: node B·7/(8·450e9) = B/514e9 against cross-node B/(2·400e9) = B/800e9: NVLink is the limit.
    est = sb.all_gather(GpuCluster("h100", gpus=16), None, 1e9)
    assert est.time == pytest.approx(1e9 / 514e9, rel=0.01)
    assert est.channel == "NVLink"


def test_sharp_all_reduce_costs_one_pass():
    # 12.Q4.2: with in-network reduction an AllReduce costs bytes / W_egress (without, twice an AllGather).
    plain = sb.all_reduce(NODE, None, 1e9).time
    sharp = sb.all_reduce(GpuCluster("h100", gpus=8, sharp=True), None, 1e9).time
    assert sharp == pytest.approx(1e9 / 450e9) and plain == pytest.approx(2 * sb.all_gather(NODE, None, 1e9).time)


def test_all_to_all_in_a_node_is_an_eighth_of_a_gather():
    # ch. 12: in a node every GPU talks to every other: V·(N-1)/(N²·W) ~ V/(8W).
    assert sb.all_to_all(NODE, None, 1e9).time == pytest.approx(1e9 * 7 / (64 * 450e9))


def test_pq3_inner_axis_sharding_inside_a_scalable_unit():
    # 12.PQ3: AllGather over X of bf16[D_X, F_Y] in one SU (256 GPUs): Y <= 8 leaves the leaf term
    # 2DF·31/(32·400e9); Y = 16 halves it (the book's 2DF/(Y·50 GB/s), up to the 31/32 factor).
    su, V = GpuCluster("h100", gpus=256), 2 * 8192 * 32768
    assert sb.all_gather(su, None, V, also_sharded=4).time == pytest.approx(V * 31 / (32 * 400e9))
    assert sb.all_gather(su, None, V, also_sharded=16).time == pytest.approx(V / (16 * 50e9), rel=0.04)


def test_gb200_racks_have_nine_times_the_node_egress():
    rack = GpuCluster("gb200", gpus=576)
    assert rack.gpus_per_node == 72 and rack.node_egress == pytest.approx(9 * 400e9)


@pytest.mark.parametrize("call, message", [
    (lambda: GpuCluster("v5e", gpus=8), "not a GPU"),
    (lambda: GpuCluster("h100", gpus=12), "whole number"),
    (lambda: GpuCluster("h100", gpus=2**20), "exceeds"),
    (lambda: sb.all_gather(NODE, "X", 1e9), "axes='X'"),
    (lambda: sb.all_gather(NODE, None, 1e9, also_sharded=0), None),
    (lambda: NODE.span(9), "group=9"),
])
def test_bad_cluster_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_gpu_training_rooflines_through_the_same_code_paths():
    # 12 (LLM rooflines): DP needs C/W ~ 990e12/450e9 = 2200 tokens per GPU in a node, 990e12/400e9 = 2475
    # across nodes; B200 across nodes 2.25e15/400e9 = 5625; TP stays compute-bound up to Y ~ F/2200 in a node.
    t = sb.training
    assert t.critical_batch("dp", NODE) == pytest.approx(2200, rel=0.01)
    assert t.critical_batch("dp", GpuCluster("h100", gpus=1024)) == pytest.approx(2475, rel=0.01)
    assert t.critical_batch("dp", GpuCluster("b200", gpus=1024)) == pytest.approx(5625, rel=0.01)
    assert t.tp_limit(28672, NODE) == pytest.approx(28672 / 2200, rel=0.01)  # ~13 -> 8-way TP in a node
