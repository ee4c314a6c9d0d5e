"""Chapter 4's tools: the FLOP-convention, attention-share, KV-cache and remat tables, their explorers, the
attention roofline and the Transformer-math figures."""

from __future__ import annotations

import pytest
from explorers import assert_answers_fast

import scalebook as sb
from scalebook.widgets import models as wm

# The book's 64-layer MHA model with D = N·H = 8192 (ch. 4's KV-cache and remat examples).
BOOK_64 = sb.TransformerConfig(L=64, D=8192, F=32768, N=64, K=64, H=128, V=32000, name="64-layer, D = 8192")


def _rows(table, key: str, value: str) -> dict:
    return {row[key]: row[value] for row in table}


# --- tables ------------------------------------------------------------------------------------------------------


def test_flop_conventions_of_llama3_70b():
    table = sb.models.flop_conventions("llama3-70b", 8192)
    flops = table.column("FLOPs/token")
    P = 70553706496  # all parameters, LLaMA 3-70B config
    matmul = 80 * (2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672) + 128256 * 8192
    attention = 4 * 64 * 128 * 80 * 4096  # forward, causal: T/2 keys on average
    assert flops[0] == pytest.approx(6 * P)
    assert flops[1] == pytest.approx(6 * matmul + 3 * attention)  # model FLOPs
    assert flops[2] == pytest.approx(6 * matmul + 6 * attention)  # full attention
    assert flops[3] == pytest.approx(6 * (matmul - 128256 * 8192) + 3 * attention)  # no logits
    assert flops[4] == pytest.approx(6 * matmul)  # seq_len = 0
    assert flops[5] == pytest.approx(2 * matmul + attention)  # inference
    assert flops[6] == pytest.approx(6 * matmul + 4 * attention)  # big_matmuls recompute attention
    assert flops[7] == pytest.approx(8 * matmul + 4 * attention)  # block recomputes the forward pass
    assert table.column("× model FLOPs")[1] == 1
    assert "remat='block'" in table.column("call")[7]


@pytest.mark.parametrize("T, D", [(65536, 8192), (8192, 4096), (4608 * 8, 4608)])
def test_attention_share_follows_t_over_8d(T, D):
    values = _rows(sb.widgets.attention_share(T, D), "quantity", "value")
    assert values["attention / all matmuls"] == pytest.approx(T / (8 * D))
    assert values["attention / QKVO projections"] == pytest.approx(T / (2 * D))
    causal = _rows(sb.widgets.attention_share(T, D, causal=True), "quantity", "value")
    assert causal["attention / all matmuls"] == pytest.approx(T / (16 * D))


def test_kv_cache_table_gives_8_gib_for_the_book_example():
    table = sb.widgets.kv_cache_table(BOOK_64, 8192, "int8")
    per_seq = table.column("bytes/sequence")
    assert per_seq[0] == 2 * 8192 * 64 * 8192
    sb.expect(per_seq[0], sb.published("04_transformers.kv_cache_8k_int8"))
    assert table.column("attention") == ["MHA (K = 64), as configured", "GQA (K = 8)", "MQA (K = 1)"]
    assert per_seq[1:] == [per_seq[0] / 8, per_seq[0] / 64]


def test_kv_cache_table_for_mla():
    table = sb.widgets.kv_cache_table("deepseek-v3", 1, "bf16", batch=4)
    assert table.column("bytes/token")[0] == 61 * (512 + 64) * 2
    assert table.column("bytes/token")[1] == 61 * 128 * (192 + 128) * 2
    assert table.column("bytes for the batch")[0] == 4 * 61 * 576 * 2


def test_remat_table_gives_84_tb_and_4_tb():
    table = sb.widgets.remat_table(BOOK_64, 4e6, 8192)
    saved = _rows(table, "remat", "activation bytes")
    assert saved["none"] == pytest.approx(2 * 20 * 4e6 * 8192 * 64)  # ≈ 84 TB (ch. 4)
    assert saved["block"] == pytest.approx(2 * 4e6 * 8192 * 64)  # ≈ 4.2 TB
    assert saved["big_matmuls"] == pytest.approx(2 * 7 * 4e6 * 8192 * 64)
    ratio = _rows(table, "remat", "× model FLOPs")
    assert ratio["none"] == 1 < ratio["big_matmuls"] < ratio["block"] < 4 / 3 + 0.01


def test_attention_estimate_intensity_formula():
    T = S = 8192
    for G in (1, 8):
        est = sb.roofline.attention(T, S, 8 * G, 8, 128, "v5e")
        assert est.flops == 4 * T * S * 8 * G * 128
        assert est.intensity == pytest.approx(T * S * G / (T * G + S))
    decode = sb.roofline.attention(1, 8192, 64, 8, 128, "v5e")
    assert decode.intensity == pytest.approx(8 * 8192 / (8 + 8192)) and decode.bound == "memory"
    with pytest.raises(ValueError, match="multiple"):
        sb.roofline.attention(1, 1, 6, 4, 128)


# --- explorers ---------------------------------------------------------------------------------------------------


def test_model_explorer_opens_on_llama3_70b():
    ex = sb.widgets.model_explorer()
    table, conventions = ex.result
    assert ex.values() == {"model": "llama3-70b", "seq_len": 8192}
    assert table.column("params")[-1] == 70553706496
    assert len(conventions) == 8


def test_model_explorer_takes_your_own_config():
    ex = sb.widgets.model_explorer(BOOK_64, seq_len=4096)
    assert ex.values()["model"] == "64-layer, D = 8192"
    assert ex.result[0].column("params")[-1] == BOOK_64.param_count()
    ex.update(model="llama3-8b")
    assert ex.result[0].column("params")[-1] == sb.get_model("llama3-8b").param_count()


def test_explorers_open_on_the_worked_answers():
    kv = sb.widgets.kv_cache_explorer(BOOK_64, context=8192, dtype="int8").result
    sb.expect(kv.column("bytes/sequence")[0], sb.published("04_transformers.kv_cache_8k_int8"))
    remat = sb.widgets.remat_explorer(BOOK_64, tokens=4e6).result
    assert remat.column("activation bytes")[0] == pytest.approx(83.886e12, rel=1e-4)
    table, chart = sb.widgets.attention_share_explorer(T=65536, D=8192).result
    assert _rows(table, "quantity", "value")["attention / all matmuls"] == pytest.approx(1.0)
    assert "<svg" in chart.to_svg()
    est, chart = sb.widgets.attention_roofline_explorer().result
    assert est.intensity == pytest.approx(8192 * 8 / 9) and "<svg" in chart.to_svg()


def test_menu_rejects_an_unknown_model():
    with pytest.raises(KeyError):
        wm.model_explorer("gpt-9")


@pytest.mark.parametrize("make, change", [
    (sb.widgets.model_explorer, {"model": "deepseek-v3", "seq_len": 131072}),
    (sb.widgets.attention_share_explorer, {"T": 2**20, "D": 2048, "causal": "causal"}),
    (sb.widgets.kv_cache_explorer, {"model": "deepseek-v3", "context": 2**17, "dtype": "int8", "batch": 64}),
    (sb.widgets.remat_explorer, {"model": "llama3-405b", "tokens": 1.6e7, "seq_len": 2**15}),
    (sb.widgets.attention_roofline_explorer, {"T": 1, "S": 2**17, "G": 1, "chip": "h100"}),
])
def test_model_explorers_answer_fast(make, change):
    assert_answers_fast(make, change)


# --- figures -----------------------------------------------------------------------------------------------------


def _labelled(fig):
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel()
    assert fig.axes[0].get_title()


def test_attention_share_figure_marks_the_crossovers():
    fig = sb.plots.models.attention_share(["llama3-70b", "llama3-8b"])
    _labelled(fig)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and len(ax.get_lines()) == 5  # two curves, two 50% marks, the 50% line
    x, y = ax.get_lines()[1].get_data()
    cfg = sb.get_model("llama3-70b")
    assert y[0] == 0.5 and x[0] == pytest.approx(2 * cfg.matmul_params() / cfg.attention_flops_per_token(0.5))
    with pytest.raises(ValueError, match="increasing"):
        sb.plots.models.attention_share(T=(10, 1))


def test_param_breakdown_bars_sum_to_one():
    fig = sb.plots.models.param_breakdown(["llama3-8b", "deepseek-v3"])
    _labelled(fig)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["LLaMA 3-8B", "DeepSeek-V3", "DeepSeek-V3 (active)"]
    widths = [0.0, 0.0, 0.0]
    for patch in ax.patches:
        widths[round(patch.get_y() + patch.get_height() / 2)] += patch.get_width()
    assert widths == pytest.approx([1, 1, 1])
