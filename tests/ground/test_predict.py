"""training.predict (issue #19's contract) and the calibrated planner."""

import pytest

import scalebook as sb
import scalebook.validation as v
from scalebook import training


def _llama(n=8192, **kw):
    """Llama 3 405B's 8k layout: TP 8 x PP 16 x FSDP that keeps each stage's weights gathered (the paper)."""
    return training.predict("llama3-405b", "h100", n, 16 * 2**20, 8192, tp=8, pp=16, fsdp=n // 128,
                            reshard_after_forward=False, **kw)


def test_contract_fields_and_units():
    p = _llama()
    assert p.step_time > 0 and p.tokens_per_second_per_chip == pytest.approx(16 * 2**20 / p.step_time / 8192)
    assert 0 < p.mfu < 1 and p.memory_per_chip == pytest.approx(sum(p.memory.values()))
    assert p.fits and p.memory_per_chip < 80e9
    assert p.step_time == pytest.approx(sum(p.breakdown.values()))
    for key in ("compute", "recompute", "bubble", "tp", "dp", "pp sends"):
        assert key in p.breakdown


def test_llama3_405b_on_8k_h100_is_bounded_by_the_ideal_and_priced_by_the_calibrated_model():
    """430 TFLOP/s per GPU at 8,192 H100 (Llama 3 paper, Table 4): the ideal model is above it (a bound). The
    calibrated one (a development row: chapter 13 shows its error) says 318, 26 % slow, with the generic framework
    share (Meta's own code is none of the families) and compute slowed under its hidden collectives; the figure is
    asserted as a change detector.
    The layout as the paper's section 3.3.2 gives it: no activation checkpointing, balanced first and last stages."""
    flops = sb.get_model("llama3-405b").flops_per_token(8192) * 16 * 2**20 / 8192
    calibrated = flops / _llama(recompute="none", balanced_stages=True).step_time / 1e12
    assert calibrated / 430 == pytest.approx(0.739, abs=0.007)  # 26 % slow
    assert flops / _llama(efficiency="ideal").step_time / 1e12 > 430


def test_ideal_is_never_slower_than_calibrated():
    for kw in (dict(), dict(recompute="full"), dict(virtual_stages=2)):
        assert _llama(efficiency="ideal", **kw).step_time < _llama(**kw).step_time


def test_recompute_costs_flops_and_saves_memory():
    none, selective, full = (_llama(recompute=r) for r in ("none", "selective", "full"))
    assert none.breakdown["recompute"] == 0 < selective.breakdown["recompute"] < full.breakdown["recompute"]
    assert full.memory["activations"] < selective.memory["activations"] <= none.memory["activations"]


def test_interleaving_shrinks_the_bubble_and_data_parallelism_is_what_is_left():
    assert _llama(virtual_stages=2).breakdown["bubble"] < _llama().breakdown["bubble"]
    assert _llama().layout.data_parallel == 64 and _llama(16384).layout.data_parallel == 128
    assert _llama().layout == training.Layout(fsdp=64, tp=8, pp=16, microbatches=32)


def test_mixed_precision_costs_18_bytes_per_parameter():
    m = training.training_memory("llama3-8b", 8192)
    per_param = (m["weights"] + m["gradients"] + m["optimizer"]) / sb.get_model("llama3-8b").param_count()
    assert per_param == pytest.approx(18)
    assert training.training_memory("llama3-8b", 8192, grad_bytes=2)["gradients"] * 2 == pytest.approx(m["gradients"])


@pytest.mark.parametrize("metric", ["params_optimizer_gib", "activations_gib"])
def test_korthikanti_memory(metric):
    for run in v.runs():
        if run.metric == metric:
            assert v.predict_run(run) == pytest.approx(run.published, rel=0.10), run.id


def test_flash_attention_drops_the_scores_term():
    m = sb.get_model("llama3-8b")
    flash = training.activation_bytes_per_layer(m, 4096, 4096, recompute="none")
    naive = training.activation_bytes_per_layer(m, 4096, 4096, recompute="none", flash_attention=False)
    assert naive > 2 * flash


@pytest.mark.parametrize("kw, word", [(dict(tp=3), "n_chips"), (dict(recompute="some"), "recompute"),
                                      (dict(ep=2), "ep"), (dict(cp=3), "n_chips"), (dict(tp=0), "tp")])
def test_bad_layouts_name_the_argument(kw, word):
    with pytest.raises(ValueError, match=word):
        training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, **kw)


def test_batch_must_split_into_microbatches():
    with pytest.raises(ValueError, match="global_batch_tokens"):
        training.predict("llama3-8b", "h100", 64, 8192, 8192)


def test_plan_405b_on_16k_h100_keeps_tp_in_the_node_and_fits():
    plan = training.plan("llama3-405b", "h100", 16384, 16 * 2**20, 8192, efficiency="calibrated")
    assert plan.tp == 8 and plan.prediction.fits and plan.prediction.memory_per_chip <= 80e9
    assert plan.mfu < plan.ideal_mfu


def test_plan_405b_pipelines_over_at_least_8_stages():
    """FSDP over 1,024 ranks pays a 1,023-step ring per layer and hides only behind that layer: TP 8 x PP 8 wins
    (by a hair over TP 8 x PP 4 with FSDP: chapter 13 shows the candidates)."""
    assert training.plan("llama3-405b", "h100", 16384, 16 * 2**20, 8192, efficiency="calibrated").pp >= 8


def _megatron_core_matches():
    hits = 0
    for run in v.runs():
        if run.id.startswith("Megatron-Core"):
            p = run.params
            # what Megatron-Core r0.8 offered and these runs used: its distributed optimizer (ZeRO-1, no FSDP)
            # and --tp-comm-overlap
            plan = training.plan(run.model, run.hardware, run.n_chips, p["global_batch_tokens"], p["seq_len"],
                                 efficiency="calibrated", fsdp=1, tp_overlap=True)
            hits += p["tp"] * p["pp"] / 2 <= plan.tp * plan.pp <= 2 * p["tp"] * p["pp"]
    return hits


def test_plan_rediscovers_megatron_core_layouts():
    assert _megatron_core_matches() >= 7


def test_plan_default_is_the_books_search():
    """Without efficiency=, plan is the book's layout search (chapters' answers unchanged)."""
    plan = training.plan("llama3-70b", "v5p", 8960, 4 * 2**20, seq_len=4096)
    assert plan.prediction is None


def test_expert_parallelism_splits_the_experts_and_pays_its_all_to_alls():
    one = training.predict("deepseek-v3", "h800", 2048, 15360 * 4096, 4096, pp=16, ep=1)
    wide = training.predict("deepseek-v3", "h800", 2048, 15360 * 4096, 4096, pp=16, ep=64)
    assert wide.memory["weights"] < one.memory["weights"] / 10
    assert one.breakdown["ep"] == 0 < wide.breakdown["ep"]


def test_a_tpu_slice_is_accepted_as_hardware():
    mesh = sb.TpuMesh("v4", X=8, Y=8, Z=8)
    p = training.predict("llama3-70b", mesh, 512, 512 * 8192, 8192, tp=8, fsdp=64)
    assert p.step_time > training.predict("llama3-70b", mesh, 512, 512 * 8192, 8192, tp=8, fsdp=64,
                                          efficiency="ideal").step_time


def test_the_last_stage_carries_the_head_and_the_loss():
    """The unembedding's extra share and the cross-entropy's passes over [tokens, V/t] fp32 logits land on the
    last stage (all of the head without a pipeline, so only the loss's bytes then)."""
    from scalebook.training.prediction import CROSS_ENTROPY_BYTES

    one = training.predict("llama3-8b", "h100", 8, 8 * 8192, 8192)
    W = sb.get_chip("h100").hbm_bandwidth * sb.get_chip("h100").efficiency("calibrated").hbm
    model = sb.get_model("llama3-8b")
    assert one.breakdown["last stage"] == pytest.approx(CROSS_ENTROPY_BYTES * 8192 * model.V / W)
    staged = training.predict("llama3-8b", "h100", 8, 8 * 8192, 8192, pp=8)
    assert staged.breakdown["last stage"] > one.breakdown["last stage"]
    assert "last stage" not in training.predict("llama3-8b", "h100", 8, 8 * 8192, 8192, efficiency="ideal").breakdown


def test_fsdp_over_many_nodes_is_exposed_layer_by_layer():
    """Each layer's gather hides only behind that layer's forward; over 1,024 one-GPU-per-node ranks its ring's
    latency and bandwidth outlast it, so FSDP shows on the critical path where ZeRO-1 does not."""
    kw = dict(tp=8, pp=2, virtual_stages=4, recompute="full")
    fsdp = training.predict("llama3-405b", "h100", 16384, 16 * 2**20, 8192, fsdp=1024, **kw)
    zero1 = training.predict("llama3-405b", "h100", 16384, 16 * 2**20, 8192, **kw)
    assert fsdp.breakdown["dp"] > 0.1 * fsdp.step_time > zero1.breakdown["dp"]


def test_plan_can_be_held_to_the_frameworks_data_parallelism():
    zero1 = training.plan("llama3-70b", "h100", 256, 2**21, 8192, efficiency="calibrated", fsdp=1)
    assert not zero1.layout.sharded and not zero1.prediction.layout.sharded
    with pytest.raises(ValueError, match="fsdp"):
        training.plan("llama3-70b", "h100", 256, 2**21, 8192, efficiency="calibrated", fsdp="yes")


def test_tp_overlap_hides_a_collective_only_behind_its_own_matmul():
    """Split with the matmul next to it, an AllGather or ReduceScatter of [4096, 7168] over 8 H100s outlasts the
    small output projection (D x D/8) but not the MLP's: some TP time stays exposed, far less than without."""
    kw = dict(tp=8, recompute="none")
    plain = training.predict("llama3-70b", "h100", 64, 8 * 4096, 4096, **kw)
    overlapped = training.predict("llama3-70b", "h100", 64, 8 * 4096, 4096, tp_overlap=True, **kw)
    assert 0 < overlapped.breakdown["tp"] < 0.5 * plain.breakdown["tp"]
    assert overlapped.hidden["tp"] > 0


def test_balanced_stages_let_the_head_and_loss_take_a_layers_place():
    unbalanced = _llama(recompute="none")
    balanced = _llama(recompute="none", balanced_stages=True)
    assert unbalanced.breakdown["last stage"] > 0 == balanced.breakdown["last stage"]
    assert balanced.step_time < unbalanced.step_time


def test_gradients_reduce_scatter_at_their_width():
    """Megatron (bf16 forces fp32 gradient accumulation and reduction) and Llama 3 reduce-scatter fp32 gradients:
    twice the bytes of bf16 ones."""
    kw = dict(tp=8, pp=1, efficiency="ideal")
    fp32 = training.predict("llama3-70b", "h100", 512, 2**22, 8192, **kw)
    bf16 = training.predict("llama3-70b", "h100", 512, 2**22, 8192, grad_bytes=2, **kw)
    assert fp32.hidden["dp"] > bf16.hidden["dp"]
