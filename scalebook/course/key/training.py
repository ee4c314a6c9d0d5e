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
from ..inputs import vary
from . import solution

# The TPUs and dense presets a variant may name instead of the book's.
TPUS = ("v5p", "v5e", "v6e", "v4p", "tpu7x")
DENSE_MODELS = ("llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gemma-7b")

# LLaMA 3-405B's MLP width and a full TPU v5p pod (16 x 20 x 28 chips), shared by several problems.
F_405B = 53248
V5P_POD = 8960


@solution("05.1", title="Data parallelism on a two-axis v6e slice", unit="tokens per chip", hints=(
    "Pure DP is compute-bound when each chip's math outlasts the gradient AllReduce; reducing over several axes "
    "multiplies the bandwidth.",
    "Per chip, the math grows with its tokens while the AllReduce of the gradients does not; they meet at ⟦B = C / "
    "(M_X * W)⟧ tokens per chip, with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and the bidirectional link ⟦W = "
    "sb.get_chip(chip).ici_bidirectional⟧.",
))
def dp_batch_v6e(chip: str = vary("v6e", choices=TPUS), M_X: int = vary(2, 1, 3)) -> float:
    """Per-chip batch above which pure DP is compute-bound on `chip`, gradients reduced over M_X axes."""
    return min_tokens_per_chip("dp", chip, M_X=M_X)


@solution("05.2", title="The largest model pure DP can train on a TPU7x", unit="parameters", hints=(
    "Pure DP keeps the whole training state on every chip: bf16 weights plus fp32 Adam moments per parameter.",
    "Two bytes of bf16 weight and two fp32 moments of four bytes each per parameter: ⟦P = "
    "sb.get_chip(chip).hbm_bytes / (2 + 2 * 4)⟧.",
))
def dp_max_params_tpu7x(chip: str = vary("tpu7x", choices=(*TPUS, "h100", "h200", "b200", "mi300x"))) -> float:
    """Parameters whose bf16 weights and fp32 Adam moments (10 bytes each) fill one `chip`'s HBM."""
    return max_params(chip)


@solution("05.3", title="ZeRO-1: sharding only the optimizer", unit="B", hints=(
    "Weights stay whole on every chip; only the optimizer's moments are split.",
    "⟦b = 2 * P + 2 * 4 * P / chips⟧: bf16 weights whole, the two fp32 moments split, with ⟦P = "
    "sb.get_model(model).param_count()⟧.",
))
def zero1_state_per_chip(
        model: str = vary("llama3-8b", choices=DENSE_MODELS), chips: int = vary(64, 8, 512, step=8)) -> float:
    """Bytes per chip of `model`'s bf16 weights (replicated) plus fp32 Adam moments sharded over `chips` chips."""
    state = memory(model, 4096, chips)
    return state.params + state.optimizer / chips


@solution("05.4", title="FSDP memory per chip with block remat", unit="B", hints=(
    "FSDP shards weights, optimizer state and activations evenly over all chips; block remat keeps one D-wide array "
    "per token per layer.",
    "⟦b = (10 * P + tokens * m.D * m.L * 2) / chips⟧: ten bytes of state per parameter (bf16 weights, fp32 moments) "
    "and each layer's bf16 input, all split evenly, with ⟦P = m.param_count()⟧ and ⟦m = sb.get_model(model)⟧.",
))
def fsdp_memory_per_chip(
        model: str = vary("llama3-70b", choices=DENSE_MODELS), chips: int = vary(1024, 128, 8192, step=128),
                         tokens: int = vary(2**22, 2**20, 2**24, step=2**20)) -> float:
    """`model` on `chips` chips, `tokens` tokens, one saved [B, D] per layer, everything sharded evenly."""
    return memory(model, tokens, chips, saves_per_layer="block").per_chip


@solution("05.5", title="Tensor parallelism for LLaMA 3-405B over two axes", unit="chips", rtol=0.01, hints=(
    "TP moves activations every layer; it stays compute-bound while the MLP's width per chip outweighs the chip's C "
    "/ W.",
    "⟦Y = M_Y * F * W / C⟧ with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and the bidirectional link ⟦W = "
    "sb.get_chip(chip).ici_bidirectional⟧.",
))
def tp_limit_405b(F: int = vary(F_405B, 8192, 65536, step=1024), chip: str = vary("v5p", choices=TPUS),
                  M_Y: int = vary(2, 1, 3)) -> float:
    """The bound on the TP degree Y for MLP width F on `chip` with activations moved over M_Y mesh axes."""
    return tp_limit(F, chip, M_Y=M_Y)


@solution("05.6", title="The FSDP degree that minimises communication", unit="chips", hints=(
    "FSDP's comms fall as X grows, TP's rise as Y = N / X grows: the sum is smallest where they balance.",
    "⟦X = sqrt(B / F * M_X / M_Y * N)⟧ with llama3-8b's ⟦F = sb.get_model('llama3-8b').F⟧, ⟦M_X = 2⟧ and ⟦M_Y = 1⟧.",
))
def x_opt_llama3_8b(B: int = vary(2**20, 2**18, 2**23, step=2**17), N: int = vary(1024, 128, 8192, step=128)) -> float:
    """X_opt for LLaMA 3-8B (F = 14,336) on N v5p chips, B tokens, FSDP over 2 axes, TP over 1."""
    return x_opt(B, get_model("llama3-8b").F, N, M_X=2, M_Y=1)


@solution("05.7", title="The smallest batch for LLaMA 3-405B on a full pod", unit="tokens", hints=(
    "At X_opt, FSDP + TP needs fewer tokens per chip than FSDP alone: the threshold falls with F.",
    "FSDP + TP's tokens per chip at the optimal split, times the chips: ⟦B = chips * (C / W) ** 2 / (M_X * M_Y * "
    "F)⟧ with ⟦M_X = 2⟧, ⟦M_Y = 1⟧, ⟦C = sb.get_chip('v5p').peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip('v5p').ici_bidirectional⟧.",
))
def fsdp_tp_min_batch_405b(
        chips: int = vary(V5P_POD, 1024, 8960, step=64), F: int = vary(F_405B, 8192, 65536, step=1024)) -> float:
    """Global batch above which FSDP + TP at X_opt is compute-bound on `chips` v5p chips (M_X = 2, M_Y = 1)."""
    return chips * min_tokens_per_chip("fsdp_tp", "v5p", F=F, M_X=2, M_Y=1)


@solution("05.8", title="Step time of LLaMA 3-8B under FSDP", unit="s", hints=(
    "Compare the math with FSDP's communication (gather the weights twice, reduce-scatter the gradients): the "
    "longer one sets the step.",
    "⟦t = max(math, comms)⟧: six FLOPs per matmul parameter per token at the achieved rate, ⟦math = 6 * "
    "m.matmul_params() * tokens / (chips * C * mfu)⟧, against three passes over the bf16 weights on the v5p's three "
    "axes, ⟦comms = 3 * b * m.param_count() / (3 * W)⟧, with ⟦b = sb.units.dtype_bytes('bf16')⟧, ⟦C = "
    "sb.get_chip('v5p').peak_flops('bf16')⟧, ⟦W = sb.get_chip('v5p').ici_bidirectional⟧ and ⟦m = "
    "sb.get_model(model)⟧.",
))
def fsdp_step_time(model: str = vary("llama3-8b", choices=DENSE_MODELS), chips: int = vary(2048, 256, 8192, step=256),
                   tokens: int = vary(2**22, 2**20, 2**24, step=2**20), mfu: float = vary(0.45, 0.3, 0.6)) -> float:
    """`model`, `chips` v5p chips, `tokens` tokens, FSDP over 3 axes, `mfu` MFU, attention FLOPs left out."""
    return step_time(model, "v5p", chips, tokens, "fsdp", M_X=3, mfu=mfu).time


@solution("05.9", title="How many slices over the data-centre network", unit="slices", rtol=0.0, hints=(
    "Across slices, gradients cross DCN, far slower than ICI: each slice needs a large batch of its own.",
    "Each slice needs C / W_dcn tokens; count how many whole slices the batch feeds: ⟦n = floor(tokens / "
    "(sb.get_chip(chip).peak_flops('bf16') / sb.get_chip(chip).dcn_bandwidth))⟧.",
))
def dcn_max_slices(
        tokens: float = vary(2e6, 5e5, 3e7), chip: str = vary("v5p", choices=("v5p", "v5e", "v6e", "tpu7x"))) -> int:
    """Most slices of `chip` a `tokens`-token batch can be split over (pure DP across slices) and stay compute-bound."""
    return math.floor(tokens / min_tokens_per_chip("dcn", chip))


@solution("05.10", title="Microbatches for a small bubble", unit="microbatches", rtol=0.0, hints=(
    "A 1F1B pipeline sits idle while it fills and drains: P minus one microbatch-times out of M + P minus one.",
    "⟦M = next(M for M in range(1, 10 ** 4) if (P - 1) / (M + P - 1) < bubble)⟧.",
))
def microbatches_1f1b(P: int = vary(16, 4, 64), bubble: float = vary(0.05, 0.02, 0.2)) -> int:
    """Fewest microbatches that keep a P-stage 1F1B pipeline idle less than `bubble` of the step."""
    return next(m for m in range(1, 10_000) if pipeline_bubble(P, m, "1f1b") < bubble)


@solution("05.11", title="The same bubble with interleaved stages", unit="microbatches", rtol=0.0, hints=(
    "With v interleaved chunks per device the bubble shrinks v-fold.",
    "⟦M = next(M for M in range(1, 10 ** 4) if (P - 1) / (v * M + P - 1) < bubble)⟧.",
))
def microbatches_interleaved(
        P: int = vary(16, 4, 64), v: int = vary(4, 2, 8), bubble: float = vary(0.05, 0.02, 0.2)) -> int:
    """Fewest microbatches for a bubble under `bubble` with P devices, each holding v interleaved chunks of layers."""
    return next(m for m in range(1, 10_000) if pipeline_bubble(P, m, "interleaved", virtual=v) < bubble)


@solution("05.12", title="How wide can expert parallelism go?", unit="chips", rtol=0.0, hints=(
    "Each EP degree splits the experts' math further, while the AllToAlls carry the same routed activations: past "
    "some Z the dispatch outlasts the math.",
    "Per token and MoE layer the math is six FLOPs (forward and backward) per active expert weight, ⟦flops = 6 * "
    "active⟧ with ⟦active = (r[1] + s[1]) / m.moe_layers⟧, ⟦r = m.components()['MoE routed experts']⟧ and ⟦s = "
    "m.components()['MoE shared experts']⟧, split Z ways; the four AllToAlls (dispatch and combine, forward and "
    "backward) each get a quarter of their k bf16 D-vectors across the ring's middle both ways, ⟦comms = m.k * b * "
    "m.D / W⟧ with ⟦b = sb.units.dtype_bytes('bf16')⟧ (tokens cancel). Take the widest Z whose math still covers "
    "them: ⟦Z = max(z for z in range(1, m.E + 1) if z == 1 or flops / (z * C) >= comms)⟧ with ⟦m = "
    "sb.get_model('deepseek-v3')⟧, ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip(chip).ici_bidirectional⟧.",
))
def expert_parallel_limit(tokens: int = vary(2**20, 2**17, 2**22, step=2**16),
                          chip: str = vary("v5p", choices=("v5p", "v5e", "v6e", "v4p"))) -> int:
    """Largest expert-parallel degree Z over one `chip` axis that keeps DeepSeek-V3's MoE layers compute-bound."""
    model = get_model("deepseek-v3")
    return max(z for z in range(1, model.E + 1) if expert_parallel(model, chip, tokens, Z=z).bound == "compute")


# --- the book's own problems (How To Scale Your Model, ch. 5, Q1-Q3), graded against its published answers --------


@solution("05.13", title="The book's Q1: LLaMA 2-13B's parameters", unit="parameters", hints=(
    "Attention: Q, K, V and O projections per layer; MLP: three D × F matrices (gated); plus the embedding and the "
    "output matrix.",
    "⟦P = m.L * (2 * m.D * m.N * m.H + 2 * m.D * m.K * m.H + 3 * m.D * m.F) + e * m.V * m.D⟧ with ⟦e = 1 if m.tied "
    "else 2⟧ and ⟦m = sb.get_model(model)⟧.",
))
def book_q1_llama2_13b_params(model: str = vary("llama2-13b", choices=DENSE_MODELS)) -> float:
    """Parameters of `model` (the book's: LLaMA 2-13B, L = 40, D = 5120, F = 13,824, 40 heads of 128, V = 32,000)."""
    return get_model(model).param_count()


@solution("05.14", title="The book's Q2: LLaMA 2-13B's checkpoints at 16M tokens", unit="B", hints=(
    "Per layer and token: one D-wide input and two F-wide MLP activations, in bf16.",
    "⟦b = 2 * m.L * (m.D + 2 * m.F) * B⟧ with ⟦m = sb.get_model(model)⟧.",
))
def book_q2_checkpoint_bytes(
        model: str = vary("llama2-13b", choices=DENSE_MODELS), B: float = vary(16e6, 1e6, 6e7)) -> float:
    """Bytes of bf16 checkpoints, per layer the input [B, D] and two [B, F] activations, for B tokens."""
    cfg = get_model(model)
    return memory(cfg, B, saves_per_layer=(cfg.D + 2 * cfg.F) / cfg.D).activations


@solution("05.15", title="The book's Q3: a FSDP + TP step of LLaMA 2-13B", unit="s", hints=(
    "Compare the math with FSDP's communication (over X) and TP's (over Y): they use different axes, so the longer "
    "of the two counts; the step is the longer of that and the math.",
    "⟦t = max(math, fsdp, tp)⟧: six FLOPs per matmul parameter per token over all ⟦n = X * Y⟧ chips, ⟦math = 6 * "
    "m.matmul_params() * tokens / (n * C * mfu)⟧; FSDP's three passes over the bf16 weights on X's two mesh axes, "
    "each chip's share split Y ways by TP, ⟦fsdp = 3 * 2 * m.param_count() / (Y * W * 2)⟧; TP's gathers and "
    "reduce-scatters of the bf16 activations, forward and backward, split X ways by FSDP, ⟦tp = 2 * 6 * tokens * "
    "m.D * 2 * m.L / (X * W)⟧; with ⟦X = 1024⟧, ⟦Y = 4⟧, ⟦m = sb.get_model('llama2-13b')⟧, ⟦C = "
    "sb.get_chip('v5p').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('v5p').ici_bidirectional⟧.",
))
def book_q3_step_time(tokens: float = vary(3e6, 1e6, 2e7), mfu: float = vary(0.4, 0.3, 0.6)) -> float:
    """Step time of LLaMA 2-13B on 4096 v5p chips, `tokens` tokens, 1024-way FSDP (2 axes) × 4-way TP, `mfu` MFU."""
    return step_time("llama2-13b", "v5p", 4096, tokens, "fsdp_tp", X=1024, Y=4, M_X=2, mfu=mfu).time


# --- the book's worked examples of ch. 5 (Ex1-Ex9), graded too: each has a published answer ----------------------


@solution("05.16", title="The book's Ex1: tokens per step on a v5p pod", unit="tokens", hints=(
    "Pure DP's per-chip threshold times the chips.",
    "⟦B = chips * C / (3 * W)⟧: the gradients reduce over all three axes of the pod, with ⟦C = "
    "sb.get_chip('v5p').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('v5p').ici_bidirectional⟧.",
))
def book_ex1_pod_batch(chips: int = vary(V5P_POD, 512, 8960, step=64)) -> float:
    """Smallest global batch keeping pure DP compute-bound on `chips` v5p chips, gradients over 3 axes."""
    return chips * min_tokens_per_chip("dp", "v5p", M_X=3)


@solution("05.17", title="The book's Ex2: the largest model under pure DP on a v5p", unit="parameters", hints=(
    "Every chip holds the whole state: bf16 weights and fp32 Adam moments per parameter.",
    "⟦P = sb.get_chip(chip).hbm_bytes / (2 + 2 * 4)⟧.",
))
def book_ex2_max_params(chip: str = vary("v5p", choices=(*TPUS, "a100", "h100", "h200", "b200"))) -> float:
    """Parameters whose bf16 weights and fp32 Adam moments fill one `chip`'s HBM."""
    return max_params(chip)


@solution("05.18", title="The book's Ex3: chips for DeepSeek-V2's batch", unit="chips", hints=(
    "FSDP needs the same tokens per chip as pure DP: divide the batch by that threshold.",
    "⟦n = tokens / (C / (3 * W))⟧ with ⟦C = sb.get_chip('v5p').peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip('v5p').ici_bidirectional⟧.",
))
def book_ex3_chips_40m(tokens: float = vary(40e6, 4e6, 8e7)) -> float:
    """Chips a `tokens`-token batch keeps compute-bound under FSDP over the three axes of a v5p torus."""
    return tokens / min_tokens_per_chip("fsdp", "v5p", M_X=3)


@solution("05.19", title="The book's Ex4: LLaMA 3-70B under FSDP", unit="days", hints=(
    "Use as many chips as the batch keeps compute-bound; then the time is the steps times the longer of the math "
    "and FSDP's communication.",
    "⟦d = tokens / batch * max(math, comms) / 86400⟧ with the chips the batch keeps busy, ⟦n = round(batch / (C / "
    "(3 * W)))⟧, the step's math ⟦math = 6 * m.matmul_params() * batch / (n * C * mfu)⟧ and FSDP's three passes "
    "over the bf16 weights, ⟦comms = 3 * 2 * m.param_count() / (3 * W)⟧; ⟦m = sb.get_model('llama3-70b')⟧, ⟦C = "
    "sb.get_chip('v5p').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('v5p').ici_bidirectional⟧.",
))
def book_ex4_days(tokens: float = vary(15e12, 2e12, 3e13), batch: float = vary(16e6, 4e6, 4e7),
                  mfu: float = vary(0.5, 0.3, 0.6)) -> float:
    """Days to train LLaMA 3-70B on `tokens` tokens with `batch`-token batches on the v5p chips FSDP (3 axes) can
    use, at `mfu` MFU."""
    chips = round(batch / min_tokens_per_chip("fsdp", "v5p", M_X=3))
    return tokens / batch * step_time("llama3-70b", "v5p", chips, batch, "fsdp", M_X=3, mfu=mfu).time / 86400


@solution("05.20", title="The book's Ex5: LLaMA 3-70B's tensor-parallel limit", unit="chips", hints=(
    "TP stays compute-bound while F / Y exceeds the chip's C / W_ici.",
    "⟦Y = sb.get_model(model).F * W / C⟧ with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = "
    "sb.get_chip(chip).ici_bidirectional⟧.",
))
def book_ex5_tp_limit(
        model: str = vary("llama3-70b", choices=DENSE_MODELS), chip: str = vary("v5p", choices=TPUS)) -> float:
    """TP degree below which `model` stays compute-bound along one `chip` axis."""
    return tp_limit(get_model(model).F, chip)


@solution("05.21", title="The book's Ex6: the best FSDP degree on 64 chips", unit="chips", hints=(
    "Balance FSDP's comms (falling in X) against TP's (rising in N / X).",
    "⟦X = sqrt(B / F * M_X / M_Y * N)⟧ with ⟦M_X = 2⟧ and ⟦M_Y = 1⟧.",
))
def book_ex6_x_opt(N: int = vary(64, 16, 1024, step=16), B: int = vary(48_000, 8_000, 400_000, step=1000),
                   F: int = vary(32_768, 8192, 65536, step=1024)) -> float:
    """X_opt for N chips, B tokens, MLP width F, FSDP over two axes and TP over one."""
    return x_opt(B, F, N, M_X=2, M_Y=1)


@solution("05.22", title="The book's Ex7: FSDP + TP's tokens per chip", unit="tokens per chip", hints=(
    "At X_opt the threshold is about (C / W) squared over M_X · M_Y · F: it falls as F grows.",
    "⟦B = (C / W) ** 2 / (M_X * M_Y * F)⟧ with ⟦M_X = 2⟧, ⟦M_Y = 1⟧, ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and "
    "⟦W = sb.get_chip(chip).ici_bidirectional⟧.",
))
def book_ex7_mixed_threshold(
        F: int = vary(32_768, 8192, 65536, step=1024), chip: str = vary("v5p", choices=TPUS)) -> float:
    """Tokens per chip FSDP + TP needs on `chip` with MLP width F and M_X·M_Y = 2."""
    return min_tokens_per_chip("fsdp_tp", chip, F=F, M_X=2, M_Y=1)


@solution("05.23", title="The book's Ex8: the smallest batch for a 4096-chip pod", unit="tokens", hints=(
    "FSDP + TP at X_opt has the lowest threshold of all strategies; multiply it by the chips.",
    "⟦B = chips * (C / W) ** 2 / (M_X * M_Y * F)⟧ with ⟦M_X = 2⟧, ⟦M_Y = 1⟧, ⟦C = "
    "sb.get_chip('v5p').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('v5p').ici_bidirectional⟧.",
))
def book_ex8_min_batch(
        chips: int = vary(4096, 512, 8192, step=512), F: int = vary(32_768, 8192, 65536, step=1024)) -> float:
    """Global batch below which every strategy is communication-bound on `chips` v5p chips, MLP width F, at X_opt."""
    return chips * min_tokens_per_chip("fsdp_tp", "v5p", F=F, M_X=2, M_Y=1)


@solution("05.24", title="The book's Ex9: chips for LLaMA 3-70B's 2M batch under FSDP + TP", unit="chips", hints=(
    "Divide the batch by FSDP + TP's tokens-per-chip threshold.",
    "⟦n = tokens / ((C / W) ** 2 / (M_X * M_Y * F))⟧ with ⟦M_X = 2⟧, ⟦M_Y = 1⟧, ⟦C = "
    "sb.get_chip('v5p').peak_flops('bf16')⟧ and ⟦W = sb.get_chip('v5p').ici_bidirectional⟧.",
))
def book_ex9_mixed_chips(tokens: float = vary(2e6, 5e5, 1.6e7), F: int = vary(30_000, 8000, 64000, step=1000)) -> float:
    """Chips a `tokens`-token batch keeps compute-bound under FSDP + TP with MLP width F and M_X·M_Y = 2."""
    return tokens / min_tokens_per_chip("fsdp_tp", "v5p", F=F, M_X=2, M_Y=1)
