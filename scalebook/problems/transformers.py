"""Problem set 4 — Transformer math: the reference solutions of `solutions/04_transformers.md`.

Each function computes its answer with scalebook from the inputs the problem states (model presets from
`models.toml`, chips from `chips.toml`), so the key moves with the package. Answers are in SI base units.
"""

from __future__ import annotations

from ..hardware.topology import TpuMesh
from ..models import TransformerConfig, get_model
from ..roofline import critical_batch, einsum_flops
from ..sharding import sharded_matmul
from ..training.book import mfu
from ..training.footprint import activation_bytes
from ..units import dtype_bytes
from . import problem

# Problem 9's run: LLaMA 3-70B on 2048 H100s, 2**22-token batches of 8192-token sequences, 2.4 s per step.
RUN_CHIPS, RUN_BATCH, RUN_SEQ, RUN_STEP_S = 2048, 2**22, 8192, 2.4


@problem("04.1", title="Parameters of LLaMA 2-13B", unit="parameters")
def llama2_13b_params() -> float:
    """All parameters of LLaMA 2-13B: 40 MHA layers (D = 5120, F = 13824, gated), untied 32000-token vocabulary."""
    return get_model("llama2-13b").param_count()


@problem("04.2", title="FLOPs of a grouped-query score einsum", unit="FLOPs")
def gqa_score_flops() -> float:
    """Q[B,T,K,G,H] · K[B,S,K,H] -> scores[B,K,G,T,S] for B = 8, T = S = 4096, K = 8, G = 8, H = 128."""
    sizes = {"B": 8, "T": 4096, "S": 4096, "K": 8, "G": 8, "H": 128}
    return einsum_flops("BTKGH,BSKH->BKGTS", sizes)


@problem("04.3", title="Training FLOPs of LLaMA 3-8B", unit="FLOPs")
def llama3_8b_training_flops() -> float:
    """Model FLOPs to train LLaMA 3-8B on 15e12 tokens in 8192-token sequences (causal, logits counted)."""
    return get_model("llama3-8b").flops_per_token(8192) * 15e12


@problem("04.4", title="Where attention catches up with the MLP", unit="tokens")
def attention_equals_mlp_length() -> float:
    """Sequence length T at which LLaMA 3-70B's causal attention FLOPs equal its MLP FLOPs (per token).

    Both grow differently: the MLP costs a fixed 2 x MLP params per token, causal attention costs a FLOP count
    proportional to T (attention_flops_per_token(T / 2)), so T = MLP / attention_flops_per_token(1 / 2).
    """
    cfg = get_model("llama3-70b")
    mlp = 2 * cfg.components()["MLP (dense)"][1]
    return mlp / cfg.attention_flops_per_token(0.5)


@problem("04.5", title="KV cache of LLaMA 3-405B at 128k context", unit="B")
def llama3_405b_kv_bytes() -> float:
    """bf16 KV-cache bytes of one 131072-token sequence of LLaMA 3.1-405B (126 layers, 8 KV heads of 128)."""
    return get_model("llama3-405b").kv_bytes_per_token(dtype_bytes("bf16")) * 131072


@problem("04.6", title="What multi-head latent attention saves", unit="ratio")
def mla_kv_saving() -> float:
    """DeepSeek-V3's per-token cache if all 128 heads kept their key (192) and value (128), over MLA's (512 + 64)."""
    cfg = get_model("deepseek-v3")
    full_heads = cfg.L * cfg.N * (cfg.head_qk + cfg.H)
    return full_heads / cfg.kv_bytes_per_token(1)


@problem("04.7", title="Saved activations per chip", unit="B")
def activations_per_chip() -> float:
    """bf16 activations of LLaMA 3-70B saving the 7 big matmul outputs per layer, 2**22 tokens, over 256 chips."""
    return activation_bytes("llama3-70b", 2**22, "big_matmuls", "bf16") / 256


@problem("04.8", title="What causal masking saves at 128k context", unit="fraction")
def causal_saving() -> float:
    """Fraction of LLaMA 3.1-405B's training FLOPs per token that a causal kernel skips at T = 131072."""
    cfg = get_model("llama3-405b")
    full, causal = cfg.flops_per_token(131072, causal=False), cfg.flops_per_token(131072)
    return 1 - causal / full


@problem("04.9", title="MFU of a LLaMA 3-70B run", unit="fraction")
def llama3_70b_mfu() -> float:
    """Model FLOPs utilisation of LLaMA 3-70B on 2048 H100s: 2**22 tokens of T = 8192 per 2.4 s step."""
    return mfu("llama3-70b", "h100", RUN_CHIPS, RUN_BATCH, RUN_STEP_S, seq_len=RUN_SEQ)


@problem("04.10", title="Batch that keeps a sparse MoE compute-bound", unit="tokens")
def moe_critical_batch() -> float:
    """Tokens per H100 for an E = 128, k = 4 MoE layer with fp8 weights and bf16 compute to be compute-bound."""
    E, k = 128, 4
    return critical_batch("h100", weight_dtype="fp8") * E / k


@problem("04.11", title="The score matrix flash attention never writes", unit="B")
def score_matrix_bytes() -> float:
    """fp32 bytes of one layer's attention scores [B, N, T, S] for B = 1, N = 64, T = S = 32768."""
    return dtype_bytes("fp32") * 1 * 64 * 32768 * 32768


# --- the book's own problems (How To Scale Your Model, ch. 4, "A Few Problems to Work") ---------------------

BOOK_Q1 = TransformerConfig(L=64, D=4096, F=16384, N=32, K=32, H=128, V=32000, name="ch. 4 Q1 model")


@problem("04.12", title="Book Q1: parameters of a dense model", unit="parameters")
def book_dense_params() -> float:
    """Parameters of L = 64, D = 4096, F = 4D, V = 32,000 with full multi-head attention (N·H = D), gated MLP."""
    return BOOK_Q1.param_count()


@problem("04.13", title="Book Q1: its int8 KV cache per token", unit="B")
def book_dense_kv_bytes() -> float:
    """Bytes of KV cache per token of the same model in int8."""
    return BOOK_Q1.kv_bytes_per_token(1)


@problem("04.14", title="Book Q2: FLOPs of a sharded matmul, per chip", unit="FLOPs")
def book_sharded_flops_per_chip() -> float:
    """FLOPs on each chip of A[B_X, D_Y] @ W[D_Y, F] on a v5p {X: 4, Y: 8, Z: 4}, B = 4096, D = 8192, F = 32768."""
    mesh = TpuMesh("v5p", X=4, Y=8, Z=4)
    return sharded_matmul("A[B_X, D_Y] @ W[D_Y, F] -> C[B_X, F]", mesh, B=4096, D=8192, F=32768).local.flops


@problem("04.15", title="Book Q3: an einsum with no batch dimensions", unit="FLOPs")
def book_einsum_flops() -> float:
    """FLOPs of A[I, J, K, L] · B[I, J, M, N, O] -> C[K, L, M, N, O] with I..O = 2..8."""
    return einsum_flops("IJKL,IJMNO->KLMNO", dict(I=2, J=3, K=4, L=5, M=6, N=7, O=8))


@problem("04.16", title="Book Q5: when attention matches the projections", unit="tokens")
def book_attention_matches_projections() -> float:
    """Sequence length at which causal attention's FLOPs equal the Q, K, V, O projections' (D = 4096, N·H = D)."""
    return 2 * BOOK_Q1.L * BOOK_Q1.attention_params() / BOOK_Q1.attention_flops_per_token(1)


@problem("04.17", title="Book Q7: how well DeepSeek-V3 used its GPUs", unit="fraction")
def book_deepseek_mfu() -> float:
    """6 · active parameters · 14.8e12 tokens over 2.79e6 H800-hours at 1.513e15 FLOP/s (the book's dense fp8)."""
    return 6 * get_model("deepseek-v3").param_count(active=True) * 14.8e12 / (2.79e6 * 3600 * 1.513e15)


@problem("04.18", title="Book Q8: the batch an MoE layer needs", unit="tokens")
def book_moe_batch() -> float:
    """Token batch above which DeepSeek-V3's MoE layer (int8 weights, bf16 compute) is compute-bound on a v5e."""
    ds = get_model("deepseek-v3")
    return critical_batch("v5e", weight_dtype="int8") * ds.E / ds.k
