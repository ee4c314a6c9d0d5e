"""MoE training priced by mechanism (issue #38): the expert-parallel AllToAll carries every chip's tokens, Megatron's
EP folded over TP x DP is priced, and routing, permutation, capacity, imbalance and small grouped GEMMs are named
terms whose constants come from sources that are not suite rows."""

import statistics

import pytest

import scalebook as sb
from scalebook import training, validation
from scalebook.training import experts

DSV3 = sb.get_model("deepseek-v3")


def _dsv3_on_eight_h100(**kw):
    """DeepSeek-V3, one 4,096-token sequence per H100 and microbatch, experts split 8 ways over one node."""
    return training.predict(DSV3, "h100", 8, 8 * 4096, 4096, ep=8, **kw)


def test_the_ep_alltoall_moves_every_chips_tokens():
    """Each H100 holds 4,096 tokens x 7,168 x 2 B = 58.7 MB; routed top-8 over 8 GPUs at least 7/8 of them leave
    the GPU, so one dispatch takes at least 58.7 MB x 7/8 / 450 GB/s (NVLink one-way) = 114 us. Before #38 the
    term passed one GPU's bytes where `collectives.all_to_all` wants the whole array: 75 us."""
    pred = _dsv3_on_eight_h100()
    per_call = pred.breakdown["ep"] / (4 * DSV3.moe_layers * pred.layout.microbatches)
    per_gpu = 4096 * DSV3.D * 2
    assert per_gpu == pytest.approx(58.7e6, rel=1e-3)
    assert per_call >= per_gpu * 7 / 8 / sb.get_chip("h100").nvlink_bandwidth


def test_megatron_folds_ep_over_tensor_and_data_parallelism():
    """Megatron-Core's MoE parallel folding: DeepSeek-V3 on 64 H100 with TP 8 leaves 8 data-parallel chips, yet
    its experts split 64 ways over TP x DP (expert_tensor_parallel_size 1): refused before #38, priced now."""
    lay = training.Layout.of(64, tp=8, ep=64)
    assert (lay.data_parallel, lay.expert_tp, lay.expert_dp) == (8, 1, 1)
    assert training.Layout.of(64, tp=8, ep=8).expert_tp == 8  # EP within the data-parallel chips keeps TP
    pred = training.predict(DSV3, "h100", 64, 64 * 4096, 4096, tp=8, ep=64)
    assert pred.layout.ep == 64 and pred.breakdown["ep"] > 0 and 0 < pred.mfu < 1
    with pytest.raises(ValueError, match=r"ep=48 must divide the chips of a pipeline stage dp·fsdp·cp·tp = 64"):
        training.Layout.of(64, tp=8, ep=48)


def test_expert_weights_reduce_only_over_the_chips_that_hold_them():
    """With EP 8 on one node of 8, no two GPUs hold the same expert: only the dense weights (all but the routed
    experts, 2.5 % of DeepSeek-V3) cross the data-parallel group, so its traffic is that share of EP 1's."""
    with_ep, without = (_dsv3_on_eight_h100(ep_overlap=False) if ep == 8 else
                        training.predict(DSV3, "h100", 8, 8 * 4096, 4096) for ep in (8, 1))
    routed = DSV3.components()["MoE routed experts"][0]
    dense_share = 1 - routed / DSV3.param_count()
    assert dense_share == pytest.approx(0.025, abs=0.002)
    ratio = (with_ep.hidden["dp"] + with_ep.breakdown["dp"]) / (without.hidden["dp"] + without.breakdown["dp"])
    assert ratio == pytest.approx(dense_share, rel=0.05)


def test_grouped_gemm_share_follows_deepgemms_table():
    """DeepGEMM's grouped FP8 GEMMs on H800 (README at a6d97a1): each masked row's rate over its shape's large-M
    rate, against 1 / (1 + m0/M) with m0 (about 101 rows) read off the same table, within 10 %."""
    rows = {(1024, 4096): 1233 / 1297, (1024, 7168): 925 / 1099, (512, 4096): 1040 / 1297,
            (512, 7168): 916 / 1099, (256, 4096): 932 / 1297, (256, 7168): 815 / 1099}
    h800 = sb.get_chip("h800")
    assert experts.half_rate_rows(h800) == pytest.approx(101, abs=1)
    for (M, _), measured in rows.items():
        assert experts.grouped_gemm_share(M, h800) == pytest.approx(measured, rel=0.10)
    assert experts.grouped_gemm_share(8192, h800) > 0.98


def test_random_routing_imbalance_matches_a_simulation():
    """The busiest of 64 EP groups, each expecting 1,000 routed copies: 1 + sqrt(2 ln 64 / 1000) = 1.091 against
    the mean maximum of 200 seeded multinomial draws (within 2 %)."""
    import numpy as np

    rng = np.random.default_rng(38)
    draws = rng.multinomial(64_000, [1 / 64] * 64, size=200)
    simulated = draws.max(axis=1).mean() / 1000
    assert experts.random_imbalance(1000, 64) == pytest.approx(1.091, abs=0.001)
    assert experts.random_imbalance(1000, 64) == pytest.approx(simulated, rel=0.02)
    assert experts.random_imbalance(1000, 1) == 1.0


@pytest.mark.parametrize("rows", [0.01, 5e-324])
def test_a_busiest_group_holds_at_most_every_copy(rows):
    """With far under one copy per group the normal tail runs away (5e-324 rows gave inf); the busiest of 8 groups
    can hold at most all the copies, 8 times the mean."""
    assert experts.random_imbalance(rows, 8) == 8.0


def test_moe_mechanisms_are_named_terms_and_capacity_replaces_imbalance():
    pred = _dsv3_on_eight_h100()
    for name in ("routing", "permute", "expert imbalance", "grouped gemm"):
        assert pred.breakdown[name] > 0, name
    padded = _dsv3_on_eight_h100(capacity_factor=1.25)
    assert "expert imbalance" not in padded.breakdown
    even = _dsv3_on_eight_h100(expert_imbalance=1.0)
    assert even.breakdown["expert imbalance"] == 0
    # a 25 % pad costs a quarter of the routed experts' FLOPs time: check against a 2x imbalance's full one
    doubled = _dsv3_on_eight_h100(expert_imbalance=2.0)
    assert padded.breakdown["capacity padding"] == pytest.approx(doubled.breakdown["expert imbalance"] / 4)
    assert not training.predict("llama3-8b", "h100", 8, 8 * 8192, 8192).breakdown.keys() & {"routing", "permute"}


def test_ep_overlap_hides_the_alltoall_behind_compute():
    exposed, overlapped = _dsv3_on_eight_h100(), _dsv3_on_eight_h100(ep_overlap=True)
    assert overlapped.breakdown["ep"] < exposed.breakdown["ep"]
    assert overlapped.breakdown["ep"] + overlapped.hidden["ep"] == pytest.approx(exposed.breakdown["ep"])


@pytest.mark.parametrize("name,value", [("expert_imbalance", 0.5), ("capacity_factor", float("nan"))])
def test_bad_load_factors_name_the_argument(name, value):
    with pytest.raises(ValueError, match=name):
        _dsv3_on_eight_h100(**{name: value})


def _moe_rows() -> list[dict]:
    """The suite's MoE training rows, as `validation.results` scores them."""
    moe = {run.id for run in validation.runs() if run.kind == "training" and run.model.is_moe}
    return [r for r in validation.results() if r["run"] in moe]


def test_the_moe_rows_are_held_out_and_every_ideal_is_a_bound():
    rows = _moe_rows()
    assert len(rows) == 12 and {r["status"] for r in rows} == {"held-out"}
    assert {r["source"] for r in rows} == {"megatron_bridge", "tpu_recipes_mixtral", "moe_modelzoo"}
    assert all(r["bound"] for r in rows)


def test_moe_rows_median_error_at_most_25_percent():
    """Issue #38's threshold on the 12 held-out MoE training rows of three sources (Megatron-Bridge's tables,
    MaxText's Mixtral recipe, the Megatron-Core MoE ModelZoo): median |speed error| 17.8 % (2026-12-06; 24.7 %
    before the FP8 casts were priced, 23.3 % before MaxText's share was read off its own recipes on v6e)."""
    assert statistics.median(abs(r["speed error"]) for r in _moe_rows()) <= 0.25


def test_the_bf16_moe_rows_land_within_15_percent_either_side():
    """The ModelZoo's three BF16 Qwen3-235B-A22B layouts on 256 H100 (EP 32 folded over TP x DP, with and without
    the 1F1B AllToAll overlap; EP 8 with 32 pipeline stages): -15 %, +7 %, +3 % (2026-12-06)."""
    errors = [r["speed error"] for r in _moe_rows() if r["source"] == "moe_modelzoo"]
    assert len(errors) == 3 and max(abs(e) for e in errors) <= 0.15


@pytest.mark.xfail(strict=True, reason=(
    "Disagreement: the 8 held-out Megatron-Bridge MoE rows, all FP8 or MXFP8 (DeepSeek-V3, Qwen3-30B-A3B, "
    "Qwen3-235B-A22B on GB300, GB200, H100), are every one predicted too fast (+13 % to +39 %, median 28 %, "
    "2026-12-06; +14 % to +42 %, median 31 %, before the FP8 casts were priced by recipe, `terms.fp8_cast_term`), "
    "while the BF16 runs of the same models land within 15 %. Not priced: the SMs the overlapped HybridEP "
    "dispatcher holds (32 in the recipes) beyond the flat `interference`, and MXFP8's grouped GEMMs' own rate"))
def test_the_fp8_moe_rows_median_error_at_most_25_percent():
    errors = [abs(r["speed error"]) for r in _moe_rows() if r["source"] == "megatron_bridge"]
    assert statistics.median(errors) <= 0.25


def test_expert_optimizer_state_is_sharded_only_over_the_chips_that_hold_the_experts():
    """DeepSeek-V3 on 2,048 H800s, PP 16, EP 64 (its report): the 128 data-parallel GPUs of a stage share the
    dense weights' 12 bytes of master weights and moments per parameter, but each expert lives on 128 / 64 = 2."""
    mem = training.training_memory(DSV3, 4096, training.Layout(dp=128, pp=16, ep=64))
    routed = DSV3.components()["MoE routed experts"][0]
    dense = (DSV3.param_count() - routed) / 16
    assert mem["optimizer"] == pytest.approx((dense / 128 + routed / (64 * 16) / 2) * 12, rel=1e-9)


def test_the_planner_searches_ep_folded_over_tensor_parallelism():
    """Qwen3-30B-A3B on 16 H100 with TP fixed at 8 leaves 2 data-parallel GPUs; EP 16 only exists folded over
    TP x DP, and the planner now prices it (before #38 it searched EP within the data-parallel GPUs only)."""
    qwen = validation.model("qwen3-30b-a3b")
    found = training.plan(qwen, "h100", 16, 16 * 4096, 4096, efficiency="calibrated", tp=8, ep=16)
    assert found.layout.ep == 16 and found.layout.expert_tp == 1


def test_ep_over_fsdp_gathers_each_expert_only_among_its_own_chips():
    """MaxText's layout: Mixtral 8x7B FSDP over 64 H100 (8 nodes) with its experts split 8 ways over the same
    chips. Each chip still holds 1/64 of every state, and gathers only its own experts (a layer's gathered weights
    shrink from all 8 experts to 1: the 'weights' buffer falls 3x). With the EP group innermost (one node holds
    all 8 experts), the chips that share an expert sit one per node, so a node still pulls 7/8 of every expert's
    weights over the network, as FSDP over all 64 does: the data-parallel seconds stay within 5 %."""
    mixtral = validation.model("mixtral-8x7b")
    kw = dict(fsdp=64, microbatch_tokens=4096)
    split, whole = (training.predict(mixtral, "h100", 64, 64 * 4096, 4096, ep=ep, **kw) for ep in (8, 1))
    assert split.layout.expert_dp == 8 and split.memory["optimizer"] == pytest.approx(whole.memory["optimizer"])
    assert split.memory["weights"] < whole.memory["weights"] / 3
    traffic = [p.hidden["dp"] + p.breakdown["dp"] for p in (split, whole)]
    assert traffic[0] == pytest.approx(traffic[1], rel=0.05)


def test_the_alltoall_waits_for_the_busiest_chip():
    """A chip receiving twice the mean share of routed copies takes twice as long to receive them; padding to a
    capacity factor of 1.25 sends 1.25x the copies. Balanced routing (expert_imbalance=1) is the bound."""
    even, twice, padded = (_dsv3_on_eight_h100(**kw) for kw in
                           ({"expert_imbalance": 1.0}, {"expert_imbalance": 2.0}, {"capacity_factor": 1.25}))
    assert twice.breakdown["ep"] == pytest.approx(2 * even.breakdown["ep"])
    assert padded.breakdown["ep"] == pytest.approx(1.25 * even.breakdown["ep"])
