"""Training memory and the parallelism rooflines of chapters 5 and 6 (How To Scale Your Model)."""

import pytest
from speed import assert_fast

import scalebook as sb
from scalebook import training as t
from scalebook.training.book import pass_collectives


def test_ex1_data_parallel_batch_per_chip_on_v5p():
    # 5.Ex1: B/X > C/W = 4.59e14 / 1.8e11 ~ 2550 tokens per chip (chapter 5 asserts 850 over 3 axes and ~7.6M
    # tokens per pod).
    sb.expect(t.min_tokens_per_chip("dp", "v5p"), sb.published("05_training.dp_tokens_per_chip"))
    assert t.min_tokens_per_chip("fsdp", "v5p", M_X=3) == pytest.approx(t.min_tokens_per_chip("dp", "v5p") / 3)


def test_ex2_largest_pure_dp_model():
    # 5.Ex2: 96 GB / 10 bytes per parameter (bf16 params, fp32 Adam moments) ~ 9B parameters.
    assert t.max_params("v5p") == pytest.approx(9.6e9)


def test_ex3_and_ex4_chips_before_fsdp_turns_comms_bound():
    # 5.Ex3: a 40M-token batch at 850 tokens per chip -> ~47,000 chips (chapter 5 asserts Ex4's 18,823 chips and
    # ~17 days).
    per_chip = t.min_tokens_per_chip("fsdp", "v5p", M_X=3)
    sb.expect(40e6 / per_chip, sb.published("05_training.ex3_fsdp_chips_40m_batch"))


def test_ex5_tensor_parallel_limits():
    # 5.Ex5: Y < F·W/C: LLaMA 3-70B (F = 28,672) ~11-way (8 fine, 16 comms-bound); Gemma 7B (F ~ 49k) ~19-way.
    assert t.tp_limit(28672, "v5p") == pytest.approx(11.2, rel=0.01)
    assert t.tp_limit(2 * 24576, "v5p") == pytest.approx(19.3, rel=0.01)


def test_ex6_ex7_fsdp_tp_split_and_threshold():
    # 5.Ex6: N = 64, B = 48,000, F ~ 32k, M_X/M_Y = 2 -> X_opt ~ 13.9 (choose 16 x 4).
    # 5.Ex7: B/N > 2550^2 / (2·F) tokens per chip (chapter 5 asserts the book's ~99 for F = 32,768).
    sb.expect(t.x_opt(48000, 32000, 64, M_X=2), sb.published("05_training.ex6_x_opt"))
    assert t.min_tokens_per_chip("fsdp_tp", "v5p", F=32768, M_X=2) == pytest.approx(2550**2 / (2 * 32768), rel=1e-3)


def test_dcn_batch_per_slice():
    # ch. 5: pure DP across slices needs B per slice > C / W_dcn = 4.59e14 / 6.25e9 = 73,440 (the summary says ~71k).
    sb.expect(t.min_tokens_per_chip("dcn", "v5p"), sb.published("05_training.dcn_tokens_per_slice"))


def test_q2_llama2_13b_memory_at_16m_tokens():
    # 5.Q2: (2 + 4 + 4) bytes per parameter; three saves per layer after the big matmuls, 2·L·B·(D + 2F) (chapter 5
    # asserts the book's ~130 GB and ~42 TB).
    m13 = sb.get_model("llama2-13b")
    mem = t.memory(m13, 16e6, saves_per_layer=(m13.D + 2 * m13.F) / m13.D)
    assert mem.params + mem.optimizer == pytest.approx(10 * m13.param_count())
    assert mem.activations == pytest.approx(2 * m13.L * 16e6 * (m13.D + 2 * m13.F))


def test_q3_fsdp_tp_for_llama2_13b_on_a_v5p_cube_of_4096():
    # 5.Q3: threshold 2550^2/(2·13,824) ~ 235 tokens/chip; X_opt = sqrt(3e6·2·4096/13,824) ~ 1333;
    # step ~ 6·3e6·13e9 / (4096·4.6e14·0.4) ~ 300 ms.
    sb.expect(t.min_tokens_per_chip("fsdp_tp", "v5p", F=13824, M_X=2),
              sb.published("05_training.q3_fsdp_tp_tokens_per_chip"))
    sb.expect(t.x_opt(3e6, 13824, 4096, M_X=2), sb.published("05_training.q3_x_opt"))
    step = t.step_time("llama2-13b", "v5p", 4096, 3e6, "fsdp_tp", X=1024, Y=4, M_X=2, mfu=0.4)
    sb.expect(step.time, sb.published("05_training.q3_step_time"))
    assert step.bound == "compute"


def test_chapter_6_llama3_70b_on_a_v5p_pod():
    # 6.A5/A6: params + Adam + 4 checkpoints/layer at 4M tokens, spread over 8960 chips (chapter 6 asserts the
    # book's 140 GB, 560 GB, 20.9 TB, ~225 chips' HBM and ~2.4 GB each).
    mem = t.memory("llama3-70b", 4e6, n_chips=8960, saves_per_layer=4)
    assert mem.per_chip == pytest.approx(mem.total / 8960)
    # 6.A8: FSDP over batch and sequence: 4·1024·1024 / 8960 tokens per chip (chapter 6: ~468) < 850 -> comms-bound.
    assert 4 * 1024 * 1024 / 8960 < t.min_tokens_per_chip("fsdp", "v5p", M_X=3)
    # 6.A9: FSDP + TP needs only 2550^2/(2·28,672) tokens per chip; X_opt (chapter 6 asserts ~113 and ~1618).


def test_layer_cost_ratios_match_the_closed_forms():
    chip = sb.get_chip("v5p")
    B, D, F = 2_000_000, 8192, 28672
    alpha = chip.bf16_flops / chip.ici_bidirectional
    dp = t.layer_cost("dp", B, D, F, chip, X=1000)
    assert dp.t_math / dp.t_comms == pytest.approx((B / 1000) / alpha * 12 / 8)  # 12BDF/X·C vs 8DF/W
    tp = t.layer_cost("tp", B, D, F, chip, Y=8)
    assert tp.t_math / tp.t_comms == pytest.approx(F / (8 * alpha))  # Y < F/alpha


def test_mfu_inverts_step_time():
    step = t.step_time("llama3-8b", "v5e", 256, 1e6, "fsdp", X=256, mfu=0.5)
    assert t.mfu("llama3-8b", "v5e", 256, 1e6, step.t_math) == pytest.approx(0.5)


def test_mfu_against_the_fp8_peak():
    # An fp8 run is measured against the fp8 peak: on an H800 (1.979e15 fp8, 9.89e14 bf16) half the bf16 MFU.
    args = ("deepseek-v3", "h800", 2048, 62914560, 10.0)
    assert t.mfu(*args, dtype="fp8") == pytest.approx(t.mfu(*args) * 9.89e14 / 1.979e15)
    with pytest.raises(ValueError, match="fp4"):
        t.mfu(*args, dtype="fp4")


@pytest.mark.parametrize("call, message", [
    (lambda: t.layer_cost("zero", 1, 1, 1, "v5p"), "strategy="),
    (lambda: t.layer_cost("dp", 1, 1, 1, "v5p", X=0), "X=0"),
    (lambda: t.layer_cost("dp", 1, 1, 1, "h100"), "no ICI bandwidth"),
    (lambda: t.min_tokens_per_chip("tp", "v5p"), "no batch threshold"),
    (lambda: t.min_tokens_per_chip("fsdp_tp", "v5p"), "F "),
    (lambda: t.memory("llama3-8b", 1e6, optimizer="lion"), "optimizer="),
    (lambda: t.memory("llama3-8b", 1e6, n_chips=0), "n_chips"),
    (lambda: t.activation_bytes("llama3-8b", 1e6, "some"), "saves_per_layer"),
    (lambda: t.step_time("llama3-8b", "v5p", 64, 1e6, X=8, Y=4), "must equal n_chips"),
    (lambda: t.mfu("llama3-8b", "v5p", 64, 1e6, 0), "seconds"),
])
def test_bad_training_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_at_x_opt_the_fsdp_tp_ratio_is_the_books_closed_form():
    # At X_opt the FSDP and TP terms are equal; T_math / T_comms = sqrt(B·F·M_X·M_Y) / (α·sqrt(N)).
    chip = sb.get_chip("v5p")
    B, D, F, N, M_X, M_Y = 2**22, 8192, 28672, 4096, 2, 1
    X = t.x_opt(B, F, N, M_X, M_Y)
    Y = N / X
    alpha = chip.bf16_flops / chip.ici_bidirectional
    W = chip.ici_bidirectional
    fsdp, tp = 3 * 4 * D * F / (Y * W * M_X), 6 * 2 * B * D / (X * W * M_Y)
    assert fsdp == pytest.approx(tp)
    math = 12 * B * D * F / (N * chip.bf16_flops)
    assert math / fsdp == pytest.approx((B * F * M_X * M_Y) ** 0.5 / (alpha * N**0.5))


def test_planner_reproduces_chapter_6_for_llama3_70b_on_a_v5p_pod():
    # 6.A5-A9: pure DP does not fit; FSDP alone (468 tokens/chip) is comms-bound; FSDP + TP with a few-way TP
    # is compute-bound: 2048-way FSDP x 4-way TP, the book's choice, on the 8192 chips the 4M batch divides.
    result = t.plan("llama3-70b", "v5p", 8960, 4 * 1024 * 1024, seq_len=4096)
    assert (result.strategy, result.fsdp, result.tp, result.chips_used) == ("fsdp_tp", 2048, 4, 8192)
    assert result.estimate.bound == "compute" and result.mfu == 1
    why = {(r["strategy"], r["TP"]): r["why not"] for r in result.candidates}
    assert why[("dp", 1)].startswith("memory") and why[("fsdp", 1)].startswith("comms-bound")


def test_planner_without_sequence_sharding_is_limited_by_the_sequence_count():
    # 6.A7: 4M tokens of 4096-token sequences are only 1024 sequences: no more than 1024-way data parallelism.
    result = t.plan("llama3-70b", "v5p", 8960, 4 * 1024 * 1024, sequence_sharding=False)
    assert result.fsdp <= 1024
    assert all(r["FSDP/DP"] <= 1024 for r in result.candidates)
    assert [r["chips"] for r in result.candidates if r["strategy"] == "fsdp"] == [1024]


def test_planner_crosses_pods_over_dcn_and_answers_fast():
    import time

    start = time.perf_counter()
    result = t.plan("llama3-405b", "v5p", 8 * 8960, 16 * 2**20)
    assert_fast(time.perf_counter() - start, 0.2, "plan llama3-405b over 8 v5p pods")
    assert result.dp == 8 and result.fsdp * result.tp == 8192


def test_planner_rejects_impossible_requests():
    with pytest.raises(ValueError, match="no layout"):
        t.plan("llama3-405b", "v5e", 16, 2**20)
    with pytest.raises(ValueError, match="batch_tokens"):
        t.plan("llama3-8b", "v5e", 16, 100, seq_len=4096)
    with pytest.raises(ValueError, match="whole number of sequences"):
        t.plan("llama3-8b", "v5e", 16, 4e6, seq_len=4096)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("P, M", [(2, 2), (4, 8), (8, 4), (3, 16)])
def test_simulated_pipelines_idle_exactly_as_the_bubble_formula_says(schedule, P, M):
    grid = t.pipeline_schedule(P, M, schedule)
    assert t.idle_fraction(grid) == pytest.approx(t.pipeline_bubble(P, M, schedule))
    assert all(row.count(f"F{m}") == 1 and row.count(f"B{m}") == 1 for row in grid for m in range(M))


def test_one_f_one_b_keeps_at_most_P_microbatches_in_flight():
    P, M = 4, 12
    grid = t.pipeline_schedule(P, M, "1f1b")
    first = grid[0]
    for slot in range(len(first)):
        started = sum(1 for c in first[: slot + 1] if c.startswith("F"))
        finished = sum(1 for c in first[: slot + 1] if c.startswith("B"))
        assert started - finished <= P


def test_interleaving_shrinks_the_bubble():
    assert t.pipeline_bubble(8, 16, "interleaved", virtual=4) < t.pipeline_bubble(8, 16, "1f1b")
    with pytest.raises(ValueError, match="schedule="):
        t.pipeline_bubble(8, 16, "zero-bubble")


def test_expert_parallel_compute_over_comms_grows_with_expert_width():
    # Per MoE layer: 6·B·(k+shared)·3·D·F_e / Z FLOPs against B·k·D·b / W bytes-time: the ratio is
    # 18·(k+1)·F_e / (Z·k·b·α) for DeepSeek-V3 (shared = 1), independent of the batch.
    ds = sb.get_model("deepseek-v3")
    chip = sb.get_chip("v5p")
    est = t.expert_parallel(ds, chip, 1e6, Z=8)
    alpha = chip.bf16_flops / chip.ici_bidirectional
    assert est.t_math / est.t_comms == pytest.approx(18 * 9 * 2048 / (8 * 8 * 2 * alpha))
    assert t.expert_parallel(ds, chip, 1e6, Z=1).t_comms == 0
    with pytest.raises(ValueError, match="no experts"):
        t.expert_parallel("llama3-8b", chip, 1e6, Z=8)
    with pytest.raises(ValueError, match="Z=512"):
        t.expert_parallel(ds, chip, 1e6, Z=512)


def test_planner_needs_a_dcn_figure_to_cross_pods():
    with pytest.raises(ValueError, match="dcn_bandwidth"):
        t.plan("llama3-70b", "v4p", 8192, 4 * 2**20)


def test_planner_breaks_ties_by_memory():
    # Pure DP and FSDP are equally fast here, but FSDP holds a 1/1024 share of the weights and optimizer.
    result = t.plan("llama3-8b", "v5p", 1024, 2**20)
    assert result.strategy != "dp"


def test_zero_stages_shard_more_and_more_state():
    # 8B with Adam and fp32 gradients on 64 chips: stage 0 keeps all of it on every chip; each stage shards more.
    per_chip = [t.memory("llama3-8b", 2**20, 64, grad_dtype="fp32", zero=z).per_chip for z in range(4)]
    assert per_chip == sorted(per_chip, reverse=True)
    m = t.memory("llama3-8b", 2**20, 64, grad_dtype="fp32", zero=1)
    assert m.per_chip == pytest.approx(m.params + m.grads + m.optimizer / 64 + m.activations / 64)
    with pytest.raises(ValueError, match="zero=4"):
        t.memory("llama3-8b", 2**20, 64, zero=4)


def test_ex8_all_strategies_comms_bound_below_400k_tokens_on_a_full_v5p_cube():
    # 5.Ex8: on 16x16x16 (4096 chips) with F = 8192·4, FSDP + TP is compute-bound only above
    # N · α² / (M_X·M_Y·F) = 4096 · 2550² / (2 · 8192 · 4) ~ 4e5 tokens.
    assert 4096 * t.min_tokens_per_chip("fsdp_tp", "v5p", F=4 * 8192, M_X=2) == pytest.approx(4.06e5, rel=0.01)


def test_ex9_llama3_70b_at_2m_tokens():
    # 5.Ex9 (F ~ 30k): TP up to ~11 per axis (chapter 5 asserts FSDP's ~2,400 chips and FSDP + TP's ~108 tokens
    # per chip).
    assert t.tp_limit(30000, "v5p") == pytest.approx(11.8, rel=0.01)


def test_tensor_parallel_limit_does_not_depend_on_precision():
    # ch. 5: int8 halves both the compute and the bytes of the activations, so the TP bound is unchanged.
    assert t.tp_limit(16384, "v5e", dtype="int8") == pytest.approx(t.tp_limit(16384, "v5e"))


# --- the collectives of one layer's pass, read off sharded_matmul (ch. 5, appendix A) ----------------------------

B_, D_, F_ = 2**17, 8192, 32768


def _charged(strategy, axes):
    transfers = pass_collectives(strategy, sb.TpuMesh("v5p", **axes), B_, D_, F_)
    return {p: sum(t.charged for t in transfers if t.pass_ == p) for p in ("forward", "backward")}


def test_backward_collectives_read_off_sharded_matmul_match_appendix_a():
    # DP: two gradient AllReduces of 2DF bytes, charged twice -> 0 + 8DF.
    assert _charged("dp", {"X": 4}) == {"forward": 0, "backward": 8 * D_ * F_}
    # FSDP: the forward's two weight gathers, then a second gather of each and two ReduceScatters -> 4DF + 8DF.
    assert _charged("fsdp", {"X": 4}) == {"forward": 4 * D_ * F_, "backward": 8 * D_ * F_}
    # TP with the gathered input kept: AllGather In + ReduceScatter Out; AllGather dOut + ReduceScatter dIn.
    assert _charged("tp", {"Y": 4}) == {"forward": 4 * B_ * D_, "backward": 4 * B_ * D_}


def test_fsdp_discards_gathered_weights_but_tp_keeps_its_gathered_input():
    fsdp = pass_collectives("fsdp", sb.TpuMesh("v5p", X=4), B_, D_, F_)
    assert not any(t.reused for t in fsdp)  # every weight gather in the backward pass is paid again
    tp = pass_collectives("tp", sb.TpuMesh("v5p", Y=4), B_, D_, F_)
    assert sorted(t.array for t in tp if t.reused) == ["In", "dOut"]
