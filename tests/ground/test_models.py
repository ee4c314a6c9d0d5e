"""Transformer accounting against the book's worked answers (ch. 4 and 6) and the released configs."""

import pytest

import scalebook as sb
from scalebook.models import TransformerConfig, from_hf_config, get_model, layer_einsums


@pytest.mark.parametrize("name, params", [
    ("llama2-13b", 13_015_864_320),  # Hugging Face model card total
    ("llama3-8b", 8_030_261_248),
    ("llama3-70b", 70_553_706_496),
    ("llama3-405b", 405_853_388_800),
    ("gemma-7b", 8_537_680_896),
])
def test_parameter_counts_match_the_released_models_exactly(name, params):
    assert get_model(name).param_count() == params


def test_the_components_add_up_to_the_parameter_count():
    """Chapter 6 asserts LLaMA 3-70B's parts against the book (FFW 56.3e9, vocab 2.1e9, attention 12e9, about
    70.4e9) and chapter 7 its model's 18.4e9; here, that the parts leave nothing out and count nothing twice."""
    for name in ("llama3-70b", "ch7-model", "deepseek-v3"):
        model = get_model(name)
        parts = model.components()
        assert sum(total for total, _ in parts.values()) == model.param_count(), name
        assert sum(active for _, active in parts.values()) == model.param_count(active=True), name


def test_deepseek_v3_total_and_active():
    # DeepSeek-V3: 671B parameters, 37B activated per token (ch. 4 Q7 uses 37e9).
    ds = get_model("deepseek-v3")
    sb.expect(ds.param_count(), sb.published("04_transformers.deepseek_v3_total_params"))
    sb.expect(ds.param_count(active=True), sb.published("14_moe.deepseek_v3_active_params"))


def test_q1_small_model():
    # 4.Q1: D=4096, F=4D, V=32,000, L=64, MHA: ~16e9 params with the book's rounded dims, 17.4e9 exact;
    # attention holds 1/4 of the per-layer params; int8 KV cache 2·L·N·H = 512 kB per token.
    m = TransformerConfig(L=64, D=4096, F=16384, N=32, K=32, H=128, V=32000, gated=True)
    sb.expect(m.param_count(), sb.published("04_transformers.q1_param_count"))
    layer = m.attention_params() + 3 * m.D * m.F
    sb.expect(m.attention_params() / layer, sb.published("04_transformers.q1_attention_share"))
    sb.expect(m.kv_bytes_per_token(bytes_per_value=1), sb.published("04_transformers.q1_kv_bytes_per_token"))


def test_kv_cache_example():
    # 4.Ex-KV: 8k context, 64 layers, K·H = 8192, int8 -> 2·8192·64·8192 bytes = 8 GiB per sequence.
    m = TransformerConfig(L=64, D=8192, F=32768, N=64, K=64, H=128, V=32000)
    sb.expect(8192 * m.kv_bytes_per_token(bytes_per_value=1), sb.published("04_transformers.kv_cache_8k_int8"))


def test_six_flops_per_parameter_per_token_for_training():
    # 6.A2: 6 x 70e9 ~ 4.2e11 FLOPs per token; ~1 ms per token on one v5p at peak.
    m = get_model("llama3-70b")
    sb.expect(m.flops_per_token(), sb.published("06_training_llama.flops_per_token"))
    assert m.flops_per_token() / sb.get_chip("v5p").bf16_flops == pytest.approx(0.92e-3, rel=0.02)
    assert m.flops_per_token(training=False) == pytest.approx(m.flops_per_token() / 3)


def test_training_run_arithmetic_of_chapter_6():
    # 6.A3/A4: 15T tokens -> 6.3e24 FLOPs; ~435 years on one v5p; ~44 days on 8960 v5p at 40% MFU.
    total = get_model("llama3-70b").flops_per_token() * 15e12
    sb.expect(total, sb.published("06_training_llama.training_flops"))
    v5p = sb.get_chip("v5p").bf16_flops
    sb.expect(total / v5p, sb.published("06_training_llama.whole_run_on_one_v5p"))
    sb.expect(total / (8960 * v5p * 0.4), sb.published("06_training_llama.whole_run_on_a_pod"))


def test_q5_attention_equals_the_projections_at_T_equal_2D():
    # 4.Q5: full (non-causal) attention FLOPs 4·T·N·H per token per layer equal the QKVO projections' 8·D·N·H
    # (MHA) at T = 2D.
    m = TransformerConfig(L=1, D=4096, F=16384, N=32, K=32, H=128, V=32000)
    projections = 2 * m.attention_params()
    assert m.attention_flops_per_token(context=2 * m.D) == pytest.approx(projections)


def test_q7_deepseek_v3_utilisation():
    # 4.Q7: 2.79e6 H800-hours at 1.513e15 dense fp8 FLOP/s; 6 x 37e9 x 14.8e12 FLOPs used -> MFU ~21.7%.
    active = sb.published("14_moe.deepseek_v3_active_params").value  # the report's 37e9, as the book uses it
    used = 6 * active * 14.8e12  # the book's 6 x params rule
    available = 2.79e6 * 3600 * 1.513e15
    sb.expect(used / available, sb.published("04_transformers.q7_deepseek_v3_mfu"))


def test_flop_conventions_move_the_count():
    m = get_model("llama3-70b")
    base = m.flops_per_token(8192)
    assert m.flops_per_token(8192, causal=False) > base > m.flops_per_token(0)
    assert m.flops_per_token(8192, logits=False) == pytest.approx(base - 3 * 2 * m.V * m.D)
    assert m.flops_per_token(8192, remat="block") == pytest.approx(base * 4 / 3)
    assert m.flops_per_token(8192, remat="big_matmuls") == pytest.approx(
        base + m.attention_flops_per_token(4096))


def test_from_hf_config_reads_a_llama_config():
    cfg = {"model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192, "intermediate_size": 28672,
           "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256,
           "tie_word_embeddings": False}
    m = from_hf_config(cfg, name="mine")
    assert m.param_count() == get_model("llama3-70b").param_count() and m.H == 128


def test_from_hf_config_reads_an_moe_with_latent_attention():
    cfg = {"model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168, "intermediate_size": 18432,
           "moe_intermediate_size": 2048, "num_attention_heads": 128, "num_key_value_heads": 128,
           "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1, "first_k_dense_replace": 3,
           "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
           "v_head_dim": 128, "vocab_size": 129280}
    assert from_hf_config(cfg).param_count() == get_model("deepseek-v3").param_count()


def test_gpt2_style_configs_are_ungated():
    m = from_hf_config({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257,
                        "tie_word_embeddings": True})
    assert not m.gated and m.F == 4 * 768
    assert m.param_count() == pytest.approx(124.4e6, rel=0.01)  # GPT-2 small, biases and positions aside


@pytest.mark.parametrize("call, error, message", [
    (lambda: get_model("llama4-70b"), KeyError, "closest"),
    (lambda: TransformerConfig(L=0, D=1, F=1, N=1, K=1, H=1, V=1), ValueError, "L=0"),
    (lambda: TransformerConfig(L=1, D=8, F=8, N=6, K=4, H=2, V=8), ValueError, "multiple of K=4"),
    (lambda: TransformerConfig(L=1, D=8, F=8, N=1, K=1, H=8, V=8, E=4, k=8), ValueError, "k=8"),
    (lambda: get_model("llama3-8b").flops_per_token(remat="some"), ValueError, "remat="),
    (lambda: get_model("llama3-8b").flops_per_token(-1), ValueError, "seq_len"),
    (lambda: from_hf_config({"hidden_size": 8}), ValueError, "num_hidden_layers"),
])
def test_bad_model_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_ex_remat_saved_activations():
    # 4.Ex-remat: B·T = 4M tokens, L = 64, D = 8192, bf16: ~20 saves per layer -> ~84 TB; block remat ~4.2 TB.
    m = TransformerConfig(L=64, D=8192, F=32768, N=64, K=64, H=128, V=32000)
    sb.expect(sb.training.activation_bytes(m, 4e6, "none"), sb.published("04_transformers.remat_save_everything_bytes"))
    sb.expect(sb.training.activation_bytes(m, 4e6, "block"), sb.published("04_transformers.remat_block_bytes"))


def test_q2_flops_of_a_sharded_contraction():
    # 4.Q2: A[B_X, D_Y] ·_D W[D_Y, F] on {X:4, Y:8, Z:4}: 2BDF/(X·Y) per chip; the Z copies make 2BDF·Z in all.
    B, D, F = 4096, 8192, 32768
    plan = sb.sharded_matmul("A[B_X, D_Y] @ W[D_Y, F] -> C[B_X, F]", sb.TpuMesh("v5p", X=4, Y=8, Z=4), B=B, D=D, F=F)
    assert plan.local.flops == 2 * B * D * F / (4 * 8)
    assert plan.local.flops * 4 * 8 * 4 == 2 * B * D * F * 4


def test_q3_contraction_without_batch_dims():
    # 4.Q3: A[I,J,K,L] · B[I,J,M,N,O] -> C[K,L,M,N,O] costs 2·I·J·K·L·M·N·O.
    sizes = dict(zip("IJKLMNO", range(2, 9)))
    assert sb.roofline.einsum_flops("IJKL,IJMNO->KLMNO", sizes) == 2 * 2 * 3 * 4 * 5 * 6 * 7 * 8


def test_q4_attention_intensity_prefill_and_decode():
    # 4.Q4: intensity T·S·G/(T·G + S): prefill (S = T) ~ T·G/(G+1); decode (T = 1) -> G, never compute-bound.
    G, H, K = 8, 128, 8
    def intensity(T, S):  # noqa: E306
        flops = 4 * T * S * G * K * H
        nbytes = 2 * (2 * T * G * K * H + 2 * S * K * H)  # bf16 Q and O, K and V
        return flops / nbytes
    assert intensity(1, 8192) == pytest.approx(G, rel=0.01)
    assert intensity(4096, 4096) == pytest.approx(4096 * G / (G + 1), rel=1e-9)


def test_q8_moe_critical_batch():
    # 4.Q8: int8 weights, bf16 FLOPs on v5e: B > 120·E/k; DeepSeek-V3 (E = 256, k = 8): 3840 tokens.
    ds = get_model("deepseek-v3")
    sb.expect(sb.roofline.critical_batch("v5e", weight_dtype="int8") * ds.E / ds.k,
              sb.published("04_transformers.q8_moe_critical_batch"))


def test_a_stored_hf_config_reads_as_mistral_7b_and_unknown_names_suggest_the_closest():
    cfg = sb.models.from_hf_config(sb.models.hf_config("mistral-7b"))
    assert (cfg.L, cfg.D, cfg.F, cfg.N, cfg.K, cfg.V) == (32, 4096, 14336, 32, 8, 32000)
    assert cfg.param_count() == pytest.approx(7.24e9, rel=0.01)  # Mistral AI's "7.3B" rounds the same count
    with pytest.raises(KeyError, match="mistral-7b"):
        sb.models.hf_config("mistral-7")


def test_a_layers_einsum_weights_add_up_to_its_attention_and_mlp_parameters():
    m = sb.get_model("llama3-70b")
    shapes = [w for _, _, w in layer_einsums(m) if w != "no weights"]
    sizes = [eval(w[w.index("["):].replace(", ", "*").strip("[]")) for w in shapes]  # noqa: S307 (our own text)
    assert sum(sizes) == m.attention_params() + 3 * m.D * m.F  # gated MLP: up, gate, down
    assert shapes[0] == "W_Q[8192, 64, 128]" and len(layer_einsums("llama3-8b")) == 9  # book's Llama 3 letters
