"""Problem set 6 — Training LLaMA 3 on TPUs: the reference solutions of `solutions/06_training_llama.md`.

Each function computes its answer with scalebook from the inputs the problem states (model presets from
`models.toml`, chips from `chips.toml`), so the key moves with the package. Answers are in SI base units.
"""

from __future__ import annotations

import math

from ..hardware.chips import get_chip
from ..models import from_hf_config, get_model, hf_config
from ..training.book import min_tokens_per_chip
from ..training.footprint import memory
from ..training.planner import plan
from . import problem

V5P_POD = 8960  # chips in a full TPU v5p pod, 16 x 20 x 28
MFU_V5P, MFU_SMALL = 0.4, 0.45  # the MFU the problems assume: the book's 40% for big runs, 45% for LLaMA 3-8B


@problem("06.1", title="Parameters of Mistral 7B from its config", unit="parameters")
def mistral_params() -> float:
    """All parameters of the model described by `models.hf_config("mistral-7b")` (gated MLP, GQA, untied embeddings)."""
    return from_hf_config(hf_config("mistral-7b")).param_count()


@problem("06.2", title="Attention's share of LLaMA 3.1-405B", unit="fraction")
def attention_share_405b() -> float:
    """Fraction of LLaMA 3.1-405B's parameters in the attention projections (W_Q, W_K, W_V, W_O)."""
    model = get_model("llama3-405b")
    return model.components()["attention"][0] / model.param_count()


@problem("06.3", title="How far 6 × parameters overshoots for a small model", unit="ratio")
def six_p_overshoot_8b() -> float:
    """6 x all of LLaMA 3-8B's parameters over its matmul training FLOPs per token (attention scores left out)."""
    model = get_model("llama3-8b")
    return 6 * model.param_count() / model.flops_per_token()


@problem("06.4", title="Chip-hours of the LLaMA 3.1-405B run", unit="chip-hours")
def chip_hours_405b() -> float:
    """v5p chip-hours to train LLaMA 3.1-405B on 15e12 tokens at 40% MFU (matmul FLOPs only), on any number of chips."""
    flops = get_model("llama3-405b").flops_per_token() * 15e12
    return flops / (get_chip("v5p").peak_flops() * MFU_V5P) / 3600


@problem("06.5", title="LLaMA 3-8B on a v6e pod", unit="s")
def llama3_8b_on_v6e_pod() -> float:
    """Seconds to train LLaMA 3-8B on 15e12 tokens on a 256-chip v6e pod at 45% MFU (matmul FLOPs only)."""
    flops = get_model("llama3-8b").flops_per_token() * 15e12
    return flops / (256 * get_chip("v6e").peak_flops() * MFU_SMALL)


@problem("06.6", title="The fewest v5e chips for LLaMA 3-8B", unit="chips", rtol=0.0)
def fewest_v5e_chips() -> int:
    """Whole v5e chips (16 GB) whose HBM holds LLaMA 3-8B's bf16 weights, fp32 Adam, 4 saves/layer at 2**20 tokens."""
    state = memory("llama3-8b", 2**20, saves_per_layer=4)
    return math.ceil(state.total / get_chip("v5e").hbm_bytes)


@problem("06.7", title="How long the fewest chips would take", unit="s")
def fewest_v5e_chips_time() -> float:
    """Seconds for problem 6's v5e chips to train LLaMA 3-8B on 15e12 tokens at 45% MFU (matmul FLOPs only)."""
    flops = get_model("llama3-8b").flops_per_token() * 15e12
    return flops / (fewest_v5e_chips() * get_chip("v5e").peak_flops() * MFU_SMALL)


@problem("06.8", title="Memory per chip for LLaMA 3.1-405B on eight pods", unit="B")
def memory_per_chip_405b() -> float:
    """Bytes per chip for LLaMA 3.1-405B on 8 v5p pods: bf16 weights, fp32 Adam, 12 saves/layer at 16 * 2**20
    tokens, everything sharded evenly over all the chips."""
    return memory("llama3-405b", 16 * 2**20, n_chips=8 * V5P_POD, saves_per_layer=12).per_chip


@problem("06.9", title="Where FSDP alone stops keeping up", unit="chips")
def fsdp_chip_limit_70b() -> float:
    """Chip count above which pure FSDP over 3 v5p axes (sequences sharded too) of a 4 * 2**20-token batch turns
    communication-bound."""
    return 4 * 2**20 / min_tokens_per_chip("fsdp", "v5p", M_X=3)


@problem("06.10", title="How many pods a 16M batch can feed", unit="pods", rtol=0.0)
def most_pods_405b() -> int:
    """Most whole v5p pods on which LLaMA 3.1-405B with a 16 * 2**20-token batch meets the FSDP x TP bound."""
    per_chip = min_tokens_per_chip("fsdp_tp", "v5p", F=get_model("llama3-405b").F, M_X=2, M_Y=1)
    return math.floor(16 * 2**20 / per_chip / V5P_POD)


@problem("06.11", title="What refusing sequence sharding costs LLaMA 3.1-405B", unit="ratio")
def no_sequence_sharding_slowdown_405b() -> float:
    """Planner step time without over with sequence sharding: LLaMA 3.1-405B, 8 v5p pods, 16 * 2**20 tokens of
    8192-token sequences."""
    args = ("llama3-405b", "v5p", 8 * V5P_POD, 16 * 2**20)
    without = plan(*args, seq_len=8192, sequence_sharding=False).estimate.time
    return without / plan(*args, seq_len=8192).estimate.time


@problem("06.12", title="The planner without sequence sharding", unit="fraction")
def planner_mfu_no_sequence_sharding() -> float:
    """Best MFU the planner finds for LLaMA 3-8B, 2**20 tokens of 8192-token sequences, 1024 v5p chips, no
    sequence sharding (compute time over step time at peak FLOP/s)."""
    return plan("llama3-8b", "v5p", 1024, 2**20, seq_len=8192, sequence_sharding=False).mfu


# --- the book's own questions (How To Scale Your Model, ch. 6), graded against its published answers --------------

_BOOK_BATCH = 4 * 2**20  # LLaMA 3-70B's batch: 1024 sequences of 4096 tokens


@problem("06.13", title="The book's question: LLaMA 3-70B's parameters", unit="parameters")
def book_llama3_70b_params() -> float:
    """Parameters of LLaMA 3-70B from its config (L = 80, D = 8192, F = 28,672, N = 64, K = 8, H = 128, V = 128,256)."""
    return get_model("llama3-70b").param_count()


@problem("06.14", title="The book's question: training FLOPs per token", unit="FLOPs")
def book_flops_per_token() -> float:
    """Training FLOPs per token of LLaMA 3-70B, 6 per matmul parameter (attention scores left out)."""
    return get_model("llama3-70b").flops_per_token()


@problem("06.15", title="The book's question: the run on one v5p", unit="years")
def book_years_one_chip() -> float:
    """Years one v5p at peak bf16 FLOP/s needs for 15e12 tokens of LLaMA 3-70B."""
    return get_model("llama3-70b").flops_per_token() * 15e12 / get_chip("v5p").bf16_flops / (365.25 * 86400)


@problem("06.16", title="The book's question: the run on a v5p pod", unit="days")
def book_days_on_pod() -> float:
    """Days for 15e12 tokens of LLaMA 3-70B on 8960 v5p chips at 40% MFU."""
    flops = get_model("llama3-70b").flops_per_token() * 15e12
    return flops / (V5P_POD * get_chip("v5p").bf16_flops * 0.4) / 86400


@problem("06.17", title="The book's question: the fewest chips", unit="chips", rtol=0.0)
def book_fewest_chips() -> int:
    """Fewest 96 GB v5p chips that hold LLaMA 3-70B's bf16 weights, fp32 Adam and 4 checkpoints per layer at 4M."""
    return math.ceil(memory("llama3-70b", 4e6, saves_per_layer=4).total / get_chip("v5p").hbm_bytes)


@problem("06.18", title="The book's question: memory per chip on a pod", unit="B")
def book_memory_per_chip() -> float:
    """That state spread evenly over 8960 chips, bytes per chip."""
    return memory("llama3-70b", 4e6, V5P_POD, saves_per_layer=4).per_chip


@problem("06.19", title="The book's question: data parallelism over sequences only", unit="chips", rtol=0.0)
def book_sequences_per_batch() -> int:
    """Most data-parallel shards a batch of 4 × 2**20 tokens in 4096-token sequences allows without sequence
    sharding (one sequence per shard)."""
    return _BOOK_BATCH // 4096


@problem("06.20", title="The book's question: tokens per chip on a full pod", unit="tokens")
def book_tokens_per_chip() -> float:
    """Tokens per chip of a 4 × 2**20-token batch over 8960 chips."""
    return _BOOK_BATCH / V5P_POD


@problem("06.21", title="The book's question: the FSDP degree for FSDP + TP", unit="chips")
def book_x_opt() -> float:
    """X_opt = sqrt(2BN/F) for LLaMA 3-70B, B = 4 × 2**20, N = 8960 (FSDP over two axes, TP over one)."""
    return math.sqrt(2 * _BOOK_BATCH * V5P_POD / get_model("llama3-70b").F)
