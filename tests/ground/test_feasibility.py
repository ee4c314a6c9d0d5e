"""A setup that does not fit says so (issue #16): decode, prefill, training and serving results carry the memory per
chip and whether it fits, and their one-line summaries and HTML say 'does not fit: 140 GB > 16 GB of HBM'."""

import pytest

import scalebook as sb
from scalebook.estimate import feasibility
from scalebook.hardware.gpu import get_cluster


def test_feasibility_says_it_plainly():
    assert feasibility(140e9, 16e9) == "does not fit: 140 GB > 16 GB of HBM"
    assert feasibility(12e9, 16e9) == "fits: 12 GB of 16 GB of HBM"
    with pytest.raises(ValueError, match="memory_per_chip=nan"):
        feasibility(float("nan"), 16e9)


def test_llama70b_on_one_v5e_does_not_fit():
    # The example: 140 GB of bf16 weights (and 512 caches of 32k tokens) on one 16 GB chip.
    step = sb.inference.decode_step("llama3-70b", "v5e", 1, 512, 32768)
    weights = sb.get_model("llama3-70b").param_count() * 2
    caches = sb.inference.kv_cache_bytes("llama3-70b", 32768, 512)
    assert step.memory_per_chip == pytest.approx(weights + caches)
    assert not step.fits
    assert "does not fit: 5.64 TB > 16 GB of HBM" in str(step)
    assert "does not fit" in step._repr_html_()


def test_a_setup_that_fits_says_so_in_its_summary_only():
    step = sb.inference.decode_step("llama3-8b", "v5e", 8, 8, 4096)
    assert step.fits and step.memory_per_chip < 16e9
    assert step.summary()["memory/chip"].startswith("fits: ")
    assert "fit" not in str(step)  # the one-liner stays as the chapters print it


def test_prefill_counts_weights_and_the_prompts_cache():
    p = sb.inference.prefill("llama3-70b", "v5e", 1, 4096)
    assert not p.fits and "tokens: does not fit: 142 GB > 16 GB of HBM; " in str(p)
    assert sb.inference.prefill("llama3-70b", "v5e", 16, 4096).fits


def test_training_prediction_carries_its_memory():
    p = sb.training.predict("llama3-70b", get_cluster("h100-superpod"), 8, 2**20, 8192, tp=8)
    assert not p.fits and p.memory_per_chip > 80e9
    assert str(p).startswith("does not fit: ") and "> 80 GB of HBM; step " in str(p)


def test_plan_never_returns_a_layout_that_does_not_fit():
    cluster = get_cluster("gb200-superpod")
    p = sb.training.plan("llama3-70b", cluster, 576, 4 * 2**20)  # the crash: now whole nodes, rest idle
    assert p.fits and p.memory_per_chip <= p.chip.hbm_bytes
    assert p.chips_used == 512 and "512 of 576 (64 idle)" in str(p)
    with pytest.raises(ValueError, match="no layout of LLaMA 3.1-405B fits 8 × NVIDIA H100.*> 80 GB of HBM"):
        sb.training.plan("llama3-405b", get_cluster("h100-superpod"), 8, 2**20)


def test_serving_report_says_when_its_slots_do_not_fit():
    workload = sb.serving.Workload(4.0)
    report = sb.serving.simulate(workload, sb.serving.Engine("llama3-8b", "v5e", 8, slots=4096), 20)
    assert not report.fits and report.memory_per_chip > 16e9
    assert "does not fit" in str(report) and "does not fit" in report._repr_html_()
    assert sb.serving.simulate(workload, sb.serving.Engine("llama3-8b", "v5e", 8), 20).fits
