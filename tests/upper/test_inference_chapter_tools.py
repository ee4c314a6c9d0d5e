"""Chapter 7's tools: the Pareto, breakdown and KV-variant bookkeeping, their figures, the explorers (open on the
worked defaults, redraw in well under 0.05 s) and the live lab's tiny decoder with its KV cache."""

import dataclasses

import pytest

import scalebook as sb

sb.setup(quiet=True)  # must run before JAX starts: XLA reads the CPU device count once

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from explorers import assert_answers_fast  # noqa: E402

from scalebook.inference import breakdown_curves, kv_variant_table  # noqa: E402
from scalebook.lab import ch07_decoder  # noqa: E402

# --- the bookkeeping ------------------------------------------------------------------------------------------


def test_pareto_runs_to_the_largest_batch_that_fits():
    curve = sb.inference.pareto("llama3-70b", "v5e", 16, 8192, param_bytes=1, kv_bytes=1)
    batches, steps, rates = (curve.column(c) for c in ("batch", "step", "tokens/s/chip"))
    limit = sb.inference.max_batch("llama3-70b", "v5e", 16, 8192, 1, 1)
    assert batches[0] == 1 and batches[-1] == limit == 138  # (256 GB - 70.6 GB of int8 weights) / 1.34 GB
    assert steps == sorted(steps) and rates == sorted(rates)
    # batch 1 is the weight floor: 70.55 GB / (16 x 8.2e11 B/s) plus one 8192-token int8 cache
    assert steps[0] == pytest.approx((70.55e9 + 8192 * 163840) / (16 * 8.2e11), rel=1e-3)


def test_breakdown_crosses_at_the_int8_critical_batch():
    c = breakdown_curves("llama3-70b", "v5e", 16, 8192, batches=[1, 64, 512])
    assert c.crossover == pytest.approx(1.97e14 / 8.2e11 / 2)  # int8 weights, bf16 FLOPs: 120
    assert c.t_params[0] == c.t_params[-1]  # weights are read once per step whatever the batch
    assert c.t_kv[1] == pytest.approx(64 * c.t_kv[0])
    assert all(s == pytest.approx(k + max(p, m)) for s, k, p, m in zip(c.step, c.t_kv, c.t_params, c.t_math))


def test_kv_variants_against_mha():
    rows = {r["variant"].split(" (")[0]: r for r in kv_variant_table("llama3-70b", 32768)}
    assert rows["MHA"]["KV bytes"] == 2 * 80 * 64 * 128 * 2 * 32768
    assert rows["GQA"]["× smaller than MHA"] == pytest.approx(8)
    assert rows["MQA"]["× smaller than MHA"] == pytest.approx(64)
    assert rows["GQA, int8 cache"]["× smaller than MHA"] == pytest.approx(16)
    # 5/6 of the layers keep 4096 tokens, 1/6 keep all 32,768
    local = rows["GQA + local attention"]["KV bytes"]
    assert local == pytest.approx(2 * 80 * 8 * 128 * 2 * (32768 / 6 + 5 * 4096 / 6))


# --- figures --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("draw", [sb.plots.inference.pareto, sb.plots.inference.latency_breakdown,
                                  sb.plots.inference.kv_variants, sb.plots.inference.throughput_vs_batch])
def test_figures_have_titles_and_labelled_axes(draw):
    fig = draw()
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


def test_pareto_draws_one_curve_per_context_that_fits():
    ax = sb.plots.inference.pareto(contexts=(1024, 8192)).axes[0]
    assert len(ax.get_lines()) == 2 and ax.get_xscale() == ax.get_yscale() == "log"
    assert "ms" in ax.get_xlabel()


@pytest.mark.parametrize("draw, kwargs", [(sb.plots.inference.latency_breakdown, {"batches": (10, 1)}),
                                          (sb.plots.inference.throughput_vs_batch, {"batches": (0, 10)}),
                                          (sb.plots.inference.pareto, {"contexts": ()})])
def test_figures_reject_bad_ranges(draw, kwargs):
    with pytest.raises(ValueError):
        draw(**kwargs)


# --- explorers ------------------------------------------------------------------------------------------------


def test_pareto_explorer_opens_on_llama3_70b_on_a_v5e_4x4_in_int8():
    ex = sb.widgets.pareto_explorer()
    assert ex.values() == {"model": "llama3-70b", "chip": "v5e", "n_chips": 16, "precision": "int8", "context": 8192}
    chart, table = ex.result
    assert "<svg" in chart.to_svg() and table[-1]["batch"] == 138
    ex.update(context=131072)
    assert ex.result[1][-1]["batch"] < 138  # longer contexts leave room for fewer sequences


def test_breakdown_explorer_marks_the_step_at_the_chosen_batch():
    ex = sb.widgets.latency_breakdown_explorer()
    _, step = ex.result
    assert step.batch == 64 and step.time == sb.inference.decode_step("llama3-70b", "v5e", 16, 64, 8192, 1, 1).time


def test_breakdown_explorer_says_a_batch_past_full_memory_does_not_fit():
    ex = sb.widgets.latency_breakdown_explorer(batch=4096)  # LLaMA 3-70B int8 on 16 v5e: HBM is full near B = 300
    assert "does not fit: 348 GB &gt; 16 GB of HBM" in ex.output.value
    ex.update(batch=64)
    assert "fits: " in ex.output.value and "does not fit" not in ex.output.value


def test_kv_variants_explorer_opens_on_32k_tokens():
    table, chart = sb.widgets.kv_variants_explorer().result
    assert table[0]["KV bytes"] == pytest.approx(85.9e9, rel=1e-3) and "<svg" in chart.to_svg()


@pytest.mark.parametrize("make, change", [
    (sb.widgets.pareto_explorer, {"context": 32768}),
    (sb.widgets.pareto_explorer, {"precision": "bf16"}),
    (sb.widgets.latency_breakdown_explorer, {"batch": 512}),
    (sb.widgets.kv_variants_explorer, {"context": 131072}),
])
def test_explorers_redraw_in_well_under_a_tenth_of_a_second(make, change):
    assert_answers_fast(make, change)


# --- the live lab: a tiny decoder with a KV cache -------------------------------------------------------------

SMALL = dataclasses.replace(ch07_decoder.TINY, D=64, F=128, N=4, K=2, H=16, V=97)


@pytest.mark.slow  # compiles and runs the JAX decoder
def test_init_has_the_configs_parameter_count():
    params = ch07_decoder.init(SMALL)
    assert sum(x.size for x in jax.tree.leaves(params)) == SMALL.param_count()


@pytest.mark.slow  # compiles and runs the JAX decoder
def test_a_decode_step_continues_the_prefill_exactly():
    params = ch07_decoder.init(SMALL, seed=1)
    prompt = jnp.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    cache = ch07_decoder.decode_step(params, ch07_decoder.prefill(params, prompt, capacity=8), jnp.array([7, 7]))
    whole = ch07_decoder.prefill(params, jnp.concatenate([prompt, jnp.full((2, 1), 7)], axis=1))
    assert int(cache["length"]) == 6
    assert jnp.allclose(cache["logits"], whole["logits"], atol=1e-4)
    assert jnp.allclose(cache["k"][:, :, :, :6], whole["k"], atol=1e-5)


@pytest.mark.slow  # compiles and runs the JAX decoder
def test_a_full_cache_and_bad_configs_are_refused():
    params = ch07_decoder.init(SMALL)
    cache = ch07_decoder.prefill(params, jnp.zeros((1, 4), jnp.int32))
    with pytest.raises(ValueError, match="full"):
        ch07_decoder.decode_step(params, cache, jnp.zeros((1,), jnp.int32))
    with pytest.raises(ValueError, match="dense"):
        ch07_decoder.init(dataclasses.replace(SMALL, tied=True))


@pytest.mark.slow  # compiles and runs the JAX decoder
def test_measure_decode_has_a_row_per_batch_beside_the_prediction():
    chip = sb.get_chip("v5e").replace(name="test chip", fp32_flops=1e11, hbm_bandwidth=1e10)
    table = ch07_decoder.measure_decode((1, 4), context=32, config=SMALL, repeats=2, chip=chip, progress=False)
    assert table.column("batch") == [1, 4]
    size = 4  # fp32 on the CPU
    weights = SMALL.param_count() * size / 1e10
    kv = SMALL.kv_bytes_per_token(size) * (32 + 2 + 1) / 1e10
    assert table[0]["predicted"] == pytest.approx(kv + max(weights, 2 * SMALL.param_count() / 1e11))
    assert all(t > 0 for t in table.column("measured"))
