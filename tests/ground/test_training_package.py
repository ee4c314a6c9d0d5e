"""The training package of issue #27: one vocabulary (Layout), one candidate loop, the ideal models that agree term
by term, and what readers run priced (TPUs, FSDP that re-shards, MoE with EP)."""

import dataclasses
import importlib

import pytest

import scalebook as sb
from scalebook import faces, gemm, inference, training
from scalebook.training import Layout


def test_layout_is_validated_once_and_reads_chapter_5s_letters():
    assert Layout.from_strategy("fsdp_tp", X=16, Y=4) == Layout(fsdp=16, tp=4)
    assert Layout.from_strategy("dp_tp", X=8, Y=8, P=4).chips == 256
    assert Layout(dp=2, fsdp=128, tp=2).data_parallel == 256 and Layout(fsdp=2).sharded
    with pytest.raises(ValueError, match="ep=3"):
        Layout(fsdp=8, ep=3)
    with pytest.raises(ValueError, match="virtual_stages"):
        Layout(virtual_stages=2)
    with pytest.raises(ValueError, match="strategy"):
        Layout.from_strategy("zero", X=2)
    with pytest.raises(ValueError, match="tp"):
        Layout(tp=0)


def test_modules_bind_as_modules_and_the_face_serves_its_table():
    for name in ("layout", "pipeline", "footprint", "book", "terms", "prediction", "planner"):
        module = importlib.import_module(f"scalebook.training.{name}")
        assert module.__name__ == f"scalebook.training.{name}" and getattr(training, name) is module
    assert set(training.__all__) == set(faces.served("scalebook.training"))
    assert set(training.__all__) >= {"predict", "plan", "step_time", "memory", "Layout", "Prediction"}


def test_the_two_ideal_models_agree_on_the_compute_and_name_what_differs():
    """Llama 3 8B on 64 H100, TP 8 x FSDP 8: the book's step_time and predict's ideal bound count the same model
    FLOPs at peak; what predict adds is named in its breakdown (recompute), and step_time without a sequence
    length leaves out exactly the attention term."""
    cluster = sb.GpuCluster("h100", gpus=64)
    tokens, seq = 64 * 8192, 8192
    ideal = training.predict("llama3-8b", cluster, 64, tokens, seq, tp=8, fsdp=8, efficiency="ideal")
    with_attention = training.step_time("llama3-8b", cluster, 64, tokens, "fsdp_tp", X=8, Y=8, seq_len=seq)
    without = training.step_time("llama3-8b", cluster, 64, tokens, "fsdp_tp", X=8, Y=8)
    b = ideal.breakdown
    assert set(b) == {"compute", "attention", "recompute"}
    assert with_attention.t_math == pytest.approx(b["compute"] + b["attention"], rel=1e-9)
    assert without.t_math == pytest.approx(b["compute"], rel=1e-9)
    # the bound is the larger of the compute and each collective, as the book's is; both move FSDP's weights and
    # gradients once a step, however many microbatches (here 8) share it, so the bound is compute-bound where
    # the book's 12·B·D bytes of TP a layer make step_time wait on NVLink (sb.training.ideals names each term)
    assert ideal.step_time == pytest.approx(max(sum(b.values()), *ideal.hidden.values()), rel=1e-9)
    assert ideal.step_time == pytest.approx(sum(b.values()))
    assert ideal.step_time < with_attention.t_comms == with_attention.time
    halves = training.predict("llama3-8b", cluster, 64, tokens, seq, tp=8, fsdp=8, efficiency="ideal",
                              microbatch_tokens=seq / 2)
    assert halves.hidden["dp"] == pytest.approx(ideal.hidden["dp"]) and halves.layout.microbatches == 16
    kept = training.predict("llama3-8b", cluster, 64, tokens, seq, tp=8, fsdp=8, efficiency="ideal",
                            reshard_after_forward=False, recompute="none")
    assert kept.hidden["dp"] < ideal.hidden["dp"]


def test_plan_carries_the_layout_and_the_prediction_that_priced_it():
    found = training.plan("llama3-70b", "h100", 256, 4 * 2**20, 8192, efficiency="calibrated")
    assert found.layout == found.prediction.layout and found.layout.chips == 256
    assert found.mfu == found.prediction.mfu and found.ideal.efficiency == "ideal"
    book = training.plan("llama3-70b", "v5p", 4096, 2**21, seq_len=4096)
    assert book.layout == Layout(fsdp=book.fsdp, tp=book.tp) and book.prediction is None


def test_calibrated_plan_for_llama3_70b_on_256_h100_is_in_the_published_range():
    """Published BF16 runs of 70B-class models on H100 report about 38-43 % MFU; the issue asks 35-50 %."""
    found = training.plan("llama3-70b", "h100", 256, 4 * 2**20, 8192, efficiency="calibrated")
    assert 0.35 <= found.mfu <= 0.50 and found.fits
    assert found.ideal_mfu > found.mfu


def test_plan_searches_expert_parallelism_for_mixtral():
    mixtral = sb.validation.model("mixtral-8x7b")
    found = training.plan(mixtral, "h100", 64, 4 * 2**20, 4096, efficiency="calibrated")
    assert any("EP " in row["layout"] for row in found.candidates.rows)
    assert found.ep > 1
    dense = training.plan("llama3-8b", "h100", 64, 4 * 2**20, 4096, efficiency="calibrated")
    assert all("EP " not in row["layout"] for row in dense.candidates.rows)


def test_plan_lays_out_a_tpu_slice_that_fits_llama3_8b_on_a_v5e_256():
    found = training.plan("llama3-8b", "v5e", 256, 2**20, 8192, efficiency="calibrated")
    assert found.fits and found.memory_per_chip <= 16e9 and found.layout.chips == 256
    with pytest.raises(ValueError, match="one TPU v5e slice"):
        training.plan("llama3-8b", "v5e", 512, 2**21, 8192, efficiency="calibrated")


def test_plan_keeps_the_degrees_it_is_given():
    found = training.plan("llama3-70b", "h100", 256, 4 * 2**20, 8192, efficiency="calibrated", tp=8, pp=4,
                          recompute="full")
    assert (found.tp, found.pp, found.prediction.settings["recompute"]) == (8, 4, "full")
    with pytest.raises(ValueError, match="cp=2: the book's model"):
        training.plan("llama3-70b", "h100", 256, 4 * 2**20, 8192, cp=2)
    with pytest.raises(ValueError, match="recompute"):
        training.plan("llama3-70b", "h100", 256, 4 * 2**20, 8192, efficiency="calibrated", recompute="some")


@pytest.mark.parametrize("chip", ["v4", "v5e", "v5p", "v6e"])
def test_calibrated_prices_tpu_training_and_decode(chip):
    decode = inference.decode_step("llama3-8b", chip, 8, 32, 4096, efficiency="calibrated")
    assert decode.time > inference.decode_step("llama3-8b", chip, 8, 32, 4096).time > 0
    step = training.predict("llama3-8b", chip, 64, 64 * 8192, 8192, fsdp=64, recompute="full")
    ideal = training.predict("llama3-8b", chip, 64, 64 * 8192, 8192, fsdp=64, recompute="full", efficiency="ideal")
    assert 0 < step.mfu < ideal.mfu <= 1


def test_fsdp_reshards_after_use_unless_told_to_keep_the_weights():
    """An 8B model FSDP over 256 v5e chips holds 1/256 of its weights plus two gathered layers, not all of them."""
    kw = dict(fsdp=256, recompute="full")
    resharded = training.predict("llama3-8b", "v5e", 256, 256 * 8192, 8192, **kw)
    kept = training.predict("llama3-8b", "v5e", 256, 256 * 8192, 8192, reshard_after_forward=False, **kw)
    model = sb.get_model("llama3-8b")
    layer = model.param_count() / model.L * 2
    assert resharded.memory["weights"] == pytest.approx(model.param_count() * 2 / 256 + 2 * layer)
    assert kept.memory["weights"] == pytest.approx(model.param_count() * 2)
    assert resharded.fits and not kept.fits
    assert resharded.hidden["dp"] > kept.hidden["dp"]  # re-gathering costs bytes, hidden behind compute here


def test_multi_slice_runs_reduce_across_slices_over_dcn():
    one = training.predict("llama3-8b", "v5e", 512, 512 * 8192, 8192, dp=2, fsdp=256, recompute="full")
    assert one.layout == Layout(dp=2, fsdp=256, microbatches=1)
    assert one.hidden["dcn"] > 0
    assert one == training.predict("llama3-8b", "v5e", 512, 512 * 8192, 8192, fsdp=256, recompute="full", slices=2)
    with pytest.raises(ValueError, match="DCN"):
        training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, dp=2, fsdp=32)


def test_moe_decode_reads_the_experts_its_batch_routes_to():
    """DeepSeek-V3 at batch 1 on 8 H800 reads its ~37.6B active parameters, not its 671B; with experts split
    16 ways (ch. 7's Q6) every group reads its expert once any token routes there."""
    ds = sb.get_model("deepseek-v3")
    assert inference.weights_read(ds, 1) == pytest.approx(ds.param_count(active=True))
    assert inference.weights_read(ds, 10_000) == pytest.approx(ds.param_count(), rel=1e-6)
    step = inference.decode_step(ds, "h800", 8, 1, 1024, param_bytes=1, efficiency="calibrated")
    W = 8 * sb.get_chip("h800").hbm_bandwidth * sb.get_chip("h800").efficiency("calibrated").hbm
    assert step.t_params == pytest.approx(ds.param_count(active=True) / W)
    assert step.memory_per_chip == pytest.approx(ds.param_count() / 8 + step.memory_per_chip - ds.param_count() / 8)
    moe = sb.TransformerConfig(L=16, D=4096, F=8192, N=32, K=8, H=128, V=32000, E=16, k=2)
    assert inference.weights_read(moe, 1, ep=16) == pytest.approx(moe.param_count())
    with pytest.raises(ValueError, match="ep=3"):
        inference.weights_read(moe, 1, ep=3)


def test_gemm_quantization_by_tiles_and_waves():
    """132 tiles of 128 x 128 on the H100's 132 SMs fill one wave exactly; 4096 x 4096 needs 1,024 of them, 7.76
    waves rounded up to 8 (97 %); a TPU v5e pads to its 128-wide MXU."""
    assert gemm.quantization(128 * 12, 128 * 11, "h100") == pytest.approx(1.0)
    assert gemm.quantization(4096, 4096, "h100") == pytest.approx(1024 / (8 * 132))
    assert gemm.quantization(100, 128, "v5e") == pytest.approx(100 / 128)
    assert gemm.quantization(8192, 8192, "v5e") == 1.0
    big, small = (gemm.layer_efficiency(sb.get_model("llama3-70b"), t, "h100", 4) for t in (8192, 128))
    assert small < big <= 1


# ---------------------------------------------------------------------- issue #39: the layout travels whole

LLAMA_405B_RUN = ("llama3-405b", "h100", 16384, 16 * 2**20, 8192)


def test_predict_prices_a_layout_given_whole_as_its_keyword_degrees_build_it():
    whole = Layout(fsdp=128, tp=8, pp=16, virtual_stages=2)
    by_layout = training.predict(*LLAMA_405B_RUN, layout=whole)
    by_keywords = training.predict(*LLAMA_405B_RUN, tp=8, pp=16, fsdp=128, virtual_stages=2)
    assert by_layout == by_keywords
    assert by_layout.layout == dataclasses.replace(whole, microbatches=by_layout.layout.microbatches)
    assert training.Layout.of(16384, tp=8, pp=16, fsdp=128, virtual_stages=2) == whole


def test_fsdp_is_a_degree_and_the_old_flag_warns_and_prices_the_same_layout():
    new = training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, tp=8, fsdp=8)
    with pytest.warns(DeprecationWarning, match="fsdp=True is deprecated"):
        old = training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, tp=8, fsdp=True)
    assert old == new and new.layout.fsdp == 8 and new.layout.dp == 1
    zero1 = training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, tp=8)
    assert zero1.layout == Layout(dp=8, tp=8, microbatches=8) and zero1 != new
    # two TPU slices, FSDP inside each: dp and fsdp as Layout says, or the old flag with slices=
    hybrid = training.predict("llama3-8b", "v5e", 512, 512 * 8192, 8192, dp=2, fsdp=256, recompute="full")
    with pytest.warns(DeprecationWarning):
        sliced = training.predict("llama3-8b", "v5e", 512, 512 * 8192, 8192, fsdp=True, recompute="full", slices=2)
    assert hybrid == sliced and hybrid.hidden["dcn"] > 0


def test_a_layout_and_keyword_degrees_together_or_a_layout_of_other_chips_are_refused_naming_layout():
    with pytest.raises(ValueError, match="layout=.*tp"):
        training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, layout=Layout(fsdp=8, tp=8), tp=8)
    with pytest.raises(ValueError, match="layout=.*256 chips, not n_chips=64"):
        training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, layout=Layout(fsdp=32, tp=8))
    with pytest.raises(ValueError, match="layout=.*DCN"):  # FSDP groups joined by DP are TPU slices only
        training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, layout=Layout(dp=2, fsdp=4, tp=8))
    with pytest.raises(ValueError, match="fsdp=3"):
        training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, tp=8, fsdp=3)


def test_training_memory_takes_a_layout_and_its_keyword_degrees_build_the_same_one():
    whole = Layout(fsdp=8, tp=8, pp=4, virtual_stages=2, microbatches=8)
    assert (training.training_memory("llama3-70b", 8192, whole)
            == training.training_memory("llama3-70b", 8192, tp=8, pp=4, fsdp=8, virtual_stages=2, microbatches=8))
    with pytest.warns(DeprecationWarning, match="fsdp"):
        old = training.training_memory("llama3-70b", 8192, tp=8, pp=4, dp=8, fsdp=True, virtual_stages=2,
                                       microbatches=8)
    assert old == training.training_memory("llama3-70b", 8192, whole)
    assert (training.training_memory("llama3-70b", 8192, Layout(dp=8, tp=8))["weights"]
            > training.training_memory("llama3-70b", 8192, Layout(fsdp=8, tp=8))["weights"])
    with pytest.raises(ValueError, match="layout=.*tp"):
        training.training_memory("llama3-70b", 8192, whole, tp=8)


def test_the_planner_hands_predict_each_candidate_as_one_layout(monkeypatch):
    from scalebook.training import planner

    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return training.predict(*args, **kwargs)

    monkeypatch.setattr(planner, "predict", spy)
    found = training.plan("llama3-8b", "h100", 16, 16 * 8192, 8192, efficiency="calibrated", tp=8)
    assert seen and all(isinstance(kw["layout"], Layout) for kw in seen)
    assert not any({"tp", "pp", "cp", "ep", "dp", "fsdp", "virtual_stages"} & set(kw) for kw in seen)
    assert found.layout == found.prediction.layout


@pytest.mark.parametrize("efficiency, hardware", [("book", "v5p"), ("calibrated", "h100")])
def test_plan_resolves_the_model_and_the_chip_by_name_once(monkeypatch, efficiency, hardware):
    """Today's route resolved the model with `get_model` seven times and more; the face resolves it and the chip
    once, and every function below it receives the objects."""
    import sys

    from scalebook import models
    from scalebook.hardware import chips

    calls = {"model": 0, "chip by name": 0}
    real_model, real_chip = models.get_model, chips.get_chip

    def get_model(name):
        calls["model"] += 1
        return real_model(name)

    def get_chip(name):
        calls["chip by name"] += isinstance(name, str)
        return real_chip(name)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("scalebook"):
            if getattr(module, "get_model", None) is real_model:
                monkeypatch.setattr(module, "get_model", get_model)
            if getattr(module, "get_chip", None) is real_chip:
                monkeypatch.setattr(module, "get_chip", get_chip)
    training.plan("llama3-8b", hardware, 64, 64 * 8192, 8192, efficiency=efficiency)
    assert calls == {"model": 1, "chip by name": 1}


def test_plan_names_the_books_model_and_the_old_none_warns():
    default = training.plan("llama3-70b", "v5p", 4096, 2**21, seq_len=4096)
    assert str(training.plan("llama3-70b", "v5p", 4096, 2**21, seq_len=4096, efficiency="book")) == str(default)
    with pytest.warns(DeprecationWarning, match="efficiency='book'"):
        old = training.plan("llama3-70b", "v5p", 4096, 2**21, seq_len=4096, efficiency=None)
    assert str(old) == str(default) and training.PLAN_MODES == ("book", "ideal", "calibrated")
    with pytest.raises(ValueError, match="efficiency"):
        training.plan("llama3-70b", "v5p", 4096, 2**21, seq_len=4096, efficiency="bound")


def test_plan_fixes_an_fsdp_degree_as_it_fixes_the_others():
    zero1 = training.plan("llama3-70b", "h100", 256, 2**21, 8192, efficiency="calibrated", fsdp=1)
    assert not zero1.layout.sharded and all(row["ZeRO"] == 1 for row in zero1.candidates.rows)
    with pytest.warns(DeprecationWarning):
        old = training.plan("llama3-70b", "h100", 256, 2**21, 8192, efficiency="calibrated", fsdp=False)
    assert old.layout == zero1.layout
    with pytest.raises(ValueError, match="fsdp"):
        training.plan("llama3-70b", "h100", 256, 2**21, 8192, fsdp=8)  # the book's model fixes no fsdp


def test_the_books_memory_takes_a_data_parallel_layout_as_its_chips_and_zero_stage():
    assert training.memory("llama3-70b", 2**21, layout=Layout(fsdp=4096)) == training.memory("llama3-70b", 2**21, 4096)
    assert training.memory("llama3-70b", 2**21, layout=Layout(dp=8)) == training.memory("llama3-70b", 2**21, 8, zero=1)
    with pytest.raises(ValueError, match="layout=.*training_memory"):
        training.memory("llama3-70b", 2**21, layout=Layout(fsdp=8, tp=8))
