"""Change detectors, not validation: every check here compares the model with a source that set one of its factors
(a calibration row) or that the model was changed while looking at (a development row). Agreement here is fit, by
construction; it shows that a change moved a calibrated answer, never that the model predicts a new run. The
validation that can fail for the model's sake is `test_validation.py`'s held-out rows and its pinned list of misses.
"""

import pytest

import scalebook as sb
import scalebook.validation as v
from scalebook import collectives, inference

LLAMA2_70B = v.model("llama2-70b")
# Llama-2-70B bf16 batch-1 tokens/s on 2/4/8 A100 (330 W); chapter 13 checks the 8-GPU figure too.
GPT_FAST_TP = ((2, 21.32), (4, 38.01), (8, sb.published("13_validation.gpt_fast_tp8_tokens_per_s").value))


def test_in_sample_gpt_fast_decode_is_what_its_35_us_allreduce_was_read_off():
    """Change detector: the A100's per-call latency (chips.toml `latency_node`, source `gpt_fast`) and HBM share
    were read off these three gpt-fast rows, so the calibrated model meets them by construction. What is left per
    token after the weight reads, over its 160 AllReduces, is ~35-39 µs each."""
    weights = LLAMA2_70B.param_count() * 2
    for n, tokens_per_s in GPT_FAST_TP:
        left = 1 / tokens_per_s - weights / n / 1.7e12
        assert left / (2 * LLAMA2_70B.L) == pytest.approx(35e-6, rel=0.15)
        ours = inference.decode_step(LLAMA2_70B, "a100", n, 1, 200, efficiency="calibrated")
        assert ours.tokens_per_second == pytest.approx(tokens_per_s, rel=0.05)
        assert inference.decode_step(LLAMA2_70B, "a100", n, 1, 200).tokens_per_second > tokens_per_s
    assert {r.status for r in v.runs() if r.id.startswith("gpt-fast Llama-2-70B TP")} == {"calibration"}


def test_in_sample_gpt_fast_two_point_fit_meets_its_third_row_and_bandwidth():
    """Change detector for problem set 13's fit: two gpt-fast rows (TP2, TP8) give one GPU's weight-read time A
    and the per-AllReduce cost a; the third row (TP4) and gpt-fast's stated ~1.7 TB/s come out. All three rows
    are the A100 factors' own source, so this checks the arithmetic, not the model."""
    (_, t2), (_, t4), (_, t8) = GPT_FAST_TP
    A = (1 / t2 - 1 / t8) / (1 / 2 - 1 / 8)
    a = (1 / t8 - A / 8) / (2 * LLAMA2_70B.L)
    assert 1 / (A / 4 + 2 * LLAMA2_70B.L * a) == pytest.approx(t4, rel=1e-3)
    assert 2 * LLAMA2_70B.param_count() / A == pytest.approx(1.7e12, rel=0.03)


@pytest.mark.parametrize("kind, published", [("all_reduce", 367.2), ("all_gather", 361.4),
                                             ("reduce_scatter", 362.9)])
def test_in_sample_nccl_bus_bandwidth_on_8_h200(kind, published):
    """Change detector: nccl-tests' busbw on 8 x H200 at 16 GiB (ml-engineering) is the source (`nccl_h200`) the
    H200's collective factors were read off; the calibrated model gives it back within 10 %."""
    V = 16 * 2**30
    t = collectives.collective(kind, sb.GpuCluster("h200", gpus=8), None, V, efficiency="calibrated").time
    busbw = V / t * (2 if kind == "all_reduce" else 1) * 7 / 8
    assert busbw / 1e9 == pytest.approx(published, rel=0.10)
    assert "nccl-tests busbw on 8 x H200" in sb.get_chip("h200").efficiency("calibrated").sources["collectives"]


def test_in_sample_layer_overhead_and_framework_factors_are_what_their_calibration_rows_give():
    """Change detector: the factors stored in chips.toml are recomputed from their calibration rows (none is typed
    by hand), so a changed model or row that moves a factor fails here until chips.toml follows."""
    for chip in ("h100", "a100"):
        eff = sb.get_chip(chip).efficiency("calibrated")
        assert eff.layer_overhead == pytest.approx(v.derived_layer_overhead(chip), rel=1e-3)
        assert eff.framework == pytest.approx(v.derived_framework_share(chip, "bf16"), rel=1e-3)
    h100 = sb.get_chip("h100").efficiency("calibrated")
    assert h100.framework_fp8 == pytest.approx(v.derived_framework_share("h100", "fp8"), rel=1e-3)
    # the per-layer cost of short prompts is one kernel-scale cost: 100-200 us on both GPUs
    assert 100e-6 < v.derived_layer_overhead("a100") < v.derived_layer_overhead("h100") < 200e-6


def _development(prefix: str, count: int) -> list[dict]:
    """The result rows whose run starts with `prefix`: exactly `count` of them, all development rows."""
    rows = [r for r in v.results() if r["run"].startswith(prefix)]
    assert len(rows) == count and {r["status"] for r in rows} == {"development"}, rows
    return rows


def test_in_sample_memory_within_ten_percent_of_korthikanti():
    """Change detector: Korthikanti's 12 memory rows are development rows (the memory model was written against
    them); each within 10 %."""
    rows = [r for r in v.results() if r["metric"].endswith("_gib")]
    assert len(rows) == 12 and {(r["source"], r["status"]) for r in rows} == {("korthikanti2022", "development")}
    for r in rows:
        assert abs(r["error"]) <= 0.10, (r["run"], r["error"])


def test_in_sample_mixtral_decode_reads_only_the_experts_its_batch_routes_to():
    """Change detector: gpt-fast's Mixtral 8x7B bf16 batch-1 decode (2/4/8 A100) is a development row set: within
    20 % once a step reads the 2 experts a token routes to, not all 8 (52-65 % too slow before)."""
    for r in _development("gpt-fast Mixtral-8x7B TP", 3):
        assert abs(r["error"]) <= 0.20, r


def test_in_sample_tensorrt_llm_static_batches_once_the_kernel_reads_kv_per_query_head():
    """Change detector: v0.6.1's masked MHA kernel reads each K/V head once per query head (8x for Llama-2-70B);
    with that read count the four Llama-2-70B static batches (development rows) land within 20 %, without it they
    were 28-140 % optimistic."""
    rows = [r for r in _development("TRT-LLM Llama-2-70B fp8 TP", 6) if " x " in r["run"]]
    assert len(rows) == 4
    for r in rows:
        assert abs(r["error"]) <= 0.20, r


def test_in_sample_summary_numbers_the_chapter_quotes():
    """Change detector, not a claim of accuracy: chapter 13 quotes these numbers of our own model; a change to the
    model that moves them must move the chapter's prose too (and turns held-out rows it was tuned on into
    development rows)."""
    s = v.summary()
    # median: 0.202 before #38's frameworks, 0.110 before MaxText's share was read off its v6e recipes, 0.106
    # before torchtitan's six CP rows became development rows
    assert s["test rows"]["median abs error"] == pytest.approx(0.105, abs=0.002)
    # bias: 0.202 before #38's frameworks, 0.076 before its FP8 casts and recomputed attention, 0.0685 before
    # MaxText's own share, 0.017 before torchtitan's CP rows became development rows
    assert s["test rows"]["bias"] == pytest.approx(0.008, abs=0.002)
    # development rows: 0.072 before #38's v5p rows, 0.111 before MaxText's share was read off its v6e recipes,
    # 0.061 before torchtitan's CP rows joined them
    assert s["development rows"]["median abs error"] == pytest.approx(0.0691, abs=0.002)
    assert s["memory beyond 10%"] == []
