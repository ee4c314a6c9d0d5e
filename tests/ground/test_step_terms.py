"""Terms of the calibrated training step counted by hand: the FP8 casts (`terms.fp8_cast_term`) and the attention's
recomputed forward (`terms.compute_term`), each against the count its docstring gives."""

import pytest

import scalebook as sb
from scalebook import training

LLAMA = sb.get_model("llama3-8b")


def _eight_h100(model=LLAMA, seq_len: int = 8192, **kw) -> training.Prediction:
    """One microbatch of one sequence on each of 8 H100 (ZeRO-1 data parallelism, no recompute unless told)."""
    kw = {"recompute": "none", "framework": "megatron", **kw}
    return training.predict(model, "h100", 8, 8 * seq_len, seq_len, dp=8, **kw)


def _hbm() -> float:
    """The H100's calibrated HBM bandwidth, bytes/s."""
    chip = sb.get_chip("h100")
    return chip.hbm_bandwidth * chip.efficiency("calibrated").hbm


def test_fp8_casts_every_matmul_input_and_output_gradient_once():
    """Llama 3 8B, 8,192 tokens a chip, FP8: each of the 32 layers casts QKV's [8192, 4096] input and its
    [8192, 6144] output gradient, the projection's 4096 and 4096, the gated MLP's 4096 in and 2 x 14,336 out, and
    its down projection's 14,336 in and 4096 out; and the 8.03 B weights once. 4 bytes a value (read bf16, write
    two FP8 copies) at the calibrated HBM bandwidth."""
    per_token = (4096 + 6144) + (4096 + 4096) + (4096 + 2 * 14336) + (14336 + 4096)
    values = 8192 * per_token * 32 + LLAMA.param_count()
    assert _eight_h100(dtype="fp8").breakdown["fp8 cast"] == pytest.approx(4 * values / _hbm(), rel=1e-9)
    assert _eight_h100(dtype="bf16").breakdown["fp8 cast"] == 0.0


@pytest.mark.parametrize("recipe,per_value", [("delayed", 4), ("current", 6), ("mxfp8", 4 + 1 / 16)])
def test_each_fp8_recipe_moves_its_own_bytes_per_cast(recipe, per_value):
    """Delayed scaling reads a tensor once; current scaling twice ("one to compute amax, one to cast", Transformer
    Engine's docs); MXFP8 writes a scale byte per 32 values with each of its two copies."""
    delayed = _eight_h100(dtype="fp8").breakdown["fp8 cast"]
    assert _eight_h100(dtype="fp8", fp8_recipe=recipe).breakdown["fp8 cast"] == pytest.approx(delayed * per_value / 4)


def test_an_unknown_fp8_recipe_is_refused_by_name():
    with pytest.raises(ValueError, match="fp8_recipe='mx'.*'mxfp8'"):
        _eight_h100(dtype="fp8", fp8_recipe="mx")


def test_full_recompute_casts_the_forward_inputs_again():
    """Full recompute runs every matmul's forward twice, so its inputs are cast twice; the gradients once."""
    none, full = (_eight_h100(dtype="fp8", recompute=r).breakdown["fp8 cast"] for r in ("none", "selective"))
    assert full == pytest.approx(none)
    again = _eight_h100(dtype="fp8", recompute="full").breakdown["fp8 cast"]
    inputs = 8192 * (4096 + 4096 + 4096 + 14336) * 32
    assert again - none == pytest.approx(4 * inputs / _hbm(), rel=1e-9)


def test_narrow_experts_pay_more_for_their_casts_than_a_wide_dense_model():
    """A cast moves bytes in proportion to a matmul's width, its FLOPs to the width squared: Qwen3-30B-A3B
    (2,048 wide, experts 768 inner) casts for 41 % of its matmul time, Llama 3 70B on TP 8 (each chip's matmuls
    8,192 by 1/8 of their width) for 16 %."""
    qwen = sb.validation.model("qwen3-30b-a3b")
    dense = training.predict("llama3-70b", "h100", 64, 64 * 4096, 4096, tp=8, dtype="fp8")
    moe = training.predict(qwen, "h100", 8, 8 * 16384, 4096, ep=8, dtype="fp8", microbatch_tokens=16384)
    share = [p.breakdown["fp8 cast"] / p.breakdown["compute"] for p in (dense, moe)]
    assert share == pytest.approx([0.165, 0.408], abs=0.005)


@pytest.mark.parametrize("recompute", ["selective", "full"])
def test_the_recomputed_attention_runs_at_the_attention_rate(recompute):
    """Both policies run the attention's forward again in the backward; a flash kernel runs it at the chip's
    attention rate (H100: 35 % of peak), not its matmul rate (80 %). At 128k tokens the forward's attention is
    12·L·D·(T/2) FLOPs a token; full recompute adds the other forward matmuls at the matmul rate."""
    chip = sb.get_chip("h100")
    eff = chip.efficiency("calibrated")
    seq = 131072
    p = _eight_h100(seq_len=seq, recompute=recompute)
    attention = LLAMA.attention_flops_per_token(seq / 2) * seq
    matmuls = 0.0 if recompute == "selective" else 2 * LLAMA.matmul_params() * seq
    expected = attention / (chip.bf16_flops * eff.attention) + matmuls / (chip.bf16_flops * eff.matmul)
    assert p.breakdown["recompute"] == pytest.approx(expected, rel=1e-9)


def test_a_prediction_shows_as_its_critical_path_term_by_term():
    """In a notebook a `Prediction` shows as a table, not its dataclass fields: one row per term that costs time,
    whose shares of the step add up to the whole, under a title that says the layout and the summary."""
    p = _eight_h100(dtype="fp8")
    rows = p.table().rows
    assert [r["term"] for r in rows] == [k for k, v in p.breakdown.items() if v]
    assert sum(r["share of the step"] for r in rows) == pytest.approx(1.0)
    assert p.summary in p.table().title and "DP 8" in p.table().title and "<table" in p._repr_html_()


def _long_context(**kw) -> training.Prediction:
    """Llama 3 8B, one 262,144-token sequence over CP 8 on 8 H100 (torchtitan's 256k row), full recompute."""
    return training.predict(LLAMA, "h100", 8, 262144, 262144, cp=8, recompute="full", dtype="fp8",
                            framework="torchtitan", **kw)


def _gather(heads: int) -> float:
    """Seconds of all-gathering one layer's K/V blocks (bf16, `heads` heads of 128) over the 8 H100's NVLink, times
    the 32 layers."""
    block = 262144 / 8 * 2 * heads * 128 * 2
    hw = training.terms.collective_hardware(sb.get_chip("h100"), 8)
    return 32 * training.terms.collective_seconds("all_gather", hw, 8, 8 * block, 1, "calibrated")


@pytest.mark.parametrize("repeat_kv,heads", [(False, 8), (True, 32)])
def test_pytorch_ring_attention_hides_each_gather_behind_the_first_block_only(repeat_kv, heads):
    """PyTorch's ring attention with its all-gather rotater (torchtitan's CP) gathers the K/V blocks once a pass,
    launched with the first block's attention and waited for before the second: the forward twice (full
    recompute), the backward once. The backward passes each block's fp32 K/V gradients on (two bf16 blocks' bytes,
    one ring step of the gather: 2/7 of it), hidden behind the next block; the last is exposed. `repeat_kv`:
    torchtitan's Llama repeats K/V to its 32 query heads before the attention, so 4x the bytes."""
    got = _long_context(cp_rotate="allgather", repeat_kv=repeat_kv)
    gather, step = _gather(heads), 2 * _gather(heads) / 7
    forward_block, backward_block = got.breakdown["attention"] / 3 / 8, got.breakdown["attention"] * 2 / 3 / 8
    exposed = (2 * max(0.0, gather - forward_block) + max(0.0, gather - backward_block)
               + 7 * max(0.0, step - backward_block) + step)
    assert got.breakdown["cp"] == pytest.approx(exposed, rel=1e-9)
    assert got.breakdown["cp"] + got.hidden["cp"] == pytest.approx(3 * gather + 8 * step, rel=1e-9)


def test_the_ring_hides_its_whole_exchange_behind_the_attention():
    """Transformer Engine's ring (the default) passes each block on behind the attention's work on the one before:
    three passes of the blocks, exposed only beyond the attention's seconds; gathered first (`cp_overlap=False`,
    Llama 3's way) all of it."""
    ring, gathered = _long_context(), _long_context(cp_overlap=False)
    assert ring.breakdown["cp"] == pytest.approx(max(0.0, 3 * _gather(8) - ring.breakdown["attention"]))
    assert gathered.breakdown["cp"] == pytest.approx(3 * _gather(8), rel=1e-9)


def test_the_ideal_moves_each_k_v_byte_once_whatever_the_rotation():
    """The bound does not pay for an implementation's repeated heads or its waits."""
    ideal = _long_context(efficiency="ideal")
    assert _long_context(efficiency="ideal", cp_rotate="allgather", repeat_kv=True).step_time == ideal.step_time


def test_an_unknown_cp_rotation_is_refused_by_name():
    with pytest.raises(ValueError, match="cp_rotate='all_gather'.*'allgather'"):
        _long_context(cp_rotate="all_gather")
