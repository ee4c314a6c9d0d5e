"""Chapter 8's Question 4 lab (`sb.lab.ch08_llama`): LLaMA 3-8B inference from scratch, each step against the package.

The shape arithmetic runs without JAX; the tests that trace, compile or run the model are marked slow."""

from __future__ import annotations

import pytest

import scalebook as sb

sb.setup(quiet=True)  # before JAX starts

from scalebook.lab import ch07_decoder, ch08_llama  # noqa: E402

L8 = sb.get_model("llama3-8b")
# Smaller than the chapter's, for speed; still grouped (4 query heads per key/value head) and shardable over 8.
SMALL = ch08_llama.scaled_down(L8, L=2, H=8, V=97)


def test_scaled_down_keeps_the_heads_and_the_mlp_ratio():
    cfg = ch08_llama.scaled_down("llama3-8b", L=2, H=16, V=2048)
    assert (cfg.N, cfg.K, cfg.L, cfg.H, cfg.V) == (32, 8, 2, 16, 2048)
    assert cfg.D == 32 * 16 and cfg.F / cfg.D == L8.F / L8.D == 3.5
    with pytest.raises(ValueError, match="H=15 must be even"):
        ch08_llama.scaled_down("llama3-8b", H=15)


def test_one_decode_token_costs_the_packages_flops_per_token():
    # With one new token the step's logits are that token's: exactly flops_per_token over the whole context.
    assert ch08_llama.step_flops(L8, 3, 1, 8192) == 3 * L8.flops_per_token(8192, training=False, causal=False)
    # A prefill of T tokens computes logits once, not T times: 2·D·V·(T-1) below T tokens' worth.
    full = 64 * L8.flops_per_token(64, training=False, causal=False)
    assert full - ch08_llama.step_flops(L8, 1, 64, 64) == pytest.approx(2 * L8.D * L8.V * 63)


@pytest.mark.slow  # traces the full-size model
def test_the_traced_full_size_model_holds_the_packages_parameters_and_cache():
    table = ch08_llama.full_size("llama3-8b", context=4096, batch=3)
    assert [row["JAX program"] for row in table.rows] == [row["package"] for row in table.rows]
    rows = {row["quantity"].split(" (")[0].split(",")[0]: row["package"] for row in table.rows}
    assert rows["parameters"] == 8_030_261_248
    assert rows["of which attention"] == 32 * 4096 * 128 * (32 + 8 + 8 + 32)
    assert rows["of which MLP"] == 32 * 3 * 4096 * 14336
    assert rows["KV cache"] == 3 * 4096 * 2 * 32 * 8 * 128 * 2


@pytest.mark.slow  # traces the model
def test_the_rope_frequencies_are_not_counted_as_weights():
    import jax

    shapes = jax.eval_shape(lambda: ch08_llama.init(SMALL))
    every_leaf = sum(leaf.size for leaf in jax.tree.leaves(shapes))
    assert ch08_llama.parameter_count(shapes) == every_leaf - SMALL.H // 2 == SMALL.param_count()


@pytest.mark.slow  # compiles and runs the model
def test_greedy_decoding_with_the_cache_equals_decoding_without_it():
    lab = ch08_llama.Llama(SMALL, batch=2, prompt=6, steps=4, seed=3)
    with_cache = lab.greedy(cached=True)
    assert with_cache.shape == (2, 4)
    assert (with_cache == lab.greedy(cached=False)).all()


@pytest.mark.slow  # compiles and runs the model
def test_positions_reach_the_logits():
    # Without RoPE (chapter 7's decoder) attention cannot tell positions apart, so the check above would pass even
    # if decode rotated its key at the wrong position: the rotation must change what the model predicts.
    import jax.numpy as jnp

    params = ch08_llama.init(SMALL, seed=2)
    tokens = jnp.array([[5, 9, 11, 2]], jnp.int32)
    plain = {name: value for name, value in params.items() if name != "rope"}
    rotated, unrotated = (ch07_decoder.prefill(p, tokens)["logits"] for p in (params, plain))
    assert float(jnp.abs(rotated - unrotated).max()) > 1e-3


@pytest.mark.slow  # compiles the model
def test_xla_counts_the_packages_flops_within_a_percent():
    table = ch08_llama.Llama(SMALL, batch=2, prompt=16, steps=2).flops()
    assert [row["step"] for row in table.rows] == ["prefill", "decode"]
    for row in table.rows:
        assert row["XLA"] == pytest.approx(row["package"], rel=0.01), row


@pytest.mark.slow  # compiles the model on one device and the sharded model on four more
def test_a_prefill_server_and_a_sharded_decode_server_decode_what_one_device_does():
    import jax

    if jax.device_count() < 5:
        pytest.skip("needs 5 devices: run with JAX_NUM_CPU_DEVICES=8")
    lab = ch08_llama.Llama(SMALL, batch=3, prompt=8, steps=3)
    served = lab.disaggregated(decode_devices=4)
    assert (served.tokens == lab.greedy()).all()
    assert served.sent == [served.predicted_sent] * 3 == [8 * SMALL.kv_bytes_per_token(4)] * 3
    table = served.collectives
    assert table.column("kind") == ["all_reduce"] * 2 * SMALL.L
    assert table.column("values") == [3 * SMALL.D] * 2 * SMALL.L == table.column("planned values")
    assert set(table.column("group size")) == {4}
    with pytest.raises(ValueError, match="decode_devices=3 must divide the K=8"):
        lab.disaggregated(decode_devices=3)
    with pytest.raises(ValueError, match="decode_devices=8 leaves no device for prefill"):
        lab.disaggregated(decode_devices=8)


@pytest.mark.slow  # compiles and times the model
def test_the_timing_table_sets_the_measurement_beside_the_prediction():
    # a fixed chip (this CPU's roofs would depend on the machine): the prediction is known in advance
    chip = sb.get_chip("v5e").replace(name="fixture CPU", fp32_flops=1e12, hbm_bandwidth=2e10)
    table = ch08_llama.Llama(SMALL, batch=2, prompt=8, steps=2, dtype="fp32").time_decode(chip, repeats=2)
    row = table.rows[0]
    predicted = sb.inference.decode_time(SMALL.param_count(), SMALL.kv_bytes_per_token(4) * 10, 2, chip, 1,
                                         param_bytes=4, compute_dtype="fp32")
    assert row["predicted"] == predicted.time and row["measured"] > 0
    assert row["measured / predicted"] == pytest.approx(row["measured"] / row["predicted"])


@pytest.mark.slow  # compiles a Pallas kernel (interpreted on a CPU)
def test_flash_attention_in_pallas_equals_jax_attention_and_moves_only_q_k_v_and_the_output():
    table = ch08_llama.Llama(SMALL, batch=2, prompt=16, steps=1).flash(block=8)
    row = table.rows[0]
    assert row["largest difference"] < 1e-5
    assert row["values moved"] == row["package"] == 2 * 16 * SMALL.H * (2 * SMALL.N + 2 * SMALL.K)
    assert row["scores never stored"] == 2 * SMALL.N * 16 * 16


@pytest.mark.slow  # starts JAX
def test_flash_attention_refuses_a_block_that_does_not_divide_the_sequence():
    import jax.numpy as jnp

    q, kv = jnp.ones((1, 12, 4, 8)), jnp.ones((1, 12, 2, 8))
    with pytest.raises(ValueError, match="block=8 must divide T"):
        ch08_llama.flash_attention(q, kv, kv, block=8)
