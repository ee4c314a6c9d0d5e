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


def test_every_row_has_a_provenance_and_calibration_rows_say_so():
    for run in (*v.runs(), *v.calibration_runs()):
        assert run.status in v.STATUSES and len(run.entered) == 10, run.id
        assert (run.status == "calibration") == run.calibration_point, run.id
    assert all(run.status == "calibration" for run in v.calibration_runs())


def test_no_test_row_comes_from_a_source_that_set_a_factor():
    """Calibration and scoring are kept apart by source, except the two named exceptions: TensorRT-LLM's page
    (GPT-J's rows set the short-prompt cost, the other models' rows are scored) and gpt-fast's README (its
    Llama-2-70B TP rows set the A100's per-call latency; its Mixtral table is another table)."""
    calibrating = {r.source for r in (*v.runs(), *v.calibration_runs()) if r.status == "calibration"}
    tested = {r.source for r in v.runs() if r.status == "held-out"}
    assert calibrating & tested <= {"trtllm"}, calibrating & tested


def test_layer_overhead_and_framework_factors_are_what_their_calibration_rows_give():
    """The factors stored in chips.toml are recomputed from their calibration rows: none is typed by hand."""
    import scalebook as sb
    for chip in ("h100", "a100"):
        eff = sb.get_chip(chip).efficiency("calibrated")
        assert eff.layer_overhead == pytest.approx(v.derived_layer_overhead(chip), rel=1e-3)
        assert eff.framework == pytest.approx(v.derived_framework_share(chip, "bf16"), rel=1e-3)
    h100 = sb.get_chip("h100").efficiency("calibrated")
    assert h100.framework_fp8 == pytest.approx(v.derived_framework_share("h100", "fp8"), rel=1e-3)
    # the per-layer cost of short prompts is one kernel-scale cost: 100-200 us on both GPUs
    assert 100e-6 < v.derived_layer_overhead("a100") < v.derived_layer_overhead("h100") < 200e-6


def test_summary_scores_test_development_and_calibration_rows_apart():
    s = v.summary()
    rows = [r for r in v.results() if r["bound"] is not None]
    test = [r["speed error"] for r in rows if r["status"] == "held-out"]
    assert s["test rows"]["rows"] == len(test) >= 80
    assert s["test rows"]["median abs error"] == pytest.approx(statistics.median(abs(e) for e in test))
    assert s["test rows"]["bias"] == pytest.approx(statistics.median(test))
    assert set(s["families"]) >= {"training GPU", "training TPU", "prefill GPU", "decode GPU"}
    assert sum(f["held-out"]["rows"] for f in s["families"].values()) == len(test)


def test_speed_error_is_positive_when_the_model_is_too_fast_whatever_the_metric():
    by_id = {r["run"]: r for r in v.results()}
    for r in by_id.values():
        if r["speed error"] is None:
            continue
        faster = r["calibrated"] > r["published"] if r["metric"] in v.FASTER_IS_HIGHER else \
            r["calibrated"] < r["published"]
        assert (r["speed error"] > 0) == faster or abs(r["speed error"]) < 1e-12, r["run"]


def test_summary_numbers_the_chapter_quotes():
    """Change detector, not a claim of accuracy: chapter 13 quotes these numbers of our own model; a change to the
    model that moves them must move the chapter's prose too (and turns held-out rows it was tuned on into
    development rows)."""
    s = v.summary()
    assert s["test rows"]["median abs error"] == pytest.approx(0.202, abs=0.002)
    assert s["test rows"]["bias"] == pytest.approx(0.202, abs=0.002)
    assert s["development rows"]["median abs error"] == pytest.approx(0.072, abs=0.002)
    assert s["memory beyond 10%"] == []


@pytest.mark.xfail(strict=True, reason="Disagreement: on the 87 test rows (sources no factor was read off, held out "
                   "since they entered) the calibrated model's median |error| is 20.2 %, not the 12 % issue #27 asks; "
                   "it is 7.2 % on the development rows: chapter 13")
def test_test_rows_median_error_at_most_12_percent():
    assert v.summary()["test rows"]["median abs error"] <= 0.12


@pytest.mark.xfail(strict=True, reason="Disagreement: on the test rows the model is too fast by a median 20 % "
                   "(torchtitan's 500 W H100s +49 %, llm-foundry +26 %, MaxText v5p +22 %, v5e +9 %), not within the "
                   "±5 % issue #27 asks: chapter 13")
def test_test_rows_bias_within_5_percent():
    assert abs(v.summary()["test rows"]["bias"]) <= 0.05


@pytest.mark.xfail(strict=True, reason="Disagreement: 21 test rows miss by more than 35 % (torchtitan's 500 W H100 "
                   "runs, llm-foundry's 1B-7B MPTs, one MaxText v5p and one Falcon 180B row), more than the 3 "
                   "explained disagreements issue #27 allows: chapter 13")
def test_every_test_row_within_35_percent_but_three():
    assert len(v.summary()["beyond 35%, test rows"]) <= 3


def test_a_new_miss_beyond_35_percent_fails_whatever_the_data_file_says():
    """Not a change detector of the data file: the rows beyond 35 % are exactly these, and a `disagreement` text
    in the data file cannot hide a row from it."""
    beyond = v.summary()["beyond 35%"]
    assert len(beyond) == 21 + 1, beyond  # the 21 test rows above, and Llama 3's 128k-context development row
    assert "Llama 3 405B, 16,384 H100, TP8 CP16 PP16, 128k context" in beyond
    assert [row["run"] for row in v.disagreements().rows] == beyond


def test_first_token_latencies_of_the_tensorrt_llm_page():
    """All 16 first-token rows of TensorRT-LLM's page are in the suite; with the per-layer cost read off GPT-J's
    rows, their median |error| is within 20 % (issue #27)."""
    rows = [r for r in v.results() if r["kind"] == "prefill" and r["source"] == "trtllm"]
    assert len(rows) == 16
    assert statistics.median(abs(r["speed error"]) for r in rows) <= 0.20


def test_mixtral_decode_reads_only_the_experts_its_batch_routes_to():
    """gpt-fast's Mixtral 8x7B batch-1 decode (bf16, 2/4/8 A100): within 20 % once a step reads the 2 experts a
    token routes to, not all 8 (52-65 % too slow before)."""
    rows = [r for r in v.results() if r["run"].startswith("gpt-fast Mixtral-8x7B TP")]
    assert len(rows) == 3
    for r in rows:
        assert abs(r["error"]) <= 0.20, r


def test_tensorrt_llm_static_batches_agree_once_the_kernel_reads_kv_per_query_head():
    """v0.6.1's masked MHA kernel reads each K/V head once per query head (8x for Llama-2-70B); with that read
    count the four Llama-2-70B static batches land within 20 %, without it they were 28-140 % optimistic."""
    rows = [r for r in v.results() if r["run"].startswith("TRT-LLM Llama-2-70B fp8 TP") and "x" in r["run"]]
    assert len(rows) == 4
    for r in rows:
        assert abs(r["error"]) <= 0.20, r


def test_table_prints_published_ideal_calibrated_and_error():
    text = str(v.table())
    for word in ("published", "ideal", "calibrated", "error", "gpt-fast", "Korthikanti", "test", "dev", "cal"):
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
