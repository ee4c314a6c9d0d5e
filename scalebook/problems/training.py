"""Problem set 5 — parallelizing training: the reference solutions of `solutions/05_training.md`.

Each function computes its answer with scalebook from the inputs the problem states, so the key moves
with the package (and with `chips.toml` and `models.toml`) instead of freezing numbers. Answers are in SI
base units; counts of chips, slices or microbatches are integers and must match exactly.
"""

from __future__ import annotations

import math

from ..models import get_model
from ..training.book import expert_parallel, min_tokens_per_chip, step_time, tp_limit, x_opt
from ..training.footprint import max_params, memory
from ..training.pipeline import pipeline_bubble
from . import problem

# LLaMA 3-405B's MLP width and a full TPU v5p pod (16 x 20 x 28 chips), shared by several problems.
F_405B = 53248
V5P_POD = 8960


@problem("05.1", title="Data parallelism on a two-axis v6e slice", unit="tokens per chip")
def dp_batch_v6e() -> float:
    """Per-chip batch above which pure DP is compute-bound on a TPU v6e slice, gradients reduced over both axes."""
    return min_tokens_per_chip("dp", "v6e", M_X=2)


@problem("05.2", title="The largest model pure DP can train on a TPU7x", unit="parameters")
def dp_max_params_tpu7x() -> float:
    """Parameters whose bf16 weights and fp32 Adam moments (10 bytes each) fill one TPU7x's 192 GB."""
    return max_params("tpu7x")


@problem("05.3", title="ZeRO-1: sharding only the optimizer", unit="B")
def zero1_state_per_chip() -> float:
    """Bytes per chip of LLaMA 3-8B's bf16 weights (replicated) plus fp32 Adam moments sharded over 64 chips."""
    state = memory("llama3-8b", 4096, 64)
    return state.params + state.optimizer / 64


@problem("05.4", title="FSDP memory per chip with block remat", unit="B")
def fsdp_memory_per_chip() -> float:
    """LLaMA 3-70B on 1024 chips, 4,194,304 tokens, one saved [B, D] per layer, everything sharded evenly."""
    return memory("llama3-70b", 2**22, 1024, saves_per_layer="block").per_chip


@problem("05.5", title="Tensor parallelism for LLaMA 3-405B over two axes", unit="chips", rtol=0.01)
def tp_limit_405b() -> float:
    """The bound on the TP degree Y for F = 53,248 on v5p with activations moved over two mesh axes."""
    return tp_limit(F_405B, "v5p", M_Y=2)


@problem("05.6", title="The FSDP degree that minimises communication", unit="chips")
def x_opt_llama3_8b() -> float:
    """X_opt for LLaMA 3-8B (F = 14,336) on 1024 v5p chips, B = 2^20 tokens, FSDP over 2 axes, TP over 1."""
    return x_opt(2**20, get_model("llama3-8b").F, 1024, M_X=2, M_Y=1)


@problem("05.7", title="The smallest batch for LLaMA 3-405B on a full pod", unit="tokens")
def fsdp_tp_min_batch_405b() -> float:
    """Global batch above which FSDP + TP at X_opt is compute-bound on 8960 v5p chips (M_X = 2, M_Y = 1)."""
    return V5P_POD * min_tokens_per_chip("fsdp_tp", "v5p", F=F_405B, M_X=2, M_Y=1)


@problem("05.8", title="Step time of LLaMA 3-8B under FSDP", unit="s")
def fsdp_step_time() -> float:
    """LLaMA 3-8B, 2048 v5p chips, 2^22 tokens, FSDP over 3 axes, 45% MFU, attention FLOPs left out."""
    return step_time("llama3-8b", "v5p", 2048, 2**22, "fsdp", M_X=3, mfu=0.45).time


@problem("05.9", title="How many slices over the data-centre network", unit="slices", rtol=0.0)
def dcn_max_slices() -> int:
    """Most v5p slices a 2,000,000-token batch can be split over (pure DP across slices) and stay compute-bound."""
    return math.floor(2e6 / min_tokens_per_chip("dcn", "v5p"))


@problem("05.10", title="Microbatches for a small bubble", unit="microbatches", rtol=0.0)
def microbatches_1f1b() -> int:
    """Fewest microbatches that keep a 16-stage 1F1B pipeline idle less than 5% of the step."""
    return next(m for m in range(1, 10_000) if pipeline_bubble(16, m, "1f1b") < 0.05)


@problem("05.11", title="The same bubble with interleaved stages", unit="microbatches", rtol=0.0)
def microbatches_interleaved() -> int:
    """Fewest microbatches for a bubble under 5% with 16 devices, each holding 4 interleaved chunks of layers."""
    return next(m for m in range(1, 10_000) if pipeline_bubble(16, m, "interleaved", virtual=4) < 0.05)


@problem("05.12", title="How wide can expert parallelism go?", unit="chips", rtol=0.0)
def expert_parallel_limit() -> int:
    """Largest expert-parallel degree Z over one v5p axis that keeps DeepSeek-V3's MoE layers compute-bound."""
    model = get_model("deepseek-v3")
    return max(z for z in range(1, model.E + 1) if expert_parallel(model, "v5p", 2**20, Z=z).bound == "compute")


# --- the book's own problems (How To Scale Your Model, ch. 5, Q1-Q3), graded against its published answers --------


@problem("05.13", title="The book's Q1: LLaMA 2-13B's parameters", unit="parameters")
def book_q1_llama2_13b_params() -> float:
    """Parameters of LLaMA 2-13B (L = 40, D = 5120, F = 13,824, 40 heads of 128, V = 32,000, untied)."""
    return get_model("llama2-13b").param_count()


@problem("05.14", title="The book's Q2: LLaMA 2-13B's checkpoints at 16M tokens", unit="B")
def book_q2_checkpoint_bytes() -> float:
    """Bytes of bf16 checkpoints, per layer the input [B, D] and two [B, F] activations, for B = 16e6 tokens."""
    model = get_model("llama2-13b")
    return memory(model, 16e6, saves_per_layer=(model.D + 2 * model.F) / model.D).activations


@problem("05.15", title="The book's Q3: a FSDP + TP step of LLaMA 2-13B", unit="s")
def book_q3_step_time() -> float:
    """Step time of LLaMA 2-13B on 4096 v5p chips, 3e6 tokens, 1024-way FSDP (2 axes) × 4-way TP, 40% MFU."""
    return step_time("llama2-13b", "v5p", 4096, 3e6, "fsdp_tp", X=1024, Y=4, M_X=2, mfu=0.4).time


# --- the book's worked examples of ch. 5 (Ex1-Ex9), graded too: each has a published answer ----------------------


@problem("05.16", title="The book's Ex1: tokens per step on a v5p pod", unit="tokens")
def book_ex1_pod_batch() -> float:
    """Smallest global batch keeping pure DP compute-bound on a full 8960-chip v5p pod, gradients over 3 axes."""
    return V5P_POD * min_tokens_per_chip("dp", "v5p", M_X=3)


@problem("05.17", title="The book's Ex2: the largest model under pure DP on a v5p", unit="parameters")
def book_ex2_max_params() -> float:
    """Parameters whose bf16 weights and fp32 Adam moments fill one v5p's 96 GB."""
    return max_params("v5p")


@problem("05.18", title="The book's Ex3: chips for DeepSeek-V2's batch", unit="chips")
def book_ex3_chips_40m() -> float:
    """Chips a 40e6-token batch keeps compute-bound under FSDP over the three axes of a v5p torus."""
    return 40e6 / min_tokens_per_chip("fsdp", "v5p", M_X=3)


@problem("05.19", title="The book's Ex4: LLaMA 3-70B under FSDP", unit="days")
def book_ex4_days() -> float:
    """Days to train LLaMA 3-70B on 15e12 tokens with 16e6-token batches on the 18,823 v5p chips FSDP (3 axes) can
    use, at 50% MFU."""
    chips = round(16e6 / min_tokens_per_chip("fsdp", "v5p", M_X=3))
    return 15e12 / 16e6 * step_time("llama3-70b", "v5p", chips, 16e6, "fsdp", M_X=3, mfu=0.5).time / 86400


@problem("05.20", title="The book's Ex5: LLaMA 3-70B's tensor-parallel limit", unit="chips")
def book_ex5_tp_limit() -> float:
    """TP degree below which LLaMA 3-70B (F = 28,672) stays compute-bound along one v5p axis."""
    return tp_limit(get_model("llama3-70b").F, "v5p")


@problem("05.21", title="The book's Ex6: the best FSDP degree on 64 chips", unit="chips")
def book_ex6_x_opt() -> float:
    """X_opt for N = 64, B = 48,000, F = 32,768, FSDP over two axes and TP over one."""
    return x_opt(48_000, 32_768, 64, M_X=2, M_Y=1)


@problem("05.22", title="The book's Ex7: FSDP + TP's tokens per chip", unit="tokens per chip")
def book_ex7_mixed_threshold() -> float:
    """Tokens per chip FSDP + TP needs on v5p with F = 32,768 and M_X·M_Y = 2."""
    return min_tokens_per_chip("fsdp_tp", "v5p", F=32_768, M_X=2, M_Y=1)


@problem("05.23", title="The book's Ex8: the smallest batch for a 4096-chip pod", unit="tokens")
def book_ex8_min_batch() -> float:
    """Global batch below which every strategy is communication-bound on a v5p 16x16x16, F = 32,768, at X_opt."""
    return 4096 * min_tokens_per_chip("fsdp_tp", "v5p", F=32_768, M_X=2, M_Y=1)


@problem("05.24", title="The book's Ex9: chips for LLaMA 3-70B's 2M batch under FSDP + TP", unit="chips")
def book_ex9_mixed_chips() -> float:
    """Chips a 2e6-token batch keeps compute-bound under FSDP + TP with the book's F ≈ 30,000 and M_X·M_Y = 2."""
    return 2e6 / min_tokens_per_chip("fsdp_tp", "v5p", F=30_000, M_X=2, M_Y=1)
