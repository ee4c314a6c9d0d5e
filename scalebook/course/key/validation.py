"""Problem set 13 — How good are these numbers: the reference solutions of `solutions/13_validation.md`.

Each function reads the published measurement it needs from the validation suite (`validation.runs()`, which
carries each figure with its source) and computes the answer with scalebook. Answers are in SI base units.
"""

from __future__ import annotations

from ...hardware.chips import get_chip
from ...hardware.gpu import GpuCluster
from ...models import get_model
from ...training.pipeline import pipeline_bubble
from ...training.planner import plan
from ...validation import PublishedRun, runs
from . import solution

GPT_FAST = "gpt-fast Llama-2-70B TP{}"  # batch-1 decode of Llama-2-70B in bf16 on n A100s, tokens/s
LLAMA3_8K = "Llama 3 405B, 8,192 H100, TP8 PP16"
KORTHIKANTI_22B = "Korthikanti 22B params + optimizer"
TTFT_7B_128 = "TRT-LLM Llama-2-7B fp8 TP1, TTFT 128"  # TensorRT-LLM first-token latency, ms
BYTES_PER_PARAM = 18  # mixed precision with Adam: bf16 weights and grads, fp32 master, two fp32 moments, slack


def _run(run_id: str) -> PublishedRun:
    """The suite's run with this id."""
    return next(r for r in runs() if r.id == run_id)


def _decode_fit() -> tuple[float, float, int]:
    """Fit t_n = A/n + 2·L·a to gpt-fast's TP2 and TP8 seconds per token: (A in s, a in s per AllReduce, L)."""
    two, eight = _run(GPT_FAST.format(2)), _run(GPT_FAST.format(8))
    t2, t8 = 1 / two.published, 1 / eight.published
    A = (t2 - t8) / (1 / 2 - 1 / 8)
    L = eight.model.L
    return A, (t8 - A / 8) / (2 * L), L


@solution("13.1", title="The fixed cost of one AllReduce, read off two decode speeds", unit="s", hints=(
    "Decode time per token is A / n (weights split n ways) plus a fixed cost of two AllReduces per layer; two "
    "measurements give two equations.",
    "Solve for the AllReduce: ⟦a = (t8 - A / 8) / (2 * r8.model.L)⟧, where two measurements give two equations, t2 "
    "= A / two + a fixed part and t8 = A / eight + the same fixed part (two AllReduces per layer): ⟦A = (t2 - t8) / "
    "(1 / 2 - 1 / 8)⟧ with ⟦t2 = 1 / r2.published⟧ and ⟦t8 = 1 / r8.published⟧ seconds per token, ⟦r2 = next(x for "
    "x in sb.validation.runs() if x.id == 'gpt-fast Llama-2-70B TP2')⟧, ⟦r8 = next(x for x in sb.validation.runs() "
    "if x.id == 'gpt-fast Llama-2-70B TP8')⟧.",
))
def allreduce_fixed_cost() -> float:
    """Per-AllReduce cost a from gpt-fast's TP2 and TP8 Llama-2-70B decode (two AllReduces per layer)."""
    return _decode_fit()[1]


@solution("13.2", title="The HBM bandwidth the same fit implies", unit="B/s", hints=(
    "A in the fit is the time one GPU would take to read every weight.",
    "⟦W = 2 * r8.model.param_count() / A⟧ (bf16 weights), where two measurements give two equations, t2 = A / two + "
    "a fixed part and t8 = A / eight + the same fixed part (two AllReduces per layer): ⟦A = (t2 - t8) / (1 / 2 - 1 "
    "/ 8)⟧ with ⟦t2 = 1 / r2.published⟧ and ⟦t8 = 1 / r8.published⟧ seconds per token, ⟦r2 = next(x for x in "
    "sb.validation.runs() if x.id == 'gpt-fast Llama-2-70B TP2')⟧, ⟦r8 = next(x for x in sb.validation.runs() if "
    "x.id == 'gpt-fast Llama-2-70B TP8')⟧.",
))
def implied_hbm_bandwidth() -> float:
    """bf16 weight bytes over A, the single-GPU weight-read time of the fit."""
    A, _, _ = _decode_fit()
    return 2 * _run(GPT_FAST.format(8)).model.param_count() / A


@solution("13.3", title="Predicting TP4 from TP2 and TP8", unit="tokens/s", hints=(
    "Use the same two fitted numbers at n = four.",
    "⟦s = 1 / (A / 4 + 2 * r8.model.L * a)⟧ tokens per second with ⟦a = (t8 - A / 8) / (2 * r8.model.L)⟧, where two "
    "measurements give two equations, t2 = A / two + a fixed part and t8 = A / eight + the same fixed part (two "
    "AllReduces per layer): ⟦A = (t2 - t8) / (1 / 2 - 1 / 8)⟧ with ⟦t2 = 1 / r2.published⟧ and ⟦t8 = 1 / "
    "r8.published⟧ seconds per token, ⟦r2 = next(x for x in sb.validation.runs() if x.id == 'gpt-fast Llama-2-70B "
    "TP2')⟧, ⟦r8 = next(x for x in sb.validation.runs() if x.id == 'gpt-fast Llama-2-70B TP8')⟧.",
))
def predicted_tp4() -> float:
    """Tokens per second at TP4 from the two-number fit: 1 / (A/4 + 2·L·a)."""
    A, a, L = _decode_fit()
    return 1 / (A / 4 + 2 * L * a)


@solution("13.4", title="The MFU behind Llama 3's 430 TFLOP/s per GPU", unit="", hints=(
    "MFU is achieved FLOP/s over peak FLOP/s (dense bf16).",
    "⟦u = r.published * 1e12 / sb.get_chip(r.hardware).peak_flops('bf16')⟧ with ⟦r = next(x for x in "
    "sb.validation.runs() if x.id == 'Llama 3 405B, 8,192 H100, TP8 PP16')⟧ (its throughput in TFLOP/s per GPU).",
))
def llama3_mfu() -> float:
    """Published TFLOP/s per GPU over the H100's dense bf16 peak."""
    run = _run(LLAMA3_8K)
    return run.published * 1e12 / get_chip(run.hardware).peak_flops("bf16")


@solution("13.5", title="Llama 3 405B's step time from its throughput", unit="s", hints=(
    "A step does six FLOPs per parameter per token of the global batch; divide by the cluster's published rate.",
    "⟦t = 6 * sb.get_model('llama3-405b').param_count() * r.params['global_batch_tokens'] / (r.n_chips * "
    "r.published * 1e12)⟧ with ⟦r = next(x for x in sb.validation.runs() if x.id == 'Llama 3 405B, 8,192 H100, TP8 "
    "PP16')⟧.",
))
def llama3_step_time() -> float:
    """Seconds per step at the published rate, counting 6 FLOPs per parameter per token (attention left out)."""
    run = _run(LLAMA3_8K)
    flops = 6 * get_model("llama3-405b").param_count() * run.params["global_batch_tokens"]
    return flops / (run.n_chips * run.published * 1e12)


@solution("13.6", title="The pipeline bubble of that run", unit="", hints=(
    "Microbatches per replica = sequences per replica; the 1F1B bubble is P minus one stage-times out of M + P "
    "minus one.",
    "⟦b = (p['pp'] - 1) / (M + p['pp'] - 1)⟧ with ⟦M = p['global_batch_tokens'] // p['seq_len'] // (r.n_chips // "
    "(p['tp'] * p['pp']))⟧ sequences per replica, ⟦p = r.params⟧ and ⟦r = next(x for x in sb.validation.runs() if "
    "x.id == 'Llama 3 405B, 8,192 H100, TP8 PP16')⟧.",
))
def llama3_bubble() -> float:
    """1F1B bubble of 16 stages when each data-parallel replica gets its sequences one per microbatch."""
    run = _run(LLAMA3_8K)
    p = run.params
    replicas = run.n_chips // (p["tp"] * p["pp"])
    microbatches = p["global_batch_tokens"] // p["seq_len"] // replicas
    return pipeline_bubble(p["pp"], microbatches, "1f1b")


@solution("13.7", title="Weights and optimizer of a 22B model over 8 GPUs", unit="B", hints=(
    "Mixed-precision Adam keeps bf16 weights and gradients, fp32 master weights and two fp32 moments, with some "
    "slack, per parameter, split over the tensor-parallel GPUs.",
    "⟦b = 18 * r.model.param_count() / r.params['tp']⟧ with ⟦r = next(x for x in sb.validation.runs() if x.id == "
    "'Korthikanti 22B params + optimizer')⟧.",
))
def korthikanti_state_bytes() -> float:
    """18 bytes per parameter, split over the tensor-parallel degree of Korthikanti's 22B run."""
    run = _run(KORTHIKANTI_22B)
    return BYTES_PER_PARAM * run.model.param_count() / run.params["tp"]


@solution("13.8", title="How deep the calibrated planner pipelines Llama 3 405B", unit="stages", hints=(
    "The calibrated planner prices every layout; read off the pipeline depth of its best one.",
    "⟦p = sb.training.plan('llama3-405b', sb.GpuCluster('h100', gpus=16384), 16384, 16 * 2 ** 20, seq_len=8192, "
    "efficiency='calibrated').pp⟧: read `.candidates` to see what deeper and shallower pipelines lost.",
))
def planner_pipeline_depth() -> int:
    """Pipeline stages of the calibrated plan for 405B on 16,384 H100s, 16M-token batches of 8,192-token sequences."""
    return plan("llama3-405b", GpuCluster("h100", gpus=16384), 16384, 16 * 2**20, seq_len=8192,
                efficiency="calibrated").pp


@solution("13.9", title="How much of a short prompt is fixed cost", unit="", hints=(
    "A short prompt is dominated by per-layer fixed costs, not FLOPs.",
    "⟦f = sb.get_chip(r.hardware).efficiency('calibrated').layer_overhead * r.model.L / (r.published * 1e-3)⟧: the "
    "calibrated fixed cost per layer, times the layers, over the published first-token latency (ms), with ⟦r = "
    "next(x for x in sb.validation.runs() if x.id == 'TRT-LLM Llama-2-7B fp8 TP1, TTFT 128')⟧.",
))
def short_prompt_fixed_share() -> float:
    """The H100's per-layer fixed cost (read off GPT-J's 128-token rows) times Llama-2-7B's layers, over the
    published 7 ms first-token latency of its 128-token prompt."""
    run = _run(TTFT_7B_128)
    overhead = get_chip(run.hardware).efficiency("calibrated").layer_overhead
    return overhead * run.model.L / (run.published * 1e-3)
