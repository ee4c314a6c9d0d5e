"""The framework is an input (issue #38): `training.predict(..., framework=...)`, each family's share read off its
own published runs (never a held-out row), the generic default scored by leave-one-source-out."""

import dataclasses
import statistics

import pytest

import scalebook as sb
import scalebook.validation as v
from scalebook.training.frameworks import NO_FRAMEWORK, Framework, framework_names, get_framework

FAMILIES = ("megatron", "torchtitan", "composer", "maxtext", "deepspeed", "generic")


def _step(framework, hardware="h100", dtype="bf16"):
    return sb.training.predict("llama3-8b", hardware, 64, 64 * 8192, 8192, fsdp=64, dtype=dtype,
                               framework=framework).step_time


def test_the_six_families_and_their_names():
    assert set(framework_names()) == set(FAMILIES)
    assert get_framework("NeMo").key == get_framework("Megatron-Core").key == "megatron"
    assert get_framework("llm_foundry").key == "composer" and get_framework("MaxText").key == "maxtext"
    assert _step("generic") == _step(get_framework("default")) == sb.training.predict(
        "llama3-8b", "h100", 64, 64 * 8192, 8192, fsdp=64).step_time


@pytest.mark.parametrize("bad", ["torchtitn", "megatrom", 3, None])
def test_an_unknown_framework_is_refused_with_the_closest_names(bad):
    with pytest.raises(ValueError, match="framework=") as info:
        _step(bad)
    if bad == "torchtitn":
        assert "'torchtitan'" in str(info.value)


def test_the_share_divides_the_modelled_step():
    """The framework term is the busy total over the share, less the total: steps scale as the inverse shares."""
    h100 = sb.get_chip("h100").efficiency("calibrated")
    megatron, composer = _step("megatron"), _step("composer")
    assert megatron * h100.framework == pytest.approx(composer * get_framework("composer").share)
    assert _step(NO_FRAMEWORK) == pytest.approx(megatron * h100.framework)
    assert _step(Framework("mine", share=0.5)) == pytest.approx(2 * _step(NO_FRAMEWORK))
    assert get_framework("torchtitan").share_on(h100, "fp8") == get_framework("torchtitan").share_fp8


def test_the_ideal_bound_has_no_framework():
    ideal = {f: sb.training.predict("llama3-8b", "h100", 64, 64 * 8192, 8192, fsdp=64, efficiency="ideal",
                                    framework=f).step_time for f in FAMILIES}
    assert len(set(ideal.values())) == 1


def test_a_family_without_a_source_is_the_generic_share():
    assert get_framework("deepspeed").share == get_framework("generic").share


def test_each_stored_share_is_what_its_calibration_rows_give():
    """Change detector: frameworks.toml's numbers are recomputed from their rows (none is typed by hand)."""
    composer, titan = get_framework("composer"), get_framework("torchtitan")
    assert composer.share == pytest.approx(v.derived_framework_share("h100", "bf16", "composer"), rel=1e-3)
    assert titan.share == pytest.approx(v.derived_framework_share("h100-hbm2e", "bf16", "torchtitan"), rel=1e-3)
    assert titan.share_fp8 == pytest.approx(v.derived_framework_share("h100-hbm2e", "fp8", "torchtitan"), rel=1e-3)
    maxtext = get_framework("maxtext")
    assert maxtext.share == pytest.approx(v.derived_framework_share("v6e", "bf16", "maxtext"), rel=1e-3)
    assert get_framework("generic").share == pytest.approx(v.generic_framework_share(), rel=1e-3)
    assert get_framework("megatron").share is None  # the chip's own (chips.toml, test_in_sample)


def test_no_share_is_read_off_a_held_out_row():
    """A family's share is read off rows marked calibration: its own tables outside the suite (calibration_runs)
    or the suite's calibration rows; the suite's held-out rows of the same family are scored with it."""
    used = {"composer": "llm_foundry_small", "torchtitan": "torchtitan_asynctp", "maxtext": "tpu_recipes_dense"}
    for family, source in used.items():
        rows = [r for r in v.calibration_runs() if r.source == source]
        assert rows and {r.status for r in rows} == {"calibration"}
        assert {r.params["framework"] for r in rows} == {family}
        assert not [r for r in v.runs() if r.source == source]
    held = {r.params["framework"] for r in v.runs() if r.kind == "training" and r.status == "held-out"}
    assert held <= {"composer", "torchtitan", "maxtext", "megatron"}


def test_maxtexts_share_is_read_off_its_own_recipes_on_a_chip_whose_matmul_rate_is_measured():
    """MaxText's share: the median of 14 runs of tpu-recipes' dense MaxText recipes on TPU v6e (Llama 3.1 8B to
    405B, Llama 2 70B, Mistral 7B, GPT-3 175B; v6e-8 to 2 x v6e-256), 0.853; v6e's matmul factor is a measurement
    (chips.toml: gemm_v6e), not an assumption. The suite's MaxText rows are other pages: MaxText's README tables
    (v5e held out, v5p development) and tpu-recipes' Mixtral recipe (held out)."""
    rows = [r for r in v.calibration_runs() if r.source == "tpu_recipes_dense"]
    assert len(rows) == 14 and {r.hardware for r in rows} == {"v6e"}
    assert "XLA bf16 8192^3 matmul on one TPU v6e" in sb.get_chip("v6e").efficiency("calibrated").sources["matmul"]
    assert get_framework("maxtext").share == pytest.approx(0.853, abs=0.001)
    assert {r.source for r in v.runs() if r.params.get("framework") == "maxtext"} == \
        {"maxtext_v5e", "maxtext_v5p", "tpu_recipes_mixtral"}


def test_every_training_row_names_its_framework():
    for r in (*v.runs(), *v.calibration_runs()):
        if r.kind == "training":
            assert get_framework(r.params["framework"]).key == r.params["framework"], r.id


def test_a_family_share_beats_megatrons_on_its_own_held_out_rows():
    """llm-foundry's >= 128-GPU rows (held out) with Composer's share, read off the same page's 8-64 GPU table:
    median |error| within 12 %, where Megatron-Core's share (what every stack was priced with before) was 21 % too
    fast."""
    rows = [r for r in v.runs() if r.source == "llm_foundry"]
    assert len(rows) == 18 and {r.status for r in rows} == {"held-out"}

    def errors(framework):  # speed errors: positive when the model is too fast
        predicted = [v.predict_run(r, framework=framework) for r in rows]
        return [p / r.published - 1 if r.metric in v.FASTER_IS_HIGHER else r.published / p - 1
                for p, r in zip(predicted, rows)]

    ours, megatron = errors(None), errors("megatron")
    assert statistics.median(abs(e) for e in ours) <= 0.12
    assert statistics.median(megatron) > 0.15 > statistics.median(abs(e) for e in ours)


def test_leave_one_source_out_median_at_most_15_percent():
    """Issue #38's must-show: the generic share read off every training source but one predicts that one; the
    median over sources of their median |error| is at most 15 % (14.3 % over 16 sources; torchtitan's runs on 500 W
    H100s miss by 35-56 %, NVIDIA's stacks by 5-10 %: the share's spread, chapter 13)."""
    assert v.leave_one_source_out()["median abs error"] <= 0.15


def test_leave_one_source_out_predicts_each_source_with_a_share_read_without_it():
    loso = v.leave_one_source_out()
    sources = {r.source for r in (*v.runs(), *v.calibration_runs()) if r.kind == "training"}
    assert {s["source"] for s in loso["sources"]} == sources
    for s in loso["sources"]:
        assert s["share"] == pytest.approx(v.generic_framework_share(leave_out=s["source"]))
    errors = [s["median abs error"] for s in loso["sources"]]
    assert loso["median abs error"] == pytest.approx(statistics.median(errors))


def test_leaving_a_source_out_moves_the_generic_share():
    shares = {s["source"]: s["share"] for s in v.leave_one_source_out()["sources"]}
    assert min(shares.values()) < v.generic_framework_share() < max(shares.values())
    with pytest.raises(ValueError, match="leave_out"):
        v.generic_framework_share(leave_out="llm_foundri")


def test_the_planner_takes_the_framework_and_keeps_its_ranking():
    """`plan(..., framework=...)` prices every candidate with that family's share: one share divides every layout's
    busy step alike, so the layout chosen does not move and the MFU moves by the ratio of the shares."""
    kw = dict(efficiency="calibrated")
    generic = sb.training.plan("llama3-70b", "h100", 256, 4 * 2**20, 8192, **kw)
    megatron = sb.training.plan("llama3-70b", "h100", 256, 4 * 2**20, 8192, framework="megatron", **kw)
    assert (generic.tp, generic.pp, generic.fsdp) == (megatron.tp, megatron.pp, megatron.fsdp)
    h100 = sb.get_chip("h100").efficiency("calibrated")
    assert megatron.mfu / generic.mfu == pytest.approx(h100.framework / get_framework("generic").share)


def test_zero_2_rows_are_priced_exactly_as_zero_1_since_each_replica_runs_one_microbatch():
    """llm-foundry's 1B and 3B rows ran ZeRO-2 (SHARD_GRAD_OP): gradients reduce-scattered after each microbatch,
    weights replicated. With one microbatch per replica and step that is ZeRO-1's traffic, which the model prices;
    a ZeRO-2 row with more microbatches is refused, not priced as ZeRO-1."""
    rows = [r for r in v.runs() if r.params.get("zero_stage") == 2]
    assert len(rows) == 6
    for r in rows:
        p = r.params
        assert p["global_batch_tokens"] / r.n_chips / p["microbatch_tokens"] == 1 and p["fsdp"] is False
        assert v.predict_run(r) > 0
    bad = dataclasses.replace(rows[0], params={**rows[0].params, "microbatch_tokens": rows[0].params[
        "microbatch_tokens"] / 2})
    with pytest.raises(ValueError, match="zero_stage=2"):
        v.predict_run(bad)
