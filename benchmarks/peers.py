"""Price the suite's published runs with two public calculators at their documented settings, and write what each
predicts, row by row, to scalebook/data/peers.toml (read by `sb.peers`, shown in chapter 13).

    python -m venv .peers && .peers/bin/pip install -e ".[peers]"
    .peers/bin/python benchmarks/peers.py [--out scalebook/data/peers.toml]

The peers, and the settings each one's own documentation gives:

- llm-analysis (cli99/llm-analysis, PyPI `llm-analysis`): its README, "How to Set FLOPS and Memory Efficiency":
  "literature reports up to 0.5 for large scale model training, and up to 0.7 for inference; 0.9 can be an
  aggressive target for memory efficiencies". Training at flops_efficiency 0.5, inference at 0.7, HBM at 0.9 for
  both; its GPU presets (a100-sxm-80gb, h100-sxm-80gb), the README's way of adding a GPU (a GPUConfig) for the
  others, built from our spec sheet (`hardware/chips.toml`). GPUs only: no TPU preset, so no TPU row.
- GenZ (abhibambhaniya/GenZ-LLM-Analyzer, PyPI `genz-llm`): `system_eff` 0.8, the default of the System
  Efficiency slider in its notebook/LLM_inference_perf.ipynb (commit 13ebfb842b42); its system presets (A100_80GB_GPU,
  H100_GPU, TPUv4, TPUv5e, TPUv5p, TPUv6), a dict of our spec sheet's figures for the others. Inference only:
  genz-llm 0.0.16 has no training model.

A row a tool cannot express is recorded with the reason (context parallelism, a training run for GenZ, ...), never
dropped. A tool's value is in the row's own metric and units, so `sb.peers` scores it as the suite scores scalebook:
the speed error, predicted over published speed - 1. At the end the script prints `sb.peers.table()`: scalebook's
live predictions beside each peer, family by family.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import math
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

from GenZ import ModelConfig as GenzModel
from GenZ import decode_moddeling, prefill_moddeling
from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
from llm_analysis.config import DtypeConfig, GPUConfig, ModelConfig, ParallelismConfig, get_gpu_config_by_name
from llm_analysis.logger import logger as llm_analysis_logger

import scalebook.peers as peers
from scalebook import validation
from scalebook.hardware.chips import Chip, get_chip
from scalebook.validation import PublishedRun

OUT = Path(__file__).resolve().parents[1] / "scalebook" / "data" / "peers.toml"
LLM_ANALYSIS = {"training": {"flops_efficiency": 0.5, "hbm_memory_efficiency": 0.9},
                "inference": {"flops_efficiency": 0.7, "hbm_memory_efficiency": 0.9}}
GENZ_EFFICIENCY = 0.8
# Our chip (by its canonical name) → the tool's preset for that very part.
LLM_ANALYSIS_GPUS = {"NVIDIA A100": "a100-sxm-80gb", "NVIDIA H100": "h100-sxm-80gb"}
GENZ_SYSTEMS = {"NVIDIA A100": "A100_80GB_GPU", "NVIDIA H100": "H100_GPU", "TPU v4p": "TPUv4", "TPU v5e": "TPUv5e",
                "TPU v5p": "TPUv5p", "TPU v6e": "TPUv6"}
RECOMPUTE = {"none": ActivationRecomputation.NONE, "selective": ActivationRecomputation.SELECTIVE,
             "full": ActivationRecomputation.FULL}


class Unexpressible(ValueError):
    """A suite row the tool has no input for (the message says which)."""


# --- what both tools need from a row ---------------------------------------------------------------------------------

def width(run: PublishedRun) -> tuple[int, int, int]:
    """(weight, activation, KV) bytes of a serving row, as the suite prices it (`validation`'s serving rows)."""
    p = run.params
    compute = 1 if p.get("dtype", "bf16") in ("fp8", "int8") else 2
    return p.get("param_bytes", compute), compute, p.get("kv_bytes", compute)


def degrees(run: PublishedRun) -> dict[str, int]:
    """The row's tensor, pipeline, context and expert degrees, and its data-parallel degree (chips over the rest)."""
    p = run.params
    out = {k: int(p.get(k) or 1) for k in ("tp", "pp", "cp", "ep")}
    if run.kind not in ("training", "memory"):
        out["tp"] = run.n_chips  # the suite's serving rows run tensor-parallel over all their chips
    out["dp"] = run.n_chips // (out["tp"] * out["pp"] * out["cp"])
    return out


def spec_sheet(chip: Chip) -> dict[str, float]:
    """A GPU's datasheet figures from `chips.toml`: dense bf16 and 8-bit peaks (TFLOP/s), HBM (GB, GB/s), NVLink
    one way (GB/s): what a user of either tool types in for a part the tool has no preset of."""
    eight = chip.fp8_flops or chip.int8_flops or 2 * chip.bf16_flops
    return {"bf16": chip.bf16_flops / 1e12, "int8": eight / 1e12, "hbm_gb": chip.hbm_bytes / 1e9,
            "hbm_gbs": chip.hbm_bandwidth / 1e9, "link_gbs": (chip.nvlink_bandwidth or chip.ici_bandwidth or 0) / 1e9}


# --- llm-analysis ----------------------------------------------------------------------------------------------------

def llm_analysis_gpu(run: PublishedRun) -> GPUConfig:
    """The tool's preset for the row's GPU, or a GPUConfig of its datasheet figures (the README's way to add one)."""
    chip = get_chip(run.hardware)
    if chip.kind != "gpu":
        raise Unexpressible(f"{chip.name}: llm-analysis models GPUs only (no TPU preset)")
    if chip.name in LLM_ANALYSIS_GPUS:
        return get_gpu_config_by_name(LLM_ANALYSIS_GPUS[chip.name])
    s = spec_sheet(chip)
    return GPUConfig(name=f"{run.hardware} (chips.toml)", mem_per_GPU_in_GB=s["hbm_gb"],
                     hbm_bandwidth_in_GB_per_sec=s["hbm_gbs"], intra_node_bandwidth_in_GB_per_sec=s["link_gbs"],
                     intra_node_min_message_latency=8e-6, peak_fp16_TFLOPS=s["bf16"], peak_i8_TFLOPS=s["int8"])


def llm_analysis_inputs(run: PublishedRun) -> dict[str, Any]:
    """The row as llm-analysis's inputs: the LLMAnalysis constructor's arguments (`analysis`), which method
    (`method`: training or inference) and that method's arguments (`call`). Raises `Unexpressible`."""
    m, p, d = run.model, run.params, degrees(run)
    if d["cp"] > 1:
        raise Unexpressible(f"context parallelism (cp = {d['cp']}): llm-analysis has tp, pp, dp and ep only")
    training = run.kind in ("training", "memory")
    longest = max(p.get("seq_len", 0), p.get("tokens", 0), p.get("context", 0), p.get("isl", 0) + p.get("osl", 0)) + 1
    model = ModelConfig(name=run.model.name, num_layers=m.L, n_head=m.N, hidden_dim=m.D, vocab_size=m.V,
                        max_seq_len=longest, num_key_value_heads=m.K,
                        ffn_embed_dim=m.F, expansion_ratio=m.F / m.D, moe_num_experts=m.E, moe_top_k=m.k)
    if training:
        bits = 8 if p.get("dtype", "bf16") == "fp8" else 16
        dtype = DtypeConfig(name=f"w{bits}a{bits}e16", weight_bits=bits, activation_bits=bits)
    else:
        weight, act, _ = width(run)
        dtype = DtypeConfig(name=f"w{8 * weight}a{8 * act}e16", weight_bits=8 * weight, activation_bits=8 * act)
    sp = d["tp"] if p.get("sequence_parallel", True) else 1  # Megatron's sequence parallelism, on unless said
    parallel = ParallelismConfig(tp_size=d["tp"], pp_size=d["pp"], dp_size=d["dp"], ep_size=d["ep"], sp_size=sp)
    analysis = dict(model_config=model, gpu_config=llm_analysis_gpu(run), dtype_config=dtype,
                    parallelism_config=parallel, **LLM_ANALYSIS["training" if training else "inference"])
    if training:
        return {"analysis": analysis, "method": "training", "call": llm_analysis_training_call(run, d)}
    return {"analysis": analysis, "method": "inference", "call": llm_analysis_inference_call(run)}


def llm_analysis_training_call(run: PublishedRun, d: dict[str, int]) -> dict[str, Any]:
    """`LLMAnalysis.training`'s arguments for a training row: sequences per step and per microbatch, recompute,
    ZeRO stage (FSDP is ZeRO-3), gated MLP."""
    p = run.params
    sequences = p["global_batch_tokens"] // p["seq_len"]
    micro = max(p.get("microbatch_tokens", p["seq_len"]) // p["seq_len"], 1)
    if sequences % (micro * d["dp"]):
        micro = 1
    if sequences % d["dp"]:
        raise Unexpressible(f"{sequences} sequences do not split over {d['dp']} data-parallel replicas")
    zero = DSZeRO.STAGE_3 if p.get("fsdp") else DSZeRO(p.get("zero_stage", 0))
    return {"batch_size_per_gpu": micro, "global_batch_size": sequences, "seq_len": p["seq_len"],
            "activation_recomputation": RECOMPUTE[p.get("recompute", "selective")], "ds_zero": zero,
            "flash_attn": p.get("flash_attention", True), "mlp_gated_linear_units": run.model.gated}


def llm_analysis_inference_call(run: PublishedRun) -> dict[str, Any]:
    """`LLMAnalysis.inference`'s arguments for a serving row: a decode step is one token generated after `context`
    cached ones; a first token, a prompt and one token; a static batch, its prompts and its output tokens."""
    p, (_, _, kv) = run.params, width(run)
    if run.kind == "decode":
        shape = {"batch_size_per_gpu": p["batch"], "seq_len": p["context"], "num_tokens_to_generate": 1}
    elif run.kind == "prefill":
        shape = {"batch_size_per_gpu": 1, "seq_len": p["tokens"], "num_tokens_to_generate": 1}
    else:
        shape = {"batch_size_per_gpu": p["batch"], "seq_len": p["isl"], "num_tokens_to_generate": p["osl"]}
    return {**shape, "kv_cache_dtype_bytes": kv}


def llm_analysis_price(run: PublishedRun) -> float:
    """llm-analysis's value of the row's metric, in the metric's units. Raises `Unexpressible`."""
    inputs = llm_analysis_inputs(run)
    try:
        out = getattr(LLMAnalysis(**inputs["analysis"]), inputs["method"])(**inputs["call"])
    except AssertionError as refused:
        raise Unexpressible(f"llm-analysis refuses it: {str(refused)[:160]}") from refused
    if run.metric == "params_optimizer_gib":
        return out["(weight+op_state+grad)_memory_per_gpu"] / validation.GiB
    if run.metric == "activations_gib":
        return out["activation_memory_per_gpu"] / validation.GiB
    if inputs["method"] == "training":
        return training_metric(run, out["latency_per_iter"])
    return serving_metric(run, out["prefill_latency"], out["decode_latency"], out["total_decode_latency"])


def training_metric(run: PublishedRun, step_s: float) -> float:
    """A training row's metric from a tool's step time in seconds: the time itself, or the model FLOP/s per chip
    (TFLOP/s or a fraction of peak) by the FLOP convention of the row's source (`validation.flops_per_token`)."""
    if run.metric == "step_time_s":
        return step_s
    rate = validation.flops_per_token(run) * run.params["global_batch_tokens"] / step_s / run.n_chips
    if run.metric == "tflops_per_chip":
        return rate / 1e12
    return rate / get_chip(run.hardware).peak_flops(run.params.get("dtype", "bf16"))


def serving_metric(run: PublishedRun, prefill_s: float, step_s: float, decode_s: float) -> float:
    """A serving row's metric from a tool's times in seconds: a prompt's prefill, one decode step, all the
    decode steps of a static batch."""
    p = run.params
    if run.kind == "prefill":
        return prefill_s * 1e3
    if run.kind == "decode":
        return p["batch"] / step_s if run.metric == "tokens_per_second" else step_s * 1e3
    return p["batch"] * p["osl"] / (prefill_s + decode_s) / run.n_chips


# --- GenZ ------------------------------------------------------------------------------------------------------------

def genz_system(run: PublishedRun) -> str | dict[str, Any]:
    """GenZ's preset for the row's chip, or a dict of its datasheet figures (GenZ's `real_values` system)."""
    chip = get_chip(run.hardware)
    if chip.name in GENZ_SYSTEMS:
        return GENZ_SYSTEMS[chip.name]
    s = spec_sheet(chip)
    return {"Flops": s["bf16"], "Memory_size": s["hbm_gb"], "Memory_BW": s["hbm_gbs"], "ICN": s["link_gbs"],
            "real_values": True}


def genz_inputs(run: PublishedRun) -> dict[str, Any]:
    """The row as GenZ's inputs: the model (`model`), and the arguments of `prefill_moddeling` (`prefill`) and of
    `decode_moddeling` (`decode`) the row needs (one of them, or both for a static batch). Raises `Unexpressible`."""
    if run.kind in ("training", "memory"):
        raise Unexpressible("a training run: genz-llm 0.0.16 models inference only")
    m, p = run.model, run.params
    weight = width(run)[0]
    model = GenzModel(model=m.name, vocab_size=m.V, hidden_size=m.D, intermediate_size=m.F, num_ffi=2 if m.gated else 1,
                      num_decoder_layers=m.L, num_attention_heads=m.N, head_dim=m.H, num_key_value_heads=m.K,
                      num_experts=m.E, expert_top_k=m.k, max_model_len=1 << 20)
    tp = run.n_chips
    common = {"system_name": genz_system(run), "system_eff": GENZ_EFFICIENCY,
              "bits": "fp8" if p.get("dtype") == "fp8" else {1: "int8", 2: "bf16"}[weight],
              "tensor_parallel": tp, "parallelism_heirarchy": f"TP{{{tp}}}_EP{{1}}_PP{{1}}"}
    out: dict[str, Any] = {"model": model}
    if run.kind == "prefill":
        out["prefill"] = {"batch_size": 1, "input_tokens": p["tokens"], **common}
    elif run.kind == "decode":
        out["decode"] = {"batch_size": p["batch"], "input_tokens": p["context"], "Bb": 1, **common}
    else:  # a static batch: the batch's prompts, then osl steps at the mean context (as the suite prices it)
        out["prefill"] = {"batch_size": p["batch"], "input_tokens": p["isl"], **common}
        out["decode"] = {"batch_size": p["batch"], "input_tokens": int(p["isl"] + p["osl"] / 2), "Bb": 1, **common}
    return out


def genz_price(run: PublishedRun) -> float:
    """GenZ's value of the row's metric, in the metric's units. Raises `Unexpressible`."""
    inputs = genz_inputs(run)
    try:
        prefill = prefill_moddeling(model=inputs["model"], **inputs["prefill"]) if "prefill" in inputs else None
        decode = decode_moddeling(model=inputs["model"], **inputs["decode"]) if "decode" in inputs else None
    except (ValueError, AssertionError) as refused:
        raise Unexpressible(f"GenZ refuses it: {str(refused)[:160]}") from refused
    step = decode["Latency"] / 1e3 if decode else math.nan
    first = prefill["Latency"] / 1e3 if prefill else math.nan
    return serving_metric(run, first, step, step * run.params.get("osl", 1))


# --- the file --------------------------------------------------------------------------------------------------------

TOOLS = {
    "llm-analysis": {
        "package": "llm-analysis", "price": llm_analysis_price,
        "settings": "training: flops_efficiency 0.5, hbm_memory_efficiency 0.9; inference: flops_efficiency 0.7, "
                    "hbm_memory_efficiency 0.9; GPU presets a100-sxm-80gb and h100-sxm-80gb, other GPUs from "
                    "chips.toml's datasheet figures; fp8 as 8-bit weights and activations (its int8 peak), int8 "
                    "weight-only as w8a16; FSDP as ZeRO-3; the LLMAnalysis class, whose train() entry is the same",
        "source": "cli99/llm-analysis README, 'How to Set FLOPS and Memory Efficiency' (up to 0.5 for large-scale "
                  "training, up to 0.7 for inference, 0.9 an aggressive target for memory); its examples/llama "
                  "outputs run at the same settings (fe0.5-hbme0.9 training, fe0.7-hbme0.9 inference)"},
    "GenZ": {
        "package": "genz-llm", "price": genz_price,
        "settings": "system_eff 0.8 (compute and memory); presets A100_80GB_GPU, H100_GPU, TPUv4, TPUv5e, TPUv5p, "
                    "TPUv6, other chips from chips.toml's datasheet figures; bits fp8, int8 (weight-only int8 "
                    "rows too) or bf16; beam 1; collectives 'GenZ'; a static batch as its prefill plus osl decode "
                    "steps at the mean context",
        "source": "abhibambhaniya/GenZ-LLM-Analyzer notebook/LLM_inference_perf.ipynb at 13ebfb842b42 (System "
                  "Efficiency slider, default 0.80)"},
}


def price_all() -> dict[str, dict[str, float | str]]:
    """{tool: {run id: its value in the run's metric, or the reason it cannot express the run}} over the suite."""
    out: dict[str, dict[str, float | str]] = {}
    for tool, spec in TOOLS.items():
        out[tool] = {}
        for run in validation.runs():
            try:
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out[tool][run.id] = float(spec["price"](run))
            except Unexpressible as why:
                out[tool][run.id] = str(why)
    return out


def quote(text: str) -> str:
    """A TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def render(priced: dict[str, dict[str, float | str]]) -> str:
    """The TOML text of the results file: each tool's version, settings and source, then one [[rows]] per tool and
    suite row, with `value` (in the row's metric) or `cannot` (why the tool cannot express it)."""
    lines = ["# The suite's published runs priced by two public calculators at their documented settings.",
             "# Written by benchmarks/peers.py (do not edit by hand); read by scalebook/peers.py, shown in chapter 13.",
             "# `value` is in the run's own metric and units (data/published_runs.toml); `cannot` says why the tool",
             "# has no input for the run.", ""]
    for tool, spec in TOOLS.items():
        lines += [f"[tools.{quote(tool)}]", f"package = {quote(spec['package'])}",
                  f"version = {quote(version(spec['package']))}", f"settings = {quote(spec['settings'])}",
                  f"source = {quote(spec['source'])}", ""]
    for tool, rows in priced.items():
        for run_id, value in rows.items():
            field = f"value = {value!r}" if isinstance(value, float) else f"cannot = {quote(value)}"
            lines += ["[[rows]]", f"tool = {quote(tool)}", f"run = {quote(run_id)}", field, ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="the results file to write")
    args = parser.parse_args()
    llm_analysis_logger.setLevel(logging.ERROR)
    args.out.write_text(render(price_all()), encoding="utf-8")
    print(f"wrote {args.out}")
    peers.reload()
    for status in (None, "held-out"):
        print(peers.table(status=status))
        behind = peers.behind(status)
        print(f"scalebook behind on: {', '.join(behind)}" if behind else "scalebook ahead on every shared family")


if __name__ == "__main__":
    main()
