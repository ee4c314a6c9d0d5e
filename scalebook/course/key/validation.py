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
from . import problem

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


@problem("13.1", title="The fixed cost of one AllReduce, read off two decode speeds", unit="s", hints=(
    "Decode time per token is A/n (weights split n ways) plus a fixed 2·L·a of AllReduces; two measurements give "
    "two equations.",
    "Solve t2 = A/2 + 2·L·a and t8 = A/8 + 2·L·a (t = 1 / tokens per second) for a.",
))
def allreduce_fixed_cost() -> float:
    """Per-AllReduce cost a from gpt-fast's TP2 and TP8 Llama-2-70B decode (two AllReduces per layer)."""
    return _decode_fit()[1]


@problem("13.2", title="The HBM bandwidth the same fit implies", unit="B/s", hints=(
    "A in the fit is the time one GPU would take to read every weight.",
    "2 bytes · params of Llama-2-70B / A from the TP2/TP8 fit.",
))
def implied_hbm_bandwidth() -> float:
    """bf16 weight bytes over A, the single-GPU weight-read time of the fit."""
    A, _, _ = _decode_fit()
    return 2 * _run(GPT_FAST.format(8)).model.param_count() / A


@problem("13.3", title="Predicting TP4 from TP2 and TP8", unit="tokens/s", hints=(
    "Use the same two fitted numbers at n = 4.",
    "1 / (A/4 + 2·L·a) with A and a from the TP2/TP8 fit.",
))
def predicted_tp4() -> float:
    """Tokens per second at TP4 from the two-number fit: 1 / (A/4 + 2·L·a)."""
    A, a, L = _decode_fit()
    return 1 / (A / 4 + 2 * L * a)


@problem("13.4", title="The MFU behind Llama 3's 430 TFLOP/s per GPU", unit="", hints=(
    "MFU is achieved FLOP/s over peak FLOP/s (dense bf16).",
    "430e12 / 9.89e14 (the H100's dense bf16 peak).",
))
def llama3_mfu() -> float:
    """Published TFLOP/s per GPU over the H100's dense bf16 peak."""
    run = _run(LLAMA3_8K)
    return run.published * 1e12 / get_chip(run.hardware).peak_flops("bf16")


@problem("13.5", title="Llama 3 405B's step time from its throughput", unit="s", hints=(
    "A step does 6 FLOPs per parameter per token of the global batch; divide by the cluster's published rate.",
    "6 · 405e9 · global batch tokens / (8192 GPUs · 430e12 FLOP/s).",
))
def llama3_step_time() -> float:
    """Seconds per step at the published rate, counting 6 FLOPs per parameter per token (attention left out)."""
    run = _run(LLAMA3_8K)
    flops = 6 * get_model("llama3-405b").param_count() * run.params["global_batch_tokens"]
    return flops / (run.n_chips * run.published * 1e12)


@problem("13.6", title="The pipeline bubble of that run", unit="", hints=(
    "Microbatches per replica = sequences per replica; the 1F1B bubble is (P - 1) / (M + P - 1).",
    "(16 - 1) / (M + 16 - 1) with M = global batch / seq_len / (8192 / (TP 8 · PP 16)).",
))
def llama3_bubble() -> float:
    """1F1B bubble of 16 stages when each data-parallel replica gets its sequences one per microbatch."""
    run = _run(LLAMA3_8K)
    p = run.params
    replicas = run.n_chips // (p["tp"] * p["pp"])
    microbatches = p["global_batch_tokens"] // p["seq_len"] // replicas
    return pipeline_bubble(p["pp"], microbatches, "1f1b")


@problem("13.7", title="Weights and optimizer of a 22B model over 8 GPUs", unit="B", hints=(
    "18 bytes per parameter of mixed-precision Adam state, split over the tensor-parallel GPUs.",
    "18 · params of the 22B model / TP degree (8).",
))
def korthikanti_state_bytes() -> float:
    """18 bytes per parameter, split over the tensor-parallel degree of Korthikanti's 22B run."""
    run = _run(KORTHIKANTI_22B)
    return BYTES_PER_PARAM * run.model.param_count() / run.params["tp"]


@problem("13.8", title="How deep the calibrated planner pipelines Llama 3 405B", unit="stages", hints=(
    "The calibrated planner prices every layout; read off the pipeline depth of its best one.",
    "plan(llama3-405b, GpuCluster('h100', gpus=16384), 16384, 16·2**20, seq_len=8192, efficiency='calibrated').pp.",
))
def planner_pipeline_depth() -> int:
    """Pipeline stages of the calibrated plan for 405B on 16,384 H100s, 16M-token batches of 8,192-token sequences."""
    return plan("llama3-405b", GpuCluster("h100", gpus=16384), 16384, 16 * 2**20, seq_len=8192,
                efficiency="calibrated").pp


@problem("13.9", title="How much of a short prompt is fixed cost", unit="", hints=(
    "A short prompt is dominated by per-layer fixed costs, not FLOPs.",
    "(H100 per-layer overhead × 32 layers) / 7 ms.",
))
def short_prompt_fixed_share() -> float:
    """The H100's per-layer fixed cost (read off GPT-J's 128-token rows) times Llama-2-7B's layers, over the
    published 7 ms first-token latency of its 128-token prompt."""
    run = _run(TTFT_7B_128)
    overhead = get_chip(run.hardware).efficiency("calibrated").layer_overhead
    return overhead * run.model.L / (run.published * 1e-3)
