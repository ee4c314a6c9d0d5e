"""scalebook.moe (chapter 14): routing capacity, the EP AllToAll, and weights and KV cache per chip by scheme."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import scalebook as sb
from scalebook import moe
from scalebook.inference import weights_read

DS = sb.get_model("deepseek-v3")
# DeepSeek-V3's routed experts: 58 MoE layers x 256 experts x 3 x 7168 x 2048 parameters; all parameters 671.03e9;
# its MLA cache: 61 layers x (512 + 64) values per token.
ROUTED = 58 * 256 * 3 * 7168 * 2048
OTHER = DS.param_count() - ROUTED
MLA_TOKEN = 61 * 576


def test_deepseek_counts_used_below():
    assert DS.components()["MoE routed experts"][0] == ROUTED
    assert DS.kv_bytes_per_token(1) == MLA_TOKEN


def test_capacity_is_the_balanced_load_times_the_factor_rounded_up():
    assert moe.capacity(1024, 64, 2) == 40  # 1.25 x 32
    assert moe.capacity(1000, 64, 2, 1.0) == 32  # 31.25 rounded up


def test_token_choice_drops_what_overflows_a_binomial_load():
    # an expert's load is Binomial(1024, 1/32): mean 32; the expected overflow above 32 slots, summed by hand
    p, n, C = Fraction(2, 64), 1024, 32
    over = sum((x - C) * math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(C + 1, n + 1))
    assert moe.dropped_fraction(1024, 64, 2, 1.0) == pytest.approx(float(over / 32), rel=1e-9)
    sb.expect(moe.dropped_fraction(1024, 64, 2, 1.0), sb.published("14_moe.token_choice_dropped"))


def test_more_capacity_drops_less_and_a_huge_batch_drops_almost_nothing():
    assert moe.dropped_fraction(1024, 64, 2, 1.25) < moe.dropped_fraction(1024, 64, 2, 1.0)
    assert moe.dropped_fraction(10**6, 256, 8, 1.25) < 1e-12
    # the normal form of the tail (sd > 2000): E[(X - mean)+] = sd / sqrt(2 pi) at capacity factor 1
    n, p = 10**8, 8 / 256
    sd = math.sqrt(n * p * (1 - p))
    assert moe.dropped_fraction(n, 256, 8, 1.0) == pytest.approx(sd / math.sqrt(2 * math.pi) / (n * p), rel=1e-3)


def test_every_expert_chosen_drops_nothing_over_capacity():
    assert moe.dropped_fraction(100, 4, 4, 1.0) == 0.0
    assert moe.dropped_fraction(100, 4, 4, 0.5) == pytest.approx(0.5)


def test_expert_choice_leaves_tokens_unserved_with_probability_one_minus_c_over_t_to_the_e():
    assert moe.expert_choice_unserved(1024, 64, 2, 1.0) == pytest.approx((1 - 32 / 1024) ** 64)
    assert moe.expert_choice_unserved(1024, 64, 2, 1.0) == pytest.approx(0.131, abs=0.001)


def test_experts_read_matches_weights_read_when_ep_divides_e():
    for tokens, ep in ((1, 64), (64, 64), (4096, 8), (100, 256)):
        per_chip = moe.experts_read_per_chip(tokens, 256, 8, ep) * ROUTED / 256
        assert per_chip * ep == pytest.approx(weights_read(DS, tokens, ep) - OTHER, rel=1e-12)


def test_experts_read_with_redundant_slots():
    # 72 chips hold ceil(256/72) = 4 slots; 4608 tokens touch all 256 experts: all 4 slots are read
    assert moe.experts_read_per_chip(4608, 256, 8, 72) == pytest.approx(4)
    assert moe.experts_read_per_chip(1, 256, 8, 144) == 1.0
    assert moe.experts_read_per_chip(0, 256, 8, 144) == 0.0
    with pytest.raises(ValueError, match="ep=512"):
        moe.experts_read_per_chip(1, 256, 8, 512)


def test_dispatch_is_two_ragged_all_to_alls():
    cluster = sb.GpuCluster("gb200", gpus=72)
    there = sb.all_to_all(cluster, None, 4608 * 7168 * 1, top_k=8).time
    back = sb.all_to_all(cluster, None, 4608 * 7168 * 2, top_k=8).time
    assert moe.dispatch(DS, "gb200", 4608, 72).t_comms == pytest.approx(there + back)
    # in one NVLink domain: each GPU sends its 64 tokens x 7168 B x (1 + 2) once to each of the
    # 72 (1 - (71/72)^8) = 7.6 distinct GPUs they route to, less the 1/72 that stays home, at 900 GB/s
    fill = 72 * (1 - (71 / 72) ** 8)
    assert moe.dispatch(DS, "gb200", 4608, 72).t_comms == pytest.approx(
        64 * 7168 * 3 * fill * 71 / 72 / 900e9, rel=1e-9)


def test_dispatch_on_a_tpu_slice_and_its_refusals():
    mesh = sb.TpuMesh("tpu7x", X=4, Y=4, Z=4)
    assert moe.dispatch(DS, mesh, 4096).t_comms == pytest.approx(moe.dispatch(DS, "tpu7x", 4096, 64).t_comms)
    with pytest.raises(ValueError, match="group=8"):
        moe.dispatch(DS, mesh, 4096, 8)
    with pytest.raises(ValueError, match="model="):
        moe.dispatch("llama3-8b", mesh, 4096)


def test_mla_cache_is_not_split_by_tensor_parallelism_but_is_by_attention_dp():
    tp = moe.serving_shard(DS, 72, 4608, 4096, "dp_tp", 8)
    adp = moe.serving_shard(DS, 72, 4608, 4096, "attention_dp")
    # 9 replicas of 8: 512 sequences each, every chip of a replica keeps the whole latent cache
    assert tp.kv_per_chip == pytest.approx(512 * 4096 * MLA_TOKEN)
    assert adp.kv_per_chip == pytest.approx(64 * 4096 * MLA_TOKEN)
    assert tp.kv_per_chip == pytest.approx(8 * adp.kv_per_chip)


def test_gqa_cache_splits_over_at_most_k_heads():
    llama = sb.get_model("llama3-70b")  # K = 8
    per_seq = 4096 * llama.kv_bytes_per_token(1)
    assert moe.serving_shard(llama, 16, 16, 4096, "dp_tp", 16).kv_per_chip == pytest.approx(16 * per_seq / 8)
    assert moe.serving_shard(llama, 16, 16, 4096, "dp_tp", 4).kv_per_chip == pytest.approx(4 * per_seq / 4)
    with pytest.raises(ValueError, match="scheme='attention_dp'"):
        moe.serving_shard(llama, 16, 16, 4096, "attention_dp")


def test_weights_held_and_read_per_chip_by_scheme():
    adp = moe.serving_shard(DS, 72, 4608, 4096, "attention_dp")
    assert adp.weights_per_chip == pytest.approx(OTHER + 4 * ROUTED / 256)
    assert adp.weights_read_per_chip == pytest.approx(adp.weights_per_chip)
    ep = moe.serving_shard(DS, 64, 64, 4096, "dp_ep", 64)
    assert ep.weights_per_chip == pytest.approx(OTHER / 64 + 4 * ROUTED / 256)
    assert ep.weights_read_per_chip == pytest.approx(OTHER / 64 + ROUTED / 256 * min(4, max(1, 4 * (
        1 - (1 - 8 / 256) ** 64))))
    tp = moe.serving_shard(DS, 8, 8, 0, "dp_tp")
    assert tp.weights_per_chip == pytest.approx(DS.param_count() / 8)
    assert tp.dispatched == 0 and ep.dispatched == 64 and adp.dispatched == 4608
    with pytest.raises(ValueError, match="group=5"):
        moe.serving_shard(DS, 64, 64, 0, "dp_ep", 5)


def test_decode_step_reads_per_chip_and_pays_the_dispatches():
    step = moe.decode_step(DS, "gb200", 72, 4608, 4096, compute_dtype="fp8")
    shard = moe.serving_shard(DS, 72, 4608, 4096)
    W = 8e12
    assert step.t_params == pytest.approx(shard.weights_read_per_chip / W)
    assert step.t_kv == pytest.approx(shard.kv_per_chip / W)
    assert step.t_math == pytest.approx(2 * 4608 * DS.param_count(active=True) / (72 * 5e15))
    assert step.t_ici == pytest.approx(58 * moe.dispatch(DS, "gb200", 4608, 72).t_comms)
    assert step.memory_per_chip == pytest.approx(shard.memory_per_chip)
    assert step.time == pytest.approx(step.t_kv + step.t_params)


def test_calibrated_is_slower_than_ideal():
    ideal = moe.decode_step(DS, "h800", 144, 144 * 64, 4989, compute_dtype="fp8")
    calibrated = moe.decode_step(DS, "h800", 144, 144 * 64, 4989, compute_dtype="fp8", efficiency="calibrated")
    assert calibrated.time > ideal.time
