"""Problem set 6 — Training LLaMA 3 on TPUs: the reference solutions of `solutions/06_training_llama.md`.

Each function computes its answer with scalebook from the inputs the problem states (model presets from
`models.toml`, chips from `chips.toml`), so the key moves with the package. Answers are in SI base units.
"""

from __future__ import annotations

import math

from ...hardware.chips import get_chip
from ...models import from_hf_config, get_model, hf_config
from ...training.book import min_tokens_per_chip
from ...training.footprint import memory
from ...training.planner import plan
from ..inputs import vary
from . import solution

V5P_POD = 8960  # chips in a full TPU v5p pod, 16 x 20 x 28
MFU_V5P, MFU_SMALL = 0.4, 0.45  # the MFU the problems assume: the book's 40% for big runs, 45% for LLaMA 3-8B
# The dense presets a variant may name instead of the book's.
DENSE_MODELS = ("llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gemma-7b")


@solution("06.1", title="Parameters of Mistral 7B from its config", unit="parameters", hints=(
    "Read L, D, F, N, K, H and V off the config; count Q, K, V, O, the gated MLP and the embeddings.",
    "⟦P = m.L * (2 * m.D * m.N * m.H + 2 * m.D * m.K * m.H + 3 * m.D * m.F) + e * m.V * m.D⟧ with ⟦e = 1 if m.tied "
    "else 2⟧ and ⟦m = sb.models.from_hf_config(sb.models.hf_config('mistral-7b'))⟧.",
))
def mistral_params() -> float:
    """All parameters of the model described by `models.hf_config("mistral-7b")` (gated MLP, GQA, untied embeddings)."""
    return from_hf_config(hf_config("mistral-7b")).param_count()


@solution("06.2", title="Attention's share of LLaMA 3.1-405B", unit="fraction", hints=(
    "Count W_Q and W_O (D × N·H) and W_K and W_V (D × K·H) per layer; grouped KV heads make K and V small.",
    "⟦r = m.L * (2 * m.D * m.N * m.H + 2 * m.D * m.K * m.H) / m.param_count()⟧ with ⟦m = sb.get_model(model)⟧.",
))
def attention_share_405b(model: str = vary("llama3-405b", choices=DENSE_MODELS)) -> float:
    """Fraction of `model`'s parameters in the attention projections (W_Q, W_K, W_V, W_O)."""
    cfg = get_model(model)
    return cfg.components()["attention"][0] / cfg.param_count()


@solution("06.3", title="How far 6 × parameters overshoots for a small model", unit="ratio", hints=(
    "The input embedding is a look-up, not a matmul: its parameters cost no FLOPs (unless it is tied to the output "
    "matrix).",
    "⟦r = 6 * m.param_count() / (6 * m.matmul_params())⟧ with ⟦m = sb.get_model(model)⟧: `matmul_params` leaves out "
    "the lookup and the norms.",
))
def six_p_overshoot_8b(model: str = vary("llama3-8b", choices=DENSE_MODELS)) -> float:
    """6 x all of `model`'s parameters over its matmul training FLOPs per token (attention scores left out)."""
    cfg = get_model(model)
    return 6 * cfg.param_count() / cfg.flops_per_token()


@solution("06.4", title="Chip-hours of the LLaMA 3.1-405B run", unit="chip-hours", hints=(
    "Chip-hours do not depend on the number of chips: total FLOPs over one chip's achieved FLOP/s.",
    "At six FLOPs per matmul parameter per token (the input embedding is a lookup, not a matmul): ⟦h = 6 * "
    "m.matmul_params() * tokens / (C * mfu) / 3600⟧ with ⟦m = sb.get_model(model)⟧ and ⟦C = "
    "sb.get_chip('v5p').peak_flops('bf16')⟧.",
))
def chip_hours_405b(model: str = vary("llama3-405b", choices=DENSE_MODELS), tokens: float = vary(15e12, 1e12, 3e13),
                    mfu: float = vary(MFU_V5P, 0.3, 0.6)) -> float:
    """v5p chip-hours to train `model` on `tokens` tokens at `mfu` MFU (matmul FLOPs only), on any number of chips."""
    flops = get_model(model).flops_per_token() * tokens
    return flops / (get_chip("v5p").peak_flops() * mfu) / 3600


@solution("06.5", title="LLaMA 3-8B on a v6e pod", unit="s", hints=(
    "Total training FLOPs over the pod's achieved FLOP/s.",
    "At six FLOPs per matmul parameter per token (the input embedding is a lookup, not a matmul) and the problem's "
    "MFU: ⟦t = 6 * m.matmul_params() * tokens / (chips * C * 0.45)⟧ with ⟦m = sb.get_model('llama3-8b')⟧ and ⟦C = "
    "sb.get_chip('v6e').peak_flops('bf16')⟧.",
))
def llama3_8b_on_v6e_pod(tokens: float = vary(15e12, 1e12, 3e13), chips: int = vary(256, 32, 256, step=32)) -> float:
    """Seconds to train LLaMA 3-8B on `tokens` tokens on `chips` v6e chips at 45% MFU (matmul FLOPs only)."""
    flops = get_model("llama3-8b").flops_per_token() * tokens
    return flops / (chips * get_chip("v6e").peak_flops() * MFU_SMALL)


@solution("06.6", title="The fewest v5e chips for LLaMA 3-8B", unit="chips", rtol=0.0, hints=(
    "Add the weights and Adam's moments per parameter and the saved activations; divide by one chip's HBM, round "
    "up.",
    "With ten bytes of state per parameter (bf16 weights, two fp32 moments) plus the bf16 activations saved per "
    "layer: ⟦n = ceil((10 * m.param_count() + saves * tokens * m.D * m.L * 2) / M)⟧, ⟦m = "
    "sb.get_model('llama3-8b')⟧ and ⟦M = sb.get_chip('v5e').hbm_bytes⟧.",
))
def fewest_v5e_chips(tokens: int = vary(2**20, 2**18, 2**22, step=2**17), saves: int = vary(4, 1, 8)) -> int:
    """Whole v5e chips (16 GB) whose HBM holds LLaMA 3-8B's bf16 weights, fp32 Adam and `saves` saves per layer at
    `tokens` tokens."""
    state = memory("llama3-8b", tokens, saves_per_layer=saves)
    return math.ceil(state.total / get_chip("v5e").hbm_bytes)


@solution("06.7", title="How long the fewest chips would take", unit="s", hints=(
    "The chips of problem six, at the problem's MFU; the time is total FLOPs over their achieved FLOP/s.",
    "⟦t = 6 * m.matmul_params() * tokens / (n * C * 0.45)⟧ with the book's fewest chips, ⟦n = ceil((10 * "
    "m.param_count() + 4 * 2 ** 20 * m.D * m.L * 2) / sb.get_chip('v5e').hbm_bytes)⟧, ⟦m = "
    "sb.get_model('llama3-8b')⟧ and ⟦C = sb.get_chip('v5e').peak_flops('bf16')⟧.",
))
def fewest_v5e_chips_time(tokens: float = vary(15e12, 1e12, 3e13)) -> float:
    """Seconds for problem 6's v5e chips to train LLaMA 3-8B on `tokens` tokens at 45% MFU (matmul FLOPs only)."""
    flops = get_model("llama3-8b").flops_per_token() * tokens
    return flops / (fewest_v5e_chips() * get_chip("v5e").peak_flops() * MFU_SMALL)


@solution("06.8", title="Memory per chip for LLaMA 3.1-405B on eight pods", unit="B", hints=(
    "Everything is sharded evenly: total state over the chips.",
    "With ten bytes of state per parameter (bf16 weights, two fp32 moments) plus the bf16 activations saved per "
    "layer: ⟦b = (10 * m.param_count() + saves * tokens * m.D * m.L * 2) / (pods * pod)⟧ over full v5p pods of ⟦pod "
    "= 16 * 20 * 28⟧ chips, with ⟦m = sb.get_model('llama3-405b')⟧.",
))
def memory_per_chip_405b(pods: int = vary(8, 1, 16), saves: int = vary(12, 2, 16),
                         tokens: int = vary(16 * 2**20, 2**22, 2**25, step=2**20)) -> float:
    """Bytes per chip for LLaMA 3.1-405B on `pods` v5p pods: bf16 weights, fp32 Adam, `saves` saves per layer at
    `tokens` tokens, everything sharded evenly over all the chips."""
    return memory("llama3-405b", tokens, n_chips=pods * V5P_POD, saves_per_layer=saves).per_chip


@solution("06.9", title="Where FSDP alone stops keeping up", unit="chips", hints=(
    "FSDP needs a minimum of tokens per chip; more chips than batch / that minimum and it is comms-bound.",
    "FSDP over the three axes of a v5p-style slice needs C / W over three tokens per chip: ⟦n = tokens / (C / (3 * "
    "W))⟧ with ⟦C = sb.get_chip(chip).peak_flops('bf16')⟧ and ⟦W = sb.get_chip(chip).ici_bidirectional⟧.",
))
def fsdp_chip_limit_70b(tokens: int = vary(4 * 2**20, 2**20, 2**25, step=2**20),
                        chip: str = vary("v5p", choices=("v5p", "v5e", "v6e", "v4p", "tpu7x"))) -> float:
    """Chip count above which pure FSDP over 3 `chip` axes (sequences sharded too) of a `tokens`-token batch turns
    communication-bound."""
    return tokens / min_tokens_per_chip("fsdp", chip, M_X=3)


@solution("06.10", title="How many pods a 16M batch can feed", unit="pods", rtol=0.0, hints=(
    "FSDP × TP's tokens-per-chip bound with llama3-405b's F; the batch divided by it gives chips, then pods.",
    "⟦n = floor(tokens / ((C / W) ** 2 / (M_X * M_Y * m.F)) / pod)⟧ with ⟦M_X = 2⟧, ⟦M_Y = 1⟧, a full v5p pod's "
    "⟦pod = 16 * 20 * 28⟧ chips, ⟦m = sb.get_model('llama3-405b')⟧, ⟦C = sb.get_chip('v5p').peak_flops('bf16')⟧ and "
    "⟦W = sb.get_chip('v5p').ici_bidirectional⟧.",
))
def most_pods_405b(tokens: int = vary(16 * 2**20, 2**23, 2**27, step=2**22)) -> int:
    """Most whole v5p pods on which LLaMA 3.1-405B with a `tokens`-token batch meets the FSDP x TP bound."""
    per_chip = min_tokens_per_chip("fsdp_tp", "v5p", F=get_model("llama3-405b").F, M_X=2, M_Y=1)
    return math.floor(tokens / per_chip / V5P_POD)


@solution("06.11", title="What refusing sequence sharding costs LLaMA 3.1-405B", unit="ratio", hints=(
    "Without sequence sharding, data parallelism cannot go beyond one sequence per shard: the planner has to use "
    "more model parallelism.",
    "Ask the planner both ways and divide the step times: ⟦r = slow / fast⟧ with ⟦slow = "
    "sb.training.plan('llama3-405b', 'v5p', 8 * 8960, 16 * 2 ** 20, seq_len=8192, "
    "sequence_sharding=False).estimate.time⟧ and ⟦fast = sb.training.plan('llama3-405b', 'v5p', 8 * 8960, 16 * 2 ** "
    "20, seq_len=8192).estimate.time⟧.",
))
def no_sequence_sharding_slowdown_405b() -> float:
    """Planner step time without over with sequence sharding: LLaMA 3.1-405B, 8 v5p pods, 16 * 2**20 tokens of
    8192-token sequences."""
    args = ("llama3-405b", "v5p", 8 * V5P_POD, 16 * 2**20)
    without = plan(*args, seq_len=8192, sequence_sharding=False).estimate.time
    return without / plan(*args, seq_len=8192).estimate.time


@solution("06.12", title="The planner without sequence sharding", unit="fraction", hints=(
    "MFU is model FLOPs per step over peak FLOP/s × step time; the planner's best layout sets the step time.",
    "⟦u = sb.training.plan('llama3-8b', 'v5p', 1024, 2 ** 20, seq_len=8192, sequence_sharding=False).mfu⟧: read "
    "what it chose (`.strategy`, `.candidates`) to see why.",
))
def planner_mfu_no_sequence_sharding() -> float:
    """Best MFU the planner finds for LLaMA 3-8B, 2**20 tokens of 8192-token sequences, 1024 v5p chips, no
    sequence sharding (compute time over step time at peak FLOP/s)."""
    return plan("llama3-8b", "v5p", 1024, 2**20, seq_len=8192, sequence_sharding=False).mfu


# --- the book's own questions (How To Scale Your Model, ch. 6), graded against its published answers --------------

_BOOK_BATCH = 4 * 2**20  # LLaMA 3-70B's batch: 1024 sequences of 4096 tokens


@solution("06.13", title="The book's question: LLaMA 3-70B's parameters", unit="parameters", hints=(
    "Per layer: Q and O (D × N·H), K and V (D × K·H), the gated MLP's three D × F; plus the embedding and the "
    "output matrix.",
    "⟦P = m.L * (2 * m.D * m.N * m.H + 2 * m.D * m.K * m.H + 3 * m.D * m.F) + e * m.V * m.D⟧ with ⟦e = 1 if m.tied "
    "else 2⟧ and ⟦m = sb.get_model(model)⟧.",
))
def book_llama3_70b_params(model: str = vary("llama3-70b", choices=DENSE_MODELS)) -> float:
    """Parameters of `model` from its config (the book's: LLaMA 3-70B, L = 80, D = 8192, F = 28,672, K = 8)."""
    return get_model(model).param_count()


@solution("06.14", title="The book's question: training FLOPs per token", unit="FLOPs", hints=(
    "Forward two FLOPs per matmul weight per token, backward four.",
    "⟦f = 6 * m.matmul_params()⟧ with ⟦m = sb.get_model(model)⟧.",
))
def book_flops_per_token(model: str = vary("llama3-70b", choices=DENSE_MODELS)) -> float:
    """Training FLOPs per token of `model`, 6 per matmul parameter (attention scores left out)."""
    return get_model(model).flops_per_token()


@solution("06.15", title="The book's question: the run on one v5p", unit="years", hints=(
    "Total FLOPs over one chip's peak FLOP/s, in years.",
    "At six FLOPs per matmul parameter per token (the input embedding is a lookup, not a matmul): ⟦y = 6 * "
    "m.matmul_params() * tokens / sb.get_chip(chip).peak_flops('bf16') / (365.25 * 86400)⟧ with ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def book_years_one_chip(tokens: float = vary(15e12, 1e12, 3e13),
                        chip: str = vary("v5p", choices=("v5p", "v5e", "v6e", "v4p", "tpu7x", "h100", "b200")),
                        ) -> float:
    """Years one `chip` at peak bf16 FLOP/s needs for `tokens` tokens of LLaMA 3-70B."""
    return get_model("llama3-70b").flops_per_token() * tokens / get_chip(chip).bf16_flops / (365.25 * 86400)


@solution("06.16", title="The book's question: the run on a v5p pod", unit="days", hints=(
    "Total FLOPs over the pod's achieved FLOP/s.",
    "⟦d = 6 * m.matmul_params() * tokens / (chips * C * mfu) / 86400⟧ with ⟦m = sb.get_model('llama3-70b')⟧ and ⟦C "
    "= sb.get_chip('v5p').peak_flops('bf16')⟧.",
))
def book_days_on_pod(tokens: float = vary(15e12, 1e12, 3e13), chips: int = vary(V5P_POD, 1024, 8960, step=64),
                     mfu: float = vary(0.4, 0.3, 0.6)) -> float:
    """Days for `tokens` tokens of LLaMA 3-70B on `chips` v5p chips at `mfu` MFU."""
    flops = get_model("llama3-70b").flops_per_token() * tokens
    return flops / (chips * get_chip("v5p").bf16_flops * mfu) / 86400


@solution("06.17", title="The book's question: the fewest chips", unit="chips", rtol=0.0, hints=(
    "Weights, optimizer state and checkpoints all have to fit: add them, divide by one chip's HBM, round up.",
    "With ten bytes of state per parameter (bf16 weights, two fp32 moments) plus the bf16 activations saved per "
    "layer: ⟦n = ceil((10 * m.param_count() + saves * tokens * m.D * m.L * 2) / sb.get_chip('v5p').hbm_bytes)⟧ and "
    "⟦m = sb.get_model('llama3-70b')⟧.",
))
def book_fewest_chips(tokens: float = vary(4e6, 1e6, 1.6e7), saves: int = vary(4, 1, 8)) -> int:
    """Fewest 96 GB v5p chips that hold LLaMA 3-70B's bf16 weights, fp32 Adam and `saves` checkpoints per layer at
    `tokens` tokens."""
    return math.ceil(memory("llama3-70b", tokens, saves_per_layer=saves).total / get_chip("v5p").hbm_bytes)


@solution("06.18", title="The book's question: memory per chip on a pod", unit="B", hints=(
    "The same total state, split evenly.",
    "With ten bytes of state per parameter (bf16 weights, two fp32 moments) plus the bf16 activations saved per "
    "layer (four per layer): ⟦b = (10 * m.param_count() + 4 * tokens * m.D * m.L * 2) / chips⟧ and ⟦m = "
    "sb.get_model('llama3-70b')⟧.",
))
def book_memory_per_chip(
        tokens: float = vary(4e6, 1e6, 1.6e7), chips: int = vary(V5P_POD, 1024, 8960, step=64)) -> float:
    """That state spread evenly over `chips` chips, bytes per chip."""
    return memory("llama3-70b", tokens, chips, saves_per_layer=4).per_chip


@solution("06.19", title="The book's question: data parallelism over sequences only", unit="chips", rtol=0.0, hints=(
    "Without sequence sharding, a shard holds at least one whole sequence.",
    "⟦n = tokens // T⟧ shards, one sequence each.",
))
def book_sequences_per_batch(tokens: int = vary(_BOOK_BATCH, 2**20, 2**25, step=2**20),
                             T: int = vary(4096, 1024, 16384, step=1024)) -> int:
    """Most data-parallel shards a batch of `tokens` tokens in T-token sequences allows without sequence
    sharding (one sequence per shard)."""
    return tokens // T


@solution("06.20", title="The book's question: tokens per chip on a full pod", unit="tokens", hints=(
    "Split the batch evenly.",
    "⟦b = tokens / chips⟧.",
))
def book_tokens_per_chip(tokens: int = vary(_BOOK_BATCH, 2**20, 2**25, step=2**20),
                         chips: int = vary(V5P_POD, 1024, 8960, step=64)) -> float:
    """Tokens per chip of a `tokens`-token batch over `chips` chips."""
    return tokens / chips


@solution("06.21", title="The book's question: the FSDP degree for FSDP + TP", unit="chips", hints=(
    "Balance FSDP's comms (falling in X) against TP's (rising in N / X).",
    "⟦X = sqrt(tokens / m.F * M_X / M_Y * chips)⟧ with ⟦M_X = 2⟧, ⟦M_Y = 1⟧ and ⟦m = sb.get_model('llama3-70b')⟧.",
))
def book_x_opt(
        tokens: int = vary(_BOOK_BATCH, 2**20, 2**25, step=2**20),
        chips: int = vary(V5P_POD, 1024, 8960, step=64)) -> float:
    """X_opt = sqrt(2BN/F) for LLaMA 3-70B, B = `tokens`, N = `chips` (FSDP over two axes, TP over one)."""
    return math.sqrt(2 * tokens * chips / get_model("llama3-70b").F)
