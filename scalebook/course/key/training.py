"""Problem set 5 — parallelizing training: the reference solutions of `solutions/05_training.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml` and `models.toml`) instead of freezing numbers. Answers are in SI
base units; counts of chips, slices or microbatches are integers and must match exactly.
"""

from __future__ import annotations

import math

from ...models import get_model
from ...training.book import expert_parallel, min_tokens_per_chip, step_time, tp_limit, x_opt
from ...training.footprint import max_params, memory
from ...training.pipeline import pipeline_bubble
from ..variants import vary
from . import problem

# The TPUs and dense presets a variant may name instead of the book's.
TPUS = ("v5p", "v5e", "v6e", "v4p", "tpu7x")
DENSE_MODELS = ("llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gemma-7b")

# LLaMA 3-405B's MLP width and a full TPU v5p pod (16 x 20 x 28 chips), shared by several problems.
F_405B = 53248
V5P_POD = 8960


@problem("05.1", title="Data parallelism on a two-axis v6e slice", unit="tokens per chip", hints=(
    "Pure DP is compute-bound when each chip's math outlasts the gradient AllReduce; reducing over several "
    "axes multiplies the bandwidth.",
    "B / chip > C / (M_X · W_ici) with M_X = {M_X} on a {chip} (W_ici bidirectional per axis).",
))
def dp_batch_v6e(chip: str = vary("v6e", choices=TPUS), M_X: int = vary(2, 1, 3)) -> float:
    """Per-chip batch above which pure DP is compute-bound on `chip`, gradients reduced over M_X axes."""
    return min_tokens_per_chip("dp", chip, M_X=M_X)


@problem("05.2", title="The largest model pure DP can train on a TPU7x", unit="parameters", hints=(
    "Pure DP keeps the whole training state on every chip: 2 bytes of weights + 8 of fp32 Adam moments per "
    "parameter.",
    "HBM of a {chip} / 10 bytes.",
))
def dp_max_params_tpu7x(chip: str = vary("tpu7x", choices=(*TPUS, "h100", "h200", "b200", "mi300x"))) -> float:
    """Parameters whose bf16 weights and fp32 Adam moments (10 bytes each) fill one `chip`'s HBM."""
    return max_params(chip)


@problem("05.3", title="ZeRO-1: sharding only the optimizer", unit="B", hints=(
    "Weights stay whole on every chip; only the optimizer's moments are split.",
    "2 bytes · params + 8 bytes · params / {chips} for {model}.",
))
def zero1_state_per_chip(
        model: str = vary("llama3-8b", choices=DENSE_MODELS), chips: int = vary(64, 8, 512, step=8)) -> float:
    """Bytes per chip of `model`'s bf16 weights (replicated) plus fp32 Adam moments sharded over `chips` chips."""
    state = memory(model, 4096, chips)
    return state.params + state.optimizer / chips


@problem("05.4", title="FSDP memory per chip with block remat", unit="B", hints=(
    "FSDP shards weights, gradients, optimizer state and activations evenly over all chips.",
    "(10 bytes · params + L · 2 bytes · {tokens} · D) / {chips} for {model}.",
))
def fsdp_memory_per_chip(
        model: str = vary("llama3-70b", choices=DENSE_MODELS), chips: int = vary(1024, 128, 8192, step=128),
                         tokens: int = vary(2**22, 2**20, 2**24, step=2**20)) -> float:
    """`model` on `chips` chips, `tokens` tokens, one saved [B, D] per layer, everything sharded evenly."""
    return memory(model, tokens, chips, saves_per_layer="block").per_chip


@problem("05.5", title="Tensor parallelism for LLaMA 3-405B over two axes", unit="chips", rtol=0.01, hints=(
    "TP moves activations every layer; it stays compute-bound while the MLP's width per chip outweighs the "
    "chip's C / W.",
    "Y < {F} · M_Y / (C / W_ici) with M_Y = {M_Y} on a {chip}.",
))
def tp_limit_405b(F: int = vary(F_405B, 8192, 65536, step=1024), chip: str = vary("v5p", choices=TPUS),
                  M_Y: int = vary(2, 1, 3)) -> float:
    """The bound on the TP degree Y for MLP width F on `chip` with activations moved over M_Y mesh axes."""
    return tp_limit(F, chip, M_Y=M_Y)


@problem("05.6", title="The FSDP degree that minimises communication", unit="chips", hints=(
    "FSDP's comms fall as X grows, TP's rise as Y = N / X grows: the sum is smallest where they balance.",
    "X_opt = sqrt(2 · {B} · {N} · M_X / (F · M_Y)) with F = 14,336, M_X = 2, M_Y = 1.",
))
def x_opt_llama3_8b(B: int = vary(2**20, 2**18, 2**23, step=2**17), N: int = vary(1024, 128, 8192, step=128)) -> float:
    """X_opt for LLaMA 3-8B (F = 14,336) on N v5p chips, B tokens, FSDP over 2 axes, TP over 1."""
    return x_opt(B, get_model("llama3-8b").F, N, M_X=2, M_Y=1)


@problem("05.7", title="The smallest batch for LLaMA 3-405B on a full pod", unit="tokens", hints=(
    "At X_opt, FSDP + TP needs fewer tokens per chip than FSDP alone: the threshold falls with F.",
    "{chips} chips × min tokens per chip of fsdp_tp on a v5p with F = {F}, M_X = 2, M_Y = 1.",
))
def fsdp_tp_min_batch_405b(
        chips: int = vary(V5P_POD, 1024, 8960, step=64), F: int = vary(F_405B, 8192, 65536, step=1024)) -> float:
    """Global batch above which FSDP + TP at X_opt is compute-bound on `chips` v5p chips (M_X = 2, M_Y = 1)."""
    return chips * min_tokens_per_chip("fsdp_tp", "v5p", F=F, M_X=2, M_Y=1)


@problem("05.8", title="Step time of LLaMA 3-8B under FSDP", unit="s", hints=(
    "Compute-bound: the step is the model's 6 · params · tokens FLOPs over the chips' achieved FLOP/s.",
    "6 · params · {tokens} / ({chips} · 4.59e14 · {mfu}) for {model} (if the FSDP comms hide under it).",
))
def fsdp_step_time(model: str = vary("llama3-8b", choices=DENSE_MODELS), chips: int = vary(2048, 256, 8192, step=256),
                   tokens: int = vary(2**22, 2**20, 2**24, step=2**20), mfu: float = vary(0.45, 0.3, 0.6)) -> float:
    """`model`, `chips` v5p chips, `tokens` tokens, FSDP over 3 axes, `mfu` MFU, attention FLOPs left out."""
    return step_time(model, "v5p", chips, tokens, "fsdp", M_X=3, mfu=mfu).time


@problem("05.9", title="How many slices over the data-centre network", unit="slices", rtol=0.0, hints=(
    "Across slices, gradients cross DCN, far slower than ICI: each slice needs a large batch of its own.",
    "floor({tokens} / (min tokens per slice for DCN data parallelism on a {chip})).",
))
def dcn_max_slices(
        tokens: float = vary(2e6, 5e5, 3e7), chip: str = vary("v5p", choices=("v5p", "v5e", "v6e", "tpu7x"))) -> int:
    """Most slices of `chip` a `tokens`-token batch can be split over (pure DP across slices) and stay compute-bound."""
    return math.floor(tokens / min_tokens_per_chip("dcn", chip))


@problem("05.10", title="Microbatches for a small bubble", unit="microbatches", rtol=0.0, hints=(
    "A 1F1B pipeline idles (P - 1) microbatch-times out of (M + P - 1).",
    "Smallest M with ({P} - 1) / (M + {P} - 1) < {bubble}.",
))
def microbatches_1f1b(P: int = vary(16, 4, 64), bubble: float = vary(0.05, 0.02, 0.2)) -> int:
    """Fewest microbatches that keep a P-stage 1F1B pipeline idle less than `bubble` of the step."""
    return next(m for m in range(1, 10_000) if pipeline_bubble(P, m, "1f1b") < bubble)


@problem("05.11", title="The same bubble with interleaved stages", unit="microbatches", rtol=0.0, hints=(
    "With v interleaved chunks per device the bubble shrinks v-fold.",
    "Smallest M with ({P} - 1) / ({v} · M + {P} - 1) < {bubble}.",
))
def microbatches_interleaved(
        P: int = vary(16, 4, 64), v: int = vary(4, 2, 8), bubble: float = vary(0.05, 0.02, 0.2)) -> int:
    """Fewest microbatches for a bubble under `bubble` with P devices, each holding v interleaved chunks of layers."""
    return next(m for m in range(1, 10_000) if pipeline_bubble(P, m, "interleaved", virtual=v) < bubble)


@problem("05.12", title="How wide can expert parallelism go?", unit="chips", rtol=0.0, hints=(
    "Each EP degree adds AllToAll traffic for the routed tokens; past some Z the dispatch outlasts the experts' "
    "math.",
    "Largest Z with the AllToAll of {tokens} tokens' routed activations shorter than the expert matmuls on a {chip}.",
))
def expert_parallel_limit(tokens: int = vary(2**20, 2**17, 2**22, step=2**16),
                          chip: str = vary("v5p", choices=("v5p", "v5e", "v6e", "v4p"))) -> int:
    """Largest expert-parallel degree Z over one `chip` axis that keeps DeepSeek-V3's MoE layers compute-bound."""
    model = get_model("deepseek-v3")
    return max(z for z in range(1, model.E + 1) if expert_parallel(model, chip, tokens, Z=z).bound == "compute")


# --- the book's own problems (How To Scale Your Model, ch. 5, Q1-Q3), graded against its published answers --------


@problem("05.13", title="The book's Q1: LLaMA 2-13B's parameters", unit="parameters", hints=(
    "Attention: four D × D projections per layer (full MHA); MLP: three D × F matrices (gated); plus two V × D.",
    "L · (4·D² + 3·D·F) + 2·V·D for {model}.",
))
def book_q1_llama2_13b_params(model: str = vary("llama2-13b", choices=DENSE_MODELS)) -> float:
    """Parameters of `model` (the book's: LLaMA 2-13B, L = 40, D = 5120, F = 13,824, 40 heads of 128, V = 32,000)."""
    return get_model(model).param_count()


@problem("05.14", title="The book's Q2: LLaMA 2-13B's checkpoints at 16M tokens", unit="B", hints=(
    "Per layer and token: one D-wide input and two F-wide MLP activations, 2 bytes each.",
    "2 bytes · L · (D + 2·F) · {B} for {model}.",
))
def book_q2_checkpoint_bytes(
        model: str = vary("llama2-13b", choices=DENSE_MODELS), B: float = vary(16e6, 1e6, 6e7)) -> float:
    """Bytes of bf16 checkpoints, per layer the input [B, D] and two [B, F] activations, for B tokens."""
    cfg = get_model(model)
    return memory(cfg, B, saves_per_layer=(cfg.D + 2 * cfg.F) / cfg.D).activations


@problem("05.15", title="The book's Q3: a FSDP + TP step of LLaMA 2-13B", unit="s", hints=(
    "Compare the math with FSDP's and TP's communication; if the math is longest, the step is the math.",
    "6 · params · {tokens} / (4096 · 4.59e14 · {mfu}) for LLaMA 2-13B, 1024-way FSDP × 4-way TP.",
))
def book_q3_step_time(tokens: float = vary(3e6, 1e6, 2e7), mfu: float = vary(0.4, 0.3, 0.6)) -> float:
    """Step time of LLaMA 2-13B on 4096 v5p chips, `tokens` tokens, 1024-way FSDP (2 axes) × 4-way TP, `mfu` MFU."""
    return step_time("llama2-13b", "v5p", 4096, tokens, "fsdp_tp", X=1024, Y=4, M_X=2, mfu=mfu).time


# --- the book's worked examples of ch. 5 (Ex1-Ex9), graded too: each has a published answer ----------------------


@problem("05.16", title="The book's Ex1: tokens per step on a v5p pod", unit="tokens", hints=(
    "Pure DP's per-chip threshold times the chips.",
    "{chips} × C / (3 · W_ici) on a v5p.",
))
def book_ex1_pod_batch(chips: int = vary(V5P_POD, 512, 8960, step=64)) -> float:
    """Smallest global batch keeping pure DP compute-bound on `chips` v5p chips, gradients over 3 axes."""
    return chips * min_tokens_per_chip("dp", "v5p", M_X=3)


@problem("05.17", title="The book's Ex2: the largest model under pure DP on a v5p", unit="parameters", hints=(
    "Every chip holds the whole state: 10 bytes per parameter.",
    "HBM of a {chip} / 10 bytes.",
))
def book_ex2_max_params(chip: str = vary("v5p", choices=(*TPUS, "a100", "h100", "h200", "b200"))) -> float:
    """Parameters whose bf16 weights and fp32 Adam moments fill one `chip`'s HBM."""
    return max_params(chip)


@problem("05.18", title="The book's Ex3: chips for DeepSeek-V2's batch", unit="chips", hints=(
    "FSDP needs the same tokens per chip as pure DP: divide the batch by that threshold.",
    "{tokens} / (C / (3 · W_ici)) on a v5p.",
))
def book_ex3_chips_40m(tokens: float = vary(40e6, 4e6, 8e7)) -> float:
    """Chips a `tokens`-token batch keeps compute-bound under FSDP over the three axes of a v5p torus."""
    return tokens / min_tokens_per_chip("fsdp", "v5p", M_X=3)


@problem("05.19", title="The book's Ex4: LLaMA 3-70B under FSDP", unit="days", hints=(
    "Use as many chips as the batch keeps compute-bound; then the time is total FLOPs over achieved FLOP/s.",
    "6 · 70e9 · {tokens} / (chips · 4.59e14 · {mfu}) / 86400, chips = {batch} / (C / (3 · W_ici)).",
))
def book_ex4_days(tokens: float = vary(15e12, 2e12, 3e13), batch: float = vary(16e6, 4e6, 4e7),
                  mfu: float = vary(0.5, 0.3, 0.6)) -> float:
    """Days to train LLaMA 3-70B on `tokens` tokens with `batch`-token batches on the v5p chips FSDP (3 axes) can
    use, at `mfu` MFU."""
    chips = round(batch / min_tokens_per_chip("fsdp", "v5p", M_X=3))
    return tokens / batch * step_time("llama3-70b", "v5p", chips, batch, "fsdp", M_X=3, mfu=mfu).time / 86400


@problem("05.20", title="The book's Ex5: LLaMA 3-70B's tensor-parallel limit", unit="chips", hints=(
    "TP stays compute-bound while F / Y exceeds the chip's C / W_ici.",
    "Y < F / (C / W_ici) for {model} on a {chip}.",
))
def book_ex5_tp_limit(
        model: str = vary("llama3-70b", choices=DENSE_MODELS), chip: str = vary("v5p", choices=TPUS)) -> float:
    """TP degree below which `model` stays compute-bound along one `chip` axis."""
    return tp_limit(get_model(model).F, chip)


@problem("05.21", title="The book's Ex6: the best FSDP degree on 64 chips", unit="chips", hints=(
    "Balance FSDP's comms (falling in X) against TP's (rising in N / X).",
    "X_opt = sqrt(2 · {B} · {N} · 2 / ({F} · 1)).",
))
def book_ex6_x_opt(N: int = vary(64, 16, 1024, step=16), B: int = vary(48_000, 8_000, 400_000, step=1000),
                   F: int = vary(32_768, 8192, 65536, step=1024)) -> float:
    """X_opt for N chips, B tokens, MLP width F, FSDP over two axes and TP over one."""
    return x_opt(B, F, N, M_X=2, M_Y=1)


@problem("05.22", title="The book's Ex7: FSDP + TP's tokens per chip", unit="tokens per chip", hints=(
    "At X_opt the threshold is about (C / W)² / (M_X · M_Y · F): it falls as F grows.",
    "2 · (C / W_ici)² / (M_X · M_Y · {F}) on a {chip}, M_X = 2, M_Y = 1.",
))
def book_ex7_mixed_threshold(
        F: int = vary(32_768, 8192, 65536, step=1024), chip: str = vary("v5p", choices=TPUS)) -> float:
    """Tokens per chip FSDP + TP needs on `chip` with MLP width F and M_X·M_Y = 2."""
    return min_tokens_per_chip("fsdp_tp", chip, F=F, M_X=2, M_Y=1)


@problem("05.23", title="The book's Ex8: the smallest batch for a 4096-chip pod", unit="tokens", hints=(
    "FSDP + TP at X_opt has the lowest threshold of all strategies; multiply it by the chips.",
    "{chips} × FSDP + TP's tokens per chip with F = {F} on a v5p.",
))
def book_ex8_min_batch(
        chips: int = vary(4096, 512, 8192, step=512), F: int = vary(32_768, 8192, 65536, step=1024)) -> float:
    """Global batch below which every strategy is communication-bound on `chips` v5p chips, MLP width F, at X_opt."""
    return chips * min_tokens_per_chip("fsdp_tp", "v5p", F=F, M_X=2, M_Y=1)


@problem("05.24", title="The book's Ex9: chips for LLaMA 3-70B's 2M batch under FSDP + TP", unit="chips", hints=(
    "Divide the batch by FSDP + TP's tokens-per-chip threshold.",
    "{tokens} / (FSDP + TP's tokens per chip with F = {F} on a v5p).",
))
def book_ex9_mixed_chips(tokens: float = vary(2e6, 5e5, 1.6e7), F: int = vary(30_000, 8000, 64000, step=1000)) -> float:
    """Chips a `tokens`-token batch keeps compute-bound under FSDP + TP with MLP width F and M_X·M_Y = 2."""
    return tokens / min_tokens_per_chip("fsdp_tp", "v5p", F=F, M_X=2, M_Y=1)
