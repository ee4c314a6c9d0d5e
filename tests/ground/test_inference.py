"""Inference accounting against chapters 7 and 8 of How To Scale Your Model, including both LLaMA 2-13B tables."""

import dataclasses

import pytest

import scalebook as sb
from scalebook import inference as inf

LLAMA2 = sb.get_model("llama2-13b")
# ch. 7: LLaMA 2-13B on 8 v5e at 8192 tokens of context, bf16, the real cache and one 5x smaller (8 KV heads for
# 40 query heads); each row is [batch, KV cache B, total B, step s, tokens/s], read from data/book/07_inference.toml.
TABLE_FULL = sb.published("07_inference.llama2_13b_table")
TABLE_SMALL_KV = sb.published("07_inference.llama2_13b_table_small_kv")


@pytest.mark.parametrize("row", TABLE_FULL.value, ids=lambda row: f"batch{row[0]}")
def test_llama2_13b_generation_table(row):
    batch = row[0]
    step = inf.decode_step(LLAMA2, "v5e", 8, batch, 8192)
    ours = [batch, inf.kv_cache_bytes(LLAMA2, 8192, batch), step.bytes, step.time, step.tokens_per_second]
    sb.expect(ours, row, rtol=TABLE_FULL.rtol, source=f"{TABLE_FULL.source}, batch {batch}")


@pytest.mark.parametrize("row", TABLE_SMALL_KV.value, ids=lambda row: f"batch{row[0]}")
def test_llama2_13b_table_with_a_five_times_smaller_cache(row):
    batch, per_seq = row[0], inf.kv_cache_bytes(LLAMA2, 8192) / 5
    step = inf.decode_time(LLAMA2.param_count(), per_seq, batch, "v5e", 8)
    ours = [batch, batch * per_seq, step.bytes, step.time, step.tokens_per_second]
    sb.expect(ours, row, rtol=TABLE_SMALL_KV.rtol, source=f"{TABLE_SMALL_KV.source}, batch {batch}")


def test_pop_quiz_30b_on_a_4x4():
    # 7.PQ: 30B int8 weights, 16 v5e, 8192 tokens at 100 kB/token (chapter 7 asserts the book's ~2.5 ms at batch
    # 4 and ~21 ms at batch 256).
    kv = 100e3 * 8192
    big = inf.decode_time(30e9, kv, 256, "v5e", 16, param_bytes=1)
    assert big.t_math > big.t_params  # at batch 256 the FLOPs, not the weight reads, sit beside the KV reads


def test_q1_to_q3_the_chapter_7_model():
    # 7.Q1: ~18.4e9 params; int8 KV 2·L·K·H = 262 kB/token. 7.Q2: 128k (the book: 128,000) tokens of context
    # on 16 v5e, int8: 33.5 GB per sequence -> 7 sequences; with K = 1, 56. 7.Q3: reading 18.4 GB of int8
    # weights on 16 v5e takes ~1.4 ms.
    m = sb.get_model("ch7-model")
    assert m.kv_bytes_per_token(1) == 262144
    sb.expect(inf.kv_cache_bytes(m, 128_000, 1, 1), sb.published("07_inference.q2_one_cache_128k"))
    sb.expect(inf.max_batch(m, "v5e", 16, 128_000, param_bytes=1, kv_bytes=1),
              sb.published("07_inference.q2_sequences_that_fit"))
    mqa = dataclasses.replace(m, K=1)
    sb.expect(inf.max_batch(mqa, "v5e", 16, 128_000, param_bytes=1, kv_bytes=1),
              sb.published("07_inference.q2_sequences_that_fit_k1"))
    sb.expect(inf.decode_step(m, "v5e", 16, 1, 0, param_bytes=1).t_params, sb.published("07_inference.q3_weight_read"))


def test_q5_an_moe_is_compute_bound_e_over_k_times_later():
    # 7.Q5: E = 16, k = 2 (chapter 7 asserts the book's ~212e9 total, ~31.2e9 active and 1920 tokens).
    m = dataclasses.replace(sb.get_model("ch7-model"), E=16, k=2)
    assert inf.moe_critical_batch(m, "v5e") == pytest.approx(sb.roofline.critical_batch("v5e") * 16 / 2)


def test_q7_two_dimensional_weight_stationary_wins_beyond_72_chips():
    # 7.Q7: with F = 4D the 2-D layout's comms are ~11.3·B·D/(sqrt(N)·W), below 1-D's 4·B·D/(3·W) once N > 72.
    B, D = 1024, 8192
    at = {N: inf.weight_stationary(B, D, 4 * D, "v5e", N) for N in (64, 72, 81, 256)}
    assert at[72]["2d"] == pytest.approx(at[72]["1d"], rel=1e-9)
    assert at[64]["2d"] > at[64]["1d"] and at[256]["2d"] < at[256]["1d"]
    assert at[256]["X"] == pytest.approx((256 / 8) ** 0.5)


def test_chapter_8_llama3_70b_numbers():
    m = sb.get_model("llama3-70b")
    # 8.A1: int8 KV 2·K·H·L = 160 KiB per token; 5.3 GB per 32k sequence.
    sb.expect(m.kv_bytes_per_token(1), sb.published("08_serving_llama.kv_bytes_per_token_int8"))
    assert inf.kv_cache_bytes(m, 32768, 1, 1) == pytest.approx(5.37e9, rel=0.01)
    # 8.A3: batch 32 at 8192 context, int8 on a v5e 4x2 (~17 ms, ~235 tokens/s per chip: chapter 8 asserts them).
    # 8.A5: smallest slices for bf16 / int8 / int4 weights: 4x4, 4x2, 2x2.
    assert [inf.smallest_topology(m, "v5e", b) for b in (2, 1, 0.5)] == [(4, 4), (4, 2), (2, 2)]
    # 8.A10: prefill of 8192 tokens on 16 v5e at 40% MFU (~0.91 s by the book's 2·P·T, chapter 8 asserts it);
    # causal attention adds ~8%.
    assert inf.prefill(m, "v5e", 16, 8192, assumed_mfu=0.4).time / inf.prefill(m, "v5e", 16, 8192, assumed_mfu=0.4,
                                                                      attention=False).time < 1.1
    # 8.A11: 32 sequences of 8192 + 4096 tokens finishing over 4096 steps free 96 tokens per step.
    sb.expect(inf.evicted_per_step(32, 8192, 4096), sb.published("08_serving_llama.evicted_per_step"))
    # 8.A12: 0.91 s prefills against 19 ms steps of batch 32 and 512 decode tokens: ~3 prefill servers each.
    prefill, step = sb.published("08_serving_llama.prefill_8k"), sb.published("08_serving_llama.step_hbm_full")
    sb.expect(inf.disaggregation_ratio(prefill.value, step.value, 32, 512),
              sb.published("08_serving_llama.prefill_servers_per_decode_server"))


def test_cost_per_million_tokens_uses_the_dated_price_table():
    assert inf.prices()["date"] == "2025-02"
    assert inf.cost_per_million_tokens("v5e", 1000) == pytest.approx(1.2 / 3.6, rel=1e-9)
    with pytest.raises(KeyError, match="no price"):
        inf.cost_per_million_tokens("b200", 1000)


def test_speculative_decoding():
    assert inf.speculative_speedup(0.0, 4, 0.0) == 1  # nothing accepted, free drafts: no gain, no loss
    assert inf.speculative_speedup(0.8, 4, 0.05) == pytest.approx((1 - 0.8**5) / 0.2 / 1.2)
    with pytest.raises(ValueError):
        inf.speculative_speedup(1.0, 4, 0.1)


def test_tensor_parallel_collectives_add_a_latency_floor():
    mesh = sb.TpuMesh("v5e", X=4, Y=4)
    step = inf.decode_step("llama3-70b", "v5e", 16, 8, 4096, param_bytes=1, kv_bytes=1, mesh=mesh)
    assert step.t_ici > 0 and step.time >= step.t_ici
    with pytest.raises(ValueError, match="mesh has 16 chips"):
        inf.decode_step("llama3-70b", "v5e", 8, 8, 4096, mesh=mesh)


def test_pareto_stops_at_the_largest_batch_that_fits():
    table = inf.pareto("llama3-70b", "v5e", 16, 8192, param_bytes=1, kv_bytes=1)
    assert max(table.column("batch")) <= inf.max_batch("llama3-70b", "v5e", 16, 8192, 1, 1)
    steps, rates = table.column("step"), table.column("tokens/s/chip")
    assert steps == sorted(steps) and rates == sorted(rates)  # bigger batches: slower steps, more throughput


def test_chapter_8_memory_latency_and_queries_per_chip():
    m = sb.get_model("llama3-70b")
    # 8.A2: batch 32 at 8192 tokens with int8 weights and cache: ~112 GB -> a v5e 4x2.
    assert inf.smallest_topology(m, "v5e", 1, context=8192, batch=32, kv_bytes=1) == (4, 2)
    # 8.A4: compute-bound batches for bf16, int8 weights with bf16 arithmetic, and int8 x int8: 240, 120, 240.
    cb = sb.roofline.critical_batch
    sb.expect(cb("v5e"), sb.published("01_rooflines.v5e_critical_batch"))
    sb.expect(cb("v5e", weight_dtype="int8"), sb.published("01_rooflines.q2_int8_weights_critical_batch"))
    sb.expect(cb("v5e", "int8"), sb.published("01_rooflines.q1_int8_critical_batch"))
    # 8.A6/A7: with HBM full of 8k caches a step takes ~19 ms; 512-token replies at 0.55 queries/s per chip (int8).
    batch = inf.max_batch(m, "v5e", 8, 8192, 1, 1)
    step = inf.decode_step(m, "v5e", 8, batch, 8192, 1, 1)
    sb.expect(batch, sb.published("08_serving_llama.caches_8k_smallest_slice"))
    sb.expect(step.time, sb.published("08_serving_llama.step_hbm_full"))
    sb.expect(batch / (step.time * 512 * 8), sb.published("08_serving_llama.qps_int8_smallest_slice"))
    # 8.A6: int4 weights alone on a 2x2 are read in ~10 ms.
    sb.expect(inf.decode_step(m, "v5e", 4, 1, 0, param_bytes=0.5).t_params,
              sb.published("08_serving_llama.int4_weights_alone"))
    # 8.A8: bf16 on a 4x8 fits ~140 caches of 8k tokens: ~0.44 queries/s per chip at the 19 ms step.
    assert inf.max_batch(m, "v5e", 32, 8192) == pytest.approx(140, rel=0.02)
    # 8.A9: at large batch tensor parallelism stays compute-bound up to F·M_Y/2200 ~ 26 on two axes.
    sb.expect(sb.training.tp_limit(28672, "v5e", M_Y=2), sb.published("08_serving_llama.tp_limit_large_batch"))


def test_chapter_7_appendices():
    # App. A: a 600M-parameter layer in bf16 over 4 v5e chips cannot take less than ~365 µs per step.
    sb.expect(inf.decode_time(600e6, 0, 1, "v5e", 4).t_params, sb.published("07_inference.appendix_a_latency_floor"))
    # App. C: batch 16 of D = 8192 int8 activations (131 kB) gathered over 8 chips is latency-bound.
    assert sb.all_gather(sb.TpuMesh("v5e", X=8, Y=1), "X", 16 * 8192).bound == "latency"


@pytest.mark.parametrize("efficiency", ["ideal", "calibrated"])
def test_two_decode_steps_take_twice_one_step(efficiency):
    """A step's own sum: before StepEstimate was its own type, Estimate's sum dropped the ICI and KV terms and two
    16.8 ms steps of this slice added up to 20.2 ms."""
    mesh = sb.TpuMesh("v5e", X=4, Y=4)
    a = inf.decode_step("llama3-70b", "v5e", 16, 64, 8192, 1, 1, mesh=mesh, efficiency=efficiency)
    assert a.t_ici > 0 and not isinstance(a, sb.Estimate)
    two = a + a
    assert two.time == pytest.approx(2 * a.time, rel=1e-12)
    assert (two.t_ici, two.t_kv, two.batch) == (2 * a.t_ici, 2 * a.t_kv, a.batch)
    with pytest.raises(ValueError, match="other"):
        a + inf.decode_step("llama3-70b", "v5e", 16, 8, 8192, 1, 1, mesh=mesh, efficiency=efficiency)


def test_a_gpu_step_names_its_links_and_a_step_without_collectives_names_none():
    """#32: collectives on GPUs cross NVLink (within a node) or NVLink and the network; one chip's step has none."""
    node = str(inf.decode_step("llama3-70b", "h100", 8, 32, 8192, 1, 1, efficiency="calibrated"))
    two_nodes = str(inf.decode_step("llama3-70b", "h100", 16, 32, 8192, 1, 1, efficiency="calibrated"))
    alone = str(inf.decode_step("llama3-8b", "v5e", 1, 8, 4096))
    assert "NVLink" in node and "ICI" not in node and "network" not in node
    assert "NVLink + network" in two_nodes
    assert "ICI" not in alone and "NVLink" not in alone
