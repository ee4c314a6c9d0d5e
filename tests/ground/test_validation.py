"""The validation suite (issue #19): every ideal prediction a bound, the calibrated model within its
thresholds, each disagreement shown with its reason, every figure cited."""

import statistics

import pytest

import scalebook as sb
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


def test_summary_scores_test_development_and_calibration_rows_apart():
    s = v.summary()
    rows = [r for r in v.results() if r["bound"] is not None]
    test = [r["speed error"] for r in rows if r["status"] == "held-out"]
    assert s["test rows"]["rows"] == len(test) >= 70  # 87 until MaxText's 16 v5p rows became development (#38)
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


def test_test_rows_median_error_at_most_12_percent():
    """Issue #27's threshold, met since each training row is priced with its framework's share (#38): 10.5 % on
    the 77 test rows (20.2 % on the 71 of then, when every stack was priced with Megatron-Core's share)."""
    assert v.summary()["test rows"]["median abs error"] <= 0.12


def test_test_rows_bias_within_5_percent():
    """Issue #27's threshold, met since MaxText's share is read off its own recipes on v6e (#38): +0.8 % on the 77
    test rows (+1.7 % on the 83 before torchtitan's six CP rows became development rows, +7.6 % when MaxText's share
    was assumed 1; +20 % before the frameworks)."""
    assert abs(v.summary()["test rows"]["bias"]) <= 0.05


def test_every_test_row_within_35_percent_but_three():
    """Issue #27's third threshold, met since PyTorch's ring attention priced torchtitan's context-parallel rows
    (#38): their errors prompted the change, so the six with CP 2 to 8 are development rows by the data file's
    rule, and two of them still miss by about half (`KNOWN_MISSES`). Of the rows held out when they entered, four
    miss by more than 35 %, and chapter 13 prints that count beside this one."""
    beyond = v.summary()["beyond 35%, test rows"]
    assert len(beyond) <= 3
    assert sorted(beyond) == ["Megatron-Bridge DeepSeek-V3, 256 GB200, MXFP8, TP 1, PP 4 (VP 4), EP 64",
                              "TRT-LLM Falcon 180B fp8 TP8, TTFT 2048"]


# Every run the calibrated model misses by more than 35 % (speed error: positive when too fast), measured
# 2026-12-06 (each training row priced with its framework's share, MaxText's read off its v6e recipes, FP8 casts,
# the recomputed attention and PyTorch's ring attention for torchtitan's CP, #38).
# A row enters this list by hand, with its error, after chapter 13 shows why; no field of the data file (status,
# `disagreement` text) can add one. Chapter 13 lists the same rows from `validation.disagreements()`.
KNOWN_MISSES: dict[str, float] = {
    "TRT-LLM Falcon 180B fp8 TP8, TTFT 2048": 0.375,
    "Llama 3 405B, 16,384 H100, TP8 CP16 PP16, 128k context": -0.451,  # a development row
    # torchtitan's CP rows (#38), development since PyTorch's ring attention was priced after their errors were seen
    "torchtitan Llama 3.1 8B, 8 H100 (500 W), FSDP 2 CP 4, 128k": 0.441,
    "torchtitan Llama 3.1 8B, 8 H100 (500 W), FSDP 1 CP 8, 256k": 0.521,
    # Megatron-Bridge MoE row (#38), held out: the dispatcher's SMs are not priced beyond `interference`
    "Megatron-Bridge DeepSeek-V3, 256 GB200, MXFP8, TP 1, PP 4 (VP 4), EP 64": 0.392,
}


def test_a_new_miss_beyond_35_percent_fails_whatever_the_data_file_says():
    """The rows beyond ±35 % are exactly `KNOWN_MISSES`, recomputed here from each row's speed error: a new miss
    fails this test even if the data file marks it as an explained disagreement, and so does a known miss that
    moves by more than a point (the list then needs its new measured error)."""
    speed = {r["run"]: r["speed error"] for r in v.results() if r["speed error"] is not None}
    beyond = {run: error for run, error in speed.items() if abs(error) > 0.35}
    assert sorted(beyond) == sorted(KNOWN_MISSES), set(beyond) ^ set(KNOWN_MISSES)
    for run, error in KNOWN_MISSES.items():
        assert beyond[run] == pytest.approx(error, abs=0.01), run
    assert sorted(v.summary()["beyond 35%"]) == sorted(KNOWN_MISSES)
    assert sorted(row["run"] for row in v.disagreements().rows) == sorted(KNOWN_MISSES)
    held_out = {r["run"] for r in v.results() if r["status"] == "held-out"}
    assert sorted(v.summary()["beyond 35%, test rows"]) == sorted(set(KNOWN_MISSES) & held_out)


def test_first_token_latencies_of_the_tensorrt_llm_page():
    """All 16 first-token rows of TensorRT-LLM's page are in the suite; with the per-layer cost read off GPT-J's
    4 rows (calibration: left out of the score, they meet it by construction), the other 12 have a median
    |error| within 20 % (issue #27)."""
    rows = [r for r in v.results() if r["kind"] == "prefill" and r["source"] == "trtllm"]
    assert len(rows) == 16
    scored = [r for r in rows if r["status"] != "calibration"]
    assert len(scored) == 12 and all(not r["run"].startswith("TRT-LLM GPT-J") for r in scored)
    assert statistics.median(abs(r["speed error"]) for r in scored) <= 0.20


def test_table_prints_published_ideal_calibrated_and_error():
    text = str(v.table())
    for word in ("published", "ideal", "calibrated", "error", "gpt-fast", "Korthikanti", "test", "dev", "cal"):
        assert word in text
    assert "calibrated" not in v.table("ideal").columns


def test_flop_conventions_reproduce_the_published_anchors():
    runs = {r.id: r for r in v.runs()}
    llama = runs["Llama 3 405B, 8,192 H100, TP8 PP16"]
    sb.expect(v.flops_per_token(llama), sb.published("13_validation.llama3_405b_flops_per_token"))
    palm = runs["PaLM 540B, 6,144 TPU v4"]
    sb.expect(238.3e3 * v.flops_per_token(palm) / (6144 * 275e12), sb.published("13_validation.palm_mfu"))


def test_bad_efficiency_is_refused():
    with pytest.raises(ValueError, match="efficiency"):
        v.results("optimistic")
