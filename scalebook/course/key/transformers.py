"""Problem set 4 — Transformer math: the reference solutions of `solutions/04_transformers.md`.

Each function computes its answer with scalebook from the inputs the problem states (model presets from
`models.toml`, chips from `chips.toml`), so the key moves with the package. Answers are in SI base units.
"""

from __future__ import annotations

from ...hardware.topology import TpuMesh
from ...models import TransformerConfig, get_model
from ...roofline import critical_batch, einsum_flops
from ...sharding import local_shape
from ...training.book import mfu
from ...training.footprint import activation_bytes
from ...units import dtype_bytes
from ..inputs import vary
from . import solution

# The dense presets a variant may name instead of the book's model.
DENSE_MODELS = ("llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gemma-7b", "ch7-model")

# Problem 9's run: LLaMA 3-70B on 2048 H100s, 2**22-token batches of 8192-token sequences, 2.4 s per step.
RUN_CHIPS, RUN_BATCH, RUN_SEQ, RUN_STEP_S = 2048, 2**22, 8192, 2.4


@solution("04.1", title="Parameters of LLaMA 2-13B", unit="parameters", hints=(
    "Count per layer (attention projections, a gated MLP's three matrices), times the layers, plus the embedding "
    "and the output matrix (unless it is tied to the embedding).",
    "Per layer, Q and O are D × N·H, K and V are D × K·H, the gated MLP holds three D × F matrices; then the "
    "embedding, and the output matrix unless it is tied: ⟦P = m.L * (2 * m.D * m.N * m.H + 2 * m.D * m.K * m.H + 3 "
    "* m.D * m.F) + e * m.V * m.D⟧ with ⟦e = 1 if m.tied else 2⟧ and ⟦m = sb.get_model(model)⟧ (the norms' few "
    "parameters hardly count).",
))
def llama2_13b_params(model: str = vary("llama2-13b", choices=DENSE_MODELS)) -> float:
    """All parameters of `model` (the book's: LLaMA 2-13B, 40 MHA layers, D = 5120, F = 13824, gated, V = 32000)."""
    return get_model(model).param_count()


@solution("04.2", title="FLOPs of a grouped-query score einsum", unit="FLOPs", hints=(
    "A contraction costs two FLOPs per multiply-add: twice the product of every distinct dimension of both "
    "operands.",
    "The distinct dimensions are B, T (queries), S = T (keys), K, G and H: ⟦f = 2 * B * T * T * K * G * H⟧.",
))
def gqa_score_flops(B: int = vary(8, 1, 64), T: int = vary(4096, 512, 32768, step=512), K: int = vary(8, 1, 16),
                    G: int = vary(8, 1, 16), H: int = vary(128, 64, 256, step=64)) -> float:
    """Q[B,T,K,G,H] · K[B,S,K,H] -> scores[B,K,G,T,S] with S = T."""
    sizes = {"B": B, "T": T, "S": T, "K": K, "G": G, "H": H}
    return einsum_flops("BTKGH,BSKH->BKGTS", sizes)


@solution("04.3", title="Training FLOPs of LLaMA 3-8B", unit="FLOPs", hints=(
    "Training costs about six FLOPs per matmul parameter per token, plus causal attention's share at this length.",
    "A forward pass is two FLOPs per matmul weight plus attention's two contractions over half of the T keys a "
    "causal query sees on average; training triples it: ⟦f = 3 * (2 * m.matmul_params() + attn) * tokens⟧ with "
    "⟦attn = 4 * m.N * m.H * m.L * T / 2⟧ and ⟦m = sb.get_model(model)⟧ (`m.flops_per_token(T)` does the same).",
))
def llama3_8b_training_flops(
        model: str = vary("llama3-8b", choices=DENSE_MODELS), tokens: float = vary(15e12, 1e12, 3e13),
                             T: int = vary(8192, 2048, 32768, step=2048)) -> float:
    """Model FLOPs to train `model` on `tokens` tokens in T-token sequences (causal, logits counted)."""
    return get_model(model).flops_per_token(T) * tokens


@solution("04.4", title="Where attention catches up with the MLP", unit="tokens", hints=(
    "The MLP's FLOPs per token are fixed; causal attention's grow with the sequence length T.",
    "The MLP does two FLOPs per weight, ⟦mlp = 2 * 3 * m.D * m.F * m.L⟧ per token; causal attention does its two "
    "contractions over half of the T keys on average, four N·H·L FLOPs per key; equal at ⟦T = mlp / (4 * m.N * m.H "
    "* m.L / 2)⟧, with ⟦m = sb.get_model(model)⟧.",
))
def attention_equals_mlp_length(model: str = vary("llama3-70b", choices=DENSE_MODELS)) -> float:
    """Sequence length T at which LLaMA 3-70B's causal attention FLOPs equal its MLP FLOPs (per token).

    Both grow differently: the MLP costs a fixed 2 x MLP params per token, causal attention costs a FLOP count
    proportional to T (attention_flops_per_token(T / 2)), so T = MLP / attention_flops_per_token(1 / 2).
    """
    cfg = get_model(model)
    mlp = 2 * cfg.components()["MLP (dense)"][1]
    return mlp / cfg.attention_flops_per_token(0.5)


@solution("04.5", title="KV cache of LLaMA 3-405B at 128k context", unit="B", hints=(
    "Each token keeps a key and a value per KV head per layer.",
    "⟦cache = 2 * m.L * m.K * m.H * sb.units.dtype_bytes(dtype) * T⟧ (keys and values, every layer, every KV head) "
    "with ⟦m = sb.get_model(model)⟧.",
))
def llama3_405b_kv_bytes(model: str = vary("llama3-405b", choices=DENSE_MODELS),
                         T: int = vary(131072, 8192, 262144, step=8192),
                         dtype: str = vary("bf16", choices=("bf16", "int8", "fp32"))) -> float:
    """`dtype` KV-cache bytes of one T-token sequence of `model`."""
    return get_model(model).kv_bytes_per_token(dtype_bytes(dtype)) * T


@solution("04.6", title="What multi-head latent attention saves", unit="ratio", hints=(
    "MLA caches one shared latent plus a small rope key per token per layer, instead of every head's key and value.",
    "Full heads would cache a key of width head_qk and a value of width H per head; MLA caches kv_rank + rope_dim "
    "values: ⟦r = m.L * m.N * (m.head_qk + m.H) / (m.L * (m.kv_rank + m.rope_dim))⟧ with ⟦m = "
    "sb.get_model('deepseek-v3')⟧.",
))
def mla_kv_saving() -> float:
    """DeepSeek-V3's per-token cache if all 128 heads kept their key (192) and value (128), over MLA's (512 + 64)."""
    cfg = get_model("deepseek-v3")
    full_heads = cfg.L * cfg.N * (cfg.head_qk + cfg.H)
    return full_heads / cfg.kv_bytes_per_token(1)


@solution("04.7", title="Saved activations per chip", unit="B", hints=(
    "Saving only the big matmuls' outputs keeps a fixed number of D-wide arrays per token per layer for the "
    "backward pass; everything is split evenly over the chips.",
    "The book's count for this policy is seven [tokens, D] arrays per layer, in bf16: ⟦b = saves * tokens * m.D * "
    "m.L * 2 / chips⟧ with ⟦saves = 7⟧ and ⟦m = sb.get_model(model)⟧.",
))
def activations_per_chip(model: str = vary("llama3-70b", choices=DENSE_MODELS),
                         tokens: int = vary(2**22, 2**20, 2**24, step=2**20),
                         chips: int = vary(256, 64, 2048, step=64)) -> float:
    """bf16 activations of `model` saving the 7 big matmul outputs per layer, `tokens` tokens, over `chips` chips."""
    return activation_bytes(model, tokens, "big_matmuls", "bf16") / chips


@solution("04.8", title="What causal masking saves at 128k context", unit="fraction", hints=(
    "A causal kernel skips the upper half of the score matrix: half of attention's T-dependent FLOPs.",
    "Per token, causal attention sees half of the T keys, full attention all of them: ⟦r = 1 - (2 * mp + a * T / 2) "
    "/ (2 * mp + a * T)⟧ with ⟦mp = m.matmul_params()⟧, ⟦a = 4 * m.N * m.H * m.L⟧ FLOPs per key and ⟦m = "
    "sb.get_model(model)⟧ (training's factor of three cancels).",
))
def causal_saving(
        model: str = vary("llama3-405b", choices=DENSE_MODELS),
        T: int = vary(131072, 8192, 262144, step=8192)) -> float:
    """Fraction of `model`'s training FLOPs per token that a causal kernel skips at sequence length T."""
    cfg = get_model(model)
    full, causal = cfg.flops_per_token(T, causal=False), cfg.flops_per_token(T)
    return 1 - causal / full


@solution("04.9", title="MFU of a LLaMA 3-70B run", unit="fraction", hints=(
    "MFU is the model FLOPs a step needs over what the chips could do in that time at peak.",
    "⟦u = f * batch / (chips * C * step)⟧ with the training FLOPs per token at the run's sequence length, ⟦f = "
    "sb.get_model('llama3-70b').flops_per_token(8192)⟧, and the H100's dense ⟦C = "
    "sb.get_chip('h100').peak_flops('bf16')⟧.",
))
def llama3_70b_mfu(
        chips: int = vary(RUN_CHIPS, 1024, 8192, step=512), batch: int = vary(RUN_BATCH, 2**21, 2**24, step=2**20),
                   step: float = vary(RUN_STEP_S, 1.0, 20.0)) -> float:
    """Model FLOPs utilisation of LLaMA 3-70B on `chips` H100s: `batch` tokens of T = 8192 per `step` seconds."""
    return mfu("llama3-70b", "h100", chips, batch, step, seq_len=RUN_SEQ)


@solution("04.10", title="Batch that keeps a sparse MoE compute-bound", unit="tokens", hints=(
    "Each expert sees only k / E of the tokens, but all E experts' weights are read: the dense critical batch grows "
    "by E / k.",
    "The dense critical batch with fp8 weights and bf16 compute on an H100, times E / k: ⟦B = C / W * w / 2 * E / "
    "k⟧ with ⟦C = sb.get_chip('h100').peak_flops('bf16')⟧, ⟦W = sb.get_chip('h100').hbm_bandwidth⟧ and ⟦w = "
    "sb.units.dtype_bytes('fp8')⟧.",
))
def moe_critical_batch(E: int = vary(128, 8, 256, step=8), k: int = vary(4, 1, 8)) -> float:
    """Tokens per H100 for an E-expert, top-k MoE layer with fp8 weights and bf16 compute to be compute-bound."""
    return critical_batch("h100", weight_dtype="fp8") * E / k


@solution("04.11", title="The score matrix flash attention never writes", unit="B", hints=(
    "The score matrix has one entry per query, key and head: it grows with T squared.",
    "⟦b = 4 * B * N * T * T⟧ bytes (fp32 scores).",
))
def score_matrix_bytes(
        B: int = vary(1, 1, 8), N: int = vary(64, 8, 128, step=8),
        T: int = vary(32768, 4096, 131072, step=4096)) -> float:
    """fp32 bytes of one layer's attention scores [B, N, T, S] with S = T."""
    return dtype_bytes("fp32") * B * N * T * T


# --- the book's own problems (How To Scale Your Model, ch. 4, "A Few Problems to Work") ---------------------

BOOK_Q1 = TransformerConfig(L=64, D=4096, F=16384, N=32, K=32, H=128, V=32000, name="ch. 4 Q1 model")


def _book_q1(L: int, D: int) -> TransformerConfig:
    """Chapter 4 Q1's model with L layers and width D (F = 4D, N·H = D with H = 128, V = 32000)."""
    return TransformerConfig(L=L, D=D, F=4 * D, N=D // 128, K=D // 128, H=128, V=32000, name="ch. 4 Q1 model")


@solution("04.12", title="Book Q1: parameters of a dense model", unit="parameters", hints=(
    "Per layer: four D×D attention projections (full MHA, N·H = D) and a gated MLP's three D×F matrices; then "
    "embedding and output.",
    "With F = 4D: ⟦P = L * (4 * D * D + 3 * D * 4 * D) + 2 * V * D⟧ and the vocabulary ⟦V = 32000⟧.",
))
def book_dense_params(L: int = vary(64, 16, 128, step=8), D: int = vary(4096, 1024, 8192, step=512)) -> float:
    """Parameters of L layers, width D, F = 4D, V = 32,000 with full multi-head attention (N·H = D), gated MLP."""
    return _book_q1(L, D).param_count()


@solution("04.13", title="Book Q1: its int8 KV cache per token", unit="B", hints=(
    "Every layer keeps one key and one value vector of width K·H = D per token.",
    "⟦b = 2 * L * D * 1⟧ bytes: a key and a value per layer, one byte per int8 value.",
))
def book_dense_kv_bytes(L: int = vary(64, 16, 128, step=8), D: int = vary(4096, 1024, 8192, step=512)) -> float:
    """Bytes of KV cache per token of the same model in int8."""
    return _book_q1(L, D).kv_bytes_per_token(1)


def _local_flops(B: int, D: int, F: int, mesh: TpuMesh) -> float:
    """FLOPs one chip does multiplying its own blocks of A[B_X, D_Y] @ W[D_Y, F], before any communication.

    Not the cheapest plan's (`sharded_matmul` may gather D first when D is small, and then each chip does the
    whole contraction): the problems ask what the sharding as written leaves each chip to do."""
    return einsum_flops("BD,DF->BF", {**local_shape("A[B_X, D_Y]", mesh, {"B": B, "D": D}), "F": F})


@solution("04.14", title="Book Q2: FLOPs of a sharded matmul, per chip", unit="FLOPs", hints=(
    "Each chip multiplies only its local blocks: B / X rows and D / Y of the contraction; Z holds copies.",
    "Two FLOPs per multiply-add over the chip's own blocks: ⟦f = 2 * (B / 4) * (D / 8) * F⟧.",
))
def book_sharded_flops_per_chip(
        B: int = vary(4096, 1024, 16384, step=1024), D: int = vary(8192, 2048, 16384, step=1024),
                                F: int = vary(32768, 8192, 65536, step=1024)) -> float:
    """FLOPs on each chip of A[B_X, D_Y] @ W[D_Y, F] on a v5p {X: 4, Y: 8, Z: 4}."""
    return _local_flops(B, D, F, TpuMesh("v5p", X=4, Y=8, Z=4))


@solution("04.15", title="Book Q3: an einsum with no batch dimensions", unit="FLOPs", hints=(
    "With no batch dimension, the count is still two FLOPs per multiply-add over every distinct dimension.",
    "⟦f = 2 * I * J * K * L * M * N * O⟧.",
))
def book_einsum_flops(I: int = vary(2, 2, 16), J: int = vary(3, 2, 16), K: int = vary(4, 2, 16),  # noqa: E741
                      L: int = vary(5, 2, 16), M: int = vary(6, 2, 16), N: int = vary(7, 2, 16),
                      O: int = vary(8, 2, 16)) -> float:  # noqa: E741
    """FLOPs of A[I, J, K, L] · B[I, J, M, N, O] -> C[K, L, M, N, O]."""
    return einsum_flops("IJKL,IJMNO->KLMNO", dict(I=I, J=J, K=K, L=L, M=M, N=N, O=O))


@solution("04.16", title="Book Q5: when attention matches the projections", unit="tokens", hints=(
    "The projections cost two FLOPs per weight per token; attention's score and value einsums grow with T.",
    "Four D × D projections per layer, two FLOPs per weight; attention's two contractions cost four N·H·L = four "
    "D·L FLOPs per key; equal at ⟦T = 2 * L * 4 * D * D / (4 * D * L)⟧ with ⟦L = 64⟧.",
))
def book_attention_matches_projections(D: int = vary(4096, 1024, 16384, step=512)) -> float:
    """Sequence length at which causal attention's FLOPs equal the Q, K, V, O projections' (width D, N·H = D)."""
    cfg = _book_q1(BOOK_Q1.L, D)
    return 2 * cfg.L * cfg.attention_params() / cfg.attention_flops_per_token(1)


@solution("04.17", title="Book Q7: how well DeepSeek-V3 used its GPUs", unit="fraction", hints=(
    "Only the active parameters (shared plus k routed experts) cost FLOPs per token.",
    "⟦u = 6 * P * tokens / (gpu_hours * 3600 * C)⟧ with ⟦P = sb.get_model('deepseek-v3').param_count(active=True)⟧ "
    "and the H800's fp8 peak the book uses, ⟦C = 1.513e15⟧.",
))
def book_deepseek_mfu(tokens: float = vary(14.8e12, 5e12, 3e13), gpu_hours: float = vary(2.79e6, 1e6, 8e6)) -> float:
    """6 · active parameters · `tokens` over `gpu_hours` H800-hours at 1.513e15 FLOP/s (the book's dense fp8)."""
    return 6 * get_model("deepseek-v3").param_count(active=True) * tokens / (gpu_hours * 3600 * 1.513e15)


@solution("04.18", title="Book Q8: the batch an MoE layer needs", unit="tokens", hints=(
    "Each token visits only k of E experts, so every expert needs the dense critical batch on its own.",
    "The dense critical batch with int8 weights and bf16 compute, times E / k: ⟦B = C / W * w / 2 * m.E / m.k⟧ with "
    "⟦C = sb.get_chip(chip).peak_flops('bf16')⟧, ⟦W = sb.get_chip(chip).hbm_bandwidth⟧, ⟦w = "
    "sb.units.dtype_bytes('int8')⟧ and ⟦m = sb.get_model('deepseek-v3')⟧.",
))
def book_moe_batch(chip: str = vary("v5e", choices=("v5e", "v5p", "v6e", "v4p", "h100", "h200", "b200"))) -> float:
    """Token batch above which DeepSeek-V3's MoE layer (int8 weights, bf16 compute) is compute-bound on `chip`."""
    ds = get_model("deepseek-v3")
    return critical_batch(chip, weight_dtype="int8") * ds.E / ds.k


@solution("04.19", title="Book Q1: attention's share of a layer", unit="fraction", hints=(
    "Count the four attention projections against the gated MLP's three matrices; the embeddings are not in a "
    "layer.",
    "⟦r = 4 * D * D / (4 * D * D + 3 * D * F)⟧ with ⟦F = ratio * D⟧ and N·H = D.",
))
def book_attention_share(D: int = vary(4096, 1024, 8192, step=512), ratio: int = vary(4, 2, 8)) -> float:
    """Fraction of a layer's parameters in W_Q, W_K, W_V, W_O for width D, F = ratio · D, N·H = D, gated MLP."""
    parts = TransformerConfig(L=1, D=D, F=ratio * D, N=D // 128, K=D // 128, H=128, V=32000).components()
    return parts["attention"][0] / (parts["attention"][0] + parts["MLP (dense)"][0])


@solution("04.20", title="Book Q2: the FLOPs of a sharded matmul over the whole mesh", unit="FLOPs", hints=(
    "Each chip does its local matmul; an axis the sharding does not name repeats the same work on every plane.",
    "One chip's blocks, times every chip: ⟦f = 2 * (B / 4) * (D / 8) * F * (4 * 8 * Z)⟧.",
))
def book_sharded_total_flops(B: int = vary(4096, 1024, 16384, step=1024), D: int = vary(8192, 2048, 16384, step=1024),
                             F: int = vary(32768, 8192, 65536, step=1024),
                             Z: int = vary(4, choices=(2, 4, 8))) -> float:
    """FLOPs of A[B_X, D_Y] @ W[D_Y, F] summed over every chip of a v5p {X: 4, Y: 8, Z}."""
    mesh = TpuMesh("v5p", X=4, Y=8, Z=Z)
    return _local_flops(B, D, F, mesh) * mesh.n_chips


@solution("04.21", title="Book Q6: what saving only the big matmuls costs in the backward pass", unit="FLOPs", hints=(
    "The two attention einsums (scores and weighted values) are not saved, so the backward pass runs them again.",
    "Each einsum is two FLOPs per multiply-add over B, T queries, T keys, N and H: ⟦f = 2 * einsum⟧ with ⟦einsum = "
    "2 * B * T * T * N * H⟧ (no causal mask).",
))
def book_attention_recompute_flops(B: int = vary(8, 1, 64), T: int = vary(4096, 1024, 32768, step=1024),
                                   N: int = vary(32, 8, 128, step=8), H: int = vary(128, 64, 256, step=64)) -> float:
    """FLOPs per layer of recomputing QK^T and the weighted sum of values for B sequences of T tokens, N heads of H."""
    sizes = {"B": B, "T": T, "S": T, "N": N, "H": H}
    return einsum_flops("BTNH,BSNH->BNTS", sizes) + einsum_flops("BNTS,BSNH->BTNH", sizes)

