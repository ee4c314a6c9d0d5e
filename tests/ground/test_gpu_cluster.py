"""GPU clusters, their collectives and GPU rooflines against chapter 12's worked answers (How To Scale Your Model).

Chapter 12 asserts quiz 1 (Q1.1-Q1.7), Q2.1-Q2.3, Q3.2's switch counts and the SuperPod's bisection with the same
calls under nbval; each of those book numbers is typed there once, and these tests keep what it does not check.
The numbers both check are read with sb.published from scalebook/data/book/12_gpus.toml."""

import pytest

import scalebook as sb
from scalebook import GpuCluster
from scalebook.hardware import gpu, sm

NODE = GpuCluster("h100", gpus=8)
POD = GpuCluster("h100", gpus=1024)


# Quiz 1: inside one GPU ------------------------------------------------------------------------------

def test_volta_and_ampere_have_half_the_fp32_lanes_per_sm():
    # NVIDIA's V100 and A100 whitepapers: 64 FP32 cores per SM (5,120 and 6,912 in all).
    assert (sm.cuda_cores("v100"), sm.cuda_cores("a100")) == (5120, 6912)


def test_tensor_core_flops_per_cycle():
    # ch. 12: H100 ~1024 per tensor core per cycle at the 1.83 GHz its peak assumes; B200 ~2048 at 1.86 GHz.
    assert sm.tensor_core_flops_per_cycle("h100", clock=1.83e9) == pytest.approx(1024, rel=0.01)
    assert sm.tensor_core_flops_per_cycle("b200", clock=1.86e9) == pytest.approx(2048, rel=0.01)


# Quiz 2 and 3: nodes and the fat tree ---------------------------------------------------------------

def test_q3_1_every_level_of_a_superpod_gives_400_gb_per_node():
    # 12.Q3.1: node 3.6 TB/s; leaf 12.8 TB/s per SU of 32 nodes; spine 51.2 TB/s for 128 nodes: 400 GB/s a node.
    rows = {r["level"]: r for r in POD.levels_table().rows}
    sb.expect(rows["leaf"]["cable B/s"] / 32, sb.published("12_gpus.q3_1_per_node"))
    sb.expect(rows["spine"]["cable B/s"], sb.published("12_gpus.q3_1_spine"))
    sb.expect(rows["spine"]["switch B/s"], sb.published("12_gpus.q3_1_spine"))
    sb.expect(rows["leaf"]["switch B/s"], sb.published("12_gpus.q3_1_leaf_switches"))
    assert rows["node (NVLink)"]["per GPU"] == 450e9
    assert rows["spine"]["per GPU"] == pytest.approx(50e9)


def test_q3_2_two_pods_need_no_core_layer():
    # 12.Q3.2: chapter 12 asserts the book's 560 switches for 1024 GPUs, 32 spine switches for 2048 and 128 spine +
    # 64 core for 4096; two pods still join without a core layer.
    assert gpu.fat_tree_switches(2048)["core"] == 0


def test_a_superpod_is_128_nodes_under_leaf_and_spine_switches():
    assert (POD.nodes, POD.gpus_per_node) == (128, 8)
    assert [level.name for level in POD.span(1024)] == ["node", "leaf", "spine"]
    # its bisection per GPU (the book's 413 GB/s) is asserted by chapter 12


# Collectives: pop quizzes and quiz 4 -------------------------------------------------------------------

def test_pq1_all_gather_in_one_node():
    # 12.PQ1: AllGather of bf16[1024, 16384] on 8 H100s: ~75 µs as bytes/W, ~65 µs with the 7/8 factor.
    V = 2 * 1024 * 16384
    sb.expect(sb.all_gather(NODE, None, V).time, sb.published("12_gpus.pq1_all_gather"))
    sb.expect(sb.collectives.gpu_simple("all_gather", NODE, V), sb.published("12_gpus.pq1_all_gather_simple"))


def test_pq2_all_to_all_dense_and_half_empty():
    # 12.PQ2: AllToAll of bf16[B_X, N] in a node: bytes (N-1)/(W·N²) ~ bytes/(W·N); half when 4 of 8 entries are 0.
    # PR #128: the byte count is V = 2·B·N (the book had reused B for it).
    V = 2 * 1024 * 8
    dense = sb.all_to_all(NODE, None, V).time
    assert dense == pytest.approx(V * 7 / (64 * 450e9))
    assert sb.all_to_all(NODE, None, V / 2).time == pytest.approx(dense / 2)


def test_ragged_top_k_all_to_all():
    # ch. 12: a token routed to k of N GPUs costs (1 - ((N-1)/N)^k) of a dense AllToAll of its N copies (B bytes),
    # ~ k/N of it: in a node ~ B·k / (64·W) (here 7/8 · 1.875/2 of that for k = 2).
    tokens, k = 1e9, 2
    ragged = sb.all_to_all(NODE, None, tokens, top_k=k).time
    assert ragged == pytest.approx(sb.all_to_all(NODE, None, 8 * tokens).time * (1 - (7 / 8) ** k))
    assert ragged == pytest.approx(8 * tokens * k / (64 * 450e9) * 7 / 8 * 1.875 / 2)
    with pytest.raises(ValueError, match="top_k"):
        sb.collectives.collective("all_gather", NODE, None, tokens, top_k=2)


def test_cross_node_all_to_all_is_bound_by_node_egress():
    # ch. 12: across M nodes B(M-1)/(M²·W_node); B/(8·450e9) in one node vs B/(2·400e9) over two: the book's
    # ">4x worse" drops the (N-1)/N factors (4.5x); kept, 7/64 against 1/4 of the bytes: 2.6x.
    one, two = sb.all_to_all(NODE, None, 1e9).time, sb.all_to_all(GpuCluster("h100", gpus=16), None, 1e9).time
    assert one == pytest.approx(1e9 * 7 / (64 * 450e9)) and two == pytest.approx(1e9 / (4 * 400e9))
    simple = sb.collectives.gpu_simple
    two_nodes = GpuCluster("h100", gpus=16)
    sb.expect(simple("all_to_all", two_nodes, 1e9) / simple("all_to_all", NODE, 1e9),
              sb.published("12_gpus.all_to_all_two_nodes_vs_one"))


def test_pq3_inner_axis_sharding_inside_a_scalable_unit():
    # 12.PQ3: AllGather over X of bf16[D_X, F_Y] in one SU (256 GPUs): Y <= 8 leaves the leaf term
    # 2DF·31/(32·400e9); Y = 16 halves it: the book's 2DF/(Y·50 GB/s), here with the ring's (X-1)/X = 15/16.
    su, V = GpuCluster("h100", gpus=256), 2 * 8192 * 32768
    assert sb.all_gather(su, None, V, also_sharded=4).time == pytest.approx(V * 31 / (32 * 400e9))
    assert sb.all_gather(su, None, V, also_sharded=16).time == pytest.approx(V / (16 * 50e9) * 15 / 16)


def test_q4_1_node_and_spine_traffic_of_an_su_all_gather():
    # 12.Q4.1: the node term ~ B/450e9 (here with 7/8), the network term B(M-1)/(M·400e9).
    levels = {name: t for name, _, _, t in sb.collectives.gpu_levels("all_gather", GpuCluster("h100", gpus=256),
                                                                       None, 1e9)}
    assert levels["node"] == pytest.approx(1e9 * 7 / (8 * 450e9))
    assert levels["leaf"] == pytest.approx(1e9 * 31 / (32 * 400e9))


def test_q4_2_sharp_all_reduce_costs_one_pass():
    # 12.Q4.2: with in-network reduction an AllReduce costs bytes / W_egress (without, twice an AllGather).
    plain = sb.all_reduce(NODE, None, 1e9).time
    sharp = sb.all_reduce(GpuCluster("h100", gpus=8, sharp=True), None, 1e9).time
    assert sharp == pytest.approx(1e9 / 450e9) and plain == pytest.approx(2 * sb.all_gather(NODE, None, 1e9).time)


def test_q4_3_sharp_reduction_of_an_array_sharded_over_an_inner_axis():
    # 12.Q4.3: AllReduce(bf16[D, F_Y]{U_X}) in one node with SHARP: 2DF/(Y·W), smaller as Y grows.
    V, node = 2 * 8192 * 32768, GpuCluster("h100", gpus=8, sharp=True)
    for Y in (2, 4):
        assert sb.all_reduce(node, None, V, also_sharded=Y).time == pytest.approx(V / (Y * 450e9))


def test_q4_4_reduction_at_the_spine():
    # 12.Q4.4: Y = 256 leaves only the spine to reduce over 4 SUs. Each SU's 12.8 TB/s of uplinks carries its 2DF
    # once: 2DF/12.8e12, the book's answer since upstream put the spine at 51.2 TB/s (it printed 2DF/6.4e12).
    V = 2 * 8192 * 32768
    levels = sb.collectives.gpu_levels("all_reduce", GpuCluster("h100", gpus=1024, sharp=True), None, V, 256)
    assert [t for _, _, _, t in levels[:2]] == [0.0, 0.0]
    assert sb.all_reduce(GpuCluster("h100", gpus=1024, sharp=True), None, V, also_sharded=256).time == \
        pytest.approx(V / 12.8e12)


def test_q4_5_across_exactly_two_nodes_the_node_binds():
    # 12.Q4.5: node B·7/(8·450e9) = B/514e9 against cross-node B/(2·400e9) = B/800e9: NVLink is the limit.
    est = sb.all_gather(GpuCluster("h100", gpus=16), None, 1e9)
    assert est.time == pytest.approx(1e9 / 514e9, rel=0.01)
    assert est.channel == "NVLink"


def test_node_egress_is_the_first_levels_bandwidth():
    # Overriding a node's egress changes the collectives too; levels and egress must not disagree.
    slow = GpuCluster("a100", gpus=64, node_egress=200e9)
    assert slow.levels[0].bandwidth == 200e9
    assert sb.all_gather(slow, None, 1e9).time == pytest.approx(1e9 * 7 / (8 * 200e9))
    assert GpuCluster("b200", gpus=576, gpus_per_node=72, levels=gpu.NVL72).node_egress == 3.6e12
    with pytest.raises(ValueError, match="node_egress"):
        GpuCluster("h100", node_egress=300e9, levels=gpu.SUPERPOD)


def test_nvl72_racks_are_bound_by_nvlink_unless_a_replica_fills_the_rack():
    # Across racks with a replica per GPU the in-rack reduction over 900 GB/s binds (2.5e15/9e11 ~ 2778 tokens);
    # with a replica per rack only the 3.6 TB/s of rack egress counts (~694); TP across racks stays NVLink-bound.
    racks = gpu.get_cluster("gb200-superpod")
    assert sb.training.min_tokens_per_chip("dp", racks) == pytest.approx(2.5e15 / 900e9)
    assert sb.training.min_tokens_per_chip("dp", racks, model_parallel=72) == pytest.approx(2.5e15 / 3.6e12)
    assert sb.training.tp_limit(53248, racks) == pytest.approx(sb.training.tp_limit(53248, racks.subset(72)))


def test_the_simple_forms():
    # ch. 12: AG ~ V/W_collective (450 GB/s in a node, 400 GB/s across H100 nodes), AR twice that or once with
    # SHARP; the node's NVLink generation gives its switches.
    assert sb.collectives.gpu_simple("all_gather", POD, 1e9) == pytest.approx(1e9 / 400e9)
    assert sb.collectives.gpu_simple("all_reduce", POD, 1e9) == pytest.approx(2e9 / 400e9)
    assert sb.collectives.gpu_simple("all_reduce", GpuCluster("h100", gpus=8, sharp=True), 1e9) == \
        pytest.approx(1e9 / 450e9)
    assert POD.nvlink.generation == "4.0" and POD.nvlink.switches_per_node == POD.nvswitches
    with pytest.raises(ValueError, match="kind"):
        sb.collectives.gpu_simple("broadcast", POD, 1e9)


def _level_terms(kind, cluster, nbytes):
    return {name: t for name, _, _, t in sb.collectives.gpu_levels(kind, cluster, None, nbytes)}


def test_a_partial_rack_pushes_its_share_through_its_own_nics():
    """256 GB300s are three NVL72 racks and 40 GPUs of a fourth. Each GPU owns an 800 Gb/s ConnectX-8 (NVIDIA's
    GB300 NVL72 reference architecture, chips.toml nvidia_nvl72_ra), so the partial rack pushes 40 x 100 GB/s, and
    it must import what its 40 GPUs do not hold: (1 - 40/256) of the array. That rack, not a full one, sets the
    network's time: slower than three full racks' (1 - 1/3) at 72 x 100 GB/s, and than four full racks'."""
    V = 1e9
    part, three, four = (GpuCluster("gb300", gpus=n) for n in (256, 216, 288))
    assert (part.nodes, part.partial, three.partial) == (4, 40, 0)
    assert _level_terms("all_gather", part, V)["spine"] == pytest.approx(V * (1 - 40 / 256) / (40 * 100e9))
    assert _level_terms("all_gather", three, V)["spine"] == pytest.approx(V * (2 / 3) / (72 * 100e9))
    assert _level_terms("all_gather", part, V)["spine"] > _level_terms("all_gather", four, V)["spine"]
    for kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
        assert sb.collectives.collective(kind, part, None, V).time >= sb.collectives.collective(kind, three, None,
                                                                                                V).time
    # in the rack, each GPU still gathers over its own NVLink: the full racks' 71/72 of the array binds there
    assert _level_terms("all_gather", part, V)["node"] == pytest.approx(V * 71 / 72 / part.gpu_bandwidth)


def test_twelve_h100s_are_a_dgx_and_half_of_another():
    """12 H100s: a full DGX and 4 GPUs of a second, whose four 400 Gb/s NICs (a DGX H100 has one per GPU, ch. 12)
    carry the 8/12 of the array it lacks: 3.3 ms per GB, where 16 GPUs' half-node import takes 1.25 ms; so the
    12-GPU AllGather is slower than the 16-GPU one, and a subset that cannot spread evenly packs the same way."""
    V = 1e9
    twelve, sixteen = GpuCluster("h100", gpus=12), GpuCluster("h100", gpus=16)
    assert _level_terms("all_gather", twelve, V)["leaf"] == pytest.approx(V * (8 / 12) / (4 * 50e9))
    assert _level_terms("all_gather", sixteen, V)["leaf"] == pytest.approx(V / 2 / 400e9)
    assert sb.all_gather(twelve, None, V).time > sb.all_gather(sixteen, None, V).time > 0
    assert POD.subset(13) == GpuCluster("h100", gpus=13) and POD.subset(13).partial == 5
    assert POD.subset(12).gpus_per_node == 6  # 12 spread evenly over two nodes, as before
    assert twelve.subset(12) is twelve


def test_the_planner_uses_a_partial_rack():
    """On 256 GB300s the book's planner spreads FSDP over all of them, three racks and the partial fourth; before,
    it kept to whole racks and left 128 idle (a 4M batch divides 256 ways as well as 128)."""
    found = sb.training.plan("llama3-70b", GpuCluster("gb300", gpus=256), 256, 2**22, 8192)
    assert found.chips_used == 256 and found.estimate.bound == "compute"


def test_gb200_racks_have_nine_times_the_node_egress():
    rack = gpu.get_cluster("gb200-superpod")
    assert rack.gpus_per_node == 72 and rack.nodes == 8
    sb.expect(rack.node_egress / POD.node_egress, sb.published("12_gpus.nvl72_egress_vs_h100_node"))
    assert rack.nvswitches == 18 and rack.gpu_bandwidth == 900e9


@pytest.mark.parametrize("call, message", [
    (lambda: GpuCluster("v5e", gpus=8), "not a GPU"),
    (lambda: GpuCluster("h100", gpus=0), "gpus=0"),
    (lambda: GpuCluster("gb300", gpus=256.5), "gpus=256.5"),
    (lambda: GpuCluster("gb300", gpus=256).subset(300), "gpus=300"),
    (lambda: GpuCluster("h100", gpus=2**20), "exceeds"),
    (lambda: sb.all_gather(NODE, "X", 1e9), "axes='X'"),
    (lambda: sb.all_gather(NODE, None, 1e9, also_sharded=0), None),
    (lambda: sb.all_gather(NODE, None, 1e9, also_sharded=3), "inner=3"),
    (lambda: sb.all_to_all(NODE, None, 1e9, top_k=0), "top_k=0"),
    (lambda: NODE.span(9), "group=9"),
    (lambda: sm.cuda_cores("v5p"), "not a GPU"),
    (lambda: sm.vector_flops("h100", clock="turbo"), "clock='turbo'"),
    (lambda: sm.vector_flops("b200", clock="base"), "no published base clock"),
    (lambda: gpu.fat_tree_switches(100), "gpus=100"),
    (lambda: sb.training.min_tokens_per_chip("dp", "v5p", model_parallel=8), "model_parallel"),
    (lambda: sb.training.check_parallelism(POD, 4e6, tp=3), "must divide"),
])
def test_bad_cluster_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_unknown_cluster_names_suggest_close_ones():
    with pytest.raises(KeyError, match="h100-superpod"):
        gpu.get_cluster("h100-superpd")


# Quiz 5: LLM rooflines on GPUs, through the same training code as TPUs -----------------------------------

def test_gpu_training_rooflines_through_the_same_code_paths():
    # 12 (LLM rooflines): DP needs C/W ~ 990e12/450e9 = 2200 tokens per GPU in a node, 990e12/400e9 = 2475
    # across nodes; TP stays compute-bound up to Y ~ F/2200 in a node.
    t = sb.training
    sb.expect(t.min_tokens_per_chip("dp", NODE), sb.published("12_gpus.dp_tokens_in_node"))
    sb.expect(t.min_tokens_per_chip("dp", POD), sb.published("12_gpus.dp_tokens_across_nodes"))
    assert t.tp_limit(28672, NODE) == pytest.approx(28672 / 2200, rel=0.01)  # ~13 -> 8-way TP in a node


def test_gpu_and_tpu_share_the_layer_model():
    # A TPU whose bidirectional link equals a pod's node egress gives the same layer costs: one code path.
    fake = sb.get_chip("h100").replace(kind="tpu", ici_bandwidth=POD.node_egress / 2)
    for strategy in ("dp", "fsdp"):
        gpu_cost = sb.training.layer_cost(strategy, 4096, 8192, 28672, POD, X=1024)
        tpu_cost = sb.training.layer_cost(strategy, 4096, 8192, 28672, fake, X=1024)
        assert (gpu_cost.t_math, gpu_cost.t_comms) == pytest.approx((tpu_cost.t_math, tpu_cost.t_comms))
    assert sb.training.min_tokens_per_chip("dp", POD) == pytest.approx(sb.training.min_tokens_per_chip("dp", fake))


def test_q5_1_b200_superpod_rooflines():
    # 12.Q5.1: TP ~ F/2500 (about unchanged: 2.25e15/900e9); cross-node DP rises to 2.25e15/400e9 ~ 5625 tokens.
    b200 = GpuCluster("b200", gpus=1024)
    sb.expect(sb.training.min_tokens_per_chip("dp", b200), sb.published("12_gpus.q5_1_b200_dp_tokens"))
    assert sb.training.tp_limit(28672, b200.subset(8)) == pytest.approx(28672 / 2500, rel=0.01)


def test_q5_2_llama3_70b_on_h100s():
    t, model = sb.training, sb.get_model("llama3-70b")
    state = t.memory(model, 1, n_chips=1)
    # (1) bf16 weights + fp32 Adam: ~700 GB -> at least 9 GPUs.
    sb.expect(state.params + state.optimizer, sb.published("12_gpus.q5_2_weights_and_adam"))
    sb.expect(-(-(state.params + state.optimizer) // 80e9), sb.published("12_gpus.q5_2_min_gpus"))
    # (2) 6·70e9·15e12 ~ 6.3e24 FLOPs at 45% MFU on 4096 H100s: ~3.5e6 s, ~40 days.
    flops = model.flops_per_token() * 15e12
    sb.expect(flops, sb.published("12_gpus.q5_2_training_flops"))
    sb.expect(flops / (4096 * 990e12 * 0.45) / 86400, sb.published("12_gpus.q5_2_training_days"))
    # (3) TP: F/2200 ~ 13 (the book divides by 1995: 14.4) -> 8-way, a node. (a) 8 TP + DP: 87.5 GB per GPU.
    assert 8 < t.tp_limit(model.F, NODE) < 16
    sb.expect((state.params + state.optimizer) / 8, sb.published("12_gpus.q5_2_tp8_bytes_per_gpu"))
    # (b) ZeRO-3 with 4M tokens on 4096 GPUs: 976 tokens per GPU < 2475: comms-bound, as the planner finds;
    # the planner's best layout pipelines with 8-way TP and is compute-bound, as (c) says.
    pod = GpuCluster("h100", gpus=4096)
    plan = t.plan(model, pod, 4096, 4 * 2**20)
    sb.expect(4e6 / 4096, sb.published("12_gpus.q5_2_zero3_tokens"))
    assert all(r["why not"].startswith("comms-bound") for r in plan.candidates.rows if r["strategy"] == "fsdp_tp")
    assert (plan.tp, plan.pp > 1, plan.estimate.bound) == (8, True, "compute")
    # (c) 8 TP x 8 PP: a replica spans 8 nodes, 3.2 TB/s, ~309 tokens per GPU: compute-bound.
    check = t.check_parallelism(pod, 4e6, tp=8, pp=8)
    sb.expect(check["critical tokens/GPU"], sb.published("12_gpus.q5_2_pipelined_threshold"))
    assert check["bound"] == "compute"


@pytest.mark.parametrize("gpus, seqs, model_parallel, critical", [
    (192, 192, 1, 2475), (768, 384, 16, 1237), (3072, 1536, 64, 309)])
def test_q5_3_megatron_configs(gpus, seqs, model_parallel, critical):
    # 12.Q5.3: Megatron-LM's 16B, 70B and 314B configs (seq 4096): 4096, 2048 and 2048 tokens per GPU, all
    # above their thresholds (~2475, and 2x and 8x lower with 16- and 64-way model sharding).
    check = sb.training.check_parallelism(GpuCluster("h100", gpus=gpus), seqs * 4096, tp=model_parallel)
    assert check["critical tokens/GPU"] == pytest.approx(critical, rel=0.01) and check["bound"] == "compute"


def test_moe_data_parallelism_needs_e_over_k_more_tokens():
    # ch. 12: k = 4 of E = 128 experts -> 32 x 2475 = 79,200 tokens per GPU across nodes.
    sb.expect(sb.training.min_tokens_per_chip("dp", POD, E=128, k=4), sb.published("12_gpus.moe_dp_tokens"))


def test_small_dp_degree_across_two_nodes():
    # ch. 12: X = 2 nodes -> the network term alone needs alpha (X-1)/X ~ 1237 tokens per GPU; the NVLink term
    # (7/8 · 990e12/450e9 ~ 1925) binds first (as 12.Q4.5 shows for AllGather).
    levels = dict((name, t) for name, _, _, t in
                  sb.collectives.gpu_levels("all_reduce", GpuCluster("h100", gpus=16), None, 1.0))
    C = sb.get_chip("h100").peak_flops()
    sb.expect(C * levels["leaf"] / 2, sb.published("12_gpus.two_nodes_network_tokens"))
    sb.expect(C * levels["node"] / 2, sb.published("12_gpus.two_nodes_nvlink_tokens"))


def test_expert_parallel_conditions():
    # ch. 12: EP over Z GPUs across nodes is compute-bound when F > alpha (Z-8)/k for small Z (k >= Z/8), and
    # needs F > 8·alpha ~ 19,800 for very wide Z.
    threshold, alpha = sb.training.expert_width_threshold, 2475
    assert threshold(16, 8, POD) == pytest.approx(alpha * (16 - 8) / 8, rel=0.01)
    assert threshold(1024, 8, POD) == pytest.approx(8 * alpha, rel=0.05)
    assert threshold(8, 8, POD) < threshold(16, 8, POD)  # inside one node EP is cheaper


def test_expert_parallel_on_a_gpu_cluster_uses_ragged_all_to_alls():
    # ch. 5's MoE step on a GPU cluster: four top-k AllToAlls of the tokens over Z GPUs; DeepSeek-V3's narrow
    # experts (F_e = 2048 < 8 alpha) leave 64-way EP over 8 H800 nodes communication-bound.
    ds, h800 = sb.get_model("deepseek-v3"), GpuCluster("h800", gpus=2048)
    est = sb.training.expert_parallel(ds, h800, 1e6, Z=64)
    tokens = 1e6 * ds.D * ds.moe_layers * 2
    assert est.t_comms == pytest.approx(4 * sb.all_to_all(h800.subset(64), None, tokens, top_k=ds.k).time)
    assert est.bound == "comms"


def test_pipelined_steps_pay_their_bubble_and_sends():
    # step_time with P stages of M microbatches: compute x (M + P - 1)/M; the data-parallel bytes per chip fall
    # P-fold while a replica spanning 8 nodes has 8 nodes' egress; the sends of pipeline_comms are added.
    t, pod = sb.training, GpuCluster("h100", gpus=1024)
    flat = t.step_time("llama3-70b", pod, 1024, 2**22, "dp_tp", Y=8)
    piped = t.step_time("llama3-70b", pod, 1024, 2**22, "dp_tp", Y=8, P=8, microbatches=16)
    assert piped.t_math == pytest.approx(flat.t_math * 23 / 16)
    weights = sb.get_model("llama3-70b").param_count() * 2
    data = 2 * weights / (8 * 400e9)  # ZeRO-1 DP: each of the replica's 8 nodes sends 1/8 of the gradients
    tensor = 12 * 2**22 * 8192 * 2 * 80 / 8 / (16 * 450e9)  # TP over NVLink: 1/8 of the layers, X = 16
    sends = 2 * t.pipeline_comms(2**22 / 16, 8192, 8, 16, pod)
    assert piped.t_comms == pytest.approx(max(data, tensor) + sends)
    with pytest.raises(ValueError, match="X·Y·P"):
        t.step_time("llama3-70b", pod, 1024, 2**22, "dp_tp", X=100, Y=8, P=8)


def test_pipeline_comms_are_small():
    # ch. 12: 2BD/(W·N_MB)·(N_MB + N_stages - 2); with N_MB = 2·N_stages that is ~1.5 · 2BD/W, a quarter of
    # what FSDP moves for LLaMA-3 70B on the same pod.
    B, D = 4 * 2**20, 8192
    t = sb.training.pipeline_comms(B, D, 16, 32, POD)
    assert t == pytest.approx(2 * B * D / 400e9 * 46 / 32)
    fsdp = sb.training.step_time("llama3-70b", POD, 1024, B, strategy="fsdp").t_comms
    assert t < 0.25 * fsdp


def test_decode_step_on_a_gpu_node():
    est = sb.inference.decode_step("llama3-70b", "h100", 8, 64, 4096, mesh=NODE)
    assert est.t_ici > 0 and est.t_ici == pytest.approx(sb.inference.tp_collectives(
        sb.get_model("llama3-70b"), NODE, 64, 2))
