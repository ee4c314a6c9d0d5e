"""The serving simulator: determinism and speed, agreement with chapter 7's step times, queueing, the two modes,
prefix caching and bad inputs (its explorer: tests/upper/test_serving_chapter_tools.py)."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time

import pytest
from speed import assert_fast

from scalebook import inference, serving
from scalebook.inference.serving import (
    MODES,
    Engine,
    Lengths,
    Report,
    Workload,
    batching_snapshots,
    engine_segments,
    simulate,
    simulator,
)
from scalebook.inference.serving.report import percentile

INT8 = {"model": "llama3-70b", "chip": "v5e", "n_chips": 16, "param_bytes": 1, "kv_bytes": 1}
CHAT = Workload(2.0, Lengths(1024, 0.5), Lengths(256, 0.5))


def same(a: Report, b: Report) -> bool:
    return (a.requests.arrival, a.first_token, a.finish) == (b.requests.arrival, b.first_token, b.finish)


def test_same_seed_same_report_and_another_seed_another():
    engine = Engine(**INT8)
    a, b = simulate(CHAT, engine, 500, seed=3), simulate(CHAT, engine, 500, seed=3)
    assert same(a, b) and str(a) == str(b)
    assert not same(a, simulate(CHAT, engine, 500, seed=4))


@pytest.mark.parametrize("mode", MODES)
def test_ten_thousand_requests_simulate_in_under_two_seconds(mode):
    engine = Engine(**INT8, mode=mode)
    simulator.forget_step_times()  # time a cold run: every step time computed afresh
    start = time.perf_counter()
    report = simulate(CHAT, engine, 10_000)
    assert_fast(time.perf_counter() - start, 2.0, f"simulate 10,000 requests ({mode})")
    assert len(report.ttft) == 10_000 and all(e >= t > 0 for e, t in zip(report.e2e, report.ttft))


@pytest.mark.parametrize("values", [[3.0], [5.0, 1.0], [4.0, 1.0, 3.0, 2.0, 10.0], [0.5 * k ** 1.5 for k in range(37)]])
@pytest.mark.parametrize("q", [0, 1, 25, 50, 90, 99, 100])
def test_percentiles_interpolate_between_sorted_values_as_numpy_does(values, q):
    np = pytest.importorskip("numpy")  # the reference: NumPy's default ('linear') method
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)


def test_a_percentile_of_nothing_is_nan():
    assert math.isnan(percentile([], 50))


def test_sampled_traffic_has_the_rate_and_median_lengths_asked_for():
    requests = Workload(4.0, Lengths(1000, 0.8), Lengths(200, 0.3), prefix_hit=0.2).sample(20_000, seed=7)
    gaps = [b - a for a, b in zip((0.0, *requests.arrival), requests.arrival)]
    assert statistics.fmean(gaps) == pytest.approx(1 / 4.0, rel=0.03)  # exponential gaps of mean 1/rate
    assert statistics.median(requests.prompt) == pytest.approx(1000, rel=0.03)  # lognormal: median e^mu
    assert statistics.median(requests.output) == pytest.approx(200, rel=0.03)
    hits = sum(u < p for u, p in zip(requests.uncached, requests.prompt)) / len(requests)
    assert hits == pytest.approx(0.2, abs=0.01)
    assert all(u == max(1, p - p // 2) for u, p in zip(requests.uncached, requests.prompt) if u < p)


def test_the_same_seed_draws_the_same_requests_in_any_process():
    # Streams are seeded by name, so the reader's browser (Pyodide) draws exactly these first requests.
    requests = Workload(2.0, Lengths(1024, 0.5), Lengths(256, 0.5)).sample(3, seed=0)
    probe = ("from scalebook.inference.serving.workload import Workload, Lengths; "
             "r = Workload(2.0, Lengths(1024, 0.5), Lengths(256, 0.5)).sample(3, seed=0); "
             "print(repr((r.arrival, r.prompt, r.output)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == repr((requests.arrival, requests.prompt, requests.output))


def test_one_request_alone_costs_one_prefill_then_chapter_7_decode_steps():
    engine = Engine(**INT8)
    report = simulate(Workload(0.01, 1024, 2), engine, n_requests=1)
    assert report.ttft[0] == pytest.approx(inference.prefill("llama3-70b", "v5e", 16, 1024, engine.mfu).time)
    step = inference.decode_step("llama3-70b", "v5e", 16, 1, 1025, param_bytes=1, kv_bytes=1).time
    assert report.tpot[0] == pytest.approx(step, rel=0.02)  # the context bucket is ~3% wide
    assert report.decode_steps == 1 and report.mean_batch == 1


PRESETS = ("llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "ch7-model", "gemma-7b", "deepseek-v3")


@pytest.mark.parametrize("model", PRESETS)
@pytest.mark.parametrize(("prompt", "batch"), [(23, 1), (1039, 7), (8319, 64), (33279, 700)])
def test_a_run_prices_each_prefill_and_decode_step_as_the_step_model_does(model, prompt, batch):
    # `batch` requests wait at t = 0, each of `prompt` tokens and 2 output tokens: each is prefilled alone, then all
    # decode one step together at context prompt + 1, a context bucket's centre (so priced at exactly that context).
    # The last one admitted waits for no other prefill: its time per token is that step's.
    chip, param_bytes = "v5p", 1
    for mode in MODES:
        engine = Engine(model, chip, 32, param_bytes, param_bytes, slots=batch, mode=mode)
        report = simulate(Workload(math.inf, prompt, 2), engine, n_requests=batch)
        fill = inference.prefill(model, chip, engine.pools()[0], prompt, engine.mfu)
        assert report.ttft[0] == pytest.approx(fill.time, rel=1e-12), mode
    step = inference.decode_step(model, chip, 32, batch, prompt + 1, param_bytes=param_bytes, kv_bytes=param_bytes)
    interleaved = simulate(Workload(math.inf, prompt, 2), Engine(model, chip, 32, 1, 1, slots=batch), batch)
    assert interleaved.decode_steps == 1 and interleaved.mean_batch == batch
    assert interleaved.tpot[-1] == pytest.approx(step.time, rel=1e-9)  # (a 1e-12 step after seconds of prefill)


def test_a_dense_engine_asks_the_step_model_a_few_times_per_run_not_once_per_step(monkeypatch):
    # Its steps are priced by lines read off the step model (the simulator before them asked it 758 times for this run).
    calls = []
    for name in ("decode_step", "prefill"):
        real = getattr(simulator, name)
        monkeypatch.setattr(simulator, name, lambda *a, real=real, name=name, **k: calls.append(name) or real(*a, **k))
    simulator.forget_step_times()
    report = simulate(Workload(4.0, Lengths(2048, 0.5), Lengths(512, 0.5)), Engine(**{**INT8, "n_chips": 32}), 400)
    assert report.decode_steps > 100 and len(calls) <= 10, (report.decode_steps, len(calls))


def test_unsaturated_throughput_is_arrival_rate_times_mean_output():
    report = simulate(CHAT, Engine(**INT8), 3000)
    arrived = len(report.requests) / report.requests.arrival[-1]  # the sampled rate, not the nominal one
    assert report.throughput == pytest.approx(arrived * statistics.fmean(report.requests.output), rel=0.01)
    assert report.throughput_per_chip == pytest.approx(report.throughput / 16)


def test_time_to_first_token_grows_sharply_as_the_rate_nears_capacity():
    engine = Engine(**INT8, slots=32)
    def workload(rate):
        return Workload(rate, Lengths(1024, 0.5), Lengths(256, 0.5))
    saturated = simulate(workload(math.inf), engine, 3000)
    capacity = saturated.throughput / statistics.fmean(saturated.requests.output)  # requests/s with every slot busy
    p99 = {f: simulate(workload(f * capacity), engine, 3000).percentile("ttft", 99) for f in (0.3, 0.95, 1.1)}
    assert p99[0.95] > 5 * p99[0.3]
    assert p99[1.1] > 5 * p99[0.95]  # past capacity the queue, and the wait, grow without bound


def test_saturated_interleaved_engine_matches_prefill_plus_shared_decode_steps():
    # All requests wait at t = 0: each cycle prefills B prompts (decoding paused), then decodes them G - 1 steps
    # together, so tokens/s = B·G / (B·t_prefill + (G - 1)·t_step) with t_step at the mean context P + G/2.
    B, P, G = 64, 1024, 256
    report = simulate(Workload(math.inf, P, G), Engine(**INT8, slots=B), n_requests=20 * B)
    t_prefill = inference.prefill("llama3-70b", "v5e", 16, P, assumed_mfu=0.4).time
    t_step = inference.decode_step("llama3-70b", "v5e", 16, B, P + G / 2, param_bytes=1, kv_bytes=1).time
    assert report.throughput == pytest.approx(B * G / (B * t_prefill + (G - 1) * t_step), rel=0.01)
    assert report.mean_batch == B


def test_saturated_disaggregated_engine_approaches_slots_over_step_time():
    # Prefill chips outpace the decode chips, so every slot stays full: B tokens per step, and the prefill adds
    # each request's first token, G / (G - 1) more.
    B, P, G = 64, 256, 512
    engine = Engine(**INT8, slots=B, mode="disaggregated", prefill_chips=8, decode_chips=8)
    report = simulate(Workload(math.inf, P, G), engine, n_requests=4000)
    t_step = inference.decode_step("llama3-70b", "v5e", 8, B, P + G / 2, param_bytes=1, kv_bytes=1).time
    assert report.throughput == pytest.approx(B / t_step * G / (G - 1), rel=0.03)
    assert report.mean_batch > 0.97 * B


def test_disaggregation_keeps_time_per_token_steady_under_long_prompts():
    long_prompts = Workload(0.3, 8192, 128)
    inter = simulate(long_prompts, Engine(**INT8), 1000)
    disagg = simulate(long_prompts, Engine(**INT8, mode="disaggregated"), 1000)
    # Interleaved: each 8k prefill (~1 s) pauses every decoding sequence; disaggregated decoding never pauses.
    assert inter.percentile("tpot", 99) > 3 * inter.percentile("tpot", 50)
    assert disagg.percentile("tpot", 99) < 1.1 * disagg.percentile("tpot", 50)
    assert disagg.percentile("tpot", 99) < inter.percentile("tpot", 99)


def test_prefix_cache_hits_cut_time_to_first_token():
    def workload(hit):
        return Workload(6.0, 1024, 128, prefix_hit=hit, prefix_fraction=0.75)
    cold, warm = (simulate(workload(hit), Engine(**INT8), 2000) for hit in (0.0, 0.8))
    assert cold.requests.arrival == warm.requests.arrival  # same traffic, only the hits differ
    assert warm.percentile("ttft", 50) < 0.5 * cold.percentile("ttft", 50)
    assert warm.percentile("ttft", 99) < cold.percentile("ttft", 99)


def test_default_slots_are_the_kv_caches_that_fit_at_the_typical_context():
    engine = Engine(**INT8)
    assert engine.batch_slots(CHAT) == inference.max_batch("llama3-70b", "v5e", 16, 1024 + 256, 1, 1)
    assert simulate(CHAT, engine, 50).slots == engine.batch_slots(CHAT)


def test_report_renders_a_table_and_html():
    report = simulate(CHAT, Engine(**INT8), 200)
    table = report.table()
    assert "ttft p99" in table.column("quantity") and "mean decode batch" in table.column("quantity")
    html = report._repr_html_()
    assert "time to first token" in html and "tokens/s" in html
    assert 0 < report.mfu < report.utilisation <= 1


def test_one_token_outputs_have_no_time_per_token():
    report = simulate(Workload(1.0, 64, 1), Engine(**INT8), 20)
    assert all(map(math.isnan, report.tpot)) and math.isnan(report.percentile("tpot", 50))
    assert "—" in str(report.latency_table())


@pytest.mark.parametrize("build, name", [
    (lambda: Workload(-1.0), "rate"),
    (lambda: Workload(0.0), "rate"),
    (lambda: Workload(1.0, prompt=0), "prompt"),
    (lambda: Workload(1.0, output="long"), "output"),
    (lambda: Workload(1.0, prefix_hit=1.5), "prefix_hit"),
    (lambda: Workload(1.0, prefix_fraction=-0.1), "prefix_fraction"),
    (lambda: Lengths(0.5), "median"),
    (lambda: Lengths(100, -1), "sigma"),
    (lambda: Engine(mode="batched"), "mode"),
    (lambda: Engine(slots=0), "slots"),
    (lambda: Engine(n_chips=0), "n_chips"),
    (lambda: Engine(mfu=1.5), "mfu"),
    (lambda: Engine(kv_bytes=-1), "kv_bytes"),
    (lambda: Engine(mode="disaggregated", prefill_chips=8, decode_chips=4), "prefill_chips"),
    (lambda: Engine(mode="disaggregated", prefill_chips=16), "decode_chips"),
    (lambda: Engine(chip="h100", n_chips=8, mode="disaggregated").link_bandwidth(), "kv_bandwidth"),
    (lambda: Engine("llama3-405b", n_chips=4).batch_slots(CHAT), "n_chips"),
    (lambda: simulate(CHAT, Engine(), n_requests=0), "n_requests"),
    (lambda: simulate(CHAT, Engine(), 10).percentile("latency", 50), "metric"),
    (lambda: simulate(CHAT, Engine(), 10).percentile("ttft", 101), "q"),
])
def test_bad_inputs_raise_naming_the_argument(build, name):
    with pytest.raises(ValueError, match=name):
        build()


def test_simulator_stays_on_the_ground_floor():
    probe = ("import sys, scalebook.inference.serving.simulator; "
             "print([m for m in ('jax', 'matplotlib', 'ipywidgets') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_engine_comparison_separates_interleaved_and_disaggregated_engines():
    engines = {"interleaved": Engine("llama3-70b", "v5e", 32, 1, 1),
               "disaggregated": Engine("llama3-70b", "v5e", 32, 1, 1, mode="disaggregated", prefill_chips=24,
                                       decode_chips=8)}
    rows = {(r["engine"], r["requests/s"]): r for r in serving.engine_comparison((1, 6), engines, n_requests=400)}
    # Interleaved prefills pause every stream: the slowest gaps between tokens grow with the load...
    assert rows[("interleaved", 6)]["TPOT p99"] > 5 * rows[("interleaved", 1)]["TPOT p99"]
    # ...while disaggregated decode keeps its step time and queues at the prefill pool instead.
    assert rows[("disaggregated", 6)]["TPOT p99"] < 1.5 * rows[("disaggregated", 1)]["TPOT p99"]
    assert rows[("disaggregated", 6)]["TTFT p99"] > rows[("interleaved", 6)]["TTFT p99"]


def test_continuous_batching_refills_a_freed_slot_before_the_next_step():
    snaps = batching_snapshots(2, [1, 3, 2], steps=4)
    # request 0 makes its single token in step 0; before step 1 its slot already holds request 2
    assert snaps[1][1][0] == (2, 0) and snaps[1][3] == [0]
    assert snaps[3][3] == [0, 2, 1]  # all three finished after three steps


def test_interleaved_prefills_stall_running_decodes_and_disaggregation_does_not():
    prompts, outputs = [100, 100], [10, 10]
    inter = engine_segments("interleaved", prompts, outputs, 2, t_prefill=1.0, t_step=0.1)
    first = next(b for b in inter if b[3] == "decode" and b[4] == 0)
    assert first[2] - first[1] == pytest.approx(10 * 0.1 + 1.0)  # stretched by request 1's prefill
    dis = engine_segments("disaggregated", prompts, outputs, 2, t_prefill=1.0, t_step=0.1)
    assert all(b[2] - b[1] == pytest.approx(1.0) for b in dis if b[3] == "decode")
