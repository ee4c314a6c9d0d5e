"""The validation suite (issue #19): every ideal prediction a bound, the calibrated model within its
thresholds, each disagreement shown with its reason, every figure cited."""

import statistics

import pytest

import scalebook.validation as v


def test_every_run_is_cited_and_has_a_known_metric():
    cited = v.sources()
    for run in v.runs():
        assert run.source in cited and run.metric in v.METRICS and run.published > 0
        assert run.check in ("V", "S", "D")


def test_every_ideal_prediction_is_a_bound():
    """The book's model at peak never predicts a run slower than it was measured."""
    assert v.summary("ideal")["not a bound"] == []
    for row in v.results("calibrated"):
        if row["bound"] is not None:
            assert row["bound"], row["run"]


def test_memory_within_ten_percent_of_korthikanti():
    rows = [r for r in v.results() if r["metric"].endswith("_gib")]
    assert len(rows) == 12
    for r in rows:
        assert abs(r["error"]) <= 0.10, (r["run"], r["error"])


def test_rows_beyond_35_percent_are_exactly_the_shown_disagreements():
    """Every run within ±35 % unless the data file says why it is not (and then it must really miss)."""
    s = v.summary()
    marked = {r.id for r in v.runs() if r.disagreement}
    assert set(s["beyond 35%"]) == marked
    assert len(v.disagreements()) == len(marked)


def test_gpt_fast_tensor_parallel_decode_within_five_percent():
    for r in v.results():
        if r["run"].startswith("gpt-fast Llama-2-70B TP"):
            assert abs(r["error"]) <= 0.05, r


@pytest.mark.xfail(strict=True, reason="Disagreement: the calibrated median absolute error is 15.6 % over all 47 "
                   "throughput/time rows (16.4 % over the 44 held out from calibration, 15.0 % over the rows not "
                   "marked as disagreements), not the 15 % the issue asks: the training rows stay 10-25 % "
                   "optimistic; see chapter 13 and validation.disagreements()")
def test_calibrated_median_error_at_most_15_percent():
    assert v.summary()["median abs error"] <= 0.15


@pytest.mark.xfail(strict=True, reason="Disagreement: 42 of the 47 throughput/time rows are within 35 %, not all; "
                   "the 5 beyond are the marked disagreements (TensorRT-LLM's three 128-token first-token latencies, "
                   "Megatron-Core's 1.7B and 7.1B): chapter 13")
def test_every_calibrated_run_within_35_percent():
    assert v.summary()["beyond 35%"] == []


def test_summary_numbers_the_chapter_quotes():
    """Chapter 13 quotes these; a change to the model that moves them must move the chapter's prose too."""
    s = v.summary()
    assert s["median abs error"] == pytest.approx(0.156, abs=0.0015)
    assert s["median abs error, held-out rows"] == pytest.approx(0.164, abs=0.0015)
    assert len(s["beyond 35%"]) == 5 and s["memory beyond 10%"] == []


def test_held_out_median_leaves_out_exactly_the_calibration_points():
    """The held-out median is taken over the throughput/time rows no factor was derived from."""
    speed = [r for r in v.results() if r["bound"] is not None]
    held = sorted(abs(r["error"]) for r in speed if not r["calibration point"])
    assert 0 < len(held) < len(speed)
    assert v.summary()["median abs error, held-out rows"] == pytest.approx(statistics.median(held))


def test_short_prompts_miss_by_a_per_layer_cost_that_does_not_grow_with_the_model():
    """TensorRT-LLM's 128-token first-token latencies on H100 exceed ours by a fixed cost per layer that is about
    the same for Llama-2-7B on one chip and Llama-2-70B on four (120-150 us), a tenfold size apart: the signature
    of per-kernel costs, not of a rate. Measured from the 2,048-token rows' slope, not fitted."""
    by_id = {r["run"]: r for r in v.results()}
    per_layer = []
    for size, layers in (("7B fp8 TP1", 32), ("70B fp8 TP4", 80)):
        short, long_ = (by_id[f"TRT-LLM Llama-2-{size}, TTFT {n}"] for n in (128, 2048))
        slope = (long_["published"] - short["published"]) / (2048 - 128)
        ours = (long_["calibrated"] - short["calibrated"]) / (2048 - 128)
        gap = (short["published"] - 128 * slope) - (short["calibrated"] - 128 * ours)  # ms at zero tokens
        per_layer.append(gap / layers * 1e3)  # us
    assert all(100 < g < 180 for g in per_layer), per_layer
    assert max(per_layer) / min(per_layer) < 1.5, per_layer


def test_tensorrt_llm_static_batches_agree_once_the_kernel_reads_kv_per_query_head():
    """v0.6.1's masked MHA kernel reads each K/V head once per query head (8x for Llama-2-70B); with that read
    count the four Llama-2-70B static batches land within 20 %, without it they were 28-140 % optimistic."""
    rows = [r for r in v.results() if r["run"].startswith("TRT-LLM Llama-2-70B fp8 TP") and "x" in r["run"]]
    assert len(rows) == 4
    for r in rows:
        assert abs(r["error"]) <= 0.20, r


def test_table_prints_published_ideal_calibrated_and_error():
    text = str(v.table())
    for word in ("published", "ideal", "calibrated", "error", "gpt-fast", "Korthikanti", "†"):
        assert word in text
    assert "calibrated" not in v.table("ideal").columns


def test_flop_conventions_reproduce_the_published_anchors():
    runs = {r.id: r for r in v.runs()}
    llama = runs["Llama 3 405B, 8,192 H100, TP8 PP16"]
    assert v.flops_per_token(llama) == pytest.approx(2.524e12, rel=0.003)  # Megatron-Bridge's implied figure
    palm = runs["PaLM 540B, 6,144 TPU v4"]
    assert 238.3e3 * v.flops_per_token(palm) / (6144 * 275e12) == pytest.approx(0.462, abs=0.001)


def test_bad_efficiency_is_refused():
    with pytest.raises(ValueError, match="efficiency"):
        v.results("optimistic")
